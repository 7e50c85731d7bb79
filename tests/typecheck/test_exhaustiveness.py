"""Match completeness (spec/typing.md 3.14)."""

from __future__ import annotations

from relay_ref.ir.expr import (
    Constructor,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)
from relay_ref.ir.types import GlobalTypeVar, TypeCall, TypeVar
from relay_ref.typecheck.exhaustiveness import missing_case

A = TypeVar("A")
LIST = GlobalTypeVar("List")
CONS = Constructor("Cons", (A, TypeCall(LIST, (A,))), LIST, 0)
NIL = Constructor("Nil", (), LIST, 1)
OPTION = GlobalTypeVar("Option")
SOME = Constructor("Some", (A,), OPTION, 0)
NONE = Constructor("None", (), OPTION, 1)
EXTERN = GlobalTypeVar("Handle")
CTORS = {"List": (CONS, NIL), "Option": (SOME, NONE)}
W = PatternWildcard()


def ctors(c: Constructor):
    return CTORS.get(c.belong_to.name)


def cons(h, t) -> PatternConstructor:
    return PatternConstructor(CONS, (h, t))


NILP = PatternConstructor(NIL, ())


def test_wildcard_and_variable_cover_everything() -> None:
    assert missing_case([W], ctors) is None
    assert missing_case([PatternVar(Var("x"))], ctors) is None


def test_no_clause_misses_everything() -> None:
    assert missing_case([], ctors) == "_"


def test_all_constructors_cover() -> None:
    assert missing_case([cons(W, W), NILP], ctors) is None


def test_missing_constructor_is_named() -> None:
    assert missing_case([cons(W, W)], ctors) == "Nil"
    assert missing_case([NILP], ctors) == "Cons(_, _)"


def test_nested_witness() -> None:
    assert missing_case([cons(W, cons(W, W)), NILP], ctors) == "Cons(_, Nil)"


def test_tuple_patterns() -> None:
    some = PatternConstructor(SOME, (W,))
    none = PatternConstructor(NONE, ())
    rows = [PatternTuple((some, W)), PatternTuple((none, none))]
    assert missing_case(rows, ctors) == "(None, Some(_))"
    rows.append(PatternTuple((W, some)))
    assert missing_case(rows, ctors) is None


def test_order_of_clauses_does_not_matter_for_completeness() -> None:
    assert missing_case([NILP, cons(W, NILP), cons(W, cons(W, W))], ctors) is None


def test_unknown_adt_is_never_complete_without_a_wildcard() -> None:
    unknown = Constructor("K", (), GlobalTypeVar("Unknown"), 0)
    assert missing_case([PatternConstructor(unknown, ())], ctors) is not None
    assert missing_case([PatternConstructor(unknown, ()), W], ctors) is None
