"""Converters of the neural-network family: convolutions, pools, normalisations, LRN,
dropout, and the softmax family.

Padding: ONNX ``pads`` are ``[b1, b2, ..., e1, e2, ...]`` (all begins, then all ends),
which is exactly Relay's ``padding`` order for 1-, 2- and 3-d convs and pools
(``(left, right)``, ``(top, left, bottom, right)``, ``(front, top, left, back, bottom,
right)``). ``auto_pad`` SAME_* is resolved to explicit pads from static spatial dims.
"""

from __future__ import annotations

import math

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.common import check_auto_pad, relay_padding, resolve_pads, spatial_dims
from relay_ref.frontend.onnx.context import NodeContext, axis_of
from relay_ref.frontend.onnx.dtypes import promote
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

# -- convolutions -------------------------------------------------------------------------

@converter("Conv", static_inputs=(), check=check_auto_pad)
def conv(ctx: NodeContext) -> Expr:
    nd = spatial_dims(ctx)
    w_shape = ctx.static_shape(1, "the weight")
    kernel = [int(k) for k in ctx.attr("kernel_shape", w_shape[2:])]
    strides = [int(s) for s in ctx.attr("strides", [1] * nd)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * nd)]
    pads = resolve_pads(ctx, kernel, strides, dilations)
    y = ctx.call(f"nn.conv{nd}d", ctx.need(0), ctx.need(1), strides=strides,
                 padding=relay_padding(pads), dilation=dilations, groups=int(ctx.attr("group", 1)),
                 channels=w_shape[0], kernel_size=kernel)
    if ctx.input(2) is not None:
        y = ctx.call("nn.bias_add", y, ctx.need(2), axis=1)
    return y


