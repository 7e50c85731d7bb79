"""What a careless user found in the ONNX importer (issue 22), by class:

* operands of different element types are computed as ONNX's reference computes them
  (``np.power(a, b).astype(a.dtype)`` for Pow, NumPy's promotion elsewhere), never one
  operand cast to the other's type first; a node that binds one type parameter of its
  signature to two types is refused, naming the node;
* an invalid graph (a name defined twice, a duplicate input or initializer, a negative
  dimension) and a ``shapes=`` value that is not a non-negative int are refused with a
  ``FrontendError`` naming the node, input or initializer;
* where onnxruntime and ``onnx.reference`` disagree, the reference's answer is kept.

Oracles: ``onnx.reference.ReferenceEvaluator`` always (where it runs the case), and
onnxruntime where it accepts the model (it refuses many of these type combinations).
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx_case import node_model, ort_run, relay_run

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx


def _reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list | None:
    """onnx.reference's outputs, None when it refuses (NumPy's integer negative powers)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return list(ReferenceEvaluator(model).run(None, feeds))
        except ValueError:
            return None


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list | None:
    """onnxruntime's outputs, None when it refuses the model (a type it lacks a kernel
    for, or a combination its schemas do not allow)."""
    try:
        return ort_run(model, feeds)
    except Exception as err:  # onnxruntime's Fail / InvalidGraph / NotImplemented
        if "NOT_IMPLEMENTED" in str(err) or "Type Error" in str(err) \
                or "INVALID_GRAPH" in str(err):
            return None
        raise


def _same(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True)


def _check(op: str, feeds: dict[str, np.ndarray], attrs: dict | None = None, *, opset: int,
           rtol: float = 1e-6, atol: float = 0.0, oracles: str = "ref ort",
           n_outputs: int = 1, compiled: bool = False) -> np.ndarray:
    """Run one ``op`` node through relay_ref and compare with the named oracles (each
    where it runs the case; at least one must). Returns relay_ref's first output."""
    model = node_model(op, feeds, attrs, opset=opset, n_outputs=n_outputs)
    got = relay_run(model, feeds, compiled=compiled)
    compared = 0
    for name, run in (("ref", _reference), ("ort", _ort)):
        want = run(model, feeds) if name in oracles else None
        if want is None:
            continue
        compared += 1
        for g, w in zip(got, want, strict=True):
            _same(g, np.asarray(w), rtol, atol)
    assert compared, "no oracle ran the case"
    return got[0]


# -- Pow: computed in the promoted type, cast to the base's -------------------------------

POW_CASES = [
    # the issue's case: 4 ** 1.5 = 8, 3 ** 2.9 = 24 (not the exponent cast to int32)
    ([2, 4, 3, 0], "int32", [0.5, 1.5, 2.9, 0.5], "float32"),
    ([2, 4, 3, 0], "int32", [-1, -1, -1, -1], "float32"),  # 0.5 -> 0; 0 ** -1 as ORT
    ([-8, -3, 4, 5, 9], "int32", [0.5, 1 / 3, 0.5, -0.5, 0.5], "float32"),  # NaN cast
    ([2, 3, -5, 9, 7], "int64", [62.0, 39.0, 3.0, 0.5, 2.25], "float64"),
    ([3, 3, 7, 100, -2], "int8", [5.0, 2.0, -3.0, 1.5, 3.0], "float16"),
    ([2.5, -3.0, 0.0, 5.0, 0.1], "float32", [-1, 3, 2, 0, 3], "int64"),
    ([1.5, -2.5, 0.0, 4.0], "float64", [2, 3, -1, 0], "int32"),
    ([2.5, -3.0, 0.0, 5.0], "float16", [2.0001, 3.0, 2.0, 0.5], "float32"),
    ([1.5, -2.5, 0.1, 4.0], "float32", [2.5, 3.0, -1.5, 0.25], "float64"),
    ([3, 3, 7, 200], "uint8", [5, 2, 3, 2], "uint8"),  # wraps as NumPy's
    # exact in int64 as NumPy (onnxruntime goes through a double: 3 ** 39 loses digits)
    ([2, 3, -5, 9], "int64", [62, 39, 3, 20], "int32", "ref"),
]


