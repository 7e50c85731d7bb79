"""Converters of elementwise arithmetic, comparisons, activations and matrix products.

ONNX binary ops broadcast as NumPy does from opset 7, as Relay's do, so each maps to one
Relay call. Composite activations (Elu, Softplus, Gelu, HardSwish ...) are composed from
Relay ops, as TVM's frontend did; the formulas are in the comments.
"""

from __future__ import annotations

import math

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.dtypes import promote
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr
from relay_ref.ir.types import ANY

# -- one-to-one maps ----------------------------------------------------------------------

# ONNX binary op -> (Relay op, first op version with NumPy broadcasting)
BINARY = {
    "Add": ("add", 7), "Sub": ("subtract", 7), "Mul": ("multiply", 7),
    "Div": ("divide", 7), "Equal": ("equal", 7), "Less": ("less", 7),
    "Greater": ("greater", 7), "LessOrEqual": ("less_equal", 12),
    "GreaterOrEqual": ("greater_equal", 12), "And": ("logical_and", 7),
    "Or": ("logical_or", 7), "Xor": ("logical_xor", 7), "BitwiseAnd": ("bitwise_and", 18),
    "BitwiseOr": ("bitwise_or", 18), "BitwiseXor": ("bitwise_xor", 18),
}

UNARY = {
    "Abs": "abs", "Neg": "negative", "Floor": "floor", "Ceil": "ceil", "Sqrt": "sqrt",
    "Exp": "exp", "Log": "log", "Tanh": "tanh", "Sigmoid": "sigmoid", "Relu": "nn.relu",
    "Erf": "erf", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos",
    "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh",
    "Atanh": "atanh", "Sign": "sign", "Not": "logical_not", "IsNaN": "isnan",
    "Round": "round", "BitwiseNot": "bitwise_not",
}


def _binary(relay_op: str):
    def convert(ctx: NodeContext) -> Expr:
        return ctx.call(relay_op, ctx.need(0), ctx.need(1))
    return convert


def _unary(relay_op: str):
    def convert(ctx: NodeContext) -> Expr:
        return ctx.call(relay_op, ctx.need(0))
    return convert


for _onnx, (_relay, _since) in BINARY.items():
    converter(_onnx, since=_since)(_binary(_relay))
for _onnx, _relay in UNARY.items():
    converter(_onnx)(_unary(_relay))


@converter("Pow", since=7)
def power(ctx: NodeContext) -> Expr:
    """``power(x, y)`` computed as ONNX's reference does, ``np.power(x, y).astype(x's
    type)``: from Pow-12 the exponent may have another type, so both operands go to their
    NumPy promoted type (an int32 base with a float32 exponent: float64, so ``4 ** 1.5``
    is 8 and ``3 ** 2.9`` is 24) and the result is cast back to the base's type (floats
    truncate toward zero). Never the exponent cast to the base's type, which would make
    ``1.5`` an integer 1.

    An integer to a negative integer power (which NumPy refuses) is the float64 power
    truncated, as onnxruntime computes it: 0 for ``|x| > 1``, ``x ** y`` for ``x = +-1``;
    ``0 ** -1`` is infinite, and its cast is unspecified (as in C)."""
    x, y = ctx.need(0), ctx.need(1)
    x_dtype, y_dtype = ctx.dtype(0), ctx.dtype(1)
    wide = promote(x_dtype, y_dtype)
    if x_dtype != wide:
        x = ctx.call("cast", x, dtype=wide)
    if y_dtype != wide:
        y = ctx.call("cast", y, dtype=wide)
    if np.dtype(wide).kind in "iu" and np.dtype(y_dtype).kind == "i":
        negative = ctx.call("less", y, ctx.scalar(0, wide))
        whole = ctx.call("power", x, ctx.call("maximum", y, ctx.scalar(0, wide)))
        as_float = [ctx.call("cast", v, dtype="float64") for v in (x, y)]
        part = ctx.call("cast", ctx.call("power", *as_float), dtype=wide)
        out = ctx.call("where", negative, part, whole)
    else:
        out = ctx.call("power", x, y)
    return out if wide == x_dtype else ctx.call("cast", out, dtype=x_dtype)


