"""Windowed 2-d pooling (``nn.max_pool2d`` / ``nn.avg_pool2d``, NCHW) on the device.

One thread per output element, in a grid-stride loop over the ``N * C * OH * OW`` outputs.
A thread walks its window's taps and skips those in the padding (max pooling pads with
``-inf``, which never wins; average pooling does not add padding). The average divides by
the number of taps counted as the reference counts them: every tap inside the padded extent
(``count_include_pad``) or only taps on real pixels, per axis, at least 1. ``ceil_mode``'s
extra windows need nothing here: the caller's output size implies them. Max pooling
propagates NaN as ``np.max`` does (a NaN tap wins and stays).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda  # a module global: the simulator swaps it in per launch

from relay_ref.compute.cuda.config import CudaConfig, default_config
from relay_ref.compute.cuda.launch import blocks_for, flat

__all__ = ["pool2d_nchw"]


@functools.cache
def _kernel(is_max: bool, include_pad: bool, dtype: str) -> Any:
    dt = np.dtype(dtype).type
    lowest = dt(-math.inf)

    @cuda.jit
    def kernel(x, out, total, h, w, oh_n, ow_n, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr):
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for idx in range(start, total, step):
            ow = idx % ow_n
            rest = idx // ow_n
            oh = rest % oh_n
            plane = rest // oh_n
            base = plane * h * w
            acc = lowest if is_max else dt(0)
            for r in range(kh):
                ih = oh * sh - pt + r * dh
                if ih >= 0 and ih < h:
                    for s in range(kw):
                        iw = ow * sw - pl + s * dw
                        if iw >= 0 and iw < w:
                            v = x[base + ih * w + iw]
                            if is_max:
                                if v > acc or v != v:  # once NaN, nothing is greater
                                    acc = v
                            else:
                                acc += v
            if not is_max:
                lo_h, hi_h = (0, h + pt + pb) if include_pad else (pt, pt + h)
                lo_w, hi_w = (0, w + pl + pr) if include_pad else (pl, pl + w)
                ch = 0
                for r in range(kh):
                    pos = oh * sh + r * dh
                    if pos >= lo_h and pos < hi_h:
                        ch += 1
                cw = 0
                for s in range(kw):
                    pos = ow * sw + s * dw
                    if pos >= lo_w and pos < hi_w:
                        cw += 1
                ch = ch if ch > 1 else 1  # (a select: older numba CUDA has no int max)
                cw = cw if cw > 1 else 1
                acc = acc / dt(ch * cw)
            out[idx] = acc

    return kernel


def pool2d_nchw(x: Any, out: Any, pool_size: tuple[int, int], strides: tuple[int, int],
                dilation: tuple[int, int], padding: tuple[int, int, int, int], is_max: bool,
                count_include_pad: bool = False, config: CudaConfig | None = None) -> Any:
    """``out`` (N, C, OH, OW) = the pooling of ``x`` (N, C, H, W); ``padding`` is (top,
    left, bottom, right). Returns ``out``."""
    cfg = config or default_config()
    _, _, h, w = x.shape
    _, _, oh, ow = out.shape
    total = int(np.prod(out.shape, dtype=np.int64))
    kernel = _kernel(is_max, bool(count_include_pad) and not is_max,
                     np.dtype(out.dtype).name)
    pt, pl, pb, pr = padding
    kernel[blocks_for(total, cfg), cfg.threads](
        flat(x), flat(out), total, h, w, oh, ow, pool_size[0], pool_size[1], strides[0],
        strides[1], dilation[0], dilation[1], pt, pl, pb, pr)
    return out
