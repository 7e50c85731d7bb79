"""Softmax, log-softmax and layer norm over serial numba row kernels (float32 / float64).

Shapes are collapsed by the caller: a reduction over one axis of a C-contiguous array is a
2-d ``(rows, n)`` problem when the axis is the last one, else a 3-d ``(outer, n, inner)``
one (the reduced axis in the middle, ``inner`` contiguous). Every kernel writes ``out``
(C-contiguous, the input's shape and dtype, overlapping no input) and reads its inputs only.

Numerics (invariants the tests check against the NumPy references):

* softmax / log-softmax subtract the row maximum first, so no finite row overflows; a row
  holding NaN or ``+inf`` yields NaN throughout, as the reference does; ``-inf`` entries give
  0 (softmax) and ``-inf`` (log-softmax).
* ``FAST`` is ``fastmath`` without ``nnan``/``ninf``: sums may be reassociated (vectorised)
  but infinities and NaN keep their IEEE meaning. A NaN the row maximum misses still
  reaches the sum and poisons the row.
* float32 ``exp`` is ``exp_f32``: Cephes' range reduction and degree-6 polynomial (about
  1 ulp), written so that LLVM vectorises it (libm's scalar ``expf`` does not: 3 ns per
  element, 10x slower than onnxruntime's MLAS on a 64 x 1000 softmax). float64 uses libm.
* layer norm accumulates the mean and the (biased, two-pass) variance in float64.

numba: ``cache=True``, no array expressions; each kernel has one specialisation per dtype.
No ``prange``: a ``prange`` over the rows of a 64 x 1000 softmax took 36 us against 27 us
serial (waking the passive OpenMP pool costs more than the work). The drivers
``softmax_rows`` / ``softmax_mid`` run the serial ``nogil`` block kernels, split into
``parallel.run_tasks`` tasks only when the work is large (``blocks``: the same compiled
kernel either way). The path never depends on the sizes: a new size must not compile
anything (``executor/jitstats.py``), so there is no NumPy path for small inputs.
"""

from __future__ import annotations

import math

import numpy as np

from relay_ref.compute import cpu  # noqa: F401  (threading policy before numba starts)
from relay_ref.compute.cpu import numba
from relay_ref.compute.cpu.blocks import run_blocks

njit = numba.njit
types = numba.core.types

#: fastmath flags that keep inf / NaN semantics (no ``nnan``, ``ninf``)
FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}  # a set: numba rejects frozenset

_LOG2E = 1.44269504088896341
_C1 = 0.693359375  # ln 2 split in two (Cephes): C1 + C2 == ln 2, C1 exact in 9 bits
_C2 = -2.12194440e-4


@numba.extending.intrinsic
def _bits_to_f32(typingctx, bits):  # type: ignore[no-untyped-def]
    """Reinterpret an int32 as the float32 with the same bits (a vectorisable bitcast)."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return sig, codegen


@njit(fastmath=FAST - {"reassoc"}, cache=True)  # reassoc would form s1 * s2 first
def exp_f32(v: float) -> float:
    """``exp(v)`` in float32 (|relative error| <= ~2 ulp; subnormal results rounded twice).

    ``v`` is clamped to [-104, 100]: below -104 the result rounds to 0 anyway, above 88.73
    it is ``inf`` either way (the clamp keeps the scale exponents in range). NaN stays NaN
    (``max``/``min`` keep a NaN first argument). No branches: LLVM vectorises callers."""
    v = min(max(np.float32(v), np.float32(-104.0)), np.float32(100.0))
    n = np.floor(v * np.float32(_LOG2E) + np.float32(0.5))  # float32 (math.floor: int64)
    r = v - n * np.float32(_C1) - n * np.float32(_C2)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r * r + r + np.float32(1.0)
    # 2**n as two normal powers of two (n is in [-150, 128]); NaN: the int is garbage,
    # but p is NaN already
    k = np.int32(n)
    k1 = k >> 1
    k2 = k - k1
    s1 = _bits_to_f32((k1 + np.int32(127)) << np.int32(23))
    s2 = _bits_to_f32((k2 + np.int32(127)) << np.int32(23))
    return p * s1 * s2


def _exp(v: float) -> float:
    """``exp`` for the kernels: ``exp_f32`` on float32, libm on float64 (overloaded)."""
    return math.exp(v)


@numba.extending.overload(_exp, jit_options={"fastmath": FAST})
def _exp_impl(v):  # type: ignore[no-untyped-def]
    if v == types.float32:
        return lambda v: exp_f32(v)
    return lambda v: math.exp(v)


@numba.extending.intrinsic
def _f32_to_bits(typingctx, value):  # type: ignore[no-untyped-def]
    """Reinterpret a float32 as the int32 with the same bits."""
    sig = types.int32(types.float32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.int32))

    return sig, codegen


@njit(cache=True)
def _order_key(bits):  # type: ignore[no-untyped-def]
    """float32 bits -> an int32 ordered as the floats are (flip the magnitude bits of the
    negatives); its own inverse. NaNs order above +inf (or below -inf when negative)."""
    # numba widens int32 arithmetic to int64: narrow back, so the max runs on 8 lanes
    return np.int32(bits ^ ((bits >> np.int32(31)) & np.int32(0x7FFFFFFF)))


def _row_max(x, i, n):  # type: ignore[no-untyped-def]
    """max of ``x[i, :n]`` (n >= 1); overloaded per dtype."""
    raise NotImplementedError  # pragma: no cover (numba only)


@numba.extending.overload(_row_max, jit_options={"fastmath": FAST})
def _row_max_impl(x, i, n):  # type: ignore[no-untyped-def]
    # LLVM does not vectorise a float max reduction (it wants the function-wide no-NaNs
    # attribute numba does not set) but does vectorise an int32 one: float32 rows are
    # reduced as order keys (4x faster). A NaN the maximum misses still reaches the sum and
    # poisons the row (module docstring), so NaN ordering does not matter.
    if x.dtype == types.float32:
        def impl(x, i, n):  # type: ignore[no-untyped-def]
            m = np.int32(-2147483648)
            for j in range(n):
                m = max(m, _order_key(_f32_to_bits(x[i, j])))
            return _bits_to_f32(_order_key(m))
        return impl

    def impl_any(x, i, n):  # type: ignore[no-untyped-def]
        m = x[i, 0]
        for j in range(1, n):
            m = max(m, x[i, j])
        return m
    return impl_any


@njit(cache=True)
def _shift_row(x, out, i, m, ls):  # type: ignore[no-untyped-def]
    """``out[i] = (x[i] - m) - ls``, in that order: no fastmath here, since ``reassoc``
    would compute ``x - (m + ls)``, and ``m + ls`` rounds ``ls`` to ``m``'s ulp (the
    log-probability of a row's maximum would lose every digit)."""
    for j in range(x.shape[1]):
        out[i, j] = (x[i, j] - m) - ls


