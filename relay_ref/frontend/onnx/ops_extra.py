"""Converters of ONNX ops that ONNX's node tests need and the core families lack: bit
shifts and casts, Trilu, CumProd, the Lp pool and norm, normalisations (RMS, group,
mean-variance), Swish, EyeLike and the signal windows.

Each is one Relay op or a composition of Relay ops (formulas in the docstrings); values
that decide shapes (Trilu's k, a window's size) are read at import time
(``static_inputs``). Outputs that are constants of static shapes (EyeLike, the windows)
are computed here with NumPy, as shape arithmetic is.
"""

from __future__ import annotations

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.common import check_auto_pad, relay_padding, resolve_pads, spatial_dims
from relay_ref.frontend.onnx.context import NodeContext, axis_of
from relay_ref.frontend.onnx.dtypes import relay_dtype
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

# -- bits -----------------------------------------------------------------------------------


@converter("BitShift", since=11)
def bit_shift(ctx: NodeContext) -> Expr:
    """``direction`` LEFT / RIGHT: Relay's ``left_shift`` / ``right_shift`` (broadcasting)."""
    direction = str(ctx.attr("direction", ""))
    if direction not in ("LEFT", "RIGHT"):
        raise ConvertError(f"direction must be LEFT or RIGHT, found {direction!r}")
    op = "left_shift" if direction == "LEFT" else "right_shift"
    return ctx.call(op, ctx.need(0), ctx.need(1))


@converter("BitCast", since=26)
def bit_cast(ctx: NodeContext) -> Expr:
    """The same bits read as element type ``to`` (of the same width): ``reinterpret``."""
    dtype = relay_dtype(int(ctx.attr("to", 0)))
    if not dtype:
        raise ConvertError(f"to={ctx.attr('to')} has no Relay dtype")
    return ctx.call("reinterpret", ctx.need(0), dtype=dtype)


# -- triangles and scans ------------------------------------------------------------------


@converter("Trilu", since=14, static_inputs=(1,))
def trilu(ctx: NodeContext) -> Expr:
    """``upper``: keep ``x[..., i, j]`` where ``j - i >= k`` (``np.triu``), else where
    ``j - i <= k`` (``np.tril``); the rest is 0. The mask is a constant of the last two
    dims (static)."""
    shape = ctx.static_shape(0, "Trilu's input")
    if len(shape) < 2:
        raise ConvertError(f"the input must have rank 2 or more, found {len(shape)}")
    k_v = ctx.static_ints(1, "k") or [0]
    n, m = shape[-2:]
    ones = np.ones((n, m), dtype=bool)
    mask = np.triu(ones, k_v[0]) if int(ctx.attr("upper", 1)) else np.tril(ones, k_v[0])
    x = ctx.need(0)
    return ctx.call("where", ctx.const(mask), x, ctx.call("zeros_like", x))


@converter("CumProd", since=26, static_inputs=(1,))
def cumprod(ctx: NodeContext) -> Expr:
    """As CumSum: ``reverse`` multiplies from the end (the input and the result are
    reversed around it); ``exclusive`` leaves element i out of product i."""
    axis_v = ctx.static_ints(1, "axis") or [0]
    axis = axis_of(ctx, axis_v[0], ctx.rank(0))
    x = ctx.need(0)
    reverse = bool(int(ctx.attr("reverse", 0)))
    if reverse:
        x = ctx.call("reverse", x, axis=axis)
    y = ctx.call("cumprod", x, axis=axis, exclusive=bool(int(ctx.attr("exclusive", 0))))
    return ctx.call("reverse", y, axis=axis) if reverse else y


# -- Lp pool and norm ---------------------------------------------------------------------


