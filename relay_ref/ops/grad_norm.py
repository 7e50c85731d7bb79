"""Differentiation rules of the normalisations over computed statistics (registry protocol
"Differentiation protocol", spec/ad.md): ``nn.layer_norm``, ``nn.instance_norm``,
``nn.group_norm``, and ``nn.l2_normalize`` (at the end).

All three are ``y = xhat gamma + beta`` (gamma and beta along ``axis``, each optional by
``scale`` / ``center``) with ``xhat = (x - mean) r``, ``r = 1 / sqrt(var + eps)`` and the
mean and biased variance taken over a set of axes R of a view of x: layer_norm: R = {axis};
instance_norm: every axis but 0 and axis; group_norm: x viewed with ``axis`` split into
(groups, channels / groups), R every axis of the view but 0 and the groups axis.

With ``m(v) = mean of v over R`` (kept dims), the derivative of xhat is
``d xhat = r (dx - m(dx) - xhat m(xhat dx))`` -- self-adjoint, so the same map gives the
data's adjoint from ``dxhat = g gamma`` and the tangent from ``tx``. gamma's and beta's
adjoints sum ``g xhat`` and ``g`` over every axis but ``axis``.
"""

from __future__ import annotations

from relay_ref.ir.expr import Call, Expr
from relay_ref.ops.grad_common import TypeOf, op, scalar_like, shape, zeros_like


class _View:
    """The statistics' geometry of one call: x's shape, the view shape the statistics are
    taken in, the reduced axes R of the view, and the affine axis of x."""

    def __init__(self, call: Call, to: TypeOf) -> None:
        x = call.args[0]
        a = call.attrs
        self.xs = shape(x, to)
        nd = len(self.xs)
        self.axis = a.axis % nd
        name = call.op.name
        if name == "nn.layer_norm":
            self.view, self.red = self.xs, (self.axis,)
        elif name == "nn.instance_norm":
            self.view = self.xs
            self.red = tuple(i for i in range(1, nd) if i != self.axis)
        else:  # nn.group_norm: axis split into (groups, channels / groups)
            g, ax = a.num_groups, self.axis
            self.view = (*self.xs[:ax], g, self.xs[ax] // g, *self.xs[ax + 1:])
            self.red = tuple(i for i in range(1, nd + 1) if i != ax)

    def to_view(self, e: Expr) -> Expr:
        return e if self.view == self.xs else op("reshape", e, newshape=self.view)

    def from_view(self, e: Expr) -> Expr:
        return e if self.view == self.xs else op("reshape", e, newshape=self.xs)

    def along(self, v: Expr) -> Expr:
        """A 1-d ``v`` (gamma, beta) shaped to broadcast along x's ``axis``."""
        keep = tuple(d if i == self.axis else 1 for i, d in enumerate(self.xs))
        return op("reshape", v, newshape=keep)

    def mean(self, e: Expr) -> Expr:
        return op("mean", e, axis=self.red, keepdims=True)

    def others(self, e: Expr) -> Expr:
        """``e`` (x's shape) summed over every axis but ``axis``."""
        return op("sum", e, axis=(self.axis,), exclude=True)


def _stats(call: Call, v: _View, to: TypeOf) -> tuple[Expr, Expr]:
    """(xhat, r) in the view's shape."""
    x = v.to_view(call.args[0])
    xc = op("subtract", x, v.mean(x))
    var = v.mean(op("multiply", xc, xc))
    r = op("rsqrt", op("add", var, scalar_like(call.attrs.epsilon, call.args[0], to)))
    return op("multiply", xc, r), r


def _dxhat(d: Expr, xhat: Expr, r: Expr, v: _View) -> Expr:
    """r (d - m(d) - xhat m(xhat d)) for a ``d`` in the view's shape."""
    centred = op("subtract", d, v.mean(d))
    return op("multiply", r, op("subtract", centred,
                                op("multiply", xhat, v.mean(op("multiply", xhat, d)))))


def _norm_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """dx = r (dxh - m(dxh) - xhat m(xhat dxh)), dxh = g gamma; dgamma = sum(g xhat),
    dbeta = sum(g) over every axis but axis (0 when scale / center is off)."""
    _, gamma, beta = call.args
    a = call.attrs
    v = _View(call, to)
    xhat, r = _stats(call, v, to)
    dxh = op("multiply", g, v.along(gamma)) if a.scale else g
    dx = v.from_view(_dxhat(v.to_view(dxh), xhat, r, v))
    dgamma = v.others(op("multiply", g, v.from_view(xhat))) if a.scale else zeros_like(gamma)
    dbeta = v.others(g) if a.center else zeros_like(beta)
    return dx, dgamma, dbeta


def _norm_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """ty = r (tx - m(tx) - xhat m(xhat tx)) gamma + xhat tgamma + tbeta (the gamma and
    beta terms when scale / center)."""
    _, gamma, _ = call.args
    tx, tgamma, tbeta = t
    a = call.attrs
    v = _View(call, to)
    xhat, r = _stats(call, v, to)
    out = v.from_view(_dxhat(v.to_view(tx), xhat, r, v))
    if a.scale:
        out = op("add", op("multiply", out, v.along(gamma)),
                 op("multiply", v.from_view(xhat), v.along(tgamma)))
    if a.center:
        out = op("add", out, v.along(tbeta))
    return out


def _l2_parts(call: Call, to: TypeOf) -> tuple:
    """(q, c, axes): y = x q, q = 1 / sqrt(max(s, eps)), s = sum(x x, axes) (kept dims),
    and c = -q^3 where s > eps (q depends on x there), 0 where eps wins."""
    x = call.args[0]
    axes = call.attrs.axis or None
    ss = op("sum", op("multiply", x, x), axis=axes, keepdims=True)
    eps = scalar_like(call.attrs.eps, x, to)
    q = op("rsqrt", op("maximum", ss, eps))
    active = op("cast_like", op("greater", ss, eps), x)
    c = op("negative", op("multiply", active, op("multiply", q, op("multiply", q, q))))
    return q, c, axes


def _l2_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d l2_normalize(x) = g q + x c sum(g x, axes), c = -q^3 where sum(x x) > eps else 0."""
    x = call.args[0]
    q, c, axes = _l2_parts(call, to)
    proj = op("sum", op("multiply", g, x), axis=axes, keepdims=True)
    return (op("add", op("multiply", g, q), op("multiply", x, op("multiply", c, proj))),)


def _l2_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t l2_normalize(x) = tx q + x c sum(x tx, axes) (c as for the reverse rule)."""
    x = call.args[0]
    q, c, axes = _l2_parts(call, to)
    proj = op("sum", op("multiply", x, t[0]), axis=axes, keepdims=True)
    return op("add", op("multiply", t[0], q), op("multiply", x, op("multiply", c, proj)))


RULES: dict[str, tuple] = {
    **{name: (_norm_rev, _norm_fwd)
       for name in ("nn.layer_norm", "nn.instance_norm", "nn.group_norm")},
    "nn.l2_normalize": (_l2_rev, _l2_fwd),
}

NOT_DIFFERENTIABLE: dict[str, str] = {}
