"""GEMM and conv2d CUDA kernels against the NumPy references, under the simulator.

Shapes are small and chosen so that every dimension leaves a partial tile (edge tiles) with
the simulator's tile (8 x 8 outputs, k-slices of 4) and with other tiles passed as kernel
parameters; conv2d covers every attribute: strides, padding (1, 2 and 4 values), dilation,
groups (grouped and depthwise), kernel sizes, batch, float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from cuda_check import check_op, rand

from relay_ref.compute.cuda import device_array, to_device, to_host
from relay_ref.compute.cuda.config import SIMULATOR, CudaConfig, GemmTile
from relay_ref.compute.cuda.conv import conv2d_nchw
from relay_ref.compute.cuda.gemm import gemm
from relay_ref.ops.registry import get_op, op_kernel

TILES = [SIMULATOR.gemm, GemmTile(4, 8, 3, 2, 4), GemmTile(6, 3, 5, 3, 1)]


@pytest.mark.parametrize("tile", TILES, ids=str)
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (9, 7, 5), (16, 8, 8), (3, 17, 11)])
def test_gemm_any_tile_matches_numpy(tile: GemmTile, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    a, b = rand(rng, m, k), rand(rng, k, n)
    out = device_array((m, n), np.float32)
    cfg = CudaConfig(tile, threads=8, max_blocks=2, row_threads=4)
    gemm(to_device(a), to_device(b), out, m, n, k, (0, k, 1), (0, n, 1), (0, n, 1),
         config=cfg)
    np.testing.assert_allclose(to_host(out), a @ b, rtol=1e-4, atol=1e-5)


def test_gemm_batched_with_broadcast_operand() -> None:
    rng = np.random.default_rng(1)
    a, b = rand(rng, 3, 5, 6), rand(rng, 1, 6, 4)
    out = device_array((3, 5, 4), np.float32)
    gemm(to_device(a), to_device(b), out, 5, 4, 6, (30, 6, 1), (0, 4, 1), (20, 4, 1), batch=3)
    np.testing.assert_allclose(to_host(out), a @ b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("data_shape", [(1, 7), (5, 9), (2, 3, 6)])
def test_dense(data_shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    check_op("nn.dense", [rand(rng, *data_shape), rand(rng, 10, data_shape[-1])])


def test_dense_float64() -> None:
    rng = np.random.default_rng(3)
    check_op("nn.dense", [rand(rng, 3, 5, dtype="float64"), rand(rng, 9, 5, dtype="float64")])


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(ta: bool, tb: bool) -> None:
    rng = np.random.default_rng(4)
    m, k, n = 5, 6, 9
    a = rand(rng, *((k, m) if ta else (m, k)))
    b = rand(rng, *((n, k) if tb else (k, n)))
    check_op("nn.matmul", [a, b], transpose_a=ta, transpose_b=tb)


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False)])
@pytest.mark.parametrize("ba,bb", [(2, 2), (1, 3), (3, 1)])
def test_batch_matmul(ta: bool, tb: bool, ba: int, bb: int) -> None:
    rng = np.random.default_rng(5)
    m, k, n = 3, 7, 5
    a = rand(rng, ba, *((k, m) if ta else (m, k)))
    b = rand(rng, bb, *((n, k) if tb else (k, n)))
    check_op("nn.batch_matmul", [a, b], transpose_a=ta, transpose_b=tb)


CONV_CASES = [
    # (N, C, H, W), (O, KH, KW), attrs
    ((1, 3, 6, 5), (4, 3, 3), {}),
    ((2, 3, 7, 6), (5, 3, 3), {"padding": (1, 1)}),
    ((1, 2, 9, 8), (3, 3, 2), {"strides": (2, 1), "padding": (1,)}),
    ((1, 2, 9, 9), (3, 3, 3), {"padding": (2, 1, 0, 1), "strides": (2, 3)}),
    ((1, 3, 9, 8), (2, 3, 3), {"dilation": (2, 1), "padding": (2, 1)}),
    ((2, 4, 6, 6), (6, 3, 3), {"groups": 2, "padding": (1, 1)}),
    ((1, 4, 7, 7), (4, 3, 3), {"groups": 4, "padding": (1, 1), "strides": (2, 2)}),
    ((1, 4, 6, 6), (8, 3, 3), {"groups": 4, "padding": (1, 1)}),  # depthwise, multiplier 2
    ((2, 5, 4, 4), (7, 1, 1), {}),  # pointwise
    ((1, 3, 10, 10), (9, 5, 5), {"padding": (2, 2), "strides": (3, 3), "dilation": (1, 2)}),
]


@pytest.mark.parametrize("data,kernel,attrs", CONV_CASES,
                         ids=[f"case{i}" for i in range(len(CONV_CASES))])
def test_conv2d_attributes(data: tuple, kernel: tuple, attrs: dict) -> None:
    rng = np.random.default_rng(len(str(attrs)))
    groups = attrs.get("groups", 1)
    o, kh, kw = kernel
    x = rand(rng, *data)
    w = rand(rng, o, data[1] // groups, kh, kw)
    check_op("nn.conv2d", [x, w], **attrs)


def test_conv2d_float64_and_other_tiles() -> None:
    rng = np.random.default_rng(6)
    x, w = rand(rng, 1, 3, 6, 6, dtype="float64"), rand(rng, 5, 3, 3, 3, dtype="float64")
    check_op("nn.conv2d", [x, w], padding=(1, 1))
    op = get_op("nn.conv2d")
    want = op.reference([x, w], op.attrs(strides=(2, 2), padding=(1, 1)))
    for tile in TILES[1:]:
        out = device_array(want.shape, np.float64)
        conv2d_nchw(to_device(x), to_device(w), out, (2, 2), (1, 1), (1, 1), 1,
                    config=CudaConfig(tile, threads=8, max_blocks=2, row_threads=4))
        np.testing.assert_allclose(to_host(out), want, rtol=1e-10, atol=1e-10)


def test_unsupported_cases_go_to_the_host() -> None:
    """supports() refuses what the kernels do not compute: integer dtypes, other layouts,
    mixed dtypes, another out_dtype."""
    from cuda_check import tensor_type

    conv, dense = op_kernel("nn.conv2d", "cuda"), op_kernel("nn.dense", "cuda")
    x32, w32 = np.zeros((1, 2, 4, 4), np.float32), np.zeros((3, 2, 3, 3), np.float32)
    out = tensor_type(np.zeros((1, 3, 2, 2), np.float32))
    a = get_op("nn.conv2d").attrs
    assert conv.supports([tensor_type(x32), tensor_type(w32)], a(), out)
    assert not conv.supports([tensor_type(x32.astype(np.int32)), tensor_type(w32)], a(), out)
    assert not conv.supports([tensor_type(x32), tensor_type(w32)], a(data_layout="NHWC"), out)
    assert not conv.supports([tensor_type(x32), tensor_type(w32)], a(out_dtype="float64"),
                             out)
    d = get_op("nn.dense").attrs
    i8 = tensor_type(np.zeros((2, 3), np.int8))
    assert not dense.supports([i8, tensor_type(np.zeros((4, 3), np.int8))], d(),
                              tensor_type(np.zeros((2, 4), np.int8)))


def test_shipped_configuration_gemm_and_conv2d() -> None:
    """The real-GPU configuration (``config.GPU``: 64 x 64 tiles, 256 threads) on tiny
    shapes: one block each, partial in every dimension."""
    from relay_ref.compute.cuda.config import GPU

    rng = np.random.default_rng(7)
    a, b = rand(rng, 5, 9), rand(rng, 9, 3)
    out = device_array((5, 3), np.float32)
    gemm(to_device(a), to_device(b), out, 5, 3, 9, (0, 9, 1), (0, 3, 1), (0, 3, 1), config=GPU)
    np.testing.assert_allclose(to_host(out), a @ b, rtol=1e-4, atol=1e-5)
    x, w = rand(rng, 1, 2, 4, 4), rand(rng, 3, 2, 3, 3)
    op = get_op("nn.conv2d")
    want = op.reference([x, w], op.attrs(padding=(1, 1)))
    out = device_array(want.shape, np.float32)
    conv2d_nchw(to_device(x), to_device(w), out, (1, 1), (1, 1), (1, 1), 1, config=GPU)
    np.testing.assert_allclose(to_host(out), want, rtol=1e-4, atol=1e-5)


def test_row_tiles_and_batches_beyond_the_grid_loop_in_the_kernel(monkeypatch) -> None:
    """More row tiles, batches and groups than the grid has blocks along y / z: the
    kernels loop (CUDA caps y and z at 65535; here the cap is patched to 1 and 2)."""
    from relay_ref.compute.cuda import conv
    from relay_ref.compute.cuda import gemm as gemm_mod

    monkeypatch.setattr(gemm_mod, "grid_dim", lambda n, limit=0: min(n, 2))
    monkeypatch.setattr(conv, "grid_dim", lambda n, limit=0: 1)
    rng = np.random.default_rng(8)
    a, b = rand(rng, 5, 19, 6), rand(rng, 5, 6, 4)  # 3 row tiles of 8, batch 5
    out = device_array((5, 19, 4), np.float32)
    gemm(to_device(a), to_device(b), out, 19, 4, 6, (114, 6, 1), (24, 4, 1), (76, 4, 1),
         batch=5)
    np.testing.assert_allclose(to_host(out), a @ b, rtol=1e-4, atol=1e-5)
    check_op("nn.conv2d", [rand(rng, 1, 6, 5, 5), rand(rng, 18, 2, 3, 3)], groups=3,
             padding=(1, 1))  # 6 output channels per group: 1 row tile, 3 groups
