"""Convolutions on blocked layouts vs onnxruntime's Conv on the unpacked tensors (packing
done by explicit loops), and their relations."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import AttrError, RelationError, get_op, make_attrs


def pack_data(x: np.ndarray, f: int) -> np.ndarray:
    """NCHW -> NCHW{f}c by a loop over elements."""
    n, c, h, w = x.shape
    out = np.zeros((n, c // f, h, w, f), x.dtype)
    for i in np.ndindex(x.shape):
        out[i[0], i[1] // f, i[2], i[3], i[1] % f] = x[i]
    return out


def pack_kernel(w: np.ndarray, fi: int, fo: int) -> np.ndarray:
    """OIHW -> OIHW{fi}i{fo}o by a loop over elements."""
    o, i, kh, kw = w.shape
    out = np.zeros((o // fo, i // fi, kh, kw, fi, fo), w.dtype)
    for j in np.ndindex(w.shape):
        out[j[0] // fo, j[1] // fi, j[2], j[3], j[1] % fi, j[0] % fo] = w[j]
    return out


@pytest.mark.parametrize("attrs", [{}, {"strides": (2, 2), "padding": (1, 1)},
                                   {"dilation": (2, 1), "padding": (1, 0, 2, 1)}])
def test_conv2d_nchwc_vs_onnxruntime(attrs: dict) -> None:
    x, w = rand((1, 8, 6, 5)), rand((4, 8, 3, 3))
    ours = run_op("nn.contrib_conv2d_NCHWc", [pack_data(x, 4), pack_kernel(w, 4, 2)],
                  data_layout="NCHW4c", kernel_layout="OIHW4i2o", out_layout="NCHW2c",
                  channels=4, kernel_size=(3, 3), **attrs)
    p = attrs.get("padding", (0, 0))
    pads = [p[0], p[1], p[0], p[1]] if len(p) == 2 else [p[0], p[1], p[2], p[3]]
    (theirs,) = onnx_run("Conv", [x, w], strides=list(attrs.get("strides", (1, 1))),
                         dilations=list(attrs.get("dilation", (1, 1))), pads=pads)
    close(ours, pack_data(theirs, 2), rtol=1e-4, atol=1e-4)


def test_depthwise_conv2d_nchwc_vs_onnxruntime() -> None:
    x, w = rand((2, 8, 5, 5)), rand((8, 1, 3, 3))
    ours = run_op("nn.contrib_depthwise_conv2d_NCHWc", [pack_data(x, 4), pack_kernel(w, 1, 4)],
                  data_layout="NCHW4c", kernel_layout="OIHW1i4o", groups=8, padding=(1, 1))
    (theirs,) = onnx_run("Conv", [x, w], group=8, pads=[1, 1, 1, 1])
    close(ours, pack_data(theirs, 4), rtol=1e-4, atol=1e-4)


def test_blocked_conv_relation() -> None:
    op = "nn.contrib_conv2d_NCHWc"
    rel = get_op(op).relation
    at = make_attrs(op, {"data_layout": "NCHW4c", "kernel_layout": "OIHW4i4o",
                         "padding": (1, 1)})
    assert rel([TensorType((ANY, 2, 7, ANY, 4), "float32"),
                TensorType((3, 2, 3, 3, 4, 4), "float32")], at) == \
        TensorType((ANY, 3, 7, ANY, 4), "float32")
    with pytest.raises(RelationError, match=f"{op}: input has 8 channels but weight expects 4"):
        rel([TensorType((1, 2, 7, 7, 4), "float32"), TensorType((3, 1, 3, 3, 4, 4),
                                                                "float32")], at)
    with pytest.raises(RelationError, match="block of data .* has size 8"):
        rel([TensorType((1, 2, 7, 7, 8), "float32"), TensorType((3, 2, 3, 3, 4, 4),
                                                                "float32")], at)
    with pytest.raises(RelationError, match="has rank 4 but 'NCHW4c' has 5 axes"):
        rel([TensorType((1, 8, 7, 7), "float32"), TensorType((3, 2, 3, 3, 4, 4),
                                                             "float32")], at)
    odd = make_attrs(op, {"data_layout": "NCHW4c", "kernel_layout": "OIHW4i4o",
                          "out_layout": "NCHW8c"})
    with pytest.raises(RelationError, match="size 12, not a multiple of the block size 8"):
        rel([TensorType((1, 2, 7, 7, 4), "float32"), TensorType((3, 2, 3, 3, 4, 4),
                                                                "float32")], odd)
    for bad in ({"data_layout": "NCHWc"}, {"kernel_layout": "OIHW4c"},
                {"data_layout": "NCH4c"}, {"strides": (0, 1)}):
        with pytest.raises(AttrError):
            make_attrs(op, bad)


DIFF_TESTED = {"nn.contrib_conv2d_NCHWc", "nn.contrib_depthwise_conv2d_NCHWc"}
