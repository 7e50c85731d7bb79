"""The executor's memory plan (``relay_ref.executor.memory``): intermediates of the entry's
dataflow graph reuse preallocated buffers, outputs never do."""

from __future__ import annotations

import numpy as np

import relay_ref as rr
from relay_ref.executor.compile import compile_module
from relay_ref.testing.typed_strategies import resnet_like_module


def _weights(mod: rr.IRModule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in mod.functions["main"].params[1:]:
        shape = p.type_annotation.shape
        if p.name_hint.startswith(("var", "gamma")):
            out[p.name_hint] = rng.uniform(0.5, 1.5, shape).astype("float32")
        else:
            scale = np.sqrt(2.0 / max(int(np.prod(shape[1:])), 1)) if len(shape) > 1 else 0.1
            out[p.name_hint] = (rng.standard_normal(shape) * scale).astype("float32")
    return out


def test_resnet_intermediates_share_buffers_with_disjoint_lifetimes() -> None:
    mod = rr.infer_types(resnet_like_module(blocks=(2, 1), image=32))
    weights = _weights(mod)
    exe = compile_module(mod, weights)
    memory = exe.memory
    assert memory.buffers and len(memory.views) > len(memory.buffers)  # reuse happened
    assert exe.plan.peak_bytes == sum(b.nbytes for b in memory.buffers)
    # values in one buffer are never live at the same time
    by_buffer: dict[int, list[tuple[int, int]]] = {}
    for call, (first, last) in memory.ranges.items():
        by_buffer.setdefault(memory.offsets[call], []).append((first, last))
    for ranges in by_buffer.values():
        ranges.sort()
        for (_, end), (start, _) in zip(ranges, ranges[1:], strict=False):
            assert end < start or end == start  # released at its last use, reused after
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype("float32")
    first = exe(x)
    kept = first.copy()
    assert not any(np.shares_memory(first, b) for b in memory.buffers)
    second = exe(x * 2)
    np.testing.assert_array_equal(first, kept)  # the first output was not overwritten
    expected = rr.evaluate(mod, x * 2, *weights.values())
    np.testing.assert_allclose(second, expected, rtol=1e-4, atol=1e-6)


def test_a_value_returned_or_tupled_is_never_a_buffer() -> None:
    mod = rr.parse("""
    def @main(%x: Tensor[(64, 64), float32], %w: Tensor[(64, 64), float32]) {
      %0 = nn.dense(%x, %w);
      %1 = nn.relu(%0);
      %2 = nn.dense(%1, %w);
      (%2, %1, %2)
    }""")
    exe = compile_module(mod)
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    a, b, c = exe(x, w)
    for value in (a, b, c):
        assert not any(np.shares_memory(value, buf) for buf in exe.memory.buffers)
    a2, b2, _ = exe(x + 1, w)
    expected = rr.evaluate(mod, x, w)
    for got, want in zip((a, b, c), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert not np.allclose(a, a2)


def test_reuse_can_be_turned_off_with_the_same_result() -> None:
    mod = rr.infer_types(resnet_like_module(blocks=(1,), image=16))
    weights = _weights(mod, 3)
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype("float32")
    planned = compile_module(mod, weights)
    fresh = compile_module(mod, weights, reuse_buffers=False)
    assert planned.memory.buffers and not fresh.memory.buffers
    np.testing.assert_allclose(planned(x), fresh(x), rtol=1e-5, atol=1e-7)


def test_let_form_is_planned_as_the_graph_form_is() -> None:
    """A let chain (ToANormalForm of the ResNet) gets a plan too: a let-bound variable is
    its value, so intermediates reuse buffers with disjoint lifetimes, same results."""
    from relay_ref.passes import get_pass

    mod = rr.infer_types(resnet_like_module(blocks=(2, 1), image=32))
    anf = rr.infer_types(get_pass("ToANormalForm")(mod))
    weights = _weights(mod)
    graph, lets = compile_module(mod, weights), compile_module(anf, weights)
    memory = lets.memory
    assert len(memory.views) >= len(graph.memory.views) > 0
    assert len(memory.views) > len(memory.buffers)  # reuse happened
    by_buffer: dict[int, list[tuple[int, int]]] = {}
    for call, (first, last) in memory.ranges.items():
        by_buffer.setdefault(memory.offsets[call], []).append((first, last))
    for ranges in by_buffer.values():
        ranges.sort()
        for (_, end), (start, _) in zip(ranges, ranges[1:], strict=False):
            assert end <= start
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype("float32")
    np.testing.assert_allclose(lets(x), graph(x), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(lets(x * 2), rr.evaluate(mod, x * 2, *weights.values()),
                               rtol=1e-4, atol=1e-6)
