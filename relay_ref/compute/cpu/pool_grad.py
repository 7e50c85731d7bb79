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
def max_grad(g, x, out, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl):
    """Planes ``[b0, b1)`` of ``out``: each ``g[p, q]`` to its window's first maximum.

    A padding tap is ``-inf``: after the first tap it never wins (a later tap replaces the
    best only when strictly greater, or a NaN replacing a non-NaN), so only the in-bounds taps
    are visited, starting from the first tap when it is in bounds, else from ``-inf`` with no
    winner (the reference's argmax then picks that padding tap: the gradient is dropped)."""
    h, w = x.shape[1], x.shape[2]
    oh, ow = g.shape[1], g.shape[2]
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
                        # branch-free selects: random data mispredicts a branch here
                        # v > best, or v NaN, and never once best is NaN (the first wins)
                        take = (not (v <= best)) & (best == best)
                        best = v if take else best
                        at = k if take else at
                if at >= 0:
                    dst[at] += gp[p * ow + q]


@njit(cache=True, nogil=True)
def avg_grad(g, out, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, cnt_h, cnt_w):
    """Planes ``[b0, b1)`` of ``out``: each ``g[p, q] / (cnt_h[p] * cnt_w[q])`` to every
    in-bounds tap of window ``(p, q)``."""
    h, w = out.shape[1], out.shape[2]
    oh, ow = g.shape[1], g.shape[2]
    for b in range(b0, b1):
        dst = out[b]
        gp = g[b]
        for r in range(h):
            row = dst[r]
            for c in range(w):
                row[c] = 0.0
        for p in range(oh):
            for i in range(kh):
                r = p * sh + i * dh - pt
                if r < 0 or r >= h:
                    continue
                row = dst[r]
                for q in range(ow):
                    share = gp[p, q] / (cnt_h[p] * cnt_w[q])
                    for j in range(kw):
                        c = q * sw + j * dw - pl
                        if c >= 0 and c < w:
                            row[c] += share
