"""Two thread-safety fixes for numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), applied
by ``relay_ref.compute.cuda.cuda_module()`` when the simulator is in use; nothing else in
numba is touched, and nothing is patched on a real device.

The simulator runs each thread of a block as a Python thread, and in numba 0.68.1 two of
its helpers are not safe when the interpreter switches threads inside them (seen once in a
full test run on a loaded machine: 6 of 20 values wrong; reproduced with
``sys.setswitchinterval(1e-6)``: 1 in 300 runs of a softmax + GEMM program, 3 in 1000 of
the GEMM kernel alone; none in 1 500 with these fixes):

1. ``FakeCUDAShared.array`` gets or creates a block's shared array keyed by the caller's
   file and line without a lock: two threads can each create one, and one of them then
   computes on a private copy of the "shared" tile (wrong values in the launch's first
   block). Replaced by the same code with the get-or-create under a lock.
2. ``swapped_cuda_module`` puts ``numba.cuda`` back into a function's globals when *one*
   thread leaves it, while the others still run in it: a device function in another module
   than its kernel (``reduce.block_reduce``) then fails with ``module 'numba.cuda' has no
   attribute 'syncthreads'``. Replaced by a counted swap: the first thread in swaps, the
   last one out restores (upstream: NVIDIA/numba-cuda pull request 690).

``apply()`` patches only when both originals are where numba 0.68 has them; with another
numba layout it does nothing (the races stay, as upstream has them).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

_lock = threading.Lock()
_swaps: dict[int, list[Any]] = {}  # id(globals) -> [threads inside, the swapped entries]
_applied = False


def apply() -> None:
    """Install both fixes once (see the module docstring)."""
    global _applied
    with _lock:
        if _applied:
            return
        _applied = True
        try:
            from numba.cuda.simulator import kernel, kernelapi
        except ImportError:
            return
        if not (hasattr(kernelapi, "FakeCUDAShared") and hasattr(kernel,
                                                                  "swapped_cuda_module")):
            return
        shared = kernelapi.FakeCUDAShared

        def array(self: Any, shape: Any, dtype: Any) -> np.ndarray:
            if isinstance(dtype, kernelapi.types.Type):
                dtype = kernelapi.numpy_support.as_dtype(dtype)
            if shape == 0:  # dynamic shared memory: one buffer for every request
                count = self._dynshared_size // dtype.itemsize
                return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
            frame = sys._getframe(1)  # must be the kernel's frame: no wrapper in between
            caller = (frame.f_code.co_filename, frame.f_lineno)
            with _lock:  # every thread of the block gets the same array
                found = self._allocations.get(caller)
                if found is None:
                    found = self._allocations[caller] = np.empty(shape, dtype)
            return found

        @contextmanager
        def swapped_cuda_module(fn: Any, fake: Any) -> Iterator[None]:
            from numba import cuda

            globs = fn.__globals__
            with _lock:
                entry = _swaps.get(id(globs))
                if entry is None:
                    orig = {k: v for k, v in globs.items() if v is cuda}
                    globs.update(dict.fromkeys(orig, fake))
                    entry = _swaps[id(globs)] = [0, orig]
                entry[0] += 1
            try:
                yield
            finally:
                with _lock:
                    entry[0] -= 1
                    if entry[0] == 0:
                        globs.update(entry[1])
                        del _swaps[id(globs)]

        shared.array = array
        kernel.swapped_cuda_module = swapped_cuda_module
