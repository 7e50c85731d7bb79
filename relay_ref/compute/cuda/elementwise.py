"""Generated elementwise kernels on the device: loading their source and launching them.

The executor generates one CUDA kernel per fused group of elementwise / broadcast operators
(``relay_ref.executor.cuda_fused``) from the same scalar templates as the CPU kernels
(``relay_ref.compute.cpu.elementwise``); this module turns such source into a kernel and
launches it over ``total`` elements in a grid-stride loop. The source is written to the
kernel source cache (``relay_ref.compute.cpu.codecache``, content-addressed), so
``cuda.jit(cache=True)`` can cache the compiled code on a real GPU.
"""

from __future__ import annotations

from typing import Any

from relay_ref.compute.cpu import codecache
from relay_ref.compute.cuda.config import CudaConfig, default_config
from relay_ref.compute.cuda.launch import blocks_for

__all__ = ["DEVICE_JIT", "KERNEL_JIT", "launch", "load"]

#: decorators of generated helpers and kernels
DEVICE_JIT = "@cuda.jit(device=True)"
KERNEL_JIT = "@cuda.jit(cache=True)"


def load(source: str, cache_dir: str | None = None) -> Any:
    """The ``kernel`` defined by generated ``source`` (a module importing ``cuda`` from
    numba at its top, so the simulator can swap it)."""
    return codecache.load_source(source, cache_dir).kernel


def launch(kernel: Any, total: int, *args: Any, config: CudaConfig | None = None) -> None:
    """``kernel[grid, block](*args)`` with enough threads for ``total`` elements (capped at
    ``max_blocks`` blocks; the kernel's grid-stride loop covers the rest)."""
    cfg = config or default_config()
    kernel[blocks_for(total, cfg), cfg.threads](*args)
