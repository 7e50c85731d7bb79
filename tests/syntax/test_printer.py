"""Printer details (P-*): TVM's conventions and canonical forms."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref import parse, parse_expr
from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.syntax.printer import astext, scalar_text


@pytest.mark.parametrize("value,dtype,text", [
    (1, "int32", "1"), (-3, "int32", "-3"), (1, "int64", "1i64"), (7, "int8", "7i8"),
    (1.0, "float32", "1f"), (0.1, "float32", "0.1f"), (1.0, "float16", "1f16"),
    (0.1, "float64", "0.1f64"), (np.inf, "float32", "inff"), (-np.inf, "float64", "-inff64"),
    (True, "bool", "True"), (1e-5, "float32", "1e-05f"),
])
def test_scalar_literals(value: object, dtype: str, text: str) -> None:
    data = np.array(value, dtype=dtype)
    assert scalar_text(data) == text
    back = parse_expr(text).data
    assert back.dtype == data.dtype and back.item() == data.item()


def test_module_layout() -> None:
    mod = parse("type Box[A] { Box(A) } def @main(%x: int32) -> Box[int32] { Box(%x) }",
                prelude=False)
    assert astext(mod) == (
        '#[version = "0.0.5"]\n'
        "type Box[A] {\n  Box(A),\n}\n\n"
        "def @main(%x: int32) -> Box[int32] {\n  Box(%x)\n}")


def test_shared_nodes_become_graph_bindings_and_lets_stay_flat() -> None:
    x = E.Var("x", T.TensorType((), "float32"))
    from relay_ref.ops.registry import make_attrs

    shared = E.Call(E.Op("add"), (x, x), make_attrs("add", {}))
    y = E.Var("y")
    body = E.Let(y, shared, E.Tuple((shared, y)))
    text = astext(E.Function((x,), body))
    assert text == ("fn (%x: float32) {\n  %0 = add(%x, %x);\n  let %y = %0;\n  (%0, %y)\n}")
    again = parse_expr(text)
    assert again.body.value is again.body.body.fields[0]


def test_match_arms_braced_with_trailing_comma_and_ops_as_calls() -> None:
    text = astext(parse_expr("free_var %o: Option[int32]; match (%o) { Some(%v) => %v + 1,"
                             " None => 0 }"))
    assert text == ("free_var %o: Option[int32];\nmatch (%o) {\n  Some(%v) => {\n"
                    "    add(%v, 1)\n  },\n  None => {\n    0\n  },\n}")


def test_call_attrs_non_default_in_schema_order() -> None:
    e = parse_expr("free_var %x: Tensor[(1, 3, 8, 8), float32]; free_var %w: Tensor[(4, 3, 3, 3),"
                   " float32]; nn.conv2d(%x, %w, channels=4, padding=[1, 1], strides=[1, 1])")
    assert astext(e).endswith("nn.conv2d(%x, %w, padding=[1, 1], channels=4)")


def test_duplicate_names_are_renamed() -> None:
    a, b = E.Var("x"), E.Var("x")
    e = E.Let(a, E.Constant(np.array(1, "int32")), E.Let(b, E.Tuple(()), E.Tuple((a, b))))
    text = astext(e)
    assert "let %x = 1;" in text and "let %x1 = ();" in text and "(%x, %x1)" in text
    assert rr.alpha_equal(parse_expr(text), e)


def test_one_tuple_projection_and_refs() -> None:
    e = parse_expr("((1,).0, ((1, 2).1, 3).0, ref_read(ref(1)))")
    assert astext(e) == "((1,).0, ((1, 2).1, 3).0, ref_read(ref(1)))"


def test_tensor_constants_go_to_metadata() -> None:
    text = astext(E.Constant(np.zeros((2, 2), "float32")))
    assert text.startswith("meta[relay.Constant][0]\n#[metadata]\n{")
    assert '"b64ndarrays"' in text


def test_show_types_uses_checked_types() -> None:
    mod = parse("def @main(%x: int32) { %x + 1 }", prelude=False)
    body = mod["main"].body
    typed = mod.with_types({body: T.TensorType((), "int32")}, {})
    assert "add(%x, 1) /* ty=int32 */" in astext(typed, show_types=True)
    assert "/*" not in astext(typed)


def test_omit_prelude() -> None:
    mod = parse("def @main() { @length(Cons(1, Nil)) }")
    assert "def @length" in astext(mod)
    short = rr.astext(mod, omit_prelude=True)
    assert "def @length" not in short and "type List" not in short
    # The printer does not know the prelude: the public flag hands it the module to omit.
    from relay_ref.prelude import load_prelude

    assert astext(mod, omit=load_prelude()) == short
    own = parse("def @length(%x: int32) { %x } def @main() { @length(1) }")
    assert "def @length" in astext(own, omit=load_prelude())  # same name, not the object
    assert rr.alpha_equal(parse(short), mod)


def test_types_print_in_tvm_form() -> None:
    assert astext(T.FuncType((T.TensorType((1, T.ANY), "float32"),), T.TupleType(()))) == \
        "fn (Tensor[(1, ?), float32]) -> ()"
