"""The plain elementwise kernels (``relay_ref/ops/cpu_elementwise.py``) against the
references: every op ``plain_ufunc`` names, on float, integer, bool and 0-d inputs, with
and without ``out=``; bool arithmetic and other cases off the fast path fail or succeed
exactly as the reference does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel

from relay_ref.ops.kernels import _PLAIN_UFUNC_OPS
from relay_ref.ops.registry import get_op, op_kernel
from relay_ref.ops.tensor import plain_ufunc

DTYPES = ("float32", "float64", "int32", "uint8", "bool")


def test_every_plain_ufunc_op_has_the_kernel() -> None:
    for name in _PLAIN_UFUNC_OPS:
        assert plain_ufunc(name) is not None, name
        assert op_kernel(name) is not None, name


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the executor runs them in errstate
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_PLAIN_UFUNC_OPS), st.sampled_from(DTYPES),
       st.sampled_from([(), (3,), (2, 4)]), st.integers(0, 2**31))
def test_kernels_equal_the_references(name: str, dtype: str, shape: tuple,
                                      seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.uniform(-3, 3, size=(2, *shape))
    if dtype != "bool" and np.dtype(dtype).kind == "f":
        values[0].flat[0] = np.nan if values.size > 2 else values[0].flat[0]
    args = [np.asarray(v).astype(dtype) for v in values[: get_op(name).num_inputs]]
    check_kernel(name, args, {}, rtol=1e-6, atol=1e-7)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=120, deadline=None)
@given(st.sampled_from(["float32", "float64", "int32"]), st.integers(1, 4),
       st.integers(-4, 3), st.integers(0, 2**31), st.booleans())
def test_bias_add_equals_the_reference(dtype: str, ndim: int, axis: int, seed: int,
                                       wrong_length: bool) -> None:
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(1, 5, size=ndim))
    axis = axis % ndim - (ndim if seed % 2 else 0)  # negative axes too
    x = rng.uniform(-3, 3, size=shape).astype(dtype)
    if dtype != "int32":
        x.flat[0] = np.inf
    b = rng.uniform(-3, 3, size=shape[axis] + (1 if wrong_length else 0)).astype(dtype)
    if wrong_length:  # off the fast path: the reference's own result or error
        kernel = op_kernel("nn.bias_add")
        from relay_ref.ops.registry import make_attrs
        attrs = make_attrs("nn.bias_add", {"axis": axis})
        try:
            want = get_op("nn.bias_add").reference([x, b], attrs)
        except Exception as e:  # noqa: BLE001 -- the same kind from the kernel
            with pytest.raises(type(e)):
                kernel([x, b], attrs)
        else:
            np.testing.assert_array_equal(kernel([x, b], attrs), want)
        return
    got = check_kernel("nn.bias_add", [x, b], {"axis": axis}, rtol=0.0, atol=0.0)
    assert got is not None and got.shape == shape


def test_bool_arithmetic_fails_as_the_reference() -> None:
    a = np.array([True, False])
    with pytest.raises(Exception) as want:
        get_op("subtract").reference([a, a], None)
    with pytest.raises(type(want.value)):
        op_kernel("subtract")([a, a], None)
