"""The generator's operator table: every registered op has well-typed calls (from its
relation and its ``set_examples`` hints), hints may describe tuple arguments, and every
signature evaluates on generated arguments to a value of its type or a RelayError."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.diagnostics import RelayError
from relay_ref.ir.expr import Call, Function, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import AnyDim, TensorType, TupleType
from relay_ref.ops.gradient_op import FUNCTION_OPS
from relay_ref.ops.registry import all_ops
from relay_ref.ops.symbolic import SYMBOLIC_OPS
from relay_ref.testing.programs import _expand_example, op_table, value_pool

#: ops generated only once their hints were written (tuple and run-time-value arguments,
#: 1-d / 3-d and quantized kernels, detection rows)
HINTED = ("dyn.strided_slice", "nn.conv1d_transpose", "nn.conv3d_transpose",
          "qnn.avg_pool2d", "qnn.batch_matmul", "qnn.concatenate", "qnn.conv2d_transpose",
          "vision.non_max_suppression")


def test_every_registered_op_has_generated_calls():
    # over functions (gradient); the Relax constructs are generated in place by
    # relay_ref.testing.symbolic_programs (tests/testing/test_symbolic_generated.py)
    missing = set(all_ops()) - set(op_table().by_op) - FUNCTION_OPS - SYMBOLIC_OPS
    assert not missing, sorted(missing)


@pytest.mark.parametrize("name", HINTED)
def test_hinted_ops_have_several_attribute_variants(name):
    sigs = op_table().by_op[name]
    assert len({repr(s.attrs) for s in sigs}) >= 2, sigs


def test_a_list_in_a_hint_is_a_tuple_argument():
    i8 = TensorType((2, 3), "int8")
    f32, i32 = TensorType((), "float32"), TensorType((), "int32")
    assert _expand_example(([((2, 3), "int8"), ((2, 3), "int8")], [((), "float32")],
                            ((), "int32"))) == [
        (TupleType((i8, i8)), TupleType((f32,)), i32)]
    # shapes only: float32 and int32 throughout, tuple fields included
    assert _expand_example(([(3,), (2,)], (3,))) == [
        (TupleType((TensorType((3,), "float32"), TensorType((2,), "float32"))),
         TensorType((3,), "float32")),
        (TupleType((TensorType((3,), "int32"), TensorType((2,), "int32"))),
         TensorType((3,), "int32"))]


def _value(ty, rng):
    if isinstance(ty, TupleType):
        return tuple(_value(f, rng) for f in ty.fields)
    return rng.choice(np.array(value_pool(ty.dtype), dtype=ty.dtype), size=ty.shape)


def _has_type(value, ty) -> bool:
    if isinstance(ty, TupleType):
        return (isinstance(value, tuple) and len(value) == len(ty.fields)
                and all(_has_type(v, f) for v, f in zip(value, ty.fields, strict=True)))
    value = np.asarray(value)
    return (value.dtype.name == ty.dtype and value.ndim == len(ty.shape)
            and all(isinstance(d, AnyDim) or d == n for d, n in zip(ty.shape, value.shape,
                                                                   strict=True)))


@pytest.mark.parametrize("name", HINTED)
def test_hinted_signatures_evaluate_to_their_type_or_a_relay_error(name):
    rng = np.random.default_rng(0)
    values = 0
    for sig in op_table().by_op[name]:
        params = tuple(Var(f"p{i}", t) for i, t in enumerate(sig.args))
        mod = rr.infer_types(IRModule(
            {"main": Function(params, Call(Op(name), params, sig.attrs), sig.out)}, {}))
        for _ in range(12):
            args = [_value(t, rng) for t in sig.args]
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore", RuntimeWarning)
                    out = rr.evaluate(mod, *args)
            except RelayError:
                continue
            assert _has_type(out, sig.out), (sig, args, out)
            values += 1
    assert values, f"{name}: every generated call failed at run time"
