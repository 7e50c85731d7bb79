"""Helpers of the simulator tests: run an operator's CUDA kernel (the protocol of
``relay_ref/ops/cuda_ops.py``) and compare it with the op's NumPy reference."""

from __future__ import annotations

from typing import Any

import numpy as np

from relay_ref.compute.cuda import device_array, to_device, to_host
from relay_ref.ir.types import TensorType
from relay_ref.ops.registry import get_op, op_kernel


def tensor_type(a: np.ndarray) -> TensorType:
    return TensorType(tuple(a.shape), a.dtype.name)


def run_cuda(name: str, args: list[np.ndarray], attrs: Any) -> np.ndarray:
    """The op's CUDA kernel on ``args`` (copied to the device), checked to claim support."""
    ref = np.asarray(get_op(name).reference(args, attrs))
    kernel = op_kernel(name, "cuda")
    assert kernel is not None, name
    types = [tensor_type(a) for a in args]
    assert kernel.supports(types, attrs, tensor_type(ref)), (name, types, attrs)
    if getattr(kernel, "returns_view", False):
        return to_host(kernel([to_device(a) for a in args], attrs, ref.shape))
    out = device_array(ref.shape, ref.dtype)
    result = kernel([to_device(a) for a in args], attrs, out)
    assert result is out
    return to_host(out)


def check_op(name: str, args: list[np.ndarray], **attrs: Any) -> None:
    """The CUDA kernel equals the reference (float tolerance of the dtype)."""
    a = get_op(name).attrs(**attrs)
    want = np.asarray(get_op(name).reference(args, a))
    got = run_cuda(name, args, a)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-4 if want.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def rand(rng: np.random.Generator, *shape: int, dtype: str = "float32") -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)
