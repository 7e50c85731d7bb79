"""``?`` made sound the gradual-typing way (issue 26): cast points and Stuck-Cast.

Where a typing rule joined a ``?`` with a known dimension (T-App, T-Fn, T-Let, T-If,
T-Match, T-WriteRef, T-Rel; spec/typing.md 5.1) the checker records a cast point, and the
interpreter and the executor check the value there, deeply, against the more precise
static type: a mismatch is Stuck-Cast (spec/semantics.md 4), located at the expression
whose static type the value violates, in both alike. A program without ``?`` has no cast
points and compiles to the code it always did."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.args import value_conforms
from relay_ref.interpreter.values import ConstructorValue, RefValue
from relay_ref.ir.types import ANY, RefType, TensorType, TypeCall
from relay_ref.typecheck.casts import needs_cast


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype="float32")


def both(src: str, *args: object) -> tuple[object, object]:
    """The value of ``@main`` by the interpreter and by the executor."""
    mod = rr.parse(src)
    return rr.evaluate(mod, *args), rr.compile(mod)(*args)


def stuck_in_both(src: str, *args: object) -> list[rr.RelayRuntimeError]:
    """``@main`` gets stuck in the interpreter and in the executor, with the same error."""
    mod = rr.parse(src)
    errors = []
    for run in (lambda: rr.evaluate(mod, *args), lambda: rr.compile(mod)(*args)):
        with pytest.raises(rr.RelayRuntimeError) as info:
            run()
        errors.append(info.value)
    interp, compiled = errors
    assert str(interp).splitlines()[0] == str(compiled).splitlines()[0]
    assert "[Stuck-Cast]" in str(interp)
    return errors


def first_line(err: Exception) -> str:
    return str(err).splitlines()[0]


ISSUE = """
def @f(%x: (Tensor[(3), float32],)) -> (Tensor[(3), float32],) { %x }
def @main(%y: Tensor[(?), float32]) { @f((%y,)) }
"""


def test_issue_program_is_stuck_at_the_argument_with_two_elements() -> None:
    err, _ = stuck_in_both(ISSUE, f32(1, 1))
    line = first_line(err)
    assert line.startswith("<string>:3:43: error: cast failed (T-App): argument 0 of @f")
    assert "shape (2)" in line


def test_issue_program_returns_normally_with_three_elements() -> None:
    for value in both(ISSUE, f32(1, 2, 3)):
        assert isinstance(value, tuple) and value[0].tolist() == [1, 2, 3]


def test_cast_points_are_recorded_only_where_a_dimension_is_refined() -> None:
    typed = rr.infer_types(rr.parse(ISSUE))
    [(node, index, cast)] = list(typed.casts.items())
    assert (index, cast.rule, cast.what) == (0, "T-App", "argument 0 of @f")
    assert rr.astext(cast.target) == "(Tensor[(3), float32],)"
    same = rr.parse("def @main(%y: Tensor[(?), float32]) -> Tensor[(?), float32] { %y }")
    assert rr.infer_types(same).casts is None  # ? against ?: no cast
    wider = rr.parse("def @f(%x: Tensor[(?), float32]) { %x }\n"
                     "def @main(%y: Tensor[(3), float32]) { @f(%y) }")
    assert rr.infer_types(wider).casts is None  # precise into imprecise: no check needed


ADT_FIELD = """
def @f(%l: List[Tensor[(3), float32]]) -> int32 { 0 }
def @main(%y: Tensor[(?), float32]) { @f(Cons(%y, Nil)) }
"""


def test_adt_field_is_checked_deeply() -> None:
    err, _ = stuck_in_both(ADT_FIELD, f32(1, 2))
    assert "Cons field 0" in first_line(err)
    assert [int(v) for v in both(ADT_FIELD, f32(1, 2, 3))] == [0, 0]


REF_CONTENTS = """
def @f(%r: ref(Tensor[(3), float32])) -> Tensor[(3), float32] { ref_read(%r) }
def @main(%y: Tensor[(?), float32]) { @f(ref(%y)) }
"""


def test_ref_contents_are_checked() -> None:
    err, _ = stuck_in_both(REF_CONTENTS, f32(1, 2))
    assert "the reference's contents" in first_line(err)
    for value in both(REF_CONTENTS, f32(1, 2, 3)):
        assert value.tolist() == [1, 2, 3]


CLOSURE_RESULT = """
def @apply(%g: fn (float32) -> Tensor[(3), float32]) -> Tensor[(3), float32] {
  %g(1f)
}
def @main(%y: Tensor[(?), float32]) {
  @apply(fn (%a: float32) -> Tensor[(?), float32] { %y })
}
"""


def test_closure_crossing_a_cast_point_is_checked_when_called() -> None:
    err, _ = stuck_in_both(CLOSURE_RESULT, f32(1, 2))
    line = first_line(err)
    # located at the call whose static type (3) the result violates, inside @apply
    assert line.startswith("<string>:3:3: error: cast failed (T-App): the result of a "
                           "function")
    for value in both(CLOSURE_RESULT, f32(1, 2, 3)):
        assert value.tolist() == [1, 2, 3]


IF_BRANCH = """
def @main(%c: bool, %y: Tensor[(?), float32], %z: Tensor[(3), float32]) {
  if (%c) { %z } else { %y }
}
"""


def test_if_branch_is_checked() -> None:
    err, _ = stuck_in_both(IF_BRANCH, False, f32(1, 2), f32(1, 2, 3))
    assert "(T-If): the else-branch's value" in first_line(err)
    assert first_line(err).startswith("<string>:3:3:")  # the if: %y's use is there
    for value in both(IF_BRANCH, True, f32(1, 2), f32(1, 2, 3)):
        assert value.tolist() == [1, 2, 3]


MATCH_CLAUSE = """
def @main(%o: Option[Tensor[(?), float32]], %z: Tensor[(3), float32]) {
  match (%o) {
    None => %z,
    Some(%q) => %q,
  }
}
"""


def test_match_clause_is_checked() -> None:
    mod = rr.parse(MATCH_CLAUSE)
    some = ConstructorValue(mod.constructors["Some"], (f32(1, 2),))
    err, _ = stuck_in_both(MATCH_CLAUSE, some, f32(1, 2, 3))
    assert "(T-Match)" in first_line(err)
    good = ConstructorValue(mod.constructors["Some"], (f32(4, 5, 6),))
    for value in both(MATCH_CLAUSE, good, f32(1, 2, 3)):
        assert value.tolist() == [4, 5, 6]


LET_TUPLE = """
def @main(%y: Tensor[(?), float32]) {
  let %t: (Tensor[(3), float32], int32) = (%y, 1);
  %t
}
"""

FN_RESULT = """
def @main(%y: Tensor[(?), float32]) -> (Tensor[(3), float32],) { (%y,) }
"""


@pytest.mark.parametrize(("src", "rule"), [(LET_TUPLE, "T-Let"), (FN_RESULT, "T-Fn")])
def test_let_and_function_result_casts(src: str, rule: str) -> None:
    err, _ = stuck_in_both(src, f32(1, 2))
    assert f"({rule})" in first_line(err)
    for value in both(src, f32(1, 2, 3)):
        assert value[0].tolist() == [1, 2, 3]


def test_cyclic_store_conformance_terminates() -> None:
    mod = rr.parse("type Node { N(ref(Node)), End }\ndef @main() { 0 }")
    node = mod.type_definitions["Node"]
    n_ctor, end = node.constructors
    cell = RefValue(ConstructorValue(end, ()))
    cell.value = ConstructorValue(n_ctor, (cell,))  # ref_write(%r, N(%r))
    assert value_conforms(cell, RefType(TypeCall(node.header, ())), mod)


def test_needs_cast_is_contravariant_in_parameters() -> None:
    mod = rr.parse("def @main() { 0 }")
    del mod
    known = rr.parse_type("fn (Tensor[(3), float32]) -> float32") \
        if hasattr(rr, "parse_type") else None
    if known is None:
        from relay_ref.syntax.parser import parse_type
        known = parse_type("fn (Tensor[(3), float32]) -> float32")
        loose = parse_type("fn (Tensor[(?), float32]) -> float32")
    else:
        loose = rr.parse_type("fn (Tensor[(?), float32]) -> float32")
    # a function accepting anything given a type accepting (3): no check needed
    assert not needs_cast(loose, known)
    # a function needing (3) given a type accepting any length: its arguments are checked
    assert needs_cast(known, loose)


NO_ANY = """
def @f(%x: (Tensor[(3), float32],)) -> (Tensor[(3), float32],) { %x }
def @main(%y: Tensor[(3), float32], %c: bool) {
  let %z = if (%c) { @f((%y,)) } else { (%y,) };
  match (Some(%z)) { Some(%w) => %w, None => %z }
}
"""


def test_program_without_any_has_no_cast_points_and_no_cast_code() -> None:
    mod = rr.parse(NO_ANY)
    assert rr.infer_types(mod).casts is None
    exe = rr.compile(mod)
    assert "_cast" not in exe.source and "_cast" not in exe.generated.namespace
    assert exe(f32(1, 2, 3), True)[0].tolist() == [1, 2, 3]


def test_backward_broadcast_only_where_unique_under_any() -> None:
    """Broadcast runs backwards only where the operand's type is unique (spec 3.9): with
    a ``(1, 1)`` operand a result ``(?, 3)`` fits ``%x : (?, 3)`` and ``%x : (3)`` alike
    (``?`` may be 1), so ``%x`` is not inferred; a result ``(2, 3)`` forces ``(2, 3)``, and
    a scalar operand forces the result's rank."""
    ambiguous = rr.parse("def @main(%x, %y: Tensor[(1, 1), float32]) -> "
                         "Tensor[(?, 3), float32] { add(%x, %y) }")
    with pytest.raises(rr.RelayTypeError, match="cannot infer"):
        rr.infer_types(ambiguous)
    # the two answers the relation would have had to choose between both run
    for shape in ((2, 3), (3,)):
        typed = rr.parse(f"def @main(%x: Tensor[{shape}, float32], "
                         "%y: Tensor[(1, 1), float32]) -> Tensor[(?, 3), float32] "
                         "{ add(%x, %y) }".replace(",)", ")"))
        assert rr.evaluate(typed, np.ones(shape, "float32"),
                           np.ones((1, 1), "float32")).shape[-1] == 3
    for src, want in (("%y: Tensor[(1, 1), float32]) -> Tensor[(2, 3), float32]",
                       "Tensor[(2, 3), float32]"),
                      ("%y: float32) -> Tensor[(?, 3), float32]", "Tensor[(?, 3), float32]")):
        mod = rr.infer_types(rr.parse(f"def @main(%x, {src} {{ add(%x, %y) }}"))
        assert rr.astext(mod.global_types["main"].arg_types[0]) == want


