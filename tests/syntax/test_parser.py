"""Parser: constructs, literals, scoping, desugarings, the entry points, error messages."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref import parse, parse_expr
from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.prelude import prelude_fallback
from relay_ref.syntax import parser
from relay_ref.syntax.parser import Program


def parse_type(text: str, **kwargs) -> T.Type:
    """A type as the public API resolves it: prelude names (``List``) included."""
    return parser.parse_type(text, fallback=prelude_fallback(), **kwargs)


def parse_program(text: str, **kwargs) -> Program:
    """A cell parsed with the prelude on, as the Jupyter kernel does (``relay_ref.repl``)."""
    return parser.parse_program(text, fallback=prelude_fallback(), **kwargs)


def lit(text: str) -> np.ndarray:
    e = parse_expr(text)
    assert isinstance(e, E.Constant)
    return e.data


@pytest.mark.parametrize("text,value,dtype", [
    ("1", 1, "int32"), ("-7", -7, "int32"), ("2147483648", 2147483648, "int64"),
    ("-2147483649", -2147483649, "int64"), ("5i64", 5, "int64"), ("-3i8", -3, "int8"),
    ("200u8", 200, "uint8"), ("1f", 1.0, "float32"), ("1.5f", 1.5, "float32"),
    ("1.5f32", 1.5, "float32"), ("0.5f16", 0.5, "float16"), ("2.5f64", 2.5, "float64"),
    ("1e-3f", np.float32(1e-3), "float32"), ("1.0E+1f", 10.0, "float32"),
    ("inff", np.inf, "float32"), ("-inff", -np.inf, "float32"), ("True", True, "bool"),
    ("False", False, "bool"), ("--10", 10, "int32"), ("---10", -10, "int32"),
    ("-42i", -42, "int32"),
])
def test_literals(text: str, value: object, dtype: str) -> None:
    data = lit(text)
    assert data.shape == () and str(data.dtype) == dtype and data.item() == value


@pytest.mark.parametrize("text,message", [
    ("1.5", "needs an 'f' suffix"), ("300i8", "does not fit int8"), ("1e50f", "float32"),
    ("1i7", "suffix"), ("1.5i32", "integer literal"), ("99999999999999999999", "int64"),
    ("2147483648i", "does not fit int32"),
])
def test_bad_literals(text: str, message: str) -> None:
    with pytest.raises(rr.ParseError, match=message):
        parse_expr(text)


def test_binary_operators_precedence_and_associativity() -> None:
    e = parse_expr("free_var %a: int32; free_var %b: int32; %a - %b - %a * %b == %a")
    assert isinstance(e, E.Call) and e.op == E.Op("equal")
    lhs = e.args[0]  # (a - b) - (a * b)
    assert lhs.op == E.Op("subtract") and lhs.args[0].op == E.Op("subtract")
    assert lhs.args[1].op == E.Op("multiply")
    from relay_ref.ops.registry import make_attrs

    assert lhs.attrs == make_attrs("subtract", {}) and lhs.attrs is not None


def test_subtraction_without_spaces() -> None:
    e = parse_expr("free_var %x: int32; %x-1")
    assert e.op == E.Op("subtract")


def test_let_seq_graph_desugarings() -> None:
    e = parse_expr("let %x = 1; %x; %0 = add(%x, %x); (%0, %0)")
    assert isinstance(e, E.Let) and e.var.name_hint == "x"
    seq = e.body  # S-Seq: `%x; rest` is a let of an anonymous variable
    assert isinstance(seq, E.Let) and seq.var.name_hint == "_" and seq.value is e.var
    tup = seq.body  # S-Graph: both fields are the very same node
    assert isinstance(tup, E.Tuple) and tup.fields[0] is tup.fields[1]


def test_scoping_and_shadowing() -> None:
    e = parse_expr("let %x = 1; let %x = (%x, 2); %x")
    assert e.body.value.fields[0] is e.var and e.body.body is e.body.var
    with pytest.raises(rr.ParseError, match="unbound local variable %y"):
        parse_expr("fn (%x) { %y }")
    with pytest.raises(rr.ParseError, match="unbound"):  # if branches are their own scopes
        parse_expr("if (True) { let %z = 1; %z } else { %z }")


def test_recursive_let_function() -> None:
    e = parse_expr("let %f = fn (%n: int32) { %f(%n) }; %f")
    assert e.value.body.op is e.var


def test_match_forms_and_patterns() -> None:
    e = parse_expr("free_var %xs: List[int32]; match? (%xs) { Cons(%h, Cons(_, %t)) => %h, "
                   "(%a, Nil) => { %a }, %other: List[int32] => 0, }")
    assert isinstance(e, E.Match) and not e.complete and len(e.clauses) == 3
    p0 = e.clauses[0].lhs
    assert isinstance(p0, E.PatternConstructor) and p0.constructor.name == "Cons"
    assert e.clauses[0].rhs is p0.patterns[0].var
    assert isinstance(e.clauses[1].lhs, E.PatternTuple)
    assert e.clauses[2].lhs.var.type_annotation is not None


def test_match_in_binding_position_13620() -> None:
    e = parse_expr("free_var %o: Option[int32]; %0 = match (%o) { Some(%v) => %v, None => 0 };"
                   " let %y = match (%o) { _ => 1 }; (%0, %y)")
    assert isinstance(e.value, E.Match)


def test_call_attrs_none_and_nested_lists_7003() -> None:
    e = parse_expr("free_var %x: Tensor[(1, 4), float32]; free_var %w: Tensor[(2, 4), float32];"
                   " nn.dense(%x, %w, units=None)")
    assert e.attrs.units is None
    e = parse_expr("free_var %x: Tensor[(1, 3, 8, 8), float32]; free_var %w: Tensor[(4, 3, 3, 3),"
                   " float32]; nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1],"
                   " data_layout=\"NCHW\", channels=4)")
    assert e.attrs.strides == (2, 2) and e.attrs.padding == (1, 1, 1, 1)
    assert e.attrs.channels == 4


def test_bare_decimal_attribute_is_a_float() -> None:
    # spec/syntax.md S-Attrs: accepted beyond TVM, which prints `alpha=0.1f`
    e = parse_expr("free_var %x: Tensor[(3), float32]; nn.leaky_relu(%x, alpha=0.1)")
    assert e.attrs.alpha == 0.1
    assert rr.alpha_equal(e, parse_expr(rr.astext(e)))
    with pytest.raises(rr.ParseError, match="does not fit int8"):
        parse_expr("free_var %x: Tensor[(3), float32]; nn.leaky_relu(%x, alpha=300i8)")


def test_let_in_argument_position_as_tvm_prints_it() -> None:
    # TVM's printer inlines a let used once: `add(let %a = 1f;\n%a, 2f)` (S-Call)
    e = parse_expr("add(let %a = 1f;\n%a, 2f)")
    assert isinstance(e, E.Call) and isinstance(e.args[0], E.Let)
    assert rr.alpha_equal(e, parse_expr("add((let %a = 1f; %a), 2f)"))


def test_function_attributes_and_type_args() -> None:
    e = parse_expr("fn [A](%x: A, Primitive=1, Compiler=\"dnnl\", Inline=True) -> A { %x }")
    assert e.attrs == (("Primitive", 1), ("Compiler", "dnnl"), ("Inline", True))
    assert e.params[0].type_annotation is e.type_params[0] is e.ret_type
    m = parse("def @id[A](%x: A) -> A { %x } def @main() { @id[int32](1) }")
    call = m["main"].body
    assert call.type_args == (T.TensorType((), "int32"),)


def test_tuples_projection_refs() -> None:
    e = parse_expr("((), (1,), (1, 2,), ((1, 2).1, 3).0)")
    assert [len(f.fields) for f in e.fields[:3]] == [0, 1, 2]
    assert isinstance(e.fields[3], E.TupleGetItem) and e.fields[3].index == 0
    e = parse_expr("let %r = ref(1); ref_write(%r, ref_read(%r))")
    assert isinstance(e.value, E.RefCreate) and isinstance(e.body, E.RefWrite)


def test_nullary_constructor_is_a_call() -> None:
    e = parse_expr("Nil")
    assert isinstance(e, E.Call) and e.op.name == "Nil" and e.args == ()
    e = parse_expr("Nil()")
    assert isinstance(e, E.Call) and isinstance(e.op, E.Constructor)


@pytest.mark.parametrize("text,expected", [
    ("int32", T.TensorType((), "int32")),
    ("Tensor[(1, ?, 3), float16]", T.TensorType((1, T.ANY, 3), "float16")),
    ("Tensor[(3), uint8]", T.TensorType((3,), "uint8")),
    ("Tensor[(), bool]", T.TensorType((), "bool")),
    ("()", T.TupleType(())),
    ("(int32,)", T.TupleType((T.TensorType((), "int32"),))),
    ("fn (int32) -> (int32, bool)", T.FuncType((T.TensorType((), "int32"),), T.TupleType(
        (T.TensorType((), "int32"), T.TensorType((), "bool"))))),
])
def test_types(text: str, expected: T.Type) -> None:
    assert parse_type(text) == expected


def test_polymorphic_and_ref_and_hole_types() -> None:
    ty = parse_type("fn [A](A, ref(A)) -> List[A]")
    assert isinstance(ty, T.FuncType) and ty.arg_types[0] is ty.type_params[0]
    assert isinstance(ty.arg_types[1], T.RefType) and isinstance(ty.ret_type, T.TypeCall)
    assert isinstance(parse_type("_"), T.IncompleteType)


def test_empty_type_arguments_as_tvm_prints_them() -> None:
    mod = parse("type U { MkU }\ndef @f(%u: U[]) -> U[] { %u }\ndef @g(%u: U) -> U { %u }")
    f, g = mod.functions["f"], mod.functions["g"]
    assert f.params[0].type_annotation == g.params[0].type_annotation
    assert isinstance(f.ret_type, T.TypeCall) and f.ret_type.args == ()
    with pytest.raises(rr.ParseError, match="unknown type 'V'"):
        parse("def @f(%u: V[]) { %u }")


def test_version_header_optional_and_checked() -> None:
    assert "main" in parse("def @main() { 1 }")
    assert "main" in parse('#[version = "0.0.5"]\ndef @main() { 1 }')
    with pytest.raises(rr.ParseError, match='version must be "0.0.5"') as info:
        parse('#[version = "0.1"]\ndef @main() { 1 }')
    assert info.value.span.line == 1 and info.value.span.column == 13


def test_forward_and_mutual_references() -> None:
    m = parse("def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }"
              "def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }"
              "def @main() { Box(@even(4)) } type Box { Box(bool) }")
    assert set(m.functions) == {"even", "odd", "main"} and "Box" in m.type_definitions


def test_prelude_closure_and_own_list() -> None:
    m = parse("def @main() { @length(Cons(1, Nil)) }")
    assert "length" in m.functions and "List" in m.type_definitions
    assert "map" not in m.functions  # only what is used, transitively
    own = parse("type List { Cons(int32, List), Nil } def @main() { Cons(1, Nil) }")
    assert own.type_definitions["List"].type_vars == ()
    with pytest.raises(rr.ParseError, match="unknown constructor"):
        parse("def @main() { Cons(1, Nil) }", prelude=False)


def test_base_module_accumulates() -> None:
    base = parse("type T { A, B(int32) } def @f() { B(1) }", prelude=False)
    m = parse("def @g() { (@f(), A) } def @f() { A }", prelude=False, base_module=base)
    assert set(m.functions) == {"f", "g"} and m["f"] is not base["f"]
    assert m.type_definitions["T"] is base.type_definitions["T"]


def test_parse_expr_scope_and_module() -> None:
    x = E.Var("x")
    e = parse_expr("%x + 1", scope={"x": x})
    assert e.args[0] is x
    mod = parse("def @f(%a: int32) { %a }", prelude=False)
    call = parse_expr("@f(1)", module=mod, prelude=False)
    assert call.op == E.GlobalVar("f")


def test_parse_program_bindings_and_expr() -> None:
    prog = parse_program("def @sq(%x: int32) { %x * %x }\nlet %a = @sq(3);\nlet %b = %a + 1;\n"
                         "@sq(%b)")
    assert isinstance(prog, Program) and "sq" in prog.module
    assert [v.name_hint for v, _ in prog.bindings] == ["a", "b"]
    assert prog.bindings[1][1].args[0] is prog.bindings[0][0]
    assert prog.expr.args[0] is prog.bindings[1][0]
    only = parse_program("let %c = 1;")
    assert only.expr is None and len(only.bindings) == 1
    prior = E.Var("prior")
    later = parse_program("%prior", scope={"prior": prior})
    assert later.expr is prior and later.bindings == ()


def test_metadata_round_trip_of_tensor_constants() -> None:
    data = np.arange(6, dtype="float32").reshape(2, 3)
    c = E.Constant(data)
    text = rr.astext(E.Tuple((c, c, E.Constant(np.array([True, False])))))
    assert "meta[relay.Constant][0]" in text and "#[metadata]" in text
    back = parse_expr(text)
    assert back.fields[0] is back.fields[1]
    np.testing.assert_array_equal(back.fields[0].data, data)
    assert back.fields[2].data.dtype == np.bool_


@pytest.mark.parametrize("text,message", [
    ("let %x = 1; %y", "unbound local variable %y"),
    ("nn.conv3x(1)", "unknown operator 'nn.conv3x'"),
    ("add(1, 2, stride=1)", "operator add has no attribute 'stride'"),
    ("Cons(1)", "constructor Cons expects 2 argument"),
    ("/* open", "unterminated comment"),
    ("fn (%x: ) { %x }", "expected a type after ':'"),
    ("let %x = ; %x", "expected an expression after '='"),
    ("match (1) { => 1 }", "expected a pattern"),
    ("(1, 2", "expected ')' or ','"),
    ("add(1, 2, axis=foo)", "expected an attribute value"),
    ("%0", "graph variable %0 is not defined"),
    ("meta[relay.Constant][0]", "cannot resolve meta"),
    ("Tensor", "unknown constructor"),
    ("fn (%x, %x) { 1 }", "declared twice"),
    ("add(1, axis=1, 2)", "positional arguments must come before"),
])
def test_error_messages(text: str, message: str) -> None:
    with pytest.raises(rr.ParseError) as info:
        parse_expr(text)
    assert message in info.value.message
    d = info.value.diagnostics[0]
    assert d.span is not None and d.span.line >= 1 and d.span.column >= 1
    assert "__ANON" not in info.value.render() and "LPAR" not in info.value.render()


def test_error_rendering_points_at_the_source() -> None:
    with pytest.raises(rr.ParseError) as info:
        parse("def @main(%x: int32) {\n  %x + %y\n}", "prog.relay")
    rendered = info.value.render()
    assert rendered.splitlines()[0] == "prog.relay:2:8: error: unbound local variable %y"
    assert "  %x + %y" in rendered and "^^" in rendered


def test_a_leading_byte_order_mark_is_ignored():
    import relay_ref as rr

    mod = rr.parse("\ufeff#[version = \"0.0.5\"]\ndef @main() -> int32 { 1 }\n")
    assert "main" in mod.functions
    with pytest.raises(rr.ParseError) as info:
        rr.parse("\ufeffdef @main() { %y }")
    assert (info.value.span.line, info.value.span.column) == (1, 15)
