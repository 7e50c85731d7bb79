"""The pooling kernels (``cpu_nn.max_pool2d`` / ``avg_pool2d`` / ``global_*_pool2d`` over
``compute/cpu/pool.py``) against the ops' NumPy references: random shapes and every attribute
(pool size, strides, dilation, 1/2/4-value padding including padding wider than the window,
ceil_mode, count_include_pad, NCHW/NHWC), with and without ``out=``; float32/float64 through
numba and the rest through the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel

from relay_ref.ops.nn import pad4

# sums of <= 9 values in [-1, 1], divided: a few ulps
TOL = {"rtol": 1e-4, "atol": 1e-5}
LAYOUTS = st.sampled_from(["NCHW", "NCHW", "NHWC", "NHWC", "CHWN"])
DTYPES = st.sampled_from(["float32", "float32", "float32", "float64", "int32"])


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def _shape(n: int, c: int, h: int, w: int, layout: str) -> tuple[int, ...]:
    dims = {"N": n, "C": c, "H": h, "W": w}
    return tuple(dims[a] for a in layout)


@st.composite
def pool_cases(draw: st.DrawFn, avg: bool) -> tuple[tuple, dict, str]:
    """(data shape, attrs, dtype) with at least one output row and column."""
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=4)
                         .filter(lambda p: len(p) != 3)))
    pt, pl, pb, pr = pad4(padding)
    h = max(1, (kh - 1) * dilation[0] + 1 - pt - pb) + draw(st.integers(0, 5))
    w = max(1, (kw - 1) * dilation[1] + 1 - pl - pr) + draw(st.integers(0, 5))
    layout = draw(LAYOUTS)
    attrs = {"pool_size": (kh, kw), "strides": strides, "dilation": dilation,
             "padding": padding, "layout": layout, "ceil_mode": draw(st.booleans())}
    if avg:
        attrs["count_include_pad"] = draw(st.booleans())
    shape = _shape(draw(st.integers(1, 2)), draw(st.integers(1, 4)), h, w, layout)
    return shape, attrs, draw(DTYPES)


@settings(max_examples=80)
@given(case=pool_cases(avg=False), seed=st.integers(0, 2**16))
def test_max_pool2d_matches_reference(case: tuple, seed: int) -> None:
    shape, attrs, dtype = case
    check_kernel("nn.max_pool2d", [_rand(np.random.default_rng(seed), shape, dtype)], attrs,
                 **TOL)


@settings(max_examples=80)
@given(case=pool_cases(avg=True), seed=st.integers(0, 2**16))
def test_avg_pool2d_matches_reference(case: tuple, seed: int) -> None:
    shape, attrs, dtype = case
    check_kernel("nn.avg_pool2d", [_rand(np.random.default_rng(seed), shape, dtype)], attrs,
                 **TOL)


@pytest.mark.parametrize("op", ["nn.max_pool2d", "nn.avg_pool2d"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pool_windows_entirely_in_padding(op: str, layout: str) -> None:
    """Padding wider than the window: the corner windows see no input (-inf for max, 0 for
    the average, as the padded reference computes)."""
    x = _rand(np.random.default_rng(0), _shape(1, 3, 2, 2, layout), "float32")
    want = check_kernel(op, [x], {"pool_size": (2, 2), "strides": (3, 3),
                                  "padding": (3, 3, 3, 3), "layout": layout}, **TOL)
    assert want is not None and want.shape == _shape(1, 3, 3, 3, layout)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_pool2d_resnet_stem(layout: str) -> None:
    """3x3 stride-2 pad-1 max pooling (the vectorised stride-2 path) on an odd size."""
    x = _rand(np.random.default_rng(1), _shape(1, 5, 13, 12, layout), "float32")
    check_kernel("nn.max_pool2d", [x], {"pool_size": (3, 3), "strides": (2, 2),
                                         "padding": (1, 1), "layout": layout}, **TOL)


@settings(max_examples=40)
@given(n=st.integers(1, 2), c=st.integers(1, 5), h=st.integers(1, 6), w=st.integers(1, 6),
       layout=LAYOUTS, dtype=DTYPES, kind=st.sampled_from(["avg", "max"]),
       seed=st.integers(0, 2**16))
def test_global_pool2d_matches_reference(n: int, c: int, h: int, w: int, layout: str,
                                         dtype: str, kind: str, seed: int) -> None:
    x = _rand(np.random.default_rng(seed), _shape(n, c, h, w, layout), dtype)
    check_kernel(f"nn.global_{kind}_pool2d", [x], {"layout": layout}, **TOL)


@pytest.mark.parametrize("kind", ["avg", "max"])
def test_global_pool2d_empty_extent_raises_as_the_reference(kind: str) -> None:
    check_kernel(f"nn.global_{kind}_pool2d", [np.zeros((1, 2, 0, 3), "float32")], {})


def test_max_pools_propagate_nan_as_the_reference() -> None:
    from relay_ref.ops.registry import get_op, make_attrs, op_kernel

    x = np.arange(2 * 3 * 6 * 6, dtype="float32").reshape(2, 3, 6, 6)
    x[0, 1, 2, 3] = np.nan
    x[1, 2, 0, 0] = np.inf
    for name, attrs in (("nn.max_pool2d", {"pool_size": (3, 3), "strides": (2, 2),
                                           "padding": (1, 1)}),
                        ("nn.global_max_pool2d", {})):
        a = make_attrs(name, attrs)
        got = op_kernel(name)([x], a)
        want = get_op(name).reference([x], a)
        np.testing.assert_array_equal(got, want)  # NaN positions equal too
        assert np.isnan(got).any()


@settings(max_examples=60)
@given(case=pool_cases(avg=False), seed=st.integers(0, 2**16),
       fill=st.sampled_from([np.nan, np.inf, -np.inf]), frac=st.sampled_from([0.05, 0.3, 1.0]))
def test_max_pool2d_propagates_nan_and_inf_as_the_reference(case: tuple, seed: int,
                                                            fill: float, frac: float) -> None:
    """Any NaN in a window gives NaN (``np.max``'s rule), wherever it lies among the taps
    and whatever came before it; infinities are ordinary values."""
    shape, attrs, dtype = case
    if not dtype.startswith("float"):
        dtype = "float32"
    rng = np.random.default_rng(seed)
    x = _rand(rng, shape, dtype)
    x[rng.random(shape) < frac] = fill
    if not np.isnan(fill):
        x[rng.random(shape) < frac / 2] = np.nan
    check_kernel("nn.max_pool2d", [x], attrs, **TOL)
