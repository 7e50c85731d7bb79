"""PartitionGraph (TVM ``src/relay/transforms/partition_graph.cc``): each annotated region
of an external compiler becomes a global function called from the host program (spec/
byoc.md, BYOC-Partition, BYOC-Cost).

The result, as TVM (v0.8+) prints it::

    def @tvmgen_default_t_main_0(%t_0_i0: Tensor[(10), float32], Compiler="t",
                                 Primitive=1, Inline=1,
                                 global_symbol="tvmgen_default_t_main_0") -> Tensor[...] {
      nn.relu(abs(%t_0_i0))
    }
    def @main(%x: Tensor[(10), float32]) -> Tensor[(10), float32] {
      tanh(@tvmgen_default_t_main_0(%x))
    }

**Algorithm.** Per global function (those with a ``Compiler`` attribute are kept), the
regions of ``relay_ref.passes.regions.find_regions``, numbered in post-order of the host
function (``k`` counts the outlined regions of the module, functions in definition order):

1. *Cost model* (BYOC-Cost): a region of an external compiler is outlined unless its
   operator-call count (a composite call counts the calls inside it) is below
   ``min_region_size`` (this pass's option, else the backend's ``Support.min_region_size``)
   or the backend's ``Support.worth(RegionCost(ops, flops, boundary_bytes))`` is false
   (flops: each operator's ``cost`` aspect, ``relay_ref.ops.costs``, on its checked
   shapes; boundary bytes: the static sizes of the region's distinct inputs, constants
   excluded, and distinct outputs). A backend
   nothing registered has no cost model. Regions of ``"default"`` are never outlined, nor
   are regions malformed annotations touch (``find_regions(strict=False)``: a begin with no
   end, a member that is a variable, a ``let``...): their annotations are removed.
2. *Outline*: the function ``@tvmgen_{mod_name}_{compiler}_main_{k}`` gets one parameter
   ``%{compiler}_{k}_i{j}`` per distinct input of the region (TVM's ``region_func_in``:
   the node under a ``compiler_begin``, annotations looked through; in post-order of
   the begins; annotated with the begin's checked type), except a constant or a tuple of
   constants (TVM's ``IsConstant``, here nested tuples too; never the call of an
   outlined region), bound into the body. The body is the region's members with every
   ``compiler_end`` dropped, with one output per distinct output node (TVM's
   ``out_expr_to_idx``), an end on a tuple literal standing for its fields (TVM's
   ``FlattenTupleOutputs``, one level); one output is the body, several are a tuple (in
   post-order of the ends). Attributes ``Compiler``, ``Primitive=1``, ``Inline=1``,
   ``global_symbol`` (TVM's), and the return type annotated.
3. *Host*: each region's ends become the call, or its projections (one per output,
   shared by its users; a flattened tuple rebuilt from its fields'); every remaining
   annotation (default regions, regions the cost model refused) is removed.

Guarantee: the same values (BYOC-Partition: the outlined function computes what its region
computed), ``@main``'s type unchanged, no annotation left, and the module's call graph
acyclic when the input's regions were convex and mutually acyclic (BYOC-Convex; checked
here: a cycle is a ``RegionError`` naming the function, never a wrong program).
Iterative and linear in distinct nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from relay_ref.diagnostics import RelayError
from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.span import Span
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.compiler_support import (
    DEFAULT,
    RegionCost,
    Support,
    call_flops,
    get_support,
    support_names,
)
from relay_ref.passes.regions import (
    Region,
    RegionError,
    RegionSet,
    compiler_of,
    find_regions,
    is_annotation,
    is_begin,
    is_composite_call,
    is_end,
    region_graph_acyclic,
)
from relay_ref.passes.rewrite import with_children
from relay_ref.typecheck.infer import infer_types

__all__ = ["PartitionGraph", "region_cost"]


@dataclass(frozen=True, slots=True)
class _Outline:
    """An outlined region: its global's name, one begin per parameter (the call's
    arguments are their operands), the function, and where each output node is."""

    name: str
    params: tuple[Call, ...]
    function: Function
    index: dict[int, int]  # output node (by identity) -> its position in the outputs
    outputs: int


def _source(expr: Expr) -> Expr:
    """``expr`` with every annotation above it stripped (TVM keys inputs by this node)."""
    while is_annotation(expr):
        expr = expr.args[0]  # type: ignore[attr-defined]
    return expr


def _constant(expr: Expr, outlined: Callable[[Call], bool]) -> Expr | None:
    """The value of ``expr`` with its annotations removed if it is a constant or a tuple of
    them (nested tuples included), which a region binds instead of taking as a parameter
    (TVM binds a constant and a tuple of constants); else None. An end ``outlined`` accepts
    stands for a region's call: not a constant."""
    walk = [expr]
    seen: set[int] = set()
    while walk:
        node = walk.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if is_annotation(node):
            if is_end(node) and outlined(node):  # type: ignore[arg-type]
                return None
            walk.append(node.args[0])  # type: ignore[attr-defined]
        elif type(node) is Tuple:
            walk.extend(node.fields)
        elif type(node) is not Constant:
            return None
    value: dict[int, Expr] = {}
    for node in post_order(expr):
        value[id(node)] = (value[id(node.args[0])] if is_annotation(node)  # type: ignore[attr-defined]
                           else with_children(node, (value[id(k)] for k in children(node))))
    return value[id(expr)]


