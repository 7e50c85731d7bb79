"""Type relations as predicates (spec/typing.md 3.9, 3.10, 6.2 T-Rel): the predicate forms
in relay_ref/ops/relations.py and the solver's handling of their answers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.ir.types import IncompleteType, TensorType, TupleType
from relay_ref.ops.registry import NOT_YET, RelationError, Solved, get_op
from relay_ref.ops.relations import broadcast_operand


def _broadcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _shapes(max_rank=3, dims=(1, 2, 3)):
    for rank in range(max_rank + 1):
        yield from itertools.product(dims, repeat=rank)


@given(st.lists(st.sampled_from([1, 2, 3]), max_size=3).map(tuple),
       st.lists(st.just(1), max_size=3).map(tuple))
def test_broadcast_operand_is_the_unique_solution_when_it_answers(out, other):
    found = broadcast_operand(other, out)
    solutions = [x for x in _shapes() if _broadcast(x, other) == out]
    if found is None:
        assert len(solutions) != 1 or _broadcast(solutions[0], other) != out
    else:
        assert solutions == [found]


def test_broadcast_operand_refuses_ambiguous_cases():
    assert broadcast_operand((3,), (4, 3)) is None        # (4, 3) or (4, 1)
    assert broadcast_operand((1, 1), (1, 3)) is None      # (1, 3) or (3)
    assert broadcast_operand((), (2, 3)) == (2, 3)
    assert broadcast_operand((1,), (5,)) == (5,)


def test_identity_predicate_unifies_argument_and_result_before_either_is_known():
    relu = get_op("nn.relu")
    a, out = IncompleteType(), IncompleteType()
    answer = relu.solve([a, out], None)
    assert answer == Solved(((0, out),), done=False)
    t = TensorType((2,), "float32")
    assert relu.solve([t, out], None) == Solved(((1, t),))
    with pytest.raises(RelationError, match="must be a tensor"):
        relu.solve([TupleType(()), out], None)


def test_forward_only_relations_wait_for_their_arguments():
    softmax = get_op("nn.softmax")
    assert not softmax.bidirectional
    assert softmax.solve([IncompleteType(), TensorType((2,), "float32")],
                         softmax.attrs()) is NOT_YET


def test_operator_types_read_as_the_spec_writes_them():
    assert get_op("add").type_text == \
        "fn[t1, t2, t3](t1, t2) -> t3 where Broadcast(t1, t2, t3)"
    assert get_op("nn.relu").type_text == "fn[t1, t2](t1) -> t2 where Identity(t1, t2)"
    assert get_op("less").relation_name == "BroadcastComp"


def test_information_flows_through_a_chain_of_relations():
    # exp(negative(%x)) : Tensor[(4), float32] fixes %x through two Identity relations
    mod = rr.infer_types(rr.parse(
        "def @main(%x) -> Tensor[(4), float32] { exp(negative(%x)) }"))
    assert rr.astext(mod.global_types["main"]) == \
        "fn (Tensor[(4), float32]) -> Tensor[(4), float32]"


def test_a_backward_assignment_that_contradicts_the_argument_is_located():
    with pytest.raises(rr.RelayTypeError) as err:
        rr.infer_types(rr.parse(
            "def @main(%x: Tensor[(3), float32]) -> Tensor[(4), float32] { nn.relu(%x) }"))
    message = str(err.value)
    assert "cannot unify" in message and "(4)" in message and "(3)" in message


def test_a_predicate_that_never_decides_is_an_error_not_a_hang():
    from relay_ref.ops.registry import register_op

    def undecided(types, attrs):
        return Solved(((0, types[-1]),), done=False)

    from relay_ref.ops import registry

    register_op("test.undecided", relation=lambda a, b: NOT_YET, reference=lambda a, b: a[0],
                num_inputs=1, predicate=undecided, override=True)
    try:
        with pytest.raises(rr.RelayTypeError, match="does not decide"):
            rr.infer_types(rr.parse("def @main(%x: float32) { test.undecided(%x) }"))
    finally:  # other tests enumerate the registry
        registry._REGISTRY.pop("test.undecided", None)