WRITE_REF = """
def @main(%y: Tensor[(?), float32]) {
  let %r = ref(zeros(shape=[3], dtype="float32"));
  ref_write(%r, %y);
  ref_read(%r)
}
"""


def test_value_written_to_a_reference_is_checked() -> None:
    err, _ = stuck_in_both(WRITE_REF, f32(1, 2))
    assert "(T-WriteRef): the value written" in first_line(err)
    for value in both(WRITE_REF, f32(1, 2, 3)):
        assert value.tolist() == [1, 2, 3]


def test_static_annotation_check_is_the_same_stuck_state() -> None:
    """A static tensor annotation's cast is the annotation check (no second cast point),
    tagged Stuck-Cast in both runners."""
    src = "def @main(%y: Tensor[(?), float32]) -> Tensor[(3), float32] { %y }"
    assert rr.infer_types(rr.parse(src)).casts is None
    err, _ = stuck_in_both(src, f32(1, 2))
    assert "shape mismatch: the result is annotated Tensor[(3), float32]" in first_line(err)


def test_derivation_shows_consistency_premises_and_casts() -> None:
    """Every node of ``--derive`` is an instance of a rule as spec/typing.md writes it: a
    premise ``τ ~ τ'`` whose sides differ is shown with its cast; a global's derivation is
    rooted at T-Module's premise for it, the T-Fn judgement of its definition."""
    from relay_ref.typecheck.derive import derive

    mod = rr.parse("def @g(%y: Tensor[(?), float32]) -> (Tensor[(3), float32],) { (%y,) }\n"
                   "def @main(%c: bool, %y: Tensor[(?), float32], %z: Tensor[(3), float32])"
                   " { if (%c) { %z } else { %y } }")
    g = derive(mod, "g")
    assert (g.rule, g.expr.startswith("@g = fn")) == ("T-Fn", True)
    [note] = g.notes
    assert note.startswith("T-Fn premise: the function's result : (Tensor[(?), float32],) ~ "
                           "(Tensor[(3), float32],)")
    assert "cast point: checked against (Tensor[(3), float32],) at run time by a cast" in note
    main = derive(mod, "main")
    [node] = [n for n in main.walk() if n.rule == "T-If"]
    assert node.notes and "Tensor[(?), float32] ~ Tensor[(3), float32]" in node.notes[0]
    assert all(not n.notes for n in main.walk() if n.rule != "T-If")
    text = str(main)
    assert "T-If premise: the else-branch's value" in text


