"""The one argument rule (spec/semantics.md 4.1, ``relay_ref.interpreter.args``): what
``rr.evaluate`` and ``relay run`` accept for each parameter type, and how they refuse."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.args import ArgumentError, convert_argument
from relay_ref.interpreter.values import ConstructorValue, RefValue
from relay_ref.ir.types import ANY, TensorType

ROOT = Path(__file__).resolve().parents[2]
OK = object()

# value x dtype -> OK (converted exactly) or words of the error
SCALARS = [
    (7, "int32", OK), (7, "int64", OK), (7, "uint8", OK), (7, "int8", OK),
    (7, "float32", OK), (7, "float64", OK), (7, "float16", OK), (7, "bool", "not a bool"),
    (2**40, "int32", "does not fit int32"), (2**40, "int64", OK),
    (-1, "uint8", "does not fit uint8"), (256, "uint8", "does not fit uint8"),
    (2**24 + 1, "float32", "not exactly representable as float32"),
    (2**24 + 1, "float64", OK), (2**2000, "float64", "not exactly representable"),
    (True, "bool", OK), (True, "int32", "only bool takes it"),
    (False, "float32", "only bool takes it"),
    (2.5, "float32", OK), (2.5, "float64", OK), (2.5, "float16", OK),
    (2.0, "int32", "no implicit truncation"), (2.5, "int64", "no implicit truncation"),
    (2.5, "bool", "not a bool"), (1e300, "float32", "overflows float32"),
    (float("inf"), "float32", OK),
    (np.int32(3), "int32", OK), (np.int64(3), "int32", "NumPy int64 scalar"),
    (np.float64(1.5), "float32", "NumPy float64 scalar"), (np.bool_(True), "bool", OK),
    (np.array(3, "int32"), "int32", OK), (np.array(3, "int64"), "int32", "dtype int64"),
    (np.array(3.0, "float64"), "float32", "no implicit casts"),
    (np.zeros(2, "int32"), "int32", "shape (2)"),
    ("3", "int32", "got a Python str"), (None, "float32", "got a Python NoneType"),
]


@pytest.mark.parametrize("value,dtype,expect", SCALARS,
                         ids=[f"{type(v).__name__}-{v!r}-{d}"[:60] for v, d, _ in SCALARS])
def test_scalar_rule(value, dtype, expect):
    ty = TensorType((), dtype)
    if expect is OK:
        out = convert_argument(value, ty)
        assert isinstance(out, np.ndarray) and out.dtype.name == dtype and out.shape == ()
        assert out == value or (np.isinf(out) and np.isinf(value))
    else:
        with pytest.raises(ArgumentError, match=re.escape(expect)):
            convert_argument(value, ty)


LISTS = [
    ([[1, 2], [3, 4]], (2, 2), "int64", OK), ([[1, 2], [3, 4]], (2, 2), "float32", OK),
    ([[1.5, 2], [3, 4]], (2, 2), "float32", OK), ([1.5, 2], (2,), "int32", "truncation"),
    ([[1, 2], [3]], (2, 2), "int32", "ragged"), ([[1, 2], 3], (2, 2), "int32", "ragged"),
    ([1, 2, 3], (2,), "int32", "list of shape (3)"), ([1, 2, 3], (ANY,), "int32", OK),
    ([2**31, 0], (2,), "int32", "does not fit int32"), ([True, False], (2,), "bool", OK),
    ([True, 1], (2,), "bool", "not a bool"), ([], (0,), "float32", OK),
    ([np.int32(1), 2], (2,), "int32", OK), ([np.int64(1), 2], (2,), "int32", "NumPy int64"),
    (np.ones((2, 2), "float32"), (2, 2), "float32", OK),
    (np.ones((2, 2), "float64"), (2, 2), "float32", "dtype float64"),
    (np.ones((2, 3), "float32"), (2, 2), "float32", "shape (2, 3)"),
    (np.ones((2, 3), "float32"), (2, ANY), "float32", OK),
]


@pytest.mark.parametrize("value,shape,dtype,expect", LISTS,
                         ids=[f"{i}-{d}" for i, (_, _, d, _) in enumerate(LISTS)])
def test_list_and_array_rule(value, shape, dtype, expect):
    ty = TensorType(shape, dtype)
    if expect is OK:
        out = convert_argument(value, ty)
        assert out.dtype.name == dtype and np.array_equal(out, np.asarray(value, dtype))
    else:
        with pytest.raises(ArgumentError, match=re.escape(expect)):
            convert_argument(value, ty)


def test_evaluate_converts_and_locates_violations_at_the_parameter():
    mod = rr.parse("def @main(%x: int32, %y: float64) { (%x, %y) }", "p.relay")
    x, y = rr.evaluate(mod, 3, 4)
    assert x.dtype.name == "int32" and y.dtype.name == "float64" and y == 4.0
    for args, words in [((2**40, 1.0), "argument %x of @main: 1099511627776 does not fit"),
                        ((1.5, 1.0), "argument %x of @main: the float 1.5 is not an int32"),
                        ((1, np.float32(1)), "argument %y of @main: expected a float64")]:
        with pytest.raises(rr.RelayRuntimeError) as info:
            rr.evaluate(mod, *args)
        first = info.value.diagnostics[0]
        assert words in first.message, first.message
        param = 1 if "%x" in words else 2
        assert first.span.source.name == "p.relay" and first.span.column == (11, 22)[param - 1]


FN_PARAM = "def @main(%f: fn (int32) -> int32) -> int32 { %f(3) }"


def test_function_parameter_checks_the_closure_type():
    mod = rr.parse(FN_PARAM, "f.relay")
    good = rr.evaluate(rr.parse_expr("fn (%x: int32) { add(%x, 1) }"))
    assert rr.evaluate(mod, good) == 4
    bad = rr.evaluate(rr.parse_expr("fn (%x: int32) { True }", "<arg>"))
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.evaluate(mod, bad)
    first = info.value.diagnostics[0]
    assert ("expected a function of type fn (int32) -> int32, got a function of type "
            "fn (int32) -> bool") in first.message
    assert (first.span.source.name, first.span.column) == ("f.relay", 11)
    assert any(n.span is not None and n.span.source.name == "<arg>" for n in first.notes)
    with pytest.raises(rr.RelayRuntimeError, match="got a Python function"):
        rr.evaluate(mod, lambda x: x)
    two = rr.evaluate(rr.parse_expr("fn (%x: int32, %y: int32) { %x }"))
    with pytest.raises(rr.RelayRuntimeError, match="expected a function of type"):
        rr.evaluate(mod, two)


def test_unannotated_closure_takes_the_parameter_type():
    mod = rr.parse(FN_PARAM)
    ident = rr.evaluate(rr.parse_expr("fn (%x) { %x }"), typecheck=False)
    assert rr.evaluate(mod, ident) == 3


def test_closure_captures_are_typed_by_their_values():
    mod = rr.parse(FN_PARAM)
    adds_k = rr.evaluate(rr.parse_expr("let %k = 5; fn (%x: int32) { add(%x, %k) }"))
    assert rr.evaluate(mod, adds_k) == 8
    adds_f = rr.evaluate(rr.parse_expr("let %k = 5f; fn (%x: int32) { %x }"))
    assert rr.evaluate(mod, adds_f) == 3  # an unused capture of another dtype is fine
    wrong = rr.evaluate(rr.parse_expr("let %k = 5f; fn (%x: float32) { add(%x, %k) }"))
    with pytest.raises(rr.RelayRuntimeError, match="expected a function of type"):
        rr.evaluate(mod, wrong)


def test_constructor_as_a_function_argument():
    mod = rr.infer_types(rr.parse(
        "def @main(%c: fn (int32, List[int32]) -> List[int32]) { @length(%c(1, Nil)) }\n"
        "def @opt() -> Option[int32] { None }"))
    assert rr.evaluate(mod, mod.constructors["Cons"]) == 1
    with pytest.raises(rr.RelayRuntimeError, match="got the constructor Some"):
        rr.evaluate(mod, mod.constructors["Some"])


def test_tuple_adt_and_ref_parameters_check_field_by_field():
    mod = rr.infer_types(rr.parse(
        "def @main(%t: (int64, float32), %xs: List[int32], %r: ref(int32)) {"
        " (%t.0, @length(%xs), ref_read(%r)) }\ndef @opt() -> Option[int32] { None }"))
    cons, nil = mod.constructors["Cons"], mod.constructors["Nil"]
    i32 = np.int32
    good = ConstructorValue(cons, (np.array(1, i32), ConstructorValue(nil)))
    t0, n, r = rr.evaluate(mod, (5, 0.5), good, RefValue(np.array(7, i32)))
    assert t0.dtype.name == "int64" and n == 1 and r == 7
    bad_list = ConstructorValue(cons, (np.array(1, i32), ConstructorValue(
        cons, (np.array(2, "int64"), ConstructorValue(nil)))))
    cases = [
        (((5,), good, RefValue(np.array(7, i32))), "expected a 2-tuple"),
        (((5, 2.5), bad_list, RefValue(np.array(7, i32))),
         "Cons field 1, Cons field 0: expected an int32 scalar"),
        (((5, 2.5), good, RefValue(np.array(7.0))), "the reference's contents"),
        (((5, 2.5), good, np.array(7, i32)), "expected a value of type ref(int32)"),
        (((1.5, 2.5), good, RefValue(np.array(7, i32))), "field 0: the float 1.5"),
        (((5, 2.5), ConstructorValue(mod.constructors["None"]), RefValue(np.array(7, i32))),
         "got a value of Option"),
    ]
    for args, words in cases:
        with pytest.raises(rr.RelayRuntimeError) as info:
            rr.evaluate(mod, *args)
        assert words in info.value.diagnostics[0].message, info.value.diagnostics[0].message


def test_long_list_argument_is_checked_in_linear_time():
    mod = rr.infer_types(rr.parse("def @main(%xs: List[int32]) { @length(%xs) }"))
    cons, nil = mod.constructors["Cons"], mod.constructors["Nil"]
    xs = ConstructorValue(nil)
    for i in range(50_000):
        xs = ConstructorValue(cons, (np.array(i, "int32"), xs))
    assert rr.evaluate(mod, xs) == 50_000


def test_unknown_types_take_literal_dtypes():
    mod = rr.parse("def @main(%x) { %x }")
    assert rr.evaluate(mod, 3, typecheck=False).dtype.name == "int32"
    assert rr.evaluate(mod, 2**40, typecheck=False).dtype.name == "int64"
    assert rr.evaluate(mod, 2.5, typecheck=False).dtype.name == "float32"
    assert rr.evaluate(mod, [True], typecheck=False).dtype.name == "bool"
    fn = rr.parse_expr("fn (%x: int64) { %x }")
    assert rr.evaluate(fn, 3).dtype.name == "int64"  # an expression's closure parameters
    with pytest.raises(rr.RelayRuntimeError, match="argument %x: the float"):
        rr.evaluate(fn, 3.5)


def test_entry_and_arity_errors_are_relay_errors():
    mod = rr.parse("def @main(%x: int32) { %x }")
    with pytest.raises(rr.RelayRuntimeError, match="no function @nope"):
        rr.evaluate(mod, 1, entry="nope")
    with pytest.raises(rr.RelayRuntimeError, match="takes 1 argument"):
        rr.evaluate(mod)


def relay_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_ref", "run", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                               "PYTHONPATH": str(ROOT)})


def test_cli_refuses_a_closure_of_the_wrong_type(tmp_path):
    prog = tmp_path / "f.relay"
    prog.write_text(FN_PARAM + "\n")
    out = relay_run(str(prog), "fn (%x: int32) { True }")
    assert out.returncode == 1, out.stderr
    assert "f.relay:1:11: error: argument %f of @main: expected a function of type" \
        in out.stderr
    assert "<argument 1>:1:18: note:" in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_cli_refuses_an_int32_literal_out_of_range(tmp_path):
    prog = tmp_path / "i.relay"
    prog.write_text("def @main(%x: int32) -> int32 { %x }\n")
    out = relay_run(str(prog), "1099511627776")
    assert out.returncode == 1, out.stderr
    assert "<argument 1>:1:1: error: argument 1 (%x): 1099511627776 does not fit int32" \
        in out.stderr
    assert out.stdout == ""
