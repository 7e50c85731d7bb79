"""numba CPU kernels (DESIGN.md sections 2 and 6).

Importing this package fixes the threading policy before numba starts its thread pool, so
that numba's ``prange`` workers (OpenMP layer) and OpenBLAS's threads do not spin against
each other on a 2-core machine (``../shared/reference/performance.md`` section 3, lesson 5:
a spinning OpenMP pool next to a BLAS call made whole models 3-16x slower):

* ``OMP_WAIT_POLICY=passive``: idle OpenMP workers sleep instead of spinning;
* ``NUMBA_THREADING_LAYER=omp`` when no layer was chosen (the measured configuration).

Both are defaults only: a value already in the environment wins. Every module that uses
numba imports this package first (``from relay_ref.compute import cpu``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("NUMBA_THREADING_LAYER", "omp")

import numba  # noqa: E402  (after the environment above)

__all__ = ["numba"]
