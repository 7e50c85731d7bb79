"""The occurs check and resolution stay linear as types grow (spec/typing.md 6.1, issue 10).

Nested function literals give types whose size grows with the depth; checking them must
not re-walk the whole type at every level. Work is counted in executed Python lines
(``step_count``, deterministic), asserted to at most double when the depth doubles; the
times are in ``benchmarks/typecheck.py``. The unit tests pin down what the fast paths rely
on: the binding graph's parent lists follow failed unifications and path compression, and
the resolution memo never outlives a binding.
"""

from __future__ import annotations

import pytest

import relay_ref as rr
from relay_ref.deepstack import run_deep
from relay_ref.ir.types import FuncType, IncompleteType, RefType, TensorType, TupleType
from relay_ref.testing.growth import step_count
from relay_ref.testing.nested_fns import NESTED_SHAPES, UNKNOWN, nested_fns, shared_tuples
from relay_ref.typecheck.unify import SHOW_PARTS, Unifier, UnifyError, show

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")

pytestmark = pytest.mark.timeout(120)  # a quadratic regression is slow, not wrong


def _check_cost(text: str, unknown: bool) -> int:
    mod = rr.parse(text)

    def check() -> None:
        if unknown:
            with pytest.raises(rr.RelayTypeError, match="cannot infer"):
                rr.infer_types(mod)
        else:
            rr.infer_types(mod)

    return step_count(check)


@pytest.mark.parametrize("shape", sorted(NESTED_SHAPES))
def test_checking_work_doubles_at_most_when_the_depth_doubles(shape: str) -> None:
    gen = NESTED_SHAPES[shape]
    small = _check_cost(gen(200), shape in UNKNOWN)
    large = _check_cost(gen(400), shape in UNKNOWN)
    # Before the fix the nested shapes cost ~3.9x per doubling (the occurs check walked
    # the whole growing type at each level), and shared tuples 2**n.
    assert large <= 2.1 * small + 2000, (shape, small, large)


def _chain_cost(n: int, newest_first: bool) -> int:
    """Unify ``n`` holes in a chain, each with a pair holding the previous one (oldest hole
    bound first, or newest first), then resolve the whole chain."""

    def run() -> None:
        u = Unifier()
        holes = [u.fresh() for _ in range(n + 1)]
        steps = range(n, 0, -1) if newest_first else range(1, n + 1)
        for i in steps:
            u.unify(holes[i], TupleType((holes[i - 1], F32)))
        u.unify(holes[0], F32)
        ty = u.resolve(holes[n])
        for _ in range(n):
            assert isinstance(ty, TupleType) and ty.fields[1] == F32
            ty = ty.fields[0]
        assert ty == F32

    return step_count(lambda: run_deep(run))


@pytest.mark.parametrize("newest_first", [False, True])
def test_unifying_a_chain_of_growing_types_is_linear(newest_first: bool) -> None:
    small, large = _chain_cost(500, newest_first), _chain_cost(1000, newest_first)
    assert large <= 2.1 * small + 2000, (small, large)


def test_4000_deep_nested_functions_check() -> None:
    n = 4000
    mod = rr.infer_types(rr.parse(nested_fns(n, annotated=True)))
    ty = mod.global_types["main"].ret_type
    for _ in range(n):
        assert isinstance(ty, FuncType) and ty.arg_types == (F32,)
        ty = ty.ret_type
    assert ty == F32
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(rr.parse(nested_fns(n)))
    # One diagnostic per undetermined parameter, capped at 20, each at its binder.
    assert len(info.value.diagnostics) == 20
    assert "cannot infer the type of %x0 (it is _)" in info.value.diagnostics[0].message


def test_shared_tuple_types_are_walked_once_per_object() -> None:
    # The type of %x60 has 2**60 paths through 60 objects.
    with pytest.raises(rr.RelayTypeError, match="cannot infer the type of %x0"):
        rr.infer_types(rr.parse(shared_tuples(60)))
    u = Unifier()
    h = u.fresh()
    ty = TupleType((h, h))
    for _ in range(60):
        ty = TupleType((ty, ty))
    assert u.holes(ty) == [h]
    u.unify(h, I32)
    resolved = u.resolve(ty)
    assert isinstance(resolved, TupleType) and resolved.fields[0] is resolved.fields[1]
    h2 = u.fresh()
    with pytest.raises(UnifyError, match="contain itself"):
        u.unify(h2, TupleType((ty, RefType(h2))))