@pytest.mark.parametrize("case", POW_CASES)
def test_pow_of_mixed_types_is_numpy_power_cast_to_the_base(case):
    a, a_type, b, b_type, *oracles = case
    feeds = {"a": np.array(a, a_type), "b": np.array(b, b_type)}
    _check("Pow", feeds, opset=15, oracles=oracles[0] if oracles else "ref ort")


def test_pow_issue_case_values_and_compiled():
    feeds = {"a": np.array([2, 4, 3, 0], "int32"),
             "b": np.array([0.5, 1.5, 2.9, 0.5], "float32")}
    got = _check("Pow", feeds, opset=15, compiled=True)
    np.testing.assert_array_equal(got, [1, 8, 24, 0])


@pytest.mark.parametrize("a, a_type, b, b_type", [
    ([2, -3, 0, 5, 1, -1, -1, 7], "int32", [-1, -2, 2, 0, -5, -3, -4, 3], "int64"),
    ([2, -3, 1, -1, 7], "int64", [-1, -2, -3, -3, 3], "int64"),
    ([3, 3, 7, 200, 1], "uint8", [5, 2, -3, 1, -2], "int8"),
])
def test_pow_integer_negative_exponents_truncate_as_onnxruntime(a, a_type, b, b_type):
    """NumPy (so onnx.reference) refuses integers to negative integer powers;
    onnxruntime truncates the float power: 0 for |a| > 1, +-1 for a = +-1."""
    feeds = {"a": np.array(a, a_type), "b": np.array(b, b_type)}
    model = node_model("Pow", feeds, opset=15)
    got = relay_run(model, feeds)[0]
    base, exp = np.array(a, np.float64), np.array(b, np.float64)
    want = np.trunc(np.power(base, exp)).astype(a_type)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.dtype(a_type)
    oracle = _ort(model, feeds)
    if oracle is not None:
        np.testing.assert_array_equal(got, oracle[0])


# -- other converters with inputs of different type parameters ----------------------------

_rng = np.random.default_rng(22)
_GRID_X = _rng.uniform(-1, 1, (2, 3, 4, 5))
_GRID = _rng.uniform(-1.2, 1.2, (2, 3, 6, 2))


@pytest.mark.parametrize("x_type, grid_type, attrs", [
    ("float16", "float32", {}),
    ("float16", "float32", {"mode": "cubic", "align_corners": 1}),
    ("float32", "float16", {"padding_mode": "border"}),
])
def test_grid_sample_keeps_the_wider_grid_as_onnxruntime(x_type, grid_type, attrs):
    """Sampled in the wider type, cast to X's: a float32 grid is not rounded to float16
    (which moved the sampling points by several float16 ulps)."""
    feeds = {"x": _GRID_X.astype(x_type), "g": _GRID.astype(grid_type)}
    _check("GridSample", feeds, attrs, opset=20, oracles="ort", rtol=0, atol=1e-6)


