"""Kernels of the pools' gradients, ``nn.max_pool2d_grad`` and ``nn.avg_pool2d_grad``, over
NCHW planes.

Pure array kernels over C-contiguous float32/float64 arrays; the op-level adapter
(``relay_ref.ops.cpu_grad``) checks attributes and shapes, computes the output size and the
divisors, and splits the planes over cores (``relay_ref.compute.cpu.parallel.run_tasks``):
each kernel writes planes ``[b0, b1)`` of ``out`` only, so tasks over disjoint plane ranges
never race. Every kernel is ``nogil=True`` and serial.

Shapes: ``g`` (B, OH, OW) the pooled gradient, ``x`` (B, H, W) the pool's input, ``out``
(B, H, W) the input's gradient (B = N * C). Window ``(p, q)``'s tap ``(i, j)`` reads input
``(p * sh + i * dh - pt, q * sw + j * dw - pl)``; taps outside the input are padding (the
explicit one, or ceil_mode's extra rows and columns) and receive nothing.

* ``max_grad``: all of ``g[p, q]`` goes to the window's first maximum in tap order (row-major
  over ``(i, j)``), padding taps counted as ``-inf``: exactly ``argmax`` over the reference's
  padded window (``relay_ref/ops/nn.py``), including its rules that a NaN is the maximum
  (the first NaN wins) and that a padding tap may win a window of ``-inf`` (then the
  gradient is dropped). No ``fastmath``: NaN and infinities are data here.
* ``avg_grad``: ``g[p, q] / (cnt_h[p] * cnt_w[q])`` to every in-bounds tap (the divisors are
  the adapter's, >= 1 wherever a window has an in-bounds tap).
"""

from __future__ import annotations

import numpy as np

from relay_ref.compute.cpu import numba
from relay_ref.compute.cpu.conv import valid_range

njit = numba.njit


@njit(cache=True, nogil=True)
def _tap_ranges(k, s, d, pad, size, count):
    """For each tap ``j`` < ``k``: the output positions [lo, hi) whose tap ``j`` is in
    bounds (position ``q * s + j * d - pad`` in [0, size)), as two arrays."""
    lo = np.empty(k, np.int64)
    hi = np.empty(k, np.int64)
    for j in range(k):
        lo[j], hi[j] = valid_range(j * d - pad, s, size, count)
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def _first_max(best, at, v, k):
    """The running (maximum, where) after tap ``(v, k)``: ``v`` replaces ``best`` when
    strictly greater, or a NaN replacing a non-NaN (argmax's rules: the first maximum, the
    first NaN). Branch-free selects: a data-dependent branch mispredicts on random data."""
    take = (not (v <= best)) & (best == best)
    return (v if take else best), (k if take else at)


@njit(cache=True, nogil=True)
def max_grad(g, x, out, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl):
    """Planes ``[b0, b1)`` of ``out``: each ``g[p, q]`` to its window's first maximum.

    A padding tap is ``-inf``: after the first tap it never wins (a later tap replaces the
    best only when strictly greater, or a NaN replacing a non-NaN), so only the in-bounds taps
    are visited, starting from the first tap when it is in bounds, else from ``-inf`` with no
    winner (the reference's argmax then picks that padding tap: the gradient is dropped)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = g.shape[1], g.shape[2]
    pair = kh == 2 and kw == 2
    # the in-bounds taps of every window column (integer divisions: once, not per window)
    jlos = np.empty(ow, np.int64)
    jhis = np.empty(ow, np.int64)
    for q in range(ow):
        jlos[q], jhis[q] = valid_range(q * sw - pl, dw, w, kw)
    for b in range(b0, b1):
        dst = out[b].ravel()
        img = x[b].ravel()
        gp = g[b].ravel()
        for k in range(h * w):
            dst[k] = 0.0
        for p in range(oh):
            r0 = p * sh - pt
            ilo, ihi = valid_range(r0, dh, h, kh)
            for q in range(ow):
                c0 = q * sw - pl
                jlo, jhi = jlos[q], jhis[q]
                if pair and ilo == 0 and ihi == 2 and jlo == 0 and jhi == 2:
                    # a 2x2 window in bounds (the common pool): the taps unrolled
                    k0 = r0 * w + c0
                    k1 = k0 + dw
                    k2 = k0 + dh * w
                    k3 = k2 + dw
                    best, at = _first_max(img[k0], k0, img[k1], k1)
                    best, at = _first_max(best, at, img[k2], k2)
                    best, at = _first_max(best, at, img[k3], k3)
                    dst[at] += gp[p * ow + q]
                    continue
                if ilo == 0 and jlo == 0 and ihi > 0 and jhi > 0:
                    best = img[r0 * w + c0]
                    at = r0 * w + c0
                else:
                    best = -np.inf
                    at = -1
                for i in range(ilo, ihi):
                    base = (r0 + i * dh) * w + c0
                    for j in range(jlo, jhi):
                        k = base + j * dw
                        v = img[k]
                        best, at = _first_max(best, at, v, k)
                if at >= 0:
                    dst[at] += gp[p * ow + q]


@njit(cache=True, nogil=True)
def avg_grad(g, out, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, cnt_h, cnt_w):
    """Planes ``[b0, b1)`` of ``out``: each ``g[p, q] / (cnt_h[p] * cnt_w[q])`` to every
    in-bounds tap of window ``(p, q)``; per output row, each tap one loop over the windows."""
    h, w = out.shape[1], out.shape[2]
    oh, ow = g.shape[1], g.shape[2]
    qlo, qhi = _tap_ranges(kw, sw, dw, pl, w, ow)
    share = np.empty(ow, out.dtype)
    for b in range(b0, b1):
        dst = out[b]
        gp = g[b]
        for r in range(h):
            row = dst[r]
            for c in range(w):
                row[c] = 0.0
        for p in range(oh):
            src = gp[p]
            for q in range(ow):
                share[q] = src[q] / (cnt_h[p] * cnt_w[q])
            for i in range(kh):
                r = p * sh + i * dh - pt
                if r < 0 or r >= h:
                    continue
                row = dst[r]
                for j in range(kw):
                    c0 = j * dw - pl
                    for q in range(qlo[j], qhi[j]):
                        row[c0 + q * sw] += share[q]
