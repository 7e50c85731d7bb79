"""Symbolic shapes in the type checker (spec/typing.md 5.3: T-ShapeScope, T-ShapeCall,
T-MatchCast, T-DPS, T-Dataflow): deduction through calls, one canonical type, scoping errors,
the Relax constructs. Every located error is checked for its line and column; programs the
text format cannot write yet (match_cast, dataflow, call_dps_packed) are built as IR around
parsed pieces, or given spans of a small source of their own."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.expr import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    RefCreate,
    RefRead,
    Tuple,
    Var,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.shape import ANY, sym
from relay_ref.ir.span import Source, Span
from relay_ref.ir.types import TensorType, TupleType
from relay_ref.ops.registry import make_attrs
from relay_ref.ops.symbolic import DPSAttrs, MatchCastAttrs
from relay_ref.typecheck.casts import needs_cast
from relay_ref.typecheck.infer import infer_expr

N, M, K = sym("n"), sym("m"), sym("k")
SRC = Source("<ir>", "\n".join(["x" * 80] * 20))


def at(line: int, col: int) -> Span:
    return Span(SRC, line, col, line, col + 1)


def check(text: str) -> IRModule:
    return rr.infer_types(rr.parse(text))


def main_type(text_or_mod: str | IRModule) -> str:
    mod = check(text_or_mod) if isinstance(text_or_mod, str) else rr.infer_types(text_or_mod)
    return rr.astext(mod.global_types["main"])


def diags(text_or_mod: str | IRModule) -> list:
    mod = rr.parse(text_or_mod) if isinstance(text_or_mod, str) else text_or_mod
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(mod)
    return list(info.value.diagnostics)


def one(text_or_mod: str | IRModule, rule: str) -> tuple[str, int, int]:
    """The single diagnostic: (message, line, column); it cites ``rule``."""
    ds = diags(text_or_mod)
    assert len(ds) == 1, [d.message for d in ds]
    d = ds[0]
    assert f"[{rule}]" in d.message, d.message
    return d.message, d.span.line, d.span.column


def f32(*shape: object) -> TensorType:
    return TensorType(tuple(shape), "float32")


# ---- canonical types, printing -----------------------------------------------------------

def test_symbolic_types_print_after_inference() -> None:
    text = """
def @main(%x: Tensor[(n, 5, 2), float32], %y: Tensor[(m), float32]) {
  (nn.relu(%x), add(%y, %y))
}"""
    assert main_type(text) == ("fn (Tensor[(n, 5, 2), float32], Tensor[(m), float32]) -> "
                               "(Tensor[(n, 5, 2), float32], Tensor[(m), float32])")
    mod = check(text)
    relu = mod.functions["main"].body.fields[0]
    assert rr.astext(mod.type_of(relu)) == "Tensor[(n, 5, 2), float32]"
    assert "Tensor[(n, 5, 2), float32]" in rr.astext(mod, show_types=True)


def test_4n_and_n4_are_one_type() -> None:
    text = """
