"""Transforms vs onnxruntime (Reshape, Transpose, Squeeze, Unsqueeze, Concat, Split, Gather,
GatherElements, Slice, Expand, Tile, Where, Cast, OneHot, Range, Shape, Size) and NumPy
(TVM-only reshape codes, take modes and batch_dims, stack, repeat, reverse, init ops)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import OpRuntimeError, RelationError, get_op, make_attrs


@pytest.mark.parametrize("newshape", [(6, 4), (0, -1), (-1,), (2, 0, 2, 2)])
def test_reshape_vs_onnxruntime(newshape: tuple) -> None:
    x = rand((2, 3, 4))
    ours = run_op("reshape", [x], newshape=newshape)
    (theirs,) = onnx_run("Reshape", [x, np.array(newshape, "int64")])
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("newshape,expected", [
    ((-2,), (2, 3, 4)), ((0, -2), (2, 3, 4)), ((-3, 4), (6, 4)), ((2, -3), (2, 12)),
    ((-4, 1, 2, -2), (1, 2, 3, 4)), ((-4, -1, 1, 3, 4), (2, 1, 3, 4)),
    ((0, -4, 3, -1, -2), (2, 3, 1, 4)), ((-1, 0, 2), (4, 3, 2)), ((-3, -2), (6, 4)),
])
def test_reshape_special_codes(newshape: tuple, expected: tuple) -> None:
    x = rand((2, 3, 4))
    out = run_op("reshape", [x], newshape=newshape)
    assert out.shape == expected
    np.testing.assert_array_equal(out.reshape(-1), x.reshape(-1))


def test_reshape_like() -> None:
    x, like = rand((2, 3, 4)), rand((4, 6))
    assert run_op("reshape_like", [x, like]).shape == (4, 6)
    out = run_op("reshape_like", [x, rand((6, 9))], lhs_begin=0, lhs_end=2, rhs_end=1)
    assert out.shape == (6, 4)


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, -3, -2)])
def test_transpose_vs_onnxruntime(axes: tuple | None) -> None:
    x = rand((2, 3, 4))
    ours = run_op("transpose", [x], **({} if axes is None else {"axes": axes}))
    perm = list(range(3))[::-1] if axes is None else [a % 3 for a in axes]
    np.testing.assert_array_equal(ours, onnx_run("Transpose", [x], perm=perm)[0])


def test_squeeze_and_expand_dims_vs_onnxruntime() -> None:
    x = rand((1, 3, 1, 2))
    np.testing.assert_array_equal(run_op("squeeze", [x]), onnx_run("Squeeze", [x])[0])
    np.testing.assert_array_equal(run_op("squeeze", [x], axis=(-2,)),
                                  onnx_run("Squeeze", [x, np.array([2], "int64")])[0])
    y = rand((3, 2))
    for axis, num in [(0, 1), (1, 2), (-1, 1), (2, 3)]:
        want = y.reshape(y.shape[:axis % 3] + (1,) * num + y.shape[axis % 3:])
        out = run_op("expand_dims", [y], axis=axis, num_newaxis=num)
        np.testing.assert_array_equal(out, want)
    axes = np.array([1], "int64")
    np.testing.assert_array_equal(run_op("expand_dims", [y], axis=1),
                                  onnx_run("Unsqueeze", [y, axes])[0])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate_and_stack(axis: int) -> None:
    a, b = rand((2, 3, 4)), rand((2, 3, 4))
    ours = run_op("concatenate", [(a, b, a)], axis=axis)
    np.testing.assert_array_equal(ours, onnx_run("Concat", [a, b, a], axis=axis)[0])
    np.testing.assert_array_equal(run_op("stack", [(a, b)], axis=axis),
                                  np.stack([a, b], axis=axis))


@pytest.mark.parametrize("ios,axis", [(3, 1), ((1, 3), 2), ((2,), -1), (1, 0)])
def test_split_vs_onnxruntime(ios: int | tuple, axis: int) -> None:
    x = rand((2, 3, 4))
    ours = run_op("split", [x], indices_or_sections=ios, axis=axis)
    d = x.shape[axis]
    if isinstance(ios, int):
        sizes = [d // ios] * ios
    else:
        bounds = [0, *ios, d]
        sizes = [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)]
    theirs = onnx_run("Split", [x, np.array(sizes, "int64")], n_outputs=len(sizes),
                      axis=axis)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(o, t)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_vs_onnxruntime_gather(axis: int) -> None:
    x = rand((3, 4, 5))
    idx = rand((2, 3), "int64", 0, 2)
    for mode in ("clip", "wrap", "fast"):
        ours = run_op("take", [x, idx], axis=axis, mode=mode)
        np.testing.assert_array_equal(ours, onnx_run("Gather", [x, idx], axis=axis)[0])


def test_take_modes_and_flat_and_batch_dims() -> None:
    x = rand((3, 4))
    idx = np.array([-5, -1, 0, 3, 7], "int32")
    np.testing.assert_array_equal(run_op("take", [x, idx], axis=1),
                                  np.take(x, idx, axis=1, mode="clip"))  # clamps negatives
    np.testing.assert_array_equal(run_op("take", [x, idx], axis=1, mode="wrap"),
                                  np.take(x, idx, axis=1, mode="wrap"))
    np.testing.assert_array_equal(run_op("take", [x, idx]), np.take(x, idx, mode="clip"))
    with pytest.raises(OpRuntimeError):
        run_op("take", [x, idx], axis=1, mode="fast")
    # batch_dims: out[b, i, ...] = data[b, idx[b, i], ...]
    d, bi = rand((2, 5, 3)), rand((2, 4), "int32", 0, 4)
    out = run_op("take", [d, bi], axis=1, batch_dims=1)
    want = np.stack([d[b][bi[b]] for b in range(2)])
    np.testing.assert_array_equal(out, want)
    d2, bi2 = rand((2, 3, 5, 2)), rand((2, 4), "int32", 0, 4)
    out2 = run_op("take", [d2, bi2], axis=2, batch_dims=-1)
    want2 = np.stack([np.take(d2[b], bi2[b], axis=1) for b in range(2)])
    np.testing.assert_array_equal(out2, want2)


def test_gather_vs_onnxruntime_gather_elements() -> None:
    x = rand((3, 4))
    for axis in (0, 1):
        idx = rand((3, 4), "int64", 0, x.shape[axis] - 1)
        np.testing.assert_array_equal(run_op("gather", [x, idx], axis=axis),
                                      onnx_run("GatherElements", [x, idx], axis=axis)[0])


SLICE_CASES = [
    {"begin": (0, 1), "end": (2, 3)},
    {"begin": (1, -1), "end": (2, -4), "strides": (1, -1)},
    {"begin": (-2,), "end": (100,)},
    {"begin": (0, 0, 3), "end": (3, 4, -100), "strides": (2, 3, -2)},
    {"begin": (1,), "end": (3,), "axes": (2,)},
    {"begin": (3, 1), "end": (0, 10), "strides": (-1, 2), "axes": (1, -1)},
]


@pytest.mark.parametrize("attrs", SLICE_CASES)
def test_strided_slice_vs_onnxruntime(attrs: dict) -> None:
    x = rand((3, 4, 5))
    ours = run_op("strided_slice", [x], **attrs)
    n = len(attrs["begin"])
    axes = attrs.get("axes", tuple(range(n)))
    strides = attrs.get("strides", (1,) * n)
    (theirs,) = onnx_run("Slice", [x, np.array(attrs["begin"], "int64"),
                                   np.array(attrs["end"], "int64"),
                                   np.array(axes, "int64"), np.array(strides, "int64")])
    np.testing.assert_array_equal(ours, theirs)


def test_strided_slice_size_mode() -> None:
    x = rand((4, 5))
    out = run_op("strided_slice", [x], begin=(1, 2), end=(2, -1), slice_mode="size")
    np.testing.assert_array_equal(out, x[1:3, 2:])


def test_broadcast_tile_repeat_reverse_where() -> None:
    x = rand((3, 1))
    (theirs,) = onnx_run("Expand", [x, np.array([2, 3, 4], "int64")])
    np.testing.assert_array_equal(run_op("broadcast_to", [x], shape=(2, 3, 4)), theirs)
    np.testing.assert_array_equal(run_op("broadcast_to_like", [x, rand((2, 3, 4))]), theirs)
    (theirs,) = onnx_run("Tile", [x, np.array([2, 3], "int64")])
    np.testing.assert_array_equal(run_op("tile", [x], reps=(2, 3)), theirs)
    np.testing.assert_array_equal(run_op("tile", [x], reps=(2, 1, 3)), np.tile(x, (2, 1, 3)))
    y = rand((2, 3))
    np.testing.assert_array_equal(run_op("repeat", [y], repeats=2, axis=1),
                                  np.repeat(y, 2, axis=1))
    np.testing.assert_array_equal(run_op("reverse", [y], axis=-1), y[:, ::-1])
    c, a, b = rand((2, 1), "bool"), rand((1, 3)), rand((2, 3))
    np.testing.assert_array_equal(run_op("where", [c, a, b]), onnx_run("Where", [c, a, b])[0])


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"),
                                     ("float32", "bool"), ("int32", "int8"),
                                     ("bool", "float32"), ("float32", "float16")])
def test_cast_vs_onnxruntime(src: str, dst: str) -> None:
    x = rand((3, 4), src, -100, 100)
    to = {"int32": 6, "float32": 1, "bool": 9, "int8": 3, "float16": 10}[dst]
    (theirs,) = onnx_run("Cast", [x], to=to)
    np.testing.assert_array_equal(run_op("cast", [x], dtype=dst), theirs)
    np.testing.assert_array_equal(run_op("cast_like", [x, np.zeros((), dst)]), theirs)


def test_reinterpret() -> None:
    x = np.array([1.0, -2.0], "float32")
    np.testing.assert_array_equal(run_op("reinterpret", [x], dtype="int32"), x.view("int32"))


def test_init_ops() -> None:
    np.testing.assert_array_equal(run_op("zeros", [], shape=(2, 3), dtype="int32"),
                                  np.zeros((2, 3), "int32"))
    assert run_op("ones", [], shape=(2,)).dtype == np.float32
    np.testing.assert_array_equal(run_op("full", [np.array(2.5, "float32")], shape=(2, 2)),
                                  np.full((2, 2), 2.5, "float32"))
    np.testing.assert_array_equal(
        run_op("full", [np.array(2.5, "float32")], shape=(2,), dtype="int32"), [2, 2])
    x = rand((2, 3), "int32")
    np.testing.assert_array_equal(run_op("zeros_like", [x]), np.zeros_like(x))
    np.testing.assert_array_equal(run_op("ones_like", [x]), np.ones_like(x))
    np.testing.assert_array_equal(run_op("full_like", [x, np.array(7, "int32")]),
                                  np.full_like(x, 7))


@pytest.mark.parametrize("start,stop,step,dtype", [(0, 5, 1, "float32"), (1, 2, 0.3,
                                                   "float32"), (10, 2, -3, "int32"),
                                                   (0, 0, 1, "int32")])
def test_arange_vs_onnxruntime_range(start: float, stop: float, step: float,
                                     dtype: str) -> None:
    args = [np.array(v, dtype) for v in (start, stop, step)]
    ours = run_op("arange", args, dtype=dtype, start=float(start), stop=float(stop),
                  step=float(step))
    (theirs,) = onnx_run("Range", args)
    close(ours, theirs)
    assert run_op("arange", args, dtype=dtype).shape == theirs.shape


def test_shape_of_and_size_vs_onnxruntime() -> None:
    x = rand((2, 3, 4))
    out = run_op("shape_of", [x])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, onnx_run("Shape", [x])[0])
    assert run_op("shape_of", [x], dtype="int64").dtype == np.int64
    np.testing.assert_array_equal(run_op("ndarray_size", [x]), onnx_run("Size", [x])[0])


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_vs_onnxruntime(axis: int) -> None:
    idx = rand((2, 3), "int64", 0, 4)
    on, off = np.array(5.0, "float32"), np.array(-1.0, "float32")
    ours = run_op("one_hot", [idx, on, off], depth=4, axis=axis)
    (theirs,) = onnx_run("OneHot", [idx, np.array(4, "int64"), np.array([-1.0, 5.0],
                                                                        "float32")],
                         axis=axis)
    np.testing.assert_array_equal(ours, theirs)


GATHER_ND_CASES = [
    # data shape, ONNX-style indices shape (..., M), batch_dims
    ((3, 4, 5), (2, 2), 0),
    ((3, 4, 5), (2, 3, 1), 0),
    ((3, 4, 5), (4, 3), 0),
    ((3, 4, 5, 2), (3, 2, 1), 1),
    ((2, 3, 4, 5), (2, 3, 4, 1), 2),
]


@pytest.mark.parametrize("dshape,ishape,b", GATHER_ND_CASES)
def test_gather_nd_vs_onnxruntime(dshape: tuple, ishape: tuple, b: int) -> None:
    x = rand(dshape)
    m = ishape[-1]
    bounds = np.array(dshape[b:b + m])
    ind = (np.random.default_rng(7).integers(0, 10 ** 6, size=ishape) % bounds)
    ind = ind - bounds * (np.random.default_rng(8).random(ishape) < 0.3)  # some negative
    ind = ind.astype(np.int64)
    ours = run_op("gather_nd", [x, np.moveaxis(ind, -1, 0).astype("int32")], batch_dims=b)
    (theirs,) = onnx_run("GatherND", [x, ind], batch_dims=b)
    np.testing.assert_array_equal(ours, theirs)


def test_gather_nd_relation_and_errors() -> None:
    rel = get_op("gather_nd").relation
    at = make_attrs("gather_nd", {})
    assert rel([TensorType((3, ANY, 5), "float32"), TensorType((2, 7), "int32")], at) == \
        TensorType((7, 5), "float32")
    with pytest.raises(RelationError):
        rel([TensorType((3, 4), "float32"), TensorType((ANY, 7), "int32")], at)
    assert rel([TensorType((3, 4), "float32"), TensorType((ANY, 7), "int32")],
               make_attrs("gather_nd", {"index_rank": 1})) == TensorType((7, 4), "float32")
    with pytest.raises(RelationError):
        rel([TensorType((3, 4), "float32"), TensorType((3, 7), "int32")], at)
    with pytest.raises(OpRuntimeError):
        run_op("gather_nd", [rand((2, 3)), np.array([[2]], "int32")])


DIFF_TESTED = {
    "reshape", "reshape_like", "transpose", "squeeze", "expand_dims", "concatenate", "stack",
    "split", "take", "gather", "strided_slice", "broadcast_to", "broadcast_to_like", "tile",
    "repeat", "reverse", "where", "cast", "cast_like", "reinterpret", "zeros", "ones",
    "full", "zeros_like", "ones_like", "full_like", "arange", "shape_of", "ndarray_size",
    "one_hot", "gather_nd",
}
