"""Concatenations written in place (``relay_ref.executor.inplace_concat`` with the memory
plan, ``relay_ref.executor.memory``, and the concatenate kernel,
``relay_ref.ops.cpu_tensor.concatenate``): the parts' producers write into slices of the
concatenation's buffer, results equal the definitional interpreter's, and what does not
qualify is left as it was."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import relay_ref as rr
from relay_ref.executor.compile import compile_module
from relay_ref.ops import cpu_tensor
from relay_ref.ops.registry import get_op, make_attrs

# -- the kernel -------------------------------------------------------------------------------

_EXTENT = st.integers(1, 4)


@given(st.data())
def test_kernel_with_parts_in_place_equals_reference(data):
    """Parts that are their slices of ``out``, parts elsewhere, parts overlapping ``out``
    in other places: always the reference's result."""
    rank = data.draw(st.integers(1, 4))
    axis = data.draw(st.integers(0, rank - 1))
    rest = [data.draw(_EXTENT) for _ in range(rank)]
    extents = data.draw(st.lists(_EXTENT, min_size=1, max_size=4))
    shapes = [tuple(e if i == axis else rest[i] for i in range(rank)) for e in extents]
    parts = [data.draw(hnp.arrays("float32", s, elements=st.floats(-9, 9, width=32)))
             for s in shapes]
    attrs = make_attrs("concatenate", {"axis": axis - rank if data.draw(st.booleans())
                                       else axis})
    shape = get_op("concatenate").reference([tuple(parts)], attrs).shape
    out = np.full(shape, np.nan, np.float32)
    args = list(parts)
    start = 0
    for k, p in enumerate(parts):
        index = (slice(None),) * axis + (slice(start, start + p.shape[axis]),)
        how = data.draw(st.sampled_from(["apart", "placed", "misplaced"]))
        if how == "placed":  # the value already in its slice (as the memory plan does)
            out[index] = p
            args[k] = out[index]
        elif how == "misplaced" and out.size >= p.size:  # elsewhere in out: read first
            flat = out.reshape(-1)
            at = data.draw(st.integers(0, out.size - p.size))
            if out.flags.c_contiguous:
                flat[at:at + p.size] = p.reshape(-1)
                args[k] = flat[at:at + p.size].reshape(p.shape)
        start += p.shape[axis]
    # the values at the call (a misplaced part may have overwritten a placed one)
    want = get_op("concatenate").reference([tuple(a.copy() for a in args)], attrs)
    got = cpu_tensor.concatenate([tuple(args)], attrs, out=out)
    assert got is out
    np.testing.assert_array_equal(out, want)


def test_kernel_copies_only_the_parts_not_in_place(monkeypatch):
    """A part that is its slice of ``out`` as the memory plan makes it (a reshaped run of
    the buffer: other strides on the axis of extent 1) is not copied; the others are."""
    out = np.zeros((1, 5, 3, 2), np.float32)
    placed = out.reshape(-1)[6:24].reshape(1, 3, 3, 2)  # channels 1-3
    assert placed.strides != out[:, 1:4].strides
    placed[...] = 7.0
    first, last = np.ones((1, 1, 3, 2), np.float32), np.full((1, 1, 3, 2), 2.0, np.float32)
    copied = []
    real = np.copyto
    monkeypatch.setattr(np, "copyto", lambda dst, src, **kw: (copied.append(src.shape),
                                                               real(dst, src, **kw)))
    monkeypatch.setattr(np, "concatenate", None)  # no temporary result either
    attrs = make_attrs("concatenate", {"axis": 1})
    cpu_tensor.concatenate([(first, placed, last)], attrs, out=out)
    assert copied == [(1, 1, 3, 2), (1, 1, 3, 2)]
    np.testing.assert_array_equal(out[0, :, 0, 0], [1, 7, 7, 7, 2])


def test_kernel_mismatched_parts_raise_the_references_error():
    out = np.zeros((1, 4, 2), np.float32)
    a = out[:, 0:2]
    b = np.zeros((1, 2, 3), np.float32)  # other extent differs
    attrs = make_attrs("concatenate", {"axis": 1})
    with pytest.raises(Exception) as ref:
        get_op("concatenate").reference([(a, b)], attrs)
    with pytest.raises(type(ref.value)):
        cpu_tensor.concatenate([(a, b)], attrs, out=out)


# -- the plan ----------------------------------------------------------------------------------

