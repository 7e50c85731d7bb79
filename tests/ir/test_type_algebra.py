"""The one type algebra (relay_ref.ir.types): substitution, free type variables, holes."""

from __future__ import annotations

from relay_ref.ir.equal import alpha_equal
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
    free_type_vars,
    has_hole,
    is_complete,
    substitute,
)

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")
LIST = GlobalTypeVar("List")


def test_substitute_replaces_free_variables_everywhere() -> None:
    a, b = TypeVar("A"), TypeVar("B")
    ty = TupleType((a, RefType(b), TypeCall(LIST, (a,)), FuncType((a,), b)))
    out = substitute(ty, {a: F32, b: I32})
    assert out == TupleType((F32, RefType(I32), TypeCall(LIST, (F32,)), FuncType((F32,), I32)))


def test_substitute_respects_a_function_types_own_binders() -> None:
    a, b = TypeVar("A"), TypeVar("B")
    poly = FuncType((a,), b, (a,))
    out = substitute(TupleType((a, poly)), {a: F32, b: I32})
    # the outer A is free (replaced); inside ``fn [A]`` A is bound (kept), B is free
    assert out == TupleType((F32, FuncType((a,), I32, (a,))))


def test_substitute_avoids_capture_by_renaming_the_binder() -> None:
    a, b = TypeVar("A"), TypeVar("B")
    poly = FuncType((a,), b, (a,))            # fn [A](A) -> B
    out = substitute(poly, {b: a})            # B := the *outer* A
    assert isinstance(out, FuncType)
    (inner,) = out.type_params
    assert inner != a and inner.name == "A"   # the binder was renamed...
    assert out.arg_types == (inner,)          # ...consistently in its scope
    assert out.ret_type == a                  # and the image's A stays free
    assert free_type_vars(out) == [a]
    # alpha-equal to fn [C](C) -> A written by hand
    c = TypeVar("C")
    assert alpha_equal(out, FuncType((c,), a, (c,)))


def test_substitute_computes_each_images_free_variables_once(monkeypatch) -> None:
    """Under d nested ``fn [T_i]`` binders the capture check reads each image's free
    variables from a per-call memo: free_type_vars runs once per image, not once per
    binder (O(d * image size) before)."""
    import relay_ref.ir.types as types

    a, b = TypeVar("A"), TypeVar("B")
    big = TupleType(tuple(TupleType((a, F32)) for _ in range(50)))  # mentions A free
    ty: object = b
    binders = []
    for i in range(300):
        t = TypeVar(f"T{i}")
        binders.append(t)
        ty = FuncType((t, ty), ty, (t,))  # type: ignore[arg-type]
    real, calls = types.free_type_vars, []

    def counting(*tys):
        calls.append(1)
        return real(*tys)

    monkeypatch.setattr(types, "free_type_vars", counting)
    out = substitute(ty, {b: big, a: I32})  # type: ignore[arg-type]
    assert len(calls) <= 2  # one per image
    monkeypatch.setattr(types, "free_type_vars", real)
    assert free_type_vars(out) == [a] and b not in free_type_vars(out)
    # an image mentioning a binder still renames it (capture avoided, checked above)
    poly = FuncType((a,), FuncType((b,), b, (binders[0],)), (a,))
    renamed = substitute(poly, {b: a})
    assert isinstance(renamed, FuncType) and renamed.type_params[0] != a


def test_substitute_keeps_sharing_and_returns_unchanged_types_as_they_are() -> None:
    a = TypeVar("A")
    shared = TupleType((a, a))
    ty = TupleType((shared, shared, F32))
    out = substitute(ty, {a: F32})
    assert out.fields[0] is out.fields[1]
    assert substitute(ty, {TypeVar("Other"): I32}) is ty
    assert substitute(ty, {}) is ty


def test_substitute_by_identity_not_by_name() -> None:
    a1, a2 = TypeVar("A"), TypeVar("A")
    assert substitute(TupleType((a1, a2)), {a1: F32}) == TupleType((F32, a2))


def test_substitute_on_a_deep_type_is_iterative() -> None:
    a = TypeVar("A")
    ty = a
    for _ in range(10_000):
        ty = TupleType((ty,))
    out = substitute(ty, {a: F32})
    for _ in range(10_000):
        out = out.fields[0]
    assert out == F32


def test_substitute_of_nested_binders() -> None:
    a, b = TypeVar("A"), TypeVar("B")
    inner = FuncType((b,), a, (b,))           # fn [B](B) -> A
    outer = FuncType((a, inner), b, (a,))     # fn [A](A, fn [B](B) -> A) -> B
    out = substitute(outer, {a: I32, b: F32})
    # A bound by the outer function, B free at the outer level but bound inside
    assert out == FuncType((a, inner), F32, (a,))


def test_free_type_vars_in_nested_function_types() -> None:
    a, b, c = TypeVar("A"), TypeVar("B"), TypeVar("C")
    ty = FuncType((b, FuncType((a,), c, (a,))), a)    # A bound only inside the inner type
    assert free_type_vars(ty) == [b, c, a]             # first-occurrence order
    assert free_type_vars(FuncType((a,), FuncType((b,), a, (b,)), (a,))) == []
    assert free_type_vars(TupleType((a, a, TypeCall(LIST, (a, b))))) == [a, b]
    assert free_type_vars(None, RefType(c), None, a) == [c, a]


def test_free_type_vars_of_a_shared_deep_type_is_linear() -> None:
    a = TypeVar("A")
    ty = TupleType((a, a))
    for _ in range(5_000):
        ty = TupleType((ty, ty))     # 2**5000 paths, 5 000 distinct objects
    assert free_type_vars(ty) == [a]


def test_hole_tests() -> None:
    hole = IncompleteType()
    assert has_hole(hole)
    assert not has_hole(None) and not is_complete(None)
    for ty in (TupleType((F32, hole)), FuncType((hole,), F32), FuncType((F32,), hole),
               TypeCall(LIST, (hole,)), RefType(TupleType((hole,)))):
        assert has_hole(ty) and not is_complete(ty)
    for ty in (F32, TupleType(()), FuncType((TypeVar("A"),), F32), TypeCall(LIST, (I32,))):
        assert not has_hole(ty) and is_complete(ty)
