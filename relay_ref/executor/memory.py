"""The memory plan: preallocated, reused output buffers for the entry's dataflow graph.

When the entry function is pure dataflow after FuseOps (calls of fused groups and
operators, tuples, projections, variables, constants and ``let`` chains binding them: no
control flow, no calls of other functions, so it is never re-entered while it runs;
``dataflow``; a let-bound variable is its value, so let-chain programs and the first-order
AD output are planned as graph-form ones), the result of a fused group is written into a buffer
allocated once at compile time instead of a fresh array, when

* its type is a static tensor type and its group's writing step honours ``out=`` (a CPU
  kernel that returns no views, or a generated elementwise kernel), and
* every user of the result is another fused group whose steps all produce fresh arrays
  (so no view of the buffer outlives the user), i.e. the value never escapes: it is not
  returned, put in a tuple or passed to anything else.

Liveness: nodes run in the code generator's order (post-order, left to right, as
``relay_ref.ir.visitor.post_order``); a value is live from its group until its last user.
Buffers are assigned by a linear scan: a group takes the smallest free buffer large enough
(or a new one) *before* the buffers of the inputs it reads last are released, so a group
never writes over its own inputs. Each planned value is a fixed view of a fixed buffer,
made at compile time, handed out by the runtime's allocation policy
(``relay_ref.executor.runtime.StaticPlanRuntime``) at the value's slot.

**Symbolic sizes** (issue 29): a value whose type has symbolic dimensions, all of them
over the shape variables the entry's parameters bind (Shape-Bind; not those a
``match_cast`` binds later: such values are allocated fresh when reached), is planned the
same way with a symbolic byte size (``shape_prod * itemsize``, canonical); a free buffer
is reused by a value whose size is provably at most the buffer's for every value of the
shape variables (``prove_le``; provably equal sizes first among equals: best fit as in
the static scan, so sizes ``n * c`` get the buffers the static plan gives ``b * c``), and
a symbolic buffer never serves a static value or the reverse. The
plan records ``symbolic[call] = (buffer, shape, dtype)`` and ``symbolic_sizes[buffer]``;
the runtime (``relay_ref.executor.runtime.SymbolicPlanRuntime``) evaluates the sizes
from the shape environment bound at the entry, allocating each buffer when a call needs
it larger than it is (or once, at compile time, at ``shape_bounds``), and makes the
views. The liveness argument is unchanged: it is about steps, not sizes.

**Concatenations in place** (``relay_ref.executor.inplace_concat``): a planned static
``concatenate`` whose parts qualify takes its buffer at its first part's step, and each
such part's value is its slice of that buffer (the part is written there; the
concatenation's kernel skips it).

Invariant (checked by ``tests/executor/test_memory.py``): two planned values share bytes
only if their live ranges are disjoint, except a concatenation and its parts placed in
its buffer (each read only by the concatenation), and no value handed to the caller is in
a buffer, so an output is never overwritten by a later call.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from relay_ref.executor.groups import Unplannable
from relay_ref.ir.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.shape import is_symbolic, prove_le, shape_prod, shape_vars
from relay_ref.ir.types import TensorType, Type
from relay_ref.ir.visitor import post_order
from relay_ref.ops.registry import op_kernel

__all__ = ["Dataflow", "MemoryPlan", "dataflow", "plan_memory", "writer_step"]


@dataclass(slots=True)
class MemoryPlan:
    """``views``: group call -> the array its result is written into; ``buffers``: the
    allocations (their total is the peak); ``ranges``: group call -> (first, last) step of
    the value's live range, for the tests; ``offsets``: group call -> its buffer (a static
    buffer's index, or ``-1 - k`` for symbolic buffer ``k``)."""

    views: dict[Call, np.ndarray] = field(default_factory=dict)
    buffers: list[np.ndarray] = field(default_factory=list)
    ranges: dict[Call, tuple[int, int]] = field(default_factory=dict)
    offsets: dict[Call, int] = field(default_factory=dict)
    #: symbolic sizes: group call -> (symbolic buffer index, shape, dtype); each symbolic
    #: buffer's byte size (a ``SymDim``)
    symbolic: dict[Call, tuple[int, tuple, np.dtype]] = field(default_factory=dict)
    symbolic_sizes: list[object] = field(default_factory=list)

    @property
    def peak_bytes(self) -> int:
        """Bytes of the static buffers (the symbolic ones depend on the shapes)."""
        return sum(b.nbytes for b in self.buffers)

    @property
    def slots(self) -> dict[Call, int]:
        """Group call -> its slot: the static views first, then the symbolic values."""
        out = {call: k for k, call in enumerate(self.views)}
        out.update({call: len(self.views) + k for k, call in enumerate(self.symbolic)})
        return out


