"""infer_types / infer_expr: the result maps, rules the parser cannot exercise (built as IR),
error collection and robustness (spec/typing.md)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternVar,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.module import IRModule, TypeData
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from relay_ref.ir.visitor import post_order
from relay_ref.ops.registry import make_attrs
from relay_ref.typecheck.infer import TypeMap, infer_expr, infer_types

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")


def check(text: str) -> IRModule:
    return rr.infer_types(rr.parse(text))


def errors(text_or_mod: str | IRModule) -> list[str]:
    mod = rr.parse(text_or_mod) if isinstance(text_or_mod, str) else text_or_mod
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(mod)
    return [d.message for d in info.value.diagnostics]


def main_type(text: str) -> str:
    return rr.astext(check(text).global_types["main"])


def add(a, b) -> Call:
    return Call(Op("add"), (a, b), make_attrs("add", {}))


# -- results --------------------------------------------------------------------------------

def test_checked_types_cover_all_nodes_and_have_no_holes() -> None:
    mod = check("""
    def @main(%xs: List[int32], %t: (float32, bool)) {
      let %f = fn (%x) { %x + 1 };
      let %r = ref(%t.0);
      (@map(%f, %xs), ref_read(%r), if (%t.1) { 1f } else { 2f })
    }""")
    assert isinstance(mod.checked_types, TypeMap)
    for fn in mod.functions.values():
        for node in post_order(fn):
            assert node in mod.checked_types
            assert "_" not in rr.astext(mod.checked_types[node])


def test_global_and_op_uses_are_typed_per_node() -> None:
    # GlobalVar and Op compare by name; the map is keyed by identity, so each use keeps
    # its own entry.
    mod = check("""
    def @main(%a: float32, %b: Tensor[(2), int32]) {
      (add(%a, %a), add(%b, %b), @id(%a), @id(%b))
    }""")
    ops = [n for n in post_order(mod["main"]) if isinstance(n, Op)]
    assert len(ops) == 2
    assert {rr.astext(mod.checked_types[o]) for o in ops} == {
        "fn (float32, float32) -> float32",
        "fn (Tensor[(2), int32], Tensor[(2), int32]) -> Tensor[(2), int32]"}
    gvs = [n for n in post_order(mod["main"]) if isinstance(n, GlobalVar)]
    assert all(rr.astext(mod.checked_types[g]) == "fn [A](A) -> A" for g in gvs)
    assert mod.type_of(mod["main"].body).fields[2] == F32


def test_polymorphic_global_type_keeps_its_parameters() -> None:
    mod = check("def @pair[A, B](%a: A, %b: B) -> (A, B) { (%a, %b) }\n"
                "def @main() { @pair(1, 2f) }")
    ty = mod.global_types["pair"]
    assert isinstance(ty, FuncType) and len(ty.type_params) == 2
    assert rr.astext(mod.global_types["main"]) == "fn () -> (int32, float32)"


def test_polymorphic_function_as_value() -> None:
    assert main_type("def @main() { @id }") == "fn () -> fn [A](A) -> A"
    assert main_type("def @main() { let %f = @id; (%f(1), %f(2f)) }") == \
        "fn () -> (int32, float32)"


def test_let_bound_polymorphic_literal_used_at_two_types() -> None:
    assert main_type("""
    def @main() {
      let %twice = fn [A](%f: fn (A) -> A, %x: A) -> A { %f(%f(%x)) };
      (%twice(fn (%i: int32) { %i + 1 }, 0), %twice(fn (%g: float32) { %g }, 1f))
    }""") == "fn () -> (int32, float32)"


def test_mutually_recursive_globals_without_return_annotations() -> None:
    # The holes of @ping's and @pong's results are solved by the base case.
    assert main_type("""
    def @ping(%n: int32) { if (%n <= 0) { 0f } else { @pong(%n - 1) } }
    def @pong(%n: int32) { @ping(%n - 1) }
    def @main() { @pong(10) }""") == "fn () -> float32"


def test_unsolvable_recursive_global_is_an_error_not_a_crash() -> None:
    msgs = errors("def @loop(%n: int32) { @loop(%n) }\ndef @main() { @loop(1) }")
    assert any("cannot infer" in m for m in msgs)


def test_higher_order_inference_through_relations() -> None:
    # The lambda's parameter type comes from the list only after the call is checked.
    assert main_type("""
    def @main(%xs: List[Tensor[(3), float32]]) {
      @foldl(fn (%acc, %x) { add(%acc, nn.relu(%x)) }, zeros(shape=[3]), %xs)
    }""") == "fn (List[Tensor[(3), float32]]) -> Tensor[(3), float32]"


def test_deferred_projection_on_a_hole() -> None:
    assert main_type("""
    def @main(%t: (int32, float32)) {
      let %second = fn (%p) { %p.1 };
      %second(%t)
    }""") == "fn ((int32, float32)) -> float32"


# -- rules checked on IR (the parser rejects these programs earlier) --------------------------

def test_unbound_variable_is_a_t_var_error() -> None:
    mod = IRModule({"main": Function((), Var("ghost"))})
    assert any("[T-Var]" in m for m in errors(mod))


def test_missing_global_is_a_t_global_error() -> None:
    mod = IRModule({"main": Function((), Call(GlobalVar("nowhere"), ()))})
    assert any("no global function @nowhere" in m for m in errors(mod))


def test_unknown_operator() -> None:
    mod = IRModule({"main": Function((), Call(Op("no.such.op"), ()))})
    assert any("unknown operator no.such.op" in m for m in errors(mod))


def test_operator_arity() -> None:
    x = Var("x", F32)
    mod = IRModule({"main": Function((x,), Call(Op("add"), (x,)))})
    assert any("add takes 2 arguments, found 1" in m for m in errors(mod))


def test_operator_with_type_arguments() -> None:
    x = Var("x", F32)
    mod = IRModule({"main": Function((x,), Call(Op("negative"), (x,), None, (F32,)))})
    assert any("takes no type arguments" in m for m in errors(mod))


def test_op_call_without_attrs_uses_defaults() -> None:
    x = Var("x", TensorType((2, 3), "float32"))
    mod = infer_types(IRModule({"main": Function((x,), Call(Op("sum"), (x,)))}))
    assert mod.global_types["main"].ret_type == F32


def _box() -> TypeData:
    header, a = GlobalTypeVar("Box"), TypeVar("A")
    return TypeData(header, (a,), (Constructor("Full", (a,), header, 0),
                                   Constructor("Empty", (), header, 1)))


def test_constructor_arity_and_pattern_arity() -> None:
    box = _box()
    full, _ = box.constructors
    x = Var("x")
    bad_call = Call(full, ())
    bad_match = Match(Call(full, (Constant(np.array(1, "int32")),)),
                      (Clause(PatternConstructor(full, (PatternVar(x), PatternVar(Var("y")))),
                              x),), complete=False)
    mod = IRModule({"main": Function((), Tuple((bad_call, bad_match)))}, {"Box": box})
    msgs = errors(mod)
    assert any("constructor Full takes 1 argument, found 0" in m for m in msgs)
    assert any("constructor Full has 1 field, the pattern gives 2" in m for m in msgs)


def test_constructor_of_unknown_adt() -> None:
    ghost = Constructor("Ghost", (), GlobalTypeVar("Nowhere"), 0)
    mod = IRModule({"main": Function((), Call(ghost, ()))})
    assert any("which this module does not define" in m for m in errors(mod))


def test_kind_errors_in_annotations() -> None:
    box = _box()
    a = TypeVar("A")
    params = (Var("p", TypeCall(box.header, (F32, F32))),       # wrong arity
              Var("q", TensorType((2,), "real32")),              # unknown dtype
              Var("r", TensorType((-1,), "float32")),            # negative dimension
              Var("s", a),                                       # type var not in scope
              Var("t", GlobalTypeVar("Box")))                    # ADT without arguments
    mod = IRModule({"main": Function(params, Tuple(()))}, {"Box": box})
    msgs = errors(mod)
    assert any("[K-TypeCall]" in m and "takes 1 type argument, found 2" in m for m in msgs)
    assert any("unknown dtype 'real32'" in m for m in msgs)
    assert any("non-negative" in m for m in msgs)
    assert any("[K-Var]" in m for m in msgs)
    assert any("Box takes 1 type argument, found 0" in m for m in msgs)


def test_explicit_type_arguments_on_ir_call() -> None:
    a = TypeVar("A")
    v = Var("v", a)
    ident = Function((v,), v, a, (a,))
    arg = Var("x")
    call = Call(GlobalVar("ident"), (arg,), None, (TensorType((3,), "float32"),))
    mod = infer_types(IRModule({"ident": ident, "main": Function((arg,), call)}))
    assert rr.astext(mod.global_types["main"]) == \
        "fn (Tensor[(3), float32]) -> Tensor[(3), float32]"


# -- errors ------------------------------------------------------------------------------------

def test_errors_in_several_globals_are_all_reported() -> None:
    msgs = errors("""
    def @a(%x: int32) -> float32 { %x }
    def @b(%x: bool) { if (%x) { 1 } else { 2f } }
    def @c(%x: (int32,)) { %x.3 }
    def @main() { () }""")
    assert len(msgs) == 3
    assert [m.rsplit("[", 1)[1] for m in msgs] == ["T-Fn]", "T-If]", "T-Proj]"]


def test_errors_do_not_cascade_into_cannot_infer() -> None:
    msgs = errors("def @main(%x: float32) { let %y = %x(1); let %z = %y.0; %z }")
    assert len(msgs) == 1 and "cannot call %x" in msgs[0]


def test_error_notes_point_at_the_parameter() -> None:
    mod = rr.parse("def @f(%v: Tensor[(4), float32]) { %v }\n"
                   "def @main(%x: Tensor[(3), float32]) { @f(%x) }")
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(mod)
    diag = info.value.diagnostics[0]
    assert "cannot unify Tensor[(3), float32] with Tensor[(4), float32]: " \
           "dimension 0 differs (3 vs 4)" in diag.message
    assert "[T-App]" in diag.message
    assert (diag.span.line, diag.span.column) == (2, 39)
    notes = {n.message: (n.span.line, n.span.column) for n in diag.notes}
    assert notes["parameter %v is declared here"] == (1, 12)


def test_relation_error_names_the_operator_and_rule() -> None:
    msgs = errors("def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(4, 3), float32]) "
                  "{ nn.dense(%a, %b, units=5) }")
    assert len(msgs) == 1 and msgs[0].startswith("nn.dense") and "[T-App-Op]" in msgs[0]


@pytest.mark.parametrize("expr", [
    Call(Constant(np.array(1.0, "float32")), ()),
    Call(Op("add"), (Op("add"), Op("add"))),
    Let(Var("x"), Var("x"), Var("x")),
    TupleGetItem(Tuple(()), -1),
    Call(Function((), Tuple(())), (Tuple(()),)),
    Match(Tuple(()), ()),
    Constant(np.array(["a"])),
    Call(Op("nn.conv2d"), (Tuple(()), Tuple(())), make_attrs("nn.conv2d", {})),
    Call(Op("concatenate"), (Constant(np.zeros(3, "float32")),),
         make_attrs("concatenate", {})),
])
def test_ill_formed_ir_raises_only_relay_type_error(expr) -> None:
    mod = IRModule({"main": Function((), expr)})
    with pytest.raises(rr.RelayTypeError):
        infer_types(mod)


def test_garbage_objects_in_the_ir_are_reported_not_raised() -> None:
    mod = IRModule({"main": Function((), Tuple((object(),)))})  # type: ignore[arg-type]
    with pytest.raises(rr.RelayTypeError):
        infer_types(mod)
    with pytest.raises(rr.RelayTypeError):
        infer_types(IRModule({"main": Function((Var("x", "float32"),), Tuple(()))}))


# -- infer_expr --------------------------------------------------------------------------------

def test_infer_expr_with_free_variable_types_and_module_globals() -> None:
    mod = check("def @double(%x: float32) -> float32 { %x * 2f }\ndef @main() { () }")
    x = Var("x")
    expr = Tuple((Call(GlobalVar("double"), (x,)), x))
    ty, types = infer_expr(expr, mod, {x: F32})
    assert ty == TupleType((F32, F32))
    assert types[expr] == ty and types[x] == F32


def test_infer_expr_infers_unannotated_free_variables() -> None:
    x = Var("x")
    one = Constant(np.array(1, "int32"))
    ty, types = infer_expr(If(x, one, one))
    assert ty == I32 and types[x] == TensorType((), "bool")
    f = Var("f")
    ty, _ = infer_expr(Call(f, (Constant(np.array(1, "int32")),)), None,
                       {f: FuncType((I32,), F32)})
    assert ty == F32


def test_infer_expr_reports_unknown_types() -> None:
    with pytest.raises(rr.RelayTypeError, match="cannot infer"):
        infer_expr(Var("x"))


def test_infer_expr_without_module_knows_constructors_only_from_module() -> None:
    box = _box()
    full, _ = box.constructors
    ty, _ = infer_expr(Call(full, (Constant(np.array(1.0, "float32")),)),
                       IRModule(type_definitions={"Box": box}))
    assert ty == TypeCall(box.header, (F32,))


def test_infer_types_leaves_the_input_module_untouched() -> None:
    mod = rr.parse("def @main(%x) { if (%x) { 1f } else { 2f } }")
    out = rr.infer_types(mod)
    assert out is not mod and len(mod.checked_types) == 0
    assert rr.astext(out.global_types["main"]) == "fn (bool) -> float32"
    assert not any(isinstance(t, IncompleteType) for t in out.global_types.values())


def test_instantiation_sees_through_an_inferred_return_type() -> None:
    # TVM's prelude: @compose has no return annotation; its inferred return type
    # fn (A) -> C mentions its type parameters, which a use must instantiate (T-Global, T-App).
    mod = rr.infer_types(rr.parse("""
        def @id[A](%x: A) -> A { %x }
        def @compose[A, B, C](%f: fn(B) -> C, %g: fn(A) -> B) {
          fn (%x: A) -> C { %f(%g(%x)) }
        }
        def @twice[A](%f: fn(A) -> A, %b: bool) -> fn(A) -> A {
          if (%b) { @compose(%f, %f) } else { @id }
        }
    """, prelude=False))
    assert rr.astext(mod.global_types["twice"]) == "fn [A](fn (A) -> A, bool) -> fn (A) -> A"
