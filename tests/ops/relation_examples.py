"""Example argument types and attrs for the relation tests of the later op families
(``nn_nd``, ``nn_norm``, ``image``, ``algorithm``, ``transform_layout``, ``dyn``, ``qnn``,
``vision``, ...), merged into ``test_ops_relations.EXAMPLES``."""

from __future__ import annotations

from relay_ref.ir.types import TensorType, TupleType

F = "float32"


def T(*shape: object, dtype: str = F) -> TensorType:  # noqa: N802 - reads like the type
    return TensorType(tuple(shape), dtype)


DATA = T(2, 4, 6, 6)

EXTRA_EXAMPLES: dict[str, tuple[list, dict]] = {
    "nn.instance_norm": ([DATA, T(4), T(4)], {}),
    "nn.group_norm": ([DATA, T(4), T(4)], {"num_groups": 2}),
    "nn.l2_normalize": ([DATA], {"eps": 1e-6, "axis": (1,)}),
    "nn.conv1d": ([T(2, 4, 6), T(8, 4, 3)], {}),
    "nn.conv3d": ([T(1, 4, 5, 6, 6), T(8, 2, 3, 3, 3)], {"groups": 2}),
    "nn.max_pool2d_grad": ([T(2, 4, 5, 5), DATA], {"pool_size": (2, 2)}),
    "nn.avg_pool2d_grad": ([T(2, 4, 3, 3), DATA], {"pool_size": (3, 3), "strides": (2, 2),
                                                   "padding": (1, 1)}),
    "nn.max_pool1d": ([T(2, 4, 6)], {"pool_size": (2,)}),
    "nn.avg_pool1d": ([T(2, 4, 6)], {"pool_size": (2,)}),
    "nn.max_pool3d": ([T(1, 4, 5, 6, 6)], {"pool_size": (2, 2, 2)}),
    "nn.avg_pool3d": ([T(1, 4, 5, 6, 6)], {"pool_size": (2, 3, 2), "padding": (1,)}),
    "image.resize2d": ([DATA], {"size": (3, 8)}),
    "nn.upsampling": ([DATA], {"scale_h": 2.0, "scale_w": 1.5}),
    "cumsum": ([DATA], {"axis": 1}),
    "cumprod": ([DATA], {}),
    "topk": ([DATA], {"k": 2, "axis": 1}),
    "gather_nd": ([DATA, T(2, 3, 5, dtype="int32")], {}),
    "nn.depth_to_space": ([DATA], {"block_size": 2}),
    "nn.space_to_depth": ([DATA], {"block_size": 3}),
    "layout_transform": ([DATA], {"src_layout": "NCHW", "dst_layout": "NHWC"}),
    # the Relax constructs (ops/symbolic.py): their attrs hold a Type
    "match_cast": ([DATA], {"type": DATA}),
    "call_dps_packed": ([TupleType((DATA, DATA))], {"func_name": "f", "out_type": DATA}),
    "call_tir": ([TupleType((DATA,))], {"func_name": "f", "out_type": T(2, 3)}),
}

EXTRA_EXAMPLES.update({
    "annotation.compiler_begin": ([DATA], {"compiler": "dnnl"}),
    "annotation.compiler_end": ([DATA], {"compiler": "dnnl"}),
    "device_copy": ([DATA], {"src_dev_type": 1, "dst_dev_type": 2}),
})

_I64 = "int64"
EXTRA_EXAMPLES.update({
    "dyn.reshape": ([DATA, T(3, dtype=_I64)], {}),
    "dyn.broadcast_to": ([T(4, 1, 6), T(4, dtype=_I64)], {}),
    "dyn.zeros": ([T(3, dtype=_I64)], {"dtype": "int32"}),
    "dyn.ones": ([T(2, dtype="int32")], {}),
    "dyn.full": ([T(), T(3, dtype=_I64)], {}),
    "dyn.tile": ([T(2, 3), T(3, dtype=_I64)], {}),
    "dyn.strided_slice": ([DATA, T(2, dtype=_I64), T(2, dtype=_I64), T(2, dtype=_I64)], {}),
})

_S, _Z, _Q = T(), T(dtype="int32"), T(2, 4, 6, 6, dtype="int8")
EXTRA_EXAMPLES.update({
    "qnn.quantize": ([DATA, T(6), _Z], {}),
    "qnn.dequantize": ([_Q, _S, T(6, dtype="int32")], {}),
    "qnn.requantize": ([T(2, 4, 6, 6, dtype="int32"), T(4), _Z, _S, _Z], {"axis": 1}),
    "qnn.add": ([_Q, T(6, 6, dtype="int8"), _S, _Z, _S, _Z, _S, _Z], {}),
    "qnn.mul": ([_Q, T(1, 6, dtype="int8"), _S, _Z, _S, _Z, _S, _Z], {}),
    "qnn.dense": ([T(3, 6, dtype="uint8"), T(5, 6, dtype="int8"), _Z, T(5, dtype="int32"),
                   _S, T(5)], {"units": 5}),
    "qnn.conv2d": ([_Q, T(8, 4, 3, 3, dtype="int8"), _Z, _Z, _S, T(8)],
                   {"out_dtype": "int32"}),
})

