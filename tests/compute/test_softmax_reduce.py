"""Softmax, log-softmax, layer norm and the reductions (``cpu_tensor`` over
``compute/cpu/softmax.py`` and ``reduce.py``) against the ops' NumPy references: random
shapes, axes and attributes, with and without ``out=``; row lengths that exercise the
vectorised loops and their remainders; non-finite values; the references' dtype rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel

from relay_ref.compute.cpu import softmax as sm

SHAPES = st.lists(st.integers(1, 5), min_size=1, max_size=4)
FLOATS = st.sampled_from(["float32", "float32", "float64"])
SUM_TOL = {"rtol": 1e-4, "atol": 1e-5}  # sums in another order; inputs in [-2, 2]


def _rand(seed: int, shape: tuple[int, ...] | list[int], dtype: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.startswith(("int", "uint")):
        return rng.integers(-100, 100, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


# -- softmax --------------------------------------------------------------------------

@settings(max_examples=40)
@given(seed=st.integers(0, 2**16), shape=SHAPES, dtype=FLOATS, data=st.data(),
       op=st.sampled_from(["nn.softmax", "nn.log_softmax"]))
def test_softmax(seed: int, shape: list[int], dtype: str, data: st.DataObject,
                 op: str) -> None:
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    x = _rand(seed, shape, dtype) * 4
    check_kernel(op, [x], {"axis": axis}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 31, 33, 1000])
@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_softmax_row_lengths(n: int, op: str) -> None:
    # log-softmax near 0 is -log(1 + small): its float32 error is absolute, a few ulps of 1
    tol = {"rtol": 1e-5, "atol": 1e-7 if op == "nn.softmax" else 1e-6}
    x = _rand(n, (3, n), "float32") * 10
    check_kernel(op, [x], {"axis": -1}, **tol)
    check_kernel(op, [np.ascontiguousarray(x.T)], {"axis": 0}, **tol)


@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_softmax_non_finite(op: str) -> None:
    # -inf gives 0 / -inf; NaN or +inf in a row gives a NaN row (the reference's rule);
    # values far below the maximum underflow to 0
    x = np.array([[0.0, -np.inf, 1.0, 2.0], [1.0, np.nan, 2.0, 3.0],
                  [np.inf, 1.0, 2.0, 3.0], [0.0, -200.0, -90.0, -100.0]], "float32")
    check_kernel(op, [x], {"axis": -1}, rtol=1e-5, atol=1e-30)
    check_kernel(op, [np.ascontiguousarray(x.T)], {"axis": 0}, rtol=1e-5, atol=1e-30)


def test_softmax_other_inputs_run_the_reference() -> None:
    check_kernel("nn.softmax", [np.arange(6, dtype="int32").reshape(2, 3)], {"axis": 1})
    check_kernel("nn.softmax", [np.zeros((0, 3), "float32")], {"axis": 1})
    check_kernel("nn.log_softmax", [_rand(0, (4, 3), "float16")], {"axis": 0}, rtol=1e-3)
    strided = _rand(1, (4, 6), "float32")[:, ::2]
    check_kernel("nn.softmax", [strided], {"axis": -1})


def test_exp_f32_accuracy() -> None:
    # the vectorisable exp against float64's over [-104, 88.7]: 5e-7 relative (~4 ulp) on
    # normal results, within 3 subnormal steps on subnormal ones; inf from 88.73 (the
    # float32 overflow point, give or take the polynomial's ulp), NaN kept
    v = np.linspace(-104, 88.7, 20001, dtype="float32")[::7]
    got = np.array([sm.exp_f32(a) for a in v], "float32")
    with np.errstate(over="ignore"):
        want = np.exp(v.astype("float64")).astype("float32")
    normal = want >= np.finfo("float32").tiny
    np.testing.assert_allclose(got[normal], want[normal], rtol=5e-7)
    assert np.all(np.abs(got[~normal] - want[~normal]) < 5e-45)
    assert sm.exp_f32(np.float32(88.74)) == np.inf
    assert sm.exp_f32(np.float32(1e30)) == np.inf
    assert np.isnan(sm.exp_f32(np.float32(np.nan)))


# -- layer norm ---------------------------------------------------------------------

@settings(max_examples=30)
@given(seed=st.integers(0, 2**16), shape=SHAPES, dtype=FLOATS, center=st.booleans(),
       scale=st.booleans(), eps=st.sampled_from([1e-5, 1e-3, 0.5]), data=st.data())
def test_layer_norm(seed: int, shape: list[int], dtype: str, center: bool, scale: bool,
                    eps: float, data: st.DataObject) -> None:
    axis = data.draw(st.sampled_from([-1, -1, len(shape) - 1, 0]), label="axis")
    x = _rand(seed, shape, dtype)
    c = shape[axis]
    gamma, beta = _rand(seed + 1, (c,), dtype), _rand(seed + 2, (c,), dtype)
    check_kernel("nn.layer_norm", [x, gamma, beta],
                 {"axis": axis, "epsilon": eps, "center": center, "scale": scale},
                 rtol=1e-4, atol=1e-5)


def test_layer_norm_long_rows() -> None:
    x = _rand(3, (5, 777), "float32") + 3.0
    gamma, beta = _rand(4, (777,), "float32"), _rand(5, (777,), "float32")
    check_kernel("nn.layer_norm", [x, gamma, beta], {}, rtol=1e-4, atol=1e-5)


# -- reductions --------------------------------------------------------------------------

REDUCE_DTYPES = st.sampled_from(["float32", "float32", "float64", "int32", "int8"])


@st.composite
def reduce_attrs(draw: st.DrawFn, ndim: int) -> dict:
    attrs: dict = {"keepdims": draw(st.booleans()), "exclude": draw(st.booleans())}
    if draw(st.integers(0, 3)) > 0:
        axes = draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim))
        attrs["axis"] = tuple(a - ndim if draw(st.booleans()) else a for a in axes)
    return attrs


@settings(max_examples=60)
@given(seed=st.integers(0, 2**16), shape=st.lists(st.integers(0, 4), max_size=4),
       dtype=REDUCE_DTYPES, op=st.sampled_from(["sum", "mean", "max", "min"]),
       data=st.data())
def test_reductions(seed: int, shape: list[int], dtype: str, op: str,
                    data: st.DataObject) -> None:
    # includes rank 0, empty extents (max/min of one raise in both), integer means and
    # int8 sums (wrap in the input dtype, as the references do)
    attrs = data.draw(reduce_attrs(len(shape)), label="attrs")
    x = _rand(seed, shape, dtype)
    check_kernel(op, [x], attrs, **SUM_TOL)


@pytest.mark.parametrize("shape,axis", [((3, 40, 5), (1,)), ((2, 3, 50), (1, 2)),
                                        ((70,), None), ((4, 33), (0,)), ((2, 3, 4, 5), (1, 2))])
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_float_sum_kernels(shape: tuple[int, ...], axis: tuple[int, ...] | None,
                           op: str) -> None:
    # consecutive axes of a C-contiguous float array: the numba row / middle-axis sums
    for dtype in ("float32", "float64"):
        attrs = {} if axis is None else {"axis": axis}
        check_kernel(op, [_rand(len(shape), shape, dtype)], attrs, **SUM_TOL)
        check_kernel(op, [_rand(len(shape), shape, dtype)], {**attrs, "keepdims": True},
                     **SUM_TOL)


def test_reductions_non_finite_and_strided() -> None:
    x = np.array([[1.0, np.inf, 2.0], [np.nan, 1.0, 0.0], [-np.inf, np.inf, 1.0]], "float32")
    for op in ("sum", "mean", "max", "min"):
        check_kernel(op, [x], {"axis": (1,)})
        check_kernel(op, [x[:, ::2]], {"axis": (1,)})
        check_kernel(op, [np.full((2, 3), 3e38, "float32")], {"axis": (1,)})  # overflow
