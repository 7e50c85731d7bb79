"""Elementwise operators: binary arithmetic, comparisons, logical and bitwise ops, unary math.

Semantics follow TVM (``src/relay/op/tensor/{binary,unary}.cc`` and TOPI):

* Every result keeps the input dtype (float32 stays float32; int32 wraps on overflow);
  comparisons and ``isnan``/``isinf``/``isfinite`` return ``bool``.
* ``divide`` on integers truncates toward zero and ``mod`` is the truncated remainder (sign
  of the dividend), as in C; ``floor_divide``/``floor_mod`` round toward minus infinity. On
  floats ``floor_divide(a, b) = floor(a / b)`` and ``floor_mod(a, b) = a - floor(a / b) * b``
  (TVM's formulas), ``mod`` is ``fmod``. Integer division by zero raises ``OpRuntimeError``.
* Unary math on integer tensors computes in float64 and casts back (TVM would not compile it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relay_ref.ops.registry import AttrError, OpRuntimeError, register_op
from relay_ref.ops.relations import (
    as_dtype,
    broadcast_rel,
    identity_bool_rel,
    identity_rel,
    is_float,
    output_is_input,
)

try:  # scipy is optional at run time; erf falls back to math.erf
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover
    import math

    _erf = np.vectorize(math.erf, otypes=[np.float64])

Array = np.ndarray


@np.errstate(all="ignore")
def _quietly(fn: Callable[..., object], *args: Array) -> object:
    """``fn(*args)`` with IEEE warnings silenced (the decorator form of ``np.errstate`` is
    about twice as fast as the ``with`` form)."""
    return fn(*args)


def _guard(op: str, fn: Callable[..., object], *args: Array) -> object:
    """Run a NumPy computation with IEEE warnings silenced; NumPy type errors (e.g. ``-`` on
    bool) become ``OpRuntimeError``."""
    try:
        return _quietly(fn, *args)
    except (TypeError, ValueError) as err:
        raise OpRuntimeError(f"{op}: {err}") from None


def _check_nonzero(op: str, b: Array) -> None:
    if np.any(b == 0):
        raise OpRuntimeError(f"{op}: integer division by zero")


# -- division family (TVM truncdiv / truncmod / floordiv / floormod) ---------------------

def _divide(a: Array, b: Array) -> Array:
    if is_float(a.dtype.name):
        return np.true_divide(a, b)
    _check_nonzero("divide", b)
    r = np.fmod(a, b)  # exact: (a - r) is a multiple of b
    return np.floor_divide(a - r, b)


def _mod(a: Array, b: Array) -> Array:
    if not is_float(a.dtype.name):
        _check_nonzero("mod", b)
    return np.fmod(a, b)


def _floor_divide(a: Array, b: Array) -> Array:
    if is_float(a.dtype.name):
        return np.floor(np.true_divide(a, b))
    _check_nonzero("floor_divide", b)
    return np.floor_divide(a, b)


def _floor_mod(a: Array, b: Array) -> Array:
    if is_float(a.dtype.name):
        return a - np.floor(np.true_divide(a, b)) * b
    _check_nonzero("floor_mod", b)
    return np.remainder(a, b)


def _power(a: Array, b: Array) -> Array:
    if not is_float(a.dtype.name) and np.any(b < 0):
        raise OpRuntimeError("power: integers to negative integer powers are not supported")
    return np.power(a, b)


# -- dtype restrictions --------------------------------------------------------------

def _int_or_bool(dtype: str) -> str | None:
    if is_float(dtype):
        return f"expects integer or bool tensors, found {dtype}"
    return None


def _int_only(dtype: str) -> str | None:
    if is_float(dtype) or dtype == "bool":
        return f"expects integer tensors, found {dtype}"
    return None


# -- binary ops: name -> (numpy function, level, bool output?, dtype check, doc) -------------

_BINARY: dict[str, tuple[Callable[[Array, Array], object], int, bool,
                         Callable[[str], str | None] | None, str]] = {
    "add": (np.add, 1, False, None, "Elementwise ``lhs + rhs`` with broadcasting."),
    "subtract": (np.subtract, 1, False, None, "Elementwise ``lhs - rhs`` with broadcasting."),
    "multiply": (np.multiply, 1, False, None, "Elementwise ``lhs * rhs`` with broadcasting."),
    "divide": (_divide, 1, False, None,
               "Elementwise ``lhs / rhs``; integers truncate toward zero (C semantics)."),
    "mod": (_mod, 1, False, None,
            "Truncated remainder: the result has the sign of ``lhs`` (C ``fmod``/``%``)."),
    "floor_divide": (_floor_divide, 1, False, None,
                     "``floor(lhs / rhs)``: division rounding toward minus infinity."),
    "floor_mod": (_floor_mod, 1, False, None,
                  "``lhs - floor(lhs / rhs) * rhs``: the result has the sign of ``rhs``."),
    "power": (_power, 4, False, None, "Elementwise ``lhs ** rhs``."),
    "maximum": (np.maximum, 4, False, None, "Elementwise maximum."),
    "minimum": (np.minimum, 4, False, None, "Elementwise minimum."),
    "logical_and": (np.logical_and, 4, False, None, "Elementwise logical and."),
    "logical_or": (np.logical_or, 4, False, None, "Elementwise logical or."),
    "logical_xor": (np.logical_xor, 4, False, None, "Elementwise logical exclusive or."),
    "bitwise_and": (np.bitwise_and, 4, False, _int_or_bool, "Elementwise bitwise and."),
    "bitwise_or": (np.bitwise_or, 4, False, _int_or_bool, "Elementwise bitwise or."),
    "bitwise_xor": (np.bitwise_xor, 4, False, _int_or_bool, "Elementwise bitwise xor."),
    "left_shift": (np.left_shift, 4, False, _int_only, "Elementwise ``lhs << rhs``."),
    "right_shift": (np.right_shift, 4, False, _int_only,
                    "Elementwise ``lhs >> rhs`` (arithmetic for signed integers)."),
    "equal": (np.equal, 4, True, None, "Elementwise ``lhs == rhs``; bool result."),
    "not_equal": (np.not_equal, 4, True, None, "Elementwise ``lhs != rhs``; bool result."),
    "less": (np.less, 4, True, None, "Elementwise ``lhs < rhs``; bool result."),
    "less_equal": (np.less_equal, 4, True, None, "Elementwise ``lhs <= rhs``; bool result."),
    "greater": (np.greater, 4, True, None, "Elementwise ``lhs > rhs``; bool result."),
    "greater_equal": (np.greater_equal, 4, True, None,
                      "Elementwise ``lhs >= rhs``; bool result."),
}


#: Ufuncs that raise no IEEE flag on integer or bool inputs (they wrap silently), so the
#: scalar fast path below may call them without ``np.errstate``. Not the division family:
#: ``floor_divide(INT_MIN, -1)`` flags an overflow.
_FLAG_FREE_ON_INTEGERS = frozenset({
    np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or,
    np.logical_xor, np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.equal, np.not_equal,
    np.less, np.less_equal, np.greater, np.greater_equal,
})
_BOOL = np.dtype("bool")


def _binary_ref(op: str, fn: Callable[[Array, Array], object], to_bool: bool
                ) -> Callable[[list, object], Array]:
    fast = fn in _FLAG_FREE_ON_INTEGERS

    def ref(args: list, attrs: object) -> Array:
        a, b = args
        if (fast and type(a) is Array and type(b) is Array and a.dtype is b.dtype
                and a.dtype.kind in "biu"):
            # fast path (same semantics): integers and bools wrap without IEEE flags;
            # ``out=...`` makes NumPy return an ndarray, never a NumPy scalar
            try:
                out = fn(a, b, out=...)
            except TypeError as err:  # e.g. subtract on bool
                raise OpRuntimeError(f"{op}: {err}") from None
            want = _BOOL if to_bool else a.dtype
            return out if out.dtype is want else out.astype(want)
        a, b = np.asarray(a), np.asarray(b)
        out = _guard(op, fn, a, b)
        return as_dtype(out, "bool" if to_bool else a.dtype)
    return ref


for _name, (_fn, _level, _to_bool, _check, _doc) in _BINARY.items():
    _kind = "comparison" if _to_bool else "broadcast"
    register_op(
        _name, num_inputs=2, arg_names=("lhs", "rhs"), support_level=_level,
        relation=broadcast_rel(_name, "bool" if _to_bool else None, _check),
        reference=_binary_ref(_name, _fn, _to_bool),
        doc=f"{_doc}\n\nType relation: {_kind} (NumPy broadcasting; dtypes must match; "
            f"output dtype {'bool' if _to_bool else 'of lhs'}).",
    )


# -- unary ops ---------------------------------------------------------------------

def _sigmoid(x: Array) -> Array:
    return 1 / (1 + np.exp(-x))


def _rsqrt(x: Array) -> Array:
    return 1 / np.sqrt(x)


def _float_math(fn: Callable[[Array], object]) -> Callable[[Array], object]:
    """Float math that, on integer input, computes in float64 (cast back by the caller)."""
    def go(x: Array) -> object:
        if not is_float(x.dtype.name):
            x = x.astype(np.float64)
        return fn(x)
    return go


_UNARY_MATH: dict[str, tuple[Callable[[Array], object], str]] = {
    "exp": (np.exp, "``e ** x``."),
    "fast_exp": (np.exp, "``e ** x`` (TVM's approximation; exact here)."),
    "log": (np.log, "Natural logarithm."),
    "log2": (np.log2, "Base-2 logarithm."),
    "log10": (np.log10, "Base-10 logarithm."),
    "sqrt": (np.sqrt, "Square root."),
    "rsqrt": (_rsqrt, "``1 / sqrt(x)``."),
    "sigmoid": (_sigmoid, "``1 / (1 + exp(-x))``."),
    "tanh": (np.tanh, "Hyperbolic tangent."),
    "fast_tanh": (np.tanh, "Hyperbolic tangent (TVM's approximation; exact here)."),
    "erf": (_erf, "The error function."),
    "fast_erf": (_erf, "The error function (TVM's approximation; exact here)."),
    "sin": (np.sin, "Sine."),
    "cos": (np.cos, "Cosine."),
    "tan": (np.tan, "Tangent."),
    "asin": (np.arcsin, "Inverse sine."),
    "acos": (np.arccos, "Inverse cosine."),
    "atan": (np.arctan, "Inverse tangent."),
    "sinh": (np.sinh, "Hyperbolic sine."),
    "cosh": (np.cosh, "Hyperbolic cosine."),
    "asinh": (np.arcsinh, "Inverse hyperbolic sine."),
    "acosh": (np.arccosh, "Inverse hyperbolic cosine."),
    "atanh": (np.arctanh, "Inverse hyperbolic tangent."),
}

# level 3 unary ops that are exact on integers
_UNARY_EXACT: dict[str, tuple[Callable[[Array], object], str]] = {
    "abs": (np.abs, "Absolute value (wraps for the most negative integer)."),
    "negative": (np.negative, "``-x`` (integers wrap)."),
    "floor": (np.floor, "Round toward minus infinity."),
    "ceil": (np.ceil, "Round toward plus infinity."),
    "round": (np.round, "Round to the nearest integer, ties to even (LLVM ``nearbyint``)."),
    "trunc": (np.trunc, "Round toward zero."),
    "sign": (np.sign, "-1, 0 or 1 with the sign of ``x``."),
    "copy": (lambda x: np.array(x, copy=True), "A copy of ``x``."),
}


def plain_ufunc(op: str) -> tuple[np.ufunc, str] | None:
    """``(ufunc, kinds)`` when operator ``op`` computes exactly ``ufunc`` on arrays of one
    dtype whose kind is in ``kinds`` (``"f"`` float, ``"iu"`` integers), IEEE warnings
    aside: what the fast CPU kernels (``relay_ref/ops/cpu_elementwise.py``) call directly,
    without the reference's checks. None for every other op (the division family, power,
    the ones with attributes or dtype checks)."""
    entry = _BINARY.get(op)
    if entry is not None:
        fn, _, _, check, _ = entry
        if fn in (np.logical_and, np.logical_or, np.logical_xor):
            return fn, "b"  # on other dtypes the reference casts the bool result back
        if isinstance(fn, np.ufunc) and check is None:
            return fn, ("fiu" if fn in _FLAG_FREE_ON_INTEGERS else "f")
        return None
    unary = _UNARY_MATH.get(op)
    if unary is not None and isinstance(unary[0], np.ufunc):
        return unary[0], "f"  # integers compute in float64 then cast back: not plain
    return None


def _unary_ref(op: str, fn: Callable[[Array], object]) -> Callable[[list, object], Array]:
    def ref(args: list, attrs: object) -> Array:
        x = np.asarray(args[0])
        return as_dtype(_guard(op, fn, x), x.dtype)
    return ref


for _name, (_fn, _doc) in _UNARY_MATH.items():
    register_op(_name, num_inputs=1, arg_names=("data",), support_level=1,
                relation=identity_rel(_name),
                reference=_unary_ref(_name, _float_math(_fn)),
                doc=f"{_doc}\n\nType relation: identity.")

for _name, (_fn, _doc) in _UNARY_EXACT.items():
    register_op(_name, num_inputs=1, arg_names=("data",), support_level=3,
                relation=identity_rel(_name), reference=_unary_ref(_name, _fn),
                doc=f"{_doc}\n\nType relation: identity.")

register_op("logical_not", num_inputs=1, arg_names=("data",), support_level=4,
            relation=identity_rel("logical_not"),
            reference=_unary_ref("logical_not", np.logical_not),
            doc="Elementwise logical not (output dtype = input dtype).\n\n"
                "Type relation: identity.")


def _bitwise_not_rel(arg_types: list, attrs: object) -> object:
    from relay_ref.ops.registry import NOT_YET, RelationError
    out = identity_rel("bitwise_not")(arg_types, attrs)
    if out is not NOT_YET and is_float(out.dtype):  # type: ignore[union-attr]
        raise RelationError(f"bitwise_not: expects integer or bool tensors, "
                            f"found {out.dtype}")  # type: ignore[union-attr]
    return out


register_op("bitwise_not", num_inputs=1, arg_names=("data",), support_level=4,
            relation=_bitwise_not_rel, reference=_unary_ref("bitwise_not", np.invert),
            predicate=output_is_input(_bitwise_not_rel), relation_name="Identity",
            doc="Elementwise bitwise not.\n\nType relation: identity (integer or bool).")

for _name, _fn, _doc in (("isnan", np.isnan, "True where ``x`` is NaN."),
                         ("isinf", np.isinf, "True where ``x`` is +-infinity."),
                         ("isfinite", np.isfinite, "True where ``x`` is finite.")):
    register_op(_name, num_inputs=1, arg_names=("data",), support_level=3,
                relation=identity_bool_rel(_name),
                reference=(lambda fn: lambda args, attrs: as_dtype(fn(args[0]), "bool"))(_fn),
                doc=f"{_doc}\n\nType relation: same shape, bool output.")


# -- clip ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ClipAttrs:
    """``a_min <= a_max`` is not enforced (TVM computes ``max(min(x, a_max), a_min)``)."""

    a_min: float
    a_max: float

    def __post_init__(self) -> None:
        if np.isnan(self.a_min) or np.isnan(self.a_max):
            raise AttrError("clip bounds must not be NaN")


def _bound(value: float, dtype: np.dtype) -> object:
    """A clip bound converted to ``dtype`` as TVM's ``make_const`` does (saturating here)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return dtype.type(int(np.trunc(min(max(value, info.min), info.max))))
    if dtype == np.bool_:
        return np.bool_(value)
    return dtype.type(value)


