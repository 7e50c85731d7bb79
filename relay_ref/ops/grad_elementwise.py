"""Differentiation rules of the elementwise ops (unary math, broadcasting binary arithmetic).

Rules as data (registry protocol "Differentiation protocol", spec/ad.md; the math follows
TVM's ``python/tvm/relay/op/_tensor_grad.py``):
* ``UNARY`` maps a unary op to its derivative ``f'(x)`` built from ``(x, y, type_of)``, ``y``
  the call itself (``f(x)``); the reverse rule is ``out_grad * f'(x)``, the forward rule
  ``tangent * f'(x)``.
* ``BINARY`` maps a broadcasting binary op to its partials ``(df/dx, df/dy)``; the reverse
  rule multiplies ``out_grad`` by each partial and sums broadcast axes back
  (``collapse_sum_like``), the forward rule is ``tx * df/dx + ty * df/dy``.
* ``LINEAR`` holds ops with hand-written rules (no multiplication by a constant 1), and the
  piecewise-constant ops (``PIECEWISE_CONSTANT``: ``floor``, ``round``, ``sign``...), whose
  adjoints and tangents are 0, as TVM's and jax's.
* ``NOT_DIFFERENTIABLE`` says why the other elementwise ops have no rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from relay_ref.ir.expr import Call, Expr
from relay_ref.ops.grad_common import (
    TypeOf,
    op,
    scalar_like,
    unbroadcast,
    zeros_like,
)

Deriv = Callable[[Expr, Expr, TypeOf], Expr]


def _c(v: float, x: Expr, to: TypeOf) -> Expr:
    return scalar_like(v, x, to)


def _sq(x: Expr) -> Expr:
    return op("multiply", x, x)


# -- unary derivatives: (x, y = f(x), type_of) -> f'(x) ------------------------------------

def _d_exp(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """exp'(x) = exp(x) = y."""
    return y


