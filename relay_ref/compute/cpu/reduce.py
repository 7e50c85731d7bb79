"""Reductions: numba float sums where they measured faster than NumPy, NumPy elsewhere.

Measured on the 2-core box (float32): NumPy's pairwise ``add.reduce`` sums 64 rows of 3136
in 41 us, the numba row kernel below in 15 us (float64 accumulators; 8 us in float32); a
1 x 1000 sum costs 1.5 us in NumPy and 0.25 us here. ``maximum.reduce`` / ``minimum.reduce``
are already SIMD in NumPy (15 us for the same rows) and stay there.

Shapes: a float reduction over one *run* of consecutive axes [a, b) of a C-contiguous array
is a view ``(outer, r, inner)``; ``inner == 1`` is a row sum, else a sum over the middle
axis vectorised along ``inner``. Any other axis set goes to NumPy. The kernels are serial
and ``nogil`` over a range of ``outer`` (one specialisation per dtype); large sums run them
over blocks as ``parallel.run_tasks`` tasks (``blocks``). The path never depends on the
sizes (beyond emptiness): a new size must not compile anything (``executor/jitstats.py``).

Contract: ``axes`` are normalised (non-negative, sorted, distinct); ``out``, when given, is
C-contiguous and of the result's shape and dtype, and is returned; results keep the
input's dtype (the references' rule: integer sums wrap in the input dtype).
"""

from __future__ import annotations

import numpy as np

from relay_ref.compute import cpu  # noqa: F401  (threading policy before numba starts)
from relay_ref.compute.cpu import numba
from relay_ref.compute.cpu.blocks import run_blocks

Array = np.ndarray
njit = numba.njit

#: fastmath without ``nnan``/``ninf``: sums vectorise, inf and NaN keep their meaning
FAST = {"nsz", "arcp", "contract", "afn", "reassoc"}


@njit(fastmath=FAST, cache=True, nogil=True)
def sum_rows(x, out, r0, r1):  # type: ignore[no-untyped-def]
    """``out[i] = sum(x[i, :])`` for the rows ``r0 <= i < r1`` of the 2-d ``x``, accumulated
    in float64 (serial)."""
    for i in range(r0, r1):
        s = 0.0
        for j in range(x.shape[1]):
            s += x[i, j]
        out[i] = s


@njit(fastmath=FAST, cache=True, nogil=True)
def sum_middle(x, out, o0, o1):  # type: ignore[no-untyped-def]
    """``out[o, k] = sum(x[o, :, k])`` for ``o0 <= o < o1`` of the 3-d ``x`` (in the input
    dtype; serial)."""
    r, inner = x.shape[1], x.shape[2]
    for o in range(o0, o1):
        for k in range(inner):
            out[o, k] = 0.0
        for j in range(r):
            for k in range(inner):
                out[o, k] += x[o, j, k]


def _shape(x: Array, axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _run(x: Array, axes: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(outer, r, inner) when the numba sums apply to ``x`` over ``axes``, else None."""
    if (x.dtype.kind != "f" or x.dtype.itemsize < 4 or not axes or x.size == 0
            or not x.flags.c_contiguous or axes[-1] - axes[0] != len(axes) - 1):
        return None
    a, b = axes[0], axes[-1] + 1
    outer = int(np.prod(x.shape[:a], dtype=np.int64))
    r = int(np.prod(x.shape[a:b], dtype=np.int64))
    return outer, r, x.size // (outer * r)


def reduce_sum(x: Array, axes: tuple[int, ...], keepdims: bool,
               out: Array | None = None) -> Array:
    """``sum`` over ``axes`` in x's dtype (as ``np.sum(x, axes, dtype=x.dtype)``)."""
    run = _run(x, axes)
    if run is None:
        with np.errstate(all="ignore"):
            res = np.add.reduce(x, axis=axes, dtype=x.dtype, keepdims=keepdims, out=out)
        return np.asarray(res)
    if out is None:
        out = np.empty(_shape(x, axes, keepdims), x.dtype)
    outer, r, inner = run
    kernel = sum_rows if inner == 1 else sum_middle
    x3, o2 = (x.reshape(outer, r), out.reshape(outer)) if inner == 1 else \
        (x.reshape(outer, r, inner), out.reshape(outer, inner))
    run_blocks(outer, r * inner, lambda lo, hi: kernel(x3, o2, lo, hi))
    return out


def reduce_mean(x: Array, axes: tuple[int, ...], keepdims: bool,
                out: Array | None = None) -> Array:
    """Float ``mean``: the sum divided by the count in x's dtype (the reference's order)."""
    total = reduce_sum(x, axes, keepdims, out)
    count = 1
    for a in axes:
        count *= x.shape[a]
    with np.errstate(all="ignore"):
        np.divide(total, x.dtype.type(count), out=total)
    return total


def reduce_max(x: Array, axes: tuple[int, ...], keepdims: bool,
               out: Array | None = None) -> Array:
    """``max`` over ``axes`` (non-empty extents; the caller checks)."""
    return np.asarray(np.maximum.reduce(x, axis=axes, keepdims=keepdims, out=out))


def reduce_min(x: Array, axes: tuple[int, ...], keepdims: bool,
               out: Array | None = None) -> Array:
    """``min`` over ``axes`` (non-empty extents; the caller checks)."""
    return np.asarray(np.minimum.reduce(x, axis=axes, keepdims=keepdims, out=out))
