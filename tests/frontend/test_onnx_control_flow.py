"""Control flow (``ops_control``): ONNX ``If`` as a Relay ``if`` (each branch taken, outer
values read by the branches, nested ``If``, several outputs) and ``Loop`` as a let-bound
recursive function (a for loop summing, a while loop with a condition, a scan output)
and ``Scan`` (``ops_control_scan``: two scan inputs on different axes, reversed input and
output directions, output axes, opset 8's batch rows) against onnxruntime, through the
interpreter and ``rr.compile``; the up-front survey of subgraphs and the refusals
(branches of different types, a loop with no bound, a scan body of the wrong arity)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx_case import assert_matches, rand

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx

F32, I64, B = TP.FLOAT, TP.INT64, TP.BOOL


def _model(nodes: list, inputs: list, outputs: list, opset: int = 17,
           inits: list | None = None) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, initializer=inits or [])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 8)
    onnx.checker.check_model(model)
    return model


def _vi(name: str, elem: int, shape: list | None) -> onnx.ValueInfoProto:
    return oh.make_tensor_value_info(name, elem, shape)


def _branch(name: str, nodes: list, outputs: list) -> onnx.GraphProto:
    return oh.make_graph(nodes, name, [], outputs)


def _if_model(nested: bool = False) -> onnx.ModelProto:
    """``c ? (x + y, x * 2) : (x - y, x)``; with ``nested`` the else branch is itself an
    ``If`` on ``d`` reading ``x`` and ``y`` two scopes out."""
    then = _branch("then", [oh.make_node("Add", ["x", "y"], ["t0"]),
                            oh.make_node("Add", ["x", "x"], ["t1"])],
                   [_vi("t0", F32, [2, 3]), _vi("t1", F32, [2, 3])])
    plain_else = _branch("else", [oh.make_node("Sub", ["x", "y"], ["e0"]),
                                  oh.make_node("Identity", ["x"], ["e1"])],
                         [_vi("e0", F32, [2, 3]), _vi("e1", F32, [2, 3])])
    inputs = [_vi("c", B, [1]), _vi("x", F32, [2, 3]), _vi("y", F32, [2, 3])]
    if nested:
        inner_then = _branch("it", [oh.make_node("Mul", ["x", "y"], ["a0"]),
                                    oh.make_node("Neg", ["y"], ["a1"])],
                             [_vi("a0", F32, [2, 3]), _vi("a1", F32, [2, 3])])
        outer_else = _branch("else", [oh.make_node("If", ["d"], ["e0", "e1"],
                                                   then_branch=inner_then,
                                                   else_branch=plain_else, name="inner")],
                             [_vi("e0", F32, [2, 3]), _vi("e1", F32, [2, 3])])
        node = oh.make_node("If", ["c"], ["o0", "o1"], then_branch=then,
                            else_branch=outer_else, name="outer")
        inputs.append(_vi("d", B, []))
    else:
        node = oh.make_node("If", ["c"], ["o0", "o1"], then_branch=then,
                            else_branch=plain_else)
    return _model([node], inputs, [_vi("o0", F32, [2, 3]), _vi("o1", F32, [2, 3])])


@pytest.mark.parametrize("taken", [True, False])
@pytest.mark.parametrize("compiled", [False, True])
def test_if_each_branch_reads_outer_values(taken: bool, compiled: bool) -> None:
    feeds = {"c": np.array([taken]), "x": rand(2, 3), "y": rand(2, 3, seed=1)}
    assert_matches(_if_model(), feeds, compiled=compiled)


@pytest.mark.parametrize("c,d", [(True, False), (False, True), (False, False)])
def test_nested_if(c: bool, d: bool) -> None:
    feeds = {"c": np.array([c]), "x": rand(2, 3), "y": rand(2, 3, seed=1), "d": np.array(d)}
    assert_matches(_if_model(nested=True), feeds)
    if not c:
        assert_matches(_if_model(nested=True), feeds, compiled=True)


def test_if_prints_a_relay_if_and_type_checks() -> None:
    mod, _ = from_onnx(_if_model())
    text = rr.astext(mod)
    assert "if (" in text


def test_if_branches_of_different_types_are_refused() -> None:
    then = _branch("then", [oh.make_node("Identity", ["x"], ["t"])], [_vi("t", F32, [2, 3])])
    other = _branch("else", [oh.make_node("Transpose", ["x"], ["e"])],
                    [_vi("e", F32, [3, 2])])
    model = _model([oh.make_node("If", ["c"], ["o"], then_branch=then, else_branch=other)],
                   [_vi("c", B, []), _vi("x", F32, [2, 3])], [_vi("o", F32, [None, None])])
    with pytest.raises(rr.FrontendError, match="same type in both branches"):
        from_onnx(model)


def test_unsupported_ops_inside_subgraphs_are_listed_up_front() -> None:
    then = _branch("then", [oh.make_node("Bogus", ["x"], ["t"], name="deep")],
                   [_vi("t", F32, [2])])
    other = _branch("else", [oh.make_node("Identity", ["x"], ["e"])], [_vi("e", F32, [2])])
    model = oh.make_model(oh.make_graph(
        [oh.make_node("If", ["c"], ["o"], then_branch=then, else_branch=other)], "g",
        [_vi("c", B, []), _vi("x", F32, [2])], [_vi("o", F32, [2])]),
        opset_imports=[oh.make_opsetid("", 17)])
    with pytest.raises(rr.FrontendError, match="Bogus.*'deep'"):
        from_onnx(model)


def _sum_loop(with_cond: bool) -> onnx.ModelProto:
    """``for i < M (while s < limit, with_cond): s += x * i; acc = (s,...)``: loop-carried
    ``s``, a scan output of each iteration's ``s``."""
    body = oh.make_graph(
        [oh.make_node("Cast", ["i"], ["fi"], to=F32),
         oh.make_node("Mul", ["x", "fi"], ["xi"]),
         oh.make_node("Add", ["s_in", "xi"], ["s_out"]),
         oh.make_node("ReduceSum", ["s_out"], ["total"], keepdims=0),
         oh.make_node("Less", ["total", "limit"], ["c_out"]) if with_cond else
         oh.make_node("Identity", ["c_in"], ["c_out"]),
         oh.make_node("Identity", ["s_out"], ["scan"])],
        "body", [_vi("i", I64, []), _vi("c_in", B, []), _vi("s_in", F32, [3])],
        [_vi("c_out", B, []), _vi("s_out", F32, [3]), _vi("scan", F32, [3])])
    node = oh.make_node("Loop", ["M", "cond" if with_cond else "", "s0"], ["s", "scans"],
                        body=body)
    inputs = [_vi("M", I64, []), _vi("s0", F32, [3]), _vi("x", F32, [3])]
    if with_cond:
        inputs[1:1] = [_vi("cond", B, [])]
        inputs.append(_vi("limit", F32, []))
    return _model([node], inputs, [_vi("s", F32, [3]), _vi("scans", F32, [None, 3])])