def _outlined_end(node: Call) -> bool:
    """region_cost's guess: an end of an external compiler may be outlined."""
    return compiler_of(node) != DEFAULT


def _flattened(node: Expr) -> tuple[Expr, ...]:
    """The output nodes a region output ``node`` stands for: a (non-empty) tuple literal's
    fields (TVM's FlattenTupleOutputs, one level), else ``node`` itself."""
    return node.fields if type(node) is Tuple and node.fields else (node,)


def _nbytes(ty: Type | None) -> int:
    if isinstance(ty, TupleType):
        return sum(_nbytes(f) for f in ty.fields)
    if isinstance(ty, TensorType) and all(isinstance(d, int) for d in ty.shape):
        try:
            size = np.dtype(ty.dtype).itemsize
        except TypeError:
            return 0
        return math.prod(ty.shape) * size
    return 0


def region_cost(region: Region, types: dict[Expr, Type]) -> RegionCost:
    """The cost model's view of ``region`` (``types``: the module's checked types)."""
    ops = flops = 0
    for node in region.nodes:
        if is_annotation(node) or type(node) is not Call:
            continue
        if type(node.op) is Op:
            ops += 1
            flops += call_flops(node, types)
        elif is_composite_call(node):
            for inner in post_order(node.op.body):
                if type(inner) is Call and type(inner.op) is Op:
                    ops += 1
                    flops += call_flops(inner, types)
    # each distinct input (constants, tuples of them, are bound) and distinct output once
    ins = {id(_source(b.args[0])): b for b in region.ins
           if _constant(b.args[0], _outlined_end) is None}
    outs = {id(e.args[0]): e for e in region.outs}
    boundary = sum(_nbytes(types.get(b)) for b in ins.values())
    boundary += sum(_nbytes(types.get(e)) for e in outs.values())
    return RegionCost(ops, flops, boundary)


