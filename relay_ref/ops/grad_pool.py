"""Differentiation rules of the window pools (registry protocol "Differentiation protocol",
spec/ad.md; TVM's ``_tensor_grad.py`` uses the same ``*_pool2d_grad`` ops).

* ``nn.max_pool2d`` / ``nn.avg_pool2d``: the adjoint is ``nn.max_pool2d_grad`` /
  ``nn.avg_pool2d_grad`` of ``out_grad`` at the data, with the pool's own attributes (any
  layout the pool accepts). avg_pool2d is linear: its tangent is the same pool of the
  tangent. max_pool2d's tangent is the tangent element at each window's first maximum
  (``select_at_max``: the windows' taps stacked, ``argmax`` over them, ``gather``) -- the
  element ``nn.max_pool2d_grad`` sends that window's gradient to, so the two rules agree.
* The two grad ops (for gradients of gradients): both are linear in ``out_grad`` and
  piecewise constant in the data (its adjoint and tangent are 0 almost everywhere); the
  adjoint of ``avg_pool2d_grad`` is ``avg_pool2d``, that of ``max_pool2d_grad`` is
  ``select_at_max``.
* 1-d pools (layout NCW) go through the 2-d ops with a unit H axis; other 1-d layouts raise
  ``GradientUnsupported``.
"""

from __future__ import annotations

import numpy as np

from relay_ref.ir.expr import Call, Constant, Expr, Tuple
from relay_ref.ops.grad_common import TypeOf, dtype, op, op_with, shape, zeros_like
from relay_ref.ops.nn import pad4, pool_out
from relay_ref.ops.nn_nd import pool1d_as_2d
from relay_ref.ops.registry import GradientUnsupported

_NCHW = "NCHW"


def _to_nchw(e: Expr, layout: str) -> Expr:
    if layout == _NCHW:
        return e
    return op("transpose", e, axes=tuple(layout.index(ch) for ch in _NCHW))


def _from_nchw(e: Expr, layout: str) -> Expr:
    if layout == _NCHW:
        return e
    return op("transpose", e, axes=tuple(_NCHW.index(ch) for ch in layout))


def select_at_max(x: Expr, t: Expr, attrs: object, xs: tuple, dt: str) -> Expr:
    """For each window of the 2-d max pool of ``x`` (shape ``xs``, dtype ``dt``; ``attrs``:
    ``MaxPool2DAttrs``), the element of ``t`` (``x``'s type) at the window's first maximum,
    in the pool's output layout. Windows as the pool's reference: padding (explicit, then
    ceil_mode's extra bottom/right rows) is -inf in ``x`` and never chosen over a real
    element."""
    layout = attrs.layout
    out_layout = attrs.out_layout or layout
    n, c, h, w = (xs[layout.index(ch)] for ch in _NCHW)
    pt, pl, pb, pr = pad4(attrs.padding)
    (kh, kw), (sh, sw), (dh, dw) = attrs.pool_size, attrs.strides, attrs.dilation
    oh = pool_out(h, kh, sh, pt + pb, dh, attrs.ceil_mode)
    ow = pool_out(w, kw, sw, pl + pr, dw, attrs.ceil_mode)
    eh = max(0, (oh - 1) * sh + (kh - 1) * dh + 1 - (h + pt + pb))
    ew = max(0, (ow - 1) * sw + (kw - 1) * dw + 1 - (w + pl + pr))
    width = ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew))

    def taps(e: Expr, fill: float) -> Expr:
        """(N, C, OH, OW, KH * KW): window offset (i, j) of output (p, q) is padded
        element (p sh + i dh, q sw + j dw)."""
        padded = op("nn.pad", _to_nchw(e, layout), Constant(np.array(fill, dt)),
                    pad_width=width)
        return op("stack", Tuple(tuple(
            op("strided_slice", padded, begin=(0, 0, i * dh, j * dw),
               end=(n, c, i * dh + (oh - 1) * sh + 1, j * dw + (ow - 1) * sw + 1),
               strides=(1, 1, sh, sw))
            for i in range(kh) for j in range(kw))), axis=4)
    first = op("argmax", taps(x, -np.inf), axis=(4,), keepdims=True)  # first maximum
    picked = op("squeeze", op("gather", taps(t, 0.0), first, axis=4), axis=(4,))
    return _from_nchw(picked, out_layout)


