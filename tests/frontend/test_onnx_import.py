"""``from_onnx`` as an API: parameter order and the ``params`` mapping, name
sanitisation, symbolic dims and ``shapes``, ``freeze_params``, static initializers, the
up-front error listing everything unsupported, and bad inputs (never a Python exception
other than ``TypeError`` for a wrong argument type)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_case import as_list, assert_matches, node_model, ort_run, rand

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx
from relay_ref.frontend.onnx.names import VALID, NameTable, sanitise
from relay_ref.ir.expr import Constant
from relay_ref.ir.shape import sym
from relay_ref.ir.types import TensorType


def _model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _weird_names_model():
    """A small graph whose names are not Relay identifiers (PyTorch-export style)."""
    w = rand(3, 4, seed=1)
    b = rand(3, seed=2)
    nodes = [helper.make_node("Gemm", ["input.1", "onnx::Gemm_7", "1"], ["t"], transB=1),
             helper.make_node("Relu", ["t"], ["out:0"])]
    return _model(nodes, [_vi("input.1", ["batch", 4])], [_vi("out:0", ["batch", 3])],
                  [numpy_helper.from_array(w, "onnx::Gemm_7"),
                   numpy_helper.from_array(b, "1")]), w, b


def test_sanitise_gives_valid_unique_names():
    names = ["input.1", "onnx::Conv_3", "1", "", "a//b/", "gpu_0/data_0", "x-y", "x_y"]
    table = NameTable()
    out = [table.relay_name(n) for n in names]
    assert all(VALID.fullmatch(n) for n in out)
    assert len(set(out)) == len(out)
    assert table.relay_name("gpu_0/data_0") == "gpu_0/data_0"  # valid names are kept
    assert out[-2:] == ["x_y", "x_y_1"]  # "x-y" took x_y first
    assert sanitise("onnx::Conv_3") == "onnx__Conv_3"


def test_params_and_inputs_keep_the_onnx_names():
    model, w, b = _weird_names_model()
    mod, params = from_onnx(model, shapes={"batch": 2})
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["input_1", "onnx__Gemm_7", "_1"]
    assert list(params) == ["onnx__Gemm_7", "_1"]
    assert params.relay_names == {"input.1": "input_1", "onnx::Gemm_7": "onnx__Gemm_7",
                                  "1": "_1"}
    np.testing.assert_array_equal(params["onnx::Gemm_7"], w)  # ONNX names look up too
    assert "1" in params and params.get("1") is params["_1"]
    x = rand(2, 4)
    want = ort_run(model, {"input.1": x})[0]
    np.testing.assert_allclose(rr.compile(mod, params=params)(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rr.evaluate(mod, x, *params.values()), want, rtol=1e-5,
                               atol=1e-6)
    text = rr.astext(mod)
    assert rr.alpha_equal(rr.parse(text), mod)


def test_symbolic_dims_become_shape_variables_unless_fixed():
    model, _, _ = _weird_names_model()  # input.1: (batch, 4)
    mod, _ = from_onnx(model)
    assert mod["main"].params[0].type_annotation == TensorType((sym("batch"), 4), "float32")
    fixed, _ = from_onnx(model, shapes={"input.1": (5, None)})
    assert fixed["main"].params[0].type_annotation == TensorType((5, 4), "float32")
    by_symbol, _ = from_onnx(model, shapes={"batch": 7})
    assert by_symbol["main"].params[0].type_annotation == TensorType((7, 4), "float32")
    # running a symbolic batch at two sizes: tests/frontend/test_onnx_symbolic.py


@pytest.mark.parametrize("shapes, message", [
    ({"input.1": (5, 3)}, "fixes it to 4"),
    ({"input.1": (5,)}, "has 1 dims"),
    ({"nope": (1,)}, "names neither a graph input nor a symbolic dim"),
    ({"batch": -1}, "non-negative int"),
])
def test_bad_shapes_are_frontend_errors(shapes, message):
    model, _, _ = _weird_names_model()
    with pytest.raises(rr.FrontendError, match=message):
        from_onnx(model, shapes=shapes)


def test_inputs_in_graph_order_then_initializers():
    nodes = [helper.make_node("Add", ["b", "w"], ["t"]),
             helper.make_node("Mul", ["t", "a"], ["y"])]
    inits = [numpy_helper.from_array(rand(3, seed=1), "w")]
    model = _model(nodes, [_vi("b", [3]), _vi("a", [3])], [_vi("y", [3])], inits)
    mod, params = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == ["b", "a", "w"]
    frozen, none = from_onnx(model, freeze_params=True)
    assert [p.name_hint for p in frozen["main"].params] == ["b", "a"] and not none
    a, b = rand(3, seed=3), rand(3, seed=4)
    np.testing.assert_allclose(rr.evaluate(frozen, b, a), rr.evaluate(mod, b, a, params["w"]))


def test_shape_initializers_are_embedded_and_shape_arithmetic_folds():
    """A Reshape's shape from an initializer, and one computed by Shape -> Gather ->
    Concat, are both static: no parameter for them, one reshape in the output."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
        helper.make_node("Reshape", ["y", "fixed"], ["z"]),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "zero1"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
             numpy_helper.from_array(np.array([2, 12], np.int64), "fixed")]
    model = _model(nodes, [_vi("x", [2, 3, 4])], [_vi("z", [2, 12])], inits)
    mod, params = from_onnx(model)
    assert [p.name_hint for p in mod["main"].params] == ["x"] and not params
    text = rr.astext(mod)
    assert "shape_of" not in text and "take" not in text
    assert text.count("reshape(") == 2 and "newshape=[2, -1]" in text
    x = rand(2, 3, 4)
    np.testing.assert_array_equal(rr.evaluate(mod, x), x.reshape(2, 12))


