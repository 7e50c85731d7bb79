"""The Relax constructs as ops (relay_ref/ops/symbolic.py): their relations and their
environment-free references (match_cast checks what its own type fixes; the DPS calls
allocate from a static out_type and call the registered function; dataflow is the value
of its body). The interpreter/executor paths with shape environments are tested with them."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import rand, run_op

from relay_ref.ir.shape import sym
from relay_ref.ir.types import ANY, FuncType, IncompleteType, TensorType, TupleType, TypeVar
from relay_ref.ops.registry import NOT_YET, OpRuntimeError, RelationError, get_op, make_attrs
from relay_ref.ops.symbolic import SYMBOLIC_OPS, register_packed

F = "float32"
N = sym("n")


def T(*shape: object, dtype: str = F) -> TensorType:  # noqa: N802 - reads like the type
    return TensorType(tuple(shape), dtype)


def rel(name: str, args: list, **attrs: object) -> object:
    return get_op(name).relation(args, make_attrs(name, attrs))


def _add_one(x, out):  # noqa: ANN001, ANN202 - a packed function in DPS
    out[...] = x + 1


def _scaled(x, out, n):  # noqa: ANN001, ANN202 - asks for the symbolic integer n
    out[...] = x * n


_scaled.sym_args = ("n",)
register_packed("test_sym.add_one", _add_one, replace=True)
register_packed("test_sym.scaled", _scaled, replace=True)


def test_the_four_ops_are_registered() -> None:
    for name in SYMBOLIC_OPS:
        assert get_op(name).num_inputs == 1


def test_match_cast_relation() -> None:
    assert rel("match_cast", [T(ANY, 4)], type=T(N, 4)) == T(N, 4)
    assert rel("match_cast", [T(3, 4)], type=T(N, 4)) == T(N, 4)
    assert rel("match_cast", [IncompleteType()], type=T(N, 4)) is NOT_YET
    for bad, why in [(T(3, 5), "dimension 1"), (T(3), "rank"), (T(3, 4, dtype="int32"),
                                                                 "dtype")]:
        with pytest.raises(RelationError, match=why):
            rel("match_cast", [bad], type=T(N, 4))
    with pytest.raises(RelationError, match="cannot cast"):
        rel("match_cast", [TupleType((T(3),))], type=T(N))
    with pytest.raises(RelationError, match="missing the target type"):
        rel("match_cast", [T(3)])


def test_match_cast_reference_checks_what_its_type_fixes() -> None:
    x = rand((3, 4))
    np.testing.assert_array_equal(run_op("match_cast", [x], type=T(3, 4)), x)
    op = get_op("match_cast")
    assert op.reference([x], make_attrs("match_cast", {"type": T(N, 4)})) is x
    with pytest.raises(OpRuntimeError, match="dimension 1"):
        op.reference([x], make_attrs("match_cast", {"type": T(N, 5)}))
    with pytest.raises(OpRuntimeError, match="dtype"):
        op.reference([x], make_attrs("match_cast", {"type": T(N, 4, dtype="int32")}))
    with pytest.raises(OpRuntimeError):  # n bound to 3 then checked against 4
        op.reference([x], make_attrs("match_cast", {"type": T(N, N)}))


@pytest.mark.parametrize("name", ["call_dps_packed", "call_tir"])
def test_dps_relation_and_reference(name: str) -> None:
    out_t = T(3, 4)
    assert rel(name, [TupleType((T(3, 4),))], func_name="f", out_type=out_t) == out_t
    assert rel(name, [TupleType((IncompleteType(),))], func_name="f",
               out_type=out_t) is NOT_YET
    with pytest.raises(RelationError, match="tuple of tensors"):
        rel(name, [T(3, 4)], func_name="f", out_type=out_t)
    with pytest.raises(RelationError, match="output type"):
        rel(name, [TupleType(())], func_name="f", out_type=FuncType((), out_t))
    with pytest.raises(RelationError, match="function name"):
        rel(name, [TupleType(())], func_name="", out_type=out_t)
    x = rand((3, 4))
    out = run_op(name, [(x,)], func_name="test_sym.add_one", out_type=out_t)
    np.testing.assert_allclose(out, x + 1)
    assert np.shares_memory(out, x) is False


def test_dps_reference_errors() -> None:
    op = get_op("call_dps_packed")
    x = rand((3, 4))
    with pytest.raises(OpRuntimeError, match="no packed function 'test_sym.add_on'"):
        op.reference([(x,)], make_attrs("call_dps_packed", {
            "func_name": "test_sym.add_on", "out_type": T(3, 4)}))
    with pytest.raises(OpRuntimeError, match="shape variable n"):  # no environment here
        op.reference([(x,)], make_attrs("call_dps_packed", {
            "func_name": "test_sym.scaled", "out_type": T(3, 4)}))
    with pytest.raises(OpRuntimeError, match="mentions n"):
        op.reference([(x,)], make_attrs("call_dps_packed", {
            "func_name": "test_sym.add_one", "out_type": T(N, 4)}))
    with pytest.raises(OpRuntimeError, match="failed"):  # the kernel's own error, located
        op.reference([(x,)], make_attrs("call_dps_packed", {
            "func_name": "test_sym.add_one", "out_type": T(4, 4)}))


def test_dataflow_is_the_value_of_its_body() -> None:
    t = T(ANY, 3)
    assert rel("dataflow", [t]) == t
    tup = TupleType((t, TupleType((T(),))))
    assert rel("dataflow", [tup]) == tup
    assert rel("dataflow", [IncompleteType()]) is NOT_YET
    for bad in (FuncType((t,), t), TypeVar("A"), TupleType((t, FuncType((), t)))):
        with pytest.raises(RelationError, match="dataflow"):
            rel("dataflow", [bad])
    x = rand((2, 3))
    np.testing.assert_array_equal(run_op("dataflow", [x]), x)


DIFF_TESTED = set(SYMBOLIC_OPS)
