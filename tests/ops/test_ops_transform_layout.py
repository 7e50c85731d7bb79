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


def test_layout_transform_rejects_blocked_layouts() -> None:
    rel = get_op("layout_transform").relation
    for src, dst in [("NCHW", "NCHW4c"), ("NCHW4c", "NCHW"), ("NCHW", "NCH"),
                     ("NCHW", "NCWW")]:
        with pytest.raises(RelationError):
            rel([TensorType((1, 8, 2, 2), "float32")],
                make_attrs("layout_transform", {"src_layout": src, "dst_layout": dst}))
    assert rel([TensorType((ANY, 8, 2, 3), "float32")],
               make_attrs("layout_transform", {"src_layout": "NCHW", "dst_layout": "NHWC"})
               ) == TensorType((ANY, 2, 3, 8), "float32")


DIFF_TESTED = {"nn.depth_to_space", "nn.space_to_depth", "layout_transform"}
