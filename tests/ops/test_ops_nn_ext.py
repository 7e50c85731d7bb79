"""nn_ext operators vs onnxruntime (InstanceNormalization, GroupNormalization, Conv 1-d/3-d,
MaxPool/AveragePool 1-d) and NumPy formulas (l2_normalize, layouts, group_norm)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, get_op, make_attrs


def test_instance_norm_vs_onnxruntime() -> None:
    x, g, b = rand((2, 3, 4, 5)), rand((3,)), rand((3,))
    ours = run_op("nn.instance_norm", [x, g, b], epsilon=1e-3)
    (theirs,) = onnx_run("InstanceNormalization", [x, g, b], epsilon=1e-3)
    close(ours, theirs, rtol=1e-4, atol=1e-4)
    x3 = rand((2, 4, 6))
    ours = run_op("nn.instance_norm", [x3, rand((4,)), rand((4,))], center=False, scale=False)
    (theirs,) = onnx_run("InstanceNormalization", [x3, np.ones(4, "float32"),
                                                   np.zeros(4, "float32")])
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def _group_norm_np(x: np.ndarray, g: np.ndarray, b: np.ndarray, groups: int,
                   eps: float) -> np.ndarray:
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1).astype(np.float64)
    y = (xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)
    y = y.reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * g.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm_vs_numpy_and_onnxruntime(groups: int) -> None:
    x, g, b = rand((2, 6, 3, 4)), rand((6,)), rand((6,))
    ours = run_op("nn.group_norm", [x, g, b], num_groups=groups, epsilon=1e-4)
    close(ours, _group_norm_np(x, g, b, groups, 1e-4), rtol=1e-4, atol=1e-4)
    (theirs,) = onnx_run("GroupNormalization", [x, g, b], opset=21, num_groups=groups,
                         epsilon=1e-4)
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_norm_relations() -> None:
    rel = get_op("nn.group_norm").relation
    at = make_attrs("nn.group_norm", {"num_groups": 4})
    with pytest.raises(RelationError):
        rel([TensorType((1, 6, 2), "float32"), TensorType((6,), "float32"),
             TensorType((6,), "float32")], at)
    out = rel([TensorType((ANY, 8, ANY), "float32"), TensorType((ANY,), "float32"),
               TensorType((8,), "float32")], at)
    assert out == TensorType((ANY, 8, ANY), "float32")
    irel = get_op("nn.instance_norm").relation
    with pytest.raises(RelationError):
        irel([TensorType((1, 6, 2), "float32"), TensorType((5,), "float32"),
              TensorType((6,), "float32")], make_attrs("nn.instance_norm", {}))
    with pytest.raises(AttrError):
        make_attrs("nn.group_norm", {})


@pytest.mark.parametrize("axis", [None, (1,), (1, 2), (-1,)])
def test_l2_normalize_vs_numpy(axis: tuple | None) -> None:
    x = rand((2, 3, 4))
    x[0, 0] = 0.0
    kw = {} if axis is None else {"axis": axis}
    ours = run_op("nn.l2_normalize", [x], eps=1e-6, **kw)
    ss = np.sum(x.astype(np.float64) ** 2, axis=axis, keepdims=True)
    close(ours, x / np.sqrt(np.maximum(ss, 1e-6)))
    with pytest.raises(RelationError):
        get_op("nn.l2_normalize").relation([TensorType((2,), "float32")],
                                           make_attrs("nn.l2_normalize", {"eps": 1.0,
                                                                          "axis": (3,)}))


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


def test_norms_channels_last() -> None:
    x, g, b = rand((2, 4, 3, 5)), rand((4,)), rand((4,))
    for name, kw in (("nn.instance_norm", {}), ("nn.group_norm", {"num_groups": 2})):
        want = run_op(name, [x, g, b], **kw)
        got = run_op(name, [x.transpose(0, 2, 3, 1), g, b], axis=-1, **kw)
        close(got.transpose(0, 3, 1, 2), want, rtol=1e-4, atol=1e-4)


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


DIFF_TESTED = {"nn.instance_norm", "nn.group_norm", "nn.l2_normalize", "nn.conv1d",
               "nn.conv3d", "nn.max_pool1d", "nn.avg_pool1d", "nn.max_pool3d",
               "nn.avg_pool3d"}


def test_pool1d_errors_speak_of_the_1d_input():
    from relay_ref.ir.types import TensorType
    from relay_ref.ops.registry import RelationError, get_op, make_attrs

    op = get_op("nn.max_pool1d")
    with pytest.raises(RelationError, match=r"padded input \(1, 1, 2\)$"):
        op.relation([TensorType((1, 1, 2), "float32")],
                    make_attrs("nn.max_pool1d", {"pool_size": (9,)}))
