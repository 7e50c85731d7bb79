"""Soundness on generated well-typed programs (DESIGN section 5, layer 3; the theorems and
what is checked: spec/semantics.md section 7).

Progress: evaluating a well-typed program gives a value or gets stuck only in a state of
spec section 4's first table that the program can reach (E-Match-Fail at a ``match?``, an
operator failing on its values, a ``?`` dimension contradicted); never an ill-typed stuck
state, never an internal exception. Preservation: the value conforms to ``@main``'s
inferred type, closures against their function types, with V-Store on every cell reached."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import relay_ref as rr
from relay_ref.interpreter.values import Closure, ConstructorValue, RefValue
from relay_ref.ir.types import ANY, FuncType, RefType, TensorType, TupleType, TypeCall
from relay_ref.testing.sound_programs import sound_programs
from relay_ref.testing.soundness import (
    SoundnessViolation,
    check_soundness,
    conformance_problem,
    store_conforms,
    stuck_kind,
)
from relay_ref.testing.typed_strategies import box_adt, well_typed_modules

#: At least 500 programs in CI (the ``ci`` profile's default is 60), split between the two
#: modes of the generator; more under ``thorough``.
EXAMPLES = max(250, settings().max_examples // 2)


# Values of other extents flow through ``?`` to static types: the gradual casts must stop
# them, located (Stuck-Cast, spec/semantics.md 4.2), never return them unchecked; a cast
# may fail only in a program that sent such a value ("?-mismatch").
@settings(max_examples=EXAMPLES)
@given(sound_programs(mismatched_dims=True))
def test_well_typed_programs_return_conforming_values_or_get_stuck_as_allowed(case) -> None:
    check_soundness(case)


# Values through ``?`` keep their static extents: every cast must pass (a Stuck-Cast, or a
# broadcast failing at run time, is a violation here).
@settings(max_examples=EXAMPLES)
@given(sound_programs(mismatched_dims=False))
def test_well_typed_programs_without_mismatched_extents_pass_every_cast(case) -> None:
    check_soundness(case)


@given(well_typed_modules())
def test_well_typed_modules_evaluate_to_values_of_their_type(case) -> None:
    mod, _ = case
    typed = rr.infer_types(mod)
    ty = typed.global_types["main"].ret_type
    value = rr.evaluate(typed)
    assert store_conforms(value, ty, typed), (rr.astext(mod), value)


def test_conformance_rejects_wrong_values() -> None:
    box = box_adt()
    mod = rr.IRModule({}, {box.name: box})
    f32 = TensorType((2,), "float32")
    assert store_conforms(np.zeros(2, "float32"), f32, mod)
    assert store_conforms(np.zeros(5, "float32"), TensorType((ANY,), "float32"), mod)
    assert not store_conforms(np.zeros(2, "float64"), f32, mod)
    assert not store_conforms(np.zeros(3, "float32"), f32, mod)
    assert not store_conforms((np.zeros(2, "float32"),), TupleType((f32, f32)), mod)
    ctor = box.constructors[0]
    boxed_type = TypeCall(box.header, (f32,))
    assert store_conforms(ConstructorValue(ctor, (np.zeros(2, "float32"),)), boxed_type, mod)
    assert not store_conforms(ConstructorValue(ctor, (np.zeros(2, "int32"),)), boxed_type, mod)
    assert not store_conforms(RefValue(np.zeros(2, "int32")), RefType(f32), mod)


def _main_value(src: str) -> tuple[object, rr.IRModule]:
    mod = rr.infer_types(rr.parse(src))
    return rr.evaluate(mod), mod


def test_a_closure_conforms_only_to_its_function_type() -> None:
    value, mod = _main_value("def @main() { fn (%x: int32) { True } }")
    f32, i32 = TensorType((), "float32"), TensorType((), "int32")
    assert store_conforms(value, FuncType((i32,), TensorType((), "bool")), mod)
    assert not store_conforms(value, FuncType((f32,), f32), mod)  # V-Closure
    assert not store_conforms(value, FuncType((i32,), i32), mod)
    # inside a tuple, a Box and a cell as well
    box = box_adt()
    mod = rr.IRModule({}, {box.name: box})
    wrong = FuncType((f32,), f32)
    assert not store_conforms((value,), TupleType((wrong,)), mod)
    assert not store_conforms(ConstructorValue(box.constructors[0], (value,)),
                              TypeCall(box.header, (wrong,)), mod)
    assert not store_conforms(RefValue(value), RefType(wrong), mod)


def test_an_operator_conforms_only_where_its_relation_gives_the_type() -> None:
    """V-Op: ``negative`` is a ``fn (int32) -> int32``, not a ``fn (int32) -> float32``;
    ``add`` takes two operands of one dtype."""
    from relay_ref.ir.expr import Op

    mod = rr.IRModule({})
    f32, i32 = TensorType((), "float32"), TensorType((), "int32")
    assert store_conforms(Op("negative"), FuncType((i32,), i32), mod)
    assert store_conforms(Op("negative"), FuncType((TensorType((2,), "float32"),),
                                                   TensorType((ANY,), "float32")), mod)
    assert not store_conforms(Op("negative"), FuncType((i32,), f32), mod)
    assert not store_conforms((Op("add"),), TupleType((FuncType((i32, f32), f32),)), mod)
    assert not store_conforms(RefValue(Op("negative")), RefType(FuncType((f32,), i32)), mod)
    # it is value_mismatch's function case (A-Value's check), not a second walk
    from relay_ref.interpreter.args import value_mismatch

    wrong = FuncType((i32,), f32)
    assert value_mismatch((Op("negative"),), TupleType((wrong,)), mod) is None
    problem = value_mismatch((Op("negative"),), TupleType((wrong,)), mod, check_functions=True)
    assert problem is not None and "negative" in problem[0]


def test_a_cell_a_closure_captured_is_checked() -> None:
    """V-Closure's premise Σ ⊢ ρ(x) : Γ(x) reaches the cells a closure captured: a cell
    whose contents were replaced by a value of another type is found (V-Store)."""
    value, mod = _main_value(
        "def @main() { let %r = ref(1f); fn (%x: float32) { add(ref_read(%r), %x) } }")
    f32 = TensorType((), "float32")
    ty = FuncType((f32,), f32)
    assert store_conforms(value, ty, mod)
    assert isinstance(value, Closure)
    (cell,) = [v for v in value.env.values() if isinstance(v, RefValue)]
    cell.value = np.zeros(3, "int32")  # what no well-typed program can do
    problem = conformance_problem(value, ty, mod)
    assert problem is not None and "captured %r" in problem


CYCLIC = """
type Node { N(ref(Node)), End }
def @main() { let %r = ref(End); let %u = ref_write(%r, N(%r)); %r }
def @back(%x: ref(Node)) { %x }
def @wrong(%x: ref(int32)) { %x }
"""


@pytest.mark.timeout(60)
def test_a_cyclic_store_is_checked_and_passed_back_in() -> None:
    value, mod = _main_value(CYCLIC)
    assert isinstance(value, RefValue) and value.value.fields[0] is value
    assert store_conforms(value, mod.global_types["main"].ret_type, mod)
    # the host-argument check (A-Value) terminates on it, accepting and refusing
    assert rr.evaluate(mod, value, entry="back") is value
    with pytest.raises(rr.RelayRuntimeError, match="int32"):
        rr.evaluate(mod, value, entry="wrong")


def _stuck(src: str, typecheck: bool = True) -> rr.RelayRuntimeError:
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.evaluate(rr.parse(src), typecheck=typecheck)
    return info.value


def test_stuck_states_are_classified_by_rule() -> None:
    box = "type Box[A] { Full(A), Empty }\n"
    assert stuck_kind(_stuck(box + "def @main() { let %e: Box[float32] = Empty; "
                                   "match? (%e) { Full(%q) => %q } }")) == "match-fail"
    assert stuck_kind(_stuck("def @main() { divide(1, 0) }")) == "divide"
    assert stuck_kind(_stuck('def @main() { take(broadcast_to(1f, shape=[2]), 2, axis=0, '
                             'mode="fast") }')) == "take"
    assert stuck_kind(_stuck("def @main() -> Tensor[(2), float32] { let %q: "
                             "Tensor[(?), float32] = broadcast_to(0f, shape=[3]); %q }")) \
        == "cast"
    assert stuck_kind(_stuck(BAD_CAST)) == "cast"
    # operands whose run-time shapes do not broadcast (through ``?``)
    assert stuck_kind(_stuck("def @main() { let %h: Tensor[(?), float32] = broadcast_to(1f, "
                             "shape=[3]); add(%h, broadcast_to(1f, shape=[2])) }")) \
        == "broadcast"
    # ill-typed states (reachable only without the type check) are not allowed kinds
    assert stuck_kind(_stuck("def @main() { (1, 2).5 }", typecheck=False)) == "Stuck-Proj"
    assert stuck_kind(_stuck("def @main() { 1(2) }", typecheck=False)) == "Stuck-App"


def test_the_property_refuses_what_the_program_cannot_reach() -> None:
    """A failure the program's features do not allow (here: division by zero in a program
    the generator did not mark as dividing) is a violation, and so is an ill-typed program
    (a generator bug must fail loudly)."""
    from relay_ref.testing.sound_programs import SoundCase

    f32 = TensorType((), "int32")
    divides = rr.parse("def @main() { divide(1, 0) }")
    check_soundness(SoundCase(divides, f32, frozenset({"divide"})))
    with pytest.raises(SoundnessViolation, match="divide"):
        check_soundness(SoundCase(divides, f32, frozenset()))
    with pytest.raises(SoundnessViolation, match="ill-typed"):
        check_soundness(SoundCase(rr.parse("def @main() { add(1, 1f) }"), f32, frozenset()))


#: Fixed programs for the mutation tests: a value through ``?`` with the static extent (every
#: cast passes), and one of another extent inside a tuple (only the deep cast stops it).
GOOD_CAST = ("def @main() -> (Tensor[(2), float32],) { let %q: Tensor[(?), float32] = "
             "broadcast_to(0f, shape=[2]); (%q,) }")
BAD_CAST = ("def @main() -> (float32, (Tensor[(2), float32],)) { (0f, ((let %q: "
            "Tensor[(?), float32] = broadcast_to(0f, shape=[3]); %q),)) }")


def _case(src: str, features: set[str]):
    from relay_ref.testing.sound_programs import SoundCase

    mod = rr.parse(src)
    return SoundCase(mod, rr.infer_types(mod).global_types["main"].ret_type,
                     frozenset(features))


def test_the_property_catches_casts_that_always_fail(monkeypatch) -> None:
    """Mutation: the run-time cast check refusing every value. A program whose values keep
    their static extents then gets stuck by Stuck-Cast, which the property refuses (the cast
    is allowed only under "?-mismatch")."""
    import relay_ref.interpreter.casts as casts

    assert check_soundness(_case(GOOD_CAST, {"?"})).stuck is None
    assert check_soundness(_case(BAD_CAST, {"?", "?-mismatch"})).stuck == "cast"
    monkeypatch.setattr(casts, "value_mismatch",
                        lambda *args, **kwargs: ("mutated: always a mismatch", ()))
    with pytest.raises(SoundnessViolation, match=r"stuck where section 4 does not allow"):
        check_soundness(_case(GOOD_CAST, {"?"}))


def test_the_property_catches_casts_that_never_fail(monkeypatch) -> None:
    """Mutation: the run-time cast check accepting every value. The value of another extent
    is then returned inside the tuple, which preservation refuses."""
    import relay_ref.interpreter.casts as casts

    monkeypatch.setattr(casts, "value_mismatch", lambda *args, **kwargs: None)
    with pytest.raises(SoundnessViolation, match=r"preservation"):
        check_soundness(_case(BAD_CAST, {"?", "?-mismatch"}))
