"""Layout kernels (``cpu_tensor.reshape`` / ``transpose`` / ``squeeze`` / ``expand_dims`` /
``batch_flatten``, which return views, and ``concatenate``, which writes ``out``) against
the ops' NumPy references: random shapes and attributes, invalid attributes raising as the
reference does, and views (no copies) of contiguous inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel

from relay_ref.ops.registry import make_attrs, op_kernel

SHAPES = st.lists(st.integers(1, 4), max_size=4)
VIEW_OPS = ["reshape", "transpose", "squeeze", "expand_dims", "nn.batch_flatten"]


def _x(shape: list[int] | tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return np.arange(math.prod(shape), dtype=dtype).reshape(shape)


@pytest.mark.parametrize("op", VIEW_OPS)
def test_view_kernels_say_so(op: str) -> None:
    assert getattr(op_kernel(op), "returns_view", False) is True


def _newshapes(shape: list[int]) -> list[tuple[int, ...]]:
    """TVM newshape codes worth trying on ``shape`` (some of them invalid for it)."""
    n = math.prod(shape)
    cands = [(-1,), (n,), (-2,), (0, -1), (-1, 1), (1, -1, 1), (-3, -2), (0, -3),
             (-4, 1, -1, -2), (-4, -1, 2, -2), (2, -1), (n + 1,), (0, 0, 0), (-1, -1)]
    if shape:
        cands.append((shape[0], -1))
    return cands


@settings(max_examples=50)
@given(shape=SHAPES, data=st.data(), dtype=st.sampled_from(["float32", "int64", "bool"]))
def test_reshape(shape: list[int], data: st.DataObject, dtype: str) -> None:
    newshape = data.draw(st.sampled_from(_newshapes(shape)), label="newshape")
    x = _x(shape, "int64").astype(dtype)
    want = check_kernel("reshape", [x], {"newshape": newshape})
    if want is not None:  # valid: a view of the contiguous input
        got = op_kernel("reshape")([x], make_attrs("reshape", {"newshape": newshape}))
        assert x.size == 0 or np.shares_memory(got, x)


@settings(max_examples=40)
@given(shape=SHAPES, data=st.data())
def test_transpose(shape: list[int], data: st.DataObject) -> None:
    nd = len(shape)
    axes = data.draw(st.one_of(st.none(), st.permutations(range(nd)).map(tuple),
                               st.just((0,) * max(nd, 1))), label="axes")
    if axes is not None and data.draw(st.booleans(), label="negative"):
        axes = tuple(a - nd for a in axes)
    x = _x(shape)
    if data.draw(st.booleans(), label="strided") and nd:
        x = x[..., ::2]
    check_kernel("transpose", [x], {} if axes is None else {"axes": axes})


@settings(max_examples=40)
@given(shape=st.lists(st.integers(1, 3), max_size=4), data=st.data())
def test_squeeze_and_expand_dims(shape: list[int], data: st.DataObject) -> None:
    nd = len(shape)
    x = _x(shape)
    axis = data.draw(st.one_of(st.none(), st.lists(st.integers(-nd, nd - 1), unique=True,
                                                   max_size=nd).map(tuple)) if nd else
                     st.none(), label="squeeze axis")
    check_kernel("squeeze", [x], {} if axis is None else {"axis": axis})
    e_axis = data.draw(st.integers(-nd - 2, nd + 1), label="expand axis")
    num = data.draw(st.integers(0, 2), label="num_newaxis")
    if -nd - 1 <= e_axis <= nd:
        check_kernel("expand_dims", [x], {"axis": e_axis, "num_newaxis": num})
    else:  # out of range: an attribute error at run time, as in the reference
        check_kernel("expand_dims", [x], {"axis": e_axis, "num_newaxis": num})


@settings(max_examples=30)
@given(shape=st.lists(st.integers(0, 3), min_size=1, max_size=4), strided=st.booleans())
def test_batch_flatten(shape: list[int], strided: bool) -> None:
    x = _x(shape)
    if strided:
        x = x[..., ::2]
    check_kernel("nn.batch_flatten", [x], {})


@settings(max_examples=40)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), data=st.data(),
       dtype=st.sampled_from(["float32", "int32"]))
def test_concatenate(shape: list[int], data: st.DataObject, dtype: str) -> None:
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1), label="axis")
    parts = []
    for i in range(data.draw(st.integers(1, 3), label="parts")):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3), label=f"extent {i}")
        parts.append(_x(s, dtype) + i)
    check_kernel("concatenate", [tuple(parts)], {"axis": axis})


def test_concatenate_mismatch_raises_as_reference() -> None:
    bad = (np.zeros((2, 3), "float32"), np.zeros((2, 4), "float32"))
    check_kernel("concatenate", [bad], {"axis": 0})
    out = np.empty((4, 3), "float32")
    with pytest.raises(Exception, match="concatenate"):
        op_kernel("concatenate")([bad], make_attrs("concatenate", {"axis": 0}), out=out)


def test_views_of_contiguous_inputs() -> None:
    x = _x((2, 3, 4))
    for op, attrs in [("reshape", {"newshape": (6, 4)}), ("transpose", {}),
                      ("squeeze", {}), ("expand_dims", {"axis": 1}),
                      ("nn.batch_flatten", {})]:
        got = op_kernel(op)([x], make_attrs(op, attrs))
        assert np.shares_memory(got, x), op