def @main(%n: Tensor[(n), float32], %x: Tensor[(n * 4), float32]) -> Tensor[(4 * n), float32] {
  let %y: Tensor[(2 * (2 * n)), float32] = %x;
  %y
}"""
    mod = check(text)
    assert mod.casts is None  # equal types: no cast point, no gradual flow
    assert rr.astext(mod.global_types["main"]) == \
        "fn (Tensor[(n), float32], Tensor[(n * 4), float32]) -> Tensor[(n * 4), float32]"


def test_provably_different_dimensions_are_a_located_error() -> None:
    text = """def @main(%x: Tensor[(n, 3), float32]) -> Tensor[(n + 1, 3), float32] {
  %x
}"""
    msg, line, col = one(text, "T-Fn")
    assert "dimension 0 differs (n vs n + 1)" in msg
    assert (line, col) == (1, 1)  # the body is a variable: located at the function


def test_undecidable_dimensions_are_gradual_with_a_cast() -> None:
    text = ("def @main(%x: Tensor[(n), float32], %y: Tensor[(m), float32]) -> "
            "Tensor[(m), float32] {\n  %x\n}")
    mod = check(text)
    assert mod.casts is not None
    [(node, index, cast)] = list(mod.casts.items())
    assert cast.rule == "T-Fn" and cast.source == f32(N) and cast.target == f32(M)
    assert (cast.span.line, cast.span.column) == (1, 1)


def test_needs_cast_with_symbolic_dimensions() -> None:
    assert needs_cast(f32(ANY), f32(N))
    assert needs_cast(f32(M), f32(N))
    assert needs_cast(f32(3), f32(N))
    assert needs_cast(f32(N), f32(3))
    assert not needs_cast(f32(N * 4), f32(4 * N))
    assert not needs_cast(f32(N), f32(ANY))
    assert not needs_cast(f32(3, 4), f32(3, 4))


# ---- T-ShapeScope ------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "where"), [
    # only in the return type
    ("def @main(%x: Tensor[(n), float32]) -> Tensor[(k), float32] {\n  %x\n}", (1, 40)),
    # only in a let annotation
    ("def @main(%x: Tensor[(n), float32]) {\n  let %y: Tensor[(k), float32] = %x;\n  %y\n}",
     (2, 11)),
    # only inside an expression among the parameters
    ("def @main(%x: Tensor[(n * 2), float32]) {\n  %x\n}", (1, 15)),
])
def test_unbound_shape_variable(text: str, where: tuple[int, int]) -> None:
    msg, line, col = one(text, "T-ShapeScope")
    assert "shape variable" in msg and "is not bound by a parameter or a match_cast" in msg
    assert (line, col) == where


def test_expression_of_a_bound_variable_in_a_parameter_is_fine() -> None:
    text = """def @main(%x: Tensor[(n), float32], %y: Tensor[(n * 2), float32]) {
  concatenate((%x, %x))
}"""
    mod = check(text)
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(n * 2), float32]"


def test_inner_function_sees_the_enclosing_variables_rigidly() -> None:
    ok = """def @main(%x: Tensor[(n), float32]) {
  let %g = fn (%y: Tensor[(n), float32]) -> Tensor[(n), float32] { %y };
  %g(%x)
}"""
    assert main_type(ok) == "fn (Tensor[(n), float32]) -> Tensor[(n), float32]"
    bad = """def @main(%x: Tensor[(n), float32]) {
  let %g = fn (%y: Tensor[(n), float32]) -> Tensor[(n + 1), float32] { %y };
  %g(%x)
}"""
    msg, line, col = one(bad, "T-Fn")
    assert "dimension 0 differs (n vs n + 1)" in msg and (line, col) == (2, 12)


# ---- T-ShapeCall ---------------------------------------------------------------------------

def test_deduction_through_a_call() -> None:
    text = """
def @f(%x: Tensor[(n, 4), float32]) -> Tensor[(n * 2, 4), float32] {
  concatenate((%x, %x))
}
def @main(%y: Tensor[(m, 4), float32], %z: Tensor[(1, 4), float32]) {
  let %w = concatenate((%y, %z));
  @f(%w)
}"""
    mod = check(text)
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(m * 2 + 2, 4), float32]"
    assert mod.casts is None
    # the callee's own type is unchanged
    assert rr.astext(mod.global_types["f"]) == \
        "fn (Tensor[(n, 4), float32]) -> Tensor[(n * 2, 4), float32]"


def test_numbers_deduced_and_each_call_fresh() -> None:
    text = """
def @f(%x: Tensor[(n), float32]) -> Tensor[(n * 2), float32] {
  concatenate((%x, %x))
}
def @main(%a: Tensor[(3), float32], %b: Tensor[(5), float32]) {
  (@f(%a), @f(%b))
}"""
    assert rr.astext(check(text).global_types["main"].ret_type) == \
        "(Tensor[(6), float32], Tensor[(10), float32])"


def test_inconsistent_variable_across_arguments_is_located_at_the_call() -> None:
    text = """def @g(%x: Tensor[(n, 4), float32], %y: Tensor[(n, 4), float32]) {
  add(%x, %y)
}
def @main(%a: Tensor[(3, 4), float32], %b: Tensor[(4, 4), float32]) {
  @g(%a, %b)
}"""
    msg, line, col = one(text, "T-ShapeCall")
    assert "shape variable n of @g is 3 by argument 0 and 4 by argument 1" in msg
    assert (line, col) == (5, 3)


def test_provably_different_dependent_dimension_at_a_call() -> None:
    text = """def @g(%x: Tensor[(n), float32], %y: Tensor[(n + 1), float32]) {
  %x
}
def @main(%a: Tensor[(m), float32]) {
  @g(%a, %a)
}"""
    msg, line, col = one(text, "T-App")
    assert "argument 1 of @g" in msg and "dimension 0 differs (m vs m + 1)" in msg
    assert (line, col) == (5, 3)


def test_undecidable_at_a_call_is_a_run_time_check() -> None:
    text = """def @g(%x: Tensor[(n), float32], %y: Tensor[(n), float32]) -> Tensor[(n), float32] {
  add(%x, %y)
}
def @main(%a: Tensor[(m), float32], %b: Tensor[(k), float32]) {
  @g(%a, %b)
}"""
    mod = check(text)
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(m), float32]"
    casts = [(i, c) for _, i, c in mod.casts.items()]
    assert [(i, c.rule, c.source, c.target) for i, c in casts] == \
        [(1, "T-App", f32(K), f32(M))]


def test_undeduced_variable_becomes_any() -> None:
    text = """def @g(%x: Tensor[(n), float32]) -> Tensor[(n), float32] { %x }
