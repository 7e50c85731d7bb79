"""Per-op differential tests: one-node ONNX models run by onnxruntime and by relay_ref
(the interpreter; a sample also through ``rr.compile``), at the opsets where an op's
semantics differ (Softmax before/from 13, axes as attribute vs input, Clip's bounds,
Split, Pad, Dropout ...)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from onnx_case import assert_matches, node_model, rand


@dataclass(frozen=True)
class Case:
    id: str
    op: str
    inputs: dict
    attrs: dict = field(default_factory=dict)
    opset: int = 13
    init: dict = field(default_factory=dict)
    n_outputs: int = 1
    names: list | None = None
    rtol: float = 1e-5
    atol: float = 1e-6


X4 = rand(2, 3, 7, 8)
W3 = rand(4, 3, 3, 3, seed=1)
B4 = rand(4, seed=2)
I64 = np.int64


def _ints(*v: int) -> np.ndarray:
    return np.array(v, dtype=I64)


CASES = [
    # -- nn: convolutions and pools (asymmetric pads, groups, auto_pad) ----------------------
    Case("conv", "Conv", {"x": X4}, {"pads": [1, 0, 2, 1], "strides": [2, 1]},
         init={"w": W3, "b": B4}, rtol=1e-4, atol=1e-5),
    Case("conv_group_dil", "Conv", {"x": rand(1, 4, 9, 9)},
         {"group": 2, "dilations": [2, 1], "kernel_shape": [3, 3]},
         init={"w": rand(6, 2, 3, 3, seed=3)}, rtol=1e-4, atol=1e-5),
    Case("conv_same_upper", "Conv", {"x": X4}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
         init={"w": W3}, rtol=1e-4, atol=1e-5),
    Case("conv_same_lower", "Conv", {"x": X4}, {"auto_pad": "SAME_LOWER"}, init={"w": W3},
         rtol=1e-4, atol=1e-5),
    Case("conv1d", "Conv", {"x": rand(2, 3, 10)}, {"pads": [2, 1]},
         init={"w": rand(5, 3, 3, seed=4)}, rtol=1e-4, atol=1e-5),
    Case("conv_transpose", "ConvTranspose", {"x": rand(1, 4, 5, 5)},
         {"strides": [2, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 1]},
         init={"w": rand(4, 3, 3, 3, seed=5), "b": rand(3, seed=6)}, rtol=1e-4, atol=1e-5),
    Case("conv_transpose_shape", "ConvTranspose", {"x": rand(1, 2, 4, 4)},
         {"strides": [2, 2], "output_shape": [9, 9]}, init={"w": rand(2, 2, 3, 3, seed=7)},
         rtol=1e-4, atol=1e-5),
    Case("max_pool", "MaxPool", {"x": X4}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                            "pads": [0, 0, 1, 1]}, opset=9),
    Case("max_pool_ceil", "MaxPool", {"x": X4}, {"kernel_shape": [2, 3], "strides": [2, 2],
                                                 "ceil_mode": 1, "dilations": [1, 2]}, opset=12),
    Case("avg_pool_pad", "AveragePool", {"x": X4}, {"kernel_shape": [3, 3], "strides": [2, 2],
                                                    "pads": [1, 0, 2, 1]}, opset=9),
    Case("avg_pool_include", "AveragePool", {"x": X4},
         {"kernel_shape": [3, 3], "pads": [1, 1, 0, 1], "count_include_pad": 1}, opset=9),
    Case("avg_pool_ceil", "AveragePool", {"x": X4},
         {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "pads": [1, 1, 1, 1],
          "count_include_pad": 1}, opset=11),
    Case("avg_pool_same", "AveragePool", {"x": X4},
         {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, opset=11),
    Case("global_avg_pool", "GlobalAveragePool", {"x": X4}),
    Case("global_max_pool_3d", "GlobalMaxPool", {"x": rand(1, 2, 3, 4, 5)}),
    Case("batch_norm_9", "BatchNormalization", {"x": X4}, {"epsilon": 1e-3}, opset=9,
         init={"s": rand(3, seed=8), "b": rand(3, seed=9), "m": rand(3, seed=10),
               "v": rand(3, seed=11, low=0.5, high=1.5)}, rtol=1e-4, atol=1e-5),
    Case("batch_norm_15", "BatchNormalization", {"x": X4}, opset=15,
         init={"s": rand(3, seed=8), "b": rand(3, seed=9), "m": rand(3, seed=10),
               "v": rand(3, seed=11, low=0.5, high=1.5)}, rtol=1e-4, atol=1e-5),
    Case("lrn", "LRN", {"x": X4}, {"size": 3, "alpha": 1e-2, "beta": 0.75, "bias": 1.0},
         rtol=1e-4, atol=1e-5),
    Case("instance_norm", "InstanceNormalization", {"x": X4},
         init={"s": rand(3, seed=12), "b": rand(3, seed=13)}, rtol=1e-4, atol=1e-5),
    Case("layer_norm_last", "LayerNormalization", {"x": rand(2, 3, 6)}, {"epsilon": 1e-3},
         opset=17, init={"s": rand(6, seed=14), "b": rand(6, seed=15)}, rtol=1e-4, atol=1e-5),
    Case("layer_norm_axis1", "LayerNormalization", {"x": rand(2, 3, 6)}, {"axis": 1},
         opset=17, init={"s": rand(3, 6, seed=16)}, rtol=1e-4, atol=1e-5),
    Case("dropout_7", "Dropout", {"x": X4}, {"ratio": 0.3}, opset=7),
    Case("dropout_12_mask", "Dropout", {"x": X4}, opset=12, n_outputs=2),
    Case("softmax_9_axis1", "Softmax", {"x": rand(2, 3, 4)}, {"axis": 1}, opset=9),
    Case("softmax_11_default", "Softmax", {"x": rand(2, 3, 4)}, opset=11),
    Case("softmax_13_axis1", "Softmax", {"x": rand(2, 3, 4)}, {"axis": 1}, opset=13),
    Case("log_softmax_9", "LogSoftmax", {"x": rand(2, 3, 4)}, opset=9),
    Case("hardmax_13", "Hardmax", {"x": rand(2, 3, 4)}, {"axis": 1}),
    # -- math -----------------------------------------------------------------------------
    Case("add_bcast", "Add", {"a": rand(2, 3, 4), "b": rand(3, 1, seed=1)}),
    Case("sub", "Sub", {"a": rand(2, 3), "b": rand(2, 3, seed=1)}),
    Case("mul_int", "Mul", {"a": rand(2, 3, dtype="int64"), "b": rand(3, dtype="int64")}),
    Case("div_int", "Div", {"a": _ints(-7, 7, -7, 7), "b": _ints(2, 2, -2, -2)}),
    Case("pow_mixed", "Pow", {"a": rand(5, low=0.5), "b": _ints(2, 3, 0, 1, 2)}, opset=15),
    Case("mod_floor", "Mod", {"a": _ints(-7, 7, -7, 7), "b": _ints(3, 3, -3, -3)}),
    Case("mod_fmod", "Mod", {"a": rand(6), "b": rand(6, seed=3, low=0.5)}, {"fmod": 1}),
    Case("sum3", "Sum", {"a": rand(2, 3), "b": rand(3, seed=1), "c": rand(2, 1, seed=2)}),
    Case("mean3", "Mean", {"a": rand(2, 3), "b": rand(3, seed=1), "c": rand(2, 3, seed=2)}),
    Case("max2", "Max", {"a": rand(2, 3), "b": rand(3, seed=1)}),
    Case("sqrt", "Sqrt", {"x": rand(7, low=0.1)}),
    Case("exp_log_tanh", "Tanh", {"x": rand(7)}),
    Case("sigmoid", "Sigmoid", {"x": rand(7)}),
    Case("erf", "Erf", {"x": rand(7)}),
    Case("reciprocal", "Reciprocal", {"x": rand(7, low=0.5)}),
    Case("round", "Round", {"x": np.array([0.5, 1.5, 2.5, -0.5, -1.4], np.float32)}),
    Case("equal", "Equal", {"a": _ints(1, 2, 3), "b": _ints(1, 0, 3)}),
    Case("less_or_equal", "LessOrEqual", {"a": rand(5), "b": rand(5, seed=1)}),
    Case("not", "Not", {"x": rand(5, dtype="bool")}),
    Case("leaky_relu", "LeakyRelu", {"x": rand(8)}, {"alpha": 0.2}),
    Case("prelu_channel", "PRelu", {"x": X4}, init={"s": rand(3, 1, 1, seed=5)}),
    Case("prelu_bcast", "PRelu", {"x": rand(2, 3, 4)}, init={"s": rand(4, seed=5)}),
    Case("elu", "Elu", {"x": rand(8)}, {"alpha": 0.5}),
    Case("selu", "Selu", {"x": rand(8)}),
    Case("celu", "Celu", {"x": rand(8)}, {"alpha": 2.0}),
    Case("hard_sigmoid", "HardSigmoid", {"x": rand(8, low=-5, high=5)}),
    Case("hard_swish", "HardSwish", {"x": rand(8, low=-5, high=5)}, opset=14),
    Case("softplus", "Softplus", {"x": np.array([-100, -2, 0, 2, 100], np.float32)}),
    Case("softsign", "Softsign", {"x": rand(8)}),
    Case("mish", "Mish", {"x": rand(8)}, opset=18),
    Case("gelu", "Gelu", {"x": rand(8)}, opset=20),
    Case("gelu_tanh", "Gelu", {"x": rand(8)}, {"approximate": "tanh"}, opset=20),
    Case("thresholded_relu", "ThresholdedRelu", {"x": rand(8)}, {"alpha": 0.5}, opset=10),
    Case("clip_6", "Clip", {"x": rand(8)}, {"min": -0.5, "max": 1.0}, opset=7),
    Case("clip_11_max_only", "Clip", {"x": rand(8)}, opset=11,
         init={"hi": np.array(0.5, np.float32)}, names=["x", "", "hi"]),
    Case("clip_13_dynamic", "Clip", {"x": rand(8), "lo": np.array(-0.25, np.float32)}),
    Case("clip_13_int", "Clip", {"x": _ints(-5, 0, 5, 9)}, init={"lo": np.array(-1, I64),
                                                               "hi": np.array(6, I64)}),
    Case("gemm_transb", "Gemm", {"a": rand(3, 5)}, {"transB": 1}, opset=9,
         init={"b": rand(4, 5, seed=1), "c": rand(4, seed=2)}, rtol=1e-5, atol=1e-5),
    Case("gemm_full", "Gemm", {"a": rand(5, 3)},
         {"transA": 1, "alpha": 0.5, "beta": 2.0}, opset=11,
         init={"b": rand(5, 4, seed=1), "c": rand(3, 1, seed=2)}, atol=1e-5),
    Case("gemm_no_c", "Gemm", {"a": rand(3, 5), "b": rand(5, 4, seed=1)}, opset=13,
         atol=1e-5),
    Case("matmul_2d", "MatMul", {"a": rand(3, 5), "b": rand(5, 4, seed=1)}, atol=1e-5),
    Case("matmul_nd_2d", "MatMul", {"a": rand(2, 3, 5), "b": rand(5, 4, seed=1)}, atol=1e-5),
    Case("matmul_batch", "MatMul", {"a": rand(2, 1, 3, 5), "b": rand(4, 5, 2, seed=1)},
         atol=1e-5),
    Case("matmul_vec", "MatMul", {"a": rand(5), "b": rand(2, 5, 3, seed=1)}, atol=1e-5),
    # -- tensor ---------------------------------------------------------------------------
    Case("reshape", "Reshape", {"x": X4}, init={"s": _ints(0, -1, 8)}),
    Case("reshape_allowzero", "Reshape", {"x": rand(0, 3)}, {"allowzero": 1},
         init={"s": _ints(3, 0)}, opset=14),
    Case("flatten_2", "Flatten", {"x": X4}, {"axis": 2}),
    Case("flatten_neg", "Flatten", {"x": X4}, {"axis": -1}, opset=11),
    Case("transpose", "Transpose", {"x": X4}, {"perm": [0, 2, 3, 1]}),
    Case("transpose_default", "Transpose", {"x": rand(2, 3, 4)}),
    Case("concat", "Concat", {"a": rand(2, 3), "b": rand(2, 1, seed=1)}, {"axis": -1}),
    Case("unsqueeze_9", "Unsqueeze", {"x": rand(3, 4)}, {"axes": [0, 3]}, opset=9),
    Case("unsqueeze_13", "Unsqueeze", {"x": rand(3, 4)}, init={"a": _ints(-1, 1)}),
    Case("squeeze_11", "Squeeze", {"x": rand(1, 3, 1, 4)}, {"axes": [-2]}, opset=11),
    Case("squeeze_13_all", "Squeeze", {"x": rand(1, 3, 1, 4)}),
    Case("expand", "Expand", {"x": rand(3, 1)}, init={"s": _ints(2, 1, 4)}),
    Case("tile", "Tile", {"x": rand(2, 3)}, init={"r": _ints(2, 1)}),
    Case("shape_15", "Shape", {"x": X4}, {"start": 1, "end": -1}, opset=15),
    Case("size", "Size", {"x": X4}),
    Case("constant_of_shape", "ConstantOfShape", {}, {"value": np.array([3], np.int32)},
         init={"s": _ints(2, 3)}),
    Case("cast_int", "Cast", {"x": rand(6, low=-3, high=3)}, {"to": 7}),
    Case("cast_bool", "Cast", {"x": np.array([0, 1.5, -2, 0], np.float32)}, {"to": 9}),
    Case("gather_neg", "Gather", {"x": rand(4, 3)}, {"axis": 0},
         init={"i": np.array([[0, -1], [2, -4]], I64)}),
    Case("gather_dynamic", "Gather", {"x": rand(4, 3), "i": np.array([-1, 2, -3], I64)},
         {"axis": 1}),
    Case("gather_elements", "GatherElements", {"x": rand(3, 4), "i": np.array(
        [[0, -1], [2, 1], [1, 0]], I64)}, {"axis": 1}),
    Case("gather_nd", "GatherND", {"x": rand(3, 4, 2), "i": np.array([[0, 1], [2, 3]], I64)}),
    Case("slice_9", "Slice", {"x": X4}, {"starts": [1, -3], "ends": [3, 1000],
                                         "axes": [1, 3]}, opset=9),
    Case("slice_13_steps", "Slice", {"x": X4}, init={
        "s": _ints(-1, 0), "e": _ints(-1000, 8), "a": _ints(2, 3), "t": _ints(-2, 3)}),
    Case("split_2_attr", "Split", {"x": rand(6, 4)}, {"split": [2, 4]}, opset=11, n_outputs=2),
    Case("split_13_equal", "Split", {"x": rand(6, 4)}, {"axis": 0}, n_outputs=3),
    Case("split_13_input", "Split", {"x": rand(4, 5)}, {"axis": 1}, init={"s": _ints(1, 4)},
         n_outputs=2),
    Case("split_18_uneven", "Split", {"x": rand(4, 7)}, {"axis": 1, "num_outputs": 3},
         opset=18, n_outputs=3),
    Case("pad_2", "Pad", {"x": rand(2, 3)}, {"pads": [0, 1, 2, 0], "value": 1.5}, opset=9),
    Case("pad_11_reflect", "Pad", {"x": rand(3, 4)}, {"mode": "reflect"},
         init={"p": _ints(1, 2, 1, 0)}, opset=11),
    Case("pad_13_negative", "Pad", {"x": rand(4, 5)}, init={"p": _ints(1, -1, -2, 2),
                                                          "v": np.array(2.0, np.float32)}),
    Case("pad_18_axes_edge", "Pad", {"x": rand(2, 3, 4)}, {"mode": "edge"}, opset=18,
         init={"p": _ints(1, 2), "v": np.array(0.0, np.float32), "a": _ints(-1)}),
    Case("where", "Where", {"c": rand(2, 3, dtype="bool"), "a": rand(2, 3), "b": rand(3)}),
    Case("range", "Range", {}, init={"a": np.array(1, I64), "b": np.array(9, I64),
                                     "c": np.array(3, I64)}, opset=11),
    Case("identity", "Identity", {"x": rand(3)}),
    Case("depth_to_space_crd", "DepthToSpace", {"x": rand(1, 8, 2, 3)},
         {"blocksize": 2, "mode": "CRD"}),
    Case("space_to_depth", "SpaceToDepth", {"x": rand(1, 2, 4, 6)}, {"blocksize": 2}),
    Case("one_hot", "OneHot", {"i": np.array([0, -1, 2], I64)}, {"axis": 0}, opset=11,
         init={"d": np.array(4, I64), "v": np.array([0.5, 2.0], np.float32)}),
    # -- resizing -------------------------------------------------------------------------
    Case("resize_nearest", "Resize", {"x": X4}, opset=13, names=["x", "", "sc"],
         init={"sc": np.array([1, 1, 2, 1.5], np.float32)}),
    Case("resize_nearest_ceil_align", "Resize", {"x": X4}, opset=13, names=["x", "", "", "sz"],
         attrs={"coordinate_transformation_mode": "align_corners", "nearest_mode": "ceil"},
         init={"sz": _ints(2, 3, 5, 11)}),
    Case("resize_linear_half_pixel", "Resize", {"x": rand(1, 2, 8, 8)}, {"mode": "linear"},
         opset=13,
         names=["x", "", "sc"], init={"sc": np.array([1, 1, 0.5, 1.25], np.float32)},
         atol=1e-5),
    Case("resize_linear_pytorch", "Resize", {"x": X4}, opset=11,
         attrs={"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
         init={"r": np.zeros(0, np.float32), "sc": np.zeros(0, np.float32),
               "sz": _ints(2, 3, 1, 16)}, atol=1e-5),
    Case("resize_cubic", "Resize", {"x": X4}, opset=13, names=["x", "", "sc"],
         attrs={"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
         init={"sc": np.array([1, 1, 2, 2], np.float32)}, atol=1e-5),
    Case("resize_10", "Resize", {"x": X4}, opset=10,
         init={"sc": np.array([1, 1, 2, 3], np.float32)}),
    Case("upsample_9", "Upsample", {"x": X4}, opset=9,
         init={"sc": np.array([1, 1, 2, 2], np.float32)}),
    Case("upsample_7_linear", "Upsample", {"x": X4}, opset=7,
         attrs={"mode": "linear", "scales": [1.0, 1.0, 2.0, 2.0]}, atol=1e-5),
    # -- reductions -----------------------------------------------------------------------
    Case("reduce_mean_13", "ReduceMean", {"x": X4}, {"axes": [1, -1], "keepdims": 0}),
    Case("reduce_mean_18", "ReduceMean", {"x": X4}, {"keepdims": 1}, opset=18,
         init={"a": _ints(2)}),
    Case("reduce_sum_11_all", "ReduceSum", {"x": X4}, {"keepdims": 0}, opset=11),
    Case("reduce_sum_13", "ReduceSum", {"x": X4}, init={"a": _ints(0, 2)}, atol=1e-5),
    Case("reduce_sum_13_noop", "ReduceSum", {"x": X4}, {"noop_with_empty_axes": 1}),
    Case("reduce_max_18", "ReduceMax", {"x": X4}, opset=18, init={"a": _ints(3)}),
    Case("reduce_min_13", "ReduceMin", {"x": X4}, {"axes": [0]}),
    Case("reduce_prod", "ReduceProd", {"x": rand(2, 3, low=0.5, high=1.5)}, {"axes": [1]}),
    Case("reduce_l2", "ReduceL2", {"x": X4}, {"axes": [2, 3]}, atol=1e-5),
    Case("reduce_log_sum_exp", "ReduceLogSumExp", {"x": X4}, {"axes": [1], "keepdims": 0}),
    Case("argmax_last", "ArgMax", {"x": np.array([[1, 3, 3], [2, 2, 0]], np.float32)},
         {"axis": 1, "select_last_index": 1}),
    Case("topk", "TopK", {"x": np.array([[3, 1, 3, 2], [0, 5, 5, 5]], np.float32)},
         {"axis": 1}, init={"k": _ints(3)}, n_outputs=2),
    Case("topk_smallest", "TopK", {"x": rand(3, 5)}, {"axis": 0, "largest": 0},
         init={"k": _ints(2)}, n_outputs=2, opset=11),
    Case("cumsum", "CumSum", {"x": rand(3, 4)}, init={"a": np.array(1, I64)}),
    Case("cumsum_rev_excl", "CumSum", {"x": rand(3, 4)}, {"reverse": 1, "exclusive": 1},
         init={"a": np.array(-2, I64)}),
    Case("argmin", "ArgMin", {"x": X4}, {"axis": -1, "keepdims": 0}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_node_matches_onnxruntime(case: Case) -> None:
    model = node_model(case.op, case.inputs, case.attrs, opset=case.opset,
                       initializers=case.init, n_outputs=case.n_outputs,
                       input_names=case.names)
    assert_matches(model, case.inputs, rtol=case.rtol, atol=case.atol)


COMPILED = ["conv", "avg_pool_ceil", "batch_norm_9", "gemm_transb", "softmax_9_axis1",
            "matmul_batch", "slice_13_steps", "split_13_input", "pad_13_negative", "gelu"]


@pytest.mark.parametrize("case", [c for c in CASES if c.id in COMPILED], ids=COMPILED)
def test_node_compiled_matches_onnxruntime(case: Case) -> None:
    """The same models through ``rr.compile`` (weights bound as ``params``)."""
    model = node_model(case.op, case.inputs, case.attrs, opset=case.opset,
                       initializers=case.init, n_outputs=case.n_outputs,
                       input_names=case.names)
    assert_matches(model, case.inputs, rtol=case.rtol, atol=case.atol, compiled=True)