def test_conv_model_text_is_graph_form_and_round_trips():
    model = node_model("Conv", {"x": rand(1, 3, 8, 8)}, {"pads": [1, 1, 1, 1]}, opset=9,
                       initializers={"w": rand(4, 3, 3, 3), "b": rand(4)})
    mod, _ = from_onnx(model)
    text = rr.astext(mod)
    assert "%0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);" \
        in text
    assert "nn.bias_add(%0, %b)" in text
    assert rr.alpha_equal(rr.parse(text), mod)
    rr.infer_types(mod)


def test_multiple_outputs_are_a_tuple():
    model = node_model("Split", {"x": rand(4, 2)}, opset=13, n_outputs=2)
    mod, _ = from_onnx(model)
    out = rr.evaluate(mod, rand(4, 2))
    assert isinstance(out, tuple) and [o.shape for o in out] == [(2, 2), (2, 2)]


# -- unsupported input: one error, listing everything, up front ---------------------------

def test_every_unsupported_op_and_attribute_in_one_error():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="ok"),
        helper.make_node("Det", ["a"], ["b"], name="loop1"),
        helper.make_node("ReverseSequence", ["a", "a"], ["c"], name="nz1"),
        helper.make_node("ReverseSequence", ["a", "a"], ["d"], name="nz2"),
        helper.make_node("LRN", ["a"], ["e"], name="lrn_even", size=4),
        helper.make_node("Conv", ["a", "a"], ["f"], name="conv_bad", auto_pad="FOO"),
        helper.make_node("MyOp", ["a"], ["g"], name="custom", domain="com.example"),
        helper.make_node("MaxPool", ["a"], ["h", "idx"], name="pool_idx", kernel_shape=[1]),
    ]
    model = _model(nodes, [_vi("x", [1, 2, 3])], [_vi("h", None)])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(rr.FrontendError) as info:
        from_onnx(model)
    err = info.value
    assert isinstance(err, rr.RelayError)
    text = str(err)
    assert "unsupported operator Det" in text and "'loop1'" in text
    assert "unsupported operator ReverseSequence" in text and "2 node(s): 'nz1', 'nz2'" in text
    assert "unsupported operator com.example.MyOp" in text and "'custom'" in text
    assert "opset 13" in text
    assert "LRN node 'lrn_even': size=4" in text
    assert "Conv node 'conv_bad': auto_pad='FOO'" in text
    assert "MaxPool node 'pool_idx': output(s) 'idx' not supported" in text
    assert len(err.diagnostics) == 1 + 3 + 3  # head, three ops, three other problems


def test_unsupported_element_types_are_listed():
    nodes = [helper.make_node("Identity", ["s"], ["t"])]
    model = _model(nodes, [_vi("s", [2], TensorProto.STRING)], [_vi("t", [2])])
    with pytest.raises(rr.FrontendError, match="element type STRING"):
        from_onnx(model)


