"""The neural-network ops' differentiation rules (relay_ref/ops/grad_nn.py) against central
finite differences of their references and against jax.vjp / jax.jvp, float64."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy
lax = jax.lax

from tests.ops.gradcheck import RNG, check_op  # noqa: E402


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _conv(x: object, w: object, s: tuple, p: tuple, d: tuple, groups: int) -> object:
    return lax.conv_general_dilated(x, w, s, [(p[0], p[2]), (p[1], p[3])], rhs_dilation=d,
                                    feature_group_count=groups,
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _bn(x: object, gamma: object, beta: object, m: object, v: object) -> object:
    sh = (1, -1, 1)
    out = (x - m.reshape(sh)) / jnp.sqrt(v.reshape(sh) + 1e-5) * gamma.reshape(sh)
    return out + beta.reshape(sh), m, v


CASES = [
    ("nn.dense", [_x(3, 4), _x(2, 4)], {}, lambda x, w: x @ w.T),
    ("nn.dense", [_x(2, 3, 4), _x(5, 4)], {}, lambda x, w: x @ w.T),
    ("nn.matmul", [_x(4, 3), _x(2, 4)], {"transpose_a": True, "transpose_b": True},
     lambda a, b: a.T @ b.T),
    ("nn.batch_matmul", [_x(2, 3, 4), _x(2, 5, 4)], {}, lambda x, y: x @ y.transpose(0, 2, 1)),
    ("nn.batch_matmul", [_x(2, 4, 3), _x(1, 4, 5)], {"transpose_a": True, "transpose_b": False},
     lambda x, y: x.transpose(0, 2, 1) @ y),
    ("nn.bias_add", [_x(2, 3, 2), _x(3)], {}, lambda x, b: x + b.reshape(3, 1)),
    ("nn.softmax", [_x(2, 4)], {}, lambda x: jax.nn.softmax(x, axis=-1)),
    ("nn.fast_softmax", [_x(3, 2)], {"axis": 0}, lambda x: jax.nn.softmax(x, axis=0)),
    ("nn.log_softmax", [_x(2, 4)], {}, lambda x: jax.nn.log_softmax(x, axis=-1)),
    ("nn.dropout", [_x(2, 3)], {"rate": 0.3}, lambda x: (x, jnp.ones_like(x))),
    ("nn.global_avg_pool2d", [_x(2, 3, 3, 2)], {},
     lambda x: jnp.mean(x, axis=(2, 3), keepdims=True)),
    ("nn.global_max_pool2d", [_x(2, 3, 3, 2)], {},
     lambda x: jnp.max(x, axis=(2, 3), keepdims=True)),
    ("nn.conv2d", [_x(1, 2, 5, 5), _x(3, 2, 3, 3)], {},
     lambda x, w: _conv(x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1)),
    ("nn.conv2d", [_x(2, 4, 6, 5), _x(4, 2, 2, 3)],
     {"strides": (2, 1), "padding": (1, 0, 0, 2), "dilation": (1, 2), "groups": 2},
     lambda x, w: _conv(x, w, (2, 1), (1, 0, 0, 2), (1, 2), 2)),
    ("nn.batch_norm", [_x(2, 3, 2), _x(3), _x(3), _x(3), RNG.uniform(0.5, 1.5, 3)], {}, _bn),
]


@pytest.mark.parametrize(("name", "args", "attrs", "jfn"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_nn_rules(name: str, args: list, attrs: dict, jfn: object) -> None:
    check_op(name, args, attrs, jfn)
