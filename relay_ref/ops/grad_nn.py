"""Differentiation rules of the neural-network ops (registry protocol "Differentiation
protocol", spec/ad.md; the math follows TVM's ``_tensor_grad.py``).

Layouts: the rules handle the default layouts (NCHW data, OIHW weights); another layout
raises ``GradientUnsupported`` naming it. conv2d's data adjoint is a ``nn.conv2d_transpose`` of
``out_grad`` with the same weight; its weight adjoint is a ``nn.conv2d`` of the data (batch
and channels swapped) by ``out_grad``, per group.
"""

from __future__ import annotations

from relay_ref.ir.expr import Call, Expr, Tuple
from relay_ref.ops.grad_common import (
    TypeOf,
    fields,
    ones_like,
    op,
    op_with,
    scalar_like,
    shape,
    unbroadcast,
    zeros_like,
)
from relay_ref.ops.nn import pad4
from relay_ref.ops.registry import GradientUnsupported


def _same(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t f(x, w) = f(tx, w) + f(x, tw) for a bilinear f (f(tx) alone for a linear one)."""
    if len(call.args) == 1:
        return op_with(call.op.name, call.attrs, t[0])
    x, w = call.args
    return op("add", op_with(call.op.name, call.attrs, t[0], w),
              op_with(call.op.name, call.attrs, x, t[1]))


def _t2(e: Expr) -> Expr:
    return op("transpose", e, axes=(1, 0))


def _dense_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d dense(x, w) = (g w, g^T x) (x flattened to 2-d for the weight)."""
    x, w = call.args
    xs = shape(x, to)
    dx = op("nn.dense", g, _t2(w))
    x2 = op("reshape", x, newshape=(-1, xs[-1])) if len(xs) != 2 else x
    g2 = op("reshape", g, newshape=(-1, shape(call, to)[-1])) if len(xs) != 2 else g
    return dx, op("nn.dense", _t2(g2), _t2(x2))


def _matmul_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d (a' b') = (g b'^T, a'^T g), a' = a^T when transpose_a (b' alike), transposed back."""
    a, b = call.args
    at = call.attrs
    a1 = _t2(a) if at.transpose_a else a
    b1 = _t2(b) if at.transpose_b else b
    da = op("nn.matmul", g, _t2(b1))
    db = op("nn.matmul", _t2(a1), g)
    return (_t2(da) if at.transpose_a else da), (_t2(db) if at.transpose_b else db)


def _t3(e: Expr) -> Expr:
    return op("transpose", e, axes=(0, 2, 1))


def _bmm(a: Expr, b: Expr) -> Expr:
    return op("nn.batch_matmul", a, b, transpose_a=False, transpose_b=False)


def _batch_matmul_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d (x' y') = (g y'^T, x'^T g) batched, x' = x^T when transpose_a (y' alike),
    transposed back and collapsed over a broadcast batch."""
    x, y = call.args
    at = call.attrs
    x1 = _t3(x) if at.transpose_a else x
    y1 = _t3(y) if at.transpose_b else y
    dx, dy = _bmm(g, _t3(y1)), _bmm(_t3(x1), g)
    dx = _t3(dx) if at.transpose_a else dx
    dy = _t3(dy) if at.transpose_b else dy
    return unbroadcast(dx, x, call, to), unbroadcast(dy, y, call, to)


def _bias_add_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d bias_add(x, b, axis) = (g, sum of g over every axis but axis)."""
    return g, op("sum", g, axis=(call.attrs.axis,), exclude=True)


def _bias_add_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t bias_add(x, b) = bias_add(tx, tb)."""
    return op_with("nn.bias_add", call.attrs, t[0], t[1])


def _softmax_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d softmax(x) = (g - sum(g y, axis)) y, y = softmax(x)."""
    axis = (call.attrs.axis,)
    s = op("sum", op("multiply", g, call), axis=axis, keepdims=True)
    return (op("multiply", op("subtract", g, s), call),)


def _softmax_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t softmax(x) = y (tx - sum(y tx, axis))."""
    s = op("sum", op("multiply", call, t[0]), axis=(call.attrs.axis,), keepdims=True)
    return op("multiply", call, op("subtract", t[0], s))