@pytest.mark.parametrize("compiled", [False, True])
def test_loop_for_sums_with_a_scan_output(compiled: bool) -> None:
    model = _sum_loop(with_cond=False)
    feeds = {"M": np.array(4, np.int64), "s0": rand(3), "x": rand(3, seed=1)}
    assert_matches(model, feeds, compiled=compiled)
    feeds["M"] = np.array(0, np.int64)  # no iteration: the initial value, no scan rows
    assert_matches(model, feeds, compiled=compiled)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("limit", [-100.0, 3.0, 1e9])
def test_loop_while_stops_on_its_condition(limit: float, compiled: bool) -> None:
    model = _sum_loop(with_cond=True)
    feeds = {"M": np.array(50, np.int64), "cond": np.array(True),
             "s0": np.zeros(3, np.float32), "x": np.array([0.5, 0.25, 1.0], np.float32),
             "limit": np.array(limit, np.float32)}
    assert_matches(model, feeds, compiled=compiled)


def test_loop_carried_value_that_grows_gets_a_dynamic_dim() -> None:
    body = oh.make_graph(
        [oh.make_node("Concat", ["v_in", "one"], ["v_out"], axis=0),
         oh.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [_vi("i", I64, []), _vi("c_in", B, []), _vi("v_in", F32, [None])],
        [_vi("c_out", B, []), _vi("v_out", F32, [None])],
        initializer=[oh.make_tensor("one", F32, [1], [1.0])])
    model = _model([oh.make_node("Loop", ["M", "", "v0"], ["v"], body=body)],
                   [_vi("M", I64, [1]), _vi("v0", F32, [2])], [_vi("v", F32, [None])])
    assert_matches(model, {"M": np.array([3], np.int64), "v0": rand(2)})


def test_loop_with_neither_bound_is_refused_up_front() -> None:
    body = oh.make_graph([oh.make_node("Identity", ["c_in"], ["c_out"]),
                          oh.make_node("Identity", ["v_in"], ["v_out"])], "body",
                         [_vi("i", I64, []), _vi("c_in", B, []), _vi("v_in", F32, [2])],
                         [_vi("c_out", B, []), _vi("v_out", F32, [2])])
    model = _model([oh.make_node("Loop", ["", "", "v0"], ["v"], body=body)],
                   [_vi("v0", F32, [2])], [_vi("v", F32, [2])])
    with pytest.raises(rr.FrontendError, match="neither M nor cond"):
        from_onnx(model)


@pytest.mark.parametrize("op", ["If", "Loop", "Scan"])
def test_conformance_cases_pass(op: str) -> None:
    from relay_ref.frontend.onnx import conformance

    cases = [c for c in conformance.select().cases if c.op == op]
    assert cases
    for case in cases:
        result = conformance.run_case(case, executor="evaluate")
        assert result.outcome == "passed", (case.name, result)


def test_if_on_a_constant_condition_builds_only_the_taken_branch() -> None:
    """Expanded functions branch on shape arithmetic: the dead branch may not fit."""
    then = _branch("then", [oh.make_node("Identity", ["x"], ["t"])], [_vi("t", F32, [2, 3])])
    other = _branch("else", [oh.make_node("Transpose", ["x"], ["e"])],
                    [_vi("e", F32, [3, 2])])
    nodes = [oh.make_node("Constant", [], ["c"], value=oh.make_tensor("v", B, [], [True])),
             oh.make_node("If", ["c"], ["o"], then_branch=then, else_branch=other)]
    model = _model(nodes, [_vi("x", F32, [2, 3])], [_vi("o", F32, [None, None])])
    assert_matches(model, {"x": rand(2, 3)})
    assert "if (" not in rr.astext(from_onnx(model)[0])


def _scan_model(opset: int = 17, reverse_in: int = 0, out_axis: int = 0,
                reverse_out: int = 0) -> onnx.ModelProto:
    """A cumulative sum over two scan inputs: ``s += x[t] * y[t]``, scan output ``s`` at
    each step; ``x`` (4, 3) is scanned along axis 0, ``y`` (3, 4) along axis 1 (read
    backwards with ``reverse_in``)."""
    body = oh.make_graph(
        [oh.make_node("Mul", ["xe", "ye"], ["p"]),
         oh.make_node("Add", ["s_in", "p"], ["s_out"]),
         oh.make_node("Identity", ["s_out"], ["y_out"])],
        "body", [_vi("s_in", F32, [3]), _vi("xe", F32, [3]), _vi("ye", F32, [3])],
        [_vi("s_out", F32, [3]), _vi("y_out", F32, [3])])
    node = oh.make_node("Scan", ["s0", "x", "y"], ["s", "ys"], body=body, num_scan_inputs=2,
                        scan_input_axes=[0, 1], scan_input_directions=[0, reverse_in],
                        scan_output_axes=[out_axis], scan_output_directions=[reverse_out])
    out_shape = [4, 3] if out_axis in (0, -2) else [3, 4]
    return _model([node], [_vi("s0", F32, [3]), _vi("x", F32, [4, 3]), _vi("y", F32, [3, 4])],
                  [_vi("s", F32, [3]), _vi("ys", F32, out_shape)], opset=opset)


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("reverse_in,out_axis,reverse_out",
                         [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, -1, 1), (0, 0, 1)])