class _Partitioner:
    def __init__(self, types: dict[Expr, Type], min_region_size: int | None,
                 mod_name: str) -> None:
        self.types = types
        self.min_region_size = min_region_size
        self.mod_name = mod_name
        self.count = 0
        self.new: dict[str, Function] = {}
        self.taken: set[str] = set()
        self.regions: RegionSet | None = None  # the function's being partitioned
        self.chosen: frozenset[int] = frozenset()  # its regions outlined
        self.constants: dict[int, Expr | None] = {}  # a begin's operand -> _constant's

    def outlined_end(self, end: Call) -> bool:
        """Whether ``end`` closes a region of the current function that is outlined."""
        region = self.regions.region_of(end) if self.regions is not None else None
        return region is not None and region.id in self.chosen

    def _support(self, target: str) -> Support | None:
        return get_support(target) if target in support_names() else None

    def _outlined(self, region: Region) -> bool:
        if region.target == DEFAULT or not region.valid:
            return False
        support = self._support(region.target)
        limit = self.min_region_size
        if limit is None and support is not None:
            limit = support.min_region_size
        worth = support.worth if support is not None else None
        if limit is None and worth is None:
            return True
        cost = region_cost(region, self.types)
        if limit is not None and cost.ops < limit:
            return False
        if worth is None:
            return True
        try:
            return bool(worth(cost))
        except RelayError:
            raise
        except Exception as err:  # noqa: BLE001 - a backend author's cost model
            raise RelayError(f"backend {region.target!r}: the cost model raised "
                             f"{type(err).__name__}: {err}",
                             region.outs[0].span) from err

    def _outline(self, region: Region) -> _Outline:
        target = region.target
        while True:  # numbers a module already uses (an earlier partition) are skipped
            k = self.count
            self.count += 1
            name = f"tvmgen_{self.mod_name}_{target}_main_{k}"
            if name not in self.taken:
                break
        mapped: dict[int, Expr] = {}
        params: list[Var] = []
        origins: list[Call] = []
        inputs: dict[int, Expr] = {}  # distinct input (annotations stripped) -> its operand
        for node in region.nodes:
            if is_begin(node):
                arg = node.args[0]
                if id(arg) not in self.constants:  # begins sharing an operand: walk once
                    self.constants[id(arg)] = _constant(arg, self.outlined_end)
                const = self.constants[id(arg)]
                if const is not None:
                    mapped[id(node)] = const
                    continue
                key = id(_source(arg))
                if key not in inputs:
                    var = Var(f"{target}_{k}_i{len(params)}", self.types.get(node))
                    params.append(var)
                    origins.append(node)
                    inputs[key] = var
                mapped[id(node)] = inputs[key]
            elif is_end(node):
                mapped[id(node)] = mapped[id(node.args[0])]
            else:
                mapped[id(node)] = with_children(
                    node, (mapped.get(id(kid), kid) for kid in children(node)))
        # one output per distinct output node; a tuple literal is flattened into its
        # fields (TVM's FlattenTupleOutputs) and rebuilt on the host
        outs: list[Expr] = []
        out_types: list[Type | None] = []
        index: dict[int, int] = {}
        for end in region.outs:
            for node in _flattened(end.args[0]):
                if id(node) not in index:
                    index[id(node)] = len(outs)
                    outs.append(mapped[id(node)])
                    out_types.append(self.types.get(node))
        if len(outs) == 1:
            body: Expr = outs[0]
            ret = out_types[0]
        else:
            body = Tuple(tuple(outs))
            ret = (TupleType(tuple(out_types))  # type: ignore[arg-type]
                   if all(t is not None for t in out_types) else None)
        attrs = (("Compiler", target), ("Primitive", 1), ("Inline", 1),
                 ("global_symbol", name))
        fn = Function(tuple(params), body, ret, (), attrs)
        self.new[name] = fn
        return _Outline(name, tuple(origins), fn, index, len(outs))

    def run(self, fn: Function) -> Function:
        if fn.attr("Compiler") is not None:
            return fn
        rs = find_regions(fn.body, strict=False)
        if not rs.regions and not any(is_annotation(n) for n in rs.order):
            return fn
        chosen = [r for r in rs.regions if self._outlined(r)]
        if not region_graph_acyclic(fn.body, rs, frozenset(r.id for r in chosen)):
            raise RegionError("the annotated regions are not convex (a path leaves a region "
                              "and re-enters it): run MergeCompilerRegions on annotations "
                              "AnnotateTarget made", fn.span)
        self.regions, self.chosen = rs, frozenset(r.id for r in chosen)
        self.constants = {}
        outline = {r.id: self._outline(r) for r in chosen}
        done: dict[int, Expr] = {}
        calls: dict[int, Expr] = {}

        def enter(node: Expr) -> tuple[Expr, ...]:
            # An outlined region's end depends on the inputs of its whole region (a begin
            # may be reachable only from another of its ends), not on its members.
            region = rs.region_of(node)
            if region is not None and region.id in outline and is_end(node):
                return tuple(b.args[0] for b in outline[region.id].params)
            return tuple(children(node))

        projections: dict[tuple[int, int], Expr] = {}  # (region, output) -> shared read
        results: dict[int, Expr] = {}  # distinct output node -> its value on the host

        def output(region: Region, k: int, span: Span | None) -> Expr:
            call = calls[region.id]
            if outline[region.id].outputs == 1:
                return call
            key = (region.id, k)
            if key not in projections:
                projections[key] = TupleGetItem(call, k, span)
            return projections[key]

        for node in post_order(fn.body, enter=enter):
            region = rs.region_of(node)
            if region is not None and region.id in outline and is_end(node):
                info = outline[region.id]
                if region.id not in calls:
                    args = tuple(done[id(b.args[0])] for b in info.params)
                    calls[region.id] = Call(GlobalVar(info.name), args, None, (),
                                            _call_span(region))
                member = node.args[0]
                if id(member) not in results:
                    flat = _flattened(member)
                    values = tuple(output(region, info.index[id(f)], node.span)
                                   for f in flat)
                    results[id(member)] = (values[0] if flat[0] is member
                                           else Tuple(values, node.span))
                out: Expr = results[id(member)]
            elif region is not None and region.id in outline:
                continue  # inside an outlined region: rebuilt in its function
            elif is_annotation(node):
                out = done[id(node.args[0])]
            else:
                out = with_children(node, (done[id(k)] for k in children(node)))
            done[id(node)] = out
        body = done[id(fn.body)]
        return Function(fn.params, body, fn.ret_type, fn.type_params, fn.attrs, fn.span)


