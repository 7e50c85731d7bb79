"""Unification (spec/typing.md 6.1): holes, occurs check, Any, rigid type variables,
polymorphic instantiation, atomic failure, messages."""

from __future__ import annotations

import pytest

from relay_ref.ir.types import (
    ANY,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
    substitute,
)
from relay_ref.typecheck.unify import Unifier, UnifyError

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")
LIST = GlobalTypeVar("List")


def test_hole_binds_to_type_and_resolves_deeply() -> None:
    u = Unifier()
    h1, h2 = u.fresh(), u.fresh()
    u.unify(TupleType((h1, RefType(h2))), TupleType((F32, RefType(h1))))
    assert u.resolve(TupleType((h1, h2))) == TupleType((F32, F32))
    assert u.holes(TupleType((h1, h2))) == []


def test_hole_chains_are_followed() -> None:
    u = Unifier()
    holes = [u.fresh() for _ in range(50)]
    for a, b in zip(holes, holes[1:], strict=False):
        u.unify(a, b)
    u.unify(holes[-1], I32)
    assert all(u.resolve(h) == I32 for h in holes)


def test_on_bind_is_called_once_per_bound_hole() -> None:
    bound: list[int] = []
    u = Unifier(on_bind=bound.append)
    h = u.fresh()
    u.unify(h, F32)
    u.unify(h, F32)
    assert bound == [h.uid]


def test_dimension_mismatch_message() -> None:
    u = Unifier()
    with pytest.raises(UnifyError) as info:
        u.unify(TensorType((3,), "float32"), TensorType((4,), "float32"))
    assert info.value.reason == "dimension 0 differs (3 vs 4)"


@pytest.mark.parametrize(("a", "b", "reason"), [
    (TensorType((3,), "float32"), TensorType((3, 1), "float32"), "rank differs (1 vs 2)"),
    (F32, I32, "dtype differs (float32 vs int32)"),
    (TupleType((F32,)), TupleType((F32, F32)), "tuples have different sizes (1 vs 2)"),
    (TupleType((F32, F32)), TupleType((F32, I32)), "field 1: dtype differs"),
    (F32, TupleType(()), "a tensor is not a tuple"),
    (FuncType((F32,), F32), FuncType((F32, F32), F32), "different numbers of arguments"),
    (FuncType((F32,), F32), FuncType((F32,), I32), "return type: dtype differs"),
    (TypeCall(LIST, (F32,)), TypeCall(GlobalTypeVar("Option"), (F32,)), "different ADTs"),
    (RefType(F32), RefType(I32), "contents of the reference"),
])
def test_mismatch_reasons(a, b, reason) -> None:
    with pytest.raises(UnifyError) as info:
        Unifier().unify(a, b)
    assert reason in info.value.reason


def test_int32_int64_hint() -> None:
    with pytest.raises(UnifyError) as info:
        Unifier().unify(I32, TensorType((), "int64"))
    assert "1i64" in info.value.reason


def test_any_dimension_is_compatible_with_every_dimension() -> None:
    u = Unifier()
    u.unify(TensorType((ANY, 3), "float32"), TensorType((7, 3), "float32"))
    u.unify(TensorType((ANY, ANY), "float32"), TensorType((7, ANY), "float32"))
    with pytest.raises(UnifyError, match="dimension 1 differs"):
        u.unify(TensorType((ANY, 3), "float32"), TensorType((7, 4), "float32"))
    with pytest.raises(UnifyError, match="rank differs"):
        u.unify(TensorType((ANY,), "float32"), TensorType((7, 4), "float32"))


def test_occurs_check() -> None:
    u = Unifier()
    h = u.fresh()
    with pytest.raises(UnifyError, match="contain itself"):
        u.unify(h, TupleType((F32, h)))
    assert isinstance(u.find(h), IncompleteType)


def test_failed_unification_binds_nothing() -> None:
    u = Unifier()
    h1, h2 = u.fresh(), u.fresh()
    with pytest.raises(UnifyError):
        u.unify(TupleType((h1, h2, F32)), TupleType((I32, F32, I32)))
    assert isinstance(u.find(h1), IncompleteType)
    assert isinstance(u.find(h2), IncompleteType)


def test_type_variables_are_rigid() -> None:
    a, b = TypeVar("A"), TypeVar("B")
    u = Unifier()
    u.unify(a, a)
    with pytest.raises(UnifyError, match="distinct"):
        u.unify(a, b)
    with pytest.raises(UnifyError, match="type parameter A"):
        u.unify(a, F32)
    h = u.fresh()
    u.unify(h, a)
    assert u.resolve(h) == a


def test_polymorphic_function_unifies_by_instantiation() -> None:
    a = TypeVar("A")
    ident = FuncType((a,), a, (a,))
    u = Unifier()
    arg, ret = u.fresh(), u.fresh()
    u.unify(ident, FuncType((F32,), ret))
    assert u.resolve(ret) == F32
    u.unify(FuncType((arg,), I32), ident)
    assert u.resolve(arg) == I32


def test_two_polymorphic_functions_unify_after_renaming() -> None:
    a, b = TypeVar("A"), TypeVar("B")
    u = Unifier()
    u.unify(FuncType((a,), a, (a,)), FuncType((b,), b, (b,)))
    with pytest.raises(UnifyError):
        u.unify(FuncType((a,), a, (a,)), FuncType((b,), F32, (b,)))


def test_instantiate_with_explicit_arguments() -> None:
    a = TypeVar("A")
    fn = FuncType((TypeCall(LIST, (a,)),), a, (a,))
    inst = Unifier().instantiate(fn, (F32,))
    assert inst == FuncType((TypeCall(LIST, (F32,)),), F32)
    assert substitute(a, {a: I32}) == I32


def test_bare_adt_name_equals_nullary_type_call() -> None:
    nat = GlobalTypeVar("nat")
    Unifier().unify(nat, TypeCall(nat, ()))  # would raise UnifyError if they differed
    with pytest.raises(UnifyError):
        Unifier().unify(nat, TypeCall(GlobalTypeVar("other"), ()))
