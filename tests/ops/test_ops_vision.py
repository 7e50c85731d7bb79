"""vision.* vs onnxruntime (RoiAlign, MaxRoiPool) and vs explicit loops written here
(multibox_prior, roi_align's max mode); relations with ``?`` dims and error messages."""

from __future__ import annotations

import math

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


# -- vision.get_valid_counts / vision.non_max_suppression ------------------------------------

def _valid_counts_loop(data: np.ndarray, thr: float, id_index: int, score_index: int
                       ) -> tuple:
    b, n, length = data.shape
    counts, out, idx = [], np.full(data.shape, -1.0, data.dtype), np.full((b, n), -1)
    for i in range(b):
        c = 0
        for j in range(n):
            if data[i, j, score_index] > thr and (id_index < 0 or data[i, j, id_index] >= 0):
                out[i, c], idx[i, c] = data[i, j], j
                c += 1
        counts.append(c)
    return np.array(counts), out, idx


@pytest.mark.parametrize("id_index,score_index", [(0, 1), (-1, 0), (2, 1)])
def test_get_valid_counts_vs_loop(id_index: int, score_index: int) -> None:
    data = rand((2, 6, 6), low=-1, high=1)
    got = run_op("vision.get_valid_counts", [data, np.array(0.1, "float32")],
                 id_index=id_index, score_index=score_index)
    want = _valid_counts_loop(data, 0.1, id_index, score_index)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert [g.dtype for g in got] == [np.int32, np.float32, np.int32]


def _iou_loop(a: list, b: list) -> float:
    al, ar, at, ab = min(a[0], a[2]), max(a[0], a[2]), min(a[1], a[3]), max(a[1], a[3])
    bl, br, bt, bb = min(b[0], b[2]), max(b[0], b[2]), min(b[1], b[3]), max(b[1], b[3])
    w, h = max(0.0, min(ar, br) - max(al, bl)), max(0.0, min(ab, bb) - max(at, bt))
    union = (ar - al) * (ab - at) + (br - bl) * (bb - bt) - w * h
    return 0.0 if union <= 0 else w * h / union


def _nms_loop(data: np.ndarray, valid: list, indices: np.ndarray, max_out: int, iou: float,
              force: bool, top_k: int, cs: int, si: int, ii: int) -> tuple:
    """Greedy NMS per batch written from TVM's description; returns (rows, box indices)."""
    b, n, length = data.shape
    rows_out, boxes_out = [], []
    for i in range(b):
        vc = valid[i]
        rows = [[-1.0] * length for _ in range(n)]
        boxes = [-1] * n
        if iou <= 0:
            for j in range(vc):
                rows[j], boxes[j] = list(data[i, j]), j
        else:
            order = sorted(range(vc), key=lambda j: -data[i, j, si])  # stable
            if 0 < top_k < vc:
                order = order[:top_k]
            for pos, j in enumerate(order):
                rows[pos], boxes[pos] = list(data[i, j]), j
            kept = 0
            for j in range(vc):
                if kept == max_out:
                    rows[j], boxes[j] = [-1.0] * length, -1
                    continue
                if rows[j][si] <= 0:
                    continue
                dropped = any(
                    rows[k][si] > 0 and (ii < 0 or rows[k][ii] >= 0)
                    and (force or ii < 0 or rows[j][ii] == rows[k][ii])
                    and _iou_loop(rows[j][cs:cs + 4], rows[k][cs:cs + 4]) >= iou
                    for k in range(j))
                if dropped:
                    rows[j], boxes[j] = [-1.0] * length, -1
                else:
                    kept += 1
        boxes = [int(indices[i, d]) if d >= 0 else -1 for d in boxes]
        rows_out.append(rows)
        boxes_out.append(boxes)
    return np.array(rows_out, data.dtype), boxes_out


_TVM_BOXES = np.array([[[0, 0.8, 1, 20, 25, 45], [1, 0.7, 30, 60, 50, 80],
                        [0, 0.4, 4, 21, 19, 40], [2, 0.9, 35, 61, 52, 79],
                        [1, 0.5, 100, 60, 70, 110]]], "float32")


def _nms_args(data: np.ndarray, valid: list, indices: np.ndarray, max_out: int,
              iou: float) -> list:
    return [data, np.array(valid, "int32"), indices.astype("int32"),
            np.array(max_out, "int32"), np.array(iou, "float32")]