@converter("Mod", since=10, check=lambda ctx: [])
def mod(ctx: NodeContext) -> Expr:
    """``fmod=0``: the sign of the divisor (floor); ``fmod=1``: of the dividend (C fmod).

    Float ``fmod=0`` is NumPy's ``mod`` (ONNX's reference): the truncated remainder moved
    into the divisor's sign by adding the divisor, a zero signed as the divisor; so ``x mod
    inf`` is ``x`` or ``inf``, where ``floor_mod`` (``x - floor(x / y) * y``) gives NaN."""
    a, b = ctx.need(0), ctx.need(1)
    if int(ctx.attr("fmod", 0)):
        return ctx.call("mod", a, b)
    if np.dtype(ctx.dtype(0)).kind != "f":
        return ctx.call("floor_mod", a, b)
    r = ctx.call("mod", a, b)
    b_neg = ctx.call("less", b, ctx.scalar(0))
    flip = ctx.call("logical_and", ctx.call("not_equal", r, ctx.scalar(0)),
                    ctx.call("not_equal", b_neg, ctx.call("less", r, ctx.scalar(0))))
    r = ctx.call("where", flip, ctx.call("add", r, b), r)
    zero = ctx.call("where", b_neg, ctx.scalar(-0.0), ctx.scalar(0.0))
    return ctx.call("where", ctx.call("equal", r, ctx.scalar(0)), zero, r)


@converter("Reciprocal")
def reciprocal(ctx: NodeContext) -> Expr:
    return ctx.call("divide", ctx.scalar(1), ctx.need(0))


@converter("IsInf", since=10)
def isinf(ctx: NodeContext) -> Expr:
    x = ctx.need(0)
    pos, neg = int(ctx.attr("detect_positive", 1)), int(ctx.attr("detect_negative", 1))
    inf = ctx.call("isinf", x)
    if pos and neg:
        return inf
    if not pos and not neg:
        return ctx.call("logical_and", inf, ctx.const(np.array(False)))
    side = ctx.call("greater" if pos else "less", x, ctx.scalar(0))
    return ctx.call("logical_and", inf, side)


@converter(("Sum", "Max", "Min", "Mean"), since=6)
def variadic(ctx: NodeContext) -> Expr:
    """Left fold with broadcasting; Mean divides the sum by the count."""
    op = {"Sum": "add", "Mean": "add", "Max": "maximum", "Min": "minimum"}[ctx.node.op_type]
    args = [x for x in ctx.inputs if x is not None]
    if not args:
        raise ConvertError("needs at least one input")
    acc = args[0]
    for x in args[1:]:
        acc = ctx.call(op, acc, x)
    if ctx.node.op_type == "Mean" and len(args) > 1:
        acc = ctx.call("divide", acc, ctx.scalar(len(args)))
    return acc


# -- activations --------------------------------------------------------------------------

@converter("LeakyRelu")
def leaky_relu(ctx: NodeContext) -> Expr:
    return ctx.call("nn.leaky_relu", ctx.need(0), alpha=float(ctx.attr("alpha", 0.01)))


@converter("PRelu", since=7)
def prelu(ctx: NodeContext) -> Expr:
    """``x < 0 ? slope * x : x`` with ``slope`` broadcast to ``x``: ``nn.prelu`` when the
    slope is per channel (shape (C,) + (1,) * k, aligned on axis 1), else composed."""
    x, slope = ctx.need(0), ctx.need(1)
    rank, s_shape = ctx.rank(0), ctx.shape(1)
    channels = ctx.shape(0)[1] if rank >= 2 else ANY
    if (rank >= 2 and len(s_shape) == rank - 1 and s_shape[0] == channels
            and all(d == 1 for d in s_shape[1:]) and isinstance(channels, int)):
        alpha = ctx.call("reshape", slope, newshape=[channels])
        return ctx.call("nn.prelu", x, alpha, axis=1)
    zero = ctx.scalar(0)
    return ctx.call("where", ctx.call("less", x, zero), ctx.call("multiply", x, slope), x)


