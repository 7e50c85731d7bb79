"""MergeComposite (BYOC-Composite, spec/byoc.md): each match of a backend's composite
pattern becomes a call of an inline function ``fn (%FunctionVar_g_0, ...,
PartitionedFromPattern="nn.conv2d_add_nn.relu_", Composite="ort.conv2d_bias_relu") {...}``
on the match's inputs, as TVM's ``MergeComposite`` (``merge_composite.cc``) and its pattern
partitioner (``dataflow_matcher.cc``, ``PatternGrouper``) do.

Semantics, per global function (not those with a ``Compiler`` or ``Primitive`` attr) and per
composite in table order (the whole body is partitioned for one pattern before the next):

* nodes are tried from the output towards the inputs (reverse post-order, TVM's order);
  only calls, tuples and projections are tried as roots, and not one already grouped;
  nothing inside an existing ``Composite`` or ``Primitive`` function is matched;
* a match's *inputs* are ``Match.inputs()`` (relay_ref.passes.pattern); its *inner* nodes
  are those reached from the matched root without passing an input (operators, function
  literals and constants embedded);
* a match is not taken when one of its inner nodes (not an operator, function or constant)
  is already in a group of this pattern, or, other than the root, is used outside the match
  (fusing it would duplicate or cross it; TVM also admits an outside use that flows back
  into the root, which this pass refuses too: conservative, never a wrong program);
* a pattern predicate or a check that raises is a ``RelayError`` at the node;
* the composite's ``check`` (``compiler_support.check_composite``, on a ``CallInfo`` of the
  root with ``match`` set) may refuse a group afterwards; a refused group still holds its
  nodes for this pattern (TVM checks at rewrite time);
* ``PartitionedFromPattern`` names the inner nodes in post-order (calls of operators by
  name, other calls ``Call``, ``Tuple``, ``TupleGetItem<i>``, each followed by ``_``);
  parameters are ``%FunctionVar_<g>_<i>``, ``g`` counting the groups of this pattern.

Invariants: the result computes what the input computes (a composite call is the inlined
match); each distinct node is tried once per pattern and each match costs what the pattern
reaches, so the pass is linear in distinct nodes; the traversal is iterative.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from relay_ref.diagnostics import RelayError
from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import Type
from relay_ref.ir.visitor import children_outside, post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.compiler_support import (
    CallInfo,
    Composite,
    Support,
    check_composite,
    composite_owner,
    get_support,
)
from relay_ref.passes.pattern import DFPattern, Matcher
from relay_ref.passes.pattern import Match as PatternMatch
from relay_ref.passes.rewrite import map_functions, with_children

__all__ = ["MergeComposite", "composite_table", "partition_composite"]


def _stop(fn: Function) -> bool:
    return fn.attr("Composite") is not None or fn.attr("Primitive") is not None


def _skip_global(fn: Function) -> bool:
    return fn.attr("Compiler") is not None or fn.attr("Primitive") is not None


def composite_table(targets: Sequence[str] = (), patterns: Iterable[Any] | None = None
                    ) -> list[tuple[Support, Composite]]:
    """The composites to merge, in order, each with the backend reported by its check:
    ``patterns`` (``(name, pattern)``, ``(name, pattern, check)`` or ``Composite``) when
    given, else the pattern tables of ``targets`` (none when empty: as in TVM, the backends
    are named, so a pass run without options changes nothing)."""
    if patterns is None:
        names = (targets,) if isinstance(targets, str) else tuple(targets)
        out = []
        for name in names:
            support = get_support(name)
            out.extend((support, c) for c in support.patterns)
        return out
    table = []
    for item in patterns:
        if isinstance(item, Composite):
            comp = item
        elif isinstance(item, tuple | list) and len(item) in (2, 3):
            comp = Composite(*item)
        else:
            raise TypeError(f"MergeComposite: a pattern is (name, pattern), (name, pattern, "
                            f"check) or a Composite, not {item!r}")
        if not isinstance(comp.pattern, DFPattern):
            raise TypeError(f"MergeComposite: composite {comp.name!r}: "
                            f"{comp.pattern!r} is not a pattern")
        owner = composite_owner(comp.name)
        support = get_support(owner) if owner else Support(comp.name.split(".", 1)[0], {})
        table.append((support, comp))
    return table


@dataclass(frozen=True, slots=True)
class _Group:
    """One match taken: its root, bindings, inputs, inner node ids and number."""

    root: Expr
    match: PatternMatch
    inputs: tuple[Expr, ...]
    number: int


def _embedded(node: Expr) -> bool:
    return isinstance(node, Op | Function | Constant)


def _inner(root: Expr, inputs: dict[int, Expr]) -> list[Expr]:
    """The nodes of the match at ``root``: reached without passing an input; function
    literals are embedded whole (not entered). Post-order."""
    def enter(node: Expr) -> tuple[Expr, ...]:
        if isinstance(node, Function):
            return ()
        return tuple(k for k in children(node) if id(k) not in inputs)
    return list(post_order(root, enter=enter))


def _name_of(nodes: Iterable[Expr]) -> str:
    """TVM's ``PartitionedFromPattern`` string for the inner nodes (post-order)."""
    parts = []
    for node in nodes:
        if isinstance(node, Call):
            parts.append(f"{node.op.name}_" if isinstance(node.op, Op) else "Call_")
        elif isinstance(node, Tuple):
            parts.append("Tuple_")
        elif isinstance(node, TupleGetItem):
            parts.append(f"TupleGetItem{node.index}_")
        elif isinstance(node, Function):
            parts.append("Function")
        elif isinstance(node, Let):
            parts.append("Let_")
        elif isinstance(node, If):
            parts.append("If_")
        elif isinstance(node, Match):
            parts.append("Match_")
    return "".join(parts)


