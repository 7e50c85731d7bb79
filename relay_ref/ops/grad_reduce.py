"""Differentiation rules of the reductions (registry protocol "Differentiation protocol",
spec/ad.md; the math follows TVM's ``_tensor_grad.py``).

A reduction's adjoint spreads ``out_grad`` back over the reduced axes: ``out_grad`` is first
reshaped to the ``keepdims=True`` shape (``kept_shape``, computed from the argument's static
type), then broadcast to the argument (``broadcast_to_like``). Linear reductions' tangents
are the same reduction of the tangent.
"""

from __future__ import annotations

import numpy as np

from relay_ref.ir.expr import Call, Constant, Expr
from relay_ref.ops.grad_common import (
    TypeOf,
    const,
    dtype,
    ones_like,
    op,
    op_with,
    scalar_like,
    shape,
    zeros_like,
)


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


def _count(call: Call, to: TypeOf) -> int:
    """How many elements each result element reduces."""
    x_shape = shape(call.args[0], to)
    n = 1
    for i in reduced_axes(len(x_shape), call.attrs.axis, call.attrs.exclude):
        n *= x_shape[i]
    return n


def _keep(value: Expr, call: Call, to: TypeOf) -> Expr:
    """``value`` (of the result's shape) reshaped to the ``keepdims=True`` shape."""
    kept = kept_shape(call, to)
    return value if shape(call, to) == kept else op("reshape", value, newshape=kept)


def _sum_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d sum(x) = broadcast(g) over the reduced axes."""
    return (spread(g, call, to),)


def _sum_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t sum(x) = sum(tx)."""
    return op_with("sum", call.attrs, t[0])


def _mean_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d mean(x) = broadcast(g) / n, n the number of reduced elements."""
    x = call.args[0]
    return (op("divide", spread(g, call, to), scalar_like(_count(call, to), x, to)),)


def _mean_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t mean(x) = mean(tx)."""
    return op_with("mean", call.attrs, t[0])


def _chooser_weights(call: Call, to: TypeOf) -> Expr:
    """1/k at the k elements that attain the max (min) of their group, 0 elsewhere (ties
    share the gradient equally, as TVM and jax do)."""
    x = call.args[0]
    a = call.attrs
    hit = op("where", op("equal", x, _keep(call, call, to)), ones_like(x), zeros_like(x))
    count = op("sum", hit, axis=a.axis, keepdims=True, exclude=a.exclude)
    return op("divide", hit, count)


def _chooser_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d max(x) = broadcast(g) * [x == max] / #ties (min alike)."""
    return (op("multiply", spread(g, call, to), _chooser_weights(call, to)),)