def _elu_core(ctx: NodeContext, x: Expr, alpha: float) -> Expr:
    # x > 0 ? x : alpha * (exp(x) - 1)
    neg = ctx.call("multiply", ctx.scalar(alpha),
                   ctx.call("subtract", ctx.call("exp", x), ctx.scalar(1)))
    return ctx.call("where", ctx.call("greater", x, ctx.scalar(0)), x, neg)


@converter("Elu")
def elu(ctx: NodeContext) -> Expr:
    return _elu_core(ctx, ctx.need(0), float(ctx.attr("alpha", 1.0)))


@converter("Selu")
def selu(ctx: NodeContext) -> Expr:
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    return ctx.call("multiply", ctx.scalar(gamma), _elu_core(ctx, ctx.need(0), alpha))


@converter("Celu", since=12)
def celu(ctx: NodeContext) -> Expr:
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    x, alpha = ctx.need(0), float(ctx.attr("alpha", 1.0))
    e = ctx.call("exp", ctx.call("divide", x, ctx.scalar(alpha)))
    neg = ctx.call("multiply", ctx.scalar(alpha), ctx.call("subtract", e, ctx.scalar(1)))
    return ctx.call("add", ctx.call("nn.relu", x),
                    ctx.call("minimum", ctx.scalar(0), neg))


@converter("ThresholdedRelu", since=10)
def thresholded_relu(ctx: NodeContext) -> Expr:
    x = ctx.need(0)
    above = ctx.call("greater", x, ctx.scalar(float(ctx.attr("alpha", 1.0))))
    return ctx.call("where", above, x, ctx.scalar(0))


def _hard_sigmoid(ctx: NodeContext, x: Expr, alpha: float, beta: float) -> Expr:
    # clip(alpha * x + beta, 0, 1)
    y = ctx.call("add", ctx.call("multiply", ctx.scalar(alpha), x), ctx.scalar(beta))
    return ctx.call("clip", y, a_min=0.0, a_max=1.0)


@converter("HardSigmoid")
def hard_sigmoid(ctx: NodeContext) -> Expr:
    return _hard_sigmoid(ctx, ctx.need(0), float(ctx.attr("alpha", 0.2)),
                         float(ctx.attr("beta", 0.5)))


@converter("HardSwish", since=14)
def hard_swish(ctx: NodeContext) -> Expr:
    x = ctx.need(0)
    return ctx.call("multiply", x, _hard_sigmoid(ctx, x, 1.0 / 6.0, 0.5))


def _softplus(ctx: NodeContext, x: Expr) -> Expr:
    # log(1 + exp(x)) = relu(x) + log(1 + exp(-|x|)): no overflow for large |x|
    tail = ctx.call("log", ctx.call("add", ctx.scalar(1),
                                    ctx.call("exp", ctx.call("negative", ctx.call("abs", x)))))
    return ctx.call("add", ctx.call("nn.relu", x), tail)


@converter("Softplus")
def softplus(ctx: NodeContext) -> Expr:
    return _softplus(ctx, ctx.need(0))


@converter("Softsign")
def softsign(ctx: NodeContext) -> Expr:
    x = ctx.need(0)
    return ctx.call("divide", x, ctx.call("add", ctx.scalar(1), ctx.call("abs", x)))


@converter("Mish", since=18)
def mish(ctx: NodeContext) -> Expr:
    x = ctx.need(0)
    return ctx.call("multiply", x, ctx.call("tanh", _softplus(ctx, x)))


