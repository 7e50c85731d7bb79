"""Operators as values, polymorphic at each use as in TVM (spec/typing.md 3.6 T-Let with an
operator value, 3.10 T-Op): ``let %f = add;`` is usable at float32 and at int32, in the
checker, the interpreter and ``rr.compile``; other lets stay monomorphic."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr

TWO_DTYPES = "def @main() { let %f = add; (%f(1f, 2f), %f(1, 2)) }"


def _same(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)


def test_a_let_bound_operator_is_used_at_two_dtypes() -> None:
    mod = rr.parse(TWO_DTYPES)
    checked = rr.infer_types(mod)
    assert rr.astext(checked.global_types["main"]) == "fn () -> (float32, int32)"
    want = (np.float32(3), np.int32(3))
    _same(rr.evaluate(mod), want)
    _same(rr.compile(mod)(), want)


def test_a_let_bound_operator_passed_to_polymorphic_functions() -> None:
    mod = rr.parse("""
        def @ap[A](%g: fn (A, A) -> A, %x: A) -> A { %g(%x, %x) }
        def @main() {
          let %f = multiply;
          let %r = nn.relu;
          (@ap(%f, 3f), @ap(%f, 4), @map(%r, Cons(-1f, Nil)), @map(%r, Cons(-2, Nil)))
        }""")
    value = rr.evaluate(mod)
    assert float(value[0]) == 9.0 and int(value[1]) == 16
    assert value[1].dtype == np.int32
    assert rr.astext(rr.infer_types(mod).global_types["main"]) == \
        "fn () -> (float32, int32, List[float32], List[int32])"


def test_the_relation_still_checks_each_use() -> None:
    with pytest.raises(rr.RelayTypeError, match=r"\[T-App-Op\]"):
        rr.infer_types(rr.parse("def @main() { let %f = add; (%f(1f, 2f), %f(1f, 2)) }"))


@pytest.mark.parametrize("src", [
    # a let-bound fn is monomorphic (no let-generalisation) ...
    "def @main() { let %f = fn (%a, %b) { add(%a, %b) }; (%f(1f, 2f), %f(1, 2)) }",
    # ... as is a let whose value merely computes an operator ...
    "def @main(%c: bool) { let %f = if (%c) { add } else { subtract }; "
    "(%f(1f, 2f), %f(1, 2)) }",
    # ... and an annotated binder takes its (monomorphic) annotation.
    "def @main() { let %f: fn (int32, int32) -> int32 = add; (%f(1, 2), %f(1f, 2f)) }",
])
def test_only_a_bare_operator_binding_is_polymorphic(src: str) -> None:
    with pytest.raises(rr.RelayTypeError, match=r"int32.*float32|float32.*int32"):
        rr.infer_types(rr.parse(src))


def test_a_never_fixed_let_bound_operator_is_reported_at_the_operator() -> None:
    with pytest.raises(rr.RelayTypeError, match=r"operator add used as a value.*\[T-Op\]"):
        rr.infer_types(rr.parse("def @main() { let %f = add; %f }"))


def test_the_derivation_shows_one_instance_per_use() -> None:
    from relay_ref.typecheck.derive import derive
    tree = derive(rr.parse(TWO_DTYPES))
    assert tree.ok, tree.errors
    text = str(tree)
    assert "T-Rel Broadcast" in text
    assert "%f(1f, 2f) : float32" in text and "%f(1, 2) : int32" in text


def test_an_operator_in_a_tuple_is_one_instance() -> None:
    # departure from TVM (spec/typing.md 3.6): the occurrence is instantiated where written
    with pytest.raises(rr.RelayTypeError, match=r"int32.*float32|float32.*int32"):
        rr.infer_types(rr.parse(
            "def @main() { let %t = (add,); (%t.0(1f, 2f), %t.0(1, 2)) }"))


def test_a_relation_error_through_a_let_bound_operator_is_located_at_the_call() -> None:
    """With several uses of ``%f``, the broadcast error points at the call that is wrong
    (line 6, column 3), as it does for a direct ``add(%x, %y)``, not at ``let %f = add;``."""
    src = """def @main() {
  let %f = add;
  let %x = ones(shape=[2, 3], dtype="float32");
  let %y = ones(shape=[4], dtype="float32");
  let %ok = %f(%x, %x);
  %f(%x, %y) }
"""
    with pytest.raises(rr.RelayTypeError, match=r"broadcast") as info:
        rr.infer_types(rr.parse(src))
    span = info.value.diagnostics[0].span
    assert (span.line, span.column) == (6, 3)
    direct = src.replace("%f(%x, %y)", "add(%x, %y)")
    with pytest.raises(rr.RelayTypeError) as info:
        rr.infer_types(rr.parse(direct))
    assert (info.value.diagnostics[0].span.line, info.value.diagnostics[0].span.column) == (6, 3)


def test_the_derivation_of_a_let_bound_operator_is_a_rule_instance() -> None:
    """T-Let's premise for the operator is T-Op with σ_op, relation included; the use of
    ``%f`` is a T-Op instance with its relation (spec/typing.md 3.6, 3.10)."""
    from relay_ref.typecheck.derive import derive

    tree = derive(rr.parse("def @main() { let %f = add; %f(1, 2) }"))
    assert tree.ok, tree.errors
    let = next(n for n in tree.walk() if n.rule == "T-Let")
    op = let.premises[0]
    assert (op.rule, op.expr) == ("T-Op", "add")
    assert op.type_text == "fn [t1, t2, t3](t1, t2) -> t3 where Broadcast(t1, t2, t3)"
    use = next(n for n in tree.walk() if n.expr == "%f")
    assert use.rule == "T-Op"
    assert use.type_text == \
        "fn (int32, int32) -> int32 where Broadcast(int32, int32, int32)"
    assert [r.answer for r in use.relations][-1] == "?t1 := int32"
