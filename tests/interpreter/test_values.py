"""Values and their printing in Relay syntax (relay_ref.interpreter.values)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.values import (
    Closure,
    ConstructorValue,
    RecClosure,
    RefValue,
    value_to_text,
    values_equal,
)
from relay_ref.ir.expr import Constructor, Function, Op, Var
from relay_ref.ir.types import GlobalTypeVar, TypeCall, TypeVar, scalar_type

A = TypeVar("A")
LIST = GlobalTypeVar("List")
CONS = Constructor("Cons", (A, TypeCall(LIST, (A,))), LIST, 0)
NIL = Constructor("Nil", (), LIST, 1)


def py_list(*items) -> ConstructorValue:
    out = ConstructorValue(NIL, ())
    for item in reversed(items):
        out = ConstructorValue(CONS, (item, out))
    return out


@pytest.mark.parametrize(("value", "text"), [
    (np.array(1, "int32"), "1"),
    (np.array(-7, "int32"), "-7"),
    (np.array(3, "int64"), "3i64"),
    (np.array(2, "uint8"), "2u8"),
    (np.array(2.5, "float32"), "2.5f"),
    (np.array(0.1, "float32"), "0.1f"),
    (np.array(1.0, "float32"), "1f"),
    (np.array(0.5, "float64"), "0.5f64"),
    (np.array(1.5, "float16"), "1.5f16"),
    (np.array(True), "True"),
    (np.array(False), "False"),
])
def test_scalars_print_as_literals(value, text):
    assert value_to_text(value) == text


def test_tensors_print_nested():
    assert value_to_text(np.array([1, 2, 3], "int32")) == "[1, 2, 3]"
    assert " ".join(value_to_text(np.array([[1, 2], [3, 4]], "int32")).split()) == \
        "[[1, 2], [3, 4]]"
    assert value_to_text(np.array([0.5, 1], "float32")) == "[0.5f, 1f]"
    assert value_to_text(np.zeros((0, 3), "float32")) == "Tensor[(0, 3), float32]([])"
    big = value_to_text(np.arange(5000, dtype="int32"))
    assert "..." in big and len(big) < 200


def test_tuples_and_adts():
    one = np.array(1, "int32")
    assert value_to_text(()) == "()"
    assert value_to_text((one,)) == "(1,)"
    assert value_to_text((one, (np.array(True), ()))) == "(1, (True, ()))"
    assert value_to_text(py_list(one, np.array(2, "int32"))) == "Cons(1, Cons(2, Nil))"
    assert value_to_text(py_list((one, one))) == "Cons((1, 1), Nil)"


def test_functions_and_refs():
    x = Var("x", scalar_type("int32"))
    fn = Function((x,), x, scalar_type("int32"))
    assert value_to_text(Closure({}, fn)) == "<closure fn (%x: int32) -> int32>"
    assert value_to_text(Closure({}, fn, "f")) == "<closure @f fn (%x: int32) -> int32>"
    f = Var("f")
    assert value_to_text(RecClosure(Closure({}, fn), f)) == \
        "<closure %f = fn (%x: int32) -> int32>"
    assert value_to_text(CONS) == "<constructor Cons>"
    assert value_to_text(Op("add")) == "<operator add>"
    cell = RefValue(np.array(1, "int32"))
    assert value_to_text(cell) == "ref(1)"
    cell.value = (cell, np.array(2, "int32"))  # a cycle through the store
    assert value_to_text(cell) == "ref((ref(...), 2))"


def test_long_list_prints_and_compares_without_recursion():
    n = 20_000  # far beyond the default recursion limit
    xs = py_list(*[np.array(i, "int32") for i in range(n)])
    text = value_to_text(xs)
    assert text.startswith("Cons(0, Cons(1, ") and text.endswith("Nil" + ")" * n)
    ys = py_list(*[np.array(i, "int32") for i in range(n)])
    assert values_equal(xs, ys) and xs == ys


def test_values_equal():
    one, one64 = np.array(1, "int32"), np.array(1, "int64")
    assert values_equal((one, py_list(one)), (np.array(1, "int32"), py_list(one)))
    assert not values_equal(one, one64)
    assert not values_equal(py_list(one), py_list())
    assert not values_equal(np.array([1, 2], "int32"), np.array([1, 2, 3], "int32"))
    cell = RefValue(one)
    assert values_equal(cell, cell) and not values_equal(cell, RefValue(one))


def test_public_names():
    assert rr.ConstructorValue is ConstructorValue
    assert rr.Closure is Closure and rr.RecClosure is RecClosure and rr.RefValue is RefValue
