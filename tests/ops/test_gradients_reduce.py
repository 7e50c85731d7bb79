"""The reductions' differentiation rules (relay_ref/ops/grad_reduce.py) against central
finite differences of their references and against jax.vjp / jax.jvp, float64."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

from relay_ref.ops.grad_reduce import reduced_axes  # noqa: E402
from tests.ops.gradcheck import RNG, check_op  # noqa: E402


def _axes(ndim: int, attrs: dict) -> tuple[int, ...]:
    return tuple(sorted(reduced_axes(ndim, attrs.get("axis"), attrs.get("exclude", False))))


REDUCE_ATTRS = [{}, {"axis": (1,)}, {"axis": (0, -1), "keepdims": True},
                {"axis": (1,), "exclude": True}]
JAX_REDUCE = {"sum": jnp.sum, "mean": jnp.mean, "max": jnp.max, "min": jnp.min,
              "prod": jnp.prod}


@pytest.mark.parametrize("name", sorted(JAX_REDUCE))
@pytest.mark.parametrize("attrs", REDUCE_ATTRS, ids=["all", "axis", "keepdims", "exclude"])
def test_reductions(name: str, attrs: dict) -> None:
    x = RNG.uniform(0.5, 1.5, (2, 3, 2)) * np.where(RNG.random((2, 3, 2)) < 0.5, -1, 1)

    def jfn(x: object) -> object:
        return JAX_REDUCE[name](x, axis=_axes(3, attrs), keepdims=attrs.get("keepdims", False))
    check_op(name, [x], attrs, jfn)


def test_max_splits_the_gradient_between_ties() -> None:
    from tests.ops.gradcheck import reverse_values
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    (dx,) = reverse_values("max", [x], {"axis": (1,)}, np.array([1.0, 4.0]))
    np.testing.assert_allclose(dx, [[0.0, 0.5, 0.5], [4.0, 0.0, 0.0]])


@pytest.mark.parametrize("attrs", [{"axis": (1,), "keepdims": True},
                                   {"axis": (0,), "unbiased": True}])
def test_variance(attrs: dict) -> None:
    x = RNG.standard_normal((3, 4))
    m = x.mean(axis=attrs["axis"], keepdims=True) + 0.1
    n = x.shape[attrs["axis"][0]] - (1 if attrs.get("unbiased") else 0)

    def jfn(x: object, m: object) -> object:
        return jnp.sum((x - m) ** 2, axis=attrs["axis"], keepdims=attrs.get("keepdims",
                                                                               False)) / n
    check_op("variance", [x, m], attrs, jfn)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("attrs", [{"axis": 1}, {"axis": 0, "exclusive": True}, {}],
                         ids=["axis", "exclusive", "flat"])
def test_scans(name: str, attrs: dict) -> None:
    x = RNG.uniform(0.5, 1.5, (3, 4))
    fn = jnp.cumsum if name == "cumsum" else jnp.cumprod
    ident = 0.0 if name == "cumsum" else 1.0

    def jfn(x: object) -> object:
        axis = attrs.get("axis")
        if axis is None:
            x, axis = x.reshape(-1), 0
        y = fn(x, axis=axis)
        if attrs.get("exclusive"):
            y = jnp.concatenate([jnp.full_like(jnp.take(y, jnp.array([0]), axis=axis), ident),
                                 jnp.delete(y, -1, axis=axis)], axis=axis)
        return y
    check_op(name, [x], attrs, jfn)


def test_collapse_sum_like() -> None:
    x, like = RNG.standard_normal((2, 3, 4)), np.zeros((3, 1))
    check_op("collapse_sum_like", [x, like], {},
             lambda x, like: jnp.sum(x, axis=(0, 2)).reshape(3, 1), which=[0])


def test_collapse_sum_to() -> None:
    x = RNG.standard_normal((2, 3, 4))
    check_op("collapse_sum_to", [x, np.array([1, 4], dtype="int64")], {"shape": (1, 4)},
             lambda x, s: jnp.sum(x, axis=(0, 1)).reshape(1, 4), which=[0])


def _with_zeros(shape: tuple, where: list[tuple]) -> np.ndarray:
    x = RNG.uniform(0.5, 1.5, shape) * np.where(RNG.random(shape) < 0.5, -1, 1)
    for idx in where:
        x[idx] = 0.0
    return x


@pytest.mark.parametrize("attrs", [{}, {"axis": (1,)}, {"axis": (0, 2), "keepdims": True},
                                   {"axis": (1,), "exclude": True}],
                         ids=["all", "axis", "two-axes", "exclude"])
def test_prod_at_zeros(attrs: dict) -> None:
    """One zero in a group: only it gets a nonzero adjoint; two zeros: none does (the rule
    never divides by x)."""
    x = _with_zeros((2, 3, 2), [(0, 1, 0), (1, 0, 1), (1, 2, 1)])

    def jfn(x: object) -> object:
        return jnp.prod(x, axis=_axes(3, attrs), keepdims=attrs.get("keepdims", False))
    check_op("prod", [x], attrs, jax.jit(jfn))


def test_prod_with_one_zero_by_hand() -> None:
    from tests.ops.gradcheck import forward_value, reverse_values
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]])
    (dx,) = reverse_values("prod", [x], {"axis": (1,)}, np.array([1.0, 1.0]))
    np.testing.assert_array_equal(dx, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]])
    t = forward_value("prod", [x], {"axis": (1,)}, [np.ones_like(x)])
    np.testing.assert_array_equal(t, [6.0, 0.0])


@pytest.mark.parametrize("attrs", [{"axis": 1}, {"axis": 0, "exclusive": True}, {}],
                         ids=["axis", "exclusive", "flat"])
def test_cumprod_at_zeros(attrs: dict) -> None:
    x = _with_zeros((3, 4), [(0, 1), (1, 0), (1, 2), (2, 3)])

    def jfn(x: object) -> object:
        axis = attrs.get("axis")
        if axis is None:
            x, axis = x.reshape(-1), 0
        y = jnp.cumprod(x, axis=axis)
        if attrs.get("exclusive"):
            y = jnp.concatenate([jnp.ones_like(jnp.take(y, jnp.array([0]), axis=axis)),
                                 jnp.delete(y, -1, axis=axis)], axis=axis)
        return y
    check_op("cumprod", [x], attrs, jax.jit(jfn))
