"""ONNX ``Resize`` beyond ``image.resize2d``: the per-axis sampling matrices of
``resize_math`` against ONNX's reference (``onnx.reference.ops.op_resize``) over modes,
coordinate transformations, antialias and fractional scales, and the separable lowering
end to end against the reference evaluator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator
from onnx.reference.ops import op_resize as ref
from onnx_case import node_model, rand, relay_run

from relay_ref.frontend.onnx import resize_math

COORDS = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
          "half_pixel_symmetric", "tf_crop_and_resize")


def _reference_coeffs(mode: str, antialias: bool, nearest: str, a: float):
    if mode == "nearest":
        return lambda r, s: ref._nearest_coeffs(r, nearest)
    if mode == "linear":
        return ref._linear_coeffs_antialias if antialias else ref._linear_coeffs
    fn = ref._cubic_coeffs_antialias if antialias else ref._cubic_coeffs
    return lambda r, s: fn(r, s, A=a)


@pytest.mark.parametrize("mode,coord", list(itertools.product(("nearest", "linear", "cubic"),
                                                              COORDS)))
def test_axis_weights_match_the_reference(mode: str, coord: str) -> None:
    rng = np.random.default_rng(0)
    for (size, scale), antialias, exclude in itertools.product(
            [(4, 0.6), (5, 1.7), (4, 0.8), (3, 2.0), (7, 0.3), (1, 3.0)], (False, True),
            (False, True)):
        if mode == "nearest" and antialias:
            continue
        x = rng.standard_normal((2, size))
        roi = [0.0, 0.2, 1.0, 0.9]
        want = ref._interpolate_nd(
            x, _reference_coeffs(mode, antialias, "round_prefer_ceil", -0.5),
            scale_factors=[1.0, scale], roi=np.array(roi) if coord == COORDS[-1] else None,
            exclude_outside=exclude, coordinate_transformation_mode=coord,
            extrapolation_value=7.0)
        axis = resize_math.plan(x.shape, [1.0, scale], None, [0, 1], roi)[1]
        m, extrapolated = resize_math.weights(axis, mode, coord, nearest="round_prefer_ceil",
                                              cubic_a=-0.5, exclude_outside=exclude,
                                              antialias=antialias)
        got = x @ m.T
        if extrapolated is not None:
            got = np.where(extrapolated[None], 7.0, got)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{size} x {scale}, {antialias=}, {exclude=}")


def test_plan_floors_scaled_sizes_and_keeps_the_aspect_ratio() -> None:
    p = resize_math.plan((1, 1, 4, 4), [1.0, 1.0, 0.8, 0.6], None, [0, 1, 2, 3], None)
    assert [(a.size_out, a.scale) for a in p[2:]] == [(3, 0.8), (2, 0.6)]
    assert p[0].identity and p[1].identity and not p[2].identity
    small = resize_math.plan((1, 1, 4, 6), None, [2, 2], [2, 3], None, "not_larger")
    assert [a.size_out for a in small] == [1, 1, 1, 2]  # scale 1/3 on both axes
    big = resize_math.plan((1, 1, 4, 6), None, [2, 2], [2, 3], None, "not_smaller")
    assert [a.size_out for a in big] == [1, 1, 2, 3]


S = np.array  # scales / sizes as initializers


@pytest.mark.parametrize("attrs,init", [
    ({"mode": "linear"}, {"roi": S([], "float32"), "scales": S([1, 1, 0.6, 0.7], "float32")}),
    ({"mode": "cubic", "antialias": 1},
     {"roi": S([], "float32"), "scales": S([1, 1, 0.6, 0.5], "float32")}),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
     {"roi": S([], "float32"), "scales": S([1, 1, 1.7, 0.6], "float32")}),
    ({"mode": "nearest", "axes": [3, 2]},
     {"roi": S([], "float32"), "scales": S([1.5, 0.7], "float32")}),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
      "extrapolation_value": 3.0},
     {"roi": S([0, 0, -0.2, 0.3, 1, 1, 0.8, 1.3], "float32"),
      "scales": S([1, 1, 1.5, 0.8], "float32")}),
    ({"mode": "linear"}, {"roi": S([], "float32"), "scales": S([1, 1.5, 1, 0.5], "float32")}),
], ids=["fractional", "antialias", "symmetric", "axes", "crop", "channels"])
def test_separable_resize_matches_the_reference(attrs: dict, init: dict) -> None:
    """Against ONNX's reference evaluator (onnxruntime extrapolates tf_crop_and_resize per
    output pixel, not per axis, and refuses to resize channels)."""
    x = rand(2, 2, 5, 6)
    model = node_model("Resize", {"x": x}, attrs, opset=19, initializers=init)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = relay_run(model, {"x": x})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