@converter("ConvTranspose", check=check_auto_pad)
def conv_transpose(ctx: NodeContext) -> Expr:
    nd = spatial_dims(ctx)
    w_shape = ctx.static_shape(1, "the weight")
    group = int(ctx.attr("group", 1))
    kernel = [int(k) for k in ctx.attr("kernel_shape", w_shape[2:])]
    strides = [int(s) for s in ctx.attr("strides", [1] * nd)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * nd)]
    out_pad = [int(p) for p in ctx.attr("output_padding", [0] * nd)]
    out_shape = ctx.attr("output_shape")
    mode = ctx.attr("auto_pad", "NOTSET")
    if out_shape is not None or mode in ("SAME_UPPER", "SAME_LOWER"):
        dims = ctx.static_shape(0, "the input of ConvTranspose with output_shape")[2:]
        wanted = ([int(v) for v in out_shape][-nd:] if out_shape is not None
                  else [n * s for n, s in zip(dims, strides, strict=True)])
        begins, ends = [], []
        for n, k, s, d, op, o in zip(dims, kernel, strides, dilations, out_pad, wanted,
                                     strict=True):
            total = s * (n - 1) + op + (k - 1) * d + 1 - o
            if total < 0:  # the output is larger than the op can make: pad the output
                raise ConvertError(f"output_shape {wanted} needs negative padding")
            if mode == "SAME_UPPER":
                begins.append(total // 2)
                ends.append(total - total // 2)
            else:
                begins.append(total - total // 2)
                ends.append(total // 2)
        pads = begins + ends
    else:
        pads = resolve_pads(ctx, kernel, strides, dilations)
    y = ctx.call(f"nn.conv{nd}d_transpose", ctx.need(0), ctx.need(1),
                 channels=w_shape[1] * group, kernel_size=kernel, strides=strides,
                 output_padding=out_pad, padding=pads, dilation=dilations, groups=group)
    if ctx.input(2) is not None:
        y = ctx.call("nn.bias_add", y, ctx.need(2), axis=1)
    return y


# -- pools --------------------------------------------------------------------------------

def _check_pool(ctx: NodeContext) -> list[str]:
    out = check_auto_pad(ctx)
    if int(ctx.attr("storage_order", 0)) != 0 and ctx.num_outputs > 1:
        out.append("storage_order=1 (column-major indices) is not supported")
    return out


def _pool(ctx: NodeContext, kind: str) -> Expr:
    nd = spatial_dims(ctx)
    kernel = [int(k) for k in ctx.attr("kernel_shape", [])]
    if len(kernel) != nd:
        raise ConvertError(f"kernel_shape {kernel} does not fit {nd} spatial dims")
    strides = [int(s) for s in ctx.attr("strides", [1] * nd)]
    dilations = [int(d) for d in ctx.attr("dilations", [1] * nd)]
    ceil = bool(ctx.attr("ceil_mode", 0))
    pads = resolve_pads(ctx, kernel, strides, dilations, ceil)
    attrs: dict[str, object] = dict(pool_size=kernel, strides=strides, dilation=dilations,
                                    padding=relay_padding(pads), ceil_mode=ceil)
    if kind == "avg":
        attrs["count_include_pad"] = bool(ctx.attr("count_include_pad", 0))
    y = ctx.call(f"nn.{kind}_pool{nd}d", ctx.need(0), **attrs)
    return _drop_pad_windows(ctx, y, strides, pads) if ceil else y


def _drop_pad_windows(ctx: NodeContext, y: Expr, strides: list[int], pads: list[int]) -> Expr:
    """With ``ceil_mode`` ONNX (like PyTorch) drops a last window that starts in the end
    padding; the pool ops' shape rule (TVM's) keeps it: the extra output row is sliced
    off. The windows kept are the same in both, so their values agree."""
    dims = ctx.shape(0)[2:]
    got = ctx.builder.tensor_type(y).shape[2:]
    ends, axes = [], []
    for i, (n, out) in enumerate(zip(dims, got, strict=True)):
        if not isinstance(n, int) or not isinstance(out, int):
            continue
        if (out - 1) * strides[i] >= n + pads[i]:
            ends.append(out - 1)
            axes.append(2 + i)
    if not axes:
        return y
    return ctx.call("strided_slice", y, begin=[0] * len(axes), end=ends, axes=axes)


@converter("MaxPool", check=_check_pool)
def max_pool(ctx: NodeContext) -> Expr:
    return _pool(ctx, "max")


@converter("AveragePool", check=_check_pool)
def avg_pool(ctx: NodeContext) -> Expr:
    return _pool(ctx, "avg")


def _global_pool(ctx: NodeContext, kind: str) -> Expr:
    rank = ctx.rank(0)
    if rank == 4:
        return ctx.call(f"nn.global_{kind}_pool2d", ctx.need(0))
    reduce = "mean" if kind == "avg" else "max"
    return ctx.call(reduce, ctx.need(0), axis=list(range(2, rank)), keepdims=True)


@converter("GlobalAveragePool")
def global_avg_pool(ctx: NodeContext) -> Expr:
    return _global_pool(ctx, "avg")


@converter("GlobalMaxPool")
def global_max_pool(ctx: NodeContext) -> Expr:
    return _global_pool(ctx, "max")


# -- normalisation ------------------------------------------------------------------------

def _check_batch_norm(ctx: NodeContext) -> list[str]:
    out = []
    if int(ctx.attr("training_mode", 0)):
        out.append("training_mode=1 is not supported (inference only)")
    if int(ctx.attr("spatial", 1)) != 1:
        out.append("spatial=0 (per-activation statistics) is not supported")
    return out


@converter("BatchNormalization", since=7, check=_check_batch_norm)
def batch_norm(ctx: NodeContext) -> Expr:
    """Inference: ``(x - mean) / sqrt(var + epsilon) * scale + bias`` over axis 1.

    From BatchNormalization-15 scale and bias (T1) and mean and variance (T2) may have
    other float types than X: all five are computed in their promoted type and the
    result cast to X's, as ONNX's reference does."""
    args = [ctx.need(i) for i in range(5)]
    dtypes = [ctx.dtype(i) for i in range(5)]
    wide = promote(*dtypes)
    args = [a if t == wide else ctx.call("cast", a, dtype=wide)
            for a, t in zip(args, dtypes, strict=True)]
    y = ctx.builder.item(ctx.call("nn.batch_norm", *args, axis=1,
                                  epsilon=float(ctx.attr("epsilon", 1e-5))), 0)
    return y if dtypes[0] == wide else ctx.call("cast", y, dtype=dtypes[0])


@converter("InstanceNormalization")
def instance_norm(ctx: NodeContext) -> Expr:
    return ctx.call("nn.instance_norm", ctx.need(0), ctx.need(1), ctx.need(2), axis=1,
                    epsilon=float(ctx.attr("epsilon", 1e-5)))


@converter("LayerNormalization", since=17, outputs=3)
def layer_norm(ctx: NodeContext) -> tuple[Expr, Expr | None, Expr | None]:
    """Normalise over axes ``axis ..`` (to the last): one ``nn.layer_norm`` when that is the
    last axis alone, the scale is 1-d and only ``Y`` is asked for, else composed from
    means. ``Mean`` and ``InvStdDev`` keep the normalised axes as 1s; the statistics are
    computed in float32 when ``stash_type`` is 1 (the default) and X is float16."""
    x, scale, bias = ctx.need(0), ctx.need(1), ctx.input(2)
    rank = ctx.rank(0)
    axis = axis_of(ctx, int(ctx.attr("axis", -1)), rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    if (ctx.num_outputs == 1 and axis == rank - 1 and ctx.rank(1) == 1
            and (bias is None or ctx.rank(2) == 1)):
        if bias is None:
            bias = ctx.call("zeros_like", scale)
        return ctx.call("nn.layer_norm", x, scale, bias, axis=-1, epsilon=eps), None, None
    dtype = ctx.dtype(0)
    stash = "float32" if int(ctx.attr("stash_type", 1)) == 1 and dtype == "float16" else dtype
    xs = x if stash == dtype else ctx.call("cast", x, dtype=stash)
    axes = list(range(axis, rank))
    mean = ctx.call("mean", xs, axis=axes, keepdims=True)
    centred = ctx.call("subtract", xs, mean)
    var = ctx.call("mean", ctx.call("multiply", centred, centred), axis=axes, keepdims=True)
    inv_std = ctx.call("rsqrt", ctx.call("add", var, ctx.scalar(eps, stash)))
    normed = ctx.call("multiply", centred, inv_std)
    if stash != dtype:
        normed = ctx.call("cast", normed, dtype=dtype)
    y = ctx.call("multiply", normed, scale)
    y = y if bias is None else ctx.call("add", y, bias)
    return y, mean, inv_std


@converter("LRN", check=lambda ctx: [] if int(ctx.attr("size", 1)) % 2 else [
    f"size={ctx.attr('size')} (an even window is not centred; only odd sizes)"])
def lrn(ctx: NodeContext) -> Expr:
    return ctx.call("nn.lrn", ctx.need(0), size=int(ctx.attr("size")), axis=1,
                    alpha=float(ctx.attr("alpha", 1e-4)), beta=float(ctx.attr("beta", 0.75)),
                    bias=float(ctx.attr("bias", 1.0)))


# -- dropout ------------------------------------------------------------------------------

@converter("Dropout", static_inputs=(1, 2), outputs=2)
def dropout(ctx: NodeContext) -> tuple[Expr, Expr | None]:
    """Inference: the identity; the mask (when asked for) is all ones (bool from
    Dropout-10)."""
    training = ctx.static(2, "training_mode") if ctx.version >= 12 else None
    if training is not None and bool(training):
        raise ConvertError("training_mode=true is not supported (inference only)")
    x = ctx.need(0)
    if ctx.num_outputs < 2:
        return x, None
    mask = ctx.call("ones_like", x)
    if ctx.version >= 10:
        mask = ctx.call("cast", mask, dtype="bool")
    return x, mask


# -- softmax family -----------------------------------------------------------------------

def _softmax_like(ctx: NodeContext, apply) -> Expr:
    """Before opset 13: the input coerced to 2-d at ``axis`` (default 1); from 13: along
    ``axis`` (default -1)."""
    x = ctx.need(0)
    rank = ctx.rank(0)
    if ctx.version >= 13:
        return apply(x, axis_of(ctx, int(ctx.attr("axis", -1)), rank))
    axis = axis_of(ctx, int(ctx.attr("axis", 1)), rank) if rank else 0
    if axis == rank - 1:
        return apply(x, axis)
    shape = ctx.shape(0)
    if all(isinstance(d, int) for d in shape):
        flat = ctx.call("reshape", x, newshape=[math.prod(shape[:axis]),  # type: ignore
                                                math.prod(shape[axis:])])  # type: ignore
        return ctx.call("reshape", apply(flat, 1), newshape=list(shape))
    # a symbolic (or unknown) dim: -1 stands for the side that is not static, and the
    # result takes the input's shape back with reshape_like (no static newshape needed)
    if all(isinstance(d, int) for d in shape[axis:]):
        newshape = [-1, math.prod(shape[axis:])]  # type: ignore[arg-type]
    elif all(isinstance(d, int) for d in shape[:axis]):
        newshape = [math.prod(shape[:axis]), -1]  # type: ignore[arg-type]
    else:
        raise ConvertError(f"{ctx.node.op_type}'s input (axis {axis} of {rank}) needs "
                           f"static dims before or after the axis, found {shape}")
    flat = ctx.call("reshape", x, newshape=newshape)
    return ctx.call("reshape_like", apply(flat, 1), x)


@converter("Softmax")
def softmax(ctx: NodeContext) -> Expr:
    return _softmax_like(ctx, lambda x, axis: ctx.call("nn.softmax", x, axis=axis))


@converter("LogSoftmax")
def log_softmax(ctx: NodeContext) -> Expr:
    return _softmax_like(ctx, lambda x, axis: ctx.call("nn.log_softmax", x, axis=axis))


@converter("Hardmax")
def hardmax(ctx: NodeContext) -> Expr:
    dtype = ctx.dtype(0)

    def apply(x: Expr, axis: int) -> Expr:
        depth = ctx.builder.tensor_type(x).shape[axis]
        if not isinstance(depth, int):
            raise ConvertError("Hardmax needs a static size along its axis")
        idx = ctx.call("argmax", x, axis=[axis])
        return ctx.call("one_hot", idx, ctx.const(np.array(1, dtype)),
                        ctx.const(np.array(0, dtype)), depth=depth, axis=axis, dtype=dtype)
    return _softmax_like(ctx, apply)