def _max_pool2d_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d max_pool2d(x) = max_pool2d_grad(g, x): g to each window's first maximum."""
    return (op_with("nn.max_pool2d_grad", call.attrs, g, call.args[0]),)


def _max_pool2d_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t max_pool2d(x) = tx at each window's first maximum."""
    x = call.args[0]
    return select_at_max(x, t[0], call.attrs, shape(x, to), dtype(x, to))


def _avg_pool2d_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d avg_pool2d(x) = avg_pool2d_grad(g, x): g / divisor to every counted element."""
    return (op_with("nn.avg_pool2d_grad", call.attrs, g, call.args[0]),)


def _avg_pool2d_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t avg_pool2d(x) = avg_pool2d(tx) (linear)."""
    return op_with("nn.avg_pool2d", call.attrs, t[0])


def _max_grad_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d max_pool2d_grad(o, x) = (G at each window's first maximum of x, 0): linear in o,
    piecewise constant in x."""
    _, x = call.args
    return select_at_max(x, g, call.attrs, shape(x, to), dtype(x, to)), zeros_like(x)


def _avg_grad_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d avg_pool2d_grad(o, x) = (avg_pool2d(G), 0): the transpose of a linear map; x only
    gives the shape."""
    _, x = call.args
    return op_with("nn.avg_pool2d", call.attrs, g), zeros_like(x)


def _pool_grad_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t pool_grad(o, x) = pool_grad(to, x) (linear in o; constant in x almost
    everywhere)."""
    return op_with(call.op.name, call.attrs, t[0], call.args[1])


def _attrs_1d(call: Call) -> object:
    a = call.attrs
    if a.layout != "NCW" or a.out_layout not in ("", "NCW"):
        raise GradientUnsupported(f"{call.op.name}: the gradient is implemented for layout "
                                  f"NCW, not {a.layout}/{a.out_layout or a.layout}")
    return pool1d_as_2d(a)


def _up(e: Expr) -> Expr:
    return op("expand_dims", e, axis=2)


def _down(e: Expr) -> Expr:
    return op("squeeze", e, axis=(2,))


def _pool1d_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d pool1d(x) = pool2d_grad(g, x) with a unit H axis (max or avg alike)."""
    kind = "nn.max_pool2d_grad" if call.op.name == "nn.max_pool1d" else "nn.avg_pool2d_grad"
    return (_down(op_with(kind, _attrs_1d(call), _up(g), _up(call.args[0]))),)


def _max_pool1d_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t max_pool1d(x) = tx at each window's first maximum (through the 2-d selection)."""
    x = call.args[0]
    n, c, w = shape(x, to)
    return _down(select_at_max(_up(x), _up(t[0]), _attrs_1d(call), (n, c, 1, w),
                               dtype(x, to)))


def _avg_pool1d_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t avg_pool1d(x) = avg_pool1d(tx) (linear)."""
    return op_with("nn.avg_pool1d", call.attrs, t[0])


RULES: dict[str, tuple] = {
    "nn.max_pool2d": (_max_pool2d_rev, _max_pool2d_fwd),
    "nn.avg_pool2d": (_avg_pool2d_rev, _avg_pool2d_fwd),
    "nn.max_pool2d_grad": (_max_grad_rev, _pool_grad_fwd),
    "nn.avg_pool2d_grad": (_avg_grad_rev, _pool_grad_fwd),
    "nn.max_pool1d": (_pool1d_rev, _max_pool1d_fwd),
    "nn.avg_pool1d": (_pool1d_rev, _avg_pool1d_fwd),
}

NOT_DIFFERENTIABLE: dict[str, str] = {
    n: "not implemented yet (needs a 3-d window-gradient op, TVM has no "
       f"{n}_grad either)" for n in ("nn.max_pool3d", "nn.avg_pool3d")
}
