"""The conv2d kernel (``cpu_nn.conv2d`` over ``compute/cpu/conv.py``) against the op's NumPy
reference: random shapes and every attribute (groups, depthwise with channel multipliers,
strides, dilation, 1/2/4-value padding, NCHW/NHWC, other kernel layouts), with and without
``out=``, float32/float64 through the fast paths and the rest through the reference.

The numba kernels compiled here are few: one per (kernel, dtype) for float32 and float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel

from relay_ref.ops import cpu_nn
from relay_ref.ops.kernels import BUILTIN_CPU_KERNELS
from relay_ref.ops.nn import pad4
from relay_ref.ops.registry import OpRuntimeError, make_attrs, op_kernel

# BLAS and the depthwise loop sum in their own order (K <= 27 products of values in [-1, 1])
TOL = {"rtol": 1e-4, "atol": 1e-5}
OURS = ("nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
        "nn.global_max_pool2d")


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def _layout(canonical_shape: tuple[int, ...], canonical: str, layout: str) -> tuple:
    return tuple(canonical_shape[canonical.index(c)] for c in layout)


@st.composite
def conv_cases(draw: st.DrawFn) -> tuple[tuple, tuple, dict, str]:
    """(data shape, weight shape, attrs, dtype), shapes written in the drawn layouts."""
    n = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["dense", "dense", "grouped", "depthwise", "pointwise"]))
    if kind == "depthwise":
        groups = c = draw(st.integers(2, 4))
        cg, o = 1, c * draw(st.integers(1, 2))
    else:
        groups = draw(st.integers(2, 3)) if kind == "grouped" else 1
        cg = draw(st.integers(1, 3))
        c, o = cg * groups, groups * draw(st.integers(1, 3))
    if kind == "pointwise":
        kh = kw = 1
        strides, dilation, padding = (1, 1), (1, 1), (0, 0)
    else:
        kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        padding = tuple(draw(st.lists(st.integers(0, 2), min_size=1, max_size=4)
                             .filter(lambda p: len(p) != 3)))
    pt, pl, pb, pr = pad4(padding)
    # at least one output row and column
    h = max(1, (kh - 1) * dilation[0] + 1 - pt - pb) + draw(st.integers(0, 4))
    w = max(1, (kw - 1) * dilation[1] + 1 - pl - pr) + draw(st.integers(0, 4))
    data_layout = draw(st.sampled_from(["NCHW", "NCHW", "NHWC", "NHWC", "HWCN"]))
    kernel_layout = draw(st.sampled_from(
        {"NCHW": ["OIHW", "OIHW", "HWIO"], "NHWC": ["HWIO", "HWIO", "OHWI"]}.get(
            data_layout, ["OIHW"])))
    dtype = draw(st.sampled_from(["float32", "float32", "float32", "float64"]))
    attrs = {"strides": strides, "dilation": dilation, "padding": padding, "groups": groups,
             "data_layout": data_layout, "kernel_layout": kernel_layout}
    return (_layout((n, c, h, w), "NCHW", data_layout),
            _layout((o, cg, kh, kw), "OIHW", kernel_layout), attrs, dtype)


@settings(max_examples=120)
@given(case=conv_cases(), seed=st.integers(0, 2**16))
def test_conv2d_matches_reference(case: tuple, seed: int) -> None:
    data_shape, weight_shape, attrs, dtype = case
    rng = np.random.default_rng(seed)
    check_kernel("nn.conv2d", [_rand(rng, data_shape, dtype), _rand(rng, weight_shape, dtype)],
                 attrs, **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("strides, dilation, mult", [
    ((1, 1), (1, 1), 1), ((1, 1), (2, 1), 2), ((2, 2), (1, 1), 1), ((1, 2), (1, 2), 2)])
def test_conv2d_depthwise_3x3(layout: str, strides: tuple, dilation: tuple, mult: int) -> None:
    """MobileNet-like depthwise layers (stride 1 runs its own wide-row kernel in NCHW),
    asymmetric padding, channel multipliers 1 and 2."""
    rng = np.random.default_rng(0)
    shape = (2, 8, 9, 11) if layout == "NCHW" else (2, 9, 11, 8)
    kernel_layout = "OIHW" if layout == "NCHW" else "HWIO"
    o = 8 * mult
    weight = rng.uniform(-1, 1, (o, 1, 3, 3) if layout == "NCHW" else (3, 3, 1, o))
    check_kernel("nn.conv2d", [rng.uniform(-1, 1, shape).astype("float32"),
                               weight.astype("float32")],
                 {"groups": 8, "strides": strides, "dilation": dilation,
                  "padding": (0, 2, 1, 1), "data_layout": layout,
                  "kernel_layout": kernel_layout}, **TOL)


def test_conv2d_strided_view_input() -> None:
    """A non-contiguous argument (a transposed view) gives the same result."""
    rng = np.random.default_rng(1)
    data = rng.uniform(-1, 1, (1, 6, 7, 5)).astype("float32").transpose(0, 3, 1, 2)
    check_kernel("nn.conv2d", [data, rng.uniform(-1, 1, (4, 5, 3, 3)).astype("float32")],
                 {"padding": (1,)}, **TOL)


@pytest.mark.parametrize("attrs, dtypes", [
    ({"out_dtype": "int32"}, ("int8", "int8")),  # integer: the reference
    ({}, ("int32", "int32")),
    ({"out_dtype": "float64"}, ("float32", "float32")),  # another output dtype
    ({}, ("float32", "float64")),  # mixed dtypes
    ({"out_layout": "NHWC"}, ("float32", "float32")),  # an output layout of its own
])
def test_conv2d_reference_cases(attrs: dict, dtypes: tuple[str, str]) -> None:
    rng = np.random.default_rng(2)
    check_kernel("nn.conv2d", [_rand(rng, (1, 2, 5, 5), dtypes[0]),
                               _rand(rng, (3, 2, 3, 3), dtypes[1])], attrs, **TOL)


def test_conv2d_inconsistent_shapes_run_the_reference() -> None:
    """Shapes the relation rejects never reach the numba kernels: the reference's own error
    comes back (here NumPy's, as the reference raises it)."""
    rng = np.random.default_rng(3)
    args = [_rand(rng, (1, 3, 5, 5), "float32"), _rand(rng, (2, 2, 3, 3), "float32")]
    attrs = make_attrs("nn.conv2d", {})
    with pytest.raises((ValueError, OpRuntimeError)):
        cpu_nn.conv2d(args, attrs)


@pytest.mark.parametrize("name", OURS)
def test_builtin_table_loads_the_adapters(name: str) -> None:
    module, _, func = BUILTIN_CPU_KERNELS[name].partition(":")
    assert module == "relay_ref.ops.cpu_nn"
    assert op_kernel(name) is getattr(cpu_nn, func)


@settings(max_examples=60)
@given(c=st.integers(1, 6), mult=st.integers(1, 2), n=st.integers(1, 2),
       kh=st.integers(1, 5), kw=st.integers(1, 5), sh=st.integers(1, 3), sw=st.integers(1, 3),
       dh=st.integers(1, 2), dw=st.integers(1, 2),
       padding=st.lists(st.integers(0, 3), min_size=4, max_size=4),
       extra=st.tuples(st.integers(0, 9), st.integers(0, 9)),
       dtype=st.sampled_from(["float32", "float64"]), seed=st.integers(0, 2**16))
def test_conv2d_depthwise_nchw_any_stride(c: int, mult: int, n: int, kh: int, kw: int,
                                          sh: int, sw: int, dh: int, dw: int,
                                          padding: list, extra: tuple, dtype: str,
                                          seed: int) -> None:
    """The NCHW depthwise kernel (stride phases of the padded plane, reused across the
    planes of a task) for every stride, dilation, padding (wider than the taps too) and
    kernel size up to 5 (the three-tap passes and their remainder)."""
    pt, pl, pb, pr = padding
    h = max(1, (kh - 1) * dh + 1 - pt - pb) + extra[0]
    w = max(1, (kw - 1) * dw + 1 - pl - pr) + extra[1]
    rng = np.random.default_rng(seed)
    check_kernel("nn.conv2d", [_rand(rng, (n, c, h, w), dtype),
                               _rand(rng, (c * mult, 1, kh, kw), dtype)],
                 {"strides": (sh, sw), "dilation": (dh, dw), "padding": tuple(padding),
                  "groups": c}, **TOL)


@settings(max_examples=40)
@given(case=conv_cases(), seed=st.integers(0, 2**16))
def test_conv2d_split_paths_match_reference(case: tuple, seed: int) -> None:
    """The pool-task splits of the depthwise and grouped 1x1 paths, forced on small shapes
    (thresholds 0, two threads): the same results as the serial paths."""
    from relay_ref.compute.cpu import parallel

    data_shape, weight_shape, attrs, dtype = case
    rng = np.random.default_rng(seed)
    saved = (cpu_nn._DEPTHWISE_SPLIT, cpu_nn._POINTWISE_SPLIT_FLOPS, parallel.threads())
    try:
        cpu_nn._DEPTHWISE_SPLIT = cpu_nn._POINTWISE_SPLIT_FLOPS = 0
        parallel.set_threads(2)
        check_kernel("nn.conv2d", [_rand(rng, data_shape, dtype),
                                   _rand(rng, weight_shape, dtype)], attrs, **TOL)
    finally:
        cpu_nn._DEPTHWISE_SPLIT, cpu_nn._POINTWISE_SPLIT_FLOPS = saved[:2]
        parallel.set_threads(saved[2])
