"""Groups that are chains of reshapes and transposes (``relay_ref.executor.groups``:
``LayoutCopy``, strategy ``layout``; shufflenet's channel shuffle) against the definitional
interpreter and the operators' references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.executor.compile import compile_module


def _shuffle(groups: int, per: int, h: int, w: int, consumer: bool) -> str:
    c = groups * per
    body = (f"  %0 = reshape(%x, newshape=[1, {groups}, {per}, {h}, {w}]);\n"
            f"  %1 = transpose(%0, axes=[0, 2, 1, 3, 4]);\n"
            f"  %2 = reshape(%1, newshape=[1, {c}, {h}, {w}]);\n")
    if consumer:  # a conv after the shuffle: the shuffle's result goes in a planned buffer
        body += "  nn.conv2d(%2, %k, padding=[0, 0, 0, 0], groups=" + str(c) + ")\n"
        sig = f", %k: Tensor[({c}, 1, 1, 1), float32]"
    else:
        body += "  %2\n"
        sig = ""
    return f"def @main(%x: Tensor[(1, {c}, {h}, {w}), float32]{sig}) {{\n{body}}}"


@given(st.integers(1, 4), st.integers(1, 6), st.integers(8, 20), st.integers(8, 20),
       st.booleans())
def test_channel_shuffle_equals_interpreter(groups, per, h, w, consumer):
    mod = rr.infer_types(rr.parse(_shuffle(groups, per, h, w, consumer)))
    exe = compile_module(mod)
    rng = np.random.default_rng(groups * 100 + per)
    args = [rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("float32")
            for p in mod.functions["main"].params]
    big = groups * per * h * w >= 1024
    strategies = {g.strategy for g in exe.plan.groups}
    assert ("layout" in strategies) == big
    for _ in range(2):  # a second call reuses the planned buffers
        got = exe(*args)
        np.testing.assert_array_equal(got, rr.evaluate(mod, *args))
        args[0] = args[0] * 2


@st.composite
def _chains(draw):
    """A random chain: reshape to a random factorisation, transposes, reshapes."""
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    size = int(np.prod(shape))
    ops = []
    cur = shape
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            perm = draw(st.permutations(range(len(cur))))
            ops.append(("transpose", tuple(perm)))
            cur = tuple(cur[p] for p in perm)
        else:
            new = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
            if int(np.prod(new)) != size:
                new = (size,)
            ops.append(("reshape", new))
            cur = new
    return shape, ops


@given(_chains())
def test_random_layout_chains(chain):
    """Any chain of reshapes and transposes of 1024+ elements equals the interpreter (a
    chain ending in a reshape after a transpose is one layout step; others stay views)."""
    shape, ops = chain
    scale = (32,) + shape  # 1024+ elements: the planned strategy, not op by op
    lines, prev = [], "%x"
    for i, (kind, arg) in enumerate(ops):
        if kind == "transpose":
            axes = ", ".join(str(a + 1) for a in arg)
            lines.append(f"  %{i} = transpose({prev}, axes=[0, {axes}]);")
        else:
            dims = ", ".join(map(str, arg))
            lines.append(f"  %{i} = reshape({prev}, newshape=[32, {dims}]);")
        prev = f"%{i}"
    text = (f"def @main(%x: Tensor[({', '.join(map(str, scale))}), float32]) {{\n"
            + "\n".join(lines) + f"\n  {prev}\n}}")
    mod = rr.infer_types(rr.parse(text))
    exe = compile_module(mod)
    x = np.arange(int(np.prod(scale)), dtype=np.float32).reshape(scale)
    np.testing.assert_array_equal(exe(x), rr.evaluate(mod, x))
    kinds = [k for k, _ in ops]
    copies = "transpose" in kinds and kinds[-1] == "reshape"  # reshaped after a transpose
    assert ("layout" in {g.strategy for g in exe.plan.groups}) == (copies and x.size >= 1024)


def test_wrong_argument_is_a_clear_error():
    mod = rr.infer_types(rr.parse(_shuffle(2, 4, 16, 16, False)))
    exe = compile_module(mod)
    plan = next(g for g in exe.plan.groups if g.strategy == "layout")
    assert "layout copy" in plan.kernels
    from relay_ref.executor.groups import LayoutCopy

    k = LayoutCopy((("transpose", (1, 0)),), (2, 3), (3, 2), np.dtype("float32"))
    np.testing.assert_array_equal(k([np.arange(6, dtype=np.float32).reshape(2, 3)]),
                                  np.arange(6, dtype=np.float32).reshape(2, 3).T)
    with pytest.raises(ValueError, match="layout copy"):
        k([np.zeros((3, 2), np.float32)])
    with pytest.raises(ValueError, match="C-contiguous"):
        k([np.zeros((2, 3), np.float32)], out=np.zeros((2, 3), np.float32))
