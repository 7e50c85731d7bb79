"""Scalar templates of the elementwise and broadcast operators, for generated numba kernels.

A fused group of elementwise/broadcast operators (``relay_ref.executor.fused``) becomes one
generated numba loop; inside it each operator call is one *scalar* expression over the
scalar values of its arguments. This module is the table of those expressions, as data:
operator name -> per dtype kind (``f`` float32/float64, ``i`` signed integers, ``u``
unsigned integers, ``b`` bool) a ``Template``, a ``str.format`` pattern over

* ``{0}``, ``{1}``, ...: the arguments (plain variable names of the generated code, so a
  pattern may use one several times);
* ``{T}``: the constructor of the kind-deciding argument's dtype (``np.float32``);
* named literals computed from the call's attributes (``{alpha}``, ``{lo}``): a template's
  ``consts`` function gets the attributes as a plain mapping (this layer does not import
  the op registry: the caller reads the attrs dataclass).

``render`` adds the cast to the result dtype, so every intermediate value of the loop has
exactly the dtype the op's NumPy reference produces (numba computes ``int32 + int32`` in
int64; the cast wraps it back, as the reference wraps).

Semantics are those of ``relay_ref/ops/tensor.py`` and ``ops/nn.py`` (the references):

* integer ``divide``/``mod`` truncate (C), ``floor_divide``/``floor_mod`` floor (Python);
  a divisor of ``-1`` is special-cased (``INT_MIN // -1`` traps in hardware and wraps in
  NumPy); division by zero yields 0 in the helpers and sets the template's ``guard``, which
  the generated kernel turns into an error code (the reference raises ``OpRuntimeError``);
* float ``maximum``/``minimum``/``relu``/``clip`` propagate NaN (``_fmax``/``_fmin``; numba's
  ``max`` does not);
* shifts by a negative amount or by at least the bit width give 0 (``>>`` of a negative
  value: -1), as NumPy's ``left_shift``/``right_shift``;
* unary math (``exp``, ``floor``, ...) only on float dtypes: the references compute integers
  in float64 and cast back, not worth a kernel; such calls get no template (None).

Helpers are emitted as source text (``HELPERS``) into each generated file, so a kernel
file is self-contained and numba's cache key (the file's hash) covers everything it calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: dtypes a generated kernel computes in; anything else (float16, bfloat16) gets no kernel
KINDS: dict[str, str] = {
    "float32": "f", "float64": "f",
    "int8": "i", "int16": "i", "int32": "i", "int64": "i",
    "uint8": "u", "uint16": "u", "uint32": "u", "uint64": "u",
    "bool": "b",
}


@dataclass(frozen=True, slots=True)
class Template:
    """One scalar expression pattern (see the module docstring). ``guard``, when given, is a
    condition (same placeholders) under which the op fails at run time with ``error``."""

    expr: str
    helpers: tuple[str, ...] = ()
    guard: str | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class OpTemplates:
    """An operator's templates by dtype kind. ``kind_of``: the argument whose dtype picks the
    template (``where`` looks at ``x``, not the condition); ``consts(attrs, dtype)``: named
    literals for the pattern; ``check(attrs, arg_dtypes, out_dtype)``: False refuses."""

    by_kind: Mapping[str, Template]
    kind_of: int = 0
    consts: Callable[[Mapping[str, object], str], dict[str, str]] | None = None
    check: Callable[[Mapping[str, object], Sequence[str], str], bool] | None = None


@dataclass(frozen=True, slots=True)
class ScalarCode:
    """A rendered scalar expression, already of the result dtype; ``guard``/``error`` as in
    ``Template`` with the arguments filled in."""

    expr: str
    helpers: tuple[str, ...]
    guard: str | None
    error: str


def literal(value: object, dtype: str) -> str:
    """Source text of ``value`` as a numba scalar of exactly ``dtype`` (Python literals
    would be int64/float64 and widen the arithmetic around them)."""
    if dtype == "bool":
        return "True" if bool(value) else "False"
    if KINDS[dtype] == "f":
        v = float(value)  # type: ignore[arg-type]
        if math.isnan(v):
            text = "np.nan"
        elif math.isinf(v):
            text = "np.inf" if v > 0 else "-np.inf"
        else:
            text = repr(v)  # repr round-trips the float64; np.float32() then rounds as NumPy
        return f"np.{dtype}({text})"
    v = int(value)  # type: ignore[call-overload]
    if v == -(2 ** 63):  # "-9223372036854775808" would be the negation of a uint64 literal
        return "(np.int64(-9223372036854775807) - np.int64(1))"
    return f"np.{dtype}({v})"


def cast_bound(value: float, dtype: str) -> object:
    """A clip bound converted to ``dtype`` as ``ops.tensor._bound`` does (saturating)."""
    np_dtype = np.dtype(dtype)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return int(np.trunc(min(max(value, info.min), info.max)))
    return np_dtype.type(value)


# -- helpers (numba source, emitted into each kernel file that uses them) ---------------------

_JIT = '@numba.njit(cache=True, error_model="numpy")'

HELPERS: dict[str, str] = {
    # NaN-propagating max/min (np.maximum/np.minimum): a select, not a branch
    "_fmax": f"{_JIT}\ndef _fmax(a, b):\n    return a if (a > b or a != a) else b\n",
    "_fmin": f"{_JIT}\ndef _fmin(a, b):\n    return a if (a < b or a != a) else b\n",
    # signed truncated division / remainder (C), b == 0 -> 0 (the guard reports it)
    "_tdiv": f"""{_JIT}
