"""nn.depth_to_space, nn.space_to_depth vs onnxruntime (DepthToSpace, SpaceToDepth) and
layout_transform vs np.transpose and a loop over blocked indices."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import RelationError, get_op, make_attrs


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("b", [1, 2, 3])
def test_depth_to_space_vs_onnxruntime(mode: str, b: int) -> None:
    x = rand((2, 2 * b * b, 3, 2))
    ours = run_op("nn.depth_to_space", [x], block_size=b, mode=mode)
    (theirs,) = onnx_run("DepthToSpace", [x], blocksize=b, mode=mode)
    np.testing.assert_array_equal(ours, theirs)
    nhwc = run_op("nn.depth_to_space", [x.transpose(0, 2, 3, 1)], block_size=b, mode=mode,
                  layout="NHWC")
    np.testing.assert_array_equal(nhwc.transpose(0, 3, 1, 2), theirs)


@pytest.mark.parametrize("b", [1, 2, 3])
def test_space_to_depth_vs_onnxruntime(b: int) -> None:
    x = rand((2, 3, 2 * b, 3 * b))
    ours = run_op("nn.space_to_depth", [x], block_size=b)
    (theirs,) = onnx_run("SpaceToDepth", [x], blocksize=b)
    np.testing.assert_array_equal(ours, theirs)
    back = run_op("nn.depth_to_space", [ours], block_size=b)
    np.testing.assert_array_equal(back, x)
    with pytest.raises(RelationError):
        get_op("nn.space_to_depth").relation(
            [TensorType((1, 3, 5, 4), "float32")], make_attrs("nn.space_to_depth",
                                                              {"block_size": 2}))


@pytest.mark.parametrize("src,dst", [("NCHW", "NHWC"), ("NHWC", "NCHW"), ("NCHW", "NCHW"),
                                     ("NCDHW", "NDHWC"), ("OIHW", "HWIO")])
def test_layout_transform_vs_transpose(src: str, dst: str) -> None:
    x = rand(tuple(range(2, 2 + len(src))))
    ours = run_op("layout_transform", [x], src_layout=src, dst_layout=dst)
    np.testing.assert_array_equal(ours, np.transpose(x, [src.index(c) for c in dst]))


def _pack_loop(x: np.ndarray, f: int) -> np.ndarray:
    """NCHW -> NCHW{f}c, one element at a time."""
    n, c, h, w = x.shape
    out = np.zeros((n, c // f, h, w, f), x.dtype)
    for i in np.ndindex(x.shape):
        out[i[0], i[1] // f, i[2], i[3], i[1] % f] = x[i]
    return out


@pytest.mark.parametrize("f", [1, 2, 4])
def test_layout_transform_blocked_vs_loop(f: int) -> None:
    x = rand((2, 8, 3, 2))
    packed = run_op("layout_transform", [x], src_layout="NCHW", dst_layout=f"NCHW{f}c")
    np.testing.assert_array_equal(packed, _pack_loop(x, f))
    back = run_op("layout_transform", [packed], src_layout=f"NCHW{f}c", dst_layout="NHWC")
    np.testing.assert_array_equal(back, x.transpose(0, 2, 3, 1))
    # repacking 8c -> 4c equals unpack then pack
    p8 = _pack_loop(x, 8)
    p4 = run_op("layout_transform", [p8], src_layout="NCHW8c", dst_layout="NCHW4c")
    np.testing.assert_array_equal(p4, _pack_loop(x, 4))


def test_layout_transform_kernel_blocks_vs_loop() -> None:
    w = rand((8, 4, 3, 3))  # OIHW
    ours = run_op("layout_transform", [w], src_layout="OIHW", dst_layout="OIHW2i4o")
    want = np.zeros((2, 2, 3, 3, 2, 4), w.dtype)
    for o, i, y, x in np.ndindex(w.shape):
        want[o // 4, i // 2, y, x, i % 2, o % 4] = w[o, i, y, x]
    np.testing.assert_array_equal(ours, want)


def test_layout_transform_relation() -> None:
    rel = get_op("layout_transform").relation

    def at(src: str, dst: str) -> object:
        return make_attrs("layout_transform", {"src_layout": src, "dst_layout": dst})

    assert rel([TensorType((ANY, 8, 2, 3), "float32")], at("NCHW", "NHWC")) == \
        TensorType((ANY, 2, 3, 8), "float32")
    assert rel([TensorType((1, ANY, 2, 3), "float32")], at("NCHW", "NCHW4c")) == \
        TensorType((1, ANY, 2, 3, 4), "float32")
    assert rel([TensorType((1, 2, 5, 5, 4), "int8")], at("NCHW4c", "NHWC")) == \
        TensorType((1, 5, 5, 8), "int8")
    cases = [(("NCHW", "NCHW3c"), (1, 8, 2, 2), "not a multiple of the block size 3"),
             (("NCHW", "NCH"), (1, 8, 2, 2), "do not name the same axes"),
             (("NCHW", "NCWW"), (1, 8, 2, 2), "repeats the axis W"),
             (("NCHW", "NCHWc"), (1, 8, 2, 2), "needs a block size"),
             (("NCHW", "NHW4c"), (1, 8, 2, 2), "splits C but has no C axis"),
             (("NCHW4c", "NCHW"), (1, 2, 2, 2, 8), "block of 'NCHW4c' has size 8"),
             (("NCHW", "NHWC"), (1, 8, 2), "has rank 3")]
    for (src, dst), shape, msg in cases:
        with pytest.raises(RelationError, match=msg):
            rel([TensorType(shape, "float32")], at(src, dst))


DIFF_TESTED = {"nn.depth_to_space", "nn.space_to_depth", "layout_transform"}
