"""Scalar fast paths of generated code: which operator calls on 0-d tensors run as Python
expressions, the code they run, and the interval reasoning that drops overflow checks.

Representation (executor/values.py states it for the whole executor): inside compiled code
a 0-d ``int32`` tensor is a Python ``int`` in ``[-2**31, 2**31)``, a 0-d ``bool`` tensor a
Python ``bool`` (or a NumPy ``bool_``); every other 0-d tensor is a NumPy scalar, as before.
Only one integer width can be a plain ``int``: the boundary conversions (``to_relay`` of an
ADT field, a reference's contents, a closure's captured value, an operator used as a value)
see a value without its static type, and a Python ``int`` always means ``int32`` there. A
value produced by a kernel (a 0-d ``int32`` array or ``np.int32``) may also stand for an
``int32``: every fast path below computes the same on both (NumPy wraps, Python's ``//``,
``%``, shifts and comparisons agree with NumPy's on in-range ``int32`` values, and the
helpers convert with ``int`` first).

Exactness (the references in ``relay_ref/ops/tensor.py``, TVM's semantics):

* ``add``/``subtract``/``multiply``/``negative``/``abs`` wrap to 32 bits as ``np.int32`` does:
  the Python result is exact, then ``wrap32`` reduces it modulo 2**32 into the signed range,
  only where the operands' intervals (``Interval``) do not prove it in range. The check
  compares against +-(2**30 - 1), a one-digit ``int`` (CPython 3.11 specialises comparisons
  of one-digit ints; ``2**31 - 1`` is two digits and is not): a false alarm only calls
  ``wrap32`` on a value it returns unchanged.
* ``divide``/``mod`` truncate toward zero (C), ``floor_divide``/``floor_mod`` round toward
  minus infinity; a zero divisor raises the reference's ``OpRuntimeError``; ``INT_MIN / -1``
  wraps to ``INT_MIN`` as NumPy's does.
* ``left_shift``/``right_shift`` by an amount outside ``[0, 32)`` give NumPy's answers (0,
  and 0 or -1 by the sign for the arithmetic right shift).
* comparisons give Python ``bool``; ``where`` selects without converting; ``cast`` between
  ``int32`` and ``bool`` only.

Floats stay NumPy scalars: Python floats are float64, and float32 rounding must stay exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import OpRuntimeError

__all__ = ["FULL", "I32_MAX", "I32_MIN", "HELPERS", "Fast", "Interval", "check_line",
           "fast_path", "is_int32", "narrow", "wrap32"]

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
#: the largest one-digit CPython int (30-bit digits): comparisons with it are specialised
SMALL = 2**30 - 1

Interval = tuple[int, int]
FULL: Interval = (I32_MIN, I32_MAX)


def wrap32(r: Any) -> int:
    """``r`` reduced into the signed 32-bit range (two's complement), as ``np.int32``
    arithmetic wraps."""
    r = int(r)
    return (r + 2147483648 & 4294967295) - 2147483648


def _nonzero(op: str, b: int) -> None:
    if b == 0:
        raise OpRuntimeError(f"{op}: integer division by zero")  # the reference's error


def tdiv32(a: Any, b: Any) -> int:
    """``divide`` on int32: truncation toward zero."""
    a, b = int(a), int(b)
    _nonzero("divide", b)
    q = a // b
    if q < 0 and q * b != a:  # floor is one below the truncated quotient
        q += 1
    return wrap32(q)


def tmod32(a: Any, b: Any) -> int:
    """``mod`` on int32: the truncated remainder (sign of ``a``)."""
    a, b = int(a), int(b)
    _nonzero("mod", b)
    r = a % b
    if r and (a < 0) != (b < 0):
        r -= b
    return r


def fdiv32(a: Any, b: Any) -> int:
    """``floor_divide`` on int32."""
    a, b = int(a), int(b)
    _nonzero("floor_divide", b)
    return wrap32(a // b)


def fmod32(a: Any, b: Any) -> int:
    """``floor_mod`` on int32 (sign of ``b``)."""
    a, b = int(a), int(b)
    _nonzero("floor_mod", b)
    return a % b


def shl32(a: Any, b: Any) -> int:
    """``left_shift`` on int32 (NumPy: 0 for a shift outside ``[0, 32)``)."""
    a, b = int(a), int(b)
    return wrap32(a << b) if 0 <= b < 32 else 0


def shr32(a: Any, b: Any) -> int:
    """``right_shift`` on int32, arithmetic (NumPy: the sign for a shift outside
    ``[0, 32)``)."""
    a, b = int(a), int(b)
    if 0 <= b < 32:
        return a >> b
    return -1 if a < 0 else 0


def tuple_arrays(t: tuple) -> tuple:
    """A tuple value with its Python int (int32) and bool fields, nested tuples' included,
    as 0-d arrays: what a fused group's kernels take when the group projects the fields of
    a tuple parameter itself (only int32 and bool 0-d values are Python scalars, so the
    dtype of each is known from its Python type)."""
    return tuple(np.asarray(v, np.bool_) if type(v) is bool else
                 np.asarray(v, np.int32) if type(v) is int else
                 tuple_arrays(v) if type(v) is tuple else v for v in t)


#: namespace entries the generated code refers to
HELPERS: dict[str, Callable[..., Any]] = {
    "_w32": wrap32, "_tdiv32": tdiv32, "_tmod32": tmod32, "_fdiv32": fdiv32,
    "_fmod32": fmod32, "_shl32": shl32, "_shr32": shr32, "_tuple_arrays": tuple_arrays}


@dataclass(frozen=True, slots=True)
class Fast:
    """A fast path: ``template`` formatted with the operands' atoms is the result;
    ``interval`` maps the operands' intervals to the exact (unwrapped) result's, for an
    ``int32`` result that may leave the range (None: the result needs no check)."""

    template: str
    interval: Callable[..., Interval] | None = None


def _add(a: Interval, b: Interval) -> Interval:
    return a[0] + b[0], a[1] + b[1]


def _sub(a: Interval, b: Interval) -> Interval:
    return a[0] - b[1], a[1] - b[0]


def _mul(a: Interval, b: Interval) -> Interval:
    ps = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(ps), max(ps)


def _neg(a: Interval) -> Interval:
    return -a[1], -a[0]


def _abs(a: Interval) -> Interval:
    lo = 0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1]))
    return lo, max(abs(a[0]), abs(a[1]))


_COMPARE = {"less": "<", "greater": ">", "less_equal": "<=", "greater_equal": ">=",
            "equal": "==", "not_equal": "!="}

_INT32: dict[str, Fast] = {
    "add": Fast("{0} + {1}", _add),
    "subtract": Fast("{0} - {1}", _sub),
    "multiply": Fast("{0} * {1}", _mul),
    "negative": Fast("-{0}", _neg),
    "abs": Fast("abs({0})", _abs),
    "divide": Fast("_tdiv32({0}, {1})"),
    "mod": Fast("_tmod32({0}, {1})"),
    "floor_divide": Fast("_fdiv32({0}, {1})"),
    "floor_mod": Fast("_fmod32({0}, {1})"),
    "maximum": Fast("({0} if {0} >= {1} else {1})"),
    "minimum": Fast("({0} if {0} <= {1} else {1})"),
    "bitwise_and": Fast("{0} & {1}"),
    "bitwise_or": Fast("{0} | {1}"),
    "bitwise_xor": Fast("{0} ^ {1}"),
    "bitwise_not": Fast("~{0}"),
    "left_shift": Fast("_shl32({0}, {1})"),
    "right_shift": Fast("_shr32({0}, {1})"),
    **{name: Fast(f"{{0}} {sym} {{1}}") for name, sym in _COMPARE.items()},
}

_BOOL: dict[str, Fast] = {
    "logical_and": Fast("{0} & {1}"), "logical_or": Fast("{0} | {1}"),
    "logical_xor": Fast("{0} ^ {1}"), "logical_not": Fast("not {0}"),
    "bitwise_and": Fast("{0} & {1}"), "bitwise_or": Fast("{0} | {1}"),
    "bitwise_xor": Fast("{0} ^ {1}"), "bitwise_not": Fast("not {0}"),
    **{name: Fast(f"{{0}} {sym} {{1}}") for name, sym in _COMPARE.items()},
}

#: other 0-d dtypes run as NumPy scalars: Python operators on them compute what the
#: reference does (same dtype, wrap-around, IEEE results under the executable's errstate)
_NUMPY: dict[str, Fast] = {
    "add": Fast("{0} + {1}"), "subtract": Fast("{0} - {1}"), "multiply": Fast("{0} * {1}"),
    **{name: Fast(f"{{0}} {sym} {{1}}") for name, sym in _COMPARE.items()},
}

_SCALAR_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                            "uint64", "float16", "float32", "float64", "bool"})


def is_int32(ty: Type | None) -> bool:
    """Whether a value of ``ty`` is a Python ``int`` in compiled code."""
    return type(ty) is TensorType and ty.shape == () and ty.dtype == "int32"


def _scalar(ty: Type | None) -> str | None:
    """The dtype of a 0-d tensor type compiled code holds as a scalar, else None."""
    if type(ty) is TensorType and ty.shape == () and ty.dtype in _SCALAR_DTYPES:
        return ty.dtype
    return None


def fast_path(name: str, attrs: Any, types: list[Type | None]) -> Fast | None:
    """The fast path of op ``name`` (attributes ``attrs``) on operands of ``types``, when
    a Python expression computes exactly what its reference computes; None otherwise."""
    dtypes = [_scalar(t) for t in types]
    if not dtypes or None in dtypes:
        return None
    if name == "where" and len(dtypes) == 3:
        if dtypes[0] == "bool" and dtypes[1] == dtypes[2]:
            return Fast("({1} if {0} else {2})")
        return None
    if name == "cast" and len(dtypes) == 1:
        to = getattr(attrs, "dtype", None)
        if to == dtypes[0] and to in ("int32", "bool"):
            return Fast("{0}")
        if dtypes[0] == "bool" and to == "int32":
            return Fast("int({0})")
        if dtypes[0] == "int32" and to == "bool":
            return Fast("{0} != 0")
        return None
    if len(dtypes) > 2 or any(d != dtypes[0] for d in dtypes):
        return None
    table = _INT32 if dtypes[0] == "int32" else _BOOL if dtypes[0] == "bool" else _NUMPY
    fast = table.get(name)
    if fast is None or ("{1}" in fast.template) != (len(dtypes) == 2):
        return None
    return fast


def check_line(atom: str, raw: Interval) -> str | None:
    """The wrap-around check for ``atom`` holding an exact result in ``raw`` (None when
    ``raw`` lies in the int32 range)."""
    hi, lo = raw[1] > I32_MAX, raw[0] < I32_MIN
    if hi and lo:
        return f"if not -{SMALL} <= {atom} <= {SMALL}: {atom} = _w32({atom})"
    if hi:
        return f"if {atom} > {SMALL}: {atom} = _w32({atom})"
    if lo:
        return f"if {atom} < -{SMALL}: {atom} = _w32({atom})"
    return None


def result_interval(raw: Interval) -> Interval:
    """The interval of a result after its check: ``raw`` when in range, else all int32."""
    return raw if raw[0] >= I32_MIN and raw[1] <= I32_MAX else FULL


def narrow(op: str, known: Interval, c: int, truth: bool) -> Interval:
    """The interval of ``x`` where ``x <op> c`` is ``truth`` (``known`` before)."""
    lo, hi = known
    if not truth:
        op = {"less": "greater_equal", "greater_equal": "less", "greater": "less_equal",
              "less_equal": "greater", "equal": "not_equal", "not_equal": "equal"}[op]
    if op == "less":
        hi = min(hi, c - 1)
    elif op == "less_equal":
        hi = min(hi, c)
    elif op == "greater":
        lo = max(lo, c + 1)
    elif op == "greater_equal":
        lo = max(lo, c)
    elif op == "equal" and lo <= c <= hi:
        lo = hi = c
    return (lo, hi) if lo <= hi else known  # an empty branch: nothing to learn


#: ``c <op> x`` is ``x <mirror> c``
MIRROR = {"less": "greater", "greater": "less", "less_equal": "greater_equal",
          "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}
COMPARISONS = frozenset(_COMPARE)
