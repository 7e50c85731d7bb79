"""image.resize2d and nn.upsampling vs onnxruntime (Resize) and NumPy (np.repeat)."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import AttrError, get_op, make_attrs

_NEAREST_MODE = {"": "floor", "floor": "floor", "ceil": "ceil",
                 "round_prefer_floor": "round_prefer_floor",
                 "round_prefer_ceil": "round_prefer_ceil", "round": "round_prefer_ceil"}


def _onnx_resize(x: np.ndarray, size: tuple, method: str, ctm: str,
                 rounding: str = "", alpha: float = -0.5, exclude: int = 0) -> np.ndarray:
    if method == "nearest_neighbor" and not rounding:
        rounding = "round" if ctm == "align_corners" else "floor"
    sizes = np.array(list(x.shape[:2]) + list(size), np.int64)
    kw = {"mode": {"nearest_neighbor": "nearest"}.get(method, method),
          "coordinate_transformation_mode": ctm}
    if method == "cubic":
        kw.update(cubic_coeff_a=alpha, exclude_outside=exclude)
    if method == "nearest_neighbor":
        kw["nearest_mode"] = _NEAREST_MODE[rounding]
    (out,) = onnx_run("Resize", [x, None, None, sizes], opset=18, **kw)
    return out


RESIZE_CASES = [
    ((7, 9), "linear", "half_pixel", ""),
    ((3, 4), "linear", "half_pixel", ""),
    ((7, 9), "linear", "align_corners", ""),
    ((2, 3), "linear", "align_corners", ""),
    ((8, 5), "linear", "asymmetric", ""),
    ((7, 9), "linear", "pytorch_half_pixel", ""),
    ((7, 9), "nearest_neighbor", "asymmetric", ""),
    ((3, 2), "nearest_neighbor", "asymmetric", ""),
    ((7, 9), "nearest_neighbor", "half_pixel", "round_prefer_floor"),
    ((7, 9), "nearest_neighbor", "half_pixel", "round_prefer_ceil"),
    ((7, 9), "nearest_neighbor", "align_corners", ""),
    ((2, 7), "nearest_neighbor", "tf_half_pixel_for_nn", "floor"),
    ((5, 11), "nearest_neighbor", "asymmetric", "ceil"),
]


@pytest.mark.parametrize("size,method,ctm,rounding", RESIZE_CASES)
def test_resize2d_vs_onnxruntime(size: tuple, method: str, ctm: str, rounding: str) -> None:
    x = rand((2, 3, 4, 5))
    ours = run_op("image.resize2d", [x], size=size, method=method,
                  coordinate_transformation_mode=ctm, rounding_method=rounding)
    close(ours, _onnx_resize(x, size, method, ctm, rounding), rtol=1e-5, atol=1e-5)


def test_resize2d_nhwc_int_and_relation() -> None:
    x = rand((1, 2, 3, 4))
    want = run_op("image.resize2d", [x], size=(5, 6))
    got = run_op("image.resize2d", [x.transpose(0, 2, 3, 1)], size=(5, 6), layout="NHWC")
    close(got.transpose(0, 3, 1, 2), want)
    xi = rand((1, 1, 3, 3), "int32", 0, 9)
    out = run_op("image.resize2d", [xi], size=(6, 6), method="nearest_neighbor",
                 coordinate_transformation_mode="asymmetric")
    np.testing.assert_array_equal(out, xi.repeat(2, 2).repeat(2, 3))
    rel = get_op("image.resize2d").relation
    at = make_attrs("image.resize2d", {"size": (8, 9), "layout": "NHWC"})
    assert rel([TensorType((ANY, ANY, ANY, 3), "float32")], at) == \
        TensorType((ANY, 8, 9, 3), "float32")
    with pytest.raises(AttrError):
        make_attrs("image.resize2d", {"size": (2, 2), "method": "bicubic"})


@pytest.mark.parametrize("size", [(7, 9), (3, 2), (8, 10)])
@pytest.mark.parametrize("ctm", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("alpha,exclude", [(-0.5, 0), (-0.75, 1)])
def test_resize2d_cubic_vs_onnxruntime(size: tuple, ctm: str, alpha: float,
                                       exclude: int) -> None:
    x = rand((1, 2, 4, 5))
    ours = run_op("image.resize2d", [x], size=size, method="cubic",
                  coordinate_transformation_mode=ctm, cubic_alpha=alpha,
                  cubic_exclude=exclude)
    close(ours, _onnx_resize(x, size, "cubic", ctm, alpha=alpha, exclude=exclude),
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("scale", [(2.0, 2.0), (3.0, 1.0), (1.5, 2.5)])
def test_upsampling_vs_onnxruntime(scale: tuple) -> None:
    x = rand((1, 2, 4, 4))
    size = (int(round(4 * scale[0])), int(round(4 * scale[1])))
    for method, align in [("nearest_neighbor", False), ("bilinear", False),
                          ("bilinear", True), ("bicubic", False), ("bicubic", True)]:
        ours = run_op("nn.upsampling", [x], scale_h=scale[0], scale_w=scale[1],
                      method=method, align_corners=align)
        ctm = "align_corners" if align else "asymmetric"
        m = {"bilinear": "linear", "bicubic": "cubic"}.get(method, method)
        close(ours, _onnx_resize(x, size, m, ctm), rtol=1e-4, atol=1e-4)


def test_resize2d_nearest_uses_exact_fractions() -> None:
    # 3 * (4 / 3) is 3.9999999999999996 in floating point; TOPI's fractions give 4
    x = np.arange(4, dtype="float32").reshape(1, 1, 1, 4)
    out = run_op("image.resize2d", [x], size=(1, 3), method="nearest_neighbor",
                 coordinate_transformation_mode="asymmetric")
    np.testing.assert_array_equal(out.reshape(-1), np.floor(np.arange(3) * 4 / 3 + 1e-9))
    x = np.arange(10, dtype="float32").reshape(1, 1, 1, 10)
    out = run_op("image.resize2d", [x], size=(1, 7), method="nearest_neighbor",
                 coordinate_transformation_mode="asymmetric")
    want = [(i * 10) // 7 for i in range(7)]
    np.testing.assert_array_equal(out.reshape(-1), want)


def test_upsampling_nearest_is_repeat() -> None:
    x = rand((2, 3, 2, 3))
    out = run_op("nn.upsampling", [x], scale_h=2.0, scale_w=3.0)
    np.testing.assert_array_equal(out, x.repeat(2, 2).repeat(3, 3))
    out = run_op("nn.upsampling", [x.transpose(0, 2, 3, 1)], scale_h=2.0, scale_w=3.0,
                 layout="NHWC")
    np.testing.assert_array_equal(out, x.repeat(2, 2).repeat(3, 3).transpose(0, 2, 3, 1))


DIFF_TESTED = {"image.resize2d", "nn.upsampling"}