def test_an_unsupported_op_is_named_with_its_version_and_the_opset():
    nodes = [helper.make_node("RoiAlign", ["b", "s", "i"], ["y"], name="nms")]
    model = _model(nodes, [_vi("b", [1, 4, 4, 4]), _vi("s", [1, 4]),
                           _vi("i", [1], TensorProto.INT64)],
                   [_vi("y", None)], opset=11)
    with pytest.raises(rr.FrontendError,
                       match=r"unsupported operator RoiAlign-10 \(opset 11\): "
                             r"1 node\(s\): 'nms'"):
        from_onnx(model)


def test_bad_files_and_models_are_frontend_errors(tmp_path):
    with pytest.raises(rr.FrontendError, match="no such file"):
        from_onnx(tmp_path / "missing.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\x00 this is not a protobuf \x12\x99")
    with pytest.raises(rr.FrontendError):
        from_onnx(junk)
    text = tmp_path / "text.onnx"
    text.write_text("def @main() { 1 }")
    with pytest.raises(rr.FrontendError):
        from_onnx(str(text))
    with pytest.raises(rr.FrontendError, match="no graph"):
        from_onnx(onnx.ModelProto())
    old = _model([helper.make_node("Add", ["x", "x"], ["y"])], [_vi("x", [2])],
                 [_vi("y", [2])], opset=6)  # Add-6 (``broadcast``) changed in opset 7
    with pytest.raises(rr.FrontendError, match="opset 6 is not supported"):
        from_onnx(old)
    same = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])],
                  opset=6)  # Relu-6 is Relu at opset 7 too: read
    assert from_onnx(same)[0]["main"].body is not None
    with pytest.raises(TypeError, match="model must be"):
        from_onnx(42)


def test_undefined_names_and_bad_shapes_in_the_graph_are_frontend_errors():
    dangling = _model([helper.make_node("Relu", ["nowhere"], ["y"])], [_vi("x", [2])],
                      [_vi("y", [2])])
    with pytest.raises(rr.FrontendError, match="reads 'nowhere'"):
        from_onnx(dangling)
    mismatch = _model([helper.make_node("Add", ["x", "z"], ["y"], name="add")],
                      [_vi("x", [2]), _vi("z", [3])], [_vi("y", None)])
    with pytest.raises(rr.FrontendError, match="Add-.* node 'add'"):
        from_onnx(mismatch)
    dynamic_shape = _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
                           [_vi("x", [6]), _vi("s", [2], TensorProto.INT64)], [_vi("y", None)])
    with pytest.raises(rr.FrontendError, match="must be a constant"):
        from_onnx(dynamic_shape)


def test_a_model_file_path_works(tmp_path):
    model = node_model("Relu", {"x": rand(3)}, opset=13)
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    mod, _ = from_onnx(path)
    x = rand(3)
    np.testing.assert_array_equal(as_list(rr.evaluate(mod, x))[0], np.maximum(x, 0))


def test_importing_the_package_does_not_import_onnx():
    import subprocess
    import sys

    code = ("import sys, relay_ref.frontend.onnx; "
            "print('onnx' in sys.modules, 'relay_ref.ops' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_constants_of_small_int_shapes_fold_but_float_weights_stay_calls():
    model = node_model("ConstantOfShape", {}, {"value": np.array([0.5], np.float32)},
                       opset=13, initializers={"s": np.array([2, 3], np.int64)})
    mod, params = from_onnx(model)
    assert not params and "full(0.5f, shape=[2, 3]" in rr.astext(mod)
    ints = node_model("ConstantOfShape", {}, {"value": np.array([7], np.int64)}, opset=13,
                      initializers={"s": np.array([2], np.int64)})
    assert isinstance(from_onnx(ints)[0]["main"].body, Constant)


def test_resize_scales_that_give_fractional_dims_are_floored():
    """ONNX floors ``dim * scale`` and maps coordinates by the scale, resize2d by the size
    ratio: such a Resize is lowered separably (not by resize2d) and matches onnxruntime."""
    model = node_model("Resize", {"x": rand(1, 1, 7, 8)}, {"mode": "linear"}, opset=13,
                       input_names=["x", "", "sc"],
                       initializers={"sc": np.array([1, 1, 0.5, 1.0], np.float32)})
    mod, _ = from_onnx(model)
    assert "image.resize2d" not in rr.astext(mod)
    assert_matches(model, {"x": rand(1, 1, 7, 8)}, rtol=1e-5, atol=1e-6)