@pytest.mark.parametrize("x_type, grid_type", [("float32", "float64"), ("float64", "float32")])
def test_grid_sample_float64_grid_or_data_as_reference(x_type, grid_type):
    feeds = {"x": _GRID_X.astype(x_type), "g": _GRID.astype(grid_type)}
    _check("GridSample", feeds, opset=20, oracles="ref", rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("x, scale, zp, opset", [
    (np.array([16777217, -3, 5, 2**30 + 1], "int32"), np.array(0.1, "float64"),
     np.array(1, "int32"), 21),  # float32(x) - int32 zp is float64 in the reference
    (np.array([16777217, -3, 5, 2**30 + 1], "int32"), np.array(0.1, "float32"),
     np.array(-7, "int32"), 21),
    (np.array([100, 3, 5, 255], "uint8"), np.array(0.1, "float64"), np.array(1, "uint8"),
     23),
    (np.array([100, -3, 5, 127], "int8"), np.array(0.1, "float16"), np.array(1, "int8"),
     21),
])
def test_dequantize_linear_in_the_promoted_type(x, scale, zp, opset):
    _check("DequantizeLinear", {"x": x, "s": scale, "z": zp}, opset=opset, rtol=0)


@pytest.mark.parametrize("x, scale, zp, attrs", [
    # 0.45 / 0.3 in float32 is 1.4999..: 1, where float16 division rounds it to 1.5: 2
    (np.array([100.3, -3.7, 5.5, 127.49, 0.45], "float16"), np.array(0.3, "float32"),
     np.array(1, "int8"), {}),
    (np.array([1000.3, -3.7, 5.5, 127.49, 0.45], "float64"), np.array(0.3, "float32"),
     np.array(1, "uint16"), {}),
    (np.array([1000.5, -3.7, 5.5, 127.5, 0.45], "float16"), np.array(0.3, "float16"),
     np.array(1, "int16"), {"precision": TensorProto.FLOAT}),
])
def test_quantize_linear_divides_in_the_promoted_type(x, scale, zp, attrs):
    _check("QuantizeLinear", {"x": x, "s": scale, "z": zp}, attrs,
           opset=25 if attrs else 23, rtol=0)


@pytest.mark.parametrize("x_type, scale_type, stats_type, oracles", [
    ("float32", "float16", "float32", "ref ort"),
    ("float32", "float32", "float16", "ref ort"),
    ("float16", "float32", "float64", "ref"),
    ("float64", "float32", "float32", "ref"),
])
def test_batch_norm_15_with_other_parameter_types(x_type, scale_type, stats_type, oracles):
    rng = np.random.default_rng(15)
    feeds = {"x": rng.uniform(-2, 2, (2, 3, 2)).astype(x_type)}
    for name, kind, low in (("s", scale_type, 0.5), ("b", scale_type, -1),
                            ("m", stats_type, -1), ("v", stats_type, 0.5)):
        feeds[name] = rng.uniform(low, 2, (3,)).astype(kind)
    _check("BatchNormalization", feeds, opset=15, oracles=oracles, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("q_type, mask_type, attrs", [
    ("float32", "float16", {}),
    ("float32", "float16", {"qk_matmul_output_mode": 2}),
    ("float16", "float32", {"is_causal": 1}),
    ("float16", "float64", {"qk_matmul_output_mode": 3}),
])
def test_attention_float_mask_of_another_type(q_type, mask_type, attrs):
    """A float mask (U) of another type than Q (T1): scores in the promoted type."""
    rng = np.random.default_rng(23)
    feeds = {"q": rng.uniform(-1, 1, (1, 2, 3, 4)).astype(q_type),
             "k": rng.uniform(-1, 1, (1, 2, 5, 4)).astype(q_type),
             "v": rng.uniform(-1, 1, (1, 2, 5, 4)).astype(q_type),
             "m": rng.uniform(-1, 1, (3, 5)).astype(mask_type)}
    feeds["m"][0, 2] = -np.inf
    n_outputs = 4 if attrs else 1
    model = node_model("Attention", feeds, attrs, opset=23, n_outputs=n_outputs)
    if attrs:  # ask for Y and qk only
        model.graph.node[0].output[1] = model.graph.node[0].output[2] = ""
        del model.graph.output[1:3]
    got = relay_run(model, feeds)
    want = _reference(model, feeds)
    assert want is not None
    for g, w in zip(got, want, strict=True):
        _same(g, w, rtol=0, atol=0)  # the reference's exact arithmetic


@pytest.mark.parametrize("op, feeds, attrs, names, opset", [
    ("MatMul", {"a": np.ones((2, 2), "int32"), "b": np.ones((2, 2), "float32")}, {}, None,
     13),
    ("Gemm", {"a": np.ones((2, 2), "float32"), "b": np.ones((2, 2), "float64")}, {}, None,
     13),
    ("Clip", {"x": np.ones(3, "float32"), "lo": np.array(1, "int64")}, {}, None, 13),
    ("Clip", {"x": np.ones(3, "int32"), "hi": np.array(1.5, "float32")}, {},
     ["x", "", "hi"], 13),
    ("Where", {"c": np.ones(2, bool), "a": np.ones(2, "int32"), "b": np.ones(2, "float32")},
     {}, None, 16),
    ("Concat", {"a": np.ones(2, "int32"), "b": np.ones(2, "int32"),
                "c": np.ones(2, "int64")}, {"axis": 0}, None, 13),
    ("Range", {"s": np.array(1, "int32"), "l": np.array(5.5, "float32"),
               "d": np.array(2, "int32")}, {}, None, 13),
    ("Pow", {"a": np.ones(2, "int32"), "b": np.ones(2, "float32")}, {}, None, 7),
    ("Mod", {"a": np.ones(2, "int32"), "b": np.ones(2, "int64")}, {}, None, 13),
    ("Einsum", {"a": np.ones((2, 2), "float32"), "b": np.ones((2, 2), "float64")},
     {"equation": "ij,jk->ik"}, None, 12),
])
def test_one_type_parameter_bound_to_two_types_is_refused(op, feeds, attrs, names, opset):
    """Inputs that share a type parameter (T) must share a type: ORT refuses such a
    node, and Relay's ops would compute in the first input's type (MatMul gave int32)."""
    model = node_model(op, feeds, attrs, opset=opset, input_names=names)
    with pytest.raises(rr.FrontendError, match=rf"{op.lower()}_node.*same element type"):
        from_onnx(model)


# -- invalid graphs -----------------------------------------------------------------------

def _vi(name: str, shape: list | None = (2,), elem: int = TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _graph_model(nodes: list, inputs: list, outputs: list,
                 inits: list | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def _relu(x: str, y: str, name: str) -> onnx.NodeProto:
    return helper.make_node("Relu", [x], [y], name=name)


def _init(name: str, value: np.ndarray, dims: list[int] | None = None) -> onnx.TensorProto:
    t = numpy_helper.from_array(value.astype(np.float32), name)
    if dims is not None:
        t.dims[:] = dims
    return t


def _if_model(branch: list, branch_out: str) -> onnx.ModelProto:
    then = helper.make_graph(branch, "then", [], [_vi(branch_out)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_vi("e")])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other,
                            name="if_node")
    return _graph_model([node], [_vi("c", [], TensorProto.BOOL), _vi("x")], [_vi("y")])


INVALID = {
    "two nodes write one output": (
        _graph_model([_relu("x", "y", "first"), helper.make_node("Neg", ["x"], ["y"],
                                                                 name="second")],
                     [_vi("x")], [_vi("y")]),
        r"Neg node 'second' writes 'y', which Relu node 'first' already defines"),
    "one node writes a name twice": (
        _graph_model([helper.make_node("Split", ["x"], ["y", "y"], num_outputs=2,
                                       name="split")], [_vi("x")], [_vi("y", [1])]),
        r"Split node 'split' writes 'y', which Split node 'split' already defines"),
    "a node writes a graph input": (
        _graph_model([_relu("x", "x", "over")], [_vi("x")], [_vi("x")]),
        r"Relu node 'over' writes 'x', which graph input 'x' already defines"),
    "a node writes an initializer": (
        _graph_model([_relu("x", "w", "over"), helper.make_node("Add", ["x", "w"], ["y"])],
                     [_vi("x")], [_vi("y")], [_init("w", np.ones(2))]),
        r"Relu node 'over' writes 'w', which initializer 'w' already defines"),
    "duplicate graph inputs": (
        _graph_model([_relu("x", "y", "r")], [_vi("x"), _vi("x")], [_vi("y")]),
        r"graph input 'x' is given twice"),
    "duplicate initializers": (
        _graph_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x")], [_vi("y")],
                     [_init("w", np.ones(2)), _init("w", np.zeros(2))]),
        r"initializer 'w' is given twice"),
    "a negative initializer dim read as one unknown dim": (
        _graph_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", [6])],
                     [_vi("y", [6])], [_init("w", np.arange(6), [-6])]),
        r"initializer 'w' has a negative dimension \(dims \[-6\]\)"),
    "negative initializer dims": (
        _graph_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", [2, 3])],
                     [_vi("y", [2, 3])], [_init("w", np.ones((2, 3)), [-2, -3])]),
        r"initializer 'w' has a negative dimension"),
    "a subgraph node writes an outer name": (
        _if_model([_relu("x", "x", "inner")], "x"),
        r"If node 'if_node': then_branch: Relu node 'inner' writes 'x', which graph input "
        r"'x' of an enclosing graph"),
    "two subgraph nodes write one name": (
        _if_model([_relu("x", "t", "i1"), helper.make_node("Neg", ["x"], ["t"], name="i2")],
                  "t"),
        r"then_branch: Neg node 'i2' writes 't', which Relu node 'i1' already defines"),
    "a node input nothing defines": (
        _graph_model([helper.make_node("Add", ["x", "q"], ["y"], name="adder")], [_vi("x")],
                     [_vi("y")]),
        r"node 'adder' reads 'q', which no earlier node, graph input or initializer"),
    "a graph output nothing defines": (
        _graph_model([_relu("x", "y", "r")], [_vi("x")], [_vi("y"), _vi("z")]),
        r"graph output reads 'z', which no earlier node"),
    "nodes out of order": (
        _graph_model([helper.make_node("Add", ["x", "t"], ["y"], name="late"),
                      _relu("x", "t", "early")], [_vi("x")], [_vi("y")]),
        r"node 'late' reads 't'.*topologically sorted"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_graphs_are_refused_by_name(case):
    model, message = INVALID[case]
    with pytest.raises(onnx.checker.ValidationError):  # ONNX agrees the model is invalid
        onnx.checker.check_model(model, full_check=True)
    with pytest.raises(rr.FrontendError, match=message):
        from_onnx(model)


def test_valid_graphs_near_the_invalid_ones_still_import():
    """An initializer that is also a graph input (its default), a subgraph's node output
    named as an outer value defined only after the subgraph's node, a graph output given
    twice: ONNX allows each."""
    w = _init("w", np.array([1.0, 2.0]))
    default = _graph_model([helper.make_node("Add", ["x", "w"], ["y"])],
                           [_vi("x"), _vi("w")], [_vi("y")], [w])
    later = _if_model([_relu("x", "y", "inner")], "y")
    twice = _graph_model([_relu("x", "y", "r")], [_vi("x")], [_vi("y"), _vi("y")])
    x = np.array([-1.0, 3.0], np.float32)
    for model, feeds in ((default, {"x": x}),
                         (later, {"c": np.array(True), "x": x}), (twice, {"x": x})):
        onnx.checker.check_model(model, full_check=True)
        mod, params = from_onnx(model)
        out = rr.evaluate(mod, *feeds.values(), *params.values())
        outs = out if isinstance(out, tuple) else (out,)
        for got, want in zip(outs, ort_run(model, feeds), strict=True):
            np.testing.assert_allclose(np.asarray(got), want)


# -- shapes= ------------------------------------------------------------------------------

def _symbolic_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    return _graph_model([_relu("x", "y", "r")], [x], [_vi("y", None)])


@pytest.mark.parametrize("shapes, message", [
    ({"x": (2.5, 3)}, r"shapes\['x'\] gives dim 0 as 2.5"),
    ({"x": (2.0, 3)}, r"gives dim 0 as 2.0"),  # a whole float is not an int either
    ({"x": (np.float64(2), 3)}, r"gives dim 0 as"),
    ({"x": (True, 3)}, r"gives dim 0 as True"),
    ({"x": (2, np.bool_(True))}, r"gives dim 1 as"),
    ({"x": (-2, 3)}, r"gives dim 0 as -2"),
    ({"x": ("2", 3)}, r"gives dim 0 as '2'"),
    ({"x": "23"}, r"shapes\['x'\] must be a sequence of ints"),
    ({"x": {2: 3}}, r"must be a sequence of ints"),
    ({"x": np.array([[2, 3]])}, r"must be a sequence of ints"),
    ({"x": 2}, r"must be a sequence of ints"),
    ({"n": 2.5}, r"shapes\['n'\] \(a symbolic dim\) must be a non-negative int"),
    ({"n": True}, r"symbolic dim"),
    ({"n": -1}, r"symbolic dim"),
])
def test_shapes_values_that_are_not_dims_are_refused(shapes, message):
    with pytest.raises(rr.FrontendError, match=message):
        from_onnx(_symbolic_model(), shapes)


@pytest.mark.parametrize("shapes", [
    {"x": (4, 3)}, {"x": [np.int64(4), None]}, {"x": (np.int32(4), np.uint8(3))},
    {"x": np.array([4, 3])}, {"n": np.int64(4)}, {"n": 4},
])
def test_shapes_of_numpy_integers_are_accepted(shapes):
    mod, _ = from_onnx(_symbolic_model(), shapes)
    assert mod["main"].params[0].type_annotation.shape == (4, 3)


# -- where onnxruntime and onnx.reference disagree: the reference is kept -----------------

def test_reduce_max_propagates_nan_as_the_reference():
    """onnxruntime skips NaN ([3, nan, 5]); NumPy's max, ONNX's reference, propagates."""
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, -1.0], [0.0, 2.0, 5.0]], np.float32)
    got = _check("ReduceMax", {"x": x}, {"axes": [1], "keepdims": 0}, opset=13,
                 oracles="ref")
    np.testing.assert_array_equal(got, [np.nan, np.nan, 5.0])


