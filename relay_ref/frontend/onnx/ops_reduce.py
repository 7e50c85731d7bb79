"""Converters of reductions.

Axes are an attribute up to ReduceSum-11 and the other Reduce*-13, an optional input from
ReduceSum-13 and Reduce*-18; with the input form, ``noop_with_empty_axes=1`` and no axes
make the op the identity. No axes otherwise reduce over every axis.
"""

from __future__ import annotations

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext, axis_of
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

# ONNX op -> the op version from which the axes are an input
_AXES_INPUT_SINCE = {
    "ReduceSum": 13, "ReduceMean": 18, "ReduceMax": 18, "ReduceMin": 18, "ReduceProd": 18,
    "ReduceL1": 18, "ReduceL2": 18, "ReduceLogSum": 18, "ReduceLogSumExp": 18,
    "ReduceSumSquare": 18,
}


def _reduce(ctx: NodeContext) -> Expr:
    op = ctx.node.op_type
    x = ctx.need(0)
    rank = ctx.rank(0)
    if ctx.version >= _AXES_INPUT_SINCE[op]:
        axes = ctx.static_ints(1, "axes") if ctx.input(1) is not None else None
        if not axes and int(ctx.attr("noop_with_empty_axes", 0)):
            return _no_reduction(ctx, x)
    else:
        raw = ctx.attr("axes")
        axes = None if raw is None else [int(a) for a in raw]
    axis = None if not axes else sorted({axis_of(ctx, a, rank) for a in axes})
    keep = bool(int(ctx.attr("keepdims", 1)))

    empty = _empty_identity(ctx, axis, keep)
    if empty is not None:
        return empty

    def red(name: str, y: Expr) -> Expr:
        return ctx.call(name, y, axis=axis, keepdims=keep)

    match op:
        case "ReduceSum" | "ReduceMean" | "ReduceMax" | "ReduceMin" | "ReduceProd":
            name = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max",
                    "ReduceMin": "min", "ReduceProd": "prod"}[op]
            return red(name, x)
        case "ReduceL1":
            return red("sum", ctx.call("abs", x))
        case "ReduceL2":
            return ctx.call("sqrt", red("sum", ctx.call("multiply", x, x)))
        case "ReduceSumSquare":
            return red("sum", ctx.call("multiply", x, x))
        case "ReduceLogSum":
            return ctx.call("log", red("sum", x))
        case "ReduceLogSumExp":
            # m + log(sum(exp(x - m))) with m the max, kept for broadcasting
            m = ctx.call("max", x, axis=axis, keepdims=True)
            s = ctx.call("sum", ctx.call("exp", ctx.call("subtract", x, m)), axis=axis,
                         keepdims=keep)
            m_out = m if keep else ctx.call("max", x, axis=axis, keepdims=False)
            return ctx.call("add", ctx.call("log", s), m_out)
    raise ConvertError(f"unknown reduction {op}")


def _no_reduction(ctx: NodeContext, x: Expr) -> Expr:
    """``noop_with_empty_axes`` without axes: the reduction is skipped, but the ONNX
    schema (and onnxruntime) still apply the op's elementwise part: ``|x|`` for ReduceL1 and
    ReduceL2 (``sqrt(x * x)``), ``x * x`` for ReduceSumSquare, ``log(x)`` for ReduceLogSum
    (``log(exp(x))`` is ``x`` for ReduceLogSumExp, as for the plain reductions)."""
    match ctx.node.op_type:
        case "ReduceL1":
            return ctx.call("abs", x)
        case "ReduceL2":
            return ctx.call("sqrt", ctx.call("multiply", x, x))
        case "ReduceSumSquare":
            return ctx.call("multiply", x, x)
        case "ReduceLogSum":
            return ctx.call("log", x)
    return x


def _empty_identity(ctx: NodeContext, axis: list[int] | None, keep: bool) -> Expr | None:
    """ONNX defines max, min and log-sum-exp over an empty extent as the reduction's
    identity (-inf, +inf; the dtype's least / greatest value for integers, False / True
    for bool), where Relay's ``max`` / ``min`` refuse it: a constant of the result's
    shape. None when the extent is not statically empty or the op is another (the
    others' Relay forms already give the identity)."""
    op = ctx.node.op_type
    if op not in ("ReduceMax", "ReduceMin", "ReduceLogSumExp"):
        return None
    dims = ctx.shape(0)
    reduced = range(len(dims)) if axis is None else axis
    if not all(isinstance(d, int) for d in dims) or all(dims[a] != 0 for a in reduced):
        return None
    out = [1 if a in reduced else d for a, d in enumerate(dims) if keep or a not in reduced]
    dtype = np.dtype(ctx.dtype(0))
    low = op != "ReduceMin"
    if dtype.kind == "f":
        value: object = -np.inf if low else np.inf
    elif dtype.kind == "b":
        value = not low
    else:
        value = np.iinfo(dtype).min if low else np.iinfo(dtype).max
    return ctx.const(np.full(out, value, dtype=dtype))


for _op, _since in _AXES_INPUT_SINCE.items():
    converter(_op, until=_since - 1)(_reduce)
    converter(_op, since=_since, static_inputs=(1,))(_reduce)


def _arg(ctx: NodeContext) -> Expr:
    name = "argmax" if ctx.node.op_type == "ArgMax" else "argmin"
    axis = axis_of(ctx, int(ctx.attr("axis", 0)), ctx.rank(0))
    y = ctx.call(name, ctx.need(0), axis=[axis], keepdims=bool(int(ctx.attr("keepdims", 1))),
                 select_last_index=bool(int(ctx.attr("select_last_index", 0))))
    return ctx.call("cast", y, dtype="int64")


converter(("ArgMax", "ArgMin"))(_arg)


@converter("TopK", since=10, static_inputs=(1,), outputs=2)
def topk(ctx: NodeContext) -> tuple[Expr, Expr]:
    """(values, int64 indices) of the K largest (``largest=0``: smallest) along ``axis``,
    sorted; ties keep the lower index first."""
    k = ctx.static_ints(1, "K") or []
    if len(k) != 1:
        raise ConvertError(f"K must hold one value, found {k}")
    return _topk(ctx, k[0])


@converter("TopK", since=1, until=9, outputs=2)
def topk_1(ctx: NodeContext) -> tuple[Expr, Expr]:
    """TopK before opset 10: ``k`` is an attribute; always the largest."""
    return _topk(ctx, int(ctx.attr("k", 1)))


def _topk(ctx: NodeContext, k: int) -> tuple[Expr, Expr]:
    axis = axis_of(ctx, int(ctx.attr("axis", -1)), ctx.rank(0))
    y = ctx.call("topk", ctx.need(0), k=k, axis=axis, ret_type="both",
                 is_ascend=not int(ctx.attr("largest", 1)), dtype="int64")
    return ctx.builder.item(y, 0), ctx.builder.item(y, 1)


@converter("CumSum", since=11, static_inputs=(1,))
def cumsum(ctx: NodeContext) -> Expr:
    """``reverse`` sums from the end: the input and the result are reversed around it."""
    axis_v = ctx.static_ints(1, "axis") or [0]
    axis = axis_of(ctx, axis_v[0], ctx.rank(0))
    x = ctx.need(0)
    reverse = bool(int(ctx.attr("reverse", 0)))
    if reverse:
        x = ctx.call("reverse", x, axis=axis)
    y = ctx.call("cumsum", x, axis=axis, exclusive=bool(int(ctx.attr("exclusive", 0))))
    return ctx.call("reverse", y, axis=axis) if reverse else y
