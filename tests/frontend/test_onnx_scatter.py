"""The converters onto the later registry ops (``ops_extra_scatter``): ScatterElements,
Scatter-9, ScatterND (indices transposed), Einsum, GridSample (grid transposed), AffineGrid
against onnxruntime, through the interpreter and ``rr.compile``."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_case import assert_matches, node_model, rand

I64 = np.int64
CASES = {
    "scatter_elements_add": ("ScatterElements", {"x": rand(3, 4)},
                             {"axis": 1, "reduction": "add"},
                             {"i": np.array([[0, -1], [2, 2], [1, 0]], I64),
                              "u": rand(3, 2, seed=1)}, 18),
    "scatter_9": ("Scatter", {"x": rand(3, 4)}, {"axis": 0},
                  {"i": np.array([[2, 0, 1, 0]], I64), "u": rand(1, 4, seed=2)}, 9),
    "scatter_nd_max": ("ScatterND", {"x": rand(4, 3)}, {"reduction": "max"},
                       {"i": np.array([[1], [3], [1]], I64), "u": rand(3, 3, seed=3)}, 18),
    "einsum": ("Einsum", {"a": rand(2, 3, 4), "b": rand(2, 4, 5)},
               {"equation": "bij, bjk -> bik"}, {}, 12),
    "grid_sample": ("GridSample", {"x": rand(1, 2, 4, 5)},
                    {"mode": "linear", "padding_mode": "border", "align_corners": 1},
                    {"g": rand(1, 3, 6, 2, low=-1.2, high=1.2, seed=4)}, 20),
    "affine_grid": ("AffineGrid", {"theta": rand(2, 2, 3)}, {},
                    {"size": np.array([2, 1, 3, 4], I64)}, 20),
    "affine_grid_3d": ("AffineGrid", {"theta": rand(1, 3, 4)}, {"align_corners": 1},
                       {"size": np.array([1, 1, 2, 3, 4], I64)}, 20),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("compiled", [False, True])
def test_converter_matches_onnxruntime(name: str, compiled: bool) -> None:
    op, inputs, attrs, inits, opset = CASES[name]
    model = node_model(op, inputs, attrs, opset=opset, initializers=inits)
    assert_matches(model, inputs, rtol=1e-5, atol=1e-5, compiled=compiled)
