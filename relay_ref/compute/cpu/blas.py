"""Matrix products through NumPy's BLAS (OpenBLAS), called from Python, never from numba,
split over the executor's work pool (``relay_ref.compute.cpu.parallel``).

Why outside numba: ``np.dot`` inside ``@njit`` needs SciPy's BLAS, a second OpenBLAS thread
pool next to NumPy's (``shared/reference/performance.md`` section 3, lesson 6). NumPy's
``np.dot`` / ``np.matmul`` on float32/float64 reach the machine's GEMM peak and take ``out=``.

Contract of every function: float32 or float64 operands of one dtype (the caller checks);
``out``, when given, is C-contiguous, of the result's shape and dtype and overlaps no
operand; the result is written there and returned, else a fresh array is returned.
Transposed operands are passed as transposed *views*: BLAS reads them with its transpose
flag, nothing is copied. Results equal ``np.dot``'s up to float rounding (a split product
sums each output element in one BLAS call, but the kernel a chunk gets may block K
differently).

Thread policy (issue 30): while an executable runs, BLAS itself runs on one thread
(``relay_ref.executor.threads``) and ``gemm`` splits a product of at least
``SPLIT_FLOPS`` into chunks taken dynamically by the pool's threads: a descheduled thread
then delays one chunk, not half the product (OpenBLAS's own split is static: with two busy
processes competing, a 64x576x3136 product went from 1.2 to 13 ms). The split is along the
larger of M (row blocks of ``a`` into contiguous row blocks of ``out``) and N (column
blocks of ``b`` into strided column blocks of ``out``, by ``np.matmul``, which writes
strided outputs in place), into about ``2 * threads`` chunks of at least ``_MIN_ROWS`` rows
or ``_MIN_COLS`` columns. With one thread, or below the threshold, it is one ``np.dot``.
"""

from __future__ import annotations

import numpy as np

from relay_ref.compute.cpu import parallel

Array = np.ndarray

#: products of fewer flops (2*M*K*N) run as one call: ~40 µs on one core, where the pool's
#: wake-up (~10-20 µs) would eat the gain
SPLIT_FLOPS = 4_000_000
_MIN_ROWS = 16  # rows of ``a`` per chunk (a multiple of 8: whole micro-kernel panels)
_MIN_COLS = 64  # columns of ``b`` per chunk (a multiple of 16)


