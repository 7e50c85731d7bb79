"""call_dps_packed guards (Shape-DPS): a packed function gets read-only inputs and must
return nothing; both mistakes are located errors in the interpreter and the executor, and
the caller's arrays (or bound weights) are never changed."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import relay_ref as rr


def _module(name: str) -> rr.IRModule:
    return rr.parse(f'def @main(%x: Tensor[(n), float32]) {{ '
                    f'call_dps_packed("{name}", (%x,), Tensor[(n), float32]) }}')


def _returns(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    return x + 1


def _writes_input(x: np.ndarray, out: np.ndarray) -> None:
    x[0] = 5
    out[:] = x


@numba.njit(cache=False)
def _doubles(x, out):  # noqa: ANN001, ANN202 - a numba kernel
    for i in range(x.shape[0]):
        out[i] = x[i] * 2


@pytest.mark.parametrize(("fn", "message"), [
    (_returns, "returned a ndarray"),
    (_writes_input, "read-only"),
])
@pytest.mark.parametrize("engine", ["evaluate", "compile"])
def test_packed_mistakes_are_located_errors(fn, message: str, engine: str) -> None:
    name = f"guard_{fn.__name__}"
    rr.register_packed(name, fn, replace=True)
    mod = _module(name)
    x = np.arange(3, dtype="float32")
    run = (lambda: rr.evaluate(mod, x)) if engine == "evaluate" else (lambda: rr.compile(mod)(x))
    with pytest.raises(rr.RelayRuntimeError) as info:
        run()
    assert message in str(info.value) and ":1:" in str(info.value)
    np.testing.assert_array_equal(x, np.arange(3, dtype="float32"))  # unchanged


def test_a_numba_kernel_reads_its_read_only_input() -> None:
    rr.register_packed("guard_doubles", _doubles, replace=True)
    mod = _module("guard_doubles")
    x = np.arange(4, dtype="float32")
    np.testing.assert_array_equal(rr.evaluate(mod, x), 2 * x)
    np.testing.assert_array_equal(rr.compile(mod)(x), 2 * x)