def _tdiv(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    q = a // b
    if q * b != a and (a < 0) != (b < 0):
        q += 1
    return q
""",
    "_tmod": f"""{_JIT}
def _tmod(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r
""",
    # signed floor division / remainder (Python)
    "_fdiv": f"""{_JIT}
def _fdiv(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b
""",
    "_fmod": f"""{_JIT}
def _fmod(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b
""",
    # unsigned: truncation is flooring
    "_udiv": f"""{_JIT}
def _udiv(a, b):
    if b == 0:
        return a - a
    return a // b
""",
    "_umod": f"""{_JIT}
def _umod(a, b):
    if b == 0:
        return a - a
    return a % b
""",
    # signed integer power by squaring in int64 (wraps as NumPy's); b < 0 -> 1 (guarded)
    "_ipow": f"""{_JIT}
def _ipow(a, b):
    r = np.int64(1)
    x = np.int64(a)
    e = np.int64(b)
    while e > 0:
        if e & 1:
            r *= x
        x *= x
        e >>= 1
    return r
""",
    # shifts as NumPy's npy_lshift / npy_rshift: out-of-range amounts saturate
    "_shl": f"""{_JIT}
def _shl(a, b, bits):
    if b < 0 or b >= bits:
        return a - a
    return a << b
""",
    "_shr": f"""{_JIT}
def _shr(a, b, bits):
    if b < 0 or b >= bits:
        return a - a - 1 if a < 0 else a - a
    return a >> b
""",
}


# -- the table -------------------------------------------------------------------------------

def _t(expr: str, *helpers: str, guard: str | None = None, error: str = "") -> Template:
    return Template(expr, tuple(helpers), guard, error)


def _same(expr: str, kinds: str = "fiu", *helpers: str) -> OpTemplates:
    """One pattern for every kind in ``kinds``."""
    return OpTemplates({k: _t(expr, *helpers) for k in kinds})


def _float(expr: str, *helpers: str) -> OpTemplates:
    return OpTemplates({"f": _t(expr, *helpers)})


_ZERO = "integer division by zero"
_FLOAT_MAX = _t("_fmax({0}, {1})", "_fmax")
_FLOAT_MIN = _t("_fmin({0}, {1})", "_fmin")


def _bits(attrs: Mapping[str, object], dtype: str) -> dict[str, str]:
    return {"bits": str(np.dtype(dtype).itemsize * 8)}


def _alpha(attrs: Mapping[str, object], dtype: str) -> dict[str, str]:
    return {"alpha": literal(attrs["alpha"], dtype)}


def _clip_bounds(attrs: Mapping[str, object], dtype: str) -> dict[str, str]:
    return {"lo": literal(cast_bound(attrs["a_min"], dtype), dtype),  # type: ignore[arg-type]
            "hi": literal(cast_bound(attrs["a_max"], dtype), dtype)}  # type: ignore[arg-type]


_SHIFTS = {k: (_t("_shl({0}, {1}, {bits})", "_shl"), _t("_shr({0}, {1}, {bits})", "_shr"))
           for k in "iu"}

TEMPLATES: dict[str, OpTemplates] = {
    # arithmetic (bool arithmetic is NumPy's logical or/and or an error: no kernel)
    "add": _same("{0} + {1}"),
    "subtract": _same("{0} - {1}"),
    "multiply": _same("{0} * {1}"),
    "nn.bias_add": _same("{0} + {1}"),
    "divide": OpTemplates({
        "f": _t("{0} / {1}"),
        "i": _t("_tdiv({0}, {1})", "_tdiv", guard="{1} == 0", error=_ZERO),
        "u": _t("_udiv({0}, {1})", "_udiv", guard="{1} == 0", error=_ZERO)}),
    "floor_divide": OpTemplates({
        "f": _t("np.floor({0} / {1})"),
        "i": _t("_fdiv({0}, {1})", "_fdiv", guard="{1} == 0", error=_ZERO),
        "u": _t("_udiv({0}, {1})", "_udiv", guard="{1} == 0", error=_ZERO)}),
    "mod": OpTemplates({
        "f": _t("np.fmod({0}, {1})"),
        "i": _t("_tmod({0}, {1})", "_tmod", guard="{1} == 0", error=_ZERO),
        "u": _t("_umod({0}, {1})", "_umod", guard="{1} == 0", error=_ZERO)}),
    "floor_mod": OpTemplates({
        "f": _t("{0} - np.floor({0} / {1}) * {1}"),
        "i": _t("_fmod({0}, {1})", "_fmod", guard="{1} == 0", error=_ZERO),
        "u": _t("_umod({0}, {1})", "_umod", guard="{1} == 0", error=_ZERO)}),
    "power": OpTemplates({
        "f": _t("np.power({0}, {1})"),
        "i": _t("_ipow({0}, {1})", "_ipow", guard="{1} < 0",
                error="integers to negative integer powers are not supported")}),
    "maximum": OpTemplates({"f": _FLOAT_MAX, "i": _t("max({0}, {1})"),
                            "u": _t("max({0}, {1})")}),
    "minimum": OpTemplates({"f": _FLOAT_MIN, "i": _t("min({0}, {1})"),
                            "u": _t("min({0}, {1})")}),
    # comparisons (bool results) and logical ops (results of the lhs dtype)
    "equal": _same("{0} == {1}", "fiub"),
    "not_equal": _same("{0} != {1}", "fiub"),
    "less": _same("{0} < {1}", "fiub"),
    "less_equal": _same("{0} <= {1}", "fiub"),
    "greater": _same("{0} > {1}", "fiub"),
    "greater_equal": _same("{0} >= {1}", "fiub"),
    "logical_and": _same("({0} != 0) & ({1} != 0)", "fiub"),
    "logical_or": _same("({0} != 0) | ({1} != 0)", "fiub"),
    "logical_xor": _same("({0} != 0) != ({1} != 0)", "fiub"),
    "logical_not": _same("{0} == 0", "fiub"),
    "bitwise_and": _same("{0} & {1}", "iub"),
    "bitwise_or": _same("{0} | {1}", "iub"),
    "bitwise_xor": _same("{0} ^ {1}", "iub"),
    "bitwise_not": OpTemplates({"i": _t("~{0}"), "u": _t("~{0}"), "b": _t("not {0}")}),
    "left_shift": OpTemplates({k: s[0] for k, s in _SHIFTS.items()}, consts=_bits),
    "right_shift": OpTemplates({k: s[1] for k, s in _SHIFTS.items()}, consts=_bits),
    # unary
    "negative": OpTemplates({"f": _t("-{0}"), "i": _t("-{0}"), "u": _t("{T}(0) - {0}")}),
    "abs": OpTemplates({"f": _t("np.abs({0})"), "i": _t("abs({0})"), "u": _t("{0}")}),
    "sign": OpTemplates({"f": _t("np.sign({0})"), "i": _t("np.sign({0})"),
                         "u": _t("{0} != 0")}),
    "copy": _same("{0}", "fiub"),
    "exp": _float("np.exp({0})"),
    "fast_exp": _float("np.exp({0})"),
    "log": _float("np.log({0})"),
    "log2": _float("np.log2({0})"),
    "log10": _float("np.log10({0})"),
    "sqrt": _float("np.sqrt({0})"),
    "rsqrt": _float("{T}(1) / np.sqrt({0})"),
    "sigmoid": _float("{T}(1) / ({T}(1) + np.exp(-{0}))"),
    "tanh": _float("np.tanh({0})"),
    "fast_tanh": _float("np.tanh({0})"),
    "erf": _float("math.erf({0})"),
    "fast_erf": _float("math.erf({0})"),
    "sin": _float("np.sin({0})"),
    "cos": _float("np.cos({0})"),
    "tan": _float("np.tan({0})"),
    "asin": _float("np.arcsin({0})"),
    "acos": _float("np.arccos({0})"),
    "atan": _float("np.arctan({0})"),
    "sinh": _float("np.sinh({0})"),
    "cosh": _float("np.cosh({0})"),
    "asinh": _float("np.arcsinh({0})"),
    "acosh": _float("np.arccosh({0})"),
    "atanh": _float("np.arctanh({0})"),
    "floor": _float("np.floor({0})"),
    "ceil": _float("np.ceil({0})"),
    "trunc": _float("np.trunc({0})"),
    "round": _float("np.rint({0})"),  # ties to even, as np.round
    "isnan": _float("np.isnan({0})"),
    "isinf": _float("np.isinf({0})"),
    "isfinite": _float("np.isfinite({0})"),
    # activations
    "nn.relu": OpTemplates({"f": _t("_fmax({0}, {T}(0))", "_fmax"),
                            "i": _t("max({0}, {T}(0))"), "u": _t("{0}")}),
    "nn.leaky_relu": OpTemplates({"f": _t("{0} if {0} > {T}(0) else {0} * {alpha}")},
                                 consts=_alpha),
    "nn.prelu": _float("{0} if {0} > {T}(0) else {0} * {1}"),
    "clip": OpTemplates({"f": _t("_fmax(_fmin({0}, {hi}), {lo})", "_fmax", "_fmin"),
                         "i": _t("max(min({0}, {hi}), {lo})"),
                         "u": _t("max(min({0}, {hi}), {lo})")}, consts=_clip_bounds),
    # selection and fills
    "where": OpTemplates({k: _t("{1} if {0} else {2}") for k in "fiub"}, kind_of=1),
    "zeros_like": _same("{T}(0)", "fiu"),
    "ones_like": _same("{T}(1)", "fiu"),
}

#: result-dtype conversions, rendered by ``render`` from the result dtype
_CASTS = frozenset({"cast", "cast_like", "full_like"})


def supports(op: str) -> bool:
    """True when ``op`` has a scalar template (for some dtypes)."""
    return op in TEMPLATES or op in _CASTS


def render(op: str, args: Sequence[str], arg_dtypes: Sequence[str], out_dtype: str,
           attrs: Mapping[str, object], table: Mapping[str, OpTemplates] | None = None
           ) -> ScalarCode | None:
    """The scalar expression of ``op`` applied to ``args`` (variable names of the dtypes
    ``arg_dtypes``), converted to ``out_dtype``; None when there is no template for these
    dtypes (the caller then runs the op some other way). ``table``: another template table
    (the CUDA one, ``relay_ref.compute.cuda.scalar``; its patterns may also use ``{t}``, the
    dtype's name); default ``TEMPLATES``."""
    if out_dtype not in KINDS or any(d not in KINDS for d in arg_dtypes):
        return None
    if op in _CASTS:
        # cast/cast_like convert arg 0; full_like converts its scalar fill value (arg 1)
        src = args[1] if op == "full_like" else args[0]
        src_dtype = arg_dtypes[1] if op == "full_like" else arg_dtypes[0]
        if KINDS[src_dtype] == "f" and KINDS[out_dtype] == "u":
            # float -> unsigned through int64, as NumPy's cast does on this machine (the
            # direct conversion saturates in numba where NumPy wraps negative values)
            src = f"np.int64({src})"
        return ScalarCode(_convert(src, out_dtype), (), None, "")
    entry = (TEMPLATES if table is None else table).get(op)
    if entry is None or entry.kind_of >= len(arg_dtypes):
        return None
    dtype = arg_dtypes[entry.kind_of]
    tmpl = entry.by_kind.get(KINDS[dtype])
    if tmpl is None or (entry.check is not None and not entry.check(attrs, arg_dtypes,
                                                                     out_dtype)):
        return None
    names = {"T": f"np.{dtype}" if dtype != "bool" else "np.bool_", "t": dtype}
    if entry.consts is not None:
        names.update(entry.consts(attrs, dtype))
    expr = _convert(f"({tmpl.expr.format(*args, **names)})", out_dtype, exact=True)
    guard = tmpl.guard.format(*args, **names) if tmpl.guard else None
    return ScalarCode(expr, tmpl.helpers, guard, tmpl.error)


def _convert(expr: str, dtype: str, *, exact: bool = False) -> str:
    """``expr`` converted to ``dtype``: nonzero for bool (``exact``: the expression already
    yields a bool or a 0/1 value of the right meaning), wrapping/truncating otherwise."""
    if dtype == "bool":
        return expr if exact else f"({expr} != 0)"
    return f"np.{dtype}({expr})"
