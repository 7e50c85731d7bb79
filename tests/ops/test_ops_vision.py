"""vision.* vs onnxruntime (RoiAlign, MaxRoiPool) and vs explicit loops written here
(multibox_prior, roi_align's max mode); relations with ``?`` dims and error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import ANY, TensorType
from relay_ref.ops.registry import AttrError, OpRuntimeError, RelationError, get_op, make_attrs


def _multibox_loop(h: int, w: int, sizes: tuple, ratios: tuple, steps: tuple,
                   offsets: tuple, clip: bool) -> np.ndarray:
    out = []
    sy = steps[0] if steps[0] > 0 else 1 / h
    sx = steps[1] if steps[1] > 0 else 1 / w
    for i in range(h):
        for j in range(w):
            cy, cx = (i + offsets[0]) * sy, (j + offsets[1]) * sx
            kinds = [(s * h / w / 2, s / 2) for s in sizes]
            kinds += [(sizes[0] * h / w * math.sqrt(r) / 2, sizes[0] / math.sqrt(r) / 2)
                      for r in ratios[1:]]
            for bw, bh in kinds:
                box = [cx - bw, cy - bh, cx + bw, cy + bh]
                out.append([min(max(v, 0), 1) for v in box] if clip else box)
    return np.array(out, "float32")[None]


@pytest.mark.parametrize("attrs", [{}, {"sizes": (0.3, 0.1), "ratios": (1.0, 2.0, 0.5)},
                                   {"sizes": (0.5,), "steps": (0.2, 0.25),
                                    "offsets": (0.0, 0.5), "clip": True}])
def test_multibox_prior_vs_loop(attrs: dict) -> None:
    x = rand((2, 3, 4, 5))
    ours = run_op("vision.multibox_prior", [x], **attrs)
    full = {"sizes": (1.0,), "ratios": (1.0,), "steps": (-1, -1), "offsets": (0.5, 0.5),
            "clip": False} | attrs
    close(ours, _multibox_loop(4, 5, **full), rtol=1e-6, atol=1e-6)


def test_multibox_prior_relation() -> None:
    rel = get_op("vision.multibox_prior").relation
    at = make_attrs("vision.multibox_prior", {"sizes": (0.3, 0.1), "ratios": (1.0, 2.0)})
    assert rel([TensorType((1, 3, 4, 5), "float32")], at) == TensorType((1, 60, 4), "float32")
    assert rel([TensorType((1, 3, ANY, 5), "float32")], at) == TensorType((1, ANY, 4),
                                                                           "float32")
    with pytest.raises(RelationError, match="data must have rank 4"):
        rel([TensorType((3, 4, 5), "float32")], at)
    with pytest.raises(AttrError):
        make_attrs("vision.multibox_prior", {"sizes": ()})


ROIS = np.array([[0, 1.0, 1.0, 6.0, 5.0], [1, 0.0, 2.0, 3.0, 7.0], [0, 2.5, 0.4, 7.7, 7.9],
                 [1, -1.0, -1.0, 1.0, 2.0]], "float32")


@pytest.mark.parametrize("sample_ratio", [2, -1])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_roi_align_avg_vs_onnxruntime(sample_ratio: int, scale: float) -> None:
    x = rand((2, 3, 8, 8))
    ours = run_op("vision.roi_align", [x, ROIS], pooled_size=(3, 2), spatial_scale=scale,
                  sample_ratio=sample_ratio)
    (theirs,) = onnx_run("RoiAlign", [x, ROIS[:, 1:], ROIS[:, 0].astype("int64")], opset=16,
                         output_height=3, output_width=2, sampling_ratio=max(sample_ratio, 0),
                         spatial_scale=scale, mode="avg",
                         coordinate_transformation_mode="output_half_pixel")
    close(ours, theirs, rtol=1e-4, atol=1e-5)
    nhwc = run_op("vision.roi_align", [x.transpose(0, 2, 3, 1), ROIS], pooled_size=(3, 2),
                  spatial_scale=scale, sample_ratio=sample_ratio, layout="NHWC")
    close(nhwc.transpose(0, 3, 1, 2), ours)


def _bilinear_loop(img: np.ndarray, y: float, x: float) -> float:
    h, w = img.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = min(max(y, 0), h - 1), min(max(x, 0), w - 1)
    y0, x0 = math.floor(y), math.floor(x)
    total = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if yy < h and xx < w:
                total += wy * wx * float(img[yy, xx])
    return total


def test_roi_align_max_vs_loop() -> None:
    x = rand((2, 2, 6, 7))
    ours = run_op("vision.roi_align", [x, ROIS], pooled_size=(2,), spatial_scale=0.75,
                  sample_ratio=2, mode="max")
    want = np.zeros((4, 2, 2, 2))
    for r, roi in enumerate(ROIS.astype(np.float64)):
        x0, y0, x1, y1 = roi[1:] * 0.75
        rh, rw = max(y1 - y0, 1.0), max(x1 - x0, 1.0)
        for c in range(2):
            for i in range(2):
                for j in range(2):
                    want[r, c, i, j] = max(
                        _bilinear_loop(x[int(roi[0]), c], y0 + i * rh / 2 + (a + 0.5) * rh / 4,
                                       x0 + j * rw / 2 + (b + 0.5) * rw / 4)
                        for a in range(2) for b in range(2))
    close(ours, want, rtol=1e-5, atol=1e-5)


def test_roi_pool_vs_onnxruntime() -> None:
    x = rand((2, 3, 8, 9))
    rois = np.array([[0, 1.0, 1.0, 6.0, 5.0], [1, 0.0, 2.0, 3.0, 7.0],
                     [0, 2.2, 0.4, 8.2, 7.9], [1, 6.0, 6.0, 6.0, 6.0]], "float32")
    ours = run_op("vision.roi_pool", [x, rois], pooled_size=(3, 2), spatial_scale=1.0)
    (theirs,) = onnx_run("MaxRoiPool", [x, rois], opset=1, pooled_shape=[3, 2],
                         spatial_scale=1.0)
    close(ours, theirs)


def test_roi_relations_and_errors() -> None:
    for name in ("vision.roi_align", "vision.roi_pool"):
        rel = get_op(name).relation
        at = make_attrs(name, {"pooled_size": (2, 3), "spatial_scale": 0.5})
        assert rel([TensorType((ANY, 4, 8, 8), "float32"), TensorType((ANY, 5), "float32")],
                   at) == TensorType((ANY, 4, 2, 3), "float32")
        nhwc = make_attrs(name, {"pooled_size": (2,), "spatial_scale": 0.5,
                                 "layout": "NHWC"})
        assert rel([TensorType((1, 8, 8, 4), "float32"), TensorType((7, 5), "float32")],
                   nhwc) == TensorType((7, 2, 2, 4), "float32")
        with pytest.raises(RelationError, match=r"rois must have shape \(num_roi, 5\)"):
            rel([TensorType((1, 4, 8, 8), "float32"), TensorType((7, 4), "float32")], at)
        with pytest.raises(RelationError, match="same float dtype"):
            rel([TensorType((1, 4, 8, 8), "float32"), TensorType((7, 5), "float64")], at)
        with pytest.raises(AttrError):
            make_attrs(name, {"pooled_size": (2,)})  # spatial_scale is required
        with pytest.raises(OpRuntimeError, match="batch index"):
            run_op(name, [rand((1, 1, 4, 4)), np.array([[3, 0, 0, 2, 2]], "float32")],
                   pooled_size=(1,), spatial_scale=1.0)


DIFF_TESTED = {"vision.multibox_prior", "vision.roi_align", "vision.roi_pool"}