def _d_log(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """log'(x) = 1 / x."""
    return op("divide", _c(1.0, x, to), x)


def _d_log2(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """log2'(x) = 1 / (x ln 2)."""
    return op("divide", _c(1.0 / math.log(2.0), x, to), x)


def _d_log10(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """log10'(x) = 1 / (x ln 10)."""
    return op("divide", _c(1.0 / math.log(10.0), x, to), x)


def _d_sqrt(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """sqrt'(x) = 1 / (2 sqrt(x)) = 0.5 / y."""
    return op("divide", _c(0.5, x, to), y)


def _d_rsqrt(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """rsqrt'(x) = -x^(-3/2) / 2 = -0.5 y / x."""
    return op("divide", op("multiply", _c(-0.5, x, to), y), x)


def _d_sigmoid(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """sigmoid'(x) = y (1 - y)."""
    return op("multiply", y, op("subtract", _c(1.0, x, to), y))


def _d_tanh(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """tanh'(x) = 1 - y^2."""
    return op("subtract", _c(1.0, x, to), _sq(y))


def _d_sin(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """sin'(x) = cos(x)."""
    return op("cos", x)


def _d_cos(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """cos'(x) = -sin(x)."""
    return op("negative", op("sin", x))


def _d_tan(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """tan'(x) = 1 + tan(x)^2 = 1 + y^2."""
    return op("add", _c(1.0, x, to), _sq(y))


def _d_sinh(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """sinh'(x) = cosh(x)."""
    return op("cosh", x)


def _d_cosh(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """cosh'(x) = sinh(x)."""
    return op("sinh", x)


def _d_asin(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """asin'(x) = 1 / sqrt(1 - x^2)."""
    return op("rsqrt", op("subtract", _c(1.0, x, to), _sq(x)))


def _d_acos(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """acos'(x) = -1 / sqrt(1 - x^2)."""
    return op("negative", _d_asin(x, y, to))


def _d_atan(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """atan'(x) = 1 / (1 + x^2)."""
    return op("divide", _c(1.0, x, to), op("add", _c(1.0, x, to), _sq(x)))


def _d_asinh(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """asinh'(x) = 1 / sqrt(x^2 + 1)."""
    return op("rsqrt", op("add", _sq(x), _c(1.0, x, to)))


def _d_acosh(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """acosh'(x) = 1 / sqrt(x^2 - 1)."""
    return op("rsqrt", op("subtract", _sq(x), _c(1.0, x, to)))


def _d_atanh(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """atanh'(x) = 1 / (1 - x^2)."""
    return op("divide", _c(1.0, x, to), op("subtract", _c(1.0, x, to), _sq(x)))


def _d_abs(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """abs'(x) = sign(x) (0 at 0, a subgradient)."""
    return op("sign", x)


def _d_erf(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """erf'(x) = 2 / sqrt(pi) * exp(-x^2)."""
    return op("multiply", _c(2.0 / math.sqrt(math.pi), x, to),
              op("exp", op("negative", _sq(x))))


def _step(cond: Expr, x: Expr, on: Expr, off: Expr) -> Expr:
    """``on`` where ``cond`` holds, else ``off`` (both broadcast to ``x``'s shape)."""
    return op("where", cond, op("add", zeros_like(x), on), op("add", zeros_like(x), off))


def _d_relu(x: Expr, y: Expr, to: TypeOf) -> Expr:
    """relu'(x) = 1 if x > 0 else 0."""
    return _step(op("greater", x, _c(0.0, x, to)), x, _c(1.0, x, to), _c(0.0, x, to))


def _leaky_relu_deriv(call: Call) -> Deriv:
    def d(x: Expr, y: Expr, to: TypeOf) -> Expr:
        """leaky_relu'(x) = 1 if x > 0 else alpha."""
        return _step(op("greater", x, _c(0.0, x, to)), x, _c(1.0, x, to),
                     _c(call.attrs.alpha, x, to))
    return d


def _clip_deriv(call: Call) -> Deriv:
    def d(x: Expr, y: Expr, to: TypeOf) -> Expr:
        """clip'(x) = 1 if a_min <= x <= a_max else 0."""
        a = call.attrs
        inside = op("logical_and", op("greater_equal", x, _c(a.a_min, x, to)),
                    op("less_equal", x, _c(a.a_max, x, to)))
        return _step(inside, x, _c(1.0, x, to), _c(0.0, x, to))
    return d


#: unary op -> f'(x) (a ``Deriv``, or a factory ``call -> Deriv`` when it reads attrs).
UNARY: dict[str, Deriv] = {
    "exp": _d_exp, "fast_exp": _d_exp, "log": _d_log, "log2": _d_log2, "log10": _d_log10,
    "sqrt": _d_sqrt, "rsqrt": _d_rsqrt, "sigmoid": _d_sigmoid, "tanh": _d_tanh,
    "fast_tanh": _d_tanh, "sin": _d_sin, "cos": _d_cos, "tan": _d_tan, "sinh": _d_sinh,
    "cosh": _d_cosh, "asin": _d_asin, "acos": _d_acos, "atan": _d_atan, "asinh": _d_asinh,
    "acosh": _d_acosh, "atanh": _d_atanh, "abs": _d_abs, "erf": _d_erf, "fast_erf": _d_erf,
    "nn.relu": _d_relu,
}
UNARY_WITH_ATTRS: dict[str, Callable[[Call], Deriv]] = {
    "nn.leaky_relu": _leaky_relu_deriv, "clip": _clip_deriv,
}


def _unary_rules(deriv_of: Callable[[Call], Deriv]) -> tuple:
    def reverse(call: Call, out_grad: Expr, to: TypeOf) -> tuple:
        """d(x) = out_grad * f'(x)."""
        x = call.args[0]
        return (op("multiply", out_grad, deriv_of(call)(x, call, to)),)

    def forward(call: Call, tangents: tuple, to: TypeOf) -> Expr:
        """t(f(x)) = t(x) * f'(x)."""
        x = call.args[0]
        return op("multiply", tangents[0], deriv_of(call)(x, call, to))
    return reverse, forward


# -- binary partials: (x, y, z = f(x, y), type_of) -> (df/dx, df/dy) -------------------------

Partials = Callable[[Expr, Expr, Expr, TypeOf], tuple]


def _p_power(x: Expr, y: Expr, z: Expr, to: TypeOf) -> tuple:
    """d(x^y) = (y x^(y-1), log(x) x^y)."""
    return (op("multiply", y, op("power", x, op("subtract", y, _c(1.0, y, to)))),
            op("multiply", op("log", x), z))


def _p_maximum(x: Expr, y: Expr, z: Expr, to: TypeOf) -> tuple:
    """d max(x, y) = (1 if x >= y else 0, 1 if x < y else 0)."""
    first = op("greater_equal", x, y)
    return (_step(first, z, _c(1.0, z, to), _c(0.0, z, to)),
            _step(first, z, _c(0.0, z, to), _c(1.0, z, to)))


def _p_minimum(x: Expr, y: Expr, z: Expr, to: TypeOf) -> tuple:
    """d min(x, y) = (1 if x <= y else 0, 1 if x > y else 0)."""
    first = op("less_equal", x, y)
    return (_step(first, z, _c(1.0, z, to), _c(0.0, z, to)),
            _step(first, z, _c(0.0, z, to), _c(1.0, z, to)))


def _p_mod(x: Expr, y: Expr, z: Expr, to: TypeOf) -> tuple:
    """d mod(x, y) = d (x - trunc(x / y) y) = (1, -trunc(x / y)) almost everywhere."""
    return (_c(1.0, z, to), op("negative", op("trunc", op("divide", x, y))))


def _p_floor_mod(x: Expr, y: Expr, z: Expr, to: TypeOf) -> tuple:
    """d floor_mod(x, y) = d (x - floor(x / y) y) = (1, -floor(x / y)) almost everywhere."""
    return (_c(1.0, z, to), op("negative", op("floor", op("divide", x, y))))


BINARY: dict[str, Partials] = {
    "power": _p_power, "maximum": _p_maximum, "minimum": _p_minimum, "mod": _p_mod,
    "floor_mod": _p_floor_mod,
}


def _full(partial: Expr, z: Expr) -> Expr:
    """A partial broadcast to the result's shape (a scalar constant partial included)."""
    return op("add", zeros_like(z), partial)


def _binary_rules(partials: Partials) -> tuple:
    def reverse(call: Call, out_grad: Expr, to: TypeOf) -> tuple:
        """(dx, dy) = collapse(out_grad * df/dx), collapse(out_grad * df/dy)."""
        x, y = call.args
        px, py = partials(x, y, call, to)
        return (unbroadcast(op("multiply", out_grad, _full(px, call)), x, call, to),
                unbroadcast(op("multiply", out_grad, _full(py, call)), y, call, to))

    def forward(call: Call, tangents: tuple, to: TypeOf) -> Expr:
        """t(f(x, y)) = t(x) df/dx + t(y) df/dy."""
        x, y = call.args
        px, py = partials(x, y, call, to)
        return op("add", _full(op("multiply", tangents[0], px), call),
                  op("multiply", tangents[1], py))
    return reverse, forward


# -- linear and bilinear ops, by hand ----------------------------------------------------

def _add_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d(x + y) = (collapse(g), collapse(g))."""
    x, y = call.args
    return unbroadcast(g, x, call, to), unbroadcast(g, y, call, to)


def _add_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t(x + y) = tx + ty."""
    return _full(op("add", t[0], t[1]), call)


def _subtract_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d(x - y) = (collapse(g), collapse(-g))."""
    x, y = call.args
    return unbroadcast(g, x, call, to), unbroadcast(op("negative", g), y, call, to)


def _subtract_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t(x - y) = tx - ty."""
    return _full(op("subtract", t[0], t[1]), call)


def _multiply_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d(x y) = (collapse(g y), collapse(g x))."""
    x, y = call.args
    return (unbroadcast(op("multiply", g, y), x, call, to),
            unbroadcast(op("multiply", g, x), y, call, to))


def _multiply_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t(x y) = tx y + x ty."""
    x, y = call.args
    return _full(op("add", op("multiply", t[0], y), op("multiply", x, t[1])), call)


def _divide_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d(x / y) = (collapse(g / y), collapse(-g x / y^2))."""
    x, y = call.args
    return (unbroadcast(op("divide", g, y), x, call, to),
            unbroadcast(op("negative", op("divide", op("multiply", g, call), y)), y, call, to))


def _divide_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t(x / y) = (tx - (x / y) ty) / y."""
    x, y = call.args
    return _full(op("divide", op("subtract", t[0], op("multiply", call, t[1])), y), call)


def _negative_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d(-x) = -g."""
    return (op("negative", g),)


def _negative_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t(-x) = -tx."""
    return op("negative", t[0])


def _stop_gradient_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d stop_gradient(x) = 0 (the op is the identity that hides its input from AD)."""
    return (zeros_like(call.args[0]),)


def _stop_gradient_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t stop_gradient(x) = 0."""
    return zeros_like(call)


def _constant_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """A piecewise-constant op: its derivative is 0 wherever it exists (TVM and jax give 0
    too), so each argument's adjoint is 0 (AD-App-Op-Const's value, spec/ad.md 4)."""
    return tuple(zeros_like(a) for a in call.args)


def _constant_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """A piecewise-constant op's tangent: 0."""
    return zeros_like(call)


#: float ops whose derivative is 0 wherever it exists (at the jumps it does not)
PIECEWISE_CONSTANT = ("floor", "ceil", "round", "trunc", "sign", "floor_divide")

LINEAR: dict[str, tuple] = {
    **{n: (_constant_rev, _constant_fwd) for n in PIECEWISE_CONSTANT},
    "add": (_add_rev, _add_fwd), "subtract": (_subtract_rev, _subtract_fwd),
    "multiply": (_multiply_rev, _multiply_fwd), "divide": (_divide_rev, _divide_fwd),
    "negative": (_negative_rev, _negative_fwd),
    "stop_gradient": (_stop_gradient_rev, _stop_gradient_fwd),
}

_BOOL = "boolean result"
_INT = "integer operands only (bitwise)"

NOT_DIFFERENTIABLE: dict[str, str] = {
    **{n: _BOOL for n in ("equal", "not_equal", "less", "less_equal", "greater",
                          "greater_equal", "isfinite", "isinf", "isnan", "logical_and",
                          "logical_or", "logical_xor", "logical_not")},
    **{n: _INT for n in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                         "left_shift", "right_shift")},
}


def _table() -> dict[str, tuple]:
    rules: dict[str, tuple] = dict(LINEAR)
    for name, deriv in UNARY.items():
        rules[name] = _unary_rules(lambda call, d=deriv: d)
    for name, factory in UNARY_WITH_ATTRS.items():
        rules[name] = _unary_rules(factory)
    for name, partials in BINARY.items():
        rules[name] = _binary_rules(partials)
    return rules


#: op -> (reverse, forward), installed by ``relay_ref.ops.gradients``.
RULES: dict[str, tuple] = _table()
