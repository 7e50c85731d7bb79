"""Issue 23's "smaller things a user notices", one test group each.

Invariants checked:
* FoldConstant folds a generator (a call whose result outgrows its constant arguments)
  only when the result has at most ``GENERATED_LIMIT`` elements: ``full(0.001f, shape=[128,
  784])`` stays a call, so the printed program has no ``#[metadata]``;
* the printer breaks a parameter list that would pass 100 columns, one parameter per line
  (Pr-Width), and the text still parses back alpha-equal and prints the same again;
* traces show operator attributes (``zeros(shape=[2])``), and a value trace's line holds a
  matrix on that one line;
* ``relay import --shape`` errors name the ``--shape`` option, ``from_onnx``'s name the
  ``shapes`` entry;
* ``relay opt FILE --passes P --check N`` checks P on FILE (N argument tuples) and on N
  generated programs, exit 1 with the failing arguments shown;
* a kernel error citing a rule is one output whose last line says how to read the rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.cli import main
from relay_ref.ir.expr import Constant
from relay_ref.passes.fold_constant import GENERATED_LIMIT
from relay_ref.syntax.printer import LINE_WIDTH

# -- FoldConstant: generators fold only when small -------------------------------------------


def _folded(body: str) -> str:
    mod = rr.parse(f"def @main() {{ {body} }}")
    return rr.astext(rr.optimize(mod, ["FoldConstant"]))


@pytest.mark.parametrize("body", [
    "full(0.001f, shape=[128, 784])",
    "broadcast_to(1f, shape=[64, 64])",
    "full_like(full(0f, shape=[2000]), 1f)",  # the inner full stays: so does this
    'one_hot(cast(2f, dtype="int32"), 1f, 0f, depth=2000)',
])
def test_big_generated_constants_are_not_folded(body):
    text = _folded(body)
    assert "#[metadata]" not in text and len(text) < 400, text


@pytest.mark.parametrize("body, value", [
    ("full(2f, shape=[4])", np.full(4, 2, "float32")),
    ("zeros_like(full(2f, shape=[3]))", np.zeros(3, "float32")),
    ("broadcast_to(1f, shape=[32, 32])", np.ones((32, 32), "float32")),  # 1024: the limit
])
def test_small_generated_constants_fold(body, value):
    assert GENERATED_LIMIT == 1024
    mod = rr.optimize(rr.parse(f"def @main() {{ {body} }}"), ["FoldConstant"])
    assert isinstance(mod["main"].body, Constant)
    np.testing.assert_array_equal(mod["main"].body.data, value)


def test_folding_big_constant_inputs_is_not_limited():
    """Not a generator: the result is no bigger than the constants it is made of."""
    c = np.ones((64, 64), "float32")
    mod = rr.parse("def @main() { negative(meta[relay.Constant][0]) }",
                   metadata={"relay.Constant": [c]})
    out = rr.optimize(mod, ["FoldConstant"])
    np.testing.assert_array_equal(out["main"].body.data, -c)


# -- relay fmt: signatures break at 100 columns ---------------------------------------------

LONG = """def @main(%data: Tensor[(1, 3, 224, 224), float32],
          %weight: Tensor[(64, 3, 7, 7), float32],
          %gamma: Tensor[(64), float32]) -> Tensor[(1, 3, 224, 224), float32] {
  let %f = fn (%aaaaaaaaaaaaaaaaaaaa: Tensor[(1, 3, 224, 224), float32],
               %b: Tensor[(1, 3, 224, 224), float32]) {
    add(%aaaaaaaaaaaaaaaaaaaa, %b)
  };
  %f(%data, %data)
}
def @short(%x: float32) -> float32 { %x }
"""  # joined, the two signatures would take 162 and 113 columns


def test_long_signatures_break_one_parameter_per_line():
    mod = rr.parse(LONG)
    text = rr.astext(mod)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= LINE_WIDTH, text
    start = lines.index("def @main(")
    assert lines[start + 1:start + 5] == [
        "  %data: Tensor[(1, 3, 224, 224), float32],",
        "  %weight: Tensor[(64, 3, 7, 7), float32],",
        "  %gamma: Tensor[(64), float32]",
        ") -> Tensor[(1, 3, 224, 224), float32] {"]
    assert "  let %f = fn (" in lines and "  ) {" in lines  # a nested fn: one level deeper
    assert "def @short(%x: float32) -> float32 {" in lines  # short ones stay on one line
    again = rr.parse(text)
    assert rr.alpha_equal(again, mod)
    assert rr.astext(again) == text  # idempotent


def test_a_signature_breaks_exactly_past_the_width():
    def text(n: int) -> str:  # `def @f(%x: float32) {` padded to n columns by the name
        name = "f" * (n - len("def @(%x: float32) {"))
        return rr.astext(rr.parse(f"def @{name}(%x: float32) {{ %x }}")).splitlines()[1]
    assert len(text(LINE_WIDTH)) == LINE_WIDTH
    assert text(LINE_WIDTH + 1).endswith("(")


# -- traces show attributes -----------------------------------------------------------------

TRACED = """def @main() {
  let %z = zeros(shape=[2]);
  let %r = reshape(arange(0f, 6f, 1f), newshape=[2, 3]);
  (%z, transpose(%r, axes=[1, 0]))
}"""


def test_traces_show_attributes():
    _, events = rr.evaluate(rr.parse(TRACED), trace=True)
    texts = [e.text for e in events]
    assert "zeros(shape=[2])" in texts
    assert "reshape(arange(0f, 6f, 1f), newshape=[2, 3])" in texts
    assert "transpose(%r, axes=[1, 0])" in texts


def test_long_attribute_values_are_elided():
    from relay_ref.syntax.short_text import short_text

    e = rr.parse_expr("transpose(zeros(shape=[1, 1, 1, 1, 1, 1, 1, 1, 1]), "
                      "axes=[8, 7, 6, 5, 4, 3, 2, 1, 0])")
    assert short_text(e, 200) == "transpose(zeros(shape=...), axes=...)"
    e = rr.parse_expr("transpose(zeros(shape=[1, 1]), axes=[1, 0])")
    assert short_text(e, 200) == "transpose(zeros(shape=[1, 1]), axes=[1, 0])"


def test_value_trace_lines_hold_a_matrix_on_one_line():
    from relay_ref.interpreter.trace import format_trace

    value, events = rr.evaluate(rr.parse(TRACED), trace="values")
    text = format_trace(events)
    assert len(text.splitlines()) == len(events), text
    assert "⇒ [[0f, 1f, 2f], [3f, 4f, 5f]]" in text


# -- relay import --shape: the CLI's words ------------------------------------------------------

@pytest.fixture(scope="module")
def symbolic_model(tmp_path_factory) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("data:0", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    graph = helper.make_graph([helper.make_node("Relu", ["data:0"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path_factory.mktemp("onnx") / "m.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("spec, said", [
    ("data:0=1,2,3", "--shape data:0=1,2,3 has 3 dims, the graph input has 2"),
    ("data_0=2,4", "--shape data_0=2,4 gives dim 1 as 4, the model fixes it to 3"),
    ("nope=1", "--shape nope=1 names neither a graph input nor a symbolic dim"),
])
def test_import_shape_errors_speak_of_the_option(symbolic_model, capsys, spec, said):
    assert main(["import", str(symbolic_model), "--shape", spec]) == 1
    err = capsys.readouterr().err
    assert said in err and "shapes[" not in err, err


def test_from_onnx_keeps_the_api_words(symbolic_model):
    from relay_ref.frontend.onnx import from_onnx

    with pytest.raises(rr.FrontendError, match=r"shapes\['data:0'\] has 3 dims"):
        from_onnx(str(symbolic_model), {"data:0": (1, 2, 3)})


# -- relay opt FILE --check N ---------------------------------------------------------------

PROGRAM = """def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) {
  let %d = subtract(%x, %y);
  add(%d, full(1f, shape=[2]))
}
"""


def test_check_on_a_file_shows_the_failing_arguments(tmp_path, capsys, broken_pass):
    path = tmp_path / "p.relay"
    path.write_text(PROGRAM)
    assert main(["opt", str(path), "--passes", broken_pass, "--check", "3"]) == 1
    captured = capsys.readouterr()
    assert "FAILED" in captured.out
    assert f"{broken_pass} on {path}" in captured.err
    assert "-- arguments of @main -- ([" in captured.err


def test_check_on_a_file_without_drawable_arguments_is_an_error(tmp_path, capsys):
    path = tmp_path / "adt.relay"
    path.write_text("def @main(%l: List[int32]) { %l }\n")
    assert main(["opt", str(path), "--passes", "FoldConstant", "--check", "3"]) == 1
    err = capsys.readouterr().err
    assert "adt.relay:1:11: error: no arguments can be drawn for @main's parameter %l" in err


# -- the kernel: an error is one output ---------------------------------------------------------

def test_a_kernel_error_ends_with_how_to_read_its_rule():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kernel"))
    from relay_kernel.display import error_content, rule_hint

    with pytest.raises(rr.RelayError) as err:
        rr.infer_types(rr.parse("def @main() { add(1, True) }"))
    lines = error_content(err.value)["traceback"]
    assert "[T-App-Op]" in "\n".join(lines)
    assert lines[-1] == "\x1b[2m(:rule T-App-Op prints the rule this error cites)\x1b[0m"
    with pytest.raises(rr.RelayError) as plain:  # cites no rule: no hint
        rr.parse("def @main() { 1 + }")
    assert rule_hint(plain.value) is None
    assert error_content(plain.value)["traceback"][-1].endswith("^\x1b[0m")
