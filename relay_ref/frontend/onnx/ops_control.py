"""Control flow: ONNX ``If`` as a Relay ``if``, ONNX ``Loop`` as a let-bound recursive
function (E-Let-Rec: Relay's functional loop).

``If``: the condition (a bool tensor of one element) is reshaped to a scalar; each branch
subgraph is converted in the enclosing scope (it reads outer values by name) and becomes
one arm; several outputs become a tuple in each arm and are projected out afterwards. Both
arms must have the same type (``?`` dims unify with anything); an ONNX model whose
branches give different shapes or dtypes is refused with a ``ConvertError``. A condition
computed from constants (shape arithmetic in expanded functions) picks its branch at
import time, and the other branch is not converted (it may not fit the static shapes).

``Loop`` (inputs ``M``, ``cond``, ``v_initial...``; body ``(iter_num, cond_in, v_in...)
-> (cond_out, v_out..., scan_out...)``) becomes::

    let %loop = fn (%iter, %cond, %v..., %acc...) -> (T_v..., T_acc...) {
      if (go) { %loop(%iter + 1, cond_out, v_out..., concatenate((%acc, scan_out[None]))) }
      else { (%v..., %acc...) }
    };
    %loop(0i64, cond, v_initial..., empty accumulators)

where ``go`` is ``%cond`` (when ``cond`` is given), ``%iter < M`` (when ``M`` is given), or
both; without ``cond`` the body's ``cond_out`` is ignored and ``%cond`` stays true, as the
ONNX spec says. A loop-carried value whose shape changes between iterations gets ``?``
dims (the body is converted again with the generalised parameter types). A scan output's
accumulator has type ``(?, *shape)`` and starts empty; when one iteration's shape is not
static, the first iteration replaces the accumulator instead of appending to it. ONNX
``Scan`` is built the same way in ``ops_control_scan.py``.

Invariants: every expression made here has its type in the builder (``types``); the
subgraphs' values never escape the ``if`` arm or function body they were converted into.
"""

from __future__ import annotations

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.common import (
    MANY_OUTPUTS,
    generalise,
    grow_accumulator,
    loop_var_name,
    short_type_text,
    typed_call,
)
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.names import sanitise
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr, Function, If, Let, Var
from relay_ref.ir.types import ANY, BOOL, FuncType, TensorType, TupleType, Type


def _scalar(ctx: NodeContext, x: Expr, dtype: str, what: str) -> Expr:
    """``x`` (a tensor of one element of ``dtype``) as a 0-d tensor."""
    ty = ctx.builder.tensor_type(x)
    if ty.dtype != dtype:
        raise ConvertError(f"{what} must be a {dtype} tensor, found {ty.dtype}")
    if any(isinstance(d, int) and d != 1 for d in ty.shape):
        raise ConvertError(f"{what} must hold one element, found shape {ty.shape}")
    return x if not ty.shape else ctx.call("reshape", x, newshape=[])


def _same_type(a: Type, b: Type, what: str) -> Type:
    """The type of an ``if`` whose arms have types ``a`` and ``b`` (``?`` against a dim
    gives ``?``, as unification keeps it); ``ConvertError`` when they differ."""
    if isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype == b.dtype \
            and len(a.shape) == len(b.shape):
        dims = []
        for x, y in zip(a.shape, b.shape, strict=True):
            if x is ANY or y is ANY:
                dims.append(ANY)
            elif x == y:
                dims.append(x)
            else:
                break
        else:
            return TensorType(tuple(dims), a.dtype)
    raise ConvertError(f"{what} has type {short_type_text(a)} in then_branch and "
                       f"{short_type_text(b)} in else_branch; a Relay if needs the same type "
                       "in both branches")


def _check_if(ctx: NodeContext) -> list[str]:
    then, other = ctx.attr("then_branch"), ctx.attr("else_branch")
    if then is None or other is None:
        return ["then_branch and else_branch are required"]
    if len(then.output) != len(other.output):
        return [f"then_branch has {len(then.output)} outputs, else_branch "
                f"{len(other.output)}"]
    if ctx.num_outputs > len(then.output):
        return [f"{ctx.num_outputs} outputs, the branches give {len(then.output)}"]
    return []


@converter("If", since=1, outputs=MANY_OUTPUTS, check=_check_if)
def if_(ctx: NodeContext) -> Expr | list[Expr]:
    assert ctx.subgraph is not None
    b = ctx.builder
    cond = _scalar(ctx, ctx.need(0), "bool", "the condition")
    known = b.static(cond)
    if isinstance(known, np.ndarray):  # decided at import time: only that branch is built
        taken = ctx.subgraph("then_branch" if bool(known) else "else_branch", [])
        return taken[0] if len(taken) == 1 else taken
    then = ctx.subgraph("then_branch", [])
    other = ctx.subgraph("else_branch", [])
    types = [_same_type(b.type_of(t), b.type_of(e), f"output {k}")
             for k, (t, e) in enumerate(zip(then, other, strict=True))]
    if len(then) == 1:
        expr = If(cond, then[0], other[0])
        b.types[expr] = types[0]
        return expr
    expr = If(cond, b.tuple(*then), b.tuple(*other))
    b.types[expr] = TupleType(tuple(types))
    return [b.item(expr, k) for k in range(len(then))]