def _clip_ref(args: list, attrs: ClipAttrs) -> Array:
    x = np.asarray(args[0])
    lo, hi = _bound(attrs.a_min, x.dtype), _bound(attrs.a_max, x.dtype)
    return as_dtype(np.maximum(np.minimum(x, hi), lo), x.dtype)


register_op("clip", attrs=ClipAttrs, num_inputs=1, arg_names=("data",), support_level=3,
            relation=identity_rel("clip"), reference=_clip_ref,
            doc="Clamp every element: ``max(min(x, a_max), a_min)``; bounds are converted to "
                "the input dtype.\n\nType relation: identity.")


# -- values that matter (the ``values`` aspect, attached by ``relay_ref.ops``) ---------------

from relay_ref.ops.registry import Values  # noqa: E402

_INF, _NAN = float("inf"), float("nan")
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
#: ties with signs (0 and -0), inf - inf and inf * 0 (NaN), NaN itself
_SPECIAL = (0.0, -0.0, _INF, -_INF, _NAN)
#: this family's ``values`` aspect: where rewrites of these ops go wrong
VALUES: dict[str, Values] = {}
for _name in ("add", "subtract", "multiply"):  # x - x, x * 0, x + 0, x * 1 with inf/nan;
    # overflow;
    # a per-channel operand of an NCHW image (a scale or shift folded into a convolution)
    VALUES[_name] = Values(floats=_SPECIAL + (1.0, -1.0, 1e38, -1e38, 3e38, 0.25, 0.75),
                           ints=(_I32_MAX, _I32_MIN, _I32_MAX - 1, -1, 0, 1),
                           args=(((1, 2, 4, 4), (2, 1, 1)), ((1, 2, 4, 4), (1, 2, 1, 1))))