def _is_group_call(node: Expr) -> bool:
    return type(node) is Call and type(node.op) is Function and \
        node.op.attr("Primitive") is not None


def _kids(node: Expr) -> tuple[Expr, ...]:
    kind = type(node)
    if kind is Call:
        return node.args  # a group's function literal is planned through its call
    if kind is Tuple:
        return node.fields
    if kind is TupleGetItem:
        return (node.tuple_value,)
    if kind is Let:
        return (node.value, node.body)
    return ()


@dataclass(slots=True)
class Dataflow:
    """A function whose body is dataflow: ``nodes`` in run order (post-order, left to
    right, a ``let``'s value before its body, as the code generator emits them; ``Let``
    nodes and the variables they bind left out), ``users``: value node -> the distinct
    nodes reading it (a let-bound variable read is a read of its value), ``result``: the
    node whose value the function returns."""

    nodes: list[Expr]
    users: dict[Expr, list[Expr]]
    result: Expr


def dataflow(func: Function) -> Dataflow | None:
    """``func``'s ``Dataflow`` (group bodies not entered), or None when its body is not
    dataflow: only calls of fused groups and operators, tuples, projections, variables,
    constants and ``let`` s binding them (no control flow, no function values, no calls of
    other functions, so it is never re-entered while it runs)."""
    nodes: list[Expr] = []
    alias: dict[Var, Expr] = {}
    for node in post_order(func.body, enter=_kids):
        kind = type(node)
        if kind is Call and not _is_group_call(node) and type(node.op) is not Op:
            return None
        if kind is Let and type(node.value) is Function:
            return None
        if kind not in (Call, Tuple, TupleGetItem, Var, Constant, Let):
            return None
        if kind is Let:
            alias[node.var] = node.value
        elif not (kind is Var and node in alias):
            nodes.append(node)

    def resolve(e: Expr) -> Expr:
        while type(e) is Var and e in alias:
            e = alias[e]
        return e

    users: dict[Expr, list[Expr]] = {}
    for node in nodes:
        for kid in dict.fromkeys(resolve(k) for k in _kids(node)):
            users.setdefault(kid, []).append(node)
    result = func.body
    while type(result) is Let:
        result = result.body
    return Dataflow(nodes, users, resolve(result))


def _fresh_step(step: object) -> bool:
    """Whether a plan step produces a fresh array (never a view of an input)."""
    kind = step.kind  # type: ignore[attr-defined]
    if kind == "fused":
        return True
    if kind == "op":
        kernel = op_kernel(step.label, "cpu")  # type: ignore[attr-defined]
        return kernel is not None and step.fn is kernel and \
            not getattr(kernel, "returns_view", False)  # type: ignore[attr-defined]
    return kind == "const"


def writer_step(plan: object) -> int | None:
    """The index of the step that may write the group's result into a buffer: the last
    step, or the anchor when the last (fused, in place) step writes over it; None when
    that step cannot take ``out=``."""
    steps = plan.steps  # type: ignore[attr-defined]
    if not steps:
        return None
    last = steps[-1]
    if last.kind == "fused" and last.out is not None:
        anchor = last.out - plan.n_params  # type: ignore[attr-defined]
        return anchor if 0 <= anchor < len(steps) and _fresh_step(steps[anchor]) else None
    return len(steps) - 1 if _fresh_step(last) else None


def _symbolic_ok(ty: TensorType, bound: frozenset[str]) -> bool:
    """A tensor type with symbolic dimensions over the variables ``bound`` only."""
    if all(type(d) is int for d in ty.shape):
        return False
    if not all(type(d) is int or is_symbolic(d) for d in ty.shape):
        return False
    return shape_vars(ty.shape) <= bound


def _best_fit(free: list[tuple[int, int]], need: object, sizes: list[object]) -> int | None:
    """The position in ``free`` of the symbolic buffer a value of ``need`` bytes takes: the
    smallest of those provably large enough for every value of the shape variables
    (``prove_le``; sizes ``n * c`` are then ordered as the static plan orders ``b * c``),
    ties to the earliest freed; None when none provably fits."""
    best: int | None = None
    for k, (_, slot) in enumerate(free):
        size = sizes[slot]
        if prove_le(need, size) is not True:  # type: ignore[arg-type]
            continue
        if best is None or (prove_le(size, sizes[free[best][1]]) is True  # type: ignore[arg-type]
                            and size != sizes[free[best][1]]):
            best = k
    return best