@converter("LpPool", since=2, check=check_auto_pad)
def lp_pool(ctx: NodeContext) -> Expr:
    """``(sum over the window of |x|^p)^(1/p)``: an average pool of ``|x|^p`` counting the
    padding, times the window size (as ONNX's reference computes it)."""
    nd = spatial_dims(ctx)
    kernel = [int(k) for k in ctx.attr("kernel_shape", [])]
    if len(kernel) != nd:
        raise ConvertError(f"kernel_shape {kernel} does not fit {nd} spatial dims")
    strides = [int(s) for s in ctx.attr("strides", [1] * nd)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * nd)]
    ceil = bool(ctx.attr("ceil_mode", 0))
    pads = resolve_pads(ctx, kernel, strides, dilations, ceil)
    p = float(ctx.attr("p", 2))
    x = ctx.need(0)
    powered = ctx.call("power", ctx.call("abs", x), ctx.scalar(p))
    avg = ctx.call(f"nn.avg_pool{nd}d", powered, pool_size=kernel, strides=strides,
                   dilation=dilations, padding=relay_padding(pads), ceil_mode=ceil,
                   count_include_pad=True)
    total = ctx.call("multiply", avg, ctx.scalar(float(np.prod(kernel))))
    return ctx.call("power", total, ctx.scalar(1.0 / p))


@converter("LpNormalization", since=1)
def lp_normalization(ctx: NodeContext) -> Expr:
    """``x / norm_p(x)`` along ``axis`` (p 1 or 2); 0 where the norm is 0."""
    x = ctx.need(0)
    axis = axis_of(ctx, int(ctx.attr("axis", -1)), ctx.rank(0))
    p = int(ctx.attr("p", 2))
    if p == 1:
        norm = ctx.call("sum", ctx.call("abs", x), axis=[axis], keepdims=True)
    elif p == 2:
        norm = ctx.call("sqrt", ctx.call("sum", ctx.call("multiply", x, x), axis=[axis],
                                         keepdims=True))
    else:
        raise ConvertError(f"p={p} (only 1 and 2)")
    zero = ctx.scalar(0)
    return ctx.call("where", ctx.call("equal", norm, zero), ctx.call("zeros_like", x),
                    ctx.call("divide", x, norm))


# -- normalisations -----------------------------------------------------------------------


def _stash(ctx: NodeContext, x: Expr) -> tuple[Expr, str]:
    """``x`` in the computation type (float32 for float16 inputs, stash_type=1)."""
    dtype = ctx.builder.tensor_type(x).dtype
    if dtype == "float16" and int(ctx.attr("stash_type", 1)) == 1:
        return ctx.call("cast", x, dtype="float32"), dtype
    return x, dtype


