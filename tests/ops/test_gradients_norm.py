"""The normalisations' differentiation rules (relay_ref/ops/grad_norm.py: layer_norm,
instance_norm, group_norm) against central finite differences of their references and
against jax.vjp / jax.jvp, float64."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

from tests.ops.gradcheck import RNG, check_op  # noqa: E402


def _norm(x: object, axes: tuple, eps: float = 1e-5) -> object:
    m = jnp.mean(x, axis=axes, keepdims=True)
    v = jnp.mean((x - m) ** 2, axis=axes, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps)


def _affine(y: object, gamma: object, beta: object, axis: int, attrs: dict) -> object:
    shape = [1] * y.ndim
    shape[axis] = -1
    if attrs.get("scale", True):
        y = y * gamma.reshape(shape)
    if attrs.get("center", True):
        y = y + beta.reshape(shape)
    return y


def _layer(attrs: dict) -> object:
    axis = attrs.get("axis", -1) % 3
    return lambda x, g, b: _affine(_norm(x, (axis,)), g, b, axis, attrs)


def _instance(x: object, g: object, b: object) -> object:
    return _affine(_norm(x, (2, 3)), g, b, 1, {})


def _group(x: object, g: object, b: object) -> object:
    n, c, h, w = x.shape
    y = _norm(x.reshape(n, 2, c // 2, h, w), (2, 3, 4)).reshape(x.shape)
    return _affine(y, g, b, 1, {})


CASES = [
    ("nn.layer_norm", (2, 3, 4), 4, {}, _layer({})),
    ("nn.layer_norm", (2, 3, 4), 3, {"axis": 1, "scale": False},
     _layer({"axis": 1, "scale": False})),
    ("nn.layer_norm", (2, 3, 4), 2, {"axis": 0, "center": False},
     _layer({"axis": 0, "center": False})),
    ("nn.instance_norm", (2, 3, 2, 3), 3, {}, _instance),
    ("nn.group_norm", (2, 4, 2, 2), 4, {"num_groups": 2}, _group),
]


@pytest.mark.parametrize(("name", "shape", "c", "attrs", "jfn"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_norm_rules(name: str, shape: tuple, c: int, attrs: dict, jfn: object) -> None:
    x = RNG.standard_normal(shape) * 2 + 0.5
    check_op(name, [x, RNG.standard_normal(c), RNG.standard_normal(c)], attrs, jax.jit(jfn))


@pytest.mark.parametrize("attrs", [{"eps": 1e-3, "axis": (1,)}, {"eps": 1e-3},
                                   {"eps": 4.0, "axis": (0,)}],
                         ids=["axis", "all", "eps-wins"])
def test_l2_normalize(attrs: dict) -> None:
    """eps-wins: the first column's sum of squares is below eps, another above."""
    x = RNG.standard_normal((3, 4)) * 2
    x[:, 0] = [0.3, -0.5, 0.2]
    if "axis" in attrs and attrs["eps"] > 1:  # both branches of max(s, eps) are taken
        ss = (x * x).sum(axis=0)
        assert ss[0] < attrs["eps"] < ss.max()

    def jfn(x: object) -> object:
        axes = attrs.get("axis")
        ss = jnp.sum(x * x, axis=axes, keepdims=True)
        return x / jnp.sqrt(jnp.maximum(ss, attrs["eps"]))
    check_op("nn.l2_normalize", [x], attrs, jax.jit(jfn))