def _call_span(region: Region) -> Span | None:
    """Where a region's call is in the source: its first output's original node, else its
    first member call (annotations carry none), so run-time errors of the region point at
    the user's line."""
    for node in (*(end.args[0] for end in region.outs), *region.nodes):
        if type(node) is Call and not is_annotation(node) and node.span is not None:
            return node.span
    return region.outs[0].span if region.outs else None


@register_pass
class PartitionGraph(Pass):
    """Outline each annotated region of an external compiler into a global function (TVM's
    PartitionGraph; see the module docstring). ``min_region_size``: the fewest operator
    calls a region needs to be outlined (None: each backend's own); ``mod_name``: the
    ``tvmgen_<mod_name>_`` prefix of the functions' names."""

    name = "PartitionGraph"
    idempotent = True  # its output has no annotation left: a second run returns it
    opt_level = 0

    def __init__(self, min_region_size: int | None = None, mod_name: str = "default") -> None:
        if min_region_size is not None and (type(min_region_size) is not int
                                            or min_region_size < 0):
            raise ValueError(f"PartitionGraph: min_region_size must be None or an int >= 0, "
                             f"not {min_region_size!r}")
        if type(mod_name) is not str or not mod_name.isidentifier():
            raise ValueError(f"PartitionGraph: mod_name must be an identifier, not "
                             f"{mod_name!r}")
        self.min_region_size = min_region_size
        self.mod_name = mod_name

    def __call__(self, mod: IRModule) -> IRModule:
        if not any(is_annotation(n) for f in mod.functions.values()
                   for n in post_order(f.body)):
            return mod
        typed = mod if mod.checked_types else infer_types(mod)
        part = _Partitioner(typed.checked_types, self.min_region_size, self.mod_name)
        part.taken = set(mod.functions)
        functions = {name: part.run(f) for name, f in typed.functions.items()}
        functions.update(part.new)
        return replace(mod, functions=functions, checked_types={}, global_types={},
                       casts=None)
