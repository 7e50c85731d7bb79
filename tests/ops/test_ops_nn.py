"""nn.* operators vs onnxruntime (Conv, ConvTranspose, Gemm/MatMul, pools, norms, LRN, Pad,
Flatten, activations) and NumPy formulas (bias_add, adaptive pools, dropout, layouts)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

CONV_CASES = [
    # (data shape, weight shape, attrs)
    ((1, 3, 7, 7), (4, 3, 3, 3), {}),
    ((2, 4, 9, 8), (6, 2, 3, 3), {"groups": 2, "padding": (1, 1)}),
    ((1, 4, 10, 9), (4, 1, 3, 3), {"groups": 4, "strides": (2, 2), "padding": (1, 2, 0, 1)}),
    ((1, 2, 11, 11), (3, 2, 3, 2), {"dilation": (2, 3), "strides": (2, 1), "padding": (2,)}),
    ((2, 3, 5, 6), (5, 3, 1, 1), {"strides": (2, 3)}),
]


def _onnx_pads(padding: tuple[int, ...]) -> list[int]:
    if len(padding) == 1:
        return list(padding) * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    return list(padding)  # (top, left, bottom, right) == ONNX (h_begin, w_begin, h_end, w_end)


@pytest.mark.parametrize("dshape,wshape,attrs", CONV_CASES)
def test_conv2d_vs_onnxruntime(dshape: tuple, wshape: tuple, attrs: dict) -> None:
    x, w = rand(dshape), rand(wshape)
    ours = run_op("nn.conv2d", [x, w], **attrs)
    (theirs,) = onnx_run("Conv", [x, w], group=attrs.get("groups", 1),
                         strides=list(attrs.get("strides", (1, 1))),
                         dilations=list(attrs.get("dilation", (1, 1))),
                         pads=_onnx_pads(attrs.get("padding", (0, 0))))
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_conv2d_nhwc_hwio_and_int8_out_dtype() -> None:
    x, w = rand((1, 3, 6, 6)), rand((4, 3, 3, 3))
    want = run_op("nn.conv2d", [x, w], padding=(1, 1))
    got = run_op("nn.conv2d", [x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)],
                 padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO")
    close(got.transpose(0, 3, 1, 2), want, rtol=1e-5, atol=1e-5)
    xi, wi = rand((1, 2, 4, 4), "int8", -100, 100), rand((2, 2, 3, 3), "int8", -100, 100)
    out = run_op("nn.conv2d", [xi, wi], out_dtype="int32")
    ref = run_op("nn.conv2d", [xi.astype("int32"), wi.astype("int32")])
    np.testing.assert_array_equal(out, ref)


CONVT_CASES = [
    ((1, 3, 5, 5), (3, 2, 3, 3), {}),
    ((1, 4, 4, 5), (4, 3, 3, 3), {"strides": (2, 2), "padding": (1, 1),
                                  "output_padding": (1, 1)}),
    ((2, 4, 3, 4), (4, 2, 2, 3), {"groups": 2, "strides": (2, 3), "padding": (0, 1, 1, 0)}),
    ((1, 2, 4, 4), (2, 3, 3, 3), {"dilation": (2, 2), "strides": (3, 2),
                                  "output_padding": (2, 1), "padding": (1,)}),
]


@pytest.mark.parametrize("dshape,wshape,attrs", CONVT_CASES)
def test_conv2d_transpose_vs_onnxruntime(dshape: tuple, wshape: tuple, attrs: dict) -> None:
    x, w = rand(dshape), rand(wshape)
    ours = run_op("nn.conv2d_transpose", [x, w], **attrs)
    (theirs,) = onnx_run("ConvTranspose", [x, w], group=attrs.get("groups", 1),
                         strides=list(attrs.get("strides", (1, 1))),
                         dilations=list(attrs.get("dilation", (1, 1))),
                         output_padding=list(attrs.get("output_padding", (0, 0))),
                         pads=_onnx_pads(attrs.get("padding", (0, 0))))
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_dense_matmul_batch_matmul_vs_onnxruntime() -> None:
    x, w = rand((2, 3, 5)), rand((4, 5))
    (theirs,) = onnx_run("MatMul", [x, w.T.copy()])
    close(run_op("nn.dense", [x, w], units=4), theirs, rtol=1e-5, atol=1e-5)
    a, b = rand((3, 5)), rand((5, 4))
    (theirs,) = onnx_run("Gemm", [a.T.copy(), b.T.copy()], transA=1, transB=1)
    close(run_op("nn.matmul", [a.T.copy(), b.T.copy()], transpose_a=True, transpose_b=True),
          theirs, rtol=1e-5, atol=1e-5)
    close(run_op("nn.matmul", [a, b]), onnx_run("MatMul", [a, b])[0], rtol=1e-5, atol=1e-5)
    bx, by = rand((3, 2, 5)), rand((3, 4, 5))  # TVM default: y is (b, n, k)
    (theirs,) = onnx_run("MatMul", [bx, by.transpose(0, 2, 1).copy()])
    close(run_op("nn.batch_matmul", [bx, by]), theirs, rtol=1e-5, atol=1e-5)
    by2 = rand((1, 5, 4))  # batch 1 broadcasts; transpose_b=False: y is (b, k, n)
    close(run_op("nn.batch_matmul", [bx, by2], transpose_b=False), bx @ by2, rtol=1e-5,
          atol=1e-5)
    ia, ib = rand((2, 3, 4), "int8", -100, 100), rand((2, 5, 4), "int8", -100, 100)
    out = run_op("nn.batch_matmul", [ia, ib], out_dtype="int32")
    np.testing.assert_array_equal(out, ia.astype("int32") @ ib.astype("int32").transpose(0, 2, 1))


def test_activations_vs_onnxruntime() -> None:
    x = rand((2, 3, 4, 4))
    close(run_op("nn.relu", [x]), onnx_run("Relu", [x])[0])
    close(run_op("nn.leaky_relu", [x], alpha=0.1), onnx_run("LeakyRelu", [x], alpha=0.1)[0])
    close(run_op("nn.leaky_relu", [x]), onnx_run("LeakyRelu", [x], alpha=0.25)[0])
    slope = rand((3,))
    close(run_op("nn.prelu", [x, slope]), onnx_run("PRelu", [x, slope.reshape(3, 1, 1)])[0])
    xl = x.transpose(0, 2, 3, 1).copy()
    close(run_op("nn.prelu", [xl, slope], axis=3), onnx_run("PRelu", [xl, slope])[0])
    for axis in (-1, 1, 0):
        close(run_op("nn.softmax", [x], axis=axis), onnx_run("Softmax", [x], axis=axis)[0])
        close(run_op("nn.fast_softmax", [x], axis=axis),
              onnx_run("Softmax", [x], axis=axis)[0])
        close(run_op("nn.log_softmax", [x], axis=axis),
              onnx_run("LogSoftmax", [x], axis=axis)[0])
    assert run_op("nn.relu", [np.array([-2, 3], "int32")]).tolist() == [0, 3]


def test_bias_add_vs_numpy() -> None:
    x, b = rand((2, 3, 4)), rand((3,))
    close(run_op("nn.bias_add", [x, b]), x + b.reshape(3, 1))
    b4 = rand((4,))
    close(run_op("nn.bias_add", [x, b4], axis=-1), x + b4)


POOL_CASES = [
    {"pool_size": (2, 2), "strides": (2, 2)},
    {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)},
    {"pool_size": (3, 2), "strides": (2, 1), "padding": (1, 0, 0, 1)},
    {"pool_size": (3, 3), "strides": (2, 2), "ceil_mode": True},
    {"pool_size": (2, 3), "strides": (1, 2), "dilation": (2, 1), "padding": (1, 1)},
]


@pytest.mark.parametrize("attrs", POOL_CASES)
def test_max_pool2d_vs_onnxruntime(attrs: dict) -> None:
    x = rand((2, 3, 9, 8))
    ours = run_op("nn.max_pool2d", [x], **attrs)
    (theirs,) = onnx_run("MaxPool", [x], kernel_shape=list(attrs["pool_size"]),
                         strides=list(attrs.get("strides", (1, 1))),
                         dilations=list(attrs.get("dilation", (1, 1))),
                         pads=_onnx_pads(attrs.get("padding", (0, 0))),
                         ceil_mode=int(attrs.get("ceil_mode", False)))
    close(ours, theirs)


@pytest.mark.parametrize("attrs", [a for a in POOL_CASES if "dilation" not in a])
@pytest.mark.parametrize("include", [False, True])
def test_avg_pool2d_vs_onnxruntime(attrs: dict, include: bool) -> None:
    x = rand((2, 3, 9, 8))
    ours = run_op("nn.avg_pool2d", [x], count_include_pad=include, **attrs)
    (theirs,) = onnx_run("AveragePool", [x], kernel_shape=list(attrs["pool_size"]),
                         strides=list(attrs.get("strides", (1, 1))),
                         pads=_onnx_pads(attrs.get("padding", (0, 0))),
                         ceil_mode=int(attrs.get("ceil_mode", False)),
                         count_include_pad=int(include))
    close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_avg_pool2d_ceil_mode_with_padding_counts() -> None:
    """ceil_mode's extra rows are never counted, the explicit padding is when asked."""
    x = np.ones((1, 1, 4, 4), "float32")
    out = run_op("nn.avg_pool2d", [x], pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                 ceil_mode=True, count_include_pad=True)
    # windows rows: [-1, 2) -> 1 pad + 2 real; [1, 4) -> 3 real; [3, 6) -> 1 real + 1 pad
    # (row 4 is explicit padding) + 1 ceil row (not counted)
    assert out.shape == (1, 1, 3, 3)
    assert np.isclose(out[0, 0, 0, 0], 4 / 9)
    assert np.isclose(out[0, 0, 1, 1], 1.0)
    assert np.isclose(out[0, 0, 2, 2], 1 / 4)