def test_nms_tvm_example() -> None:
    """TVM's test_op_level5 case: the top two by score survive force_suppress."""
    args = _nms_args(_TVM_BOXES, [4], np.array([[0, 1, 3, 4, -1]]), -1, 0.5)
    idx, count = run_op("vision.non_max_suppression", args, force_suppress=True, top_k=2)
    np.testing.assert_array_equal(idx, [[4, 0, -1, -1, -1]])
    np.testing.assert_array_equal(count, [[2]])
    rows = run_op("vision.non_max_suppression", args, return_indices=False)
    want = np.full((1, 5, 6), -1, "float32")
    want[0, :4] = _TVM_BOXES[0, [3, 0, 1, 2]]  # by score; class 0's boxes: IoU 0.475
    np.testing.assert_array_equal(rows, want)
    rows = run_op("vision.non_max_suppression", args[:4] + [np.array(0.45, "float32")],
                  return_indices=False)
    want[0, 3] = -1  # now the class 0 box scoring 0.4 is suppressed by the one scoring 0.8
    np.testing.assert_array_equal(rows, want)


@pytest.mark.parametrize("attrs,max_out,iou", [
    ({}, -1, 0.3), ({"force_suppress": True}, -1, 0.2), ({"top_k": 3}, 2, 0.3),
    ({"id_index": -1, "score_index": 0, "coord_start": 1}, -1, 0.25), ({}, -1, 0.0),
    ({"top_k": 4, "force_suppress": True}, 1, 0.5)])
def test_nms_vs_loop(attrs: dict, max_out: int, iou: float) -> None:
    b, n = 2, 8
    rng = np.random.default_rng(7)
    corner = rng.uniform(0, 3, (b, n, 2))  # crowded: many overlaps
    boxes = np.concatenate([corner, corner + rng.uniform(2, 4, (b, n, 2))], axis=2)
    data = np.concatenate([rng.integers(-1, 3, (b, n, 1)), rng.uniform(-0.2, 1, (b, n, 1)),
                           boxes], axis=2).astype("float32")
    if attrs.get("id_index") == -1:
        data = data[:, :, 1:]
    valid, indices = [6, 8], np.tile(np.arange(n)[::-1], (b, 1))
    args = _nms_args(data, valid, indices, max_out, iou)
    cs, si, ii = attrs.get("coord_start", 2), attrs.get("score_index", 1), \
        attrs.get("id_index", 0)
    want_rows, want_boxes = _nms_loop(data, valid, indices, max_out, iou,
                                      attrs.get("force_suppress", False),
                                      attrs.get("top_k", -1), cs, si, ii)
    rows = run_op("vision.non_max_suppression", args, return_indices=False, **attrs)
    np.testing.assert_array_equal(rows, want_rows)
    idx, count = run_op("vision.non_max_suppression", args, **attrs)
    for i in range(b):
        kept = [d for d in want_boxes[i] if d >= 0]
        assert idx[i].tolist() == kept + [-1] * (n - len(kept))
        assert count[i, 0] == len(kept)
    bottom = run_op("vision.non_max_suppression", args, return_indices=False,
                    invalid_to_bottom=True, **attrs)
    for i in range(b):
        live = [r for r in want_rows[i].tolist() if r[0] >= 0]
        assert bottom[i, :len(live)].tolist() == live
        assert (bottom[i, len(live):] == -1).all()


