"""Timing helpers the benchmark scripts share (../shared/reference/performance.md: on this
noisy 2-core machine, implementations are compared in interleaved rounds, in alternating
order, with a sleep between them while the other thread pools wind down)."""

from __future__ import annotations

import ctypes
import glob
import os
import time
from collections.abc import Callable, Sequence

import numpy as np


def per_call(fn: Callable[[], object], n: int) -> float:
    """Mean seconds per call over a loop of ``n`` calls."""
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def one_round(r: int, entries: Sequence[tuple[str, Callable[[], object], int]],
              sleep: float) -> dict[str, float]:
    """Round ``r``: each ``(label, fn, n)`` timed by ``per_call(fn, n)`` after a sleep, in
    the given order on even rounds and reversed on odd ones; seconds per call by label."""
    order = list(entries) if r % 2 == 0 else list(reversed(entries))
    got = {}
    for label, fn, n in order:
        time.sleep(sleep)
        got[label] = per_call(fn, n)
    return got


def blas_threads() -> str:
    """The thread count of NumPy's bundled OpenBLAS (``"?"`` when it cannot be asked)."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs",
                                  "libscipy_openblas*"))
    if libs:
        try:
            return str(ctypes.CDLL(libs[0]).scipy_openblas_get_num_threads64_())
        except (OSError, AttributeError):
            pass
    return "?"