@converter("Gelu", since=20, check=lambda ctx: [] if ctx.attr("approximate", "none") in (
    "none", "tanh") else [f"approximate={ctx.attr('approximate')!r}"])
def gelu(ctx: NodeContext) -> Expr:
    """``none``: 0.5 x (1 + erf(x / sqrt 2)); ``tanh``: 0.5 x (1 + tanh(sqrt(2 / pi)
    (x + 0.044715 x^3)))."""
    x = ctx.need(0)
    if ctx.attr("approximate", "none") == "tanh":
        cube = ctx.call("multiply", ctx.call("multiply", x, x), x)
        inner = ctx.call("add", x, ctx.call("multiply", ctx.scalar(0.044715), cube))
        t = ctx.call("tanh", ctx.call("multiply", ctx.scalar(math.sqrt(2 / math.pi)), inner))
    else:
        t = ctx.call("erf", ctx.call("multiply", x, ctx.scalar(1 / math.sqrt(2))))
    half_x = ctx.call("multiply", ctx.scalar(0.5), x)
    return ctx.call("multiply", half_x, ctx.call("add", ctx.scalar(1), t))


@converter("Shrink", since=9)
def shrink(ctx: NodeContext) -> Expr:
    # x < -lambd ? x + bias : x > lambd ? x - bias : 0
    x = ctx.need(0)
    lambd, bias = float(ctx.attr("lambd", 0.5)), float(ctx.attr("bias", 0.0))
    low = ctx.call("where", ctx.call("less", x, ctx.scalar(-lambd)),
                   ctx.call("add", x, ctx.scalar(bias)), ctx.scalar(0))
    return ctx.call("where", ctx.call("greater", x, ctx.scalar(lambd)),
                    ctx.call("subtract", x, ctx.scalar(bias)), low)


# -- clip ---------------------------------------------------------------------------------

def _clip(ctx: NodeContext, lo: object, hi: object) -> Expr:
    x = ctx.need(0)
    dtype = np.dtype(ctx.dtype(0))
    if dtype.kind == "f":
        lo = -math.inf if lo is None else lo
        hi = math.inf if hi is None else hi
    else:
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        lo = (info.min if info else 0) if lo is None else lo
        hi = (info.max if info else 1) if hi is None else hi
    if lo > hi:  # type: ignore[operator]  # ONNX (NumPy's clip): max everywhere
        lo = hi
    if dtype.kind == "f" or abs(float(lo)) < 2**53 and abs(float(hi)) < 2**53:
        return ctx.call("clip", x, a_min=float(lo), a_max=float(hi))
    return ctx.call("minimum", ctx.call("maximum", x, ctx.scalar(lo)), ctx.scalar(hi))


@converter("Clip", since=6, until=10)
def clip_attrs(ctx: NodeContext) -> Expr:
    """Clip-6: bounds are attributes ``min`` / ``max``."""
    return _clip(ctx, ctx.attr("min"), ctx.attr("max"))


@converter("Clip", since=11, static_inputs=(1, 2))
def clip_inputs(ctx: NodeContext) -> Expr:
    """From Clip-11 the bounds are optional inputs: a static bound becomes a ``clip``
    attribute, a computed one ``maximum`` / ``minimum``."""
    x, lo, hi = ctx.need(0), ctx.input(1), ctx.input(2)
    lo_v = None if lo is None else ctx.builder.static(lo)
    hi_v = None if hi is None else ctx.builder.static(hi)
    if (lo is None or lo_v is not None) and (hi is None or hi_v is not None):
        return _clip(ctx, None if lo_v is None else np.asarray(lo_v).item(),
                     None if hi_v is None else np.asarray(hi_v).item())
    if lo is not None:
        x = ctx.call("maximum", x, lo)
    if hi is not None:
        x = ctx.call("minimum", x, hi)
    return x


# -- matrix products ----------------------------------------------------------------------