def test_scan_cumulative_sum_of_two_inputs(reverse_in: int, out_axis: int, reverse_out: int,
                                           compiled: bool) -> None:
    model = _scan_model(reverse_in=reverse_in, out_axis=out_axis, reverse_out=reverse_out)
    feeds = {"s0": rand(3), "x": rand(4, 3, seed=1), "y": rand(3, 4, seed=2)}
    assert_matches(model, feeds, compiled=compiled)


@pytest.mark.parametrize("compiled", [False, True])
def test_scan_8_scans_each_batch_row(compiled: bool) -> None:
    body = oh.make_graph(
        [oh.make_node("Add", ["s_in", "xe"], ["s_out"]),
         oh.make_node("Identity", ["s_out"], ["y_out"])],
        "body", [_vi("s_in", F32, [2]), _vi("xe", F32, [2])],
        [_vi("s_out", F32, [2]), _vi("y_out", F32, [2])])
    node = oh.make_node("Scan", ["", "s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                        directions=[1])
    model = _model([node], [_vi("s0", F32, [3, 2]), _vi("x", F32, [3, 5, 2])],
                   [_vi("s", F32, [3, 2]), _vi("ys", F32, [3, 5, 2])], opset=8)
    assert_matches(model, {"s0": rand(3, 2), "x": rand(3, 5, 2, seed=1)}, compiled=compiled)


def test_scan_with_a_bad_body_is_refused_up_front() -> None:
    body = oh.make_graph([oh.make_node("Identity", ["s_in"], ["s_out"])], "body",
                         [_vi("s_in", F32, [3])], [_vi("s_out", F32, [3])])
    model = _model([oh.make_node("Scan", ["s0", "x"], ["s"], body=body, num_scan_inputs=1)],
                   [_vi("s0", F32, [3]), _vi("x", F32, [4, 3])], [_vi("s", F32, [3])])
    with pytest.raises(rr.FrontendError, match="body has 1 inputs, expected 2"):
        from_onnx(model)
