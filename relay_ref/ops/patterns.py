"""Fusion patterns of the built-in operators (TVM's ``TOpPattern`` registrations).

``OpDef.op_pattern`` is registry data like an op's relation; this table fills it in for the
built-in operators, one line per pattern, with TVM's values (``RELAY_REGISTER_OP(...)
.set_attr<TOpPattern>`` in ``src/relay/op`` and ``register_pattern`` in
``python/tvm/relay/op/_*.py``, before Relay's removal). It lives beside the families rather
than in each ``register_op`` call so that the whole classification reads (and is checked
against TVM) in one place, as TVM's own ``_tensor.py`` / ``_transform.py`` tables do.

This is the ``pattern`` aspect's table (the rule: ``relay_ref/ops/__init__.py``); the package
attaches it with ``registry.attach("pattern", ...)``, each name once. Ops named nowhere stay
``OPAQUE`` (TVM's default too): they are never fused, which is always correct, only slower.
``nn.layer_norm``, ``nn.group_norm``, ``nn.instance_norm`` and ``nn.l2_normalize`` are opaque
in TVM as well: ``SimplifyInference`` expands them before fusion.
"""

from __future__ import annotations

from relay_ref.ops.registry import OpPattern

BUILTIN_PATTERNS: dict[OpPattern, tuple[str, ...]] = {
    OpPattern.ELEMWISE: (
        "qnn.simulated_dequantize", "qnn.simulated_quantize",
        "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_not", "cast",
        "cast_like", "ceil", "clip", "copy", "cos", "cosh", "dyn.full", "dyn.ones",
        "dyn.zeros", "erf", "exp", "fast_erf", "fast_exp", "fast_tanh", "floor", "full",
        "full_like", "isfinite", "isinf", "isnan", "log", "log10", "log2", "logical_not",
        "negative", "nn.leaky_relu", "nn.relu", "ones", "ones_like", "reinterpret", "round",
        "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "zeros",
        "zeros_like",
    ),
    OpPattern.BROADCAST: (
        "add", "bitwise_and", "bitwise_or", "bitwise_xor", "broadcast_to",
        "broadcast_to_like", "divide", "dyn.broadcast_to", "equal", "expand_dims",
        "floor_divide", "floor_mod", "greater", "greater_equal", "left_shift", "less",
        "less_equal", "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "mod",
        "multiply", "nn.bias_add", "nn.prelu", "not_equal", "power", "qnn.add", "qnn.mul",
        "qnn.subtract", "repeat", "right_shift", "subtract", "tile", "where",
    ),
    OpPattern.INJECTIVE: (
        "concatenate", "dyn.reshape", "dyn.strided_slice", "dyn.tile", "gather", "gather_nd",
        "image.resize2d", "layout_transform", "ndarray_size", "nn.batch_flatten",
        "nn.depth_to_space", "nn.pad", "nn.space_to_depth", "nn.upsampling", "reshape",
        "reshape_like", "reverse", "split", "squeeze", "stack", "strided_slice", "take",
        "transpose",
        # added with the ONNX frontend's ops (TVM: kInjective)
        "einsum", "image.grid_sample",
    ),
    OpPattern.COMM_REDUCE: (
        "all", "any", "argmax", "argmin", "collapse_sum_like", "collapse_sum_to", "max",
        "mean", "min", "prod", "sum", "variance",
    ),
    OpPattern.OUT_ELEMWISE_FUSABLE: (
        "nn.adaptive_avg_pool2d", "nn.adaptive_max_pool2d", "nn.avg_pool1d", "nn.avg_pool2d",
        "nn.avg_pool3d", "nn.batch_matmul", "nn.batch_norm", "nn.contrib_conv2d_NCHWc",
        "nn.contrib_depthwise_conv2d_NCHWc", "nn.conv1d", "nn.conv2d", "nn.conv2d_transpose",
        "nn.conv3d", "nn.dense", "nn.fast_softmax", "nn.global_avg_pool2d",
        "nn.global_max_pool2d", "nn.log_softmax", "nn.matmul", "nn.max_pool1d",
        "nn.max_pool2d", "nn.max_pool3d", "nn.softmax", "one_hot", "qnn.conv2d", "qnn.dense",
        "vision.roi_align", "vision.roi_pool",
        # added with the 1-d/3-d transposes and adaptive pools (TVM: kOutEWiseFusable)
        "nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool3d", "nn.adaptive_max_pool1d",
        "nn.adaptive_max_pool3d", "nn.conv1d_transpose", "nn.conv3d_transpose",
        "qnn.avg_pool2d",
    ),
    # Everything else is OPAQUE: sort/argsort/topk/cumsum/cumprod, arange, shape_of,
    # scatter_elements and scatter_nd (extern schedules in TVM),
    # nn.dropout, nn.lrn, the norms SimplifyInference expands, qnn.(de|re)quantize and the
    # qnn unary ops, vision.multibox_prior, the annotations (on_device, device_copy,
    # stop_gradient, annotation.*).
}
