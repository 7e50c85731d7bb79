"""The ``gradient`` operator's relation (spec/ad.md AD-Grad-Op): over function types, TVM's
result shape, holes wait, anything else is a RelationError naming the operator; its
reference refuses to run unexpanded."""

from __future__ import annotations

import pytest

from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)
from relay_ref.ops.registry import NOT_YET, OpRuntimeError, RelationError, get_op

DIFF_TESTED = {"gradient"}  # its semantics is the AD pass's (tests/passes/test_gradient*)

F = TensorType((2, 3), "float64")
S = TensorType((), "float32")


def test_relation_gives_tvm_shape() -> None:
    op = get_op("gradient")
    lst = TypeCall(GlobalTypeVar("List"), (F,))
    out = op.relation([FuncType((F, TupleType((S, lst))), S)], op.attrs())
    assert out == FuncType((F, TupleType((S, lst))),
                           TupleType((S, TupleType((F, TupleType((S, lst)))))))


def test_relation_waits_on_holes() -> None:
    op = get_op("gradient")
    assert op.relation([IncompleteType()], op.attrs()) is NOT_YET
    assert op.relation([FuncType((IncompleteType(),), S)], op.attrs()) is NOT_YET


@pytest.mark.parametrize("bad", [
    F, FuncType((F,), FuncType((), S)), FuncType((RefType(F),), S),
    FuncType((TypeVar("A"),), S, (TypeVar("A"),)), FuncType((FuncType((S,), S),), S),
])
def test_relation_refuses_what_cannot_be_differentiated(bad) -> None:
    op = get_op("gradient")
    with pytest.raises(RelationError, match="^gradient: "):
        op.relation([bad], op.attrs())


def test_reference_refuses_to_run_unexpanded() -> None:
    with pytest.raises(OpRuntimeError, match="expanded by the AD pass"):
        get_op("gradient").reference([None], get_op("gradient").attrs())
