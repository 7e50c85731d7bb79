"""Fused elementwise kernels split over the work pool (``relay_ref.executor.fused``:
``launch_tasks`` / ``chunk_views``) against the same kernel run whole and against the
operators' references (``rr.evaluate``).

The pool's contract (``relay_ref.compute.cpu.parallel``) lets tasks run in any order on any
thread; with the serial pool they run in order on the caller, which still exercises every
range's slicing. The size threshold is lowered here so that small arrays take the split
path (hypothesis varies dims within a few broadcast patterns: a handful of kernels)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import relay_ref as rr
from relay_ref.compute.cpu import parallel
from relay_ref.executor import fused
from relay_ref.executor.fused import build_elementwise, chunk_views
from relay_ref.ops.registry import OpRuntimeError


@contextlib.contextmanager
def _splitting(threads: int = 3):
    """Every kernel result of 4+ elements split, on a pool of ``threads`` threads."""
    limit, before = fused.PARALLEL_MIN_ELEMENTS, parallel.threads()
    fused.PARALLEL_MIN_ELEMENTS = 4
    parallel.set_threads(threads)
    try:
        yield
    finally:
        fused.PARALLEL_MIN_ELEMENTS = limit
        parallel.set_threads(before)


def _kernel(text: str):
    mod = rr.infer_types(rr.parse(text))
    fn = mod.functions["main"]
    k = build_elementwise(fn.params, fn.body, mod.checked_types)
    assert k is not None, text
    return k, mod


def _program(body: str, params: dict[str, tuple[tuple[int, ...], str]]) -> str:
    sig = ", ".join(f"%{n}: Tensor[({', '.join(map(str, s))}{',' if len(s) == 1 else ''}), "
                    f"{d}]" for n, (s, d) in params.items())
    return f"def @main({sig}) {{\n{body}\n}}"


# (x shape, y shape) for dims a, b, c: each collapsed layout the models' tails have
PATTERNS = {
    "same": lambda a, b, c: ((a, b, c), (a, b, c)),  # rank 1
    "bias": lambda a, b, c: ((1, a, b, c), (a, 1, 1)),  # (C, HW): conv + bias
    "scalar": lambda a, b, c: ((a, b), ()),  # rank 1, y broadcast
    "row": lambda a, b, c: ((a, b), (b,)),  # (1, C) rows: y broadcast on axis 0
    "outer": lambda a, b, c: ((a, 1), (1, b)),  # both broadcast
    "batch_bias": lambda a, b, c: ((a, b, c), (b, 1)),  # rank 3
}
_DIM = st.integers(1, 9)
_KERNELS: dict[str, object] = {}


def _pattern_kernel(name: str, sx, sy, swap: bool):
    if swap:
        sx, sy = sy, sx
    text = _program("nn.relu(add(multiply(%x, %y), %y))",
                    {"x": (sx, "float32"), "y": (sy, "float32")})
    key = text
    if key not in _KERNELS:
        _KERNELS[key] = _kernel(text)
    return _KERNELS[key], sx, sy


@given(st.data())
def test_split_equals_whole_and_reference(data):
    name = data.draw(st.sampled_from(sorted(PATTERNS)))
    dims = (data.draw(_DIM), data.draw(_DIM), data.draw(_DIM))
    (k, mod), sx, sy = _pattern_kernel(name, *PATTERNS[name](*dims), data.draw(st.booleans()))
    elems = st.floats(-4, 4, width=32)
    x = data.draw(hnp.arrays("float32", sx, elements=elems))
    y = data.draw(hnp.arrays("float32", sy, elements=elems))
    with _splitting(data.draw(st.integers(1, 5))):
        got = k([x, y])
    want = rr.evaluate(mod, x, y)
    np.testing.assert_array_equal(got, want)


@given(st.integers(1, 40), st.integers(1, 7), st.data())
def test_chunk_views_cover_the_output_once(outer, inner, data):
    """Any partition of the outer axis into ranges computes every element exactly once."""
    (k, _), sx, sy = _pattern_kernel("bias", *PATTERNS["bias"](outer, inner, 1), False)
    rng = np.random.default_rng(outer * 8 + inner)
    x = rng.standard_normal(sx).astype(np.float32)
    y = rng.standard_normal(sy).astype(np.float32)
    want = k([x, y])
    n = int(k.dims[0])  # the collapsed outer axis (inner when outer is 1)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=6))))
    bounds = [0, *[c for c in cuts if 0 < c < n], n]
    out = np.full(want.size, np.nan, np.float32)
    flat = [x.reshape(-1), y.reshape(-1)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        o, sub, xs = chunk_views(out, k.dims, k.strides, flat, lo, hi)
        assert k.fn(o, sub, k.strides, *xs) == 0
    np.testing.assert_array_equal(out.reshape(want.shape), want)


def test_split_in_place_bias_relu():
    text = _program("nn.relu(nn.bias_add(%x, %b))",
                    {"x": ((2, 6, 3, 5), "float32"), "b": ((6,), "float32")})
    k, mod = _kernel(text)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 3, 5)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    want = rr.evaluate(mod, x, b)
    with _splitting():
        assert k([x, b], out=x) is x
    np.testing.assert_array_equal(x, want)


def test_split_error_in_one_range_raises_the_references_error():
    text = _program("floor_divide(%x, %y)", {"x": ((6, 4), "int32"), "y": ((6, 4), "int32")})
    k, _ = _kernel(text)
    x = np.arange(24, dtype=np.int32).reshape(6, 4)
    y = np.ones((6, 4), np.int32)
    y[4, 2] = 0  # only the last ranges see it
    with _splitting(), pytest.raises(OpRuntimeError, match="floor_divide"):
        k([x, y])
    with _splitting():
        np.testing.assert_array_equal(k([x, y + (y == 0)]), x // (y + (y == 0)))


def test_small_results_and_one_thread_run_whole(monkeypatch):
    """Under the threshold, or with one thread, the kernel is one call (no tasks); above
    it, with two threads, several tasks."""
    calls: list[int] = []
    monkeypatch.setattr(parallel, "run_tasks", lambda n, task: calls.append(n))
    k, _ = _kernel(_program("nn.relu(%x)", {"x": ((64, 64), "float32")}))
    x = np.ones((64, 64), np.float32)
    before = parallel.threads()
    try:
        parallel.set_threads(2)
        np.testing.assert_array_equal(k([x]), x)  # 4096 elements: under the threshold
        parallel.set_threads(1)
        monkeypatch.setattr(fused, "PARALLEL_MIN_ELEMENTS", 4)
        np.testing.assert_array_equal(k([x]), x)
        assert calls == []
        parallel.set_threads(2)
        k([x])  # the stub runs no task: only the split is checked
        assert len(calls) == 1 and calls[0] > 1
    finally:
        parallel.set_threads(before)
