"""Matrix products through NumPy's BLAS (OpenBLAS), called from Python, never from numba.

Why outside numba: ``np.dot`` inside ``@njit`` needs SciPy's BLAS, a second OpenBLAS thread
pool next to NumPy's (``shared/reference/performance.md`` section 3, lesson 6). NumPy's
``np.dot`` / ``np.matmul`` on float32/float64 reach the machine's GEMM peak and take ``out=``.

Contract of every function: float32 or float64 operands of one dtype (the caller checks);
``out``, when given, is C-contiguous, of the result's shape and dtype and overlaps no
operand; the result is written there and returned, else a fresh array is returned.
Transposed operands are passed as transposed *views*: BLAS reads them with its transpose
flag, nothing is copied.
"""

from __future__ import annotations

import numpy as np

Array = np.ndarray


def _rows(x: Array, k: int) -> Array:
    """``x`` (..., k) as a 2-d (rows, k) array: a view when x's layout allows it."""
    return x.reshape(-1, k)


def gemm(a: Array, b: Array, out: Array | None = None) -> Array:
    """``a @ b`` of 2-d operands (either may be a transposed view), into ``out`` (M, N) when
    given. Every GEMM of the CPU kernels goes through here, so that the executor's thread
    policy (``relay_ref.compute.cpu.parallel``) decides how it uses the cores."""
    if out is None:
        return np.dot(a, b)
    np.dot(a, b, out=out)
    return out


def dense(x: Array, w: Array, out: Array | None = None) -> Array:
    """``x @ w.T``: x (..., K), w (N, K) -> (..., N); one GEMM (GEMV for one row) over
    every leading axis of ``x`` at once."""
    k, n = w.shape[1], w.shape[0]
    shape = x.shape[:-1] + (n,)
    if out is None:
        out = np.empty(shape, x.dtype)
    if x.ndim == 1:
        np.dot(w, x, out=out)
    else:
        np.dot(_rows(x, k), w.T, out=out.reshape(-1, n))
    return out


def matmul(a: Array, b: Array, transpose_a: bool, transpose_b: bool,
           out: Array | None = None) -> Array:
    """``op(a) @ op(b)`` with ``b`` 2-d: a (..., K) [(..., K, M) when transposed], b (K, N)
    [(N, K) when transposed] -> (..., N)."""
    bm = b.T if transpose_b else b
    if transpose_a:
        am = np.swapaxes(a, -1, -2)
        if out is None:
            return np.matmul(am, bm)
        return np.matmul(am, bm, out=out)
    k, n = bm.shape
    shape = a.shape[:-1] + (n,)
    if out is None:
        out = np.empty(shape, a.dtype)
    if a.ndim == 1:
        np.dot(a, bm, out=out)
    else:
        np.dot(_rows(a, k), bm, out=out.reshape(-1, n))
    return out


def batch_matmul(x: Array, y: Array, transpose_a: bool, transpose_b: bool,
                 out: Array | None = None) -> Array:
    """Batched ``op(x) @ op(y)`` of 3-d operands (a batch of 1 broadcasts); one GEMM per
    batch entry (``np.matmul``), or a single GEMM when ``y``'s batch is 1 and ``x`` is not
    transposed (the batch folds into the rows)."""
    xm = np.swapaxes(x, -1, -2) if transpose_a else x
    ym = np.swapaxes(y, -1, -2) if transpose_b else y
    if y.shape[0] == 1 and not transpose_a and x.shape[0] > 1:
        b, m, k = xm.shape
        n = ym.shape[2]
        if out is None:
            out = np.empty((b, m, n), x.dtype)
        np.dot(_rows(xm, k), ym[0], out=out.reshape(-1, n))
        return out
    if out is None:
        return np.matmul(xm, ym)
    return np.matmul(xm, ym, out=out)
