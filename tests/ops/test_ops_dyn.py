"""dyn.* operators (shape-like arguments as run-time tensors) vs NumPy; relations give ``?``
dims with the rank taken from the shape tensor's static length."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import OpRuntimeError, RelationError, get_op, make_attrs


def i64(*v: int) -> np.ndarray:
    return np.array(v, dtype="int64")


@pytest.mark.parametrize("shape,new,want", [
    ((2, 3, 4), (4, 6), (4, 6)), ((2, 3, 4), (-1, 4), (6, 4)), ((2, 3, 4), (0, -1), (2, 12)),
    ((6,), (1, 2, 3), (1, 2, 3)), ((2, 3), (6,), (6,)),
])
def test_dyn_reshape_vs_numpy(shape: tuple, new: tuple, want: tuple) -> None:
    x = rand(shape)
    out = run_op("dyn.reshape", [x, i64(*new).astype("int32")])
    np.testing.assert_array_equal(out, x.reshape(want))
    (theirs,) = onnx_run("Reshape", [x, i64(*new)])
    np.testing.assert_array_equal(out, theirs)


def test_dyn_reshape_errors_and_relation() -> None:
    with pytest.raises(OpRuntimeError):
        run_op("dyn.reshape", [rand((2, 3)), i64(4, 2)])
    with pytest.raises(OpRuntimeError):
        run_op("dyn.reshape", [rand((2, 3)), i64(-2)])
    rel = get_op("dyn.reshape").relation
    at = make_attrs("dyn.reshape", {})
    assert rel([TensorType((2, 3), "int8"), TensorType((3,), "int64")], at) == \
        TensorType((ANY, ANY, ANY), "int8")
    for bad in [TensorType((3,), "float32"), TensorType((ANY,), "int64"),
                TensorType((1, 3), "int64")]:
        with pytest.raises(RelationError):
            rel([TensorType((2, 3), "int8"), bad], at)


@pytest.mark.parametrize("shape,target", [((3, 1), (2, 3, 4)), ((1,), (5,)), ((), (2, 2)),
                                          ((2, 1), (2, 0))])
def test_dyn_broadcast_to_vs_numpy(shape: tuple, target: tuple) -> None:
    x = rand(shape, "int32")
    out = run_op("dyn.broadcast_to", [x, i64(*target)])
    np.testing.assert_array_equal(out, np.broadcast_to(x, target))
    with pytest.raises(OpRuntimeError):
        run_op("dyn.broadcast_to", [rand((3,)), i64(2, 4)])


@pytest.mark.parametrize("dtype", ["", "int8", "float64", "bool"])
@pytest.mark.parametrize("shape", [(2, 3), (0,), (1, 2, 1, 2)])
def test_dyn_zeros_ones_full_vs_numpy(dtype: str, shape: tuple) -> None:
    attrs = {"dtype": dtype} if dtype else {}
    dt = dtype or "float32"
    np.testing.assert_array_equal(run_op("dyn.zeros", [i64(*shape)], **attrs),
                                  np.zeros(shape, dt))
    np.testing.assert_array_equal(run_op("dyn.ones", [i64(*shape).astype("int32")],
                                         **attrs), np.ones(shape, dt))
    fill = np.array(2.0, "float32")
    out = run_op("dyn.full", [fill, i64(*shape)], **attrs)
    np.testing.assert_array_equal(out, np.full(shape, fill, dtype=dtype or "float32"))
    with pytest.raises(OpRuntimeError):
        run_op("dyn.zeros", [i64(2, -1)])
    with pytest.raises(RelationError):
        get_op("dyn.full").relation([TensorType((1,), "float32"), TensorType((2,), "int64")],
                                    make_attrs("dyn.full", {}))


@pytest.mark.parametrize("shape,reps", [((2, 3), (2, 2)), ((2, 3), (3,)), ((3,), (2, 1, 2)),
                                        ((2, 2), (0, 1))])
def test_dyn_tile_vs_numpy(shape: tuple, reps: tuple) -> None:
    x = rand(shape)
    np.testing.assert_array_equal(run_op("dyn.tile", [x, i64(*reps)]), np.tile(x, reps))


@pytest.mark.parametrize("begin,end,strides,mode", [
    ((0, 1), (2, 3), (1, 1), "end"), ((1, -1), (-1, 0), (1, -1), "end"),
    ((0,), (10,), (2,), "end"), ((1, 0, 2), (1, 3, -1), (1, 1, 1), "size"),
    ((-3, 0, 0), (3, 2, 4), (2, 1, 3), "end"),
])
def test_dyn_strided_slice_vs_static(begin: tuple, end: tuple, strides: tuple,
                                     mode: str) -> None:
    x = rand((3, 4, 5))
    out = run_op("dyn.strided_slice", [x, i64(*begin), i64(*end), i64(*strides)],
                 slice_mode=mode)
    want = run_op("strided_slice", [x], begin=begin, end=end, strides=strides,
                  slice_mode=mode)
    np.testing.assert_array_equal(out, want)
    if mode == "end":
        axes = list(range(len(begin)))
        (theirs,) = onnx_run("Slice", [x, i64(*begin), i64(*end), i64(*axes), i64(*strides)])
        np.testing.assert_array_equal(out, theirs)


def test_dyn_strided_slice_errors() -> None:
    with pytest.raises(OpRuntimeError):
        run_op("dyn.strided_slice", [rand((3,)), i64(0), i64(2), i64(0)])
    with pytest.raises(RelationError):
        get_op("dyn.strided_slice").relation(
            [TensorType((3,), "float32"), TensorType((2,), "int64"),
             TensorType((1,), "int64"), TensorType((1,), "int64")],
            make_attrs("dyn.strided_slice", {}))


DIFF_TESTED = {"dyn.reshape", "dyn.broadcast_to", "dyn.zeros", "dyn.ones", "dyn.full",
               "dyn.tile", "dyn.strided_slice"}