CLOSURE_ARGUMENT = """
def @call(%g: fn ((Tensor[(?), float32],)) -> int32, %y: Tensor[(?), float32]) -> int32 {
  %g((%y,))
}
def @main(%y: Tensor[(?), float32]) {
  @call(fn (%a: (Tensor[(3), float32],)) -> int32 { 0 }, %y)
}
"""


def test_closure_arguments_are_checked_against_its_own_parameter_types() -> None:
    """A function of type ``fn ((3)) -> int32`` used at ``fn ((?)) -> int32`` checks the
    arguments it is given (contravariance): Stuck-Cast at the call in @call."""
    err, _ = stuck_in_both(CLOSURE_ARGUMENT, f32(1, 2))
    line = first_line(err)
    assert line.startswith("<string>:3:3: error: cast failed (T-App): argument 0 of a function")
    assert [int(v) for v in both(CLOSURE_ARGUMENT, f32(1, 2, 3))] == [0, 0]


def test_cyclic_store_passed_back_in_is_accepted() -> None:
    """The host-argument check (A-Value) terminates on a cyclic store, in both runners."""
    mod = rr.parse("type Node { N(ref(Node)), End }\n"
                   "def @main(%r: ref(Node)) { match (ref_read(%r)) { N(_) => 1, End => 0 } }")
    n_ctor, end = mod.type_definitions["Node"].constructors
    cell = RefValue(ConstructorValue(end, ()))
    cell.value = ConstructorValue(n_ctor, (cell,))
    assert int(rr.evaluate(mod, cell)) == 1
    assert int(rr.compile(mod)(cell)) == 1


