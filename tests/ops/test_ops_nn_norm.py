"""Normalisation operators vs onnxruntime (InstanceNormalization, GroupNormalization) and
NumPy formulas (group_norm, l2_normalize, channels-last axes)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import AttrError, RelationError, get_op, make_attrs


def test_instance_norm_vs_onnxruntime() -> None:
    x, g, b = rand((2, 3, 4, 5)), rand((3,)), rand((3,))
    ours = run_op("nn.instance_norm", [x, g, b], epsilon=1e-3)
    (theirs,) = onnx_run("InstanceNormalization", [x, g, b], epsilon=1e-3)
    close(ours, theirs, rtol=1e-4, atol=1e-4)
    x3 = rand((2, 4, 6))
    ours = run_op("nn.instance_norm", [x3, rand((4,)), rand((4,))], center=False, scale=False)
    (theirs,) = onnx_run("InstanceNormalization", [x3, np.ones(4, "float32"),
                                                   np.zeros(4, "float32")])
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def _group_norm_np(x: np.ndarray, g: np.ndarray, b: np.ndarray, groups: int,
                   eps: float) -> np.ndarray:
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1).astype(np.float64)
    y = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    y = y.reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * g.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_vs_numpy_and_onnxruntime(groups: int) -> None:
    x, g, b = rand((2, 6, 3, 4)), rand((6,)), rand((6,))
    ours = run_op("nn.group_norm", [x, g, b], num_groups=groups, epsilon=1e-4)
    close(ours, _group_norm_np(x, g, b, groups, 1e-4), rtol=1e-4, atol=1e-4)
    (theirs,) = onnx_run("GroupNormalization", [x, g, b], opset=21, num_groups=groups,
                         epsilon=1e-4)
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_norm_relations() -> None:
    rel = get_op("nn.group_norm").relation
    at = make_attrs("nn.group_norm", {"num_groups": 4})
    with pytest.raises(RelationError):
        rel([TensorType((1, 6, 2), "float32"), TensorType((6,), "float32"),
             TensorType((6,), "float32")], at)
    out = rel([TensorType((ANY, 8, ANY), "float32"), TensorType((ANY,), "float32"),
               TensorType((8,), "float32")], at)
    assert out == TensorType((ANY, 8, ANY), "float32")
    irel = get_op("nn.instance_norm").relation
    with pytest.raises(RelationError):
        irel([TensorType((1, 6, 2), "float32"), TensorType((5,), "float32"),
              TensorType((6,), "float32")], make_attrs("nn.instance_norm", {}))
    with pytest.raises(AttrError):
        make_attrs("nn.group_norm", {})


@pytest.mark.parametrize("axis", [None, (1,), (1, 2), (-1,)])
def test_l2_normalize_vs_numpy(axis: tuple | None) -> None:
    x = rand((2, 3, 4))
    x[0, 0] = 0.0
    kw = {} if axis is None else {"axis": axis}
    ours = run_op("nn.l2_normalize", [x], eps=1e-6, **kw)
    ss = np.sum(x.astype(np.float64) ** 2, axis=axis, keepdims=True)
    close(ours, x / np.sqrt(np.maximum(ss, 1e-6)))
    with pytest.raises(RelationError):
        get_op("nn.l2_normalize").relation([TensorType((2,), "float32")],
                                           make_attrs("nn.l2_normalize", {"eps": 1.0,
                                                                          "axis": (3,)}))


def test_norms_channels_last() -> None:
    x, g, b = rand((2, 4, 3, 5)), rand((4,)), rand((4,))
    for name, kw in (("nn.instance_norm", {}), ("nn.group_norm", {"num_groups": 2})):
        want = run_op(name, [x, g, b], **kw)
        got = run_op(name, [x.transpose(0, 2, 3, 1), g, b], axis=-1, **kw)
        close(got.transpose(0, 3, 1, 2), want, rtol=1e-4, atol=1e-4)


DIFF_TESTED = {"nn.instance_norm", "nn.group_norm", "nn.l2_normalize"}
