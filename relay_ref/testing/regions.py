"""Where a pass changed a program: the *changed regions* of a module, and what they hold.

``changed_regions(before, after)`` walks both modules together from each function's body
and returns the sub-expressions of ``before`` where ``after`` differs: where the two
nodes differ in kind, operator, attributes or arity, or where two or more of their
children differ (a swap, a reordering), the ``before`` node is a region; where exactly one
child differs, the walk goes down into it. A region that is the tuple argument of an
operator call (``concatenate((%a, %b))`` reordered) is reported as that call. A function
present on one side only is a region as a whole.

``Regions`` summarises them: ``roots`` (the operator or expression form at each region's
top: what the pass rewrote, used to aim ``check_pass``'s automatic focus) and ``ops`` /
``forms`` (everything inside the regions, for the report). Iterative; each comparison is
``alpha_equal`` on a subtree, so the cost is at most the program's size times its depth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.equal import alpha_equal
from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import free_vars, post_order

__all__ = ["Regions", "changed", "changed_regions", "form_of", "summarise"]

_FORMS = {If: "if", Match: "match", RefCreate: "ref", RefRead: "ref", RefWrite: "ref",
          Function: "closure", Let: "let", Tuple: "tuple", TupleGetItem: "tuple"}


@dataclass(frozen=True)
class Regions:
    """What the changed regions of one program hold: ``roots`` (op names or form names at
    the regions' tops), ``ops`` and ``forms`` (inside them)."""

    roots: frozenset[str]
    ops: frozenset[str]
    forms: frozenset[str]


def form_of(node: Expr) -> str | None:
    """The expression form (``relay_ref.testing.focus.FOCUS_FORMS`` spelling) of ``node``,
    or the operator's name for an operator call; None for leaves."""
    if isinstance(node, Call):
        return node.op.name if isinstance(node.op, Op) else "closure"
    return _FORMS.get(type(node))


def changed(before: IRModule, after: IRModule) -> bool:
    """The pass changed the program: its functions are not alpha-equal, or their sharing
    differs (as many distinct nodes: ``alpha_equal`` compares trees, so merging two equal
    calls into one shared node, as EliminateCommonSubexpr does, is a change too)."""
    if set(after.functions) != set(before.functions) or not all(
            alpha_equal(f, after.functions[k]) for k, f in before.functions.items()):
        return True
    return any(_size(f) != _size(after.functions[k]) for k, f in before.functions.items())


def _size(fn: Expr) -> int:
    return sum(1 for _ in post_order(fn))


def changed_regions(before: IRModule, after: IRModule) -> list[Expr]:
    """The regions of ``before`` that ``after`` changed (see the module docstring)."""
    out: list[Expr] = []
    for name, fn in before.functions.items():
        other = after.functions.get(name)
        if other is None:
            out.append(fn)
        elif not alpha_equal(fn, other):
            out += _diff(fn, other)
    out += [fn for name, fn in after.functions.items() if name not in before.functions]
    return out


def _diff(before: Expr, after: Expr) -> list[Expr]:
    out: list[Expr] = []
    stack: list[tuple[Expr, Expr, Expr | None]] = [(before, after, None)]
    while stack:
        b, a, parent = stack.pop()
        if not _same_head(b, a):
            out.append(_owner(b, parent))
            continue
        kb, ka = list(children(b)), list(children(a))
        differing = [(x, y) for x, y in zip(kb, ka, strict=True) if not _equal(x, y)]
        if len(differing) == 1:
            stack.append((*differing[0], b))
        elif differing or not _equal(b, a):
            out.append(_owner(b, parent))
    return out


def _equal(b: Expr, a: Expr) -> bool:
    """Alpha-equal with the same free variables, by name (``alpha_equal`` relates free
    variables by position, so ``where(%c, %b, %a)`` would equal ``where(%c, %a, %b)``;
    names, not identities, so a pass that rebuilds its variables is compared fairly)."""
    return b is a or (alpha_equal(b, a) and [v.name_hint for v in free_vars(b)]
                      == [v.name_hint for v in free_vars(a)])


def _owner(node: Expr, parent: Expr | None) -> Expr:
    """The region a difference at ``node`` stands for: ``node`` itself, or its parent when
    ``node`` has no form of its own to name (a changed constant or variable: ``x * 1`` to
    ``x * 2`` is a change of the multiply) or is an operator's tuple argument."""
    if parent is not None and (form_of(node) is None or (
            isinstance(node, Tuple) and isinstance(parent, Call)
            and isinstance(parent.op, Op))):
        return parent
    return node


def _same_head(b: Expr, a: Expr) -> bool:
    """Same kind of node with the same non-child parts (operator, attributes, arity)."""
    if type(b) is not type(a):
        return False
    match b:
        case Call():
            if isinstance(b.op, Op) != isinstance(a.op, Op) or len(b.args) != len(a.args):
                return False
            if isinstance(b.op, Op):
                return b.op.name == a.op.name and repr(b.attrs) == repr(a.attrs)
            return True
        case Tuple():
            return len(b.fields) == len(a.fields)
        case TupleGetItem():
            return b.index == a.index
        case Function():
            return len(b.params) == len(a.params)
        case Match():
            return len(b.clauses) == len(a.clauses)
        case Constant():
            return (b.data.shape == a.data.shape and b.data.dtype == a.data.dtype
                    and np.array_equal(b.data, a.data, equal_nan=b.data.dtype.kind == "f"))
        case Var():
            return False  # a different variable (the alpha-equal case never gets here)
    return len(list(children(b))) == len(list(children(a)))


def summarise(regions: list[Expr]) -> Regions:
    roots: set[str] = set()
    ops: set[str] = set()
    forms: set[str] = set()
    for region in regions:
        root = form_of(region)
        if root is not None:
            roots.add(root)
        for node in post_order(region):
            if isinstance(node, Call) and isinstance(node.op, Op):
                ops.add(node.op.name)
            elif (form := form_of(node)) is not None:
                forms.add(form)
    return Regions(frozenset(roots), frozenset(ops), frozenset(forms))