def _log_softmax_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d log_softmax(x) = g - softmax(x) sum(g, axis)."""
    axis = call.attrs.axis
    s = op("sum", g, axis=(axis,), keepdims=True)
    return (op("subtract", g, op("multiply", op("nn.softmax", call.args[0], axis=axis), s)),)


def _log_softmax_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t log_softmax(x) = tx - sum(softmax(x) tx, axis)."""
    axis = call.attrs.axis
    p = op("nn.softmax", call.args[0], axis=axis)
    return op("subtract", t[0], op("sum", op("multiply", p, t[0]), axis=(axis,),
                                   keepdims=True))


def _dropout_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d dropout(x) = g.0 (inference: the identity; the mask is constant)."""
    return (fields(g, 2)[0],)


def _dropout_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t dropout(x) = (tx, 0)."""
    return Tuple((t[0], zeros_like(t[0])))


def _nchw(call: Call) -> None:
    a = call.attrs
    layouts = (getattr(a, "data_layout", None) or getattr(a, "layout", "NCHW"),
               getattr(a, "kernel_layout", "OIHW"))
    if layouts[0] != "NCHW" or layouts[1] not in ("OIHW", ""):
        raise GradientUnsupported(f"{call.op.name}: the gradient is implemented for NCHW/OIHW, "
                         f"not {layouts[0]}/{layouts[1]}")


def _gap_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d global_avg_pool2d(x) = broadcast(g) / (H W)."""
    _nchw(call)
    x = call.args[0]
    h, w = shape(x, to)[2:]
    return (op("divide", op("broadcast_to_like", g, x), scalar_like(h * w, x, to)),)


def _gmp_weights(call: Call) -> Expr:
    x = call.args[0]
    hit = op("where", op("equal", x, call), ones_like(x), zeros_like(x))
    return op("divide", hit, op("sum", hit, axis=(2, 3), keepdims=True))


def _gmp_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d global_max_pool2d(x) = broadcast(g) [x == max] / #ties."""
    _nchw(call)
    return (op("multiply", op("broadcast_to_like", g, call.args[0]), _gmp_weights(call)),)


