"""Soundness on generated well-typed programs (DESIGN section 5, layer 3).

Progress: evaluating a well-typed program does not get stuck (no ``RelayError`` of any kind,
no internal exception). Preservation: the value inhabits the inferred type."""

from __future__ import annotations

import numpy as np
from hypothesis import given

import relay_ref as rr
from relay_ref.interpreter.values import ConstructorValue
from relay_ref.ir.types import ANY, TensorType, TupleType, TypeCall
from relay_ref.testing.soundness import value_conforms
from relay_ref.testing.typed_strategies import box_adt, well_typed_modules


@given(well_typed_modules())
def test_well_typed_programs_evaluate_to_values_of_their_type(case) -> None:
    mod, _ = case
    typed = rr.infer_types(mod)
    ty = typed.global_types["main"].ret_type
    value = rr.evaluate(typed)
    assert value_conforms(value, ty, typed), (rr.astext(mod), value)


def test_conformance_rejects_wrong_values() -> None:
    box = box_adt()
    mod = rr.IRModule({}, {box.name: box})
    f32 = TensorType((2,), "float32")
    assert value_conforms(np.zeros(2, "float32"), f32, mod)
    assert value_conforms(np.zeros(5, "float32"), TensorType((ANY,), "float32"), mod)
    assert not value_conforms(np.zeros(2, "float64"), f32, mod)
    assert not value_conforms(np.zeros(3, "float32"), f32, mod)
    assert not value_conforms((np.zeros(2, "float32"),), TupleType((f32, f32)), mod)
    ctor = box.constructors[0]
    boxed_type = TypeCall(box.header, (f32,))
    fields = tuple(np.zeros(2, "float32") for _ in ctor.inputs)
    assert value_conforms(ConstructorValue(ctor, fields), boxed_type, mod)
    wrong = tuple(np.zeros(2, "int32") for _ in ctor.inputs)
    if ctor.inputs:
        assert not value_conforms(ConstructorValue(ctor, wrong), boxed_type, mod)
