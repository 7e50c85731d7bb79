"""Problems found by trying the frontend as a user, each against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx

V = oh.make_tensor_value_info


def _model(nodes, inputs, outputs, inits=(), opset=18):
    graph = oh.make_graph(nodes, "g", inputs, outputs, list(inits))
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])


def _check_against_ort(model, feeds):
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    mod, params = from_onnx(model)
    got = rr.compile(mod, params=params)(**feeds)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize(("ctm", "shape", "size"), [
    ("asymmetric", (1, 1, 1, 6), (1, 1, 1, 5)),
    ("align_corners", (1, 1, 4, 6), (1, 1, 8, 9)),
])
def test_resize_nearest_round_prefer_ceil(ctm, shape, size) -> None:
    node = oh.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="nearest",
                        coordinate_transformation_mode=ctm, nearest_mode="round_prefer_ceil")
    model = _model([node], [V("x", TP.FLOAT, list(shape))], [V("y", TP.FLOAT, None)],
                   [nh.from_array(np.array(size, np.int64), "sz")])
    _check_against_ort(model, {"x": np.arange(np.prod(shape), dtype="float32").reshape(shape)})


@pytest.mark.parametrize("op", ["ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum"])
def test_reductions_without_axes_and_noop_keep_their_elementwise_part(op) -> None:
    model = _model([oh.make_node(op, ["x"], ["y"], noop_with_empty_axes=1)],
                   [V("x", TP.FLOAT, [3])], [V("y", TP.FLOAT, None)])
    x = np.array([1.0, 2.0, 3.0] if op == "ReduceLogSum" else [-1.0, 2.0, -3.0], "float32")
    _check_against_ort(model, {"x": x})


def test_a_sanitised_name_never_takes_a_valid_one() -> None:
    model = _model([oh.make_node("Sub", ["input:0", "input_0"], ["y"])],
                   [V("input:0", TP.FLOAT, [1]), V("input_0", TP.FLOAT, [1])],
                   [V("y", TP.FLOAT, [1])])
    mod, params = from_onnx(model)
    exe = rr.compile(mod, params=params)
    got = exe(**{"input:0": np.array([5.0], "float32"), "input_0": np.array([2.0], "float32")})
    np.testing.assert_array_equal(got, [3.0])
    assert "%input_0:" in rr.astext(mod)  # the valid name kept its spelling


def test_missing_external_data_is_a_frontend_error(tmp_path) -> None:
    weights = nh.from_array(np.ones((4,), "float32"), "w")
    model = _model([oh.make_node("Add", ["x", "w"], ["y"])], [V("x", TP.FLOAT, [4])],
                   [V("y", TP.FLOAT, [4])], [weights])
    path = tmp_path / "m.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="m.data", size_threshold=0)
    (tmp_path / "m.data").unlink()
    with pytest.raises(rr.RelayError):
        from_onnx(onnx.load(str(path), load_external_data=False))


def test_topk_before_opset_10_takes_k_as_an_attribute() -> None:
    node = oh.make_node("TopK", ["x"], ["v", "i"], k=2, axis=1)
    model = _model([node], [V("x", TP.FLOAT, [2, 5])],
                   [V("v", TP.FLOAT, None), V("i", TP.INT64, None)], opset=9)
    x = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], "float32")
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    mod, params = from_onnx(model)
    got = rr.compile(mod, params=params)(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