FIRE = """
def @main(%x: Tensor[(1, 8, 16, 16), float32], %w1: Tensor[(4, 8, 1, 1), float32],
          %w2: Tensor[(4, 8, 3, 3), float32], %w3: Tensor[(5, 8, 1, 1), float32],
          %b: Tensor[(4,), float32], %w4: Tensor[(6, 13, 1, 1), float32],
          %w6: Tensor[(4, 13, 1, 1), float32], %w5: Tensor[(2, 10, 1, 1), float32]) {
  %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w1, padding=[0, 0, 0, 0]), %b));
  %1 = nn.relu(nn.bias_add(nn.conv2d(%x, %w2, padding=[1, 1, 1, 1]), %b));
  %2 = nn.conv2d(%x, %w3, padding=[0, 0, 0, 0]);
  %3 = concatenate((%0, %1, %2), axis=1);
  %4 = nn.relu(nn.conv2d(%3, %w4, padding=[0, 0, 0, 0]));
  %5 = nn.relu(nn.conv2d(%3, %w6, padding=[0, 0, 0, 0]));
  %6 = concatenate((%4, %5), axis=1);
  nn.conv2d(%6, %w5, padding=[0, 0, 0, 0])
}"""


def _args(mod, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
            for p in mod.functions["main"].params]


def _parts_in(memory):
    """planned value -> the planned value whose bytes contain it (other than itself)."""
    out = {}
    for a, va in memory.views.items():
        for b, vb in memory.views.items():
            if a is not b and va.size < vb.size and np.shares_memory(va, vb):
                out[a] = b
    return out


def test_fire_module_parts_are_written_into_the_concatenation():
    mod = rr.infer_types(rr.parse(FIRE))
    exe = compile_module(mod)
    inside = _parts_in(exe.memory)
    # %0, %1 and %2 are written into %3, %4 and %5 into %6
    assert len(inside) == 5 and len(set(inside.values())) == 2
    for seed in (0, 1):
        args = _args(mod, seed)
        np.testing.assert_allclose(exe(*args), rr.evaluate(mod, *args), rtol=1e-5, atol=1e-5)


def test_densenet_like_growing_concatenations():
    """Each layer concatenates the previous concatenation (read by the layer too) with a
    new map: not placed (every field must qualify), results unchanged."""
    layers = []
    prev = "%x"
    for i in range(4):
        layers.append(f"  %{2 * i} = nn.conv2d(nn.relu({prev}), %w{i}, padding=[1, 1, 1, 1]);")
        layers.append(f"  %{2 * i + 1} = concatenate(({prev}, %{2 * i}), axis=1);")
        prev = f"%{2 * i + 1}"
    ws = ", ".join(f"%w{i}: Tensor[(4, {3 + 4 * i}, 3, 3), float32]" for i in range(4))
    text = (f"def @main(%x: Tensor[(1, 3, 16, 16), float32], {ws}) {{\n" + "\n".join(layers)
            + f"\n  nn.relu({prev})\n}}")
    mod = rr.infer_types(rr.parse(text))
    exe = compile_module(mod)
    assert _parts_in(exe.memory) == {}
    for seed in (0, 1):
        args = _args(mod, seed)
        np.testing.assert_allclose(exe(*args), rr.evaluate(mod, *args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("text", [
    # batch 2: a part's slice on axis 1 is not contiguous
    """def @main(%x: Tensor[(2, 3, 4, 4), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0]);
      %1 = nn.relu(%x);
      nn.relu(concatenate((%0, %1), axis=1))
    }""",
    # one field is a parameter (copied anyway): nothing is placed
    """def @main(%x: Tensor[(1, 4, 16, 16), float32], %w: Tensor[(4, 4, 1, 1), float32],
              %y: Tensor[(1, 2, 16, 16), float32], %v: Tensor[(2, 6, 1, 1), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0]);
      nn.conv2d(concatenate((%0, %y), axis=1), %v, padding=[0, 0, 0, 0])
    }""",
    # the concatenation is the result: outputs are fresh arrays, never a buffer
    """def @main(%x: Tensor[(1, 3, 4, 4), float32], %w: Tensor[(3, 3, 1, 1), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0]);
      %1 = nn.relu(%0);
      concatenate((%0, %1), axis=1)
    }""",
])
def test_what_does_not_qualify_is_not_placed(text):
    mod = rr.infer_types(rr.parse(text))
    exe = compile_module(mod)
    assert _parts_in(exe.memory) == {}
    args = _args(mod)
    first = exe(*args)
    np.testing.assert_allclose(first, rr.evaluate(mod, *args), rtol=1e-5, atol=1e-6)
