"""scatter_elements and scatter_nd vs onnxruntime (ScatterElements-18, ScatterND-18) on
random data, unique and repeated indices, every reduction; relations and run-time errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import TensorType
from relay_ref.ops.registry import AttrError, OpRuntimeError, RelationError, get_op, make_attrs

DIFF_TESTED = {"scatter_elements", "scatter_nd"}
REDUCTIONS = ("update", "add", "mul", "min", "max")
ONNX_NAME = {"update": "none"}


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_scatter_elements_vs_onnxruntime(data: st.DataObject) -> None:
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    axis = data.draw(st.integers(-rank, rank - 1))
    reduction = data.draw(st.sampled_from(REDUCTIONS))
    ishape = tuple(data.draw(st.integers(1, d)) for d in shape)
    n = shape[axis]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    if reduction == "update":  # unique targets: ONNX leaves repeated ones undefined
        ishape = tuple(min(i, 1) if k == axis % rank else i for k, i in enumerate(ishape))
    indices = rng.integers(-n, n, ishape).astype(np.int64)
    x, updates = rand(shape), rand(ishape)
    ours = run_op("scatter_elements", [x, indices, updates], axis=axis, reduction=reduction)
    (want,) = onnx_run("ScatterElements", [x, indices, updates], opset=18, axis=axis,
                       reduction=ONNX_NAME.get(reduction, reduction))
    close(ours, want)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_nd_vs_onnxruntime(reduction: str) -> None:
    x = rand((4, 3, 2))
    coords = np.array([[0, 1], [3, 2], [2, 0]] if reduction == "update"
                      else [[0, 1], [3, 2], [0, 1]], np.int64)  # (K, M) as ONNX lays them
    updates = rand((3, 2))
    ours = run_op("scatter_nd", [x, coords.T.copy(), updates], mode=reduction)
    (want,) = onnx_run("ScatterND", [x, coords, updates], opset=18,
                       reduction=ONNX_NAME.get(reduction, reduction))
    close(ours, want)


def test_repeated_updates_apply_in_order_and_negative_indices_count_from_the_end() -> None:
    x = np.zeros((3,), np.int32)
    out = run_op("scatter_elements", [x, np.array([1, -2, 0]), np.array([5, 6, 7], np.int32)])
    assert out.tolist() == [7, 6, 0]  # index 1 written twice: the last wins
    out = run_op("scatter_nd", [np.zeros((2, 2), np.float32), np.array([[1]]),
                                np.ones((1, 2), np.float32)])
    assert out.tolist() == [[0, 0], [1, 1]]


def test_scatter_relations_and_errors() -> None:
    rel = get_op("scatter_nd").relation
    f, i = "float32", "int64"
    ty = rel([TensorType((4, 3), f), TensorType((1, 5), i), TensorType((5, 3), f)],
             make_attrs("scatter_nd", {}))
    assert ty == TensorType((4, 3), f)
    with pytest.raises(RelationError, match="updates must have shape"):
        rel([TensorType((4, 3), f), TensorType((2, 5), i), TensorType((5, 3), f)],
            make_attrs("scatter_nd", {}))
    with pytest.raises(RelationError, match="indices must have an integer"):
        get_op("scatter_elements").relation(
            [TensorType((4,), f)] * 3, make_attrs("scatter_elements", {}))
    with pytest.raises(AttrError):
        make_attrs("scatter_elements", {"reduction": "mean"})
    with pytest.raises(OpRuntimeError, match="out of range"):
        run_op("scatter_elements", [np.zeros(3), np.array([3]), np.zeros(1)])
