"""The BLAS kernels (``cpu_tensor.dense`` / ``matmul`` / ``batch_matmul`` over
``compute/cpu/blas.py``) against the ops' NumPy references: random shapes and attributes,
with and without ``out=``, float32/float64 through BLAS and the rest through the reference.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel

from relay_ref.compute.cpu import blas

DTYPES = st.sampled_from(["float32", "float32", "float64", "int32"])
DIM = st.integers(1, 6)
# BLAS sums K products in its own order: 1e-4 relative, plus an absolute floor for sums
# that cancel (inputs in [-1, 1], K <= 6)
BLAS_TOL = {"rtol": 1e-4, "atol": 1e-5}


def _rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**16), lead=st.lists(DIM, max_size=2), k=DIM, n=DIM,
       dtype=DTYPES, units=st.booleans(), out_f64=st.booleans())
def test_dense(seed: int, lead: list[int], k: int, n: int, dtype: str, units: bool,
               out_f64: bool) -> None:
    rng = np.random.default_rng(seed)
    attrs: dict = {"units": n} if units else {}
    if out_f64 and dtype == "float32":
        attrs["out_dtype"] = "float64"  # another output dtype: the reference runs
    check_kernel("nn.dense", [_rand(rng, (*lead, k), dtype), _rand(rng, (n, k), dtype)],
                 attrs, **BLAS_TOL)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**16), lead=st.lists(DIM, max_size=2), k=DIM, n=DIM,
       m=DIM, ta=st.booleans(), tb=st.booleans(), dtype=DTYPES)
def test_matmul(seed: int, lead: list[int], k: int, n: int, m: int, ta: bool, tb: bool,
                dtype: str) -> None:
    rng = np.random.default_rng(seed)
    a_shape = (*lead, k, m) if ta else (*lead, k)
    b_shape = (n, k) if tb else (k, n)
    check_kernel("nn.matmul", [_rand(rng, a_shape, dtype), _rand(rng, b_shape, dtype)],
                 {"transpose_a": ta, "transpose_b": tb}, **BLAS_TOL)


@settings(max_examples=40)
@given(seed=st.integers(0, 2**16), batch=st.sampled_from([(1, 1), (3, 3), (1, 3), (3, 1)]),
       m=DIM, k=DIM, n=DIM, ta=st.booleans(), tb=st.booleans(), dtype=DTYPES)
def test_batch_matmul(seed: int, batch: tuple[int, int], m: int, k: int, n: int, ta: bool,
                      tb: bool, dtype: str) -> None:
    rng = np.random.default_rng(seed)
    x_shape = (batch[0], k, m) if ta else (batch[0], m, k)
    y_shape = (batch[1], n, k) if tb else (batch[1], k, n)
    check_kernel("nn.batch_matmul", [_rand(rng, x_shape, dtype), _rand(rng, y_shape, dtype)],
                 {"transpose_a": ta, "transpose_b": tb}, **BLAS_TOL)


def test_batch_matmul_default_transposes_y() -> None:
    # TVM's default: y is (B, N, K)
    rng = np.random.default_rng(0)
    x, y = _rand(rng, (2, 3, 4), "float32"), _rand(rng, (2, 5, 4), "float32")
    want = check_kernel("nn.batch_matmul", [x, y], {}, **BLAS_TOL)
    assert want is not None and want.shape == (2, 3, 5)


def test_non_contiguous_and_empty_operands() -> None:
    rng = np.random.default_rng(1)
    w = _rand(rng, (8, 6), "float32")[:, ::2]  # a strided (8, 3) weight
    x = _rand(rng, (5, 3, 2), "float32").transpose(1, 0, 2)[..., 0]  # a strided (3, 5)
    check_kernel("nn.dense", [np.ascontiguousarray(x[:, :3]), w], {}, **BLAS_TOL)
    check_kernel("nn.dense", [x.T[:3].T, w], {}, **BLAS_TOL)
    # zero-size reductions and batches run the reference: zeros, empty
    check_kernel("nn.dense", [np.ones((2, 0), "float32"), np.ones((4, 0), "float32")], {})
    check_kernel("nn.dense", [np.ones((0, 3), "float32"), np.ones((4, 3), "float32")], {})


def test_blas_writes_out_in_place() -> None:
    # the compute functions write the given buffer (no temporary + copy)
    rng = np.random.default_rng(2)
    x, w = _rand(rng, (2, 3, 5), "float32"), _rand(rng, (4, 5), "float32")
    out = np.empty((2, 3, 4), "float32")
    assert blas.dense(x, w, out) is out
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5, atol=1e-6)
    out1 = np.empty(4, "float32")
    assert blas.dense(x[0, 0], w, out1) is out1
    np.testing.assert_allclose(out1, w @ x[0, 0], rtol=1e-5, atol=1e-6)
