"""Converters of ONNX's linear quantization ops, composed from Relay ops with integer
tensors (as ONNX's reference computes them):

    DequantizeLinear       y = (float32(x) - zp) * scale
    QuantizeLinear         y = clip(rint(x / scale) + zp, range of the zero point's type)
    DynamicQuantizeLinear  scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when 0),
                           zp = rint(clip(-min(0, min x) / scale, 0, 255)), y as above
    MatMulInteger          int32: (a - a_zp) @ (b - b_zp)
    QLinearMatMul          clip(rint(int32 product * (a_scale * b_scale / y_scale)) + y_zp)

Scales and zero points are scalars, per ``axis`` (1-D) or, with ``block_size``, blocks
along ``axis`` (same rank as the input, each entry repeated ``block_size`` times).
Integer products are exact in int32 (uint8/int8 operands); ``rint`` is Relay's ``round``
(half to even). Operands of different types (a float16 input with a float32 scale, an
int32 zero point) are computed in their NumPy promoted type, as the reference does.
"""

from __future__ import annotations

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext, axis_of
from relay_ref.frontend.onnx.dtypes import promote, relay_dtype
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535),
          "int16": (-32768, 32767), "int32": (-(2**31), 2**31 - 1)}


def _param(ctx: NodeContext, p: Expr, shape: tuple, axis: int, block: int) -> Expr:
    """Scale or zero point ``p`` broadcastable to an input of ``shape``."""
    pshape = ctx.builder.tensor_type(p).shape
    if len(pshape) == 0 or (len(pshape) == 1 and pshape[0] == 1 and block == 0):
        return ctx.call("reshape", p, newshape=[]) if pshape else p
    axis = axis_of(ctx, axis, len(shape))
    if block > 0:
        if len(pshape) != len(shape):
            raise ConvertError(f"blocked parameters of shape {pshape} do not fit {shape}")
        p = ctx.call("repeat", p, repeats=block, axis=axis)
        return ctx.call("strided_slice", p, begin=[0], end=[int(shape[axis])], axes=[axis])
    if len(pshape) != 1:
        raise ConvertError(f"per-axis parameters must be 1-D, found shape {pshape}")
    return ctx.call("reshape", p, newshape=[-1 if i == axis else 1 for i in range(len(shape))])


def _axis_block(ctx: NodeContext) -> tuple[tuple, int, int]:
    """The input's shape, ``axis`` (checked only when a parameter is per axis: a scalar
    scale ignores it, even out of range) and ``block_size``."""
    return ctx.shape(0), int(ctx.attr("axis", 1)), int(ctx.attr("block_size", 0))


@converter("DequantizeLinear", since=10)
def dequantize_linear(ctx: NodeContext) -> Expr:
    """In the types ONNX's reference computes in: ``float32(x) - zp`` in the promoted
    type of float32 and the zero point's (float64 for an int32 zero point), times the
    scale in the promoted type of that and the scale's (float64 for a float64 scale),
    cast to the output type (the scale's, or ``output_dtype``)."""
    shape, axis, block = _axis_block(ctx)
    scale = _param(ctx, ctx.need(1), shape, axis, block)
    x = ctx.call("cast", ctx.need(0), dtype="float32")
    zp = ctx.input(2)
    if zp is not None:
        zp = _param(ctx, zp, shape, axis, block)
        x, zp = _both(ctx, x, zp)
        x = ctx.call("subtract", x, zp)
    out = ctx.dtype(1)
    to = ctx.attr("output_dtype")
    if to:
        out = relay_dtype(int(to)) or out
    y = ctx.call("multiply", *_both(ctx, x, scale))
    return y if ctx.builder.tensor_type(y).dtype == out else ctx.call("cast", y, dtype=out)


def _both(ctx: NodeContext, a: Expr, b: Expr) -> tuple[Expr, Expr]:
    """``a`` and ``b`` cast to their NumPy promoted type."""
    ta, tb = ctx.builder.tensor_type(a).dtype, ctx.builder.tensor_type(b).dtype
    wide = promote(ta, tb)
    return (a if ta == wide else ctx.call("cast", a, dtype=wide),
            b if tb == wide else ctx.call("cast", b, dtype=wide))


def _saturate(ctx: NodeContext, xi: Expr, dtype: str) -> Expr:
    """Integer ``xi`` (int64) clipped to ``dtype``'s range and cast to it."""
    if dtype not in RANGES:
        raise ConvertError(f"quantized type {dtype} is not supported")
    lo, hi = RANGES[dtype]
    return ctx.call("cast", ctx.call("clip", xi, a_min=float(lo), a_max=float(hi)),
                    dtype=dtype)


