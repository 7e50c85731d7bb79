"""Automatic differentiation (spec/ad.md): the thesis example and x*x simplified by
PartialEvaluate + DCE (golden), closures, higher-order functions, ADTs (a fold over a List,
a tree-structured model), recursion, references, if/match against finite differences in
every mode that applies; gradients of gradients; ``gradient(@f)`` in text (round trip, run,
compiled); first-order mode's located errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradient_util import assert_gradient_matches, finite_differences

import relay_ref as rr
from relay_ref.interpreter.values import ConstructorValue
from relay_ref.passes.gradient import expand_gradients

PE_DCE = ["PartialEvaluate", "DeadCodeElimination"]
ALL_MODES = ("higher_order", "forward")
RNG = np.random.default_rng(0)


def vec(n: int) -> np.ndarray:
    return RNG.uniform(-1.5, 1.5, size=n)


# -- AD-Grad + PartialEvaluate + DCE: straight-line dataflow ------------------------------

def test_identity_simplifies_to_the_thesis_example() -> None:
    g = rr.gradient(rr.parse("def @main(%d: float32) -> float32 { %d }"))
    assert "ref(" in rr.astext(g["main"])  # the backpropagator and the adjoint cells
    simple = rr.optimize(g, PE_DCE)["main"]
    expected = rr.parse_expr("fn (%d: float32) -> (float32, (float32,)) "
                             "{ (%d, (ones_like(%d),)) }")
    assert rr.alpha_equal(simple, expected), rr.astext(simple)


def test_square_simplifies_to_dataflow() -> None:
    g = rr.gradient(rr.parse("def @main(%x: float32) -> float32 { %x * %x }"))
    simple = rr.optimize(g, PE_DCE)["main"]
    expected = rr.parse_expr("fn (%x: float32) -> (float32, (float32,)) "
                             "{ (multiply(%x, %x), (add(%x, %x),)) }")
    assert rr.alpha_equal(simple, expected), rr.astext(simple)


def test_first_order_program_has_no_refs_or_closures_after_pe() -> None:
    src = """def @main(%x: Tensor[(3,), float64], %w: Tensor[(3,), float64]) -> float64 {
      let %h = tanh(%x * %w); sum(%h * %h + %w) }"""
    g = rr.optimize(rr.gradient(rr.parse(src)), PE_DCE)
    text = rr.astext(g["main"])
    assert "ref" not in text and "fn (" not in text.split("{", 1)[1], text
    args = [vec(3), vec(3)]
    np.testing.assert_allclose(rr.evaluate(g, *args)[1][0],
                               finite_differences(rr.parse(src), args)[0], rtol=1e-6)


# -- the language, against finite differences -------------------------------------------------

CASES = {
    "closure and higher-order function": ("""
        def @main(%x: float64, %y: Tensor[(2,), float64]) -> Tensor[(2,), float64] {
          let %f = fn (%z: Tensor[(2,), float64]) -> Tensor[(2,), float64] { sin(%z) * %x };
          let %twice = fn (%g: fn (Tensor[(2,), float64]) -> Tensor[(2,), float64],
                           %v: Tensor[(2,), float64]) -> Tensor[(2,), float64] { %g(%g(%v)) };
          %twice(%f, %y) }""", lambda: [np.array(0.7), vec(2)]),
    "if and match": ("""
        def @main(%x: Tensor[(3,), float64]) -> float64 {
          let %s = sum(%x);
          let %o = if (%s > 0f64) { Some(%x * %x) } else { None };
          match (%o) { Some(%v) => sum(exp(%v)), None => %s * %s } }""",
                     lambda: [np.array([0.3, -0.2, 0.5])]),
    "references": ("""
        def @main(%x: Tensor[(2,), float64]) -> Tensor[(2,), float64] {
          let %r = ref(%x);
          ref_write(%r, ref_read(%r) * %x);
          let %k = fn () { ref_write(%r, tanh(ref_read(%r)) + %x) };
          %k(); %k();
          ref_read(%r) }""", lambda: [vec(2)]),
    "recursion over a counter": ("""
        def @pow(%x: float64, %n: int32) -> float64 {
          if (%n == 0) { 1f64 } else { %x * @pow(%x, %n - 1) } }
        def @main(%x: float64) -> float64 { @pow(%x, 4) + @pow(cos(%x), 2) }""",
                                 lambda: [np.array(0.9)]),
    "fold over a List of tensors": ("""
        def @main(%a: Tensor[(2,), float64], %b: Tensor[(2,), float64]) -> Tensor[(2,), float64] {
          let %xs = Cons(%a, Cons(%b, Cons(%a * %b, Nil)));
          @foldl(fn (%acc: Tensor[(2,), float64], %x: Tensor[(2,), float64]) {
                   tanh(%acc * %x + %b) }, %a, %xs) }""", lambda: [vec(2), vec(2)]),
    "tree-structured model": ("""
        type Tree { Leaf(Tensor[(2,), float64]), Node(Tree, Tree) }
        def @model(%t: Tree, %w: Tensor[(2,), float64]) -> Tensor[(2,), float64] {
          match (%t) {
            Leaf(%v) => tanh(%v * %w),
            Node(%l, %r) => sigmoid(@model(%l, %w) + @model(%r, %w) * %w) } }
        def @main(%a: Tensor[(2,), float64], %w: Tensor[(2,), float64]) -> Tensor[(2,), float64] {
          @model(Node(Leaf(%a), Node(Leaf(%w), Leaf(%a * %a))), %w) }""",
                              lambda: [vec(2), vec(2)]),
}


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_language_forms_match_finite_differences(name: str, mode: str) -> None:
    src, args = CASES[name]
    assert_gradient_matches(rr.parse(src), args(), mode)


#: results holding ADT values (higher-order mode: AD-Grad seeds every tensor of the result,
#: through the ADT's constructors)
ADT_RESULT_CASES = {
    "a List result": ("""
        def @main(%x: float64) -> List[float64] { Cons(%x * %x, Cons(sin(%x), Nil)) }""",
                      lambda: [np.array(1.0)]),
    "a tuple holding an Option": ("""
        def @main(%x: float64, %y: Tensor[(2,), float64])
            -> (float64, Option[Tensor[(2,), float64]]) { (%x, Some(%y * %x)) }""",
                                  lambda: [np.array(0.6), vec(2)]),
    "a Tree result": ("""
        type Tree { Leaf(Tensor[(2,), float64]), Node(Tree, (Tree, float64)) }
        def @main(%a: Tensor[(2,), float64], %s: float64) -> Tree {
          Node(Leaf(tanh(%a)), (Leaf(%a * %s), exp(%s))) }""", lambda: [vec(2), np.array(0.3)]),
}


@pytest.mark.parametrize("name", list(ADT_RESULT_CASES))
def test_adt_results_match_finite_differences(name: str) -> None:
    src, args = ADT_RESULT_CASES[name]
    assert_gradient_matches(rr.parse(src), args(), "higher_order")


def test_gradient_op_of_an_adt_valued_function() -> None:
    mod = rr.parse("""def @f(%x: float64) -> Option[float64] { Some(%x * %x) }
      def @main(%x: float64) { gradient(@f)(%x) }""")
    value, (dx,) = rr.evaluate(mod, 1.5)
    assert value.constructor.name == "Some" and float(value.fields[0]) == pytest.approx(2.25)
    assert float(dx) == pytest.approx(3.0)


def test_gradient_with_respect_to_adts() -> None:
    """An input that is a List and one that is a Tree: their gradients have their types."""
    src = """type Tree { Leaf(Tensor[(2,), float64]), Node(Tree, Tree) }
      def @sumt(%t: Tree) -> Tensor[(2,), float64] {
        match (%t) { Leaf(%v) => %v * %v, Node(%l, %r) => @sumt(%l) + tanh(@sumt(%r)) } }
      def @main(%t: Tree, %xs: List[float64]) -> Tensor[(2,), float64] {
        @sumt(%t) * @foldl(fn (%a: float64, %x: float64) { %a * %x }, 1f64, %xs) }"""
    g = rr.gradient(rr.parse(src))
    ctor = g.constructors
    a, b = np.array([0.5, -1.0]), np.array([2.0, 0.25])
    tree = ConstructorValue(ctor["Node"], (ConstructorValue(ctor["Leaf"], (a,)),
                                          ConstructorValue(ctor["Leaf"], (b,))))
    xs = ConstructorValue(ctor["Cons"], (np.array(3.0), ConstructorValue(
        ctor["Cons"], (np.array(-2.0), ConstructorValue(ctor["Nil"], ())))))
    _, (dtree, dxs) = rr.evaluate(g, tree, xs)
    s = a * a + np.tanh(b * b)  # @sumt(t); the product of xs is -6
    da, db = -6 * 2 * a, -6 * (1 - np.tanh(b * b) ** 2) * 2 * b
    assert dtree.constructor.name == "Node"
    np.testing.assert_allclose(dtree.fields[0].fields[0], da)
    np.testing.assert_allclose(dtree.fields[1].fields[0], db)
    np.testing.assert_allclose(dxs.fields[0], np.sum(s) * -2.0)
    np.testing.assert_allclose(dxs.fields[1].fields[0], np.sum(s) * 3.0)


@pytest.mark.parametrize("mode", ("higher_order", "first_order", "forward"))
def test_dataflow_in_every_mode(mode: str) -> None:
    src = """def @main(%x: Tensor[(2, 3), float64], %w: Tensor[(3,), float64])
               -> (float64, Tensor[(2, 3), float64]) {
      let %h = sigmoid(%x * %w) - %w;
      let %t = (%h, %x);
      (sum(%t.0 * %t.1), %h / (1f64 + %x * %x)) }"""
    assert_gradient_matches(rr.parse(src), [RNG.uniform(-1, 1, (2, 3)), vec(3)], mode)


def test_first_order_mode_refuses_control_flow_with_a_located_error() -> None:
    src = "def @main(%x: float64) -> float64 {\n  if (%x > 0f64) { %x } else { negative(%x) }\n}"
    with pytest.raises(rr.RelayError, match="use mode='higher_order'") as err:
        rr.gradient(rr.parse(src), "first_order")
    assert err.value.span is not None and err.value.span.line == 2
    assert "[AD-First-Order]" in str(err.value)


def test_bad_mode_and_polymorphic_entry() -> None:
    with pytest.raises(ValueError, match="mode"):
        rr.gradient(rr.parse("def @main(%x: float32) { %x }"), "sideways")
    with pytest.raises(rr.RelayError, match="polymorphic"):
        rr.gradient(rr.parse("def @main[A](%x: A) -> A { %x }"))


# -- gradients of gradients ------------------------------------------------------------------

def test_grad_of_grad_of_cube() -> None:
    mod = rr.parse("""
      def @f(%x: float64) -> float64 { %x * %x * %x }
      def @df(%x: float64) -> float64 { gradient(@f)(%x).1.0 }
      def @ddf(%x: float64) -> float64 { gradient(@df)(%x).1.0 }
      def @main(%x: float64) -> (float64, (float64,)) { gradient(@ddf)(%x) }""")
    value, (d3,) = rr.evaluate(mod, 2.0)
    assert float(value) == pytest.approx(12.0) and float(d3) == pytest.approx(6.0)
    g = rr.gradient(mod, entry="df")  # the same through rr.gradient; @ddf keeps @df's value
    _, (d2,) = rr.evaluate(g, 2.0, entry="df")
    assert float(d2) == pytest.approx(12.0)
    assert float(rr.evaluate(g, 2.0, entry="ddf")) == pytest.approx(12.0)


def test_grad_of_grad_of_a_closure_using_function() -> None:
    mod = rr.parse("""
      def @f(%x: float64) -> float64 {
        let %c = fn (%y: float64) -> float64 { sin(%y * %x) }; %c(%x) }
      def @main(%x: float64) -> float64 { gradient(@f)(%x).1.0 }""")
    x = 0.7
    for mode in ALL_MODES:
        value, (d2,) = rr.evaluate(rr.gradient(mod, mode), x)
        assert float(value) == pytest.approx(2 * x * np.cos(x * x))
        assert float(d2) == pytest.approx(2 * np.cos(x * x) - 4 * x * x * np.sin(x * x))


# -- gradient(@f) in text ----------------------------------------------------------------------

GRAD_TEXT = """def @loss(%w: Tensor[(3,), float64], %x: Tensor[(3,), float64]) -> float64 {
  sum(tanh(%w * %x))
}

