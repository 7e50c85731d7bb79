"""Symbolic shapes in the ONNX importer (issue 29, build item 8): a ``dim_param`` is a
shape variable; PyTorch's dynamic-batch flatten keeps the batch variable through
``Shape -> Gather/Slice -> Concat -> Reshape``; NonZero, Unique, Compress and
NonMaxSuppression import with ``match_cast`` to fresh shape variables. Values are compared
with onnxruntime (the oracle), through ``rr.evaluate`` and ``rr.compile``, at two sizes
per symbolic model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_case import as_list, ort_run, rand

import relay_ref as rr
from relay_ref.frontend.onnx import conformance, from_onnx
from relay_ref.frontend.onnx.names import DIM_VALID, DimTable
from relay_ref.ir.expr import Call, Let, Op
from relay_ref.ir.shape import ANY, sym
from relay_ref.ir.types import TensorType
from relay_ref.testing import onnx_light


def _model(nodes, inputs, outputs, inits=(), opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(np.asarray(v), k)
                               for k, v in dict(inits).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _out(name):
    return helper.make_empty_tensor_value_info(name)


def _both(model, feeds):
    """The model's outputs through rr.evaluate and rr.compile (weights as params)."""
    mod, params = from_onnx(model)
    evaluated = as_list(rr.evaluate(mod, *feeds.values(), *params.values()))
    compiled = as_list(rr.compile(mod, params=params)(*feeds.values()))
    return evaluated, compiled


def _assert_like_ort(model, feeds, rtol=1e-5, atol=1e-6):
    want = ort_run(model, feeds)
    for got in _both(model, feeds):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _result_text(model) -> str:
    """@main's inferred result type, as text (``Tensor[(n, 60), float32]``)."""
    mod, _ = from_onnx(model)
    checked = rr.infer_types(mod)
    return rr.astext(checked.global_types["main"].ret_type)


# -- dim_param -> shape variable -----------------------------------------------------------

def test_dim_params_become_stable_distinct_identifiers():
    table = DimTable()
    table.reserve(["batch_size", "N", "min"])
    names = [table.dim_name(p) for p in
             ("batch_size", "batch-size", "N", "unk__123", "2x", "min", "", "batch_size")]
    assert names[0] == "batch_size" and names[-1] == "batch_size"  # stable
    assert names[1] == "batch_size_1"  # the valid name keeps itself; the other is renamed
    assert names[2:4] == ["N", "unk__123"]
    assert names[4] == "d2x" and names[5] == "min_" and names[6] == "d"
    assert all(DIM_VALID.fullmatch(n) for n in names)
    assert len(set(names[:-1])) == len(names) - 1
    assert table.fresh("k") == "k" and table.fresh("k") == "k_1"


def test_the_same_dim_param_in_two_inputs_is_one_variable():
    nodes = [helper.make_node("Add", ["a", "b"], ["y"])]
    model = _model(nodes, [_vi("a", ["batch-size", 3]), _vi("b", ["batch-size", None])],
                   [_out("y")])
    model.graph.input[1].type.tensor_type.shape.dim[1].Clear()  # neither value nor param
    mod, _ = from_onnx(model)
    a, b = (p.type_annotation for p in mod["main"].params)
    assert a == TensorType((sym("batch_size"), 3), "float32")
    assert b == TensorType((sym("batch_size"), ANY), "float32")
    assert "Tensor[(batch_size, 3), float32]" in _result_text(model)
    _assert_like_ort(model, {"a": rand(2, 3), "b": rand(2, 3, seed=1)})
    _assert_like_ort(model, {"a": rand(5, 3), "b": rand(5, 1, seed=1)})
    with pytest.raises(rr.RelayError, match="batch_size"):  # 2 by a, 3 by b (Shape-Bind)
        rr.evaluate(mod, rand(2, 3), rand(3, 3))


def _symbolic_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose inputs' and outputs' first dim is the dim_param "N"."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {i.name for i in m.graph.initializer}
    for v in [*m.graph.input, *m.graph.output]:
        dims = v.type.tensor_type.shape.dim
        if v.name not in inits and dims:
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "N"
    return m


def test_a_light_model_with_a_symbolic_batch_runs_at_two_batch_sizes():
    model, inputs, _ = onnx_light.case("squeezenet")
    sym_model = _symbolic_batch(model)
    mod, params = from_onnx(sym_model)  # no shapes= needed
    (name, x), = inputs.items()
    assert mod["main"].params[0].type_annotation.shape == (sym("N"), *x.shape[1:])
    exe = rr.compile(mod, params=params)
    for batch in (1, 2):
        feed = np.random.default_rng(batch).standard_normal((batch, *x.shape[1:]))
        feed = feed.astype(np.float32)
        want = ort_run(sym_model, {name: feed})
        for got in (as_list(exe(feed)), as_list(rr.evaluate(mod, feed, *params.values()))):
            assert [g.shape for g in got] == [w.shape for w in want]
            assert want[0].shape[0] == batch
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