@njit(cache=True)
def _shift_middle(x, out, o, m, ls):  # type: ignore[no-untyped-def]
    """``out[o, j] = (x[o, j] - m) - ls`` for every j (see ``_shift_row``)."""
    for j in range(x.shape[1]):
        for k in range(x.shape[2]):
            out[o, j, k] = (x[o, j, k] - m[k]) - ls[k]


@njit(fastmath=FAST, cache=True, nogil=True)
def rows_block(x, out, r0, r1, log):  # type: ignore[no-untyped-def]
    """Softmax (``log``: log-softmax) of the rows ``r0 <= i < r1`` of the 2-d ``x`` into
    ``out`` (serial; the row loop written out here: a nested ``@njit`` row function is one
    more compile pipeline on a cold start)."""
    n = x.shape[1]
    if n == 0:
        return
    for i in range(r0, r1):
        m = _row_max(x, i, n)
        s = np.float32(0.0)  # float32 rows sum in float32, float64 ones in float64
        if log:
            for j in range(n):
                s += _exp(x[i, j] - m)
            _shift_row(x, out, i, m, math.log(s))
        else:
            for j in range(n):
                e = _exp(x[i, j] - m)
                out[i, j] = e
                s += e
            r = np.float32(1.0) / s
            for j in range(n):
                out[i, j] *= r


@njit(fastmath=FAST, cache=True, nogil=True)
def mid_block(x, out, o0, o1, log):  # type: ignore[no-untyped-def]
    """Softmax (``log``: log-softmax) over axis 1 of the blocks ``o0 <= o < o1`` of the 3-d
    ``x`` (outer, n, inner), vectorised along the contiguous ``inner`` axis (serial)."""
    outer, n, inner = x.shape
    if n == 0:
        return
    m = np.empty(inner, x.dtype)
    s = np.empty(inner, x.dtype)
    for o in range(o0, o1):
        for k in range(inner):
            m[k] = x[o, 0, k]
        for j in range(1, n):
            for k in range(inner):
                m[k] = max(m[k], x[o, j, k])
        for k in range(inner):
            s[k] = 0.0
        for j in range(n):
            for k in range(inner):
                e = _exp(x[o, j, k] - m[k])
                s[k] += e
                if not log:
                    out[o, j, k] = e
        if log:
            for k in range(inner):
                s[k] = math.log(s[k])
            _shift_middle(x, out, o, m, s)
        else:
            for k in range(inner):
                s[k] = np.float32(1.0) / s[k]
            for j in range(n):
                for k in range(inner):
                    out[o, j, k] *= s[k]


def softmax_rows(x: np.ndarray, out: np.ndarray, log: bool) -> None:
    """Softmax (``log``: log-softmax) of each row of the 2-d ``x`` into ``out``."""
    rows, n = x.shape
    run_blocks(rows, n, lambda lo, hi: rows_block(x, out, lo, hi, log))


def softmax_mid(x: np.ndarray, out: np.ndarray, log: bool) -> None:
    """Softmax (``log``: log-softmax) over axis 1 of the 3-d ``x`` (outer, n, inner)."""
    outer = x.shape[0]
    run_blocks(outer, x.shape[1] * x.shape[2], lambda lo, hi: mid_block(x, out, lo, hi, log))


@njit(fastmath=FAST, cache=True)
def layer_norm_rows(x, gamma, beta, eps, center, scale, out):  # type: ignore[no-untyped-def]
    """Layer norm of each row of the 2-d ``x``: ``(x - mean) / sqrt(var + eps)``, times
    ``gamma`` when ``scale``, plus ``beta`` when ``center`` (both of length ``n``)."""
    rows, n = x.shape
    if n == 0:
        return
    for i in range(rows):
        total = 0.0
        for j in range(n):
            total += x[i, j]
        mean = total / n
        sq = 0.0
        for j in range(n):
            d = x[i, j] - mean
            sq += d * d
        inv = 1.0 / math.sqrt(sq / n + eps)
        for j in range(n):
            y = (x[i, j] - mean) * inv
            if scale:
                y *= gamma[j]
            if center:
                y += beta[j]
            out[i, j] = y