def @main(%w: Tensor[(3,), float64], %x: Tensor[(3,), float64]) {
  let %g = gradient(@loss)(%w, %x);
  %w - %g.1.0 * 0.5f64
}
"""


def test_gradient_op_round_trips_types_and_runs() -> None:
    mod = rr.parse(GRAD_TEXT)
    again = rr.parse(rr.astext(mod))
    assert rr.alpha_equal(mod, again)
    assert "gradient(@loss)" in rr.astext(again)
    checked = rr.infer_types(again)
    assert checked.global_types["main"].ret_type == rr.infer_types(rr.parse(
        "def @main(%w: Tensor[(3,), float64]) { %w }")).global_types["main"].ret_type
    w, x = vec(3), vec(3)
    got = rr.evaluate(again, w, x)
    np.testing.assert_allclose(got, w - 0.5 * x * (1 - np.tanh(w * x) ** 2))
    np.testing.assert_allclose(rr.compile(again)(w, x), got)


def test_gradient_op_type_and_expansion_pass() -> None:
    mod = rr.infer_types(rr.parse(GRAD_TEXT))
    grad_call = mod.functions["main"].body.value.op
    assert rr.astext(mod.type_of(grad_call)).replace(" ", "") == (
        "fn(Tensor[(3),float64],Tensor[(3),float64])->(float64,(Tensor[(3),float64],"
        "Tensor[(3),float64]))")
    out = rr.optimize(mod, ["ExpandGradient"])
    assert "gradient(" not in rr.astext(out)
    assert out.global_types["main"] == mod.global_types["main"]


def test_compiled_gradient_program_equals_the_interpreter() -> None:
    src = """def @main(%x: Tensor[(4,), float64], %w: Tensor[(4,), float64]) -> float64 {
      let %y = %x * %w; let %z = if (sum(%y) > 0f64) { exp(%y) } else { %y * %y };
      sum(%z) }"""
    g = rr.gradient(rr.parse(src))
    for _ in range(3):
        args = [vec(4), vec(4)]
        want = rr.evaluate(g, *args)
        got = rr.compile(g)(*args)
        np.testing.assert_allclose(got[0], want[0])
        for a, b in zip(got[1], want[1], strict=True):
            np.testing.assert_allclose(a, b)


def test_expansion_is_cached_and_unexpanded_op_refuses_to_run() -> None:
    mod = rr.parse(GRAD_TEXT)
    assert expand_gradients(mod) is expand_gradients(mod)
    from relay_ref.interpreter.driver import evaluate

    with pytest.raises(rr.RelayRuntimeError, match="expanded by the AD pass"):
        evaluate(mod, vec(3), vec(3))


def test_unsupported_rule_attributes_are_a_located_error() -> None:
    src = """def @main(%x: Tensor[(1, 4, 4, 2), float64], %w: Tensor[(3, 3, 2, 2), float64]) {
  nn.conv2d(%x, %w, data_layout="NHWC", kernel_layout="HWIO")
}"""
    with pytest.raises(rr.RelayError, match=r"nn.conv2d: .*\[AD-App-Op\]") as err:
        rr.gradient(rr.parse(src))
    assert err.value.span is not None and err.value.span.line == 2


def test_every_pass_then_evaluate_on_a_module_calling_gradient() -> None:
    """rr.optimize expands gradient(f) first (AD-Grad-Op), so no pass sees the operator
    (lifting, fusion or A-normal form would move its function argument out of reach)."""
    mod = rr.parse(GRAD_TEXT.replace("%g.1.0 * 0.5f64", "%g.1.0 * 0.5f64 + gradient(fn (%z: "
                                     "Tensor[(3,), float64]) { sum(sin(%z) * %x) })(%w).1.0"))
    w, x = vec(3), vec(3)
    want = rr.evaluate(mod, w, x)
    np.testing.assert_allclose(
        want, w - 0.5 * x * (1 - np.tanh(w * x) ** 2) + np.cos(w) * x)
    for name in rr.pass_names():
        out = rr.optimize(mod, [name])
        assert "gradient(" not in rr.astext(out), name
        np.testing.assert_allclose(rr.evaluate(out, w, x), want, err_msg=name)


# -- located errors, types written as Relay text -----------------------------------------------

@pytest.mark.parametrize("mode", ("higher_order", "first_order", "forward"))
def test_non_data_inputs_and_results_are_located_errors_in_relay_text(mode: str) -> None:
    for src, shown in (("def @main(%x: float32) {\n  fn (%y: float32) { %x * %y }\n}",
                        "fn (float32) -> float32"),
                       ("def @main(%x: float32) -> List[float32] {\n  Cons(%x, Nil)\n}",
                        "List[float32]")):
        if mode == "higher_order" and shown.startswith("List"):
            continue  # an ADT result is fine there
        with pytest.raises(rr.RelayError) as err:
            rr.gradient(rr.parse(src), mode)
        assert err.value.span is not None and err.value.span.line == 1
        assert f"not {shown}" in err.value.message and "Type(" not in str(err.value)


def test_adt_with_a_function_field_is_a_located_type_error() -> None:
    """Check-data looks through constructor fields (a least fixpoint, as AD-Type-ADT)."""
    src = """type F { Mk(fn(float32) -> float32) }
