"""Plans of fused groups: how one FuseOps ``Primitive`` function runs (DESIGN.md section 2).

FuseOps (``relay_ref.passes.fuse_ops``) decides *what* runs together; this module decides
*how*, from the group's operators and types, as a list of ``Step`` s the code generator
emits as statements (one Python line per step, located at the Relay call it computes):

1. every operator of the group is elementwise or broadcast, shapes static: one generated
   numba kernel for the whole group (``relay_ref.executor.fused.build_elementwise``);
2. an *anchor* (conv2d, dense, pooling, a reduction: whatever is not elementwise) followed
   by an elementwise tail that only it feeds: the anchor's kernel, then the tail as one
   generated kernel written in place into the anchor's fresh output when the tail's
   kernel allows it (TVM's out-elemwise-fusable groups: conv2d + bias_add + relu);
3. a chain of ``reshape`` s and ``transpose`` s ending in a reshape after a transpose
   (the chain then copies) of the group's one parameter, shapes static (shufflenet's channel
   shuffle: reshape, transpose, reshape):
   one step (``LayoutCopy``) that applies the chain as NumPy views and copies once into
   ``out`` (a planned buffer) or a fresh array, instead of one step per operator and a
   fresh copy made by the last reshape;
4. otherwise one step per operator, in post-order.

A group body that calls nested function literals (``Composite=`` functions a BYOC
partitioner made, a ``Primitive`` inside a ``Primitive``, a ``let``-bound function) or binds
values with ``let`` is first *flattened* (``flatten_group``): each call of a function literal
is replaced by a copy of its body with the arguments in place of the parameters (call by
value of pure dataflow: the same values), each ``let``-bound value substituted for its
variable, sharing kept. A body that still cannot be planned (control flow, references, a
function value as the result) raises ``Unplannable``; the code generator then runs the
group as an ordinary function call, so nothing internal escapes ``rr.compile``.

A step calls the operator's ``kernels["cpu"]`` when it has one, else its NumPy reference
(every op runs; nothing falls back to the interpreter). Invariants: steps only read group
inputs, constants and earlier steps; a step writes ``out=`` only into the fresh result of
an earlier step of the same group that nothing else reads (the anchor's output).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.shape import bounds_of, is_symbolic, shape_prod, shape_vars
from relay_ref.ir.span import Span
from relay_ref.ir.types import TensorType, Type
from relay_ref.ir.visitor import post_order
from relay_ref.ops.registry import OpPattern, get_op, op_kernel

__all__ = ["MIN_FUSED_ELEMENTS", "GroupPlan", "GroupPlanner", "LayoutCopy", "Step",
           "Unplannable", "flatten_group", "layout_chain"]

#: Groups whose result has fewer elements run op by op through the kernels / references
#: instead of a generated numba kernel: compiling one costs 0.2-0.9 s (performance.md
#: section 5), which a few calls on small tensors never pay back, and NumPy takes about a
#: microsecond per op on them.
MIN_FUSED_ELEMENTS = 1024


@dataclass(frozen=True, slots=True, eq=False)
class Step:
    """One statement of a group's plan. ``kind``: ``"op"`` (``fn(args, attrs)``),
    ``"fused"`` (``fn(args)``, a generated kernel), ``"const"`` (``value``), ``"tuple"``,
    ``"proj"`` (field ``index`` of input 0). ``inputs`` index the group's values: its
    parameters first, then one value per step. ``out`` is the index of a value whose array
    the step may overwrite with its result (``None``: a fresh result)."""

    kind: str
    inputs: tuple[int, ...]
    fn: Callable[..., Any] | None = None
    attrs: object = None
    value: object = None
    index: int = 0
    out: int | None = None
    span: Span | None = None
    label: str = ""
    #: for a fused step: each operator's first call in the group (op name -> span), to
    #: locate a run-time failure the kernel reports by op name
    op_spans: tuple[tuple[str, Span], ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class GroupPlan:
    """How a fused group runs: its steps, a label (``conv2d+bias_add+relu``) and the
    strategy (``fused`` / ``anchor+fused`` / ``layout`` / ``ops``), for ``exe.plan``."""

    label: str
    strategy: str
    n_params: int
    steps: tuple[Step, ...]
    out_type: Type | None = None
    ops: tuple[str, ...] = field(default=())
    kernels: tuple[str, ...] = field(default=())


class Unplannable(Exception):
    """A ``Primitive`` group whose body is not dataflow of operators even after
    ``flatten_group``: the code generator runs it as an ordinary function call."""


def flatten_group(prim: Function, types: MutableMapping[Expr, Type]) -> Function:
    """``prim`` with its nested function-literal calls inlined and its ``let`` s substituted
    (see the module docstring); ``prim`` itself when it has neither. New nodes get the type
    of the node they copy, recorded in ``types`` (the planner passes its own overlay, never
    the module's ``checked_types``). Raises ``Unplannable`` for a body that is
    not dataflow of operator calls, tuples, projections, variables and constants."""
    if not any(type(n) is Let or type(n) is Function for n in post_order(prim.body)):
        return prim
    return run_deep(lambda: _flatten(prim, types), name="relay-flatten")


def _flatten(prim: Function, types: MutableMapping[Expr, Type]) -> Function:
    memo: dict[tuple[int, int], Any] = {}
    counter = [0]

    def go(e: Expr, env: dict[Var, Any], inst: int) -> Any:
        key = (id(e), inst)
        known = memo.get(key)
        if known is not None:
            return known
        kind = type(e)
        out: Any
        if kind is Var:
            out = env.get(e, e)
        elif kind is Constant or kind is Op:
            out = e
        elif kind is Function:
            out = (e, env)  # a closure: instantiated at its call
        elif kind is Let:
            env[e.var] = go(e.value, env, inst)
            out = go(e.body, env, inst)
        elif kind is Call:
            callee = go(e.op, env, inst)
            args = [go(a, env, inst) for a in e.args]
            if any(type(a) is tuple for a in args):
                raise Unplannable("a function value passed inside a fused group")
            if type(callee) is tuple:
                fn, outer = callee
                if len(fn.params) != len(args):  # pragma: no cover - type-checked
                    raise Unplannable("arity")
                counter[0] += 1
                inner = dict(outer)
                inner.update(zip(fn.params, args, strict=True))
                out = go(fn.body, inner, counter[0])
            elif type(callee) is Op:
                out = e if all(a is b for a, b in zip(args, e.args, strict=True)) else \
                    Call(e.op, tuple(args), e.attrs, e.type_args, e.span)
            else:
                raise Unplannable(f"a call of {type(callee).__name__} inside a fused group")
        elif kind is Tuple:
            fields = [go(f, env, inst) for f in e.fields]
            if any(type(f) is tuple for f in fields):
                raise Unplannable("a function value inside a fused group's tuple")
            out = e if all(a is b for a, b in zip(fields, e.fields, strict=True)) else \
                Tuple(tuple(fields), e.span)
        elif kind is TupleGetItem:
            value = go(e.tuple_value, env, inst)
            if type(value) is Tuple:  # a projection of a tuple built here: its field
                out = value.fields[e.index]
            elif type(value) is tuple:
                raise Unplannable("a projection of a function value")
            else:
                out = e if value is e.tuple_value else \
                    TupleGetItem(value, e.index, e.span)
        else:
            raise Unplannable(f"{kind.__name__} inside a fused group")
        if out is not e and type(out) is not tuple and out not in types and e in types:
            types[out] = types[e]
        memo[key] = out
        return out

    body = go(prim.body, {}, 0)
    if type(body) is tuple:
        raise Unplannable("a fused group returning a function")
    if body not in types and prim.body in types:
        types[body] = types[prim.body]
    return Function(prim.params, body, prim.ret_type, prim.type_params, prim.attrs, prim.span)


def _short(name: str) -> str:
    return name.split(".")[-1]


class GroupPlanner:
    """Plans groups (memoised by function identity) with the module's checked types.

    The target-specific choices are methods (``_op_fn``, ``_kernel_kind``, ``_elementwise``,
    ``_tail_kernel``, ``_worth_fusing``, ``_may_overwrite``): the CUDA planner
    (``relay_ref.executor.cuda_plan``) overrides them and keeps the strategies."""

    #: the kernel kind of a generated fused step, in ``exe.plan``
    FUSED_KIND = "numba fused"
    #: the kernel kind of a ``LayoutCopy`` step, in ``exe.plan``
    LAYOUT_KIND = "layout copy"
    #: whether layout chains become one ``LayoutCopy`` step (NumPy arrays: host targets)
    LAYOUT_COPY = True

    def __init__(self, types: Mapping[Expr, Type], *, fuse: bool = True,
                 cache_dir: str | None = None) -> None:
        #: the module's checked types under the planner's own layer, which the types of the
        #: nodes planning makes (``flatten_group``) go into: the module is left as it was
        self.types: ChainMap[Expr, Type] = ChainMap({}, types)  # type: ignore[arg-type]
        self.fuse = fuse
        self.cache_dir = cache_dir
        self.plans: dict[Function, GroupPlan] = {}
        self.singles: dict[tuple[str, int], Callable[..., Any]] = {}

    # -- a single operator call (outside a group) --------------------------------------------
    def single_op(self, call: Call) -> Callable[..., Any]:
        """A Python function of the call's arguments running the op (kernel or reference)."""
        name = call.op.name
        fn, attrs = _op_fn(name), call.attrs if call.attrs is not None else get_op(name).attrs()

        def run(*args: Any) -> Any:
            return fn([np.asarray(a) if isinstance(a, np.generic) else a for a in args], attrs)

        return run

    # -- a group ------------------------------------------------------------------------------
    def plan(self, prim: Function) -> GroupPlan:
        known = self.plans.get(prim)
        if known is None:
            known = self.plans[prim] = self._plan(prim)
        return known

    def _plan(self, prim: Function) -> GroupPlan:
        prim = flatten_group(prim, self.types)
        body = prim.body
        nodes = [n for n in post_order(body) if type(n) is not Op]
        ops = tuple(n.op.name for n in nodes if type(n) is Call and type(n.op) is Op)
        label = "+".join(_short(o) for o in ops) or "plumbing"
        out_type = self.types.get(body)
        if self.fuse and ops and self._all_elementwise(nodes):
            kernel = self._elementwise(prim.params, body)
            if kernel is not None:
                step = Step("fused", tuple(range(len(prim.params))), fn=kernel,
                            span=body.span, label=label, op_spans=_op_spans(nodes))
                return GroupPlan(label, "fused", len(prim.params), (step,), out_type, ops,
                                 (self.FUSED_KIND,))
        if self.fuse:
            split = self._anchor_split(prim, nodes)
            if split is not None:
                return split
            layout = self._layout_copy(prim, nodes, label, ops)
            if layout is not None:
                return layout
        steps, index = self._op_steps(prim.params, nodes)
        del index
        kernels = tuple(self._kernel_kind(n) for n in nodes
                        if type(n) is Call and type(n.op) is Op)
        return GroupPlan(label, "ops", len(prim.params), tuple(steps), out_type, ops, kernels)

    def _op_steps(self, params: tuple[Var, ...], nodes: list[Expr],
                  index: dict[Expr, int] | None = None) -> tuple[list[Step], dict[Expr, int]]:
        """One step per node (post-order), inputs indexed through ``index``."""
        index = dict(index or {})
        for i, p in enumerate(params):
            index.setdefault(p, i)
        steps: list[Step] = []
        for node in nodes:
            if node in index:
                continue
            kind = type(node)
            if kind is Constant:
                step = Step("const", (), value=node.data)
            elif kind is Tuple:
                step = Step("tuple", tuple(index[f] for f in node.fields))
            elif kind is TupleGetItem:
                step = Step("proj", (index[node.tuple_value],), index=node.index)
            elif kind is Call and type(node.op) is Op:
                name = node.op.name
                attrs = node.attrs if node.attrs is not None else get_op(name).attrs()
                inputs = tuple(index[a] for a in node.args)
                step = Step("op", inputs, fn=self._op_fn(node), attrs=attrs,
                            span=node.span, label=name)
            else:  # flatten_group leaves only these nodes
                raise Unplannable(f"{kind.__name__} inside a fused group")
            index[node] = len(params) + len(steps)
            steps.append(step)
        return steps, index

    # -- target-specific choices ------------------------------------------------------------------
    def _op_fn(self, call: Call) -> Callable[..., Any]:
        """The function a step running ``call`` calls: ``fn(args, attrs, out=None)``."""
        return _op_fn(call.op.name)

    def _kernel_kind(self, call: Call) -> str:
        """What runs ``call``, for ``exe.plan``."""
        return _kernel_kind(call.op.name)

    def _worth_fusing(self, ty: Type | None) -> bool:
        """Whether a group with result type ``ty`` gets a generated kernel."""
        return _big(ty)

    def _tail_kernel(self, params: tuple[Var, ...], body: Expr,
                     types: Mapping[Expr, Type]) -> Any:
        """The generated kernel of an anchor's elementwise tail, or None."""
        try:
            from relay_ref.executor.fused import build_elementwise
        except ImportError:  # pragma: no cover
            return None
        return build_elementwise(params, body, types, cache_dir=self.cache_dir)

    def _may_overwrite(self, kernel: Any, anchor: Call, step: Step) -> bool:
        """Whether the tail ``kernel`` may write its result over the anchor's (the anchor's
        step, ``step``, returns a fresh array, and the kernel's input 0 allows it)."""
        return 0 in getattr(kernel, "inplace_ok", frozenset()) and \
            _fresh_result(anchor.op.name)

    # -- elementwise kernels --------------------------------------------------------------------
    def _all_elementwise(self, nodes: list[Expr]) -> bool:
        for n in nodes:
            kind = type(n)
            if kind is Call:
                if type(n.op) is not Op or get_op(n.op.name).op_pattern > OpPattern.BROADCAST:
                    return False
            elif kind is not Var and kind is not Constant:
                return False
        return True

    def _elementwise(self, params: tuple[Var, ...], body: Expr) -> Any:
        if not _big(self.types.get(body)):
            return None
        try:
            from relay_ref.executor.fused import build_elementwise
        except ImportError:  # pragma: no cover - the fused-kernel generator is optional
            return None
        return build_elementwise(params, body, self.types, cache_dir=self.cache_dir)

    def _anchor_split(self, prim: Function, nodes: list[Expr]) -> GroupPlan | None:
        """Strategy 2: ``tail(anchor(...), other inputs)`` with an elementwise tail."""
        body = prim.body
        users: dict[Expr, int] = {}
        for n in nodes:
            for kid in _kids(n):
                users[kid] = users.get(kid, 0) + 1
        # Walk the tail from the root: elementwise calls; the anchor is the one
        # non-elementwise call they reach, used once.
        anchor: Call | None = None
        tail: set[Expr] = set()
        stack = [body]
        while stack:
            n = stack.pop()
            if n in tail or type(n) is Var or type(n) is Constant:
                continue
            if type(n) is not Call or type(n.op) is not Op:
                return None
            if get_op(n.op.name).op_pattern <= OpPattern.BROADCAST:
                tail.add(n)
                stack.extend(n.args)
                continue
            if anchor is not None and anchor is not n:
                return None
            anchor = n
        if anchor is None or not tail or users.get(anchor, 0) != 1:
            return None
        out_ty, anchor_ty = self.types.get(body), self.types.get(anchor)
        if type(anchor_ty) is not TensorType or type(out_ty) is not TensorType or \
                not self._worth_fusing(out_ty):
            return None
        hole = Var("anchor", anchor_ty)
        mapping: dict[Expr, Expr] = {anchor: hole}
        types: MutableMapping[Expr, Type] = self.types.new_child({hole: anchor_ty})
        for n in post_order(body):
            if n in tail:
                new = Call(n.op, tuple(mapping.get(a, a) for a in n.args), n.attrs,
                           n.type_args, n.span)
                mapping[n] = new
                types[new] = self.types[n]
        extra = [p for p in prim.params if _feeds(p, tail)]
        kernel = self._tail_kernel((hole, *extra), mapping[body], types)
        if kernel is None:
            return None
        before = [n for n in nodes if n not in tail]
        steps, index = self._op_steps(prim.params, before)
        a = index[anchor]
        inplace = anchor_ty == out_ty and \
            self._may_overwrite(kernel, anchor, steps[a - len(prim.params)])
        steps.append(Step("fused", (a, *(prim.params.index(p) for p in extra)), fn=kernel,
                          out=a if inplace else None, span=body.span,
                          op_spans=_op_spans([n for n in nodes if n in tail]),
                          label="+".join(_short(n.op.name) for n in post_order(body)
                                         if n in tail)))
        ops = tuple(n.op.name for n in nodes if type(n) is Call and type(n.op) is Op)
        label = "+".join(_short(o) for o in ops)
        return GroupPlan(label, "anchor+fused", len(prim.params), tuple(steps),
                         self.types.get(body), ops,
                         (self._kernel_kind(anchor), self.FUSED_KIND))


    def _layout_copy(self, prim: Function, nodes: list[Expr], label: str,
                     ops: tuple[str, ...]) -> GroupPlan | None:
        """Strategy 3: a chain of reshapes and transposes as one ``LayoutCopy`` step."""
        chain = layout_chain(prim, nodes, self.types) if self.LAYOUT_COPY else None
        if chain is None or not self._worth_fusing(self.types.get(prim.body)):
            return None
        step = Step("fused", (0,), fn=chain, span=prim.body.span, label=label,
                    op_spans=_op_spans(nodes))
        return GroupPlan(label, "layout", 1, (step,), self.types.get(prim.body), ops,
                         (self.LAYOUT_KIND,))


#: operators a ``LayoutCopy`` chains
_LAYOUT_OPS = frozenset({"reshape", "transpose"})


@dataclass(frozen=True, slots=True, eq=False)
class LayoutCopy:
    """A group computing ``reshape`` s and ``transpose`` s of its one parameter, as a
    generated-kernel-like step ``k(args, out=None)`` (step kind ``"fused"``: the result is
    always a fresh array or ``out``, never a view of the argument). ``views``: the chain up
    to its last transpose, each ``("reshape", shape)`` or ``("transpose", perm)``, applied
    as NumPy views; the reshapes after it are the copy's: the result's C order is the
    viewed array's C order, so the copy goes into ``out.reshape(viewed shape)``."""

    views: tuple[tuple[str, tuple[int, ...]], ...]
    in_shape: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: np.dtype

    def __call__(self, args: Any, out: np.ndarray | None = None) -> np.ndarray:
        x = args[0]
        if type(x) is not np.ndarray or x.shape != self.in_shape or x.dtype != self.dtype:
            raise ValueError(f"layout copy: expected a {self.in_shape} {self.dtype} array, "
                             f"got {getattr(x, 'shape', type(x).__name__)}")
        v = x
        for kind, arg in self.views:
            v = v.reshape(arg) if kind == "reshape" else v.transpose(arg)
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif out.shape != self.shape or out.dtype != self.dtype or \
                not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous {self.shape} {self.dtype} array")
        np.copyto(out.reshape(v.shape), v)
        return out


def layout_chain(prim: Function, nodes: list[Expr], types: Mapping[Expr, Type]
                 ) -> LayoutCopy | None:
    """The ``LayoutCopy`` of a group that is a chain of reshapes and transposes of its only
    parameter with static types, ending in a reshape after a transpose, else None."""
    if len(prim.params) != 1:
        return None
    views: list[tuple[str, tuple[int, ...]]] = []
    expect: Expr = prim.params[0]
    for n in nodes:
        if n is expect and type(n) is Var:
            continue
        if type(n) is not Call or type(n.op) is not Op or n.op.name not in _LAYOUT_OPS \
                or len(n.args) != 1 or n.args[0] is not expect:
            return None
        ty, arg_ty = types.get(n), types.get(expect)
        if type(ty) is not TensorType or not ty.is_static or type(arg_ty) is not TensorType:
            return None
        shape = tuple(int(d) for d in ty.shape)
        if n.op.name == "reshape":
            views.append(("reshape", shape))
        else:
            ndim = len(shape)
            axes = n.attrs.axes if n.attrs is not None else None  # type: ignore[union-attr]
            perm = tuple(range(ndim))[::-1] if not axes else tuple(a % ndim for a in axes)
            if sorted(perm) != list(range(ndim)):
                return None
            views.append(("transpose", perm))
        expect = n
    if expect is not prim.body or not views:
        return None
    last = max((i for i, (k, _) in enumerate(views) if k == "transpose"), default=-1)
    if last < 0 or last == len(views) - 1:
        # reshapes only, or a transpose last: the kernels give a view, free (a transposed
        # weight feeds BLAS as it is); a reshape after a transpose copies anyway
        return None
    in_ty, out_ty = types.get(prim.params[0]), types[prim.body]
    if type(in_ty) is not TensorType or not in_ty.is_static or in_ty.dtype != out_ty.dtype:
        return None
    return LayoutCopy(tuple(views[:last + 1]), tuple(int(d) for d in in_ty.shape),
                      tuple(int(d) for d in out_ty.shape), np.dtype(out_ty.dtype))


def _op_spans(nodes: list[Expr]) -> tuple[tuple[str, Span], ...]:
    """(op name, span) of each operator's first located call among ``nodes``."""
    out: dict[str, Span] = {}
    for n in nodes:
        if type(n) is Call and type(n.op) is Op and n.span is not None:
            out.setdefault(n.op.name, n.span)
    return tuple(out.items())


def _kids(n: Expr) -> tuple[Expr, ...]:
    if type(n) is Call:
        return n.args
    if type(n) is Tuple:
        return n.fields
    if type(n) is TupleGetItem:
        return (n.tuple_value,)
    return ()


def _feeds(param: Var, tail: set[Expr]) -> bool:
    """Whether ``param`` is an argument of a call of the elementwise tail."""
    return any(param in n.args for n in tail)


def _big(ty: Type | None) -> bool:
    """A tensor type with at least ``MIN_FUSED_ELEMENTS`` elements: a static one, or one
    with symbolic dimensions (issue 29) whose element count is at least that with every
    shape variable at least 1 (``bounds_of``), so that a symbolic program gets the plan its
    static instance gets at batch 1 and the same kernels at every size. ``?`` dims: no."""
    if type(ty) is not TensorType:
        return False
    if all(type(d) is int for d in ty.shape):
        return int(np.prod(ty.shape, dtype=np.int64)) >= MIN_FUSED_ELEMENTS
    if not all(type(d) is int or is_symbolic(d) for d in ty.shape):
        return False
    count = shape_prod(ty.shape)
    bounds = {v: (1, float("inf")) for v in shape_vars(ty.shape)}
    return bounds_of(count, bounds)[0] >= MIN_FUSED_ELEMENTS


def _fresh_result(name: str) -> bool:
    """Whether the op's kernel returns a fresh array (so a tail may overwrite it)."""
    fn = _op_fn(name)
    return not getattr(fn, "returns_view", False) and op_kernel(name, "cpu") is not None


def _op_fn(name: str) -> Callable[..., Any]:
    return op_kernel(name, "cpu") or get_op(name).reference


def _kernel_kind(name: str) -> str:
    return "cpu kernel" if op_kernel(name, "cpu") is not None else "reference"
