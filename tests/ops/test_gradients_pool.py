"""The window pools' differentiation rules (relay_ref/ops/grad_pool.py) against central
finite differences of their references and against jax.vjp / jax.jvp of the same pools
written with ``lax.reduce_window`` (test_ops_pool_grad.jax_pool), float64."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)

from test_ops_pool_grad import jax_pool  # noqa: E402

from tests.ops.gradcheck import RNG, check_op  # noqa: E402

_PLAIN = {"pool_size": (2, 2)}
#: ceil_mode's extra row and column take part, next to real elements (a window wholly in
#: padding would make the max -inf)
_CEIL = {"pool_size": (2, 2), "strides": (2, 2), "padding": (0, 1, 0, 0), "ceil_mode": True}
_DILATED = {"pool_size": (2, 3), "strides": (1, 2), "dilation": (2, 1), "padding": (1, 1)}
_INCLUDE = {"pool_size": (3, 2), "strides": (2, 1), "padding": (1, 1),
            "count_include_pad": True}
HW = (5, 4)


def _pool(kind: str, attrs: dict) -> object:
    return jax_pool(kind, attrs, HW)


def _nhwc(f: object) -> object:
    return lambda x: f(x.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


POOLS = [
    ("nn.max_pool2d", _PLAIN), ("nn.max_pool2d", _CEIL), ("nn.max_pool2d", _DILATED),
    ("nn.avg_pool2d", _INCLUDE), ("nn.avg_pool2d", _CEIL), ("nn.avg_pool2d", _DILATED),
]


@pytest.mark.parametrize(("name", "attrs"), POOLS, ids=[f"{n}-{i}" for i, (n, _) in
                                                       enumerate(POOLS)])
def test_pool_rules(name: str, attrs: dict) -> None:
    kind = name[3:6]
    check_op(name, [_x(2, 2, *HW)], attrs, jax.jit(_pool(kind, attrs)))


@pytest.mark.parametrize("name", ["nn.max_pool2d", "nn.avg_pool2d"])
def test_pool_rules_in_nhwc(name: str) -> None:
    kind = name[3:6]
    check_op(name, [_x(1, *HW, 2)], {**_CEIL, "layout": "NHWC"},
             jax.jit(_nhwc(_pool(kind, _CEIL))))


@pytest.mark.parametrize(("name", "attrs"), [("nn.max_pool2d_grad", _CEIL),
                                             ("nn.avg_pool2d_grad", _INCLUDE)])
def test_pool_grad_rules(name: str, attrs: dict) -> None:
    """Linear in out_grad (checked), piecewise constant in the data (its adjoint is 0)."""
    kind = name[3:6]
    pool = _pool(kind, attrs)
    x = _x(2, 2, *HW)
    g = RNG.standard_normal(np.shape(pool(x)))
    check_op(name, [g, x], attrs, jax.jit(lambda g, x: jax.vjp(pool, x)[1](g)[0]), which=[0])


@pytest.mark.parametrize("name", ["nn.max_pool1d", "nn.avg_pool1d"])
def test_pool1d_rules(name: str) -> None:
    kind = name[3:6]
    attrs = {"pool_size": (3,), "strides": (2,), "padding": (1,), "ceil_mode": True}
    pool = jax_pool(kind, {"pool_size": (1, 3), "strides": (1, 2), "padding": (0, 1, 0, 1),
                           "ceil_mode": True}, (1, 6))
    check_op(name, [_x(2, 3, 6)], attrs, jax.jit(lambda x: pool(x[:, :, None, :])[:, :, 0, :]))