PATTERN_VAR = """
def @main(%o: Option[Tensor[(?), float32]]) {
  match (%o) {
    Some(%q: Tensor[(3), float32]) => (%q,),
    None => (zeros(shape=[3], dtype="float32"),),
  }
}
"""


def test_annotated_pattern_variable_is_checked() -> None:
    mod = rr.parse(PATTERN_VAR)
    some = mod.constructors["Some"]
    err, _ = stuck_in_both(PATTERN_VAR, ConstructorValue(some, (f32(1, 2),)))
    assert "(TP-Var): the pattern variable %q" in first_line(err)
    for value in both(PATTERN_VAR, ConstructorValue(some, (f32(1, 2, 3),))):
        assert value[0].tolist() == [1, 2, 3]


OP_VALUE = """
def @apply(%g: fn (Tensor[(?), float32]) -> Tensor[(3), float32], %y: Tensor[(?), float32])
    -> Tensor[(3), float32] {
  %g(%y)
}
def @main(%y: Tensor[(?), float32]) {
  let %h: fn (Tensor[(?), float32]) -> Tensor[(3), float32] = negative;
  (@apply(nn.relu, %y), %h(%y))
}
"""


def test_operator_values_crossing_a_cast_point_are_checked_when_called() -> None:
    err, _ = stuck_in_both(OP_VALUE, f32(1, 2))
    assert first_line(err).startswith("<string>:4:3: error: cast failed (T-App): the result")
    for value in both(OP_VALUE, f32(1, -2, 3)):
        assert [v.tolist() for v in value] == [[1, 0, 3], [-1, 2, -3]]
    let_bound = OP_VALUE.replace("(@apply(nn.relu, %y), %h(%y))", "%h(%y)")
    err, _ = stuck_in_both(let_bound, f32(1, 2))
    assert "cast failed (T-Let): the result of a function" in first_line(err)


BOXED_FUNCTION = """
type Box[A] { B(A) }
def @use(%b: Box[fn(Tensor[(3), float32]) -> Tensor[(3), float32]]) {
  match (%b) { B(%g) => %g(ones(shape=(3), dtype="float32")) } }
def @main(%n: Tensor[(?), float32]) {
  let %k = fn (%a: Tensor[(?), float32]) -> Tensor[(?), float32] { %n };
  let %r = @use(B(%k)); (%r, shape_of(%r)) }
"""


