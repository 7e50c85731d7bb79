"""RNN, GRU and LSTM (``ops_extra_rnn``, unrolled) against onnxruntime with random
weights: directions, biases, initial states, peepholes, ragged ``sequence_lens``, ``clip``,
``linear_before_reset``, ``layout=1`` and non-default activations; every output."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator
from onnx_case import assert_matches, node_model, rand, relay_run

S, B, I, H = 4, 3, 2, 3  # noqa: E741 - sequence, batch, input, hidden


def _weights(kind: str, n_dir: int, seed: int) -> dict[str, np.ndarray]:
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    return {"W": rand(n_dir, g * H, I, seed=seed, low=-1, high=1),
            "R": rand(n_dir, g * H, H, seed=seed + 1, low=-1, high=1),
            "B": rand(n_dir, 2 * g * H, seed=seed + 2, low=-1, high=1)}


CASES = [
    ("RNN", {"direction": "bidirectional", "activations": ["Relu", "Tanh"]}, False),
    ("GRU", {"linear_before_reset": 1}, True),
    ("GRU", {"direction": "reverse", "clip": 0.7}, False),
    ("LSTM", {"direction": "bidirectional"}, True),
    ("LSTM", {"activations": ["HardSigmoid", "Softsign", "Tanh"]}, False),
]


@pytest.mark.parametrize("kind,attrs,with_state", CASES)
def test_recurrent_layer_matches_onnxruntime(kind: str, attrs: dict, with_state: bool
                                             ) -> None:
    n_dir = 2 if attrs.get("direction") == "bidirectional" else 1
    inputs = {"X": rand(S, B, I, seed=1)}
    names = ["X", "W", "R", "B"]
    init = _weights(kind, n_dir, seed=3)
    if with_state:
        init["lens"] = np.array([S, 2, 1], np.int32)
        init["h0"] = rand(n_dir, B, H, seed=7)
        names += ["lens", "h0"]
        if kind == "LSTM":
            init["c0"] = rand(n_dir, B, H, seed=8)
            init["P"] = rand(n_dir, 3 * H, seed=9)
            names += ["c0", "P"]
    model = node_model(kind, inputs, {"hidden_size": H, **attrs}, opset=14,
                       n_outputs=3 if kind == "LSTM" else 2, initializers=init,
                       input_names=names)
    assert_matches(model, inputs, rtol=1e-4, atol=1e-5)


def test_batch_first_layout_compiled() -> None:
    """Against ONNX's reference evaluator (onnxruntime has no ``layout=1``; the evaluator
    ignores ``sequence_lens``, which the cases above cover)."""
    inputs = {"X": rand(B, S, I, seed=2)}
    model = node_model("LSTM", inputs, {"hidden_size": H, "layout": 1}, opset=14,
                       n_outputs=3, initializers=_weights("LSTM", 1, seed=4),
                       input_names=["X", "W", "R", "B"])
    want = ReferenceEvaluator(model).run(None, inputs)
    got = relay_run(model, inputs, compiled=True)
    assert [g.shape for g in got] == [w.shape for w in want] == [(B, S, 1, H), (B, 1, H),
                                                                  (B, 1, H)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
