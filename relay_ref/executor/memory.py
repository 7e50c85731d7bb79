"""The memory plan: preallocated, reused output buffers for the entry's dataflow graph.

When the entry function is pure dataflow after FuseOps (calls of fused groups and
operators, tuples, projections, variables, constants and ``let`` chains binding them: no
control flow, no calls of other functions, so it is never re-entered while it runs;
``dataflow``; a let-bound variable is its value, so let-chain programs and the first-order
AD output are planned as graph-form ones), the result of a fused group is written into a buffer
allocated once at compile time instead of a fresh array, when

* its type is a static tensor type and its group's writing step honours ``out=`` (a CPU
  kernel that returns no views, or a generated elementwise kernel), and
* no value that may share its memory (below) reaches the function's result: outputs are
  always fresh arrays, so a later call never overwrites what a caller kept.

**Aliases.** A value may share memory with others without being written into a buffer:
a view kernel (``returns_view``: reshape, transpose, batch_flatten, ...) may return a view
of its argument, an operator's NumPy reference may return a view of any argument, a tuple
holds its fields and a projection the field it selects. ``aliased_params`` says, from a
group's plan, which of its parameters its result may share memory with (none when its
writing step is fresh; steps through tuples and projections followed, conservatively: a
reference is taken to alias every argument); an operator called outside any group may
alias every argument. Each value's *owners* are the planned values whose buffer it may
be (or view): a planned group's result owns itself, any other value the owners of the
inputs it may alias. Gradient programs are full of these (the transposed weights of
``dense``'s gradient, the pooling gradient reading the activation it pools, the
flattened activation, the loss's tuple), so the plan follows them instead of giving up
on every value one of them reads.

Liveness: nodes run in the code generator's order (post-order, left to right, as
``relay_ref.ir.visitor.post_order``); a planned value's buffer is live from its group
until the last read of any value it owns (a view of it, a tuple holding it, a reference's
result that may be it: each keeps its base alive until its own last user), and no buffer
is owned by the result (a planned value the result may own is dropped from the plan).

Buffers are assigned by a linear scan: a group takes the smallest free buffer large enough
(or a new one) *before* the buffers of the inputs it reads last are released, so a group
never writes over its own inputs. Each planned value is a fixed view of a fixed buffer,
made at compile time, handed out by the runtime's allocation policy
(``relay_ref.executor.runtime.StaticPlanRuntime``) at the value's slot.

What stays fresh: outputs (and every value that may share their memory), the results of
steps that cannot write ``out=`` (NumPy references, view kernels: a reference allocates
its own result, so giving it a buffer would only add a copy), values inside a group that
are not its result, and the scratch memory kernels allocate internally. A per-call pool
of released arrays would not reach any of these in a dataflow entry (every value it
could recycle is planned here); allocations inside references and kernels are theirs to
avoid (CPU kernels for the training step's operators, issue 30).

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
``concatenate`` whose parts all qualify takes its buffer at its first part's step, and each
part's value is its slice of that buffer (the part is written there; the concatenation's
kernel skips it).

Invariants (checked by ``tests/executor/test_memory.py`` and, for gradient programs with
views, references and tuples, ``tests/executor/test_memory_plan_grad.py``): two planned
values share bytes only if their live ranges are disjoint, except a concatenation and its
parts placed in its buffer (each read only by the concatenation); a planned value's range
covers every read of every value that may share its memory; no value handed to the caller
is (a view of) a buffer, so an output is never overwritten by a later call.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from relay_ref.executor.groups import Unplannable
from relay_ref.ir.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.shape import is_symbolic, prove_le, shape_prod, shape_vars
from relay_ref.ir.types import TensorType, Type
from relay_ref.ir.visitor import post_order
from relay_ref.ops.registry import op_kernel

__all__ = ["Dataflow", "MemoryPlan", "aliased_params", "dataflow", "plan_memory",
           "writer_step"]


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
    #: let-bound variable -> the value bound to it
    bound: dict[Var, Expr] = field(default_factory=dict)

    def resolve(self, e: Expr) -> Expr:
        """The value node ``e`` reads (through let-bound variables and ``let`` s: a
        ``let``'s value is its body's)."""
        bound = self.bound
        while True:
            if type(e) is Var and e in bound:
                e = bound[e]
            elif type(e) is Let:
                e = e.body
            else:
                return e


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

    flow = Dataflow(nodes, {}, func.body, alias)
    resolve = flow.resolve
    for node in nodes:
        for kid in dict.fromkeys(resolve(k) for k in _kids(node)):
            flow.users.setdefault(kid, []).append(node)
    flow.result = resolve(func.body)
    return flow


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


def aliased_params(plan: object) -> frozenset[int]:
    """The positions of the group's parameters whose memory its result may share: empty
    when the result is fresh (``writer_step`` is not None); else those a view kernel
    (``returns_view``) or an operator's reference (which may return a view of any
    argument) passes on to the result, through tuples and projections."""
    if writer_step(plan) is not None:
        return frozenset()
    n = plan.n_params  # type: ignore[attr-defined]
    shares: list[frozenset[int]] = [frozenset((k,)) for k in range(n)]
    for step in plan.steps:  # type: ignore[attr-defined]
        kind = step.kind
        if kind == "const":
            own: frozenset[int] = frozenset()
        elif kind in ("op", "fused") and step.out is not None:
            own = shares[step.out]  # written in place over an earlier value
        elif kind in ("op", "fused") and _fresh_step(step):
            own = frozenset()
        else:  # a view kernel, a reference, a tuple, a projection: any input it reads
            own = frozenset().union(*(shares[j] for j in step.inputs))
        shares.append(own)
    return shares[-1] if len(shares) > n else frozenset()


def _writable(node: Expr, plan: object, types: dict[Expr, Type],
              bound_vars: frozenset[str]) -> bool:
    """Whether the group call's result may be written into a planned buffer: a tensor of
    static type (or symbolic over ``bound_vars``) whose writing step honours ``out=``."""
    ty = types.get(node)
    if type(ty) is not TensorType or not (all(type(d) is int for d in ty.shape)
                                          or _symbolic_ok(ty, bound_vars)):
        return False
    return writer_step(plan) is not None


def _live_ends(flow: Dataflow, plans: dict[Expr, object], types: dict[Expr, Type],
               bound_vars: frozenset[str]) -> dict[Expr, int]:
    """The planned values: writable group call -> the last step its memory is read at,
    through every value that may share it (see the module docstring, Aliases); values
    whose memory may reach the function's result are left out (outputs stay fresh)."""
    nodes, users, resolve = flow.nodes, flow.users, flow.resolve
    order = {node: i for i, node in enumerate(nodes)}
    none: frozenset[Expr] = frozenset()
    owners: dict[Expr, frozenset[Expr]] = {}
    for node in nodes:
        kind = type(node)
        own = none
        if kind is Call:
            plan = plans.get(node)
            if plan is None:  # an operator outside any group: kernel or reference
                reads: Iterable[Expr] = node.args
            elif writer_step(plan) is not None:
                reads = ()
                if _writable(node, plan, types, bound_vars):
                    own = frozenset((node,))
            else:
                reads = [node.args[k] for k in sorted(aliased_params(plan))]
            for arg in reads:
                more = owners.get(resolve(arg), none)
                if more:
                    own = own | more if own else more
        elif kind is Tuple:
            for f in node.fields:
                more = owners.get(resolve(f), none)
                if more:
                    own = own | more if own else more
        elif kind is TupleGetItem:
            whole = resolve(node.tuple_value)
            own = owners.get(resolve(whole.fields[node.index]) if type(whole) is Tuple
                             else whole, none)
        if own:
            owners[node] = own
    ends: dict[Expr, int] = {}
    for node, own in owners.items():
        us = users.get(node)
        last = max(order[u] for u in us) if us else order[node]
        for base in own:
            if ends.get(base, -1) < last:
                ends[base] = last
    for base in owners.get(flow.result, none):
        ends.pop(base, None)
    return ends


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
    nodes = flow.nodes
    try:
        plans = {node: planner.plan(node.op)  # type: ignore[attr-defined]
                 for node in nodes if _is_group_call(node)}
    except Unplannable:  # such a group runs as a function call: no plan
        return plan
    candidates = _live_ends(flow, plans, types, bound_vars)
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
    for cp in inplace_concats(nodes, flow.users, flow.result, plans, types, candidates,
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
            plan.ranges[node] = (i, candidates[concat])  # type: ignore[index]
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
