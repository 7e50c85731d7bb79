"""Tile and launch sizes of the CUDA kernels: parameters, not constants.

Every kernel takes its sizes from a ``CudaConfig``; a kernel factory compiles one kernel per
distinct configuration (shared-memory arrays need compile-time shapes, so the sizes are
closure constants of the factory, not run-time arguments). ``GPU`` is the configuration for
real hardware (performance.md section 6: a 64x64 block tile with 4x4 outputs per thread
reached 27 % of cuBLAS where the 16x16 tile of numba's documentation reached 4 %).
``SIMULATOR`` is tiny: the simulator runs each CUDA thread as a Python thread, so the tests
use 16 threads per block and blocks of 8x8 outputs. ``default_config()`` picks between them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GPU", "SIMULATOR", "CudaConfig", "GemmTile", "default_config"]


@dataclass(frozen=True, slots=True)
class GemmTile:
    """A register-blocked GEMM tile: a block computes ``bm x bn`` outputs, each of its
    ``(bm // tm) * (bn // tn)`` threads a ``tm x tn`` sub-block, stepping through K by
    ``bk`` with two shared-memory buffers (loads of the next slice overlap the products of
    the current one)."""

    bm: int = 64
    bn: int = 64
    bk: int = 8
    tm: int = 4
    tn: int = 4

    def __post_init__(self) -> None:
        if min(self.bm, self.bn, self.bk, self.tm, self.tn) < 1 or self.bm % self.tm or \
                self.bn % self.tn:
            raise ValueError(f"bad GEMM tile {self}: tm must divide bm and tn divide bn")

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


@dataclass(frozen=True, slots=True)
class CudaConfig:
    """``gemm``: the tile of dense / matmul / batch_matmul / conv2d; ``threads``: block size
    of the one-thread-per-element kernels (elementwise, pooling); ``max_blocks``: the grid
    cap of those grid-stride kernels; ``row_threads``: block size of the one-block-per-row
    kernels (softmax, reductions), a power of two (the shared-memory tree reduction)."""

    gemm: GemmTile = GemmTile()
    threads: int = 256
    max_blocks: int = 8192
    row_threads: int = 128

    def __post_init__(self) -> None:
        rt = self.row_threads
        if rt < 1 or rt & (rt - 1) or self.threads < 1 or self.max_blocks < 1:
            raise ValueError(f"bad CUDA config {self}: row_threads must be a power of two")


GPU = CudaConfig()
SIMULATOR = CudaConfig(GemmTile(8, 8, 4, 2, 2), threads=16, max_blocks=2, row_threads=4)


def default_config() -> CudaConfig:
    """``SIMULATOR`` under numba's CUDA simulator, else ``GPU``."""
    from relay_ref.compute.cuda import simulator

    return SIMULATOR if simulator() else GPU