def _check_loop(ctx: NodeContext) -> list[str]:
    body = ctx.attr("body")
    if body is None:
        return ["body is required"]
    inputs = list(ctx.node.input)
    carried = max(len(inputs) - 2, 0)
    out = []
    if not (inputs[:1] and inputs[0]) and not (inputs[1:2] and inputs[1]):
        out.append("neither M nor cond is given (the loop would never end)")
    if len(body.input) != carried + 2:
        out.append(f"body has {len(body.input)} inputs, expected {carried + 2} "
                   "(iteration number, condition, loop-carried values)")
    if len(body.output) < carried + 1:
        out.append(f"body has {len(body.output)} outputs, expected at least {carried + 1}")
    if ctx.num_outputs > len(body.output) - 1:
        out.append(f"{ctx.num_outputs} outputs, the body gives {len(body.output) - 1}")
    return out


def _body_input(ctx: NodeContext, k: int, var: Expr) -> Expr:
    """The value the body's input ``k`` (iteration number or condition, scalars here)
    receives: reshaped to ``(1,)`` when the body declares it with rank 1."""
    tt = ctx.attr("body").input[k].type.tensor_type
    if tt.HasField("shape") and len(tt.shape.dim) == 1:
        return ctx.call("reshape", var, newshape=[1])
    return var


@converter("Loop", since=1, outputs=MANY_OUTPUTS, check=_check_loop)
def loop(ctx: NodeContext) -> list[Expr]:
    assert ctx.subgraph is not None
    b = ctx.builder
    body = ctx.attr("body")
    carried = len(ctx.node.input) - 2
    init = [ctx.need(2 + k) for k in range(carried)]
    m = ctx.input(0)
    trip = None if m is None else _scalar(ctx, m, "int64", "M (the trip count)")
    c = ctx.input(1)
    start_cond = b.const(np.bool_(True)) if c is None else \
        _scalar(ctx, c, "bool", "cond")
    types = [b.tensor_type(v) for v in init]
    for _ in range(len(types[0].shape) + 2 if types else 1):
        it = b.var(loop_var_name(body.input[0].name, "iter"), TensorType((), "int64"))
        cond = b.var(loop_var_name(body.input[1].name, "cond"), BOOL)
        vs = [b.var(loop_var_name(body.input[2 + k].name, f"v{k}"), t) for k, t in enumerate(types)]
        outs = ctx.subgraph("body", [_body_input(ctx, 0, it), _body_input(ctx, 1, cond), *vs])
        new = [generalise(t, b.type_of(o), f"loop-carried value {k}")
               for k, (t, o) in enumerate(zip(types, outs[1:1 + carried], strict=True))]
        if new == types:
            break
        types = new
    else:  # pragma: no cover - each round makes at least one more dim ?
        raise ConvertError("the loop-carried types do not settle")
    scans = outs[1 + carried:]
    acc_types, empties = [], []
    for k, s in enumerate(scans):
        st = b.type_of(s)
        if not isinstance(st, TensorType):
            raise ConvertError(f"scan output {k} must be a tensor, found {short_type_text(st)}")
        acc_types.append(TensorType((ANY, *st.shape), st.dtype))
        empty = [d if isinstance(d, int) else 0 for d in st.shape]
        empties.append(b.const(np.zeros((0, *empty), dtype=st.dtype)))
    accs = [b.var(f"scan{k}", t) for k, t in enumerate(acc_types)]
    ret = TupleType((*types, *acc_types))
    fn_var = Var(sanitise(f"loop_{ctx.name}") if ctx.name else "loop",
                 FuncType((TensorType((), "int64"), BOOL, *types, *acc_types), ret))
    b.types[fn_var] = fn_var.type_annotation  # type: ignore[assignment]
    next_cond = start_cond if c is None else _scalar(ctx, outs[0], "bool", "cond_out")
    grown = [grow_accumulator(ctx, it, acc, s) for acc, s in zip(accs, scans, strict=True)]
    recur = typed_call(b, fn_var, ret, ctx.call("add", it, b.const(np.int64(1))), next_cond,
                  *outs[1:1 + carried], *grown)
    go: Expr | None = None if c is None else cond
    if trip is not None:
        below = ctx.call("less", it, trip)
        go = below if go is None else ctx.call("logical_and", go, below)
    assert go is not None  # the check refuses a loop with neither M nor cond
    step = If(go, recur, b.tuple(*vs, *accs))
    b.types[step] = ret
    fn = Function((it, cond, *vs, *accs), step, ret)
    b.types[fn] = fn_var.type_annotation  # type: ignore[assignment]
    first = typed_call(b, fn_var, ret, b.const(np.int64(0)), start_cond, *init, *empties)
    expr = Let(fn_var, fn, first)
    b.types[expr] = ret
    return [b.item(expr, k) for k in range(len(ret.fields))]