EXTRA_EXAMPLES.update({
    "layout_transform": ([DATA], {"src_layout": "NCHW", "dst_layout": "NCHW2c"}),
    "nn.contrib_conv2d_NCHWc": ([T(2, 2, 6, 6, 2), T(2, 2, 3, 3, 2, 4)],
                                {"data_layout": "NCHW2c", "kernel_layout": "OIHW2i4o"}),
    "nn.contrib_depthwise_conv2d_NCHWc": ([T(2, 2, 6, 6, 2), T(1, 1, 3, 3, 1, 4)],
                                          {"data_layout": "NCHW2c", "groups": 4,
                                           "kernel_layout": "OIHW1i4o"}),
})

EXTRA_EXAMPLES.update({
    "collapse_sum_like": ([DATA, T(4, 1, 6)], {}),
    "collapse_sum_to": ([DATA, T(3, dtype=_I64)], {"shape": (4, 1, 6)}),
})

EXTRA_EXAMPLES.update({
    "vision.multibox_prior": ([DATA], {"sizes": (0.5, 0.25), "ratios": (1.0, 2.0)}),
    "vision.roi_align": ([DATA, T(3, 5)], {"pooled_size": (2, 2), "spatial_scale": 0.5}),
    "vision.roi_pool": ([DATA, T(3, 5)], {"pooled_size": (2, 2), "spatial_scale": 0.5}),
})

_U = [_Q, _S, _Z, _S, _Z]
EXTRA_EXAMPLES.update({f"qnn.{n}": (_U, {}) for n in (
    "abs", "erf", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "hardswish", "leaky_relu")})
EXTRA_EXAMPLES["qnn.subtract"] = ([_Q, T(6, dtype="int8"), _S, _Z, _S, _Z, _S, _Z], {})

EXTRA_EXAMPLES.update({
    "nn.conv1d_transpose": ([T(2, 4, 6), T(4, 3, 3)], {"strides": (2,), "groups": 2}),
    "nn.conv3d_transpose": ([T(1, 4, 3, 4, 4), T(4, 2, 2, 3, 3)], {"padding": (1,)}),
    "nn.adaptive_avg_pool1d": ([T(2, 4, 7)], {"output_size": (3,)}),
    "nn.adaptive_max_pool1d": ([T(2, 4, 7)], {}),
    "nn.adaptive_avg_pool3d": ([T(1, 4, 5, 6, 6)], {"output_size": (2, 3, 4)}),
    "nn.adaptive_max_pool3d": ([T(1, 4, 5, 6, 6)], {"output_size": (2,)}),
})

_Q2 = T(2, 3, dtype="int8")
EXTRA_EXAMPLES.update({
    "qnn.concatenate": ([TupleType((_Q2, _Q2)), TupleType((_S, _S)), TupleType((_Z, _Z)), _S,
                         _Z], {"axis": 1}),
    "qnn.batch_matmul": ([T(2, 3, 5, dtype="int8"), T(2, 4, 5, dtype="uint8"), _Z, _Z, _S, _S],
                         {}),
    "qnn.conv2d_transpose": ([_Q, T(4, 2, 3, 3, dtype="int8"), _Z, _Z, _S, T(2)],
                             {"strides": (2, 2)}),
    "qnn.avg_pool2d": (_U, {"pool_size": (2, 2)}),
    "qnn.simulated_quantize": ([DATA, _Z, T(4), T(4, dtype="int32")], {"axis": 1}),
    "qnn.simulated_dequantize": ([DATA, _Z, _S, _Z], {}),
    "qnn.softmax": (_U, {"axis": 1}),
})

_BOXES, _I32 = T(2, 5, 6), "int32"
EXTRA_EXAMPLES.update({
    "vision.get_valid_counts": ([_BOXES, _S], {"score_index": 1}),
    "vision.non_max_suppression": ([_BOXES, T(2, dtype=_I32), T(2, 5, dtype=_I32),
                                    T(dtype=_I32), _S], {"top_k": 3}),
})

EXTRA_EXAMPLES.update({
    "scatter_elements": ([DATA, T(2, 4, 3, 6, dtype=_I32), T(2, 4, 3, 6)], {"axis": 2}),
    "scatter_nd": ([DATA, T(2, 5, dtype=_I32), T(5, 6, 6)], {"mode": "add"}),
    "einsum": ([TupleType((T(2, 3), T(3, 4)))], {"equation": "ij,jk->ik"}),
    "image.grid_sample": ([DATA, T(2, 2, 3, 5)], {}),
})