def test_function_inside_an_adt_value_is_wrapped_and_checked_when_called() -> None:
    """A function in an ADT field crossing a cast point is wrapped (the ADT value rebuilt
    around it): its result is checked at the call, in the interpreter and in rr.compile,
    with or without passes (FoldConstant folds ``shape_of(%r)`` from the static (3))."""
    err, _ = stuck_in_both(BOXED_FUNCTION, f32(1, 2))
    line = first_line(err)
    assert line.startswith("<string>:4:25: error: cast failed (T-App): the result of a "
                           "function in argument 0 of @use: ")
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.compile(rr.parse(BOXED_FUNCTION), passes=())(f32(1, 2))
    assert first_line(info.value) == line
    for value, shape in both(BOXED_FUNCTION, f32(1, 2, 3)):
        assert value.tolist() == [1, 2, 3] and shape.tolist() == [3]


LISTED_FUNCTIONS = """
def @sum(%l: List[fn(Tensor[(2), float32]) -> Tensor[(2), float32]], %acc: Tensor[(2), float32])
    -> Tensor[(2), float32] {
  match (%l) { Cons(%g, %t) => @sum(%t, add(%acc, %g(%acc))), Nil => %acc } }
def @main(%n: Tensor[(?), float32]) {
  let %ok = fn (%a: Tensor[(?), float32]) -> Tensor[(?), float32] { %a };
  let %bad = fn (%a: Tensor[(?), float32]) -> Tensor[(?), float32] { %n };
  let %l = Cons(%ok, Cons(%ok, Cons(%bad, Nil)));
  (@sum(%l, ones(shape=(2), dtype="float32")), %l) }
"""


def test_functions_deep_in_a_recursive_adt_are_wrapped_sharing_kept() -> None:
    """The third element of a list is wrapped too (the list rebuilt, iteratively); with a
    fitting ``%n`` the run gives the interpreter's value in both runners."""
    err, _ = stuck_in_both(LISTED_FUNCTIONS, f32(1, 2, 3))
    assert "cast failed (T-App): the result of a function in argument 0 of @sum: " \
        in first_line(err)
    for total, lst in both(LISTED_FUNCTIONS, f32(5, 5)):
        assert total.tolist() == [9, 9]
        assert isinstance(lst, ConstructorValue) and lst.name == "Cons"


def test_adt_cast_without_functions_returns_the_value_itself() -> None:
    """Without a function to wrap, E-Cast returns the very value (nothing rebuilt)."""
    from relay_ref.interpreter.casts import cast_value
    from relay_ref.typecheck.casts import Cast

    mod = rr.infer_types(rr.parse(ADT_FIELD))
    td = mod.type_definitions["List"]
    ctors = {c.name: c for c in td.constructors}
    value = ConstructorValue(ctors["Cons"], (f32(1, 2, 3), ConstructorValue(ctors["Nil"], ())))
    cast = Cast("T-App", TypeCall(td.header, (TensorType((ANY,), "float32"),)),
                TypeCall(td.header, (TensorType((3,), "float32"),)), "x", None)
    assert cast_value(value, cast, mod) is value


FOLD_THROUGH_ANY = """
def @main() {
  let %q: Tensor[(?), float32] = broadcast_to(0f, shape=[3]);
  let %r = ref(%q);
  ref_write(%r, broadcast_to(1f, shape=[2]));
  ref_read(%r) }
"""


def test_fold_constant_keeps_a_let_whose_annotation_is_less_precise() -> None:
    """FoldConstant does not substitute a (3) constant for a ``?``-annotated variable: the
    output type-checks and rr.compile gives the interpreter's value."""
    from relay_ref.passes.fold_constant import FoldConstant

    mod = rr.parse(FOLD_THROUGH_ANY)
    rr.infer_types(FoldConstant()(rr.infer_types(mod)))  # no type error
    for value in both(FOLD_THROUGH_ANY):
        assert value.tolist() == [1, 1]


def test_cast_failure_reads_the_same_in_both_runners() -> None:
    """The whole message, notes included (the cast point's note, the Relay call stack)."""
    interp, compiled = stuck_in_both(ISSUE, f32(1, 1))
    assert str(interp) == str(compiled)
    assert "T-App gave it type (Tensor[(3), float32],)" in str(compiled)