def plan_memory(func: Function, planner: object, types: dict[Expr, Type],
                bound_vars: frozenset[str] = frozenset()) -> MemoryPlan:
    """Assign buffers to the entry's group results (see the module docstring);
    ``bound_vars``: the shape variables the entry's parameters bind (symbolic sizes)."""
    plan = MemoryPlan()
    flow = dataflow(func)
    if flow is None:
        return plan
    nodes, users = flow.nodes, flow.users
    order = {node: i for i, node in enumerate(nodes)}
    try:
        plans = {node: planner.plan(node.op)  # type: ignore[attr-defined]
                 for node in nodes if _is_group_call(node)}
    except Unplannable:  # such a group runs as a function call: no plan
        return plan
    safe_user = {node: bool(p.steps) and _fresh_step(p.steps[-1]) and all(
        _fresh_step(s) or s.kind in ("tuple", "proj") for s in p.steps[:-1])
        for node, p in plans.items()}
    candidates: dict[Expr, int] = {}
    for node, gp in plans.items():
        ty = types.get(node)
        if type(ty) is not TensorType or not (all(type(d) is int for d in ty.shape)
                                              or _symbolic_ok(ty, bound_vars)):
            continue
        if node is flow.result or writer_step(gp) is None:
            continue
        us = users.get(node, [])
        if not us or not all(type(u) is Call and safe_user.get(u, False) for u in us):
            continue
        candidates[node] = max(order[u] for u in us)
    # free buffers sorted by (size, when freed): best fit is the first with size >= need,
    # ties to the earliest freed; values are tracked by buffer index, so planning costs
    # O(log n) a value even when thousands are live at once (first-order AD outputs)
    free: list[tuple[int, int, int]] = []  # (nbytes, serial, buffer index)
    serial = 0
    releases: dict[int, list[Call]] = {}
    held: dict[Expr, int] = {}
    # symbolic sizes: free buffers as (serial, buffer index), earliest freed first
    sym_free: list[tuple[int, int]] = []
    sym_held: dict[Expr, int] = {}

    def allocate(node: Expr, i: int) -> None:
        """A static buffer for candidate ``node``, live from step ``i`` to its last user."""
        ty = types[node]
        dtype = np.dtype(ty.dtype)
        nbytes = int(np.prod(ty.shape, dtype=np.int64)) * dtype.itemsize
        k = bisect.bisect_left(free, (nbytes, -1, -1))
        if k < len(free):
            slot = free.pop(k)[2]
        else:
            slot = len(plan.buffers)
            plan.buffers.append(np.empty(max(nbytes, 1), np.uint8))
        buf = plan.buffers[slot]
        held[node] = slot
        plan.views[node] = buf[:nbytes].view(dtype).reshape(ty.shape)  # type: ignore[index]
        plan.ranges[node] = (i, candidates[node])  # type: ignore[index]
        plan.offsets[node] = slot  # type: ignore[index]
        releases.setdefault(candidates[node], []).append(node)  # type: ignore[arg-type]

    # concatenations written in place (relay_ref.executor.inplace_concat): part -> (its
    # ConcatParts, its index there); the concatenation's buffer is taken at its first part
    from relay_ref.executor.inplace_concat import inplace_concats

    part_of: dict[Expr, tuple[object, int]] = {}
    for cp in inplace_concats(nodes, users, flow.result, plans, types, candidates,
                              writer_step):
        for k, part in enumerate(cp.parts):
            part_of[part] = (cp, k)
    for i, node in enumerate(nodes):
        if node in candidates and not all(type(d) is int for d in types[node].shape):
            ty = types[node]
            dtype = np.dtype(ty.dtype)
            size = shape_prod(ty.shape) * dtype.itemsize
            k = _best_fit(sym_free, size, plan.symbolic_sizes)
            if k is not None:
                slot = sym_free.pop(k)[1]
            else:
                slot = len(plan.symbolic_sizes)
                plan.symbolic_sizes.append(size)
            sym_held[node] = slot
            plan.symbolic[node] = (slot, tuple(ty.shape), dtype)  # type: ignore[index]
            plan.offsets[node] = -1 - slot  # type: ignore[index]  # symbolic: negative
            plan.ranges[node] = (i, candidates[node])  # type: ignore[index]
            releases.setdefault(candidates[node], []).append(node)  # type: ignore[arg-type]
        elif node in part_of:  # a concatenation's part: a slice of its buffer
            cp, k = part_of[node]
            concat = cp.concat
            if concat not in held:  # the concatenation's buffer, from its first part on
                allocate(concat, i)
            extent = int(types[node].shape[cp.axis])
            plan.views[node] = cp.part_view(plan.views[concat], k, extent)  # type: ignore[index]
            plan.ranges[node] = (i, order[concat])  # type: ignore[index]
            plan.offsets[node] = held[concat]  # type: ignore[index]
        elif node in candidates and node not in held:
            allocate(node, i)
        for done in releases.pop(i, ()):
            if done in sym_held:
                slot = sym_held.pop(done)
                sym_free.append((serial, slot))
            else:
                slot = held.pop(done)
                bisect.insort(free, (plan.buffers[slot].nbytes, serial, slot))
            serial += 1
    return plan
