"""AD (spec/ad.md) against ``jax.grad`` on training steps: a 2-layer MLP and a small CNN
(conv2d, bias_add, relu, max_pool2d / avg_pool2d, batch_flatten, dense, log_softmax with a
cross-entropy loss), in float64. The loss value and the gradient with respect to every input
(parameters, data and labels) must agree, in higher-order and first-order mode, through the
interpreter (``rr.evaluate``) and the compiled executor (``rr.compile``); and a training step
written in Relay text with ``gradient(@loss)`` and an SGD update gives jax's new parameters."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import relay_ref as rr

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = pytest.importorskip("jax.numpy")
lax = pytest.importorskip("jax.lax")

RTOL, ATOL = 1e-9, 1e-11
MODES = ("higher_order", "first_order")

# -- the models: Relay text and the same function in jax ------------------------------------

N, D, HID, K = 8, 4, 16, 3  # MLP: batch, features, hidden units, classes

MLP = f"""
def @main(%x: Tensor[({N}, {D}), float64], %y: Tensor[({N}, {K}), float64],
          %w1: Tensor[({HID}, {D}), float64], %b1: Tensor[({HID},), float64],
          %w2: Tensor[({K}, {HID}), float64], %b2: Tensor[({K},), float64]) -> float64 {{
  let %h = nn.relu(nn.bias_add(nn.dense(%x, %w1), %b1));
  let %z = nn.bias_add(nn.dense(%h, %w2), %b2);
  negative(sum(nn.log_softmax(%z) * %y)) / {N}f64
}}"""


def mlp_jax(x, y, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1.T + b1)
    z = h @ w2.T + b2
    return -jnp.sum(jax.nn.log_softmax(z) * y) / N


def mlp_args(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.normal(size=(N, D)), np.eye(K)[rng.integers(0, K, N)],
            rng.normal(size=(HID, D)) * 0.5, rng.normal(size=HID) * 0.1,
            rng.normal(size=(K, HID)) * 0.5, rng.normal(size=K) * 0.1]


B, C, S, F = 4, 2, 8, 6  # CNN: batch, input channels, image side, filters (classes: K)
FLAT = F * (S // 2) ** 2

POOLS = {"max": "nn.max_pool2d(%r, pool_size=[2, 2], strides=[2, 2])",
         "avg": "nn.avg_pool2d(%r, pool_size=[2, 2], strides=[2, 2])"}


def cnn_text(pool: str) -> str:
    return f"""
