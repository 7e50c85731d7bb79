"""AD on deep graph-form programs (the form the ONNX importer and TVM's printer write):
``%i = tanh(%i-1)`` chains hundreds of nodes deep in every mode, and ``gradient(@f)`` of one
through the interpreter and ``rr.compile``, against the chain rule computed in NumPy
(float64). Was a ``RecursionError`` at 200 nodes in higher-order mode."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr


def _chain(n: int, name: str = "main") -> str:
    lines = [f"def @{name}(%x: Tensor[(4), float32]) {{", "  %0 = tanh(%x);"]
    lines += [f"  %{i} = tanh(%{i - 1});" for i in range(1, n)]
    return "\n".join([*lines, f"  %{n - 1}", "}"])


def _chain_rule(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    value, grad = x.astype(np.float64), np.ones(x.shape)
    for _ in range(n):
        value = np.tanh(value)
        grad = grad * (1 - value * value)
    return value, grad


X = np.linspace(-1, 1, 4).astype("float32")


@pytest.mark.parametrize("mode", ["higher_order", "first_order", "forward"])
@pytest.mark.parametrize("n", [400, 1000])
def test_gradient_of_a_deep_graph_chain(mode: str, n: int) -> None:
    value, (grad,) = rr.evaluate(rr.gradient(rr.parse(_chain(n)), mode), X)
    want_value, want_grad = _chain_rule(X, n)
    np.testing.assert_allclose(value, want_value, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-3, atol=1e-6)


def test_gradient_call_of_a_deep_graph_chain_interpreted_and_compiled() -> None:
    mod = rr.parse(_chain(400, "f") + "\ndef @main(%x: Tensor[(4), float32]) { gradient(@f)(%x) }")
    _, want_grad = _chain_rule(X, 400)
    for run in (lambda: rr.evaluate(mod, X), lambda: rr.compile(mod)(X)):
        _, (grad,) = run()
        np.testing.assert_allclose(grad, want_grad, rtol=1e-3, atol=1e-6)
