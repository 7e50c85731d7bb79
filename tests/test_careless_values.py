"""Issue 22 (second careless-user round): deep values and types through rr.compile, unsupported
metadata arrays refused where they are referenced, gradient(...) of an open expression located,
and ``@main`` accepted as an entry name wherever ``main`` is.

Each class is tested on several inputs: a nested tuple returned by compiled code at several
depths and shapes, each unsupported NumPy element kind, each public entry point."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import FuncType, RefType, TensorType, TupleType, is_complete
from relay_ref.testing.check import values_equal


def _nested(depth: int, leaf: str, width: int) -> str:
    """A tuple ``depth`` deep whose every level has ``width`` fields, the first one nested."""
    text = leaf
    for _ in range(depth):
        rest = f", {leaf}" * (width - 1)
        text = f"({text}{rest},)" if width == 1 else f"({text}{rest})"
    return text


@pytest.mark.parametrize(("depth", "width"), [(600, 1), (3000, 1), (1500, 2)])
def test_compiled_deep_tuples_equal_the_interpreter(depth: int, width: int) -> None:
    mod = rr.parse(f"def @main(%x: float32) {{ {_nested(depth, '%x', width)} }}")
    compiled = rr.compile(mod)(np.float32(2))
    assert values_equal(compiled, rr.evaluate(mod, np.float32(2)))
    inner = compiled
    for _ in range(depth):
        assert type(inner) is tuple and len(inner) == width
        inner = inner[0]
    assert float(inner) == 2.0


def test_compiled_deep_tuple_inside_adt_values_and_refs() -> None:
    mod = rr.parse("def @main(%x: float32) { let %r = ref(" + _nested(2000, "%x", 1)
                   + "); Cons(ref_read(%r), Nil) }")
    assert values_equal(rr.compile(mod)(np.float32(1)), rr.evaluate(mod, np.float32(1)))


def _deep_type(depth: int) -> object:
    t: object = TensorType((2, 3), "float32")
    for i in range(depth):
        t = (TupleType((t,)), FuncType((TensorType((), "int32"),), t), RefType(t))[i % 3]
    return t


def test_deep_types_print_and_walk_without_recursion() -> None:
    t = _deep_type(9000)
    text = type_to_text(t)
    assert text.count("ref(") == 3000 and text.count("fn (int32) -> ") == 3000
    assert text.count("Tensor[(2, 3), float32]") == 1 and text.count(",)") == 3000
    assert is_complete(t)


@pytest.mark.parametrize("array", [np.array([1 + 2j]), np.array(["a"]),
                                   np.array([object()], dtype=object),
                                   np.array(["2020-01-01"], dtype="datetime64[D]"),
                                   np.array([1], dtype="timedelta64[s]")],
                         ids=["complex", "str", "object", "datetime", "timedelta"])
def test_metadata_arrays_without_a_relay_dtype_are_refused_where_referenced(array) -> None:
    with pytest.raises(rr.ParseError) as err:
        rr.parse("def @main() {\n  (1f, meta[relay.Constant][0])\n}",
                 metadata={"relay.Constant": [array]})
    diag = err.value.diagnostics[0]
    assert "Relay has no data type" in diag.message and str(array.dtype) in diag.message
    assert (diag.span.line, diag.span.column) == (2, 8)


@pytest.mark.parametrize("array", [np.array([1.5], "float16"), np.array([True]),
                                   np.array([7], "uint16"), np.array(3, "int64")])
def test_metadata_arrays_of_relay_dtypes_still_work(array) -> None:
    mod = rr.parse("def @main() { meta[relay.Constant][0] }",
                   metadata={"relay.Constant": [array]})
    np.testing.assert_array_equal(rr.evaluate(mod), array)
    assert values_equal(rr.compile(mod)(), rr.evaluate(mod))


@pytest.mark.parametrize("text", [
    "free_var %y: float32;\ngradient(fn (%x: float32) { %x * %y })(3f)",
    "free_var %y: float32;\nlet %g = gradient(fn (%x: float32) { %x * %y });\n%g(1f)",
    "free_var %w: Tensor[(2), float32];\n(1f, gradient(fn (%x: Tensor[(2), float32]) { %x * %w }))",
])
def test_gradient_of_an_open_expression_is_located_at_the_gradient_call(text: str) -> None:
    expr = rr.parse_expr(text)
    with pytest.raises(rr.RelayError) as err:
        rr.evaluate(expr)
    diag = err.value.diagnostics[0]
    assert "free variables (%" in diag.message and "[AD-Grad-Op]" in diag.message
    assert diag.span is not None and diag.span.line == text.count("\n", 0,
                                                                 text.index("gradient")) + 1
    assert any("is free here" in n.message and n.span is not None for n in diag.notes)


ENTRY = rr.parse("""
def @helper(%x: float32) { %x * 2f }
def @main(%x: float32) { @helper(%x) + 1f }
""")


@pytest.mark.parametrize("entry", ["main", "@main", "helper", "@helper"])
def test_entry_may_be_written_with_or_without_the_at_sign(entry: str) -> None:
    want = 5.0 if entry.endswith("main") else 4.0
    assert float(rr.evaluate(ENTRY, np.float32(2), entry=entry)) == want
    assert float(rr.compile(ENTRY, entry=entry)(np.float32(2))) == want
    grad = rr.gradient(ENTRY, entry=entry)
    assert float(rr.evaluate(grad, np.float32(2), entry=entry)[1][0]) == 2.0


def test_an_unknown_entry_is_still_an_error_with_either_spelling() -> None:
    for entry in ("mian", "@mian"):
        with pytest.raises(rr.RelayError, match="no function @mian; did you mean @main"):
            rr.evaluate(ENTRY, np.float32(2), entry=entry)
        with pytest.raises(rr.RelayError, match="no function @mian; did you mean @main"):
            rr.compile(ENTRY, entry=entry)
    with pytest.raises(rr.RelayError, match="no function @helpr; did you mean @helper"):
        rr.compile(ENTRY, {"x": np.float32(1)}, entry="helpr")


@pytest.mark.parametrize("depth", [1000, 4000])
def test_compiled_deep_tuple_arguments_equal_the_interpreter(depth: int) -> None:
    mod = rr.parse(f"def @main(%x: {_nested(depth, 'float32', 1)}) {{ %x }}")
    value: object = np.float32(3)
    for _ in range(depth):
        value = (value,)
    assert values_equal(rr.compile(mod)(value), rr.evaluate(mod, value))