def test_graph_normal_form_keeps_a_let_annotated_with_any() -> None:
    """ToGraphNormalForm does not replace a ``?``-annotated variable by its (3) value (the
    ref made of it would then refuse the later 2-element write): the output type-checks."""
    from relay_ref.passes.to_graph_normal_form import ToGraphNormalForm

    for src in (FOLD_THROUGH_ANY, FOLD_THROUGH_ANY.replace(
            "broadcast_to(0f, shape=[3])", "%x").replace("@main()", "@main(%x: Tensor[(3), "
                                                            "float32])")):
        out = ToGraphNormalForm()(rr.infer_types(rr.parse(src)))
        rr.infer_types(out)
        assert rr.evaluate(out, *([f32(0, 0, 0)] if "%x" in src else [])).tolist() == [1, 1]


# -- the cast memo: a list crossing a cast at every step is checked once per cell ------------

WALK = """
def @rep(%v: Tensor[(?), float32], %n: int32) -> List[Tensor[(?), float32]] {
  if (%n == 0) { Nil } else { Cons(%v, @rep(%v, %n - 1)) } }
def @head3(%l: List[Tensor[(3), float32]]) -> Tensor[(3), float32] {
  match (%l) { Cons(%h, _) => %h, Nil => zeros(shape=[3], dtype="float32") } }
def @walk(%l: List[Tensor[(?), float32]], %acc: Tensor[(3), float32]) -> Tensor[(3), float32] {
  match (%l) { Cons(_, %t) => @walk(%t, add(%acc, @head3(%l))), Nil => %acc } }
def @main(%v: Tensor[(?), float32], %n: int32) {
  @walk(@rep(%v, %n), zeros(shape=[3], dtype="float32")) }
"""


def test_a_list_crossing_a_cast_at_every_step_is_checked_once_per_cell(monkeypatch) -> None:
    """``@head3``'s argument cast meets the rest of the same list at each step of ``@walk``:
    with the memo each cell's tensor is checked once (linear), not once per crossing
    (quadratic: n²/2 leaf checks), in both runners; the values are right."""
    from relay_ref.interpreter import casts

    real = casts._leaf_mismatch
    steps = [0]

    def counted(*args: object) -> object:
        steps[0] += 1
        return real(*args)

    monkeypatch.setattr(casts, "_leaf_mismatch", counted)
    mod = rr.parse(WALK)
    exe = rr.compile(mod)
    for run in (lambda n: rr.evaluate(mod, f32(1, 2, 3), np.int32(n)),
                lambda n: exe(f32(1, 2, 3), np.int32(n))):
        counts = []
        for n in (40, 80):
            steps[0] = 0
            assert run(n).tolist() == [n, 2 * n, 3 * n]
            counts.append(steps[0])
        assert 40 <= counts[0] <= 3 * 40 and counts[1] <= 2 * counts[0] + 4, counts


def test_the_memo_does_not_trust_a_checked_value_holding_a_reference() -> None:
    """A tuple holding a reference passes the cast, its cell is then written with a
    2-element tensor: the second crossing of the same tuple checks again and is stuck."""
    src = """
def @g(%p: (ref(Tensor[(3), float32]),)) -> float32 { 0f }
def @main(%v: Tensor[(?), float32], %w: Tensor[(?), float32]) {
  let %r = ref(%v);
  let %p = (%r,);
  let %a = @g(%p);
  ref_write(%r, %w);
  @g(%p) }
"""
    stuck_in_both(src, f32(1, 2, 3), f32(1, 2))
    for value in both(src, f32(1, 2, 3), f32(4, 5, 6)):
        assert float(value) == 0.0


def test_run_compiled_with_a_saved_npy_argument(relay, tmp_path) -> None:
    """``np.load``'s arrays have a memoryview base: the executor's result copy check walks
    ndarray bases only (it crashed with an internal error, exit 70)."""
    np.save(tmp_path / "v3.npy", f32(1, 2, 3))
    (tmp_path / "id.relay").write_text("def @main(%v: Tensor[(3), float32]) { %v }\n")
    for flags in ((), ("--compile",)):
        result = relay("run", *flags, "id.relay", "v3.npy", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "[1f, 2f, 3f]" in result.stdout