# -- PyTorch's flatten with a dynamic batch ------------------------------------------------

_INITS = {"minus1": np.array([-1], np.int64), "i0": np.array(0, np.int64),
          "z": np.array([0], np.int64), "o": np.array([1], np.int64),
          "ax": np.array([0], np.int64), "three": np.array(3, np.int64),
          "twenty": np.array(20, np.int64), "twenty1": np.array([20], np.int64)}


def _flatten_model(kind: str) -> onnx.ModelProto:
    head = [helper.make_node("Shape", ["x"], ["s"])]
    body = {
        # x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape
        "gather": [helper.make_node("Gather", ["s", "i0"], ["g"], axis=0),
                   helper.make_node("Unsqueeze", ["g", "ax"], ["u"]),
                   helper.make_node("Concat", ["u", "minus1"], ["c"], axis=0)],
        # x.view(*x.shape[:1], -1): Shape -> Slice -> Concat -> Reshape
        "slice": [helper.make_node("Slice", ["s", "z", "o"], ["g"]),
                  helper.make_node("Concat", ["g", "minus1"], ["c"], axis=0)],
        # x.view(x.numel() // 20, 20): Size -> Div -> Concat
        "size": [helper.make_node("Size", ["x"], ["n"]),
                 helper.make_node("Div", ["n", "twenty"], ["q"]),
                 helper.make_node("Unsqueeze", ["q", "ax"], ["u"]),
                 helper.make_node("Concat", ["u", "twenty1"], ["c"], axis=0)],
        # x.view(x.size(0) * 3, -1), through a Cast as exporters write it
        "mul": [helper.make_node("Gather", ["s", "i0"], ["g"], axis=0),
                helper.make_node("Mul", ["g", "three"], ["g3"]),
                helper.make_node("Cast", ["g3"], ["g3c"], to=TensorProto.INT64),
                helper.make_node("Unsqueeze", ["g3c", "ax"], ["u"]),
                helper.make_node("Concat", ["u", "minus1"], ["c"], axis=0)],
    }
    if kind == "flatten":
        nodes = [helper.make_node("Flatten", ["x"], ["y"], axis=1)]
    else:
        nodes = [*head, *body[kind], helper.make_node("Reshape", ["x", "c"], ["y"])]
    return _model(nodes, [_vi("x", ["batch_size", 3, 4, 5])], [_out("y")], _INITS)


@pytest.mark.parametrize("kind, result", [
    ("gather", "Tensor[(batch_size, 60), float32]"),
    ("slice", "Tensor[(batch_size, 60), float32]"),
    ("mul", "Tensor[(batch_size * 3, 20), float32]"),
    ("size", "Tensor[(batch_size * 3, 20), float32]"),
    ("flatten", "Tensor[(batch_size, 60), float32]"),
])
def test_dynamic_batch_flatten_keeps_the_batch_variable(kind, result):
    model = _flatten_model(kind)
    mod, _ = from_onnx(model)
    reshape = mod["main"].body
    assert isinstance(reshape, Call) and reshape.op == Op("reshape")  # a static newshape
    assert result in _result_text(model)
    for batch in (1, 4):
        _assert_like_ort(model, {"x": rand(batch, 3, 4, 5)})


def test_a_shape_no_static_newshape_can_say_is_a_checked_match_cast():
    """(n, m, 4) to (m, n, 4): two dims that are not the input's at their position; the
    run-time shape reshapes (``dyn.reshape``) and a match_cast states the known type."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "perm"], ["p"], axis=0),
             helper.make_node("Reshape", ["x", "p"], ["y"])]
    model = _model(nodes, [_vi("x", ["n", "m", 4])], [_out("y")],
                   {"perm": np.array([1, 0, 2], np.int64)})
    mod, _ = from_onnx(model)
    body = mod["main"].body
    assert body.op == Op("match_cast") and body.args[0].op == Op("dyn.reshape")
    assert "Tensor[(m, n, 4), float32]" in _result_text(model)
    _assert_like_ort(model, {"x": rand(2, 3, 4)})
    _assert_like_ort(model, {"x": rand(5, 1, 4)})


def test_expand_and_constant_of_shape_by_a_symbolic_shape():
    """``b.expand_as(x)`` and ``zeros_like`` written as ConstantOfShape(Shape(x))."""
    zero = numpy_helper.from_array(np.array([0.5], np.float32))
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Expand", ["b", "s"], ["e"]),
             helper.make_node("ConstantOfShape", ["s"], ["z"], value=zero),
             helper.make_node("Add", ["e", "z"], ["y"])]
    model = _model(nodes, [_vi("x", ["n", 4]), _vi("b", [1, 4])], [_out("y")])
    assert "Tensor[(n, 4), float32]" in _result_text(model)
    for rows in (1, 3):
        _assert_like_ort(model, {"x": rand(rows, 4), "b": rand(1, 4, seed=2)})


# -- data-dependent output sizes -----------------------------------------------------------

def _match_casts(mod) -> list:
    found = []
    todo = [mod["main"].body]
    seen = set()
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, Call):
            if e.op == Op("match_cast"):
                found.append(e.attrs.type)
            todo.extend(e.args)
        todo.extend(getattr(e, "fields", ()))
        if hasattr(e, "tuple_value"):
            todo.append(e.tuple_value)
    return found


def test_nonzero_gets_a_fresh_variable_that_flows_on():
    """A model whose own dim_param is "k": NonZero's count takes another name."""
    nodes = [helper.make_node("NonZero", ["x"], ["nz"]),
             helper.make_node("Transpose", ["nz"], ["y"], perm=[1, 0])]
    model = _model(nodes, [_vi("x", ["k", 3])], [_out("y")])
    mod, _ = from_onnx(model)
    assert _match_casts(mod) == [TensorType((2, sym("k_1")), "int64")]
    # inside @main the count flows on; @main's signature forgets it (T-ShapeScope: a
    # match_cast's variable does not leave the function)
    checked = rr.infer_types(from_onnx(model)[0])
    body = checked["main"].body
    while isinstance(body, Let):
        body = body.body
    assert "Tensor[(k_1, 2), int64]" in rr.astext(checked.type_of(body))
    assert "Tensor[(?, 2), int64]" in _result_text(model)
    for rows in (2, 5):
        x = rand(rows, 3, seed=rows)
        x[x < 0] = 0
        _assert_like_ort(model, {"x": x})