def test_messages_show_a_bounded_part_of_a_huge_type() -> None:
    deep: FuncType | TensorType = F32
    for _ in range(5000):
        deep = FuncType((F32,), deep)
    text = run_deep(lambda: show(deep))
    assert text.startswith("fn (float32) -> fn (float32) -> ") and text.endswith(" -> ...")
    assert text.count("fn (") == SHOW_PARTS
    shared: TupleType = TupleType((F32, I32))
    for _ in range(60):
        shared = TupleType((shared, shared))
    assert show(shared).count("(") == SHOW_PARTS
    assert show(FuncType((F32,), TupleType((I32, F32)))) == "fn (float32) -> (int32, float32)"


# -- the occurs check through bindings ----------------------------------------------------

def test_occurs_check_follows_a_long_chain_of_bindings() -> None:
    u = Unifier()
    holes = [u.fresh() for _ in range(50)]
    for a, b in zip(holes, holes[1:], strict=False):
        u.unify(a, RefType(b))  # h0 = ref(h1), h1 = ref(h2), ...
    with pytest.raises(UnifyError) as info:
        u.unify(holes[-1], TupleType((holes[0], F32)))
    assert info.value.reason.startswith("the type would contain itself ((ref(ref(")
    assert info.value.reason.endswith(" is infinite)")
    assert isinstance(u.find(holes[-1]), IncompleteType)
    u.unify(holes[-1], F32)  # the failure bound nothing
    assert u.resolve(holes[0]) == RefType(RefType(u.resolve(holes[2])))


def test_occurs_check_sees_through_path_compression() -> None:
    u = Unifier()
    a, b, c = u.fresh(), u.fresh(), u.fresh()
    u.unify(a, b)
    u.unify(b, c)
    assert u.find(a) is c  # compresses a -> c
    with pytest.raises(UnifyError, match="contain itself"):
        u.unify(c, TupleType((a,)))
    with pytest.raises(UnifyError, match="contain itself"):
        u.unify(c, FuncType((F32,), RefType(b)))


def test_a_failed_unification_leaves_no_edges_behind() -> None:
    # h1 = (h2,) is bound, then the unification fails and undoes it: afterwards h2 may
    # well be bound to a type holding h1 (a stale edge h1 -> h2 would call it infinite).
    u = Unifier()
    h1, h2 = u.fresh(), u.fresh()
    with pytest.raises(UnifyError, match="field 1"):
        u.unify(TupleType((h1, F32)), TupleType((TupleType((h2,)), I32)))
    assert isinstance(u.find(h1), IncompleteType)
    u.unify(h2, TupleType((h1,)))
    u.unify(h1, F32)
    assert u.resolve(h2) == TupleType((F32,))


def test_resolution_memo_does_not_outlive_a_binding_or_an_undo() -> None:
    u = Unifier()
    h1, h2 = u.fresh(), u.fresh()
    ty = TupleType((h1, RefType(h2)))
    assert u.resolve(ty) is ty
    # Binds h1, then fails on h2 (its message resolves types with h1 bound), and undoes.
    with pytest.raises(UnifyError, match="contain itself"):
        u.unify(ty, TupleType((F32, RefType(TupleType((h2,))))))
    assert u.resolve(ty) is ty
    u.unify(h1, I32)
    assert u.resolve(ty) == TupleType((I32, RefType(h2)))


def test_infinite_type_through_bindings_is_a_located_error() -> None:
    # %r = ref(%v), %v = ref(%u), then %u = type of %r: the cycle goes through two
    # bindings made earlier.
    text = """def @main(%c: bool) {
  fn (%r) {
    let %v = ref_read(%r);
    let %u = ref_read(%v);
    if (%c) { %u } else { %r }
  }
}"""
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(rr.parse(text))
    [diag] = info.value.diagnostics
    assert "the type would contain itself (ref(ref(_)) is infinite)" in diag.message
    assert "[T-If]" in diag.message
    assert (diag.span.line, diag.span.column) == (5, 5)  # the if: %r has no span here
