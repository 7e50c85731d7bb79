"""Control flow: ONNX ``Scan`` as a let-bound recursive function over the iteration index,
built like ``Loop`` (``ops_control.py``).

Opset 9+ (inputs ``states..., scan_inputs...``; body ``(state..., elem...) -> (state...,
scan_elem...)``) becomes::

    let %scan = fn (%iter, %s..., %acc...) -> (T_s..., T_acc...) {
      if (%iter < L) {
        // elem_j = take(x_j, %iter or L - 1 - %iter, axis=scan_input_axes[j])
        %scan(%iter + 1, s_out..., concatenate((%acc, scan_elem[None])))
      } else { (%s..., %acc...) }
    };
    %scan(0i64, states..., empty accumulators)

``L`` is the length of the first scan input along its scan axis (static when known,
``shape_of`` otherwise). Each accumulator has type ``(?, *shape)``; afterwards a scan
output with direction 1 is reversed along that axis, and one with an output axis ``a``
other than 0 is transposed so the iteration axis lands at ``a``. State types whose dims
change between iterations get ``?`` dims, as ``Loop``'s carried values do.

Opset 8 has a batch axis 0 on states and scan inputs (scan axis 1) and the optional
``sequence_lens``: each batch row is scanned separately (the batch size must be static)
and the rows are stacked again; ``sequence_lens`` is accepted only when it is a constant
equal to the full length for every row.

Invariants: every expression made here has its type in the builder (``types``); the
body's values never escape the function body they were converted into.
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
from relay_ref.frontend.onnx.context import NodeContext, axis_of
from relay_ref.frontend.onnx.names import sanitise
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr, Function, If, Let, Var
from relay_ref.ir.types import ANY, FuncType, TensorType, TupleType

_I64 = TensorType((), "int64")


def _split(ctx: NodeContext) -> tuple[int, int]:
    """(first state input index, number of states)."""
    first = 1 if ctx.version < 9 else 0
    m = int(ctx.attr("num_scan_inputs", 0))
    return first, len(ctx.node.input) - first - m


def _check_scan(ctx: NodeContext) -> list[str]:
    body = ctx.attr("body")
    if body is None:
        return ["body is required"]
    m = ctx.attr("num_scan_inputs")
    if m is None or int(m) < 1:
        return ["num_scan_inputs must be at least 1"]
    _, n = _split(ctx)
    out = []
    if n < 0:
        return [f"num_scan_inputs={m} but only {len(ctx.node.input)} inputs"]
    if len(body.input) != n + int(m):
        out.append(f"body has {len(body.input)} inputs, expected {n + int(m)}")
    if len(body.output) < n:
        out.append(f"body has {len(body.output)} outputs, expected at least {n}")
    if ctx.num_outputs > len(body.output):
        out.append(f"{ctx.num_outputs} outputs, the body gives {len(body.output)}")
    k = len(body.output) - n
    for key, want in (("scan_input_axes", int(m)), ("scan_input_directions", int(m)),
                      ("directions", int(m)), ("scan_output_axes", k),
                      ("scan_output_directions", k)):
        value = ctx.attr(key)
        if value is not None and len(value) != want:
            out.append(f"{key} has {len(value)} entries, expected {want}")
    return out


def _length(ctx: NodeContext, x: Expr, axis: int) -> Expr:
    """The length of ``x`` along ``axis`` as an int64 scalar."""
    dim = ctx.builder.tensor_type(x).shape[axis]
    if isinstance(dim, int):
        return ctx.const(np.array(dim, np.int64))
    shape = ctx.call("shape_of", x, dtype="int64")
    return ctx.call("take", shape, ctx.const(np.array(axis, np.int64)), axis=0, mode="clip")


def _scan(ctx: NodeContext, states: list[Expr], xs: list[Expr], in_axes: list[int],
          in_dirs: list[int], out_axes: list[int], out_dirs: list[int]) -> list[Expr]:
    """The final states and the scan outputs of scanning ``xs`` with the body."""
    assert ctx.subgraph is not None
    b = ctx.builder
    body = ctx.attr("body")
    n = len(states)
    length = _length(ctx, xs[0], in_axes[0])
    last = ctx.call("subtract", length, b.const(np.int64(1)))
    types = [b.tensor_type(v) for v in states]
    for _ in range(max((len(t.shape) for t in types), default=0) + 2):
        it = b.var(sanitise(f"iter_{ctx.name}") if ctx.name else "iter", _I64)
        vs = [b.var(loop_var_name(body.input[k].name, f"s{k}"), t) for k, t in enumerate(types)]
        index = ctx.call("subtract", last, it)
        elems = [ctx.call("take", x, index if d else it, axis=a, mode="clip")
                 for x, a, d in zip(xs, in_axes, in_dirs, strict=True)]
        outs = ctx.subgraph("body", [*vs, *elems])
        new = [generalise(t, b.type_of(o), f"state {k}")
               for k, (t, o) in enumerate(zip(types, outs[:n], strict=True))]
        if new == types:
            break
        types = new
    else:  # pragma: no cover - each round makes at least one more dim ?
        raise ConvertError("the state types do not settle")
    scans = outs[n:]
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
    fn_var = Var(sanitise(f"scan_{ctx.name}") if ctx.name else "scan",
                 FuncType((_I64, *types, *acc_types), ret))
    b.types[fn_var] = fn_var.type_annotation  # type: ignore[assignment]
    grown = [grow_accumulator(ctx, it, acc, s) for acc, s in zip(accs, scans, strict=True)]
    recur = typed_call(b, fn_var, ret, ctx.call("add", it, b.const(np.int64(1))), *outs[:n],
                  *grown)
    step = If(ctx.call("less", it, length), recur, b.tuple(*vs, *accs))
    b.types[step] = ret
    fn = Function((it, *vs, *accs), step, ret)
    b.types[fn] = fn_var.type_annotation  # type: ignore[assignment]
    first = typed_call(b, fn_var, ret, b.const(np.int64(0)), *states, *empties)
    expr = Let(fn_var, fn, first)
    b.types[expr] = ret
    results = [b.item(expr, k) for k in range(len(ret.fields))]
    for k in range(len(scans)):
        y = results[n + k]
        if out_dirs[k]:
            y = ctx.call("reverse", y, axis=0)
        rank = len(acc_types[k].shape)
        a = axis_of(ctx, out_axes[k], rank)
        if a:
            y = ctx.call("transpose", y,
                         axes=[*range(1, a + 1), 0, *range(a + 1, rank)])
        results[n + k] = y
    return results


@converter("Scan", since=9, outputs=MANY_OUTPUTS, check=_check_scan)
def scan(ctx: NodeContext) -> list[Expr]:
    _, n = _split(ctx)
    m = int(ctx.attr("num_scan_inputs"))
    k = len(ctx.attr("body").output) - n
    states = [ctx.need(j) for j in range(n)]
    xs = [ctx.need(n + j) for j in range(m)]
    in_axes = [axis_of(ctx, int(a), len(ctx.builder.tensor_type(x).shape))
               for a, x in zip(ctx.attr("scan_input_axes", [0] * m), xs, strict=True)]
    in_dirs = [int(d) for d in ctx.attr("scan_input_directions", [0] * m)]
    out_axes = [int(a) for a in ctx.attr("scan_output_axes", [0] * k)]
    out_dirs = [int(d) for d in ctx.attr("scan_output_directions", [0] * k)]
    return _scan(ctx, states, xs, in_axes, in_dirs, out_axes, out_dirs)


@converter("Scan", since=8, until=8, outputs=MANY_OUTPUTS, check=_check_scan)
def scan_8(ctx: NodeContext) -> list[Expr]:
    b = ctx.builder
    first, n = _split(ctx)
    m = int(ctx.attr("num_scan_inputs"))
    k = len(ctx.attr("body").output) - n
    states = [ctx.need(first + j) for j in range(n)]
    xs = [ctx.need(first + n + j) for j in range(m)]
    batch = b.tensor_type(xs[0]).shape[0]
    if not isinstance(batch, int):
        raise ConvertError("Scan-8 needs a static batch size (give `shapes=`)")
    seq = b.tensor_type(xs[0]).shape[1]
    lens = ctx.static_ints(0, "sequence_lens")
    if lens is not None and (not isinstance(seq, int) or any(v != seq for v in lens)):
        raise ConvertError("Scan-8 sequence_lens shorter than the sequence are not "
                           "supported")
    dirs = [int(d) for d in ctx.attr("directions", [0] * m)]
    rows = []
    for r in range(batch):
        pick = b.const(np.int64(r))
        rows.append(_scan(ctx, [ctx.call("take", s, pick, axis=0, mode="clip") for s in states],
                          [ctx.call("take", x, pick, axis=0, mode="clip") for x in xs],
                          [0] * m, dirs, [0] * k, [0] * k))
    return [ctx.call("concatenate",
                     b.tuple(*(ctx.call("expand_dims", row[j], axis=0, num_newaxis=1)
                               for row in rows)), axis=0)
            for j in range(n + k)]