for _name in ("divide", "mod", "floor_divide", "floor_mod"):  # signs, zero, INT_MIN / -1
    VALUES[_name] = Values(floats=_SPECIAL + (1.0, -7.0, 7.0, -3.0, 3.0, 1e-38),
                           ints=(0, 1, -1, -7, 7, -3, 3, _I32_MIN, _I32_MAX))
VALUES["power"] = Values(floats=(0.0, -0.0, -1.0, 0.5, -0.5, _INF, _NAN), ints=(0, -1, 31, 2))
for _name in ("maximum", "minimum"):  # unequal operands, ties, signed zeros, NaN
    VALUES[_name] = Values(floats=_SPECIAL + (-1.5, 1.5), ints=(_I32_MIN, _I32_MAX, 0, -1, 1))
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    VALUES[_name] = Values(floats=_SPECIAL, ints=(_I32_MIN, _I32_MAX))
for _name in ("sigmoid", "tanh", "fast_tanh", "exp", "fast_exp", "erf", "fast_erf"):
    VALUES[_name] = Values(floats=(-20.0, 20.0, -100.0, 100.0) + _SPECIAL)
for _name in ("log", "log2", "log10", "sqrt", "rsqrt"):  # the edge of the domain
    VALUES[_name] = Values(floats=(0.0, -0.0, -1.0, 1e-38, _INF, _NAN))
for _name in ("floor", "ceil", "round", "trunc", "sign", "abs", "negative"):
    VALUES[_name] = Values(floats=(-0.5, 0.5, -1.5, 1.5, 2.5, -2.5) + _SPECIAL,
                           ints=(_I32_MIN, _I32_MAX))
#: bounds that differ (the default table only has synthesised equal ones), and values
#: on both sides of each bound and on it
VALUES["clip"] = Values(floats=(-2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 6.0, 7.0, _INF, -_INF, _NAN),
                        ints=(-2, -1, 0, 1, 2, 6, 7),
                        attrs=({"a_min": -1.0, "a_max": 1.0}, {"a_min": 0.0, "a_max": 6.0}))
