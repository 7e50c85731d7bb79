"""Differential check of a CPU kernel (``op_kernel(name)``) against the op's NumPy
reference, used by the tests of ``relay_ref/ops/cpu_tensor.py``.

``check_kernel`` asserts the kernel protocol (``registry.KernelRef``):

* the value equals the reference's (same shape and dtype; floats within ``rtol``/``atol``,
  everything else exactly, NaN where the reference has NaN);
* without ``out`` the result is a fresh array, unless the kernel has ``returns_view``;
* with ``out`` (a C-contiguous array filled with garbage) the kernel returns ``out`` itself;
* the arguments are never mutated;
* when the reference raises ``OpRuntimeError`` the kernel raises it too.
"""

from __future__ import annotations

import numpy as np
import pytest

from relay_ref.ops.registry import OpRuntimeError, get_op, make_attrs, op_kernel


def _copy(v: object) -> object:
    return tuple(np.array(a, copy=True) for a in v) if isinstance(v, tuple) else np.array(
        v, copy=True)


def _arrays(args: list) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for v in args:
        out.extend(v if isinstance(v, tuple) else [v])
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def check_kernel(name: str, args: list, attrs: dict | object, *, rtol: float = 1e-5,
                 atol: float = 0.0) -> np.ndarray | None:
    """Run ``name``'s CPU kernel on ``args`` with and without ``out`` and compare it with the
    reference; returns the reference value (None when it raised ``OpRuntimeError``)."""
    at = make_attrs(name, attrs) if isinstance(attrs, dict) else attrs
    kernel = op_kernel(name)
    assert kernel is not None, f"{name} has no cpu kernel"
    before = [_copy(a) for a in args]
    try:
        want = get_op(name).reference(list(args), at)
    except OpRuntimeError:
        with pytest.raises(OpRuntimeError):
            kernel(list(args), at)
        return None
    want = np.asarray(want)
    got = kernel(list(args), at)
    _compare(got, want, rtol, atol, name)
    if not getattr(kernel, "returns_view", False):
        for a in _arrays(args):
            assert not np.shares_memory(got, a), f"{name}: result is a view of an argument"
    out = np.empty(want.shape, want.dtype)
    out.fill(7 if want.dtype.kind in "iub" else np.nan)
    got_out = kernel(list(args), at, out=out)
    assert got_out is out, f"{name}: with out=, the kernel must return out itself"
    _compare(out, want, rtol, atol, name)
    for a, b in zip(args, before, strict=True):
        for x, y in zip(_arrays([a]), _arrays([b]), strict=True):
            assert _same(x, y), f"{name}: an argument was mutated"
    return want


def _compare(got: object, want: np.ndarray, rtol: float, atol: float, name: str) -> None:
    assert isinstance(got, np.ndarray), f"{name}: returned {type(got)}"
    assert got.shape == want.shape, f"{name}: shape {got.shape} vs {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} vs {want.dtype}"
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)
