"""Passes keep programs typed, printable and runnable as asked.

* Types stay determined (``relay_ref.passes.pin_types``): DeadCodeElimination,
  ToGraphNormalForm and SimplifyExpr never drop the only thing that typed a variable or a
  value (a backwards-typed parameter, an annotated ``let`` of ``Nil``).
* Round trip: every pass's output prints and parses back alpha-equal (an op value put in
  call position gets the op's default attrs, as the parser gives them).
* ``rr.optimize`` runs every pass it is given unless an ``opt_level`` is passed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import relay_ref as rr
from relay_ref.ir.expr import Call, Let, Op
from relay_ref.ir.visitor import post_order
from relay_ref.passes import get_pass, pass_names
from relay_ref.passes.pin_types import Determinacy, annotate_params
from relay_ref.testing.programs import programs

GOLDEN = Path(__file__).parent.parent / "programs" / "typecheck" / "t_op_backward_like.relay"
DROPPING = ["DeadCodeElimination", "ToGraphNormalForm", "SimplifyExpr"]

TYPED_ONLY_BY_WHAT_GOES = {
    "backwards": GOLDEN.read_text(),
    "dead_let": "def @main(%a) -> int32 { let %u: Tensor[(2, 2), int32] = ones_like(%a); 1 }",
    "local_fn": """def @main() -> int32 {
        let %f = fn (%a) { let %u: Tensor[(2, 2), int32] = ones_like(%a); 1 };
        %f(ones(shape=[2, 2], dtype="int32"))
    }""",
    "annotated_nil": """def @main() -> int32 {
        let %e1: List[float32] = Nil;
        match (%e1) { Nil => 0, Cons(_, _) => 1 }
    }""",
    # the dead %u is what types %n (and, after ToGraphNormalForm, the shared Nil)
    "dead_use_types_var": """def @main() -> int32 {
        let %n = Nil;
        let %u = Cons(1, %n);
        match (%n) { Nil => 0, Cons(_, _) => 1 }
    }""",
}


def _rt(out: rr.IRModule) -> None:
    back = rr.parse(rr.astext(out))
    assert rr.alpha_equal(out, back), rr.astext(out)
    rr.infer_types(back)


@pytest.mark.parametrize("name", DROPPING)
@pytest.mark.parametrize("case", sorted(TYPED_ONLY_BY_WHAT_GOES))
def test_dropping_passes_keep_types_determined(name: str, case: str) -> None:
    mod = rr.infer_types(rr.parse(TYPED_ONLY_BY_WHAT_GOES[case]))
    for passes in ([name], [name, "DeadCodeElimination"], ["ToGraphNormalForm", name]):
        out = rr.optimize(mod, passes)  # raises RelayTypeError if a type got lost
        assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"])
        _rt(out)
        args = [np.ones((2, 2), "int32")] * len(mod.functions["main"].params)
        np.testing.assert_array_equal(rr.evaluate(out, *args), rr.evaluate(mod, *args))


def test_the_passes_still_do_their_work() -> None:
    mod = rr.parse(TYPED_ONLY_BY_WHAT_GOES["backwards"])
    out = rr.optimize(mod, ["SimplifyExpr"])
    assert rr.alpha_equal(out, rr.parse(
        "def @main(%a: Tensor[(2, 2), int32]) -> Tensor[(2, 2), int32] {"
        " add(ones(shape=[2, 2], dtype=\"int32\"), 1) }"))
    out = rr.optimize(rr.parse(TYPED_ONLY_BY_WHAT_GOES["dead_let"]), ["DeadCodeElimination"])
    assert rr.alpha_equal(out, rr.parse("def @main(%a: Tensor[(2, 2), int32]) -> int32 { 1 }"))
    # determined values still become graph sharing, annotated or not
    mod = rr.parse("""def @main(%a: float32) -> float32 {
        let %x: float32 = add(%a, %a); let %n = Cons(1, Nil); let %y = multiply(%x, %x);
        let %z: List[int32] = Cons(2, %n); %y }""")
    out = rr.optimize(mod, ["ToGraphNormalForm"])
    assert not any(isinstance(n, Let) for n in post_order(out.functions["main"].body))


def test_nothing_dropped_nothing_annotated() -> None:
    mod = rr.infer_types(rr.parse("def @main(%a) -> Tensor[(2, 2), int32] { add(%a, 1) }"))
    assert get_pass("DeadCodeElimination")(mod) is mod
    assert get_pass("SimplifyExpr")(mod) is mod


def test_annotate_params_pins_checked_types_and_keeps_them() -> None:
    mod = rr.infer_types(rr.parse(TYPED_ONLY_BY_WHAT_GOES["local_fn"]))
    out = annotate_params(mod)
    fns = [n for n in post_order(out.functions["main"].body) if hasattr(n, "params")]
    assert [str(rr.astext(p.type_annotation)) for f in fns for p in f.params] == [
        "Tensor[(2, 2), int32]"]
    # the checked types were carried over: every node of the result has one
    assert all(n in out.checked_types for n in post_order(out.functions["main"]))
    assert annotate_params(out) is out


@pytest.mark.parametrize("ty, text, determined", [
    ("List[int32]", "Nil", False), ("List[int32]", "Cons(1, Nil)", True),
    ("fn (int32, int32) -> int32", "add", False), ("(int32, List[int32])", "(1, Nil)", False),
    ("List[float32]", "if (True) { Nil } else { Cons(1f, Nil) }", True),
    ("List[int32]", "@id(Nil)", False), ("List[int32]", "@id(Cons(1, Nil))", True),
    ("fn (List[int32]) -> int32", "@len", True),
    ("fn (int32) -> int32", "fn (%x: int32) { %x }", True),
    ("fn (int32) -> List[int32]", "fn (%x: int32) -> List[int32] { Nil }", True),
    ("fn (int32) -> int32", "fn (%x) { %x }", False),
])
def test_determinacy_rules(ty: str, text: str, determined: bool) -> None:
    mod = rr.infer_types(rr.parse(f"""
        def @id[A](%x: A) -> A {{ %x }}
        def @len(%l: List[int32]) -> int32 {{ 0 }}
        def @main() {{ let %v: {ty} = {text}; () }}"""))
    let = mod.functions["main"].body
    assert Determinacy(mod).determined(let.value) is determined


def test_op_value_in_call_position_gets_default_attrs() -> None:
    mod = rr.parse("def @main() { let %f = add; %f(1f, 2f) }")
    for name in ("ToGraphNormalForm", "Inline", "DeadCodeElimination"):
        out = rr.optimize(mod, [name])
        _rt(out)
    out = rr.optimize(mod, ["ToGraphNormalForm"])
    call = out.functions["main"].body
    assert isinstance(call, Call) and isinstance(call.op, Op) and call.attrs is not None


@settings(max_examples=25)
@given(programs())
def test_every_pass_output_round_trips(mod: rr.IRModule) -> None:
    mod = rr.infer_types(mod)
    for name in pass_names():
        out = rr.infer_types(get_pass(name)(mod))
        back = rr.parse(rr.astext(out))
        assert rr.alpha_equal(out, back), (name, rr.astext(out))
        rr.infer_types(back)


CSE_TEXT = """def @main(%x: float32) -> float32 {
    let %a = add(%x, 1f); let %b = add(%x, 1f); multiply(%a, %b) }"""
PE_TEXT = "def @main() -> float32 { let %f = fn (%y: float32) { add(%y, 1f) }; %f(2f) }"


def _adds(mod: rr.IRModule) -> int:
    """The number of ``add`` calls left in ``@main``."""
    return sum(isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "add"
               for n in post_order(mod.functions["main"].body))


def test_optimize_runs_every_named_pass_by_default() -> None:
    cse = rr.parse(CSE_TEXT)
    assert _adds(rr.optimize(cse, ["EliminateCommonSubexpr"])) == 1
    pe = rr.parse(PE_TEXT)
    out = rr.optimize(pe, ["PartialEvaluate", "DeadCodeElimination"])
    assert rr.alpha_equal(out, rr.parse("def @main() -> float32 { 3f }"))
    # a pass object given as such runs too
    assert _adds(rr.optimize(cse, [get_pass("EliminateCommonSubexpr")])) == 1


def test_optimize_with_an_opt_level_keeps_tvms_rule() -> None:
    cse = rr.parse(CSE_TEXT)
    assert rr.alpha_equal(rr.optimize(cse, ["EliminateCommonSubexpr"], opt_level=2), cse)
    assert _adds(rr.optimize(cse, ["EliminateCommonSubexpr"], opt_level=3)) == 1
    assert _adds(rr.optimize(cse, ["EliminateCommonSubexpr"], opt_level=2,
                             required=["EliminateCommonSubexpr"])) == 1
    # disabled wins, with or without a level
    assert rr.alpha_equal(rr.optimize(cse, ["EliminateCommonSubexpr"],
                                      disabled=["EliminateCommonSubexpr"]), cse)
    with pytest.raises(TypeError):
        rr.optimize(cse, ["EliminateCommonSubexpr"], opt_level="3")
