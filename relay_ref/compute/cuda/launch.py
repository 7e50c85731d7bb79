"""Launch geometry of the CUDA kernels: flat views, grid sizes within the hardware's limits.

CUDA caps a grid at 2^31 - 1 blocks along x and 65535 along y and z; the kernels that
map a size onto y or z (GEMM row tiles, batches, conv2d groups) loop over it with a stride
of the grid's size, so ``grid_dim`` may cap it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relay_ref.compute.cuda.config import CudaConfig

__all__ = ["MAX_GRID_X", "MAX_GRID_YZ", "blocks_for", "flat", "grid_dim"]

MAX_GRID_X = 2 ** 31 - 1
MAX_GRID_YZ = 65535


def flat(d: Any) -> Any:
    """A C-contiguous device array as 1-d (a view; ``d`` itself when it is 1-d)."""
    if len(d.shape) == 1:
        return d
    return d.reshape(int(np.prod(d.shape, dtype=np.int64)))


def blocks_for(total: int, config: CudaConfig) -> int:
    """Blocks of a grid-stride launch over ``total`` elements."""
    return max(1, min(-(-total // config.threads), config.max_blocks))


def grid_dim(n: int, limit: int = MAX_GRID_YZ) -> int:
    """Blocks along a grid axis covering ``n`` tiles, at most ``limit`` (the kernel loops
    over the rest)."""
    return max(1, min(n, limit))