def @main(%a: Tensor[(?), float32]) {
  @g(%a)
}"""
    assert rr.astext(check(text).global_types["main"].ret_type) == "Tensor[(?), float32]"


def test_recursion_with_smaller_data() -> None:
    text = """
def @drop(%a: Tensor[(k), float32]) -> Tensor[(k - 1), float32] { @drop(%a) }
def @f(%x: Tensor[(n), float32], %c: int32) -> Tensor[(n * 2), float32] {
  if (less(%c, 1)) {
    concatenate((%x, %x))
  } else {
    let %y = @drop(%x);
    let %r = @f(%y, subtract(%c, 1));
    concatenate((%r, ones(shape=[2], dtype="float32")))
  }
}"""
    mod = check(text)
    assert rr.astext(mod.global_types["f"]) == \
        "fn (Tensor[(n), float32], int32) -> Tensor[(n * 2), float32]"
    wrong = text.replace("shape=[2]", "shape=[3]")
    msg, line, col = one(wrong, "T-If")
    assert "dimension 0 differs (n * 2 + 1 vs n * 2)" in msg and (line, col) == (7, 5)


def test_closure_with_its_own_variables() -> None:
    text = """def @main(%x: Tensor[(n), float32], %z: Tensor[(3), float32]) {
  let %g = fn (%y: Tensor[(k), float32]) -> Tensor[(k * 2), float32] {
    concatenate((%y, %y))
  };
  (%g(%x), %g(%z))
}"""
    assert rr.astext(check(text).global_types["main"].ret_type) == \
        "(Tensor[(n * 2), float32], Tensor[(6), float32])"


def test_closure_through_a_parameter() -> None:
    text = """def @main(%f: fn (Tensor[(n), float32]) -> Tensor[(n), float32],
          %x: Tensor[(n), float32]) {
  %f(%x)
}"""
    assert rr.astext(check(text).global_types["main"].ret_type) == "Tensor[(n), float32]"


def test_polymorphic_functions_still_work_with_symbolic_arguments() -> None:
    text = """def @id[A](%x: A) -> A { %x }