def test_nms_and_valid_counts_relations() -> None:
    from relay_ref.ir.types import IncompleteType, TupleType
    f, i32 = "float32", "int32"
    gvc = get_op("vision.get_valid_counts").relation
    at = make_attrs("vision.get_valid_counts", {})
    assert gvc([TensorType((ANY, 5, 6), f), TensorType((), f)], at) == TupleType((
        TensorType((ANY,), i32), TensorType((ANY, 5, 6), f), TensorType((ANY, 5), i32)))
    with pytest.raises(RelationError, match="vision.get_valid_counts: data must have rank 3"):
        gvc([TensorType((5, 6), f), TensorType((), f)], at)
    with pytest.raises(RelationError, match="score_index=1 but the rows of data have 1"):
        gvc([TensorType((1, 5, 1), f), TensorType((), f)], at)
    with pytest.raises(RelationError, match="score_threshold must be a float scalar"):
        gvc([TensorType((1, 5, 6), f), TensorType((2,), f)], at)
    nms = get_op("vision.non_max_suppression").relation
    args = [TensorType((2, ANY, 6), f), TensorType((2,), i32), TensorType((2, 7), i32),
            TensorType((), i32), TensorType((), f)]
    assert nms(args, make_attrs("vision.non_max_suppression", {})) == TupleType((
        TensorType((2, ANY), i32), TensorType((2, 1), i32)))
    no_idx = make_attrs("vision.non_max_suppression", {"return_indices": False})
    assert nms(args, no_idx) == TensorType((2, ANY, 6), f)
    assert nms(args[:2] + [IncompleteType()] + args[3:], no_idx) is NOT_YET
    with pytest.raises(RelationError, match=r"valid_count \(3\) and indices \(2, 7\) must be "
                                            r"\(2\) and \(2, \?\)"):
        nms([args[0], TensorType((3,), i32)] + args[2:], no_idx)
    with pytest.raises(RelationError, match="the 4 coordinates from coord_start=3 do not fit "
                                            "in rows of 6 values"):
        nms(args, make_attrs("vision.non_max_suppression", {"coord_start": 3}))
    with pytest.raises(RelationError, match="indices must be an integer tensor"):
        nms(args[:2] + [TensorType((2, 7), f)] + args[3:], no_idx)
    with pytest.raises(AttrError):
        make_attrs("vision.non_max_suppression", {"id_index": -2})
    with pytest.raises(OpRuntimeError, match=r"valid_count\[0\] = 9 is outside \[0, 5\]"):
        run_op("vision.non_max_suppression",
               _nms_args(_TVM_BOXES, [9], np.zeros((1, 5)), -1, 0.5))


DIFF_TESTED |= {"vision.get_valid_counts", "vision.non_max_suppression"}


# -- vision.all_class_non_max_suppression ---------------------------------------------------

from relay_ref.ir.shape import sym  # noqa: E402
from relay_ref.ir.types import TupleType  # noqa: E402


@pytest.mark.parametrize("seed, limit, iou, score", [
    (0, 3, 0.5, 0.0), (1, 10, 0.2, 0.4), (2, 0, 0.5, 0.0), (3, 2, 0.9, -1.0)])
def test_all_class_nms_vs_onnxruntime(seed, limit, iou, score):
    rng = np.random.default_rng(seed)
    boxes = rng.uniform(0, 8, (2, 10, 4)).astype(np.float32)  # corners in either order
    scores = rng.uniform(0, 1, (2, 3, 10)).astype(np.float32)
    scores[0, 0, :4] = 0.5  # ties: the lower box index first
    args = [boxes, scores, np.array([limit], np.int64), np.array([iou], np.float32),
            np.array([score], np.float32)]
    got, count = run_op("vision.all_class_non_max_suppression", args)
    (want,) = onnx_run("NonMaxSuppression", args, opset=11)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert count.tolist() == [len(want)]


def test_all_class_nms_relation_and_refusals():
    n = sym("n")
    nms = get_op("vision.all_class_non_max_suppression").relation
    attrs = make_attrs("vision.all_class_non_max_suppression", {})
    out = nms([TensorType((n, 6, 4), "float32"), TensorType((n, 2, 6), "float32"),
               TensorType((1,), "int64"), TensorType((), "float32"),
               TensorType((1,), "float32")], attrs)
    assert out == TupleType((TensorType((ANY, 3), "int64"), TensorType((1,), "int64")))
    with pytest.raises(AttrError):
        make_attrs("vision.all_class_non_max_suppression", {"output_format": "tensorflow"})
    scalars = [TensorType((1,), "int64"), TensorType((), "float32"), TensorType((), "float32")]
    with pytest.raises(RelationError, match="disagree"):
        nms([TensorType((1, 6, 4), "float32"), TensorType((1, 2, 5), "float32"), *scalars],
            attrs)
    with pytest.raises(RelationError, match="boxes must be"):
        nms([TensorType((1, 6, 5), "float32"), TensorType((1, 2, 6), "float32"), *scalars],
            attrs)
    with pytest.raises(RelationError, match="one value"):
        nms([TensorType((1, 6, 4), "float32"), TensorType((1, 2, 6), "float32"),
             TensorType((2,), "int64"), *scalars[1:]], attrs)


DIFF_TESTED |= {"vision.all_class_non_max_suppression"}