def _bounds(size: int, chunks: int, align: int) -> list[int]:
    """``chunks + 1`` boundaries splitting ``range(size)`` into near-equal parts whose
    starts are multiples of ``align`` (fewer parts when ``size`` is small)."""
    step = -(-size // chunks)
    step = -(-step // align) * align
    bounds = list(range(0, size, step))
    bounds.append(size)
    return bounds


def _chunks(extent: int, minimum: int, threads: int) -> int:
    return max(1, min(2 * threads, extent // minimum))


def gemm(a: Array, b: Array, out: Array | None = None) -> Array:
    """``a @ b`` of a 2-d ``a`` (M, K) and a 2-d ``b`` (K, N) or 1-d ``b`` (K,) (either may
    be a transposed view), into ``out`` (M, N) / (M,) when given. Every GEMM of the CPU
    kernels goes through here, so that the executor's thread policy decides how it uses
    the cores (see the module docstring)."""
    if out is None:
        out = np.empty(a.shape[:1] + b.shape[1:], np.result_type(a, b))
    t = parallel.threads()
    m, k = a.shape
    n = b.shape[1] if b.ndim == 2 else 1
    if t == 1 or 2 * m * k * n < SPLIT_FLOPS or min(m, n) < 8:
        # (a GEMV, one row or column, is memory-bound: one core streams it as fast)
        np.dot(a, b, out=out)
        return out
    if m >= n or b.ndim == 1:
        rows = _bounds(m, _chunks(m, _MIN_ROWS, t), 8)
        if len(rows) > 2:
            def task(i: int) -> None:
                r0, r1 = rows[i], rows[i + 1]
                np.dot(a[r0:r1], b, out=out[r0:r1])

            parallel.run_tasks(len(rows) - 1, task)
            return out
    else:
        cols = _bounds(n, _chunks(n, _MIN_COLS, t), 16)
        if len(cols) > 2:
            def task(i: int) -> None:
                c0, c1 = cols[i], cols[i + 1]
                np.matmul(a, b[:, c0:c1], out=out[:, c0:c1])

            parallel.run_tasks(len(cols) - 1, task)
            return out
    np.dot(a, b, out=out)
    return out


def _rows(x: Array, k: int) -> Array:
    """``x`` (..., k) as a 2-d (rows, k) array: a view when x's layout allows it."""
    return x.reshape(-1, k)


def dense(x: Array, w: Array, out: Array | None = None) -> Array:
    """``x @ w.T``: x (..., K), w (N, K) -> (..., N); one GEMM (GEMV for one row) over
    every leading axis of ``x`` at once."""
    n, k = w.shape
    if x.ndim == 2 and 2 * x.shape[0] * k * n < SPLIT_FLOPS:
        # a small product (an RNN step): one call without gemm's bookkeeping, which would
        # run it as one np.dot anyway (1.0 against 2.2 us for (1, 64) x (64, 64))
        if out is None:
            return np.dot(x, w.T)
        np.dot(x, w.T, out=out)
        return out
    shape = x.shape[:-1] + (n,)
    if out is None:
        out = np.empty(shape, x.dtype)
    if x.ndim == 1:
        gemm(w, x, out)
    else:
        gemm(_rows(x, k), w.T, out.reshape(-1, n))
    return out


def matmul(a: Array, b: Array, transpose_a: bool, transpose_b: bool,
           out: Array | None = None) -> Array:
    """``op(a) @ op(b)`` with ``b`` 2-d: a (..., K) [(..., K, M) when transposed], b (K, N)
    [(N, K) when transposed] -> (..., N)."""
    bm = b.T if transpose_b else b
    if transpose_a:
        am = np.swapaxes(a, -1, -2)
        if am.ndim == 2:
            return gemm(am, bm, out)
        if out is None:
            out = np.empty(am.shape[:-1] + bm.shape[1:], a.dtype)
        m = am.shape[-2]
        _batched(am.reshape(-1, m, am.shape[-1]), bm[None], out.reshape(-1, m, bm.shape[1]))
        return out
    k, n = bm.shape
    shape = a.shape[:-1] + (n,)
    if out is None:
        out = np.empty(shape, a.dtype)
    if a.ndim == 1:
        gemm(bm.T, a, out)
    else:
        gemm(_rows(a, k), bm, out.reshape(-1, n))
    return out


def _batched(x: Array, y: Array, out: Array) -> None:
    """``out[i] = x[i] @ y[i]`` (a batch of 1 in ``y`` broadcasts): one ``gemm`` per entry
    when the products are large enough to split, else the batch entries are the tasks."""
    b = x.shape[0]
    m, k = x.shape[1:]
    n = y.shape[2]
    if 2 * m * k * n >= SPLIT_FLOPS or parallel.threads() == 1 or b == 1:
        for i in range(b):
            gemm(x[i], y[i if y.shape[0] > 1 else 0], out[i])
        return
    per = max(1, -(-b // (2 * parallel.threads())))

    def task(j: int) -> None:
        s = slice(j * per, min(b, (j + 1) * per))
        np.matmul(x[s], y[s] if y.shape[0] > 1 else y[0], out=out[s])

    parallel.run_tasks(-(-b // per), task)


def batch_matmul(x: Array, y: Array, transpose_a: bool, transpose_b: bool,
                 out: Array | None = None) -> Array:
    """Batched ``op(x) @ op(y)`` of 3-d operands (a batch of 1 broadcasts); one GEMM per
    batch entry, or a single GEMM when ``y``'s batch is 1 and ``x`` is not transposed (the
    batch folds into the rows)."""
    xm = np.swapaxes(x, -1, -2) if transpose_a else x
    ym = np.swapaxes(y, -1, -2) if transpose_b else y
    b, m, k = xm.shape
    n = ym.shape[2]
    if y.shape[0] == 1 and not transpose_a and x.shape[0] > 1:
        if out is None:
            out = np.empty((b, m, n), x.dtype)
        gemm(_rows(xm, k), ym[0], out.reshape(-1, n))
        return out
    if out is None:
        out = np.empty((max(b, ym.shape[0]), m, n), x.dtype)
    if b == 1 and ym.shape[0] > 1:  # x's batch of 1 broadcasts
        for i in range(ym.shape[0]):
            gemm(xm[0], ym[i], out[i])
        return out
    _batched(xm, ym, out)
    return out