def @h(%f: F, %x: float32) -> float32 { match (%f) { Mk(%g) => %g(%x) } }"""
    with pytest.raises(rr.RelayTypeError, match=r"not fn \(float32\) -> float32 \(a field "
                       r"of Mk in F\) \[AD-Grad\]") as err:
        rr.gradient(rr.parse(src), entry="h")
    assert err.value.span is not None and err.value.span.line == 2
    text = src + "\ndef @main(%f: F, %x: float32) {\n  gradient(@h)(%f, %x)\n}"
    with pytest.raises(rr.RelayTypeError, match="a field of Mk in F") as err:
        rr.evaluate(rr.parse(text), None, 1.0)
    assert err.value.span is not None and err.value.span.line == 4  # the gradient call


def test_errors_in_a_transformed_program_fall_back_to_its_location() -> None:
    """A gradient's output differentiated again (its nodes have no spans): the error is
    located at the function the first gradient was taken of; an error inside @f reached
    from gradient(@f) has a note at the call."""
    g = rr.gradient(rr.parse("def @main(%x: float64) -> float64 {\n  %x * %x\n}"))
    with pytest.raises(rr.RelayError, match="first_order mode cannot") as err:
        rr.gradient(g, "first_order")
    assert err.value.span is not None and err.value.span.line == 1
    src = "def @f(%x: Tensor[(2,), float32]) {\n  einsum((%x, %x), equation=\"i,i->\") }\n" \
          "def @main(%x: Tensor[(2,), float32]) {\n  gradient(@f)(%x)\n}"
    with pytest.raises(rr.RelayError, match="einsum is not differentiable") as err:
        rr.evaluate(rr.parse(src), np.ones(2, "float32"))
    assert err.value.span.line == 2
    notes = err.value.diagnostics[0].notes
    assert notes and notes[0].span.line == 4 and "gradient taken here" in notes[0].message


def test_entry_names_and_functions_taken_out_of_their_module() -> None:
    mod = rr.parse("def @sq(%x: float32) -> float32 { %x * %x }\n"
                   "def @f(%x: float32) -> float32 { @sq(%x) }")
    _, (d,) = rr.evaluate(rr.gradient(mod, entry="@f"), 3.0, entry="f")  # a leading @ is ok
    assert float(d) == 6.0
    with pytest.raises(rr.RelayError, match=r"no function @fx; did you mean @f\?"):
        rr.gradient(mod, entry="fx")
    with pytest.raises(rr.RelayError, match="uses @sq, a global of its module") as err:
        rr.gradient(mod["f"])
    assert err.value.span is not None and err.value.span.line == 2
    with pytest.raises(rr.RelayError, match="names a prelude function"):
        rr.gradient(mod["sq"], entry="map")


def test_first_order_names_constructors_and_global_calls() -> None:
    for src, what in (("def @main(%x: float32) { let %o = Some(%x); %x }",
                       "a constructor (Some)"),
                      ("def @g(%x: float32) -> float32 { %x }\n"
                       "def @main(%x: float32) { @g(%x) }", "a call of a global function")):
        with pytest.raises(rr.RelayError, match=re.escape(f"cannot differentiate {what}")):
            rr.gradient(rr.parse(src), "first_order")


def test_relay_check_reports_what_the_gradient_expansion_refuses(tmp_path, capsys) -> None:
    from relay_ref.cli import main

    path = tmp_path / "bad.relay"
    path.write_text("def @f(%x: Tensor[(2,), float32]) { einsum((%x, %x), equation=\"i,i->\") }\n"
                    "def @main(%x: Tensor[(2,), float32]) { gradient(@f)(%x) }\n")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "einsum is not differentiable" in err and "bad.relay:2:40: note" in err
    path.write_text("def @f(%x: float32) -> float32 { round(%x) * %x }\n"
                    "def @main(%x: float32) { gradient(@f)(%x) }\n")
    assert main(["check", str(path)]) == 0


def test_optimize_drops_the_expansions_globals_once_unreachable() -> None:
    mod = rr.parse("def @f(%x: float64) -> float64 { %x * %x }\n"
                   "def @main() { gradient(@f)(3f64) }")
    expanded = rr.optimize(mod, ["ExpandGradient"])
    assert {"f_grad", "f_rev"} <= set(expanded.functions)  # @main calls @f_grad
    simple = rr.optimize(mod, PE_DCE)
    assert set(simple.functions) == set(mod.functions)  # @f stays: the program's own
    assert rr.alpha_equal(simple["main"], rr.parse_expr("fn () { (9f64, (6f64,)) }"))


@pytest.mark.parametrize("mode", ["higher_order", "first_order", "forward"])
def test_adjoint_of_a_tuple_argument_reaches_its_fields(mode: str) -> None:
    # concatenate's reverse rule gives one tuple value for its tuple argument; first-order
    # mode dropped it (zero gradients through every concatenate, as in SqueezeNet)
    mod = rr.parse("""
def @main(%x: Tensor[(1, 2), float32], %y: Tensor[(1, 3), float32]) {
  %0 = (nn.relu(%x), %y * 3f, %x);
  concatenate(%0, axis=1) * 2f
}""")
    x = np.array([[1.5, -2.0]], "float32")
    y = np.array([[1.0, 2.0, 3.0]], "float32")
    _, (gx, gy) = rr.evaluate(rr.gradient(mod, mode), x, y)
    np.testing.assert_allclose(gx, [[4.0, 2.0]])  # relu's 2 where positive, plus 2
    np.testing.assert_allclose(gy, [[6.0, 6.0, 6.0]])