@converter("QuantizeLinear", since=10)
def quantize_linear(ctx: NodeContext) -> Expr:
    shape, axis, block = _axis_block(ctx)
    x = ctx.need(0)
    scale = _param(ctx, ctx.need(1), shape, axis, block)
    precision = ctx.attr("precision")
    if precision:  # both in that type
        xdtype = relay_dtype(int(precision)) or ctx.dtype(0)
        x, scale = (ctx.call("cast", v, dtype=xdtype) for v in (x, scale))
    else:  # x / scale in their promoted type (float16 x, float32 scale: float32)
        x, scale = _both(ctx, x, scale)
    q = ctx.call("cast", ctx.call("round", ctx.call("divide", x, scale)), dtype="int64")
    zp = ctx.input(2)
    out = relay_dtype(int(ctx.attr("output_dtype", 0) or 2)) or "uint8"
    if zp is not None:
        out = ctx.dtype(2)
        zp = ctx.call("cast", _param(ctx, zp, shape, axis, block), dtype="int64")
        q = ctx.call("add", q, zp)
    return _saturate(ctx, q, out)


@converter("DynamicQuantizeLinear", since=11, outputs=3)
def dynamic_quantize_linear(ctx: NodeContext) -> tuple[Expr, Expr, Expr]:
    x = ctx.need(0)
    dtype = ctx.dtype(0)
    zero = ctx.scalar(0, dtype)
    hi = ctx.call("maximum", ctx.call("max", x), zero)
    lo = ctx.call("minimum", ctx.call("min", x), zero)
    span = ctx.call("subtract", hi, lo)
    span = ctx.call("where", ctx.call("equal", span, zero), ctx.scalar(1, dtype), span)
    scale = ctx.call("divide", span, ctx.scalar(255, dtype))
    zp_f = ctx.call("clip", ctx.call("divide", ctx.call("negative", lo), scale),
                    a_min=0.0, a_max=255.0)
    zp = ctx.call("round", zp_f)
    q = ctx.call("add", ctx.call("round", ctx.call("divide", x, scale)), zp)
    y = ctx.call("cast", ctx.call("clip", q, a_min=0.0, a_max=255.0), dtype="uint8")
    return y, scale, ctx.call("cast", zp, dtype="uint8")


def _int_matmul(ctx: NodeContext, a: Expr, b: Expr) -> Expr:
    """int32 ``a @ b`` for 2-D operands, or 3-D ones (a 2-D ``b`` is shared)."""
    ra, rb = len(ctx.builder.tensor_type(a).shape), len(ctx.builder.tensor_type(b).shape)
    if ra == 2 and rb == 2:
        return ctx.call("nn.matmul", a, b)
    if ra == 3 and rb == 2:
        b = ctx.call("expand_dims", b, axis=0)
        rb = 3
    if ra == 3 and rb == 3:
        return ctx.call("nn.batch_matmul", a, b, transpose_b=False)
    raise ConvertError(f"integer MatMul of ranks {ra} and {rb} is not supported")


def _centred(ctx: NodeContext, x: Expr, zp: Expr | None, row_axis: int | None) -> Expr:
    """int32 ``x - zp``; a 1-D zero point is per row of ``x`` (``row_axis``) for a, per
    column for b."""
    x = ctx.call("cast", x, dtype="int32")
    if zp is None:
        return x
    zp = ctx.call("cast", zp, dtype="int32")
    zshape = ctx.builder.tensor_type(zp).shape
    if len(zshape) == 1 and zshape[0] != 1 and row_axis is not None:
        zp = ctx.call("expand_dims", zp, axis=1)
    elif len(zshape) == 1 and zshape[0] == 1:
        zp = ctx.call("reshape", zp, newshape=[])
    return ctx.call("subtract", x, zp)


@converter("MatMulInteger", since=10)
def matmul_integer(ctx: NodeContext) -> Expr:
    a = _centred(ctx, ctx.need(0), ctx.input(2), row_axis=0)
    b = _centred(ctx, ctx.need(1), ctx.input(3), row_axis=None)
    return _int_matmul(ctx, a, b)


@converter("QLinearMatMul", since=10)
def qlinear_matmul(ctx: NodeContext) -> Expr:
    a = _centred(ctx, ctx.need(0), ctx.input(2), row_axis=0)
    b = _centred(ctx, ctx.need(3), ctx.input(5), row_axis=None)
    c = ctx.call("cast", _int_matmul(ctx, a, b), dtype="float64")
    a_s, b_s, y_s = ctx.need(1), ctx.need(4), ctx.need(6)
    factor = ctx.call("divide", ctx.call("multiply", a_s, b_s), y_s)
    d = ctx.call("multiply", c, ctx.call("cast", factor, dtype="float64"))
    zp = ctx.input(7)
    out = ctx.dtype(0)
    if zp is not None:
        out = ctx.dtype(7)
        d = ctx.call("add", d, ctx.call("cast", zp, dtype="float64"))
    return _saturate(ctx, ctx.call("cast", ctx.call("round", d), dtype="int64"), out)
