"""numba.cuda kernels (DESIGN.md sections 2 and 6): the GPU half of ``relay_ref.compute``.

Importing this package imports ``relay_ref.compute.cpu`` first (its threading policy must be
in the environment before numba starts), hence numba, but not ``numba.cuda``:
``cuda_module()`` imports that on first use; the kernel modules import it as a module global
(the simulator swaps such globals for its fake ``cuda`` module while a kernel runs). The
kernels run on a real GPU (numba's built-in CUDA target, or the ``numba-cuda`` package that
replaces it) or, with ``NUMBA_ENABLE_CUDASIM=1`` in the environment *before numba is first
imported*, on numba's CUDA simulator, which runs every CUDA thread as a Python thread: the
same source, very slowly, which is how the tests check the kernels on machines without a GPU.

Modules: ``config`` (tile and launch sizes: kernel *parameters*, tiny under the simulator),
``gemm`` (register-blocked shared-memory GEMM), ``conv`` (conv2d as an implicit GEMM),
``pool`` (windowed pooling), ``reduce`` (row reductions, global pooling), ``softmax``
(softmax / log_softmax, one block per row), ``elementwise`` (loading generated fused
kernels). Launchers take *device* arrays and write a preallocated device ``out``.

Transfers between host and device go through ``to_device`` / ``to_host``, which count them
(``TRANSFERS``): the executor's tests check that a compiled model moves only its inputs and
outputs.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay_ref.compute import cpu  # noqa: F401  (the threading policy, before numba)

__all__ = ["TRANSFERS", "Transfers", "cuda_module", "device_array", "device_status",
           "is_device_array", "simulator", "to_device", "to_host"]


@functools.cache
def cuda_module() -> Any:
    """``numba.cuda`` (the simulator when ``NUMBA_ENABLE_CUDASIM=1`` was set before numba
    was imported); ``ImportError`` when numba has no CUDA support installed."""
    from numba import cuda

    if simulator():
        from relay_ref.compute.cuda import simpatch

        simpatch.apply()  # two thread-safety races of numba's simulator (simpatch.py)
    return cuda


def simulator() -> bool:
    """Whether ``numba.cuda`` is numba's CUDA simulator in this process."""
    from numba.core import config

    return bool(config.ENABLE_CUDASIM)


@functools.cache
def device_status() -> tuple[bool, str]:
    """(usable, description): the GPU's name, the simulator, or why there is no device.
    Never raises; the answer is fixed for the life of the process."""
    try:
        cuda = cuda_module()
    except Exception as err:  # noqa: BLE001 - any failure to load means no device
        return False, f"numba's CUDA support cannot be imported ({type(err).__name__}: {err})"
    if simulator():
        return True, "numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    try:
        if not cuda.is_available():
            cuda.current_context()  # raises with the driver's own reason
            return False, "numba.cuda reports no usable CUDA device"
        name = cuda.get_current_device().name
    except Exception as err:  # noqa: BLE001 - the driver's reason, in one line
        text = " ".join(str(err).split()) or type(err).__name__
        return False, text
    return True, name.decode() if isinstance(name, bytes) else str(name)


def is_device_array(x: object) -> bool:
    """Whether ``x`` is a CUDA device array (numba's, or the simulator's stand-in)."""
    return type(x) is not np.ndarray and hasattr(x, "copy_to_host")


@dataclass(slots=True)
class Transfers:
    """Counts of host<->device copies made through ``to_device`` / ``to_host``."""

    h2d: int = 0
    d2h: int = 0
    h2d_bytes: int = 0
    d2h_bytes: int = 0

    def snapshot(self) -> tuple[int, int, int, int]:
        return self.h2d, self.d2h, self.h2d_bytes, self.d2h_bytes


TRANSFERS = Transfers()
_lock = threading.Lock()


def to_device(a: Any) -> Any:
    """A device copy of the host array ``a`` (C-contiguous), counted."""
    a = np.ascontiguousarray(a)
    with _lock:
        TRANSFERS.h2d += 1
        TRANSFERS.h2d_bytes += a.nbytes
    return cuda_module().to_device(a)


def to_host(d: Any) -> np.ndarray:
    """A fresh host copy of the device array ``d``, counted."""
    with _lock:
        TRANSFERS.d2h += 1
        TRANSFERS.d2h_bytes += int(np.prod(d.shape, dtype=np.int64)) * d.dtype.itemsize
    return d.copy_to_host()


def device_array(shape: tuple[int, ...], dtype: Any) -> Any:
    """An uninitialised device array (no transfer)."""
    return cuda_module().device_array(shape, np.dtype(dtype))
