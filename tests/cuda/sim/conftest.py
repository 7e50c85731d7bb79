"""Tests run under numba's CUDA simulator, in their own process.

numba chooses the simulator once, when it is first imported, from ``NUMBA_ENABLE_CUDASIM``;
the main test process imports numba at collection time without it. So this directory is
collected only in a process started with ``NUMBA_ENABLE_CUDASIM=1`` (``tests/cuda/
test_cuda_target.py`` starts one per file here, so ``pytest`` alone runs them); anywhere
else its test files are ignored.

The simulator runs every CUDA thread as a Python thread and its block manager polls them;
a short GIL switch interval (0.1 ms instead of 5 ms) makes ``syncthreads`` 10-20x faster.
Its threads compute with NumPy scalars outside the executor's ``np.errstate``, so integer
wrap-around and ``sqrt(-1)`` warn there (they do not on a GPU): such warnings are ignored.
"""

from __future__ import annotations

import os
import sys

if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
    collect_ignore_glob = ["test_*.py"]
else:
    sys.setswitchinterval(1e-4)


def pytest_configure(config: object) -> None:
    config.addinivalue_line("filterwarnings", "ignore::RuntimeWarning")  # type: ignore
