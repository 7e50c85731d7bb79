"""The elementwise ops' differentiation rules (relay_ref/ops/grad_elementwise.py) against
central finite differences of their references and against jax.vjp / jax.jvp, float64."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
jsp = pytest.importorskip("jax.scipy.special")

from tests.ops.gradcheck import RNG, check_op  # noqa: E402


def _x(*shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return RNG.uniform(lo, hi, shape)


def _away(*shape: int) -> np.ndarray:
    """Values away from 0 (for kinks at 0: abs, relu...)."""
    x = RNG.uniform(0.2, 2.0, shape)
    return x * np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


_POS = {"lo": 0.3, "hi": 2.0}
_UNIT = {"lo": -0.8, "hi": 0.8}

UNARY = [
    ("exp", jnp.exp, {}), ("fast_exp", jnp.exp, {}), ("log", jnp.log, _POS),
    ("log2", jnp.log2, _POS), ("log10", jnp.log10, _POS), ("sqrt", jnp.sqrt, _POS),
    ("rsqrt", jax.lax.rsqrt, _POS), ("sigmoid", jax.nn.sigmoid, {}), ("tanh", jnp.tanh, {}),
    ("fast_tanh", jnp.tanh, {}), ("sin", jnp.sin, {}), ("cos", jnp.cos, {}),
    ("tan", jnp.tan, _UNIT), ("sinh", jnp.sinh, {}), ("cosh", jnp.cosh, {}),
    ("asin", jnp.arcsin, _UNIT), ("acos", jnp.arccos, _UNIT), ("atan", jnp.arctan, {}),
    ("asinh", jnp.arcsinh, {}), ("acosh", jnp.arccosh, {"lo": 1.2, "hi": 3.0}),
    ("atanh", jnp.arctanh, _UNIT), ("erf", jsp.erf, {}), ("fast_erf", jsp.erf, {}),
    ("negative", jnp.negative, {}),
]


@pytest.mark.parametrize(("name", "jfn", "rng"), UNARY, ids=[u[0] for u in UNARY])
def test_unary(name: str, jfn: object, rng: dict) -> None:
    check_op(name, [_x(2, 3, **rng)], {}, jfn)


@pytest.mark.parametrize(("name", "attrs", "jfn"), [
    ("abs", {}, jnp.abs),
    ("nn.relu", {}, jax.nn.relu),
    ("nn.leaky_relu", {"alpha": 0.1}, lambda x: jax.nn.leaky_relu(x, 0.1)),
    ("clip", {"a_min": -0.5, "a_max": 0.7}, lambda x: jnp.clip(x, -0.5, 0.7)),
    ("stop_gradient", {}, jax.lax.stop_gradient),
])
def test_unary_with_kinks(name: str, attrs: dict, jfn: object) -> None:
    x = _away(3, 4)
    if name == "clip":  # keep away from the clip bounds
        x = np.where(np.abs(x + 0.5) < 0.05, x + 0.2, x)
        x = np.where(np.abs(x - 0.7) < 0.05, x + 0.2, x)
    if name == "stop_gradient":  # finite differences see the identity: jax only
        from tests.ops.gradcheck import forward_value, reverse_values
        g = np.ones_like(x)
        assert np.all(reverse_values(name, [x], {}, g)[0] == 0)
        assert np.all(forward_value(name, [x], {}, [g]) == 0)
        return
    check_op(name, [x], attrs, jfn)


BINARY = [
    ("add", jnp.add), ("subtract", jnp.subtract), ("multiply", jnp.multiply),
    ("divide", jnp.divide), ("power", jnp.power), ("maximum", jnp.maximum),
    ("minimum", jnp.minimum), ("mod", jnp.fmod), ("floor_mod", jnp.mod),
]


@pytest.mark.parametrize(("name", "jfn"), BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1, 3), (4, 1))],
                         ids=["same", "broadcast"])
def test_binary(name: str, jfn: object, shapes: tuple) -> None:
    a, b = shapes
    if name in ("power", "divide", "mod", "floor_mod"):
        x, y = _x(*a, lo=0.5, hi=2.0), _x(*b, lo=0.5, hi=2.0)
        if name in ("mod", "floor_mod"):
            x = x * 3.0 * np.where(RNG.random(a) < 0.5, -1.0, 1.0)
            y = y + 0.1
    else:
        x, y = _x(*a), _x(*b)
    check_op(name, [x, y], {}, jfn)