@pytest.mark.parametrize("attrs, shape", [
    ({"sorted": 1}, (7,)), ({"sorted": 0}, (7,)), ({"sorted": 1, "axis": 0}, (5, 2)),
    ({"sorted": 0, "axis": -1}, (2, 6)),
])
def test_unique_outputs_share_one_variable(attrs, shape):
    nodes = [helper.make_node("Unique", ["x"], ["y", "idx", "inv", "cnt"], **attrs)]
    model = _model(nodes, [_vi("x", list(shape))], [_out(n) for n in ("y", "idx", "inv",
                                                                      "cnt")], opset=11)
    mod, _ = from_onnx(model)
    (cast,) = _match_casts(mod)
    k = sym("k")
    assert cast.fields[1] == cast.fields[3] == TensorType((k,), "int64")
    assert k in cast.fields[0].shape
    x = np.round(rand(*shape, seed=3)).astype(np.float32)  # repeats
    _assert_like_ort(model, {"x": x})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis):
    attrs = {} if axis is None else {"axis": axis}
    nodes = [helper.make_node("Compress", ["x", "c"], ["y"], **attrs)]
    model = _model(nodes, [_vi("x", ["n", 4]), _vi("c", ["m"], TensorProto.BOOL)],
                   [_out("y")], opset=11)
    for rows, cond in ((3, [True, False, True]), (4, [False, True, False, True])):
        _assert_like_ort(model, {"x": rand(rows, 4, seed=rows),
                                 "c": np.array(cond[:3 if axis in (1, -1) else rows])})


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_on_random_boxes(center):
    rng = np.random.default_rng(center)
    corners = rng.uniform(0, 10, (2, 12, 4)).astype(np.float32)
    boxes = corners if center == 0 else np.concatenate(
        [corners[..., :2], np.abs(corners[..., 2:]) / 2 + 0.5], axis=-1)
    scores = rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
    nodes = [helper.make_node("NonMaxSuppression", ["b", "s", "m", "iou", "thr"], ["y"],
                              center_point_box=center)]
    model = _model(nodes, [_vi("b", ["B", 12, 4]), _vi("s", ["B", 3, 12]),
                           _vi("m", [1], TensorProto.INT64), _vi("iou", [1]),
                           _vi("thr", [1])], [_out("y")], opset=11)
    for limit, iou, thr in ((3, 0.3, 0.2), (12, 0.6, 0.0)):
        _assert_like_ort(model, {"b": boxes, "s": scores, "m": np.array([limit]),
                                 "iou": np.array([iou], np.float32),
                                 "thr": np.array([thr], np.float32)})
    two_inputs = _model([helper.make_node("NonMaxSuppression", ["b", "s"], ["y"])],
                        [_vi("b", [2, 12, 4]), _vi("s", [2, 3, 12])], [_out("y")], opset=11)
    _assert_like_ort(two_inputs, {"b": boxes, "s": scores})  # no boxes: the limit is 0


def test_the_node_tests_of_the_four_ops_pass():
    """ONNX's own cases (test_nonzero_*, test_unique_*, test_compress_*,
    test_nonmaxsuppression_*) through the backend, interpreted and compiled."""
    ops = ("NonZero", "Unique", "Compress", "NonMaxSuppression")
    cases = conformance.filtered(conformance.select().cases, ops=ops)
    assert len(cases) >= 21
    for executor in ("evaluate", "compile"):
        results = conformance.sweep(cases, executor)
        bad = [f"{r.case}: {r.outcome} {r.detail}" for r in results if r.outcome != "passed"]
        assert not bad, "\n".join(bad)
