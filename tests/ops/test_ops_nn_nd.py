"""1-d and 3-d nn operators vs onnxruntime (Conv, ConvTranspose, MaxPool, AveragePool) and
vs NumPy loops (layouts, adaptive pooling)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import (
    NOT_YET,
    AttrError,
    OpRuntimeError,
    RelationError,
    get_op,
    make_attrs,
)

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


# -- transposed convolutions ------------------------------------------------------------------

CONVT_CASES = [
    ((1, 3, 5), (3, 2, 3), {}),
    ((2, 4, 6), (4, 3, 2), {"groups": 2, "strides": (2,), "padding": (1, 0),
                            "output_padding": (1,)}),
    ((1, 2, 4), (2, 2, 3), {"dilation": (2,), "padding": (2,), "strides": (3,)}),
    ((1, 2, 3, 4, 3), (2, 3, 2, 3, 2), {}),
    ((1, 4, 3, 3, 2), (4, 1, 3, 2, 2), {"groups": 2, "strides": (2, 1, 2), "padding": (1,),
                                        "output_padding": (1, 0, 0)}),
    ((2, 2, 2, 3, 3), (2, 2, 2, 2, 3), {"dilation": (1, 2, 1),
                                        "padding": (0, 1, 1, 1, 0, 2)}),
]


@pytest.mark.parametrize("dshape,wshape,attrs", CONVT_CASES)
def test_conv_transpose_nd_vs_onnxruntime(dshape: tuple, wshape: tuple, attrs: dict) -> None:
    nd = len(dshape) - 2
    x, w = rand(dshape), rand(wshape)
    ours = run_op(f"nn.conv{nd}d_transpose", [x, w], **attrs)
    p = attrs.get("padding", (0,))
    p = p * 2 * nd if len(p) == 1 else (p * 2 if len(p) == nd else p)
    (theirs,) = onnx_run("ConvTranspose", [x, w], group=attrs.get("groups", 1),
                         strides=list(attrs.get("strides", (1,) * nd)),
                         dilations=list(attrs.get("dilation", (1,) * nd)), pads=list(p),
                         output_padding=list(attrs.get("output_padding", (0,) * nd)))
    close(ours, theirs, rtol=1e-4, atol=1e-4)


def test_conv_transpose_layouts_and_out_dtype() -> None:
    x, w = rand((1, 3, 5)), rand((3, 2, 3))
    want = run_op("nn.conv1d_transpose", [x, w], strides=(2,))
    got = run_op("nn.conv1d_transpose", [x.transpose(0, 2, 1), w.transpose(2, 1, 0)],
                 strides=(2,), data_layout="NWC", kernel_layout="WOI")
    close(got.transpose(0, 2, 1), want)
    x3, w3 = rand((1, 2, 2, 3, 2)), rand((2, 2, 2, 2, 2))
    want3 = run_op("nn.conv3d_transpose", [x3, w3], padding=(1,))
    got3 = run_op("nn.conv3d_transpose", [x3.transpose(0, 2, 3, 4, 1), w3], padding=(1,),
                  data_layout="NDHWC", out_layout="NCDHW")
    close(got3, want3)
    xi, wi = rand((1, 2, 4), "int8", -100, 100), rand((2, 3, 2), "int8", -100, 100)
    out = run_op("nn.conv1d_transpose", [xi, wi], out_dtype="int32")
    np.testing.assert_array_equal(
        out, run_op("nn.conv1d_transpose", [xi.astype("int32"), wi.astype("int32")]))


def test_conv_transpose_relations() -> None:
    from relay_ref.ir.types import IncompleteType
    rel1 = get_op("nn.conv1d_transpose").relation
    at = make_attrs("nn.conv1d_transpose", {"strides": 2, "padding": (1,), "groups": 2})
    f = "float32"
    assert rel1([TensorType((1, 4, 5), f), TensorType((4, 3, 3), f)], at) == \
        TensorType((1, 6, 9), f)
    assert rel1([TensorType((ANY, ANY, ANY), f), TensorType((4, 3, 3), f)], at) == \
        TensorType((ANY, 6, ANY), f)
    assert rel1([TensorType((1, 4, 5), f), IncompleteType()], at) is NOT_YET
    with pytest.raises(RelationError, match=r"nn.conv1d_transpose: input has 5 channels but "
                                            r"weight expects 4"):
        rel1([TensorType((1, 5, 5), f), TensorType((4, 3, 3), f)], at)
    with pytest.raises(RelationError, match="must have rank 3"):
        rel1([TensorType((1, 4, 5, 5), f), TensorType((4, 3, 3), f)], at)
    rel3 = get_op("nn.conv3d_transpose").relation
    at3 = make_attrs("nn.conv3d_transpose", {"channels": 4, "kernel_size": (3, 3, 3)})
    with pytest.raises(RelationError, match="channels=4 but the weight gives 2"):
        rel3([TensorType((1, 2, 3, 3, 3), f), TensorType((2, 2, 3, 3, 3), f)], at3)
    with pytest.raises(RelationError, match=r"kernel_size=\(3, 3, 3\) but the weight's kernel "
                                            r"is \(3, 2, 3\)"):
        rel3([TensorType((1, 2, 3, 3, 3), f), TensorType((2, 4, 3, 2, 3), f)], at3)
    big_pad = make_attrs("nn.conv3d_transpose", {"padding": (3,)})
    with pytest.raises(RelationError, match="padding leaves an empty output"):
        rel3([TensorType((1, 2, 2, 2, 2), f), TensorType((2, 1, 2, 2, 2), f)], big_pad)
    for bad in [{"output_padding": (2,), "strides": (2,)}, {"padding": (1, 2, 3)},
                {"kernel_layout": "OIHW"}, {"groups": 0}]:
        with pytest.raises(AttrError):
            make_attrs("nn.conv1d_transpose", bad)
    assert make_attrs("nn.conv3d_transpose", {"strides": 2}).strides == (2, 2, 2)


# -- adaptive pooling --------------------------------------------------------------------------

def _adaptive_loop(x: np.ndarray, outs: tuple, kind: str) -> np.ndarray:
    """Each output cell over [floor(i*n/o), ceil((i+1)*n/o)) per spatial axis, by loops."""
    n, c, *sp = x.shape
    out = np.zeros((n, c, *outs), np.float64)
    for b in range(n):
        for ch in range(c):
            for cell in np.ndindex(*outs):
                win = x[b, ch]
                for ax, (i, m, o) in enumerate(zip(cell, sp, outs, strict=True)):
                    lo, hi = (i * m) // o, -((-(i + 1) * m) // o)
                    win = np.take(win, range(lo, hi), axis=ax)
                out[(b, ch) + cell] = win.max() if kind == "max" else win.mean()
    return out


@pytest.mark.parametrize("kind", ["avg", "max"])
@pytest.mark.parametrize("shape,size", [((2, 3, 7), (3,)), ((1, 2, 5), ()), ((1, 1, 4), (6,)),
                                        ((1, 2, 5, 4, 6), (2, 3, 4)),
                                        ((2, 1, 3, 3, 4), (2,))])
def test_adaptive_pool_nd_vs_loop(kind: str, shape: tuple, size: tuple) -> None:
    nd = len(shape) - 2
    x = rand(shape)
    ours = run_op(f"nn.adaptive_{kind}_pool{nd}d", [x], output_size=size)
    outs = shape[2:] if not size else (size * nd if len(size) == 1 else size)
    close(ours, _adaptive_loop(x, outs, kind))


def test_adaptive_pool_nd_layouts_int_and_relation() -> None:
    x = rand((1, 6, 2))
    got = run_op("nn.adaptive_max_pool1d", [x], output_size=(4,), layout="NWC")
    want = run_op("nn.adaptive_max_pool1d", [x.transpose(0, 2, 1)], output_size=(4,))
    close(got.transpose(0, 2, 1), want)
    x3 = rand((1, 3, 4, 5, 2))
    got3 = run_op("nn.adaptive_avg_pool3d", [x3], output_size=(2, 2, 1), layout="NDHWC",
                  out_layout="NCDHW")
    close(got3, run_op("nn.adaptive_avg_pool3d", [x3.transpose(0, 4, 1, 2, 3)],
                       output_size=(2, 2, 1)))
    xi = np.array([[[-3, -4, 5]]], "int32")
    np.testing.assert_array_equal(run_op("nn.adaptive_avg_pool1d", [xi], output_size=(1,)),
                                  [[[-0]]])  # -2 / 3 rounds towards zero
    np.testing.assert_array_equal(run_op("nn.adaptive_avg_pool1d", [xi], output_size=(2,)),
                                  [[[-3, 0]]])  # windows [0, 2) and [1, 3)
    rel = get_op("nn.adaptive_avg_pool3d").relation
    at = make_attrs("nn.adaptive_avg_pool3d", {"output_size": (2,), "layout": "NDHWC"})
    assert rel([TensorType((ANY, 5, 6, 7, ANY), "float32")], at) == \
        TensorType((ANY, 2, 2, 2, ANY), "float32")
    with pytest.raises(RelationError, match="nn.adaptive_avg_pool3d: data must have rank 5"):
        rel([TensorType((1, 2, 3), "float32")], at)
    rel1 = get_op("nn.adaptive_max_pool1d").relation
    assert rel1([TensorType((2, 3, ANY), "int8")], make_attrs("nn.adaptive_max_pool1d", {})) \
        == TensorType((2, 3, ANY), "int8")
    for name, bad in [("nn.adaptive_avg_pool1d", {"output_size": (2, 2)}),
                      ("nn.adaptive_max_pool3d", {"output_size": (2, 2)}),
                      ("nn.adaptive_max_pool3d", {"output_size": (0,)}),
                      ("nn.adaptive_avg_pool1d", {"layout": "NCH"})]:
        with pytest.raises(AttrError):
            make_attrs(name, bad)
    with pytest.raises(OpRuntimeError):
        run_op("nn.adaptive_max_pool1d", [np.zeros((1, 1, 0), "float32")], output_size=(2,))


DIFF_TESTED |= {"nn.conv1d_transpose", "nn.conv3d_transpose", "nn.adaptive_avg_pool1d",
                "nn.adaptive_max_pool1d", "nn.adaptive_avg_pool3d", "nn.adaptive_max_pool3d"}
