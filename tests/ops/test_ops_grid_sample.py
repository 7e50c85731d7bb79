"""image.grid_sample vs onnxruntime (GridSample-20; ONNX's reference evaluator where the
two differ: bicubic with border padding) over methods, padding modes, align_corners, 4-d
and 5-d data, with grid points inside and beyond the borders."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import TensorType
from relay_ref.ops.registry import RelationError, get_op, make_attrs

DIFF_TESTED = {"image.grid_sample"}
ONNX_MODE = {"nearest": "nearest", "bilinear": "linear", "bicubic": "cubic"}


@pytest.mark.parametrize("method,padding,align", list(itertools.product(
    ("nearest", "bilinear", "bicubic"), ("zeros", "border", "reflection"), (False, True))))
def test_grid_sample_2d_vs_onnxruntime(method: str, padding: str, align: bool) -> None:
    x = rand((2, 3, 4, 5))
    grid = rand((2, 6, 7, 2), low=-1.4, high=1.4)  # ONNX: (N, H_out, W_out, 2)
    ours = run_op("image.grid_sample", [x, grid.transpose(0, 3, 1, 2).copy()], method=method,
                  padding_mode=padding, align_corners=align)
    attrs = dict(mode=ONNX_MODE[method], padding_mode=padding, align_corners=int(align))
    if (method, padding) == ("bicubic", "border"):  # onnxruntime clamps taps, not points
        want = _reference(x, grid, **attrs)
    else:
        (want,) = onnx_run("GridSample", [x, grid], opset=20, **attrs)
    close(ours, want, rtol=1e-4, atol=1e-4)


def _reference(x: np.ndarray, grid: np.ndarray, **attrs: object) -> np.ndarray:
    """ONNX's reference evaluator (the node tests' oracle) on one GridSample node."""
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
                      helper.make_tensor_value_info("grid", TensorProto.FLOAT, grid.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    return ReferenceEvaluator(model).run(None, {"x": x, "grid": grid})[0]


@pytest.mark.parametrize("method,padding", [("nearest", "zeros"), ("bilinear", "border"),
                                            ("bilinear", "reflection")])
def test_grid_sample_3d_vs_onnxruntime(method: str, padding: str) -> None:
    x = rand((1, 2, 3, 4, 5))
    grid = rand((1, 2, 3, 4, 3), low=-1.3, high=1.3)
    ours = run_op("image.grid_sample", [x, grid.transpose(0, 4, 1, 2, 3).copy()],
                  method=method, padding_mode=padding, layout="NCDHW", align_corners=False)
    (want,) = onnx_run("GridSample", [x, grid], opset=20, mode=ONNX_MODE[method],
                       padding_mode=padding, align_corners=0)
    close(ours, want, rtol=1e-4, atol=1e-4)


def test_grid_sample_relation() -> None:
    rel = get_op("image.grid_sample").relation
    f = "float32"
    attrs = make_attrs("image.grid_sample", {})
    assert rel([TensorType((2, 3, 4, 5), f), TensorType((2, 2, 6, 7), f)],
               attrs) == TensorType((2, 3, 6, 7), f)
    with pytest.raises(RelationError, match="2 coordinates"):
        rel([TensorType((2, 3, 4, 5), f), TensorType((2, 3, 6, 7), f)], attrs)
    with pytest.raises(RelationError, match="rank 5"):
        rel([TensorType((2, 3, 4, 5), f), TensorType((2, 2, 6, 7), f)],
            make_attrs("image.grid_sample", {"layout": "NCDHW"}))
    assert np.isfinite(run_op("image.grid_sample", [rand((1, 1, 1, 1)), rand((1, 2, 2, 2))],
                              padding_mode="reflection")).all()  # a 1-pixel input