@converter("RMSNormalization", since=23)
def rms_normalization(ctx: NodeContext) -> Expr:
    """``x / sqrt(mean(x^2 over axes axis..) + epsilon) * scale``.

    X and scale of different types (T and V) are refused: the schema gives the output
    the scale's type, ONNX's reference X's, and the function body multiplies the two
    without a cast (onnxruntime refuses such a model)."""
    if ctx.dtype(1) != ctx.dtype(0):
        raise ConvertError(f"X ({ctx.dtype(0)}) and scale ({ctx.dtype(1)}) of different "
                           "types are not supported (the schema's output type and ONNX's "
                           "reference disagree; onnxruntime refuses it)")
    x, out_dtype = _stash(ctx, ctx.need(0))
    rank = ctx.rank(0)
    axis = axis_of(ctx, int(ctx.attr("axis", -1)), rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    ms = ctx.call("mean", ctx.call("multiply", x, x), axis=list(range(axis, rank)),
                  keepdims=True)
    dtype = ctx.builder.tensor_type(x).dtype
    y = ctx.call("divide", x, ctx.call("sqrt", ctx.call("add", ms, ctx.scalar(eps, dtype))))
    if dtype != out_dtype:
        y = ctx.call("cast", y, dtype=out_dtype)
    return ctx.call("multiply", y, ctx.need(1))


@converter("GroupNormalization", since=18)
def group_normalization(ctx: NodeContext) -> Expr:
    """``nn.group_norm`` over axis 1. GroupNormalization-18 gives scale and bias per group:
    they are repeated to one per channel (as version 21 has them)."""
    x, out_dtype = _stash(ctx, ctx.need(0))
    groups = int(ctx.attr("num_groups", 0))
    channels = ctx.shape(0)[1]
    scale, bias = ctx.need(1), ctx.need(2)
    if ctx.version < 21:
        if not isinstance(channels, int) or groups <= 0 or channels % groups:
            raise ConvertError(f"{channels} channels do not split into {groups} groups")
        scale = ctx.call("repeat", scale, repeats=channels // groups, axis=0)
        bias = ctx.call("repeat", bias, repeats=channels // groups, axis=0)
    dtype = ctx.builder.tensor_type(x).dtype
    if ctx.dtype(1) != dtype:
        scale, bias = ctx.call("cast", scale, dtype=dtype), ctx.call("cast", bias, dtype=dtype)
    y = ctx.call("nn.group_norm", x, scale, bias, num_groups=groups, axis=1,
                 epsilon=float(ctx.attr("epsilon", 1e-5)))
    return y if dtype == out_dtype else ctx.call("cast", y, dtype=out_dtype)


@converter("MeanVarianceNormalization", since=9)
def mean_variance_normalization(ctx: NodeContext) -> Expr:
    """``(x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9)`` over ``axes`` (default
    [0, 2, 3]), as ONNX's function body computes it."""
    x = ctx.need(0)
    rank = ctx.rank(0)
    axes = sorted(axis_of(ctx, int(a), rank) for a in ctx.attr("axes", [0, 2, 3]))
    centred = ctx.call("subtract", x, ctx.call("mean", x, axis=axes, keepdims=True))
    var = ctx.call("mean", ctx.call("multiply", centred, centred), axis=axes, keepdims=True)
    denom = ctx.call("add", ctx.call("sqrt", var), ctx.scalar(1e-9))
    return ctx.call("divide", centred, denom)


# -- activations ----------------------------------------------------------------------------


@converter("Swish", since=24)
def swish(ctx: NodeContext) -> Expr:
    """``x * sigmoid(alpha * x)``."""
    x = ctx.need(0)
    alpha = float(ctx.attr("alpha", 1.0))
    return ctx.call("multiply", x, ctx.call("sigmoid",
                                            ctx.call("multiply", x, ctx.scalar(alpha))))


# -- constants of static shapes -------------------------------------------------------------


@converter("EyeLike", since=9)
def eye_like(ctx: NodeContext) -> Expr:
    """Ones on diagonal ``k`` of a 2-D tensor shaped like the input; ``dtype`` (default:
    the input's)."""
    shape = ctx.static_shape(0, "EyeLike's input")
    if len(shape) != 2:
        raise ConvertError(f"the input must be 2-D, found rank {len(shape)}")
    to = ctx.attr("dtype")
    dtype = relay_dtype(int(to)) if to is not None else ctx.dtype(0)
    if not dtype:
        raise ConvertError(f"dtype={to} has no Relay dtype")
    return ctx.const(np.eye(shape[0], shape[1], int(ctx.attr("k", 0)), dtype=dtype))


def _window(ctx: NodeContext, coefficients: tuple[float, ...]) -> Expr:
    """``sum_i (-1)^i a_i cos(2 pi i n / N)`` for n in [0, size), N = size (periodic) or
    size - 1 (symmetric)."""
    size_v = ctx.static_ints(0, "size")
    if not size_v or size_v[0] < 0:
        raise ConvertError(f"size must be one non-negative value, found {size_v}")
    size = size_v[0]
    dtype = relay_dtype(int(ctx.attr("output_datatype", 1)))
    if not dtype:
        raise ConvertError(f"output_datatype={ctx.attr('output_datatype')} has no dtype")
    denom = size if int(ctx.attr("periodic", 1)) else size - 1
    n = np.arange(size, dtype=np.float64)
    w = np.zeros(size, dtype=np.float64)
    for i, a in enumerate(coefficients):
        w += (-1) ** i * a * np.cos(2 * np.pi * i * n / denom)
    return ctx.const(w.astype(np.float32).astype(dtype))


converter("HannWindow", since=17, static_inputs=(0,))(
    lambda ctx: _window(ctx, (0.5, 0.5)))
converter("HammingWindow", since=17, static_inputs=(0,))(
    lambda ctx: _window(ctx, (25 / 46, 21 / 46)))
converter("BlackmanWindow", since=17, static_inputs=(0,))(
    lambda ctx: _window(ctx, (0.42, 0.5, 0.08)))


@converter("SwiGLU", since=28)
def swiglu(ctx: NodeContext) -> Expr:
    """``a * sigmoid(alpha * a) * b`` (``a`` and ``b`` of one shape)."""
    a = ctx.need(0)
    alpha = float(ctx.attr("alpha", 1.0))
    gate = ctx.call("multiply", a, ctx.call("sigmoid",
                                            ctx.call("multiply", a, ctx.scalar(alpha))))
    return ctx.call("multiply", gate, ctx.need(1))


# -- shapes -----------------------------------------------------------------------------------


@converter("CenterCropPad", since=18, static_inputs=(1,))
def center_crop_pad(ctx: NodeContext) -> Expr:
    """Each axis in ``axes`` (default all) cropped or zero-padded to its target size,
    centred; an odd difference leaves the extra element at the end (ONNX's reference)."""
    shape = ctx.static_shape(0, "CenterCropPad's input")
    rank = len(shape)
    target = ctx.static_ints(1, "shape") or []
    axes = [axis_of(ctx, int(a), rank) for a in ctx.attr("axes", list(range(rank)))]
    if len(axes) != len(target):
        raise ConvertError(f"shape {target} does not fit axes {axes}")
    x = ctx.need(0)
    begin, end, pads = [0] * rank, list(shape), [[0, 0] for _ in range(rank)]
    for a, t in zip(axes, target, strict=True):
        if t < shape[a]:
            begin[a] = (shape[a] - t) // 2
            end[a] = begin[a] + t
        elif t > shape[a]:
            before = (t - shape[a]) // 2
            pads[a] = [before, t - shape[a] - before]
    if begin != [0] * rank or end != list(shape):
        x = ctx.call("strided_slice", x, begin=begin, end=end)
    if any(p != [0, 0] for p in pads):
        x = ctx.call("nn.pad", x, ctx.scalar(0), pad_width=pads)
    return x


# -- rotary embedding -----------------------------------------------------------------------


@converter("RotaryEmbedding", since=23)
def rotary_embedding(ctx: NodeContext) -> Expr:
    """Rotate the first ``rotary_embedding_dim`` features of each head by the angles whose
    cos / sin the caches hold (indexed by ``position_ids`` when given): pairs (x1, x2) are
    halves (or even/odd features when ``interleaved``), and become
    (cos x1 - sin x2, sin x1 + cos x2). 4-D input is (B, H, S, D), 3-D (B, S, H*D)."""
    x = ctx.need(0)
    shape = ctx.static_shape(0, "RotaryEmbedding's input")
    if len(shape) == 4:
        x = ctx.call("transpose", x, axes=[0, 2, 1, 3])
        b, s, h, d = shape[0], shape[2], shape[1], shape[3]
    elif len(shape) == 3:
        h = int(ctx.attr("num_heads", 0))
        if h <= 0 or shape[2] % h:
            raise ConvertError(f"hidden size {shape[2]} does not split into {h} heads")
        b, s, d = shape[0], shape[1], shape[2] // h
        x = ctx.call("reshape", x, newshape=[b, s, h, d])
    else:
        raise ConvertError(f"the input must be 3-D or 4-D, found rank {len(shape)}")
    rd = int(ctx.attr("rotary_embedding_dim", 0)) or d
    half = rd // 2
    cos, sin = ctx.need(1), ctx.need(2)
    pos = ctx.input(3)
    if pos is not None:
        cos, sin = ctx.call("take", cos, pos, axis=0), ctx.call("take", sin, pos, axis=0)
    cos = ctx.call("expand_dims", cos, axis=2)
    sin = ctx.call("expand_dims", sin, axis=2)

    def part(lo: int, hi: int, step: int = 1) -> Expr:
        return ctx.call("strided_slice", x, begin=[lo], end=[hi], strides=[step], axes=[3])

    interleaved = bool(int(ctx.attr("interleaved", 0)))
    x1, x2 = (part(0, rd, 2), part(1, rd, 2)) if interleaved else (part(0, half),
                                                                     part(half, rd))
    real = ctx.call("subtract", ctx.call("multiply", cos, x1), ctx.call("multiply", sin, x2))
    imag = ctx.call("add", ctx.call("multiply", sin, x1), ctx.call("multiply", cos, x2))
    if interleaved:
        rot = ctx.call("reshape", ctx.call("stack", ctx.builder.tuple(real, imag), axis=-1),
                       newshape=[b, s, h, rd])
    else:
        rot = ctx.call("concatenate", ctx.builder.tuple(real, imag), axis=-1)
    if rd < d:
        rot = ctx.call("concatenate", ctx.builder.tuple(rot, part(rd, d)), axis=-1)
    if len(shape) == 4:
        return ctx.call("transpose", rot, axes=[0, 2, 1, 3])
    return ctx.call("reshape", rot, newshape=list(shape))