@pytest.mark.parametrize("names, bound", [(["x", "", "b"], 2.0), (["x", "", "b"], -np.inf),
                                          (["x", "b"], -np.inf)])
def test_clip_omitted_bound_does_not_clip_infinities(names, bound):
    """onnxruntime replaces an omitted bound by the largest finite float (-inf becomes
    -3.4e38); the reference does not clip on that side."""
    x = np.array([-np.inf, -5.0, 0.0, 3.0, np.inf, np.nan], np.float32)
    model = node_model("Clip", {"x": x}, opset=13, input_names=names,
                       initializers={"b": np.array(bound, np.float32)})
    got = relay_run(model, {"x": x})[0]
    _same(got, _reference(model, {"x": x})[0], rtol=0, atol=0)
    if names[1] == "":  # no lower bound: -inf stays -inf
        assert got[0] == -np.inf


def test_resize_align_corners_with_fractional_output_length_as_reference():
    """With a scale whose output length is fractional (4 * 1.7 = 6.8, 6 pixels), the
    reference maps x_resized * (4 - 1) / (6.8 - 1), onnxruntime by (6 - 1)."""
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    model = node_model("Resize", {"x": x}, {"mode": "linear",
                                            "coordinate_transformation_mode": "align_corners"},
                       opset=13, input_names=["x", "", "s"],
                       initializers={"s": np.array([1, 1, 1.7, 0.6], np.float32)})
    got = relay_run(model, {"x": x})[0]
    _same(got, _reference(model, {"x": x})[0], rtol=1e-6, atol=1e-6)
    assert got.shape == (1, 1, 6, 2)  # 4 * 1.7 = 6.8 rows, 4 * 0.6 = 2.4 columns
    # the last row samples input row 5 * 3 / 5.8 (between rows 2 and 3), not the corner row
    # 3 that onnxruntime's 5 * 3 / 5 gives: 1 + 4 * 15 / 5.8 in the first column, not 13
    assert got[0, 0, -1, 0] == pytest.approx(1 + 4 * 15 / 5.8, rel=1e-6)
