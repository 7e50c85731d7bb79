"""1-d and 3-d nn operators vs onnxruntime (Conv, ConvTranspose, MaxPool, AveragePool) and
vs NumPy loops (layouts, adaptive pooling)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import NOT_YET, RelationError, get_op, make_attrs

CONV1D_CASES = [
    ((1, 3, 9), (4, 3, 3), {}),
    ((2, 4, 11), (6, 2, 3), {"groups": 2, "padding": (1, 2)}),
    ((1, 2, 12), (3, 2, 2), {"strides": (2,), "dilation": (3,), "padding": (2,)}),
]


@pytest.mark.parametrize("dshape,wshape,attrs", CONV1D_CASES)
def test_conv1d_vs_onnxruntime(dshape: tuple, wshape: tuple, attrs: dict) -> None:
    x, w = rand(dshape), rand(wshape)
    ours = run_op("nn.conv1d", [x, w], **attrs)
    p = attrs.get("padding", (0, 0))
    p = p * 2 if len(p) == 1 else p
    (theirs,) = onnx_run("Conv", [x, w], group=attrs.get("groups", 1),
                         strides=list(attrs.get("strides", (1,))),
                         dilations=list(attrs.get("dilation", (1,))), pads=list(p))
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_conv1d_nwc_layout_and_relation() -> None:
    x, w = rand((1, 3, 8)), rand((2, 3, 3))
    want = run_op("nn.conv1d", [x, w], padding=(1, 1))
    got = run_op("nn.conv1d", [x.transpose(0, 2, 1), w.transpose(2, 1, 0)], padding=(1, 1),
                 data_layout="NWC", kernel_layout="WIO")
    close(got.transpose(0, 2, 1), want)
    rel = get_op("nn.conv1d").relation
    at = make_attrs("nn.conv1d", {"strides": 2})
    assert rel([TensorType((ANY, 3, ANY), "float32"), TensorType((2, 3, 3), "float32")],
               at) == TensorType((ANY, 2, ANY), "float32")
    assert rel([TensorType((1, 3, 9), "float32"), TensorType((2, 3, 3), "float32")],
               at) == TensorType((1, 2, 4), "float32")
    with pytest.raises(RelationError):
        rel([TensorType((1, 4, 9), "float32"), TensorType((2, 3, 3), "float32")], at)
    from relay_ref.ir.types import IncompleteType
    assert rel([IncompleteType(), TensorType((2, 3, 3), "float32")], at) is NOT_YET


CONV3D_CASES = [
    ((1, 2, 4, 5, 5), (3, 2, 2, 3, 3), {}),
    ((1, 4, 5, 4, 6), (4, 2, 3, 2, 3), {"groups": 2, "padding": (1,), "strides": (2, 1, 2)}),
    ((2, 1, 6, 5, 5), (2, 1, 2, 2, 2), {"dilation": (2, 1, 2),
                                        "padding": (0, 1, 1, 1, 0, 2)}),
]


@pytest.mark.parametrize("dshape,wshape,attrs", CONV3D_CASES)
def test_conv3d_vs_onnxruntime(dshape: tuple, wshape: tuple, attrs: dict) -> None:
    x, w = rand(dshape), rand(wshape)
    ours = run_op("nn.conv3d", [x, w], **attrs)
    p = attrs.get("padding", (0, 0, 0))
    p = p * 6 if len(p) == 1 else (p * 2 if len(p) == 3 else p)
    (theirs,) = onnx_run("Conv", [x, w], group=attrs.get("groups", 1),
                         strides=list(attrs.get("strides", (1, 1, 1))),
                         dilations=list(attrs.get("dilation", (1, 1, 1))), pads=list(p))
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_conv3d_ndhwc_and_int8_out_dtype() -> None:
    x, w = rand((1, 2, 4, 4, 3)), rand((3, 2, 2, 2, 2))
    want = run_op("nn.conv3d", [x, w], padding=(1,))
    got = run_op("nn.conv3d", [x.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0)],
                 padding=(1,), data_layout="NDHWC", kernel_layout="DHWIO")
    close(got.transpose(0, 4, 1, 2, 3), want, rtol=1e-5, atol=1e-5)
    xi, wi = rand((1, 2, 3, 3, 3), "int8", -100, 100), rand((2, 2, 2, 2, 2), "int8", -100, 100)
    out = run_op("nn.conv3d", [xi, wi], out_dtype="int32")
    ref = run_op("nn.conv3d", [xi.astype("int32"), wi.astype("int32")])
    np.testing.assert_array_equal(out, ref)


POOL1D_CASES = [
    {"pool_size": (3,)},
    {"pool_size": (2,), "strides": (2,), "padding": (1,)},
    {"pool_size": (3,), "strides": (2,), "padding": (1, 0), "ceil_mode": True},
    {"pool_size": (3,), "strides": (2,), "padding": (1, 2), "count_include_pad": True},
]


@pytest.mark.parametrize("attrs", POOL1D_CASES)
def test_pool1d_vs_onnxruntime(attrs: dict) -> None:
    x = rand((2, 3, 10))
    p = attrs.get("padding", (0,))
    p = p * 2 if len(p) == 1 else p
    common = dict(kernel_shape=list(attrs["pool_size"]),
                  strides=list(attrs.get("strides", (1,))), pads=list(p),
                  ceil_mode=int(attrs.get("ceil_mode", False)))
    if "count_include_pad" not in attrs:
        ours = run_op("nn.max_pool1d", [x], **attrs)
        (theirs,) = onnx_run("MaxPool", [x], **common)
        close(ours, theirs)
    ours = run_op("nn.avg_pool1d", [x], **attrs)
    (theirs,) = onnx_run("AveragePool", [x], **common,
                         count_include_pad=int(attrs.get("count_include_pad", False)))
    close(ours, theirs)


def test_pool1d_nwc() -> None:
    x = rand((1, 7, 2))
    got = run_op("nn.max_pool1d", [x], pool_size=(2,), layout="NWC")
    want = run_op("nn.max_pool1d", [x.transpose(0, 2, 1)], pool_size=(2,))
    close(got.transpose(0, 2, 1), want)


POOL3D_CASES = [
    {"pool_size": (2, 2, 2)},
    {"pool_size": (3, 2, 3), "strides": (2, 1, 2), "padding": (1,)},
    {"pool_size": (3, 3, 2), "strides": (2, 2, 2), "padding": (1, 0, 1, 0, 1, 0),
     "ceil_mode": True},
    {"pool_size": (2, 3, 3), "strides": (2, 2, 1), "padding": (1, 1, 1),
     "count_include_pad": True},
]


@pytest.mark.parametrize("attrs", POOL3D_CASES)
def test_pool3d_vs_onnxruntime(attrs: dict) -> None:
    x = rand((1, 2, 5, 6, 5))
    p = attrs.get("padding", (0, 0, 0))
    p = p * 6 if len(p) == 1 else (p * 2 if len(p) == 3 else p)
    common = dict(kernel_shape=list(attrs["pool_size"]),
                  strides=list(attrs.get("strides", (1, 1, 1))), pads=list(p),
                  ceil_mode=int(attrs.get("ceil_mode", False)))
    if "count_include_pad" not in attrs:
        ours = run_op("nn.max_pool3d", [x], **attrs)
        (theirs,) = onnx_run("MaxPool", [x], **common)
        close(ours, theirs)
    ours = run_op("nn.avg_pool3d", [x], **attrs)
    (theirs,) = onnx_run("AveragePool", [x], **common,
                         count_include_pad=int(attrs.get("count_include_pad", False)))
    close(ours, theirs)


def test_pool3d_ndhwc_and_int() -> None:
    x = rand((1, 2, 4, 4, 4))
    want = run_op("nn.max_pool3d", [x], pool_size=(2,), strides=(2,))
    got = run_op("nn.max_pool3d", [x.transpose(0, 2, 3, 4, 1)], pool_size=(2,), strides=(2,),
                 layout="NDHWC")
    close(got.transpose(0, 4, 1, 2, 3), want)
    xi = rand((1, 1, 2, 2, 2), "int32", -9, 9)
    out = run_op("nn.avg_pool3d", [xi], pool_size=(2,))
    assert out.dtype == np.int32 and out.shape == (1, 1, 1, 1, 1)
    assert out.item() == int(np.fix(xi.sum() / 8))


DIFF_TESTED = {"nn.conv1d", "nn.conv3d", "nn.max_pool1d", "nn.avg_pool1d", "nn.max_pool3d",
               "nn.avg_pool3d"}


def test_pool1d_errors_speak_of_the_1d_input():
    from relay_ref.ir.types import TensorType
    from relay_ref.ops.registry import RelationError, get_op, make_attrs

    op = get_op("nn.max_pool1d")
    with pytest.raises(RelationError, match=r"padded input \(1, 1, 2\)$"):
        op.relation([TensorType((1, 1, 2), "float32")],
                    make_attrs("nn.max_pool1d", {"pool_size": (9,)}))