def @main(%x: Tensor[(n, 2), float32]) { @id(%x) }"""
    assert rr.astext(check(text).global_types["main"].ret_type) == \
        "Tensor[(n, 2), float32]"


# ---- T-MatchCast ------------------------------------------------------------------------

def match_cast(value, ty, span=None) -> Call:
    return Call(Op("match_cast"), (value,), MatchCastAttrs(type=ty), span=span)


def module(main: Function) -> IRModule:
    return IRModule({"main": main})


def test_match_cast_binds_new_variables() -> None:
    x = Var("x", TensorType((ANY,), "int64"))
    u = Var("u")
    v = Var("v", TensorType((K,), "int64"))   # uses k after the match_cast: in scope
    body = Let(u, match_cast(x, TensorType((K,), "int64")), Let(v, u, v))
    mod = rr.infer_types(module(Function((x,), body)))
    assert rr.astext(mod.type_of(u)) == "Tensor[(k), int64]"
    # T-ShapeScope: k is the body's, so the function's result type forgets it
    assert rr.astext(mod.global_types["main"]) == \
        "fn (Tensor[(?), int64]) -> Tensor[(?), int64]"


def test_match_cast_does_not_leak_out_of_its_function() -> None:
    x = Var("x", TensorType((ANY,), "int64"))
    u = Var("u")
    main = Function((x,), Let(u, match_cast(x, TensorType((K,), "int64")), u))
    y = Var("y", TensorType((K,), "int64"), span=at(3, 7))
    other = Function((Var("z", TensorType((ANY,), "int64")),), Let(y, Constant(
        np.zeros(2, "int64")), y))
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(IRModule({"main": main, "other": other}))
    [d] = info.value.diagnostics
    assert "[T-ShapeScope]" in d.message and "shape variable k" in d.message
    assert (d.span.line, d.span.column) == (3, 7)


def test_annotation_before_the_match_cast_is_unbound() -> None:
    x = Var("x", TensorType((ANY,), "int64"))
    u = Var("u", TensorType((K,), "int64"), span=at(2, 5))
    w = Var("w")
    main = Function((x,), Let(u, x, Let(w, match_cast(x, TensorType((K,), "int64")), w)))
    msg, line, col = one(module(main), "T-ShapeScope")
    assert (line, col) == (2, 5)


def test_match_cast_with_an_existing_variable_is_the_same_variable() -> None:
    x = Var("x", f32(N))
    y = Var("y", f32(ANY))
    u = Var("u")
    main = Function((x, y), Let(u, match_cast(y, f32(N)), Call(Op("add"), (x, u))))
    assert rr.astext(rr.infer_types(module(main)).global_types["main"].ret_type) == \
        "Tensor[(n), float32]"


def test_match_cast_provably_impossible() -> None:
    x = Var("x", f32(N))
    main = Function((x,), match_cast(x, f32(N + 1), span=at(4, 9)))
    msg, line, col = one(module(main), "T-App-Op")
    assert "can never match" in msg and (line, col) == (4, 9)


def test_match_cast_new_variable_must_be_bare() -> None:
    x = Var("x", f32(ANY))
    main = Function((x,), match_cast(x, f32(K * 2), span=at(6, 2)))
    msg, line, col = one(module(main), "T-MatchCast")
    assert "cannot bind the shape variable k" in msg and (line, col) == (6, 2)


# ---- T-DPS ---------------------------------------------------------------------------------

def dps(inputs, out_type, span=None) -> Call:
    return Call(Op("call_dps_packed"), (Tuple(tuple(inputs)),),
                DPSAttrs(func_name="my_kernel", out_type=out_type), span=span)


def test_dps_result_is_its_output_type() -> None:
    x = Var("x", f32(N, 4))
    main = Function((x,), dps([x], f32(N * 4)))
    assert rr.astext(rr.infer_types(module(main)).global_types["main"].ret_type) == \
        "Tensor[(n * 4), float32]"


def test_dps_output_type_needs_bound_variables() -> None:
    x = Var("x", f32(N, 4))
    main = Function((x,), dps([x], f32(M), span=at(7, 3)))
    msg, line, col = one(module(main), "T-DPS")
    assert "shape variable m" in msg and (line, col) == (7, 3)


# ---- T-Dataflow ----------------------------------------------------------------------------

def dataflow(body, span=None) -> Call:
    return Call(Op("dataflow"), (body,), span=span)


def test_dataflow_accepts_pure_straight_line_code() -> None:
    x = Var("x", f32(N, 4))
    a, b, c = Var("a"), Var("b"), Var("c")
    body = Let(a, Call(Op("nn.relu"), (x,)),
               Let(b, Tuple((a, x)),
                   Let(c, match_cast(Call(Op("add"), (a, a)), f32(N, 4)), Tuple((c, b)))))
    main = Function((x,), dataflow(body))
    assert rr.astext(rr.infer_types(module(main)).global_types["main"].ret_type) == \
        "(Tensor[(n, 4), float32], (Tensor[(n, 4), float32], Tensor[(n, 4), float32]))"


def _refused(value_at):
    x = Var("x", f32(N))
    a = Var("a")
    value = value_at(x)
    return module(Function((x,), dataflow(Let(a, value, a), span=at(1, 1))))


@pytest.mark.parametrize(("make", "what"), [
    (lambda x: If(Constant(np.array(True)), x, x, span=at(3, 11)),
     "an if is not allowed inside a dataflow block"),
    (lambda x: RefCreate(x, span=at(3, 11)), "a reference operation is not allowed"),
    (lambda x: Function((Var("y", f32(3)),), Var("z"), span=at(3, 11)),
     "a function literal is not allowed"),
    (lambda x: Call(GlobalVar("h"), (x,), span=at(3, 11)), "a call of the global @h"),
    (lambda x: Call(Var("k"), (x,), span=at(3, 11)), "a call of the function %k"),
    (lambda x: dataflow(x, span=at(3, 11)), "a nested dataflow block"),
])
def test_dataflow_refusals(make, what: str) -> None:
    mod = _refused(make)
    h = Var("q", f32(N))
    # @h writes a reference: impure, so its call is refused (a pure global's is not)
    mod = IRModule({**mod.functions, "h": Function((h,), RefRead(RefCreate(h)))})
    ds = diags(mod)
    mine = [d for d in ds if "[T-Dataflow]" in d.message]
    assert len(mine) == 1, [d.message for d in ds]
    assert what in mine[0].message
    assert (mine[0].span.line, mine[0].span.column) == (3, 11)


def test_dataflow_refuses_if_nested_in_an_operator_argument() -> None:
    x = Var("x", f32(N))
    cond = If(Constant(np.array(True)), x, x, span=at(5, 4))
    main = Function((x,), dataflow(Call(Op("nn.relu"), (cond,))))
    msg, line, col = one(module(main), "T-Dataflow")
    assert "an if is not allowed" in msg and (line, col) == (5, 4)


def test_tuple_type_with_symbolic_fields_unifies_canonically() -> None:
    x = Var("x", TupleType((f32(N), f32(N * 4), f32(2 * N + 2))))
    y = Var("y", TupleType((f32(N), f32(4 * N), f32(2 * (N + 1)))))
    main = Function((x,), Let(y, x, y))
    mod = rr.infer_types(module(main))
    assert mod.casts is None


def test_callee_checked_later_without_return_annotation() -> None:
    # @main is checked before @f: @f's result is still a hole at the call; the deduced
    # values are substituted once it is known, so @f's own n never reaches @main
    text = """def @main(%a: Tensor[(m, 2), float32]) {
  @f(%a)
}
def @f(%x: Tensor[(n, 2), float32]) {
  concatenate((%x, %x))
}"""
    mod = check(text)
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(m * 2, 2), float32]"
    assert rr.astext(mod.global_types["f"].ret_type) == "Tensor[(n * 2, 2), float32]"


def test_recursion_without_return_annotation() -> None:
    text = """def @f(%x: Tensor[(n), float32], %c: int32) {
  if (less(%c, 1)) { %x } else { @f(%x, subtract(%c, 1)) }
}
def @main(%a: Tensor[(7), float32]) { @f(%a, 3) }"""
    mod = check(text)
    assert rr.astext(mod.global_types["f"].ret_type) == "Tensor[(n), float32]"
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(7), float32]"


def test_in_env_evaluates_what_it_can() -> None:
    from relay_ref.typecheck.shapes import in_env
    ty = TupleType((f32(N * 2, M), f32(3)))
    assert in_env(ty, {"n": 4}) == TupleType((f32(8, ANY), f32(3)))
    assert in_env(ty, {"n": 4, "m": 1}) == TupleType((f32(8, 1), f32(3)))
    assert in_env(f32(3), {}) == f32(3)


# ---- the text forms (spec/syntax.md S-MatchCast, S-DPS, S-Dataflow) -------------------------

def test_text_match_cast_after_a_data_dependent_op() -> None:
    text = """def @main(%x: Tensor[(?), int64]) {
  let %u = match_cast(%x, Tensor[(k), int64]);
  let %v: Tensor[(k), int64] = add(%u, %u);
  %v
}"""
    mod = check(text)
    assert rr.astext(mod.type_of(mod.functions["main"].body.body.var)) == "Tensor[(k), int64]"
    assert main_type(mod) == "fn (Tensor[(?), int64]) -> Tensor[(?), int64]"


def test_text_dataflow_refuses_an_if() -> None:
    text = """def @main(%x: Tensor[(n, 4), float32]) {
  dataflow {
    let %a = nn.relu(%x);
    let %b = if (True) { %a } else { %a };
    %b
  }
}"""
    msg, line, col = one(text, "T-Dataflow")
    assert "an if is not allowed inside a dataflow block" in msg and (line, col) == (4, 14)


def test_text_dataflow_refuses_a_call_of_an_impure_global() -> None:
    text = """def @g(%y: Tensor[(n, 4), float32]) { ref_read(ref(%y)) }
