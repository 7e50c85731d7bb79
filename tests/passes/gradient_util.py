"""Helpers of the AD tests: central finite differences (float64) of the sum of a function's
result tensors (through tuples and ADT values), and the comparison with an AD gradient."""

from __future__ import annotations

from typing import Any

import numpy as np

import relay_ref as rr
from relay_ref.interpreter.values import ConstructorValue


def leaves(value: Any) -> list[np.ndarray]:
    """The tensors of a value (tuples and constructor values flattened)."""
    if isinstance(value, tuple):
        return [x for v in value for x in leaves(v)]
    if isinstance(value, ConstructorValue):
        return [x for v in value.fields for x in leaves(v)]
    return [np.asarray(value)]


def total(value: Any) -> float:
    """The sum of every float tensor of a value (what AD differentiates)."""
    return float(sum(np.sum(x) for x in leaves(value) if x.dtype.kind == "f"))


def finite_differences(mod: rr.IRModule, args: list[np.ndarray], h: float = 1e-6
                       ) -> list[np.ndarray]:
    """Central differences of ``total(@main(args))`` with respect to each argument."""
    grads = []
    for i, a in enumerate(args):
        g = np.zeros_like(a, dtype=np.float64)
        for k in np.ndindex(a.shape):
            plus = [x.copy() for x in args]
            minus = [x.copy() for x in args]
            plus[i][k] += h
            minus[i][k] -= h
            g[k] = (total(rr.evaluate(mod, *plus)) - total(rr.evaluate(mod, *minus))) / (2 * h)
        grads.append(g)
    return grads


def assert_gradient_matches(mod: rr.IRModule, args: list[np.ndarray], mode: str,
                            rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """``rr.gradient(mod, mode)`` gives @main's value and its finite-difference gradient."""
    g = rr.gradient(mod, mode)
    value, grads = rr.evaluate(g, *args)
    expected = rr.evaluate(mod, *args)
    for a, b in zip(leaves(value), leaves(expected), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for got, want in zip(grads, finite_differences(mod, args), strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