def @main(%x: Tensor[({B}, {C}, {S}, {S}), float64], %y: Tensor[({B}, {K}), float64],
          %w1: Tensor[({F}, {C}, 3, 3), float64], %b1: Tensor[({F},), float64],
          %w2: Tensor[({K}, {FLAT}), float64], %b2: Tensor[({K},), float64]) -> float64 {{
  let %c = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]);
  let %r = nn.relu(nn.bias_add(%c, %b1));
  let %p = {POOLS[pool]};
  let %z = nn.bias_add(nn.dense(nn.batch_flatten(%p), %w2), %b2);
  negative(sum(nn.log_softmax(%z) * %y)) / {B}f64
}}"""


def cnn_jax(pool: str) -> Callable:
    def pooled(r):
        if pool == "max":
            return lax.reduce_window(r, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return lax.reduce_window(r, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") / 4

    def loss(x, y, w1, b1, w2, b2):
        c = lax.conv_general_dilated(x, w1, (1, 1), ((1, 1), (1, 1)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        r = jax.nn.relu(c + b1[None, :, None, None])
        z = pooled(r).reshape(B, FLAT) @ w2.T + b2
        return -jnp.sum(jax.nn.log_softmax(z) * y) / B
    return loss


def cnn_args(rng: np.random.Generator) -> list[np.ndarray]:
    return [rng.normal(size=(B, C, S, S)), np.eye(K)[rng.integers(0, K, B)],
            rng.normal(size=(F, C, 3, 3)) * 0.4, rng.normal(size=F) * 0.1,
            rng.normal(size=(K, FLAT)) * 0.2, rng.normal(size=K) * 0.1]


MODELS = {
    "mlp": (MLP, mlp_jax, mlp_args),
    "cnn-max_pool2d": (cnn_text("max"), cnn_jax("max"), cnn_args),
    "cnn-avg_pool2d": (cnn_text("avg"), cnn_jax("avg"), cnn_args),
}


def run(mod: rr.IRModule, runner: str, args: list[np.ndarray]):
    return rr.evaluate(mod, *args) if runner == "evaluate" else rr.compile(mod)(*args)


@pytest.mark.parametrize("runner", ("evaluate", "compile"))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("model", list(MODELS))
def test_loss_and_every_gradient_match_jax(model: str, mode: str, runner: str) -> None:
    text, jax_loss, make_args = MODELS[model]
    args = make_args(np.random.default_rng(len(model)))
    value, grads = run(rr.gradient(rr.parse(text), mode), runner, args)
    want_value, want_grads = jax.value_and_grad(jax_loss, argnums=tuple(range(6)))(*args)
    np.testing.assert_allclose(value, want_value, rtol=RTOL, atol=ATOL)
    assert len(grads) == 6
    for i, (got, want) in enumerate(zip(grads, want_grads, strict=True)):
        assert got.shape == args[i].shape and got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"input {i}")
    # the parameters' gradients are not trivially zero (the relu and pools let them through)
    assert all(np.abs(g).max() > 1e-3 for g in grads[2:])


def test_relu_max_pool_ties_follow_the_first_maximum() -> None:
    """An image whose 2x2 windows are all ties (a constant image after relu): max_pool2d's
    gradient goes to each window's first maximum, as jax's reduce_window max does."""
    text, jax_loss, make_args = MODELS["cnn-max_pool2d"]
    args = make_args(np.random.default_rng(3))
    args[0] = np.ones_like(args[0])  # conv of a constant image: interior windows tie
    value, grads = rr.evaluate(rr.gradient(rr.parse(text)), *args)
    want_value, want_grads = jax.value_and_grad(jax_loss, argnums=tuple(range(6)))(*args)
    np.testing.assert_allclose(value, want_value, rtol=RTOL, atol=ATOL)
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


STEP = MLP.replace("def @main", "def @loss") + f"""
def @main(%x: Tensor[({N}, {D}), float64], %y: Tensor[({N}, {K}), float64],
          %w1: Tensor[({HID}, {D}), float64], %b1: Tensor[({HID},), float64],
          %w2: Tensor[({K}, {HID}), float64], %b2: Tensor[({K},), float64]) {{
  let %r = gradient(@loss)(%x, %y, %w1, %b1, %w2, %b2);
  let %g = %r.1;
  (%r.0, %w1 - 0.1f64 * %g.2, %b1 - 0.1f64 * %g.3, %w2 - 0.1f64 * %g.4, %b2 - 0.1f64 * %g.5)
}}"""


@pytest.mark.parametrize("runner", ("evaluate", "compile"))
def test_sgd_steps_written_with_gradient_op_match_jax(runner: str) -> None:
    """Three SGD steps of ``gradient(@loss)`` in Relay text against the same steps in jax."""
    mod = rr.parse(STEP)
    x, y, *params = mlp_args(np.random.default_rng(7))
    step = rr.compile(mod) if runner == "compile" else (lambda *a: rr.evaluate(mod, *a))
    jax_params = [jnp.asarray(p) for p in params]
    losses = []
    for _ in range(3):
        loss, *params = step(x, y, *params)
        want_loss, grads = jax.value_and_grad(mlp_jax, argnums=(2, 3, 4, 5))(x, y, *jax_params)
        jax_params = [p - 0.1 * g for p, g in zip(jax_params, grads, strict=True)]
        np.testing.assert_allclose(loss, want_loss, rtol=RTOL, atol=ATOL)
        for got, want in zip(params, jax_params, strict=True):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        losses.append(float(loss))
    assert losses[2] < losses[0]  # a step of SGD on this loss goes downhill