def _gmp_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t global_max_pool2d(x) = sum(tx [x == max] / #ties) over H, W."""
    return op("sum", op("multiply", t[0], _gmp_weights(call)), axis=(2, 3), keepdims=True)


def _conv2d_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d conv2d(x, w) = (conv2d_transpose(g, w), per group conv2d(x^T, g^T)^T cropped)."""
    _nchw(call)
    x, w = call.args
    a = call.attrs
    n, c, h, wd = shape(x, to)
    o, ci, kh, kw = shape(w, to)
    _, _, oh, ow = shape(call, to)
    top, left, bottom, right = pad4(a.padding)
    (sh, sw), (dh, dw) = a.strides, a.dilation
    eh = (oh - 1) * sh - top - bottom + dh * (kh - 1) + 1
    ew = (ow - 1) * sw - left - right + dw * (kw - 1) + 1
    dx = op("nn.conv2d_transpose", g, w, channels=c, kernel_size=(kh, kw), strides=(sh, sw),
            padding=(top, left, bottom, right), dilation=(dh, dw), groups=a.groups,
            output_padding=(h - eh, wd - ew))
    groups = a.groups
    og = o // groups
    xs = fields(op("split", x, indices_or_sections=groups, axis=1), groups) \
        if groups > 1 else (x,)
    gs = fields(op("split", g, indices_or_sections=groups, axis=1), groups) \
        if groups > 1 else (g,)
    parts = []
    for xg, gg in zip(xs, gs, strict=True):
        full = op("nn.conv2d", op("transpose", xg, axes=(1, 0, 2, 3)),
                  op("transpose", gg, axes=(1, 0, 2, 3)), strides=(dh, dw),
                  dilation=(sh, sw), padding=(top, left, bottom, right))
        crop = op("strided_slice", full, begin=(0, 0, 0, 0), end=(ci, og, kh, kw))
        parts.append(op("transpose", crop, axes=(1, 0, 2, 3)))
    dw_ = parts[0] if groups == 1 else op("concatenate", Tuple(tuple(parts)), axis=0)
    return dx, dw_


def _batch_norm_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """Inference batch_norm y = (x - m) s + b, s = gamma / sqrt(v + eps): dx = g s,
    dgamma = sum(g (x - m) / sqrt(v + eps)), dbeta = sum(g), dm = -sum(g s) + g.1,
    dv = sum(-g (x - m) s / (2 (v + eps))) + g.2 (sums over every axis but axis)."""
    x, gamma, beta, mean, var = call.args
    a = call.attrs
    g0, g1, g2 = fields(g, 3)
    ndim = len(shape(x, to))
    axis = a.axis % ndim
    keep = tuple(shape(x, to)[axis] if i == axis else 1 for i in range(ndim))

    def along(v: Expr) -> Expr:
        return op("reshape", v, newshape=keep)

    def red(v: Expr) -> Expr:
        return op("sum", v, axis=(axis,), exclude=True)
    inv = op("rsqrt", op("add", var, scalar_like(a.epsilon, x, to)))
    scale = op("multiply", gamma, inv) if a.scale else inv
    centred = op("subtract", x, along(mean))
    dx = op("multiply", g0, along(scale))
    dgamma = red(op("multiply", g0, op("multiply", centred, along(inv)))) if a.scale \
        else zeros_like(gamma)
    dbeta = red(g0) if a.center else zeros_like(beta)
    dmean = op("add", op("negative", red(dx)), g1)
    dvar_in = op("multiply", op("multiply", dx, centred),
                 along(op("multiply", inv, inv)))
    dvar = op("add", op("multiply", scalar_like(-0.5, x, to), red(dvar_in)), g2)
    return dx, dgamma, dbeta, dmean, dvar


def _batch_norm_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t y = tx s + (x - m) t(s) - tm s + tb, t(s) = tgamma inv - gamma inv^3 tv / 2;
    the moving statistics pass their tangents through."""
    x, gamma, beta, mean, var = call.args
    tx, tgamma, tbeta, tmean, tvar = t
    a = call.attrs
    ndim = len(shape(x, to))
    axis = a.axis % ndim
    keep = tuple(shape(x, to)[axis] if i == axis else 1 for i in range(ndim))

    def along(v: Expr) -> Expr:
        return op("reshape", v, newshape=keep)
    inv = op("rsqrt", op("add", var, scalar_like(a.epsilon, x, to)))
    g_ = gamma if a.scale else ones_like(gamma)
    scale = op("multiply", g_, inv)
    dinv = op("multiply", scalar_like(-0.5, x, to),
              op("multiply", op("multiply", inv, op("multiply", inv, inv)), tvar))
    tscale = op("multiply", g_, dinv)
    if a.scale:
        tscale = op("add", op("multiply", tgamma, inv), tscale)
    out = op("add", op("multiply", op("subtract", tx, along(tmean)), along(scale)),
             op("multiply", op("subtract", x, along(mean)), along(tscale)))
    if a.center:
        out = op("add", out, along(tbeta))
    return Tuple((out, tmean, tvar))


RULES: dict[str, tuple] = {
    "nn.dense": (_dense_rev, _same),
    "nn.matmul": (_matmul_rev, _same),
    "nn.batch_matmul": (_batch_matmul_rev, _same),
    "nn.bias_add": (_bias_add_rev, _bias_add_fwd),
    "nn.softmax": (_softmax_rev, _softmax_fwd),
    "nn.fast_softmax": (_softmax_rev, _softmax_fwd),
    "nn.log_softmax": (_log_softmax_rev, _log_softmax_fwd),
    "nn.dropout": (_dropout_rev, _dropout_fwd),
    "nn.global_avg_pool2d": (_gap_rev, _same),
    "nn.global_max_pool2d": (_gmp_rev, _gmp_fwd),
    "nn.conv2d": (_conv2d_rev, _same),
    "nn.batch_norm": (_batch_norm_rev, _batch_norm_fwd),
}

_LATER = "not implemented yet"
NOT_DIFFERENTIABLE: dict[str, str] = {
    **{n: f"{_LATER} (adaptive windows)"
       for n in ("nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool3d",
                 "nn.adaptive_max_pool1d", "nn.adaptive_max_pool2d",
                 "nn.adaptive_max_pool3d")},
    **{n: f"{_LATER} (the conv2d rule generalised to this rank or transpose)"
       for n in ("nn.conv1d", "nn.conv3d", "nn.conv1d_transpose", "nn.conv2d_transpose",
                 "nn.conv3d_transpose")},
    **{n: f"{_LATER} (blocked NCHWc layout)"
       for n in ("nn.contrib_conv2d_NCHWc", "nn.contrib_depthwise_conv2d_NCHWc")},
    **{n: f"{_LATER} (normalisation over computed statistics)"
       for n in ("nn.lrn",)},
    "nn.prelu": f"{_LATER} (per-channel slope)",
    "nn.upsampling": f"{_LATER} (interpolation weights)",
}

