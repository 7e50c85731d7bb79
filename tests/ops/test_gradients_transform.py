"""The data-movement ops' differentiation rules (relay_ref/ops/grad_transform.py) against
central finite differences of their references and against jax.vjp / jax.jvp, float64."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

from tests.ops.gradcheck import RNG, check_op  # noqa: E402


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


IDX = np.array([[2, 0], [0, 3]], dtype="int64")

CASES = [
    ("reshape", [_x(2, 6)], {"newshape": (3, -1)}, lambda x: x.reshape(3, 4), None),
    ("reshape_like", [_x(2, 6), np.zeros((4, 3))], {}, lambda x, y: x.reshape(4, 3), [0]),
    ("transpose", [_x(2, 3, 4)], {"axes": (2, 0, 1)}, lambda x: x.transpose(2, 0, 1), None),
    ("transpose", [_x(2, 3)], {}, lambda x: x.T, None),
    ("expand_dims", [_x(2, 3)], {"axis": 1, "num_newaxis": 2},
     lambda x: x.reshape(2, 1, 1, 3), None),
    ("squeeze", [_x(2, 1, 3)], {}, lambda x: x.reshape(2, 3), None),
    ("nn.batch_flatten", [_x(2, 3, 2)], {}, lambda x: x.reshape(2, 6), None),
    ("broadcast_to", [_x(3, 1)], {"shape": (2, 3, 4)},
     lambda x: jnp.broadcast_to(x, (2, 3, 4)), None),
    ("broadcast_to_like", [_x(3, 1), np.zeros((3, 4))], {},
     lambda x, y: jnp.broadcast_to(x, (3, 4)), [0]),
    ("reverse", [_x(3, 4)], {"axis": 1}, lambda x: x[:, ::-1], None),
    ("cast", [_x(2, 3)], {"dtype": "float64"}, lambda x: x, None),
    ("copy", [_x(2, 3)], {}, lambda x: x, None),
    ("concatenate", [(_x(2, 3), _x(2, 1))], {"axis": 1},
     lambda xs: jnp.concatenate(xs, axis=1), None),
    ("stack", [(_x(2, 3), _x(2, 3), _x(2, 3))], {"axis": -1},
     lambda xs: jnp.stack(xs, axis=-1), None),
    ("split", [_x(2, 6)], {"indices_or_sections": (1, 4), "axis": 1},
     lambda x: tuple(jnp.split(x, [1, 4], axis=1)), None),
    ("split", [_x(4, 3)], {"indices_or_sections": 2}, lambda x: tuple(jnp.split(x, 2)), None),
    ("where", [RNG.random((2, 3)) < 0.5, _x(2, 3), _x(3)], {},
     lambda c, x, y: jnp.where(c, x, y), [1, 2]),
    ("take", [_x(4, 5), IDX], {"axis": 1}, lambda x, i: jnp.take(x, i, axis=1), [0]),
    ("take", [_x(3, 2), IDX], {}, lambda x, i: jnp.take(x.reshape(-1), i), [0]),
    ("take", [_x(3, 2), IDX - 3], {"axis": 0, "mode": "wrap"},
     lambda x, i: jnp.take(x, i % 3, axis=0), [0]),
    ("gather", [_x(3, 4), np.array([[0, 2], [1, 1], [3, 0]], dtype="int64")], {"axis": 1},
     lambda x, i: jnp.take_along_axis(x, i, axis=1), [0]),
    ("gather_nd", [_x(3, 4), np.array([[0, 2, 2], [1, 3, 3]], dtype="int64")], {},
     lambda x, i: x[i[0], i[1]], [0]),
    ("strided_slice", [_x(4, 5)], {"begin": (1, 0), "end": (4, 5), "strides": (2, 2)},
     lambda x: x[1:4:2, 0:5:2], None),
    ("strided_slice", [_x(4, 5)], {"begin": (3,), "end": (0,), "strides": (-1,), "axes": (1,)},
     lambda x: x[:, 3:0:-1], None),
    ("tile", [_x(2, 3)], {"reps": (2, 1, 2)}, lambda x: jnp.tile(x, (2, 1, 2)), None),
    ("repeat", [_x(2, 3)], {"repeats": 2, "axis": 1}, lambda x: jnp.repeat(x, 2, axis=1), None),
    ("nn.pad", [_x(2, 3), np.array(0.5)], {"pad_width": ((1, 0), (2, 1))},
     lambda x, v: jnp.pad(x, ((1, 0), (2, 1)), constant_values=v), None),
    ("nn.pad", [_x(3, 3)], {"pad_width": ((1, 1), (0, 2)), "pad_mode": "reflect"},
     lambda x: jnp.pad(x, ((1, 1), (0, 2)), mode="reflect"), None),
    ("nn.depth_to_space", [_x(1, 4, 2, 3)], {"block_size": 2}, None, None),
    ("full", [np.array(1.5)], {"shape": (2, 3), "dtype": "float64"},
     lambda v: jnp.full((2, 3), v), None),
    ("full_like", [_x(2, 3), np.array(1.5)], {}, lambda x, v: jnp.full_like(x, v), None),
    ("zeros_like", [_x(2, 3)], {}, jnp.zeros_like, None),
]


@pytest.mark.parametrize(("name", "args", "attrs", "jfn", "which"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_transform_rules(name: str, args: list, attrs: dict, jfn: object,
                         which: list | None) -> None:
    check_op(name, args, attrs, jfn, which)
