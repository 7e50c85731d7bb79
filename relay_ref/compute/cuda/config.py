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

__all__ = ["GPU", "MAX_SHARED_BYTES", "MAX_THREADS", "PAD", "SIMULATOR", "CudaConfig", "GemmTile",
           "default_config"]

#: CUDA's limits on every GPU numba supports: threads per block, static shared memory
MAX_THREADS = 1024
MAX_SHARED_BYTES = 48 * 1024
#: words of padding per row of the GEMM's shared arrays (``relay_ref.compute.cuda.gemm``)
PAD = 4


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
        if self.threads > MAX_THREADS:
            raise ValueError(f"bad GEMM tile {self}: {self.threads} threads per block, CUDA "
                             f"allows {MAX_THREADS}")
        if self.shared_bytes(8) > MAX_SHARED_BYTES:
            raise ValueError(f"bad GEMM tile {self}: {self.shared_bytes(8)} bytes of shared "
                             f"memory in float64, CUDA allows {MAX_SHARED_BYTES} per block")

    def shared_bytes(self, itemsize: int) -> int:
        """Static shared memory of the GEMM kernel: two padded buffers per operand."""
        return 2 * self.bk * (self.bm + self.bn + 2 * PAD) * itemsize

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
        if max(rt, self.threads) > MAX_THREADS or self.max_blocks > 2 ** 31 - 1:
            raise ValueError(f"bad CUDA config {self}: at most {MAX_THREADS} threads per "
                             "block and 2^31 - 1 blocks")


GPU = CudaConfig()
SIMULATOR = CudaConfig(GemmTile(8, 8, 4, 2, 2), threads=16, max_blocks=2, row_threads=4)


def default_config() -> CudaConfig:
    """``SIMULATOR`` under numba's CUDA simulator, else ``GPU``."""
    from relay_ref.compute.cuda import simulator

    return SIMULATOR if simulator() else GPU
