"""The ops with data-dependent sizes, nonzero, unique (ops/algorithm.py) and
vision.all_class_non_max_suppression (ops/vision.py): the references vs onnxruntime's
NonZero, Unique and NonMaxSuppression on random data; the relations with ``?`` and symbolic
dims; bad attributes and arguments."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import onnx_run, run_op

from relay_ref.ir.shape import ANY, sym
from relay_ref.ir.types import IncompleteType, TensorType, TupleType
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, get_op, make_attrs

DIFF_TESTED = {"nonzero", "unique", "vision.all_class_non_max_suppression"}


@pytest.mark.parametrize("shape, dtype", [((7,), "float32"), ((3, 4), "int32"),
                                          ((2, 3, 2), "bool"), ((0, 3), "float32")])
def test_nonzero_vs_onnxruntime(shape, dtype):
    rng = np.random.default_rng(len(shape))
    x = (rng.integers(0, 3, shape) * (rng.uniform(size=shape) > 0.4)).astype(dtype)
    got = run_op("nonzero", [x])
    (want,) = onnx_run("NonZero", [x], opset=13)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs, shape", [
    ({}, (9,)), ({"sorted": 0}, (9,)), ({"axis": 0}, (6, 2)), ({"axis": 1, "sorted": 0},
                                                               (2, 7)),
    ({"axis": -1}, (2, 3, 5)), ({}, (1,)),
])
def test_unique_vs_onnxruntime(attrs, shape):
    x = np.random.default_rng(3).integers(0, 3, shape).astype(np.float32)
    want = onnx_run("Unique", [x], n_outputs=4, opset=11, **attrs)
    got = run_op("unique", [x], sorted=bool(attrs.get("sorted", 1)), return_index=True,
                 return_inverse=True, return_counts=True, axis=attrs.get("axis"))
    assert len(got) == 4
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    alone = run_op("unique", [x], sorted=bool(attrs.get("sorted", 1)), axis=attrs.get("axis"))
    np.testing.assert_array_equal(alone, want[0])  # one output: a tensor, not a tuple


@pytest.mark.parametrize("seed, limit, iou, score", [
    (0, 3, 0.5, 0.0), (1, 10, 0.2, 0.4), (2, 0, 0.5, 0.0), (3, 2, 0.9, -1.0)])
def test_all_class_nms_vs_onnxruntime(seed, limit, iou, score):
    rng = np.random.default_rng(seed)
    boxes = rng.uniform(0, 8, (2, 10, 4)).astype(np.float32)  # corners in either order
    scores = rng.uniform(0, 1, (2, 3, 10)).astype(np.float32)
    scores[0, 0, :4] = 0.5  # ties: the lower box index first
    args = [boxes, scores, np.array([limit], np.int64), np.array([iou], np.float32),
            np.array([score], np.float32)]
    got, count = run_op("vision.all_class_non_max_suppression", args)
    (want,) = onnx_run("NonMaxSuppression", args, opset=11)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert count.tolist() == [len(want)]


def test_relations_leave_only_the_data_dependent_dims_unknown():
    n = sym("n")
    assert get_op("nonzero").relation([TensorType((n, 3), "float32")], None) == \
        TensorType((2, ANY), "int64")
    assert get_op("nonzero").relation([TensorType((), "bool")], None) == \
        TensorType((1, ANY), "int64")
    uniq = get_op("unique").relation
    full = make_attrs("unique", {"return_index": True, "return_inverse": True,
                                 "return_counts": True, "axis": 1})
    assert uniq([TensorType((n, 4, 5), "int32")], full) == TupleType((
        TensorType((n, ANY, 5), "int32"), TensorType((ANY,), "int64"),
        TensorType((4,), "int64"), TensorType((ANY,), "int64")))
    flat = make_attrs("unique", {"return_inverse": True})
    assert uniq([TensorType((n, 4), "int32")], flat) == TupleType((
        TensorType((ANY,), "int32"), TensorType((n * 4,), "int64")))
    assert uniq([IncompleteType()], flat) is NOT_YET
    nms = get_op("vision.all_class_non_max_suppression").relation
    out = nms([TensorType((n, 6, 4), "float32"), TensorType((n, 2, 6), "float32"),
               TensorType((1,), "int64"), TensorType((), "float32"),
               TensorType((1,), "float32")], make_attrs("vision.all_class_non_max_suppression",
                                                       {}))
    assert out == TupleType((TensorType((ANY, 3), "int64"), TensorType((1,), "int64")))


def test_bad_attributes_and_arguments_are_refused():
    with pytest.raises(AttrError):
        make_attrs("unique", {"axis": 1.5})
    with pytest.raises(AttrError):
        make_attrs("vision.all_class_non_max_suppression", {"output_format": "tensorflow"})
    with pytest.raises(RelationError, match="axis"):
        get_op("unique").relation([TensorType((3,), "float32")],
                                  make_attrs("unique", {"axis": 2}))
    nms = get_op("vision.all_class_non_max_suppression").relation
    attrs = make_attrs("vision.all_class_non_max_suppression", {})
    scalars = [TensorType((1,), "int64"), TensorType((), "float32"), TensorType((), "float32")]
    with pytest.raises(RelationError, match="disagree"):
        nms([TensorType((1, 6, 4), "float32"), TensorType((1, 2, 5), "float32"), *scalars],
            attrs)
    with pytest.raises(RelationError, match="boxes must be"):
        nms([TensorType((1, 6, 5), "float32"), TensorType((1, 2, 6), "float32"), *scalars],
            attrs)
    with pytest.raises(RelationError, match="one value"):
        nms([TensorType((1, 6, 4), "float32"), TensorType((1, 2, 6), "float32"),
             TensorType((2,), "int64"), *scalars[1:]], attrs)
