"""Differentiation rules of the reductions (registry protocol "Differentiation protocol",
spec/ad.md; the math follows TVM's ``_tensor_grad.py``).

A reduction's adjoint spreads ``out_grad`` back over the reduced axes: ``out_grad`` is first
reshaped to the ``keepdims=True`` shape (``kept_shape``, computed from the argument's static
type), then broadcast to the argument (``broadcast_to_like``). Linear reductions' tangents
are the same reduction of the tangent.
"""

from __future__ import annotations

from relay_ref.ir.expr import Call, Expr
from relay_ref.ops.grad_common import TypeOf, op, op_with, shape


def reduced_axes(ndim: int, axis: tuple[int, ...] | None, exclude: bool) -> frozenset[int]:
    """The axes a reduction with these attributes removes (TVM's ``GetReduceAxes``)."""
    if axis is None:
        axes = set(range(ndim))
    else:
        axes = {a + ndim if a < 0 else a for a in axis}
    if exclude:
        axes = set(range(ndim)) - axes
    return frozenset(axes)


def kept_shape(call: Call, to: TypeOf) -> tuple[int, ...]:
    """The shape of ``call``'s result had it been computed with ``keepdims=True``."""
    x_shape = shape(call.args[0], to)
    a = call.attrs
    axes = reduced_axes(len(x_shape), a.axis, a.exclude)
    return tuple(1 if i in axes else d for i, d in enumerate(x_shape))


def spread(g: Expr, call: Call, to: TypeOf) -> Expr:
    """``g`` (of the reduction's result shape) broadcast back to the argument's shape."""
    kept = kept_shape(call, to)
    if shape(call, to) != kept:
        g = op("reshape", g, newshape=kept)
    return op("broadcast_to_like", g, call.args[0])


def _sum_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d sum(x) = broadcast(g) over the reduced axes."""
    return (spread(g, call, to),)


def _sum_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t sum(x) = sum(tx)."""
    return op_with("sum", call.attrs, t[0])


RULES: dict[str, tuple] = {
    "sum": (_sum_rev, _sum_fwd),
}

NOT_DIFFERENTIABLE: dict[str, str] = {}
