"""Reductions vs onnxruntime (ReduceSum/Mean/Max/Min/Prod, ArgMax/ArgMin) and NumPy
(all, any, variance), including negative axes, keepdims, exclude and integer means."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ops.registry import OpRuntimeError

REDUCE_ONNX = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax",
               "min": "ReduceMin", "prod": "ReduceProd"}

# (axis attr, exclude, keepdims)
AXES = [(None, False, False), ((1,), False, True), ((-1, 0), False, False),
        ((1,), True, False), ((0, 2), True, True), ((), False, False)]


def _reduced(ndim: int, axis: tuple[int, ...] | None, exclude: bool) -> list[int]:
    if axis is None:
        return list(range(ndim))
    norm = {a % ndim for a in axis}
    return sorted(set(range(ndim)) - norm) if exclude else sorted(norm)


@pytest.mark.parametrize("name", sorted(REDUCE_ONNX))
@pytest.mark.parametrize("axis,exclude,keepdims", AXES)
def test_reduce_vs_onnxruntime(name: str, axis: tuple | None, exclude: bool,
                               keepdims: bool) -> None:
    x = rand((2, 3, 4), "float32", 0.5, 1.5)
    attrs = {"keepdims": keepdims, "exclude": exclude}
    if axis is not None:
        attrs["axis"] = axis
    ours = run_op(name, [x], **attrs)
    axes = _reduced(3, axis, exclude)
    if not axes:
        close(ours, x)
        return
    (theirs,) = onnx_run(REDUCE_ONNX[name], [x, np.array(axes, "int64")], opset=18,
                         keepdims=int(keepdims))
    close(ours, theirs, rtol=1e-5)


def test_integer_reductions() -> None:
    x = np.array([[1, 2, 4], [-7, 0, 0]], "int32")
    out = run_op("mean", [x], axis=1)
    np.testing.assert_array_equal(out, [2, -2])  # 7 / 3 -> 2, -7 / 3 -> -2 (truncated)
    assert out.dtype == np.int32
    big = np.full((4,), 2**30, "int32")
    assert int(run_op("sum", [big])) == 0  # wraps in int32
    np.testing.assert_array_equal(run_op("prod", [x], axis=0), [-7, 0, 0])


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("axis,exclude,keepdims", AXES)
def test_logical_reduce_vs_numpy(name: str, axis: tuple | None, exclude: bool,
                                 keepdims: bool) -> None:
    x = rand((2, 3, 4), "bool")
    attrs = {"keepdims": keepdims, "exclude": exclude}
    if axis is not None:
        attrs["axis"] = axis
    ours = run_op(name, [x], **attrs)
    fn = np.all if name == "all" else np.any
    np.testing.assert_array_equal(ours, fn(x, axis=tuple(_reduced(3, axis, exclude)),
                                            keepdims=keepdims))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("last", [False, True])
def test_argreduce_vs_onnxruntime(name: str, axis: int, keepdims: bool, last: bool) -> None:
    x = rand((3, 4, 5), "int32", 0, 3)  # many ties
    ours = run_op(name, [x], axis=axis, keepdims=keepdims, select_last_index=last)
    assert ours.dtype == np.int32
    (theirs,) = onnx_run("ArgMax" if name == "argmax" else "ArgMin", [x], axis=axis,
                         keepdims=int(keepdims), select_last_index=int(last))
    np.testing.assert_array_equal(ours, theirs)


def test_argreduce_over_all_and_several_axes() -> None:
    x = rand((3, 4, 5), "float32")
    assert int(run_op("argmax", [x])) == int(np.argmax(x))
    out = run_op("argmin", [x], axis=(0, 2), keepdims=True)
    assert out.shape == (1, 4, 1)
    flat = np.transpose(x, (1, 0, 2)).reshape(4, -1)
    np.testing.assert_array_equal(out.reshape(-1), np.argmin(flat, axis=1))
    ex = run_op("argmax", [x], axis=(1,), exclude=True)
    np.testing.assert_array_equal(ex, np.argmax(np.transpose(x, (1, 0, 2)).reshape(4, -1), 1))


@pytest.mark.parametrize("axis,exclude,keepdims", AXES[:5])
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance_vs_numpy(axis: tuple | None, exclude: bool, keepdims: bool,
                           unbiased: bool) -> None:
    x = rand((2, 3, 4), "float32")
    axes = tuple(_reduced(3, axis, exclude))
    mean = np.mean(x, axis=axes, keepdims=True)
    attrs = {"keepdims": keepdims, "exclude": exclude, "unbiased": unbiased}
    if axis is not None:
        attrs["axis"] = axis
    ours = run_op("variance", [x, mean], **attrs)
    close(ours, np.var(x, axis=axes, keepdims=keepdims, ddof=int(unbiased)), rtol=1e-5)


def test_empty_max_is_a_runtime_error() -> None:
    with pytest.raises(OpRuntimeError):
        run_op("max", [np.zeros((0, 3), "float32")], axis=0)
    with pytest.raises(OpRuntimeError):
        run_op("argmax", [np.zeros((0, 3), "float32")], axis=0)


def _collapse_loop(x: np.ndarray, target: tuple) -> np.ndarray:
    """Sum every element of ``x`` into the cell of ``target`` it was broadcast from."""
    out = np.zeros(target, x.dtype)
    lead = x.ndim - len(target)
    for i in np.ndindex(x.shape):
        j = tuple(0 if t == 1 else k for k, t in zip(i[lead:], target, strict=True))
        out[j] += x[i]
    return out


@pytest.mark.parametrize("shape,target", [((2, 3, 4), (3, 4)), ((2, 3, 4), (3, 1)),
                                          ((2, 3, 4), (1, 1, 1)), ((2, 3, 4), ()),
                                          ((2, 3), (2, 3)), ((4, 1, 3), (1, 3))])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_collapse_sum_vs_loop(shape: tuple, target: tuple, dtype: str) -> None:
    x = rand(shape, dtype)
    want = _collapse_loop(x, target)
    like = run_op("collapse_sum_like", [x, np.zeros(target, dtype)])
    np.testing.assert_allclose(like, want)
    to = run_op("collapse_sum_to", [x, np.array(target, "int64")], shape=target)
    np.testing.assert_allclose(to, want)


def test_collapse_sum_relations() -> None:
    from relay_ref.ir.types import ANY, TensorType
    from relay_ref.ops.registry import RelationError, get_op, make_attrs

    like = get_op("collapse_sum_like").relation
    at = make_attrs("collapse_sum_like", {})
    f = "float32"
    assert like([TensorType((ANY, 3, 4), f), TensorType((3, 1), f)], at) == \
        TensorType((3, 1), f)
    for data, bad, msg in [((2, 3, 4), (2, 3), "cannot be broadcast"),
                           ((2, 3, 4), (5, 2, 3, 4), "larger rank"),
                           ((2, 1, 4), (3, 4), r"\(2, 1, 4\) does not broadcast from \(3, 4\)")]:
        with pytest.raises(RelationError, match=msg):
            like([TensorType(data, f), TensorType(bad, f)], at)
    with pytest.raises(RelationError, match="dtypes differ"):
        like([TensorType((2, 3), f), TensorType((3,), "int32")], at)
    to = get_op("collapse_sum_to").relation
    shape = TensorType((2,), "int64")
    assert to([TensorType((2, 3, 4), f), shape], make_attrs("collapse_sum_to", {})) == \
        TensorType((ANY, ANY), f)
    assert to([TensorType((2, ANY, 4), f), shape],
              make_attrs("collapse_sum_to", {"shape": (1, 4)})) == TensorType((1, 4), f)
    with pytest.raises(RelationError, match="static length"):
        to([TensorType((2, 3), f), TensorType((ANY,), "int64")],
           make_attrs("collapse_sum_to", {}))
    with pytest.raises(RelationError, match="does not have the shape argument's 2 values"):
        to([TensorType((2, 3), f), shape], make_attrs("collapse_sum_to", {"shape": (3,)}))
    with pytest.raises(OpRuntimeError):
        run_op("collapse_sum_to", [np.zeros((2, 3)), np.array([2, 2])])


DIFF_TESTED = set(REDUCE_ONNX) | {"all", "any", "argmax", "argmin", "variance",
                                   "collapse_sum_like", "collapse_sum_to"}