def test_global_pools_vs_onnxruntime() -> None:
    x = rand((2, 3, 5, 4))
    close(run_op("nn.global_avg_pool2d", [x]), onnx_run("GlobalAveragePool", [x])[0])
    close(run_op("nn.global_max_pool2d", [x]), onnx_run("GlobalMaxPool", [x])[0])
    xl = x.transpose(0, 2, 3, 1)
    got = run_op("nn.global_avg_pool2d", [xl], layout="NHWC")
    close(got.transpose(0, 3, 1, 2), onnx_run("GlobalAveragePool", [x])[0])


def _adaptive_loop(x: np.ndarray, oh: int, ow: int, fn: object) -> np.ndarray:
    n, c, h, w = x.shape
    out = np.zeros((n, c, oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            hs, he = (i * h) // oh, -(-((i + 1) * h) // oh)
            ws, we = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[:, :, i, j] = fn(x[:, :, hs:he, ws:we], axis=(2, 3))  # type: ignore
    return out


@pytest.mark.parametrize("size", [(1, 1), (3, 2), (5, 7), (2,)])
def test_adaptive_pools_vs_loops(size: tuple) -> None:
    x = rand((2, 3, 7, 5))
    oh, ow = (size * 2)[:2]
    close(run_op("nn.adaptive_avg_pool2d", [x], output_size=size),
          _adaptive_loop(x, oh, ow, np.mean), rtol=1e-5, atol=1e-6)
    close(run_op("nn.adaptive_max_pool2d", [x], output_size=size),
          _adaptive_loop(x, oh, ow, np.max))
    close(run_op("nn.adaptive_avg_pool2d", [x]), x)  # output_size=() keeps H, W


def test_batch_norm_vs_onnxruntime() -> None:
    x = rand((2, 3, 4, 5))
    gamma, beta, mean = rand((3,)), rand((3,)), rand((3,))
    var = rand((3,), low=0.5, high=2)
    out, m, v = run_op("nn.batch_norm", [x, gamma, beta, mean, var], epsilon=1e-3)
    (theirs,) = onnx_run("BatchNormalization", [x, gamma, beta, mean, var], epsilon=1e-3)
    close(out, theirs, rtol=1e-5, atol=1e-5)
    close(m, mean)
    close(v, var)
    xl = x.transpose(0, 2, 3, 1).copy()
    got = run_op("nn.batch_norm", [xl, gamma, beta, mean, var], axis=-1, epsilon=1e-3,
                 center=False, scale=False)[0]
    want = (xl - mean) / np.sqrt(var + 1e-3)
    close(got, want, rtol=1e-5, atol=1e-5)


def test_layer_norm_vs_onnxruntime() -> None:
    x, gamma, beta = rand((2, 3, 6)), rand((6,)), rand((6,))
    (theirs,) = onnx_run("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)
    close(run_op("nn.layer_norm", [x, gamma, beta]), theirs, rtol=1e-4, atol=1e-5)
    g1, b1 = rand((3,)), rand((3,))
    got = run_op("nn.layer_norm", [x, g1, b1], axis=1, epsilon=1e-3)
    mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    close(got, (x - mu) / np.sqrt(var + 1e-3) * g1.reshape(3, 1) + b1.reshape(3, 1),
          rtol=1e-4, atol=1e-5)


def test_dropout_is_identity_with_a_mask() -> None:
    x = rand((2, 3))
    out, mask = run_op("nn.dropout", [x], rate=0.3)
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(mask, np.ones_like(x))


@pytest.mark.parametrize("size", [1, 3, 5])
def test_lrn_vs_onnxruntime(size: int) -> None:
    x = rand((2, 6, 3, 3))
    ours = run_op("nn.lrn", [x], size=size, alpha=0.01, beta=0.7, bias=1.5)
    (theirs,) = onnx_run("LRN", [x], size=size, alpha=0.01, beta=0.7, bias=1.5)
    close(ours, theirs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_vs_onnxruntime(mode: str) -> None:
    x = rand((2, 3, 4))
    widths = ((0, 1), (2, 1), (1, 3))
    ours = run_op("nn.pad", [x, np.array(1.5, "float32")], pad_width=widths, pad_mode=mode)
    pads = np.array([w[0] for w in widths] + [w[1] for w in widths], "int64")
    value = np.array(1.5, "float32") if mode == "constant" else None
    (theirs,) = onnx_run("Pad", [x, pads, value], mode=mode)
    close(ours, theirs)


def test_batch_flatten_vs_onnxruntime() -> None:
    x = rand((3, 2, 4, 2))
    close(run_op("nn.batch_flatten", [x]), onnx_run("Flatten", [x], axis=1)[0])
    assert run_op("nn.batch_flatten", [np.zeros((0, 2, 3), "float32")]).shape == (0, 6)


DIFF_TESTED = {
    "nn.conv2d", "nn.conv2d_transpose", "nn.dense", "nn.matmul", "nn.batch_matmul",
    "nn.relu", "nn.leaky_relu", "nn.prelu", "nn.softmax", "nn.fast_softmax",
    "nn.log_softmax", "nn.bias_add", "nn.max_pool2d", "nn.avg_pool2d",
    "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.adaptive_avg_pool2d",
    "nn.adaptive_max_pool2d", "nn.batch_norm", "nn.layer_norm", "nn.dropout", "nn.lrn",
    "nn.pad", "nn.batch_flatten",
}


def test_pad_older_one_input_form_takes_pad_value_as_an_attribute():
    import relay_ref as rr
    from relay_ref.ir.types import TensorType
    from relay_ref.ops.registry import RelationError, get_op, make_attrs

    mod = rr.infer_types(rr.parse(
        "def @main(%x: Tensor[(1, 2), float32]) {\n"
        "  nn.pad(%x, pad_width=[[0, 0], [1, 2]], pad_value=7f)\n}"))
    assert rr.astext(mod.global_types["main"].ret_type) == "Tensor[(1, 5), float32]"
    x = np.array([[1, 2]], dtype="float32")
    np.testing.assert_array_equal(rr.evaluate(mod, x), np.pad(x, [(0, 0), (1, 2)],
                                                              constant_values=7))
    op = get_op("nn.pad")
    both = make_attrs("nn.pad", {"pad_width": ((0, 1),), "pad_value": 1.0})
    with pytest.raises(RelationError, match="both"):
        op.relation([TensorType((2,), "float32"), TensorType((), "float32")], both)
    with pytest.raises(RelationError, match="expected 2 arguments"):
        op.relation([TensorType((2,), "float32")] * 3, both)
