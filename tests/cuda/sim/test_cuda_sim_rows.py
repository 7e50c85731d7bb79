"""Pooling, global pooling, softmax / log_softmax and reduction CUDA kernels against the
NumPy references, under the simulator (small shapes; more rows than blocks, rows longer
than a block, so the grid-stride and strided loops both run)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_check import check_op, rand, tensor_type

from relay_ref.ops.registry import get_op, op_kernel

POOLS = [
    {"pool_size": (2, 2), "strides": (2, 2)},
    {"pool_size": (3, 3), "strides": (1, 1), "padding": (1, 1)},
    {"pool_size": (3, 2), "strides": (2, 2), "padding": (1, 1, 1, 0), "dilation": (1, 2)},
    {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1), "ceil_mode": True},
]


@pytest.mark.parametrize("attrs", POOLS, ids=[f"pool{i}" for i in range(len(POOLS))])
def test_max_pool2d(attrs: dict) -> None:
    rng = np.random.default_rng(0)
    check_op("nn.max_pool2d", [rand(rng, 2, 3, 7, 6)], **attrs)


@pytest.mark.parametrize("include", [False, True])
@pytest.mark.parametrize("attrs", POOLS, ids=[f"pool{i}" for i in range(len(POOLS))])
def test_avg_pool2d(attrs: dict, include: bool) -> None:
    rng = np.random.default_rng(1)
    check_op("nn.avg_pool2d", [rand(rng, 1, 2, 7, 6)], count_include_pad=include, **attrs)


def test_max_pool2d_propagates_nan() -> None:
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    x[0, 0, 1, 1] = np.nan
    check_op("nn.max_pool2d", [x], pool_size=(2, 2), strides=(2, 2))


@pytest.mark.parametrize("op", ["nn.global_avg_pool2d", "nn.global_max_pool2d"])
def test_global_pools(op: str) -> None:
    rng = np.random.default_rng(2)
    check_op(op, [rand(rng, 2, 3, 3, 5)])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_softmax_any_axis(op: str, axis: int) -> None:
    rng = np.random.default_rng(3)
    check_op(op, [rand(rng, 3, 9, 4) * 5], axis=axis)


def test_softmax_float64() -> None:
    rng = np.random.default_rng(4)
    check_op("nn.softmax", [rand(rng, 2, 11, dtype="float64")])


REDUCTIONS = [{"axis": None}, {"axis": (1,)}, {"axis": (1, 2), "keepdims": True},
              {"axis": (0,), "exclude": True}, {"axis": (-1,)}]


@pytest.mark.parametrize("attrs", REDUCTIONS, ids=[f"red{i}" for i in range(len(REDUCTIONS))])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
def test_reductions(op: str, attrs: dict) -> None:
    rng = np.random.default_rng(5)
    check_op(op, [rand(rng, 2, 5, 3)], **attrs)


def test_reduction_of_separate_axes_is_not_claimed() -> None:
    x = tensor_type(np.zeros((2, 3, 4), np.float32))
    out = tensor_type(np.zeros((3,), np.float32))
    attrs = get_op("sum").attrs(axis=(0, 2))
    assert not op_kernel("sum", "cuda").supports([x], attrs, out)


@pytest.mark.parametrize("op,attrs", [("reshape", {"newshape": (3, -1)}),
                                      ("nn.batch_flatten", {}),
                                      ("expand_dims", {"axis": 1}),
                                      ("squeeze", {"axis": (1,)})])
def test_views(op: str, attrs: dict) -> None:
    rng = np.random.default_rng(6)
    check_op(op, [rand(rng, 3, 1, 4)], **attrs)


def test_shipped_configuration_pool_rows_and_elementwise(monkeypatch) -> None:
    """The real-GPU configuration (``config.GPU``: 256 threads per block, 128 per row) on
    tiny shapes: pooling, a reduction, softmax and a generated elementwise kernel."""
    import relay_ref as rr
    from relay_ref.compute.cuda import config, device_array, to_device, to_host
    from relay_ref.compute.cuda.pool import pool2d_nchw
    from relay_ref.compute.cuda.reduce import reduce_rows
    from relay_ref.compute.cuda.softmax import softmax_rows

    gpu = config.GPU
    rng = np.random.default_rng(9)
    x = rand(rng, 1, 2, 5, 5)
    out = device_array((1, 2, 2, 2), np.float32)
    pool2d_nchw(to_device(x), out, (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True, config=gpu)
    want = get_op("nn.max_pool2d").reference(
        [x], get_op("nn.max_pool2d").attrs(pool_size=(3, 3), strides=(2, 2)))
    np.testing.assert_allclose(to_host(out), want)
    rows = rand(rng, 3, 7)
    out = device_array((3,), np.float32)
    reduce_rows(to_device(rows), out, 3, 7, 1, "sum", config=gpu)
    np.testing.assert_allclose(to_host(out), rows.sum(1), rtol=1e-5, atol=1e-6)
    out = device_array((3, 7), np.float32)
    softmax_rows(to_device(rows), out, 3, 7, 1, log=True, config=gpu)
    e = np.exp(rows - rows.max(1, keepdims=True))
    np.testing.assert_allclose(to_host(out), np.log(e / e.sum(1, keepdims=True)), rtol=1e-5,
                               atol=1e-6)
    from relay_ref.compute.cuda import elementwise

    monkeypatch.setattr(elementwise, "default_config", lambda: gpu)  # generated kernels'
    mod = rr.parse("def @main(%a: Tensor[(3, 7), float32]) { sqrt(exp(%a)) }")
    np.testing.assert_allclose(rr.compile(mod, target="cuda")(rows), np.sqrt(np.exp(rows)),
                               rtol=1e-5)