def _call_info(root: Expr, m: PatternMatch, types: dict[Expr, Type]) -> CallInfo:
    if isinstance(root, Call):
        return CallInfo.of(root, types.get, m)
    return CallInfo(root, "", None, (), (), types.get(root), m)  # type: ignore[arg-type]


def _match(matcher: Matcher, support: Support, comp: Composite, node: Expr
           ) -> PatternMatch | None:
    """The match of ``comp`` at ``node``; a pattern predicate (``where``) that raises is a
    ``RelayError`` at the node naming the composite, never a traceback."""
    try:
        return matcher.match(comp.pattern, node)
    except RelayError:
        raise
    except Exception as err:  # noqa: BLE001 - a backend author's predicate
        raise RelayError(f"backend {support.name!r}: the pattern of composite {comp.name!r} "
                         f"raised {type(err).__name__}: {err}",
                         getattr(node, "span", None)) from err


def partition_composite(expr: Expr, support: Support, comp: Composite,
                        types: dict[Expr, Type], matcher: Matcher | None = None) -> Expr:
    """``expr`` with every taken match of ``comp`` merged (module docstring). ``types``
    (node -> checked type) answers the pattern's type constraints; the rebuilt nodes are
    added to it (same type as the node they replace)."""
    matcher = matcher or Matcher(types.get)
    nodes = list(post_order(expr, enter=children_outside(_stop)))
    users: dict[int, list[Expr]] = {}
    enter = children_outside(_stop)
    for node in nodes:
        for kid in enter(node):
            users.setdefault(id(kid), []).append(node)
    grouped: set[int] = set()
    groups: dict[int, _Group] = {}
    number = 0
    for node in reversed(nodes):
        if id(node) in grouped or not isinstance(node, Call | Tuple | TupleGetItem):
            continue
        m = _match(matcher, support, comp, node)
        if m is None:
            continue
        inputs = {id(e): e for e in m.inputs()}
        if id(node) in inputs:
            continue
        g = number
        number += 1
        inner = _inner(node, inputs)
        inner_ids = {id(n) for n in inner}
        ok = True
        for n in inner:
            if _embedded(n):
                continue
            if id(n) in grouped or (n is not node and any(
                    id(u) not in inner_ids for u in users.get(id(n), ()))):
                ok = False
                break
        if not ok:
            continue
        grouped.update(id(n) for n in inner if not _embedded(n))
        groups[id(node)] = _Group(node, m, tuple(inputs.values()), g)
    if not groups:
        return expr
    taken = {k: grp for k, grp in groups.items()
             if check_composite(support, comp, _call_info(grp.root, grp.match, types))}
    if not taken:
        return expr
    done: dict[int, Expr] = {}
    for node in nodes:
        grp = taken.get(id(node))
        if grp is not None:
            new = _composite_call(grp, comp, [done[id(i)] for i in grp.inputs], types)
        else:
            kids = list(enter(node))
            new = node if not kids else with_children(
                node, [done[id(k)] for k in children(node)])
        if new is not node and node in types:
            types[new] = types[node]
        done[id(node)] = new
    return done[id(expr)]


def _composite_call(grp: _Group, comp: Composite, args: list[Expr],
                    types: dict[Expr, Type]) -> Call:
    params = {id(e): Var(f"FunctionVar_{grp.number}_{i}") for i, e in enumerate(grp.inputs)}
    inner = _inner(grp.root, params)
    body: dict[int, Expr] = {}
    for node in inner:
        if isinstance(node, Function):
            body[id(node)] = node
            continue
        kids = [params.get(id(k)) or body[id(k)] for k in children(node)]
        body[id(node)] = with_children(node, kids) if kids else node
    attrs = (("PartitionedFromPattern", _name_of(inner)), ("Composite", comp.name))
    fn = Function(tuple(params.values()), body[id(grp.root)], attrs=attrs)
    call = Call(fn, tuple(args), span=getattr(grp.root, "span", None))
    if grp.root in types:
        types[call] = types[grp.root]
    return call


@register_pass
class MergeComposite(Pass):
    """Merge each match of the backends' composite patterns into an inline ``Composite``
    function (module docstring). ``targets``: the backends whose pattern tables are used
    (all registered when empty); ``patterns``: an explicit table instead."""

    name = "MergeComposite"
    opt_level = 0

    def __init__(self, targets: Sequence[str] = (), patterns: Sequence[Any] | None = None
                 ) -> None:
        self.targets = targets
        self.patterns = patterns

    def __call__(self, mod: IRModule) -> IRModule:
        table = composite_table(self.targets, self.patterns)
        if not table:
            return mod
        original = mod
        if not mod.checked_types:
            from relay_ref.typecheck.infer import infer_types

            mod = infer_types(mod)
        types: dict[Expr, Type] = dict(mod.checked_types)
        matcher = Matcher(types.get)

        def run(name: str, fn: Function) -> Function:
            if _skip_global(fn):
                return fn
            body = fn.body
            for support, comp in table:
                body = partition_composite(body, support, comp, types, matcher)
            return fn if body is fn.body else with_children(fn, [body])  # type: ignore

        out = map_functions(mod, run)
        return original if out is mod else out
