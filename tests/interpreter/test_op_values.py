"""Operators as values (spec/typing.md 3.10 T-Op, spec/semantics.md 3.10 E-Op): checked with
their relation-constrained type, evaluated as function values with default attributes."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.driver import evaluate


def test_a_let_bound_operator_is_called_through_its_variable():
    mod = rr.parse("def @main(%a: Tensor[(2), float32]) { let %f = add; %f(%a, 1f) }")
    value, events = evaluate(mod, np.array([1.5, -2], "float32"), trace=True)
    np.testing.assert_array_equal(value, np.array([2.5, -1], "float32"))
    rules = [e.rule for e in events]
    assert "E-Op" in rules and "E-App-Op" in rules
    assert rr.astext(rr.infer_types(mod).global_types["main"]) == \
        "fn (Tensor[(2), float32]) -> Tensor[(2), float32]"


def test_an_operator_passed_to_a_higher_order_function():
    value = rr.evaluate(rr.parse(
        "def @main(%l: List[Tensor[(3), float32]]) { @map(nn.relu, %l) }"),
        _list([np.array([-1, 0, 2], "float32"), np.array([3, -4, 5], "float32")]))
    got = _unlist(value)
    np.testing.assert_array_equal(got[0], [0, 0, 2])
    np.testing.assert_array_equal(got[1], [3, 0, 5])


def test_each_use_of_an_operator_is_instantiated_afresh():
    # Two uses of `add`, one at float32 and one at int32 (T-Op instantiates per use) ...
    mod = rr.parse("def @main() { let %f = add; let %g = add; (%f(1f, 2f), %g(1, 2)) }")
    assert tuple(rr.evaluate(mod)) == (3.0, 3)
    # ... and so is each use of one let-bound operator (T-Let-Op, as TVM does) ...
    mod = rr.parse("def @main() { let %f = add; (%f(1f, 2f), %f(1, 2)) }")
    assert tuple(rr.evaluate(mod)) == (3.0, 3)
    # ... but a let-bound fn is monomorphic (no let-generalisation).
    with pytest.raises(rr.RelayTypeError, match=r"int32.*float32|float32.*int32"):
        rr.infer_types(rr.parse("def @main() { let %f = fn (%a, %b) { add(%a, %b) }; "
                                "(%f(1f, 2f), %f(1, 2)) }"))


def test_the_relation_of_an_operator_value_still_checks_its_arguments():
    with pytest.raises(rr.RelayTypeError) as err:
        rr.infer_types(rr.parse("def @main() { let %f = add; %f(1f, 2) }"))
    assert "dtypes differ" in str(err.value) and "[T-App-Op]" in str(err.value)


def test_operators_without_attribute_defaults_stay_call_only():
    with pytest.raises(rr.RelayTypeError) as err:
        rr.infer_types(rr.parse("def @main() { let %f = reshape; %f }"))
    message = str(err.value)
    assert "reshape" in message and "only be called" in message and "[T-Op]" in message
    assert "1:24" in message  # located at the operator


def test_an_operator_value_whose_types_are_never_fixed_is_reported():
    with pytest.raises(rr.RelayTypeError, match=r"operator add used as a value.*\[T-Op\]"):
        rr.infer_types(rr.parse("def @main() { add }"))


def test_an_annotated_function_type_fixes_an_operator_value():
    mod = rr.parse("def @main() -> fn (Tensor[(2), int32]) -> Tensor[(2), int32] { negative }")
    checked = rr.infer_types(mod)
    assert rr.astext(checked.global_types["main"]).startswith("fn () -> fn (Tensor[(2), int32])")
    f = rr.evaluate(mod)
    apply = rr.parse("def @main(%f: fn (Tensor[(2), int32]) -> Tensor[(2), int32],"
                     " %x: Tensor[(2), int32]) { %f(%x) }")
    np.testing.assert_array_equal(rr.evaluate(apply, f, np.array([1, -2], "int32")), [-1, 2])


def _list(items):
    from relay_ref.interpreter.values import ConstructorValue
    from relay_ref.prelude import load_prelude
    adt = load_prelude().type_definitions["List"]
    nil, cons = ({c.name: c for c in adt.constructors}[n] for n in ("Nil", "Cons"))
    out = ConstructorValue(nil, ())
    for item in reversed(items):
        out = ConstructorValue(cons, (item, out))
    return out


def _unlist(value):
    out = []
    while value.fields:
        out.append(value.fields[0])
        value = value.fields[1]
    return out