def _chooser_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t max(x) = sum(tx * [x == max] / #ties) over the reduced axes (min alike)."""
    a = call.attrs
    return op("sum", op("multiply", t[0], _chooser_weights(call, to)), axis=a.axis,
              keepdims=a.keepdims, exclude=a.exclude)


def _to_last(e: Expr, perm: tuple[int, ...]) -> Expr:
    return e if perm == tuple(range(len(perm))) else op("transpose", e, axes=perm)


def _from_last(e: Expr, perm: tuple[int, ...]) -> Expr:
    inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
    return _to_last(e, inverse)


def _prod_of_others(call: Call, to: TypeOf) -> Expr:
    """For each element of x, the product of the other elements of its reduction group
    (x's shape): the exclusive products from both ends of the group, with the reduced axes
    moved last and flattened. No division, so exact at zeros."""
    x = call.args[0]
    xs = shape(x, to)
    red = sorted(reduced_axes(len(xs), call.attrs.axis, call.attrs.exclude))
    kept = [i for i in range(len(xs)) if i not in red]
    perm = tuple(kept + red)
    moved = tuple(xs[i] for i in perm)
    flat = (*moved[:len(kept)], int(np.prod(moved[len(kept):], dtype=np.int64)))
    last = len(kept)
    xf = op("reshape", _to_last(x, perm), newshape=flat)
    before = op("cumprod", xf, axis=last, exclusive=True)
    after = op("reverse", op("cumprod", op("reverse", xf, axis=last), axis=last,
                             exclusive=True), axis=last)
    others = op("reshape", op("multiply", before, after), newshape=moved)
    return _from_last(others, perm)


def _prod_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d prod(x) = broadcast(g) * (product of the other elements of the group)."""
    if not reduced_axes(len(shape(call.args[0], to)), call.attrs.axis, call.attrs.exclude):
        return (_keep(g, call, to),)  # nothing reduced: the identity
    return (op("multiply", spread(g, call, to), _prod_of_others(call, to)),)


def _prod_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t prod(x) = sum(tx * product of the other elements of the group)."""
    a = call.attrs
    if not reduced_axes(len(shape(call.args[0], to)), a.axis, a.exclude):
        return op("reshape", t[0], newshape=shape(call, to))
    return op("sum", op("multiply", t[0], _prod_of_others(call, to)), axis=a.axis,
              keepdims=a.keepdims, exclude=a.exclude)


def _variance_n(call: Call, to: TypeOf) -> Expr:
    return scalar_like(_count(call, to) - (1 if call.attrs.unbiased else 0), call.args[0], to)


def _variance_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d var(x, m) = (broadcast(g) 2 (x - m) / n, -collapse(broadcast(g) 2 (x - m) / n)),
    n = count - unbiased (m an independent input)."""
    x, m = call.args
    two_diff = op("multiply", scalar_like(2.0, x, to), op("subtract", x, m))
    dx = op("divide", op("multiply", spread(g, call, to), two_diff), _variance_n(call, to))
    dm = op("negative", dx)
    if shape(m, to) != shape(x, to):
        dm = op("collapse_sum_like", dm, m)
    return dx, dm


def _variance_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t var(x, m) = sum(2 (x - m) (tx - tm)) / n."""
    x, m = call.args
    a = call.attrs
    terms = op("multiply", op("multiply", scalar_like(2.0, x, to), op("subtract", x, m)),
               op("subtract", t[0], t[1]))
    total = op("sum", terms, axis=a.axis, keepdims=a.keepdims, exclude=a.exclude)
    return op("divide", total, _variance_n(call, to))


def _rev_cumsum(g: Expr, call: Call, to: TypeOf) -> Expr:
    """sum over j >= i (j > i when exclusive) of g[j] along the scan axis, in ``x``'s
    shape: the transpose of the scan."""
    a = call.attrs
    axis = 0 if a.axis is None else a.axis
    out = op("reverse", op("cumsum", op("reverse", g, axis=axis), axis=axis,
                           exclusive=a.exclusive), axis=axis)
    if a.axis is None:
        out = op("reshape", out, newshape=shape(call.args[0], to))
    return out


def _cumsum_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d cumsum(x)[i] = sum_{j >= i} g[j] (j > i when exclusive)."""
    return (_rev_cumsum(g, call, to),)


def _cumsum_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t cumsum(x) = cumsum(tx)."""
    return op_with("cumsum", call.attrs, t[0])


def _scan_layout(call: Call, to: TypeOf) -> tuple:
    """(prepare, finish, n, dt) for a scan: ``prepare(e)`` moves the scan axis of ``e`` (x's
    shape; flattened when axis is None) last, ``finish`` undoes it, n is the axis' length."""
    x = call.args[0]
    xs = shape(x, to)
    if call.attrs.axis is None:
        n = int(np.prod(xs, dtype=np.int64))
        return ((lambda e: op("reshape", e, newshape=(-1,))), (lambda e: e), n,
                dtype(x, to))
    axis = call.attrs.axis % len(xs)
    perm = tuple(i for i in range(len(xs)) if i != axis) + (axis,)
    return ((lambda e: _to_last(e, perm)), (lambda e: _from_last(e, perm)), xs[axis],
            dtype(x, to))


def _cumprod_parts(call: Call, to: TypeOf) -> tuple:
    """(prepare, finish, m, before, last) for cumprod y along the scan axis, moved last
    (index ``last``; see ``_scan_layout``):
    ``m[..., i, j]`` is the product of x over i < k <= j (i < k < j when exclusive) where y_j
    depends on x_i (j >= i; j > i when exclusive), else 0; ``before_i`` the product over
    k < i. Then d y_j / d x_i = before_i m[i, j]: no division, exact at zeros (the
    (n, n) matrix makes it O(n^2) in the scan length)."""
    prepare, finish, n, dt = _scan_layout(call, to)
    xl = prepare(call.args[0])
    excl = call.attrs.exclusive
    last = len(shape(call, to)) - 1 if call.attrs.axis is not None else 0
    i, k = np.indices((n, n))
    later = Constant(k > i)  # row i keeps x_k for k > i, 1 elsewhere
    rows = op("where", later, op("expand_dims", xl, axis=last), const(1.0, dt))
    runs = op("cumprod", rows, axis=last + 1, exclusive=excl)
    depends = Constant(k > i if excl else k >= i)
    m = op("where", depends, runs, const(0.0, dt))
    before = op("cumprod", xl, axis=last, exclusive=True)
    return prepare, finish, m, before, last


def _cumprod_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d cumprod(x)_i = before_i sum_j m[i, j] g_j (see ``_cumprod_parts``)."""
    prepare, finish, m, before, last = _cumprod_parts(call, to)
    gl = prepare(g) if call.attrs.axis is not None else g
    s = op("sum", op("multiply", m, op("expand_dims", gl, axis=last)), axis=(last + 1,))
    dx = finish(op("multiply", before, s))
    if call.attrs.axis is None:
        dx = op("reshape", dx, newshape=shape(call.args[0], to))
    return (dx,)


def _cumprod_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t cumprod(x)_j = sum_i m[i, j] before_i tx_i (see ``_cumprod_parts``)."""
    prepare, finish, m, before, last = _cumprod_parts(call, to)
    weighted = op("multiply", before, prepare(t[0]))
    return finish(op("sum", op("multiply", m, op("expand_dims", weighted, axis=last + 1)),
                     axis=(last,)))


def _collapse_like_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d collapse_sum_like(x, like) = (broadcast_to_like(g, x), 0)."""
    x, like = call.args
    return op("broadcast_to_like", g, x), zeros_like(like)


def _collapse_like_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t collapse_sum_like(x, like) = collapse_sum_like(tx, like)."""
    return op("collapse_sum_like", t[0], call.args[1])


def _collapse_to_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d collapse_sum_to(x, shape) = (broadcast_to_like(g, x), 0) (shape is integer)."""
    x, target = call.args
    return op("broadcast_to_like", g, x), zeros_like(target)


def _collapse_to_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t collapse_sum_to(x, shape) = collapse_sum_to(tx, shape)."""
    return op_with("collapse_sum_to", call.attrs, t[0], call.args[1])


RULES: dict[str, tuple] = {
    "sum": (_sum_rev, _sum_fwd),
    "mean": (_mean_rev, _mean_fwd),
    "max": (_chooser_rev, _chooser_fwd),
    "min": (_chooser_rev, _chooser_fwd),
    "prod": (_prod_rev, _prod_fwd),
    "variance": (_variance_rev, _variance_fwd),
    "cumsum": (_cumsum_rev, _cumsum_fwd),
    "cumprod": (_cumprod_rev, _cumprod_fwd),
    "collapse_sum_like": (_collapse_like_rev, _collapse_like_fwd),
    "collapse_sum_to": (_collapse_to_rev, _collapse_to_fwd),
}

NOT_DIFFERENTIABLE: dict[str, str] = {
    "all": "boolean result", "any": "boolean result",
    "argmax": "integer result (an index)", "argmin": "integer result (an index)",
}
