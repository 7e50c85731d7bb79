"""cumsum / cumprod / sort / argsort / topk vs onnxruntime (CumSum, TopK) and NumPy; nonzero
and unique (data-dependent sizes) vs onnxruntime's NonZero and Unique."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType, TupleType
from relay_ref.ops.registry import AttrError, RelationError, get_op, make_attrs


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [False, True])
def test_cumsum_vs_onnxruntime(axis: int, exclusive: bool) -> None:
    x = rand((3, 4, 5))
    ours = run_op("cumsum", [x], axis=axis, exclusive=exclusive)
    (theirs,) = onnx_run("CumSum", [x, np.array(axis, np.int64)], exclusive=int(exclusive))
    close(ours, theirs, rtol=1e-5, atol=1e-5)


def test_cumsum_cumprod_vs_numpy() -> None:
    x = rand((3, 4), "int32", -3, 3)
    np.testing.assert_array_equal(run_op("cumsum", [x]), np.cumsum(x.reshape(-1)))
    out = run_op("cumsum", [x], axis=1, dtype="int64")
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1, dtype=np.int64))
    np.testing.assert_array_equal(run_op("cumprod", [x], axis=0), np.cumprod(x, axis=0))
    ex = run_op("cumprod", [x], axis=1, exclusive=True)
    np.testing.assert_array_equal(ex[:, 0], 1)
    np.testing.assert_array_equal(ex[:, 1:], np.cumprod(x, axis=1)[:, :-1])
    flat = run_op("cumsum", [x], exclusive=True)
    np.testing.assert_array_equal(flat, np.concatenate([[0], np.cumsum(x)[:-1]]))
    f = rand((2, 3))
    close(run_op("cumprod", [f], axis=-1, dtype="float64"), np.cumprod(f.astype("float64"), 1))
    rel = get_op("cumsum").relation
    assert rel([TensorType((ANY, 3), "float32")], make_attrs("cumsum", {})) == \
        TensorType((ANY,), "float32")
    with pytest.raises(RelationError):
        rel([TensorType((2, 3), "float32")], make_attrs("cumsum", {"axis": 2}))


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("ascend", [True, False])
def test_sort_argsort_vs_numpy(axis: int, ascend: bool) -> None:
    x = rand((4, 6), "int32", 0, 3)  # many ties
    idx = run_op("argsort", [x], axis=axis, is_ascend=ascend)
    vals = run_op("sort", [x], axis=axis, is_ascend=ascend)
    key = x if ascend else -x
    want = np.argsort(key, axis=axis, kind="stable")
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, axis=axis))
    f = rand((3, 5))
    out = run_op("argsort", [f], axis=axis, is_ascend=ascend, dtype="int64")
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.argsort(f if ascend else -f, axis=axis,
                                                  kind="stable"))
    u = np.array([3, 0, 255, 7, 0], np.uint8)
    np.testing.assert_array_equal(run_op("sort", [u], is_ascend=False), [255, 7, 3, 0, 0])


@pytest.mark.parametrize("k,axis,ascend", [(1, -1, False), (3, -1, False), (2, 0, True),
                                           (4, 1, True), (5, 1, False)])
def test_topk_vs_onnxruntime(k: int, axis: int, ascend: bool) -> None:
    for x in (rand((4, 5, 3)), rand((4, 5, 3), "float32", 0, 0) + rand((4, 5, 3), "int32",
                                                                        0, 2).astype("f4")):
        vals, idx = run_op("topk", [x], k=k, axis=axis, is_ascend=ascend, dtype="int64")
        tv, ti = onnx_run("TopK", [x, np.array([k], np.int64)], n_outputs=2, axis=axis,
                          largest=int(not ascend), sorted=1)
        close(vals, tv)
        np.testing.assert_array_equal(idx, ti)


def test_topk_ret_types_and_relation() -> None:
    x = rand((3, 6))
    both = run_op("topk", [x], k=2)
    assert isinstance(both, tuple) and both[1].dtype == np.int32
    np.testing.assert_array_equal(run_op("topk", [x], k=2, ret_type="values"), both[0])
    np.testing.assert_array_equal(run_op("topk", [x], k=2, ret_type="indices"), both[1])
    allk = run_op("topk", [x], k=0, ret_type="values")
    np.testing.assert_array_equal(allk, -np.sort(-x, axis=-1))
    rel = get_op("topk").relation
    assert rel([TensorType((ANY, ANY), "float32")], make_attrs("topk", {"k": 3})) == \
        TupleType((TensorType((ANY, 3), "float32"), TensorType((ANY, 3), "int32")))
    with pytest.raises(RelationError):
        rel([TensorType((2, 2), "float32")], make_attrs("topk", {"k": 3}))
    with pytest.raises(AttrError):
        make_attrs("topk", {"ret_type": "all"})


DIFF_TESTED = {"cumsum", "cumprod", "sort", "argsort", "topk"}


# -- nonzero / unique: data-dependent sizes (relations give ? for them) --------------------

from relay_ref.ir.shape import sym  # noqa: E402
from relay_ref.ir.types import IncompleteType  # noqa: E402
from relay_ref.ops.registry import NOT_YET  # noqa: E402


@pytest.mark.parametrize("shape, dtype", [((7,), "float32"), ((3, 4), "int32"),
                                          ((2, 3, 2), "bool"), ((0, 3), "float32")])
def test_nonzero_vs_onnxruntime(shape, dtype):
    rng = np.random.default_rng(len(shape))
    x = (rng.integers(0, 3, shape) * (rng.uniform(size=shape) > 0.4)).astype(dtype)
    got = run_op("nonzero", [x])
    (want,) = onnx_run("NonZero", [x], opset=13)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("attrs, shape", [
    ({}, (9,)), ({"sorted": 0}, (9,)), ({"axis": 0}, (6, 2)), ({"axis": 1, "sorted": 0},
                                                               (2, 7)),
    ({"axis": -1}, (2, 3, 5)), ({}, (1,)),
])
def test_unique_vs_onnxruntime(attrs, shape):
    x = np.random.default_rng(3).integers(0, 3, shape).astype(np.float32)
    want = onnx_run("Unique", [x], n_outputs=4, opset=11, **attrs)
    got = run_op("unique", [x], sorted=bool(attrs.get("sorted", 1)), return_index=True,
                 return_inverse=True, return_counts=True, axis=attrs.get("axis"))
    assert len(got) == 4
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    alone = run_op("unique", [x], sorted=bool(attrs.get("sorted", 1)), axis=attrs.get("axis"))
    np.testing.assert_array_equal(alone, want[0])  # one output: a tensor, not a tuple


def test_nonzero_unique_relations_leave_only_the_data_dependent_dims_unknown():
    n = sym("n")
    assert get_op("nonzero").relation([TensorType((n, 3), "float32")], None) == \
        TensorType((2, ANY), "int64")
    assert get_op("nonzero").relation([TensorType((), "bool")], None) == \
        TensorType((1, ANY), "int64")
    uniq = get_op("unique").relation
    full = make_attrs("unique", {"return_index": True, "return_inverse": True,
                                 "return_counts": True, "axis": 1})
    assert uniq([TensorType((n, 4, 5), "int32")], full) == TupleType((
        TensorType((n, ANY, 5), "int32"), TensorType((ANY,), "int64"),
        TensorType((4,), "int64"), TensorType((ANY,), "int64")))
    flat = make_attrs("unique", {"return_inverse": True})
    assert uniq([TensorType((n, 4), "int32")], flat) == TupleType((
        TensorType((ANY,), "int32"), TensorType((n * 4,), "int64")))
    assert uniq([IncompleteType()], flat) is NOT_YET
    with pytest.raises(AttrError):
        make_attrs("unique", {"axis": 1.5})
    with pytest.raises(RelationError, match="axis"):
        uniq([TensorType((3,), "float32")], make_attrs("unique", {"axis": 2}))


DIFF_TESTED |= {"nonzero", "unique"}
