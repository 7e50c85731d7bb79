"""AD of imported ONNX models (spec/ad.md): ``rr.gradient`` of a small graph built with
``onnx.helper`` (Conv, BatchNormalization in inference form, Relu, MaxPool, Flatten, Gemm,
LogSoftmax and a cross-entropy loss) against ``jax.grad`` of the same computation, with
respect to the input and every weight; and ``rr.gradient`` + ``rr.compile`` of a real
``light_*`` model (SqueezeNet, with its pre-softmax logits as an extra output), whose two
reverse modes must agree and whose gradient must predict the change of the output."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx
from relay_ref.testing import onnx_light

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

B, C, S, F, K = 2, 3, 6, 4, 5  # batch, channels, image side, filters, classes
RTOL, ATOL = 2e-4, 2e-5  # float32 (jax and relay_ref sum in different orders)


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.normal(size=shape) * scale).astype("float32")

    return {"w": f32(F, C, 3, 3, scale=0.4), "b": f32(F, scale=0.1),
            "gamma": (rng.uniform(0.5, 1.5, F)).astype("float32"), "beta": f32(F, scale=0.1),
            "mean": f32(F, scale=0.1), "var": (rng.uniform(0.5, 1.5, F)).astype("float32"),
            "fc_w": f32(K, F * (S // 2) ** 2, scale=0.2), "fc_b": f32(K, scale=0.1)}


def _model(weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    """conv -> batchnorm -> relu -> maxpool -> flatten -> gemm -> log_softmax -> -mean(y*.)"""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["z"], transB=1),
        helper.make_node("LogSoftmax", ["z"], ["ls"], axis=1),
        helper.make_node("Mul", ["ls", "y"], ["ly"]),
        helper.make_node("ReduceSum", ["ly"], ["s"], keepdims=0),
        helper.make_node("Neg", ["s"], ["loss"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, (B, C, S, S)),
              helper.make_tensor_value_info("y", TensorProto.FLOAT, (B, K))]
    graph = helper.make_graph(
        nodes, "small_cnn", inputs,
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, ())],
        [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _jax_loss(x, y, w, b, gamma, beta, mean, var, fc_w, fc_b):  # noqa: PLR0913
    c = jax.lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)]) + b[None, :, None, None]
    scale = gamma / jnp.sqrt(var + 1e-5)
    n = (c - mean[None, :, None, None]) * scale[None, :, None, None] + beta[None, :, None, None]
    r = jnp.maximum(n, 0)
    p = jax.lax.reduce_window(r, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    z = p.reshape(B, -1) @ fc_w.T + fc_b
    return -jnp.sum(jax.nn.log_softmax(z, axis=1) * y)


@pytest.mark.parametrize("mode", ["higher_order", "first_order"])
def test_gradient_of_an_imported_onnx_cnn_matches_jax(mode: str) -> None:
    rng = np.random.default_rng(0)
    weights = _weights(rng)
    x = rng.normal(size=(B, C, S, S)).astype("float32")
    y = np.eye(K, dtype="float32")[rng.integers(0, K, B)]
    mod, params = from_onnx(_model(weights))
    names = [p.name_hint for p in mod["main"].params]
    assert names == ["x", "y", *weights]  # the initializers follow the graph inputs
    assert all(np.array_equal(params[k], v) for k, v in weights.items())
    args = [x, y, *weights.values()]
    value, grads = rr.evaluate(rr.gradient(mod, mode), *args)
    want_value, want_grads = jax.value_and_grad(_jax_loss, argnums=tuple(range(len(args))))(
        *args)
    np.testing.assert_allclose(value, want_value, rtol=RTOL, atol=ATOL)
    assert len(grads) == len(names)
    for key, got, want in zip(names, grads, map(np.asarray, want_grads), strict=True):
        assert got.shape == want.shape, key
        assert np.abs(want).max() > 1e-3, key  # every gradient is informative
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * np.abs(want).max(),
                                   err_msg=key)


def _squeezenet() -> tuple[rr.IRModule, list[np.ndarray]]:
    model = onnx_light.with_logits(onnx_light.random_variant(onnx.load(
        onnx_light.model_path("squeezenet"))))
    feeds = onnx_light.feeds(model)
    mod, params = from_onnx(model)
    return rr.infer_types(mod), [*feeds.values(), *params.values()]


def test_gradient_of_squeezenet_compiles_and_the_two_reverse_modes_agree() -> None:
    mod, args = _squeezenet()
    first = rr.gradient(mod, "first_order")
    value, grads = rr.compile(first)(*args)
    want_value, want_grads = rr.evaluate(rr.gradient(mod, "higher_order"), *args)
    assert len(grads) == len(args) == len(want_grads)
    for got, want in zip([*value, *grads], [*want_value, *want_grads], strict=True):
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * max(
            1.0, float(np.abs(want).max())))
    # the output's sum is sum(logits) + 1 (softmax): every weight reaches the logits, so
    # every gradient is informative (a dropped adjoint would leave zeros)
    assert all(float(np.abs(g).max()) > 0 for g in grads)
    # the gradient predicts the change of the summed output along itself (float64 sums)
    data, grad = args[0], grads[0]
    step = 1e-2 / float(np.linalg.norm(grad))
    forward = rr.compile(mod)

    def total(x: np.ndarray) -> float:
        return sum(float(np.sum(o, dtype=np.float64)) for o in forward(x, *args[1:]))

    change = total(data + step * grad) - total(data - step * grad)
    predicted = 2 * step * float(np.sum(grad.astype(np.float64) ** 2))
    assert change == pytest.approx(predicted, rel=0.05)