@converter("Gemm", since=7)
def gemm(ctx: NodeContext) -> Expr:
    """``alpha * A' B' + beta * C``: ``nn.dense`` takes B as (N, K), so B is transposed
    only when ``transB`` is 0; C, when 1-d of length N, is a ``nn.bias_add``."""
    a, b, c = ctx.need(0), ctx.need(1), ctx.input(2)
    if ctx.rank(0) != 2 or ctx.rank(1) != 2:
        raise ConvertError("A and B must be 2-d")
    if int(ctx.attr("transA", 0)):
        a = ctx.call("transpose", a, axes=[1, 0])
    if not int(ctx.attr("transB", 0)):
        b = ctx.call("transpose", b, axes=[1, 0])
    n = ctx.builder.tensor_type(b).shape[0]
    y = ctx.call("nn.dense", a, b, units=n if isinstance(n, int) else None)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if alpha != 1.0:
        y = ctx.call("multiply", y, ctx.scalar(alpha))
    if c is None or beta == 0.0:
        return y
    if beta != 1.0:
        c = ctx.call("multiply", c, ctx.scalar(beta))
    c_shape = ctx.builder.tensor_type(c).shape
    if len(c_shape) == 1 and c_shape[0] == n and n != 1:
        return ctx.call("nn.bias_add", y, c, axis=1)
    return ctx.call("add", y, c)


@converter("MatMul")
def matmul(ctx: NodeContext) -> Expr:
    """``numpy.matmul``: 2-d by 2-d is ``nn.matmul``; a 1-d operand gains a unit axis
    (dropped from the result); N-d by 2-d folds the leading axes into rows; otherwise the
    batch axes are broadcast (static) and a ``nn.batch_matmul`` runs on 3-d views."""
    a, b = ctx.need(0), ctx.need(1)
    sa, sb = ctx.shape(0), ctx.shape(1)
    if not sa or not sb:
        raise ConvertError("MatMul operands must have rank >= 1")
    drop = []
    if len(sa) == 1:
        a, sa = ctx.call("expand_dims", a, axis=0), (1, *sa)
        drop.append(-2)
    if len(sb) == 1:
        b, sb = ctx.call("expand_dims", b, axis=1), (*sb, 1)
        drop.append(-1)
    if len(sa) == 2 and len(sb) == 2:
        y = ctx.call("nn.matmul", a, b)
    elif len(sb) == 2:
        lead = list(sa[:-1])
        if sum(not isinstance(d, int) for d in lead) > 1:
            raise ConvertError("MatMul of an N-d tensor with several unknown dims")
        rows = ctx.call("reshape", a, newshape=[-1, _dim(sa[-1])])
        y = ctx.call("nn.matmul", rows, b)
        y = ctx.call("reshape", y, newshape=[d if isinstance(d, int) else -1 for d in lead]
                     + [_dim(sb[-1])])
    else:
        if not all(isinstance(d, int) for d in (*sa, *sb)):
            raise ConvertError("batched MatMul needs static shapes")
        batch = list(np.broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2])))
        nb = math.prod(batch)
        a3 = _batch_view(ctx, a, sa, batch, nb)
        b3 = _batch_view(ctx, b, sb, batch, nb)
        y = ctx.call("nn.batch_matmul", a3, b3, transpose_b=False)
        y = ctx.call("reshape", y, newshape=[*batch, sa[-2], sb[-1]])
    if drop:
        rank = len(ctx.builder.tensor_type(y).shape)
        y = ctx.call("squeeze", y, axis=sorted(d % rank for d in drop))
    return y


def _batch_view(ctx: NodeContext, x: Expr, shape: tuple, batch: list[int], nb: int) -> Expr:
    full = [*batch, shape[-2], shape[-1]]
    if list(shape) != full:
        x = ctx.call("broadcast_to", x, shape=full)
    return ctx.call("reshape", x, newshape=[nb, shape[-2], shape[-1]])


def _dim(d: object) -> int:
    if not isinstance(d, int):
        raise ConvertError("the contracted dims of MatMul must be static")
    return d
