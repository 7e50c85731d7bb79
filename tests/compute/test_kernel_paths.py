"""Both paths of the pooling, softmax and reduction drivers (``compute/cpu/pool.py``,
``softmax.py``, ``reduce.py`` over ``blocks.py``) against the ops' NumPy references.

A driver calls its serial ``nogil`` numba kernel once, or over blocks of planes / rows as
``parallel.run_tasks`` tasks when the pool has several threads and the work is large (the
same compiled kernel: the path never compiles anything new). The tests force each path
(``paths``: ``blocks.MIN_TASK_WORK`` and the pool's thread count are read at call time) on
hypothesis-drawn shapes and attributes, then check real sizes on both sides of the real
task threshold.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_kernel_check import check_kernel
from test_pool import pool_cases

from relay_ref.compute.cpu import blocks, parallel

PATHS = ("serial", "split")
TOL = {"rtol": 1e-4, "atol": 1e-5}


@contextlib.contextmanager
def paths(path: str) -> Iterator[None]:
    """Force ``path``: "serial" (one call), "split" (two threads, a task per item:
    ``run_tasks`` gets several tasks)."""
    saved = (blocks.MIN_TASK_WORK, parallel.threads())
    try:
        if path == "split":
            blocks.MIN_TASK_WORK = 1
            parallel.set_threads(2)
        else:
            parallel.set_threads(1)
        yield
    finally:
        blocks.MIN_TASK_WORK = saved[0]
        parallel.set_threads(saved[1])


def _rand(seed: int, shape: tuple[int, ...], dtype: str, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(-1, 1, shape) * scale).astype(dtype)


# -- blocks --------------------------------------------------------------------------------

@given(items=st.integers(1, 500), work=st.integers(1, 1 << 16), threads=st.integers(1, 8))
def test_task_count_and_bounds_cover_the_items(items: int, work: int, threads: int) -> None:
    saved = parallel.threads()
    try:
        parallel.set_threads(threads)
        count = blocks.task_count(items, work)
    finally:
        parallel.set_threads(saved)
    assert 1 <= count <= max(1, min(items, 4 * threads))
    if threads == 1 or items * work < 2 * blocks.MIN_TASK_WORK:
        assert count == 1
    ranges = [blocks.bounds(i, count, items) for i in range(count)]
    assert ranges[0][0] == 0 and ranges[-1][1] == items
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    sizes = [hi - lo for lo, hi in ranges]
    assert max(sizes) - min(sizes) <= 1


# -- pooling ---------------------------------------------------------------------------------

@settings(max_examples=60)
@given(case=pool_cases(avg=True), seed=st.integers(0, 2**16), path=st.sampled_from(PATHS),
       kind=st.sampled_from(["max", "avg"]))
def test_pool2d_paths(case: tuple, seed: int, path: str, kind: str) -> None:
    shape, attrs, dtype = case
    if kind == "max":
        attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
    if dtype.startswith("int"):
        dtype = "float32"
    with paths(path):
        check_kernel(f"nn.{kind}_pool2d", [_rand(seed, shape, dtype)], attrs, **TOL)


@settings(max_examples=40)
@given(n=st.integers(1, 3), c=st.integers(1, 5), h=st.integers(1, 6), w=st.integers(1, 6),
       layout=st.sampled_from(["NCHW", "NHWC"]), dtype=st.sampled_from(["float32", "float64"]),
       kind=st.sampled_from(["avg", "max"]), path=st.sampled_from(PATHS),
       seed=st.integers(0, 2**16))
def test_global_pool2d_paths(n: int, c: int, h: int, w: int, layout: str, dtype: str,
                             kind: str, path: str, seed: int) -> None:
    shape = (n, c, h, w) if layout == "NCHW" else (n, h, w, c)
    with paths(path):
        check_kernel(f"nn.global_{kind}_pool2d", [_rand(seed, shape, dtype)],
                     {"layout": layout}, **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pools_at_real_sizes_with_two_threads(layout: str, kind: str) -> None:
    """ResNet's stem pooling and global pooling (1 and 4 x 2048 x 7 x 7) with the real task
    sizes, serial and with two threads (split into tasks)."""
    stem = (1, 64, 56, 56) if layout == "NCHW" else (1, 56, 56, 64)
    attrs = {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1), "layout": layout}
    saved = parallel.threads()
    try:
        for threads in (1, 2):
            parallel.set_threads(threads)
            check_kernel(f"nn.{kind}_pool2d", [_rand(0, stem, "float32")], attrs, **TOL)
            for n in (1, 4):
                shape = (n, 2048, 7, 7) if layout == "NCHW" else (n, 7, 7, 2048)
                check_kernel(f"nn.global_{kind}_pool2d", [_rand(n, shape, "float32")],
                             {"layout": layout}, **TOL)
    finally:
        parallel.set_threads(saved)


# -- softmax ---------------------------------------------------------------------------------

@settings(max_examples=60)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
       dtype=st.sampled_from(["float32", "float64"]), path=st.sampled_from(PATHS),
       op=st.sampled_from(["nn.softmax", "nn.log_softmax"]), seed=st.integers(0, 2**16),
       data=st.data())
def test_softmax_paths(shape: list[int], dtype: str, path: str, op: str, seed: int,
                       data: st.DataObject) -> None:
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    with paths(path):
        check_kernel(op, [_rand(seed, tuple(shape), dtype, 8.0)], {"axis": axis},
                     rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rows", [1, 9, 65, 66, 200])
@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_softmax_both_sides_of_the_task_threshold(rows: int, op: str) -> None:
    """Rows of 1000 (one task up to 65 rows with two threads, several from 66), the
    middle-axis form too; with one and two threads."""
    saved = parallel.threads()
    try:
        for threads in (1, 2):
            parallel.set_threads(threads)
            x = _rand(rows, (rows, 1000), "float32", 10.0)
            check_kernel(op, [x], {"axis": -1}, rtol=1e-5, atol=1e-6)
            check_kernel(op, [np.ascontiguousarray(x.T)], {"axis": 0}, rtol=1e-5, atol=1e-6)
    finally:
        parallel.set_threads(saved)


# -- reductions ------------------------------------------------------------------------------

@settings(max_examples=60)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
       dtype=st.sampled_from(["float32", "float64"]), path=st.sampled_from(PATHS),
       op=st.sampled_from(["sum", "mean"]), keepdims=st.booleans(),
       seed=st.integers(0, 2**16), data=st.data())
def test_float_sum_paths(shape: list[int], dtype: str, path: str, op: str, keepdims: bool,
                         seed: int, data: st.DataObject) -> None:
    """Sums over a run of consecutive axes (the numba kernels' case) on every path."""
    a = data.draw(st.integers(0, len(shape) - 1), label="first axis")
    b = data.draw(st.integers(a + 1, len(shape)), label="end axis")
    with paths(path):
        check_kernel(op, [_rand(seed, tuple(shape), dtype, 2.0)],
                     {"axis": tuple(range(a, b)), "keepdims": keepdims}, **TOL)


@pytest.mark.parametrize("shape,axis", [((8, 1023), (1,)), ((8, 1025), (1,)),
                                        ((64, 3136), (1,)), ((4, 600, 5), (1,))])
def test_float_sums_both_sides_of_the_task_threshold(shape: tuple[int, ...],
                                                axis: tuple[int, ...]) -> None:
    saved = parallel.threads()
    try:
        for threads in (1, 2):
            parallel.set_threads(threads)
            for op in ("sum", "mean"):
                check_kernel(op, [_rand(1, shape, "float32", 2.0)], {"axis": axis}, **TOL)
    finally:
        parallel.set_threads(saved)