def @main(%x: Tensor[(n, 4), float32]) {
  dataflow {
    let %a = @g(%x);
    %a
  }
}"""
    msg, line, col = one(text, "T-Dataflow")
    assert "a call of the global @g is not allowed" in msg and (line, col) == (4, 14)


def test_text_dataflow_admits_a_call_of_a_pure_global() -> None:
    # Relax's functions are pure unless they say otherwise; @g (recursive through @k, with
    # control flow inside) has no effect, so calling it is straight-line code
    text = """def @g(%y: Tensor[(n, 4), float32]) -> Tensor[(n, 4), float32] { @k(%y, 2) }
def @k(%y: Tensor[(n, 4), float32], %i: int32) -> Tensor[(n, 4), float32] {
  if (equal(%i, 0)) { %y } else { @k(nn.relu(%y), subtract(%i, 1)) }
}
def @main(%x: Tensor[(m, 4), float32]) {
  dataflow {
    let %a = @g(%x);
    %a
  }
}"""
    mod = rr.infer_types(rr.parse(text))
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(m, 4), float32]"


def test_text_dataflow_of_pure_code_keeps_symbolic_types() -> None:
    text = """def @main(%x: Tensor[(n, 4), float32]) {
  dataflow {
    let %a = nn.relu(%x);
    let %b = reshape(%a, newshape=[-1]);
    %b
  }
}"""
    assert main_type(text) == "fn (Tensor[(n, 4), float32]) -> Tensor[(n * 4), float32]"


def test_text_dps_output_type() -> None:
    ok = """def @main(%x: Tensor[(n, 4), float32]) {
  call_dps_packed("my_kernel", (%x,), Tensor[(n * 4), float32])
}"""
    assert main_type(ok) == "fn (Tensor[(n, 4), float32]) -> Tensor[(n * 4), float32]"
    bad = ok.replace("(n * 4)", "(m)")
    msg, line, col = one(bad, "T-DPS")
    assert "shape variable m" in msg and (line, col) == (2, 3)


def test_text_recursion_on_a_slice() -> None:
    # @f calls itself on x[1:] (length max(0, n - 1)): each call deduces its own n
    text = """def @f(%x: Tensor[(n), float32], %c: int32) -> Tensor[(n), float32] {
  if (less(%c, 1)) { %x } else {
    let %y = strided_slice(%x, begin=[1], end=[2147483647]);
    let %r = @f(%y, subtract(%c, 1));
    concatenate((%r, ones(shape=[1], dtype="float32")))
  }
}
def @main(%x: Tensor[(7), float32]) { @f(%x, 2) }"""
    mod = check(text)
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(7), float32]"
    y_let = mod.functions["f"].body.false_branch
    y, r = y_let.var, y_let.body.var
    assert "max(0, n - 1)" in rr.astext(mod.type_of(y))
    assert mod.type_of(r) == mod.type_of(y)  # the callee's n deduced as %y's length


def test_type_parameters_and_shape_variables_together() -> None:
    text = """def @f[A](%x: Tensor[(n), float32], %y: A) -> (Tensor[(n * 2), float32], A) {
  (concatenate((%x, %x)), %y)
}
def @main(%a: Tensor[(m + 0), float32], %b: int32) { @f(%a, %b) }"""
    assert rr.astext(check(text).global_types["main"].ret_type) == \
        "(Tensor[(m * 2), float32], int32)"


def test_function_literal_called_directly() -> None:
    text = """def @main(%x: Tensor[(n, 3), float32]) {
  (fn (%y: Tensor[(k, 3), float32]) { concatenate((%y, %y)) })(%x)
}"""
    assert rr.astext(check(text).global_types["main"].ret_type) == \
        "Tensor[(n * 2, 3), float32]"


def test_infer_expr_binds_the_free_variables_shape_variables() -> None:
    x = Var("x", f32(N, 4))
    ty, _ = infer_expr(Call(Op("reshape"), (x,), make_attrs("reshape", {"newshape": (-1,)})))
    assert ty == f32(N * 4)
    y = Var("y", f32(N * 2))  # only inside an expression: not bound
    with pytest.raises(rr.RelayTypeError, match=r"shape variable n .*\[T-ShapeScope\]"):
        infer_expr(Call(Op("nn.relu"), (y,)))


@pytest.mark.parametrize("call", [
    Call(Op("match_cast"), (Var("x", f32(N)),), MatchCastAttrs(type=None), span=at(2, 2)),
    Call(Op("call_dps_packed"), (Tuple(()),), DPSAttrs("f", None), span=at(2, 2)),
])
def test_malformed_constructs_are_located_errors(call: Call) -> None:
    x = call.args[0] if isinstance(call.args[0], Var) else Var("x", f32(N))
    ds = diags(module(Function((x,), call)))
    assert ds and all(d.span is not None and (d.span.line, d.span.column) == (2, 2)
                      for d in ds), [d.message for d in ds]


def test_match_cast_in_a_branch_binds_in_that_branch_only() -> None:
    x = Var("x", TensorType((ANY,), "int64"))
    u, v = Var("u"), Var("v", TensorType((K,), "int64"), span=at(9, 9))
    then = Let(u, match_cast(x, TensorType((K,), "int64")), u)
    body = Let(v, If(Constant(np.array(True)), then, x), v)
    msg, line, col = one(module(Function((x,), body)), "T-ShapeScope")
    assert "shape variable k" in msg and (line, col) == (9, 9)


def test_a_global_used_as_a_value_has_its_own_variables_unknown() -> None:
    text = """def @f(%x: Tensor[(n), float32]) -> Tensor[(n * 2), float32] {
  concatenate((%x, %x))
}
def @main(%a: Tensor[(3), float32]) {
  let %g = @f;
  %g(%a)
}"""
    mod = check(text)
    g = mod.functions["main"].body.var
    assert rr.astext(mod.type_of(g)) == "fn (Tensor[(?), float32]) -> Tensor[(?), float32]"
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(?), float32]"


def test_a_returned_closure_gets_the_deduced_values() -> None:
    text = """def @mk(%x: Tensor[(n), float32]) {
  fn (%y: Tensor[(n), float32]) { add(%x, %y) }
}
def @main(%a: Tensor[(5), float32]) {
  let %g = @mk(%a);
  %g(%a)
}"""
    mod = check(text)
    g = mod.functions["main"].body.var
    assert rr.astext(mod.type_of(g)) == "fn (Tensor[(5), float32]) -> Tensor[(5), float32]"
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(5), float32]"


# ---- T-ShapeScope: a match_cast's variables do not leave their scope through inferred types --

def _agree(text: str, *args: np.ndarray) -> np.ndarray | None:
    """rr.evaluate and rr.compile give the same value, or both a located run-time error
    (then None)."""
    mod = rr.parse(text)
    results = []
    for run in (lambda: rr.evaluate(mod, *args), lambda: rr.compile(mod)(*args)):
        try:
            results.append(np.asarray(run()))
        except rr.RelayRuntimeError as err:
            assert err.diagnostics[0].span is not None
            results.append(None)
    first, second = results
    if first is None or second is None:
        assert first is None and second is None, results
        return None
    np.testing.assert_array_equal(first, second)
    return first


MC_GLOBAL = """def @g(%x: Tensor[(?), float32]) { match_cast(%x, Tensor[(k), float32]) }
def @main(%x: Tensor[(?), float32], %y: Tensor[(?), float32]) { add(@g(%x), @g(%y)) }"""


def test_a_global_result_forgets_its_match_cast_variables() -> None:
    mod = check(MC_GLOBAL)
    assert rr.astext(mod.global_types["g"]) == \
        "fn (Tensor[(?), float32]) -> Tensor[(?), float32]"
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(?), float32]"
    one, four = np.ones(1, "float32"), np.arange(4, dtype="float32")
    np.testing.assert_array_equal(_agree(MC_GLOBAL, one, four), four + 1)
    assert _agree(MC_GLOBAL, np.ones(2, "float32"), np.ones(3, "float32")) is None


def test_a_closure_result_forgets_its_match_cast_variables() -> None:
    mod = check("""def @main(%x: Tensor[(?), float32], %y: Tensor[(?), float32]) {
  let %f = fn (%z: Tensor[(?), float32]) { match_cast(%z, Tensor[(k), float32]) };
  add(%f(%x), %f(%y))
}""")
    f = mod.functions["main"].body.var
    assert rr.astext(mod.type_of(f)) == "fn (Tensor[(?), float32]) -> Tensor[(?), float32]"
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(?), float32]"


MC_BRANCH = """def @main(%c: bool, %x: Tensor[(?), float32], %y: Tensor[(?), float32]) {
  let %a = if (%c) { match_cast(%x, Tensor[(k), float32]) } else { %y };
  let %b = match_cast(%y, Tensor[(k), float32]);
  add(%a, %b)
}"""


@pytest.mark.parametrize("c", [True, False])
def test_an_if_value_forgets_its_branch_variables(c: bool) -> None:
    mod = check(MC_BRANCH)
    a = mod.functions["main"].body
    assert rr.astext(mod.type_of(a.var)) == "Tensor[(?), float32]"
    assert rr.astext(mod.type_of(a.value.true_branch)) == "Tensor[(k), float32]"
    assert rr.astext(mod.type_of(a.body.var)) == "Tensor[(k), float32]"  # k afresh
    # the branch's k is not the later one: both runners scope it to the branch
    x, y = np.ones(1, "float32"), np.arange(4, dtype="float32")
    out = _agree(MC_BRANCH, np.array(c), x, y)
    np.testing.assert_array_equal(out, (x if c else y) + y)


MC_MATCH = """def @main(%x: Tensor[(?), float32], %o: Option[Tensor[(?), float32]]) {
  let %a = match (%o) {
    Some(%y) => match_cast(%y, Tensor[(k), float32]),
    None => %x
  };
  let %b = match_cast(%x, Tensor[(k), float32]);
  add(%a, %b)
}"""


def test_a_match_value_forgets_its_clause_variables() -> None:
    mod = check(MC_MATCH)
    assert rr.astext(mod.type_of(mod.functions["main"].body.var)) == "Tensor[(?), float32]"
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(?), float32]"


def test_a_returned_closure_forgets_the_variables_of_its_maker() -> None:
    text = """def @mk(%x: Tensor[(?), float32]) {
  let %u = match_cast(%x, Tensor[(k), float32]);
  fn (%z: Tensor[(k), float32]) { add(%u, %z) }
}
def @main(%x: Tensor[(?), float32], %y: Tensor[(?), float32]) { @mk(%x)(%y) }"""
    mod = check(text)
    assert rr.astext(mod.global_types["mk"]) == ("fn (Tensor[(?), float32]) -> "
                                                 "fn (Tensor[(?), float32]) -> "
                                                 "Tensor[(?), float32]")
    inner = mod.functions["mk"].body.body
    assert rr.astext(mod.type_of(inner)) == \
        "fn (Tensor[(k), float32]) -> Tensor[(k), float32]"
    three = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(_agree(text, three, three), three * 2)
    assert _agree(text, three, np.ones(2, "float32")) is None


def test_a_let_value_does_not_end_the_match_cast_scope() -> None:
    mod = check("""def @main(%x: Tensor[(?), float32]) {
  let %a = (let %u = match_cast(%x, Tensor[(k), float32]); %u);
  let %b: Tensor[(k), float32] = add(%a, %a);
  %b
}""")
    assert rr.astext(mod.type_of(mod.functions["main"].body.var)) == "Tensor[(k), float32]"
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(?), float32]"


def test_erasure_waits_for_a_result_known_later() -> None:
    # @h is checked after @main: the call's type is known only then (T-ShapeCall's
    # deferred instance), and main's result is erased once it is
    mod = check("""def @main(%x: Tensor[(?), float32]) {
  let %u = match_cast(%x, Tensor[(k), float32]);
  let %v = @h(%u);
  %v
}
def @h(%y: Tensor[(n), float32]) { %y }""")
    assert rr.astext(mod.type_of(mod.functions["main"].body.body.var)) == \
        "Tensor[(k), float32]"  # deduction at the call inside k's scope is unchanged
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(?), float32]"
    assert rr.astext(mod.global_types["h"]) == \
        "fn (Tensor[(n), float32]) -> Tensor[(n), float32]"


@pytest.mark.parametrize("text", [
    # a global checked later: its unknown result type is not the caller's k
    """def @main(%x: Tensor[(?), float32], %c: bool) {
  let %u = match_cast(%x, Tensor[(k), float32]);
  if (%c) { %u } else { @h(%x) }
}
def @h(%x: Tensor[(?), float32]) { %x }""",
    # a recursive global: the recursive call's result is another activation's
    """def @h(%x: Tensor[(?), float32], %c: bool) {
  let %u = match_cast(%x, Tensor[(k), float32]);
  if (%c) { %u } else { @h(%u, False) }
}
def @main(%x: Tensor[(?), float32], %c: bool) { @h(%x, %c) }""",
    # a recursive closure
    """def @main(%x: Tensor[(?), float32], %c: bool) {
  let %h = fn (%z: Tensor[(?), float32], %d: bool) {
    let %u = match_cast(%z, Tensor[(k), float32]);
    if (%d) { %u } else { %h(%u, False) }
  };
  %h(%x, %c)
}"""])
def test_a_function_result_hole_does_not_take_the_callers_variables(text: str) -> None:
    mod = check(text)
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(?), float32]"
    if "h" in mod.global_types:
        assert rr.astext(mod.global_types["h"].ret_type) == "Tensor[(?), float32]"


def test_infer_expr_free_variables_bind_in_both_branches() -> None:
    x = Var("x", f32(N))
    ty, _ = infer_expr(If(Constant(np.array(True)), x, x))
    assert ty == f32(N)
