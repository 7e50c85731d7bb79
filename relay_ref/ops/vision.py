"""Vision operators (TVM ``src/relay/op/vision/*.cc``, TOPI ``vision/``): anchor boxes
(``vision.multibox_prior``), region-of-interest pooling (``vision.roi_align``,
``vision.roi_pool``) and detection post-processing (``vision.get_valid_counts``,
``vision.non_max_suppression``).

Boxes are ``[x_min, y_min, x_max, y_max]``; an ROI row is ``[batch_index, x_min, y_min,
x_max, y_max]`` in input-image coordinates, scaled by ``spatial_scale`` onto the feature map.
The references loop over ROIs and output cells (small) and vectorise over channels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import (
    dim_le,
    dim_lt,
    dim_map,
    dim_text,
    dims_compatible,
    shape_text,
)
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.layout import check_rank, from_canonical, to_canonical
from relay_ref.ops.registry import NOT_YET, AttrError, OpRuntimeError, RelationError, register_op
from relay_ref.ops.relations import as_dtype, describe, is_float, is_int, tensor_args

Array = np.ndarray


# -- vision.multibox_prior ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class MultiBoxPriorAttrs:
    """``sizes`` and ``ratios`` (non-empty, positive) give ``len(sizes) + len(ratios) - 1``
    boxes per cell; ``steps`` (y, x; -1 = 1 / extent) and ``offsets`` (y, x) place the
    centres; ``clip`` clamps coordinates to [0, 1]."""

    sizes: tuple[float, ...] = (1.0,)
    ratios: tuple[float, ...] = (1.0,)
    steps: tuple[float, ...] = (-1.0, -1.0)
    offsets: tuple[float, ...] = (0.5, 0.5)
    clip: bool = False

    def __post_init__(self) -> None:
        for name in ("sizes", "ratios"):
            values = getattr(self, name)
            if not values or any(v <= 0 for v in values):
                raise AttrError(f"{name} must be a non-empty list of positive numbers, found "
                                f"{values}", name)
        for name in ("steps", "offsets"):
            if len(getattr(self, name)) != 2:
                raise AttrError(f"{name} must have 2 values (y, x), found "
                                f"{getattr(self, name)}", name)


def _multibox_prior_rel(arg_types: list[Type], attrs: MultiBoxPriorAttrs) -> object:
    op = "vision.multibox_prior"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    check_rank(op, data, 4, "data")
    if not is_float(data.dtype):
        raise RelationError(f"{op}: data must be floating point, found {data.dtype}")
    per_cell = len(attrs.sizes) + len(attrs.ratios) - 1
    n = dim_map(lambda h, w: h * w * per_cell, data.shape[2], data.shape[3])
    return TensorType((1, n, 4), data.dtype)


def _multibox_prior_ref(args: list, attrs: MultiBoxPriorAttrs) -> Array:
    data = np.asarray(args[0])
    h, w = data.shape[2], data.shape[3]
    if h * w == 0:  # no cells, no boxes
        return np.zeros((1, 0, 4), data.dtype)
    sizes, ratios = attrs.sizes, attrs.ratios
    step_h = attrs.steps[0] if attrs.steps[0] > 0 else 1.0 / h
    step_w = attrs.steps[1] if attrs.steps[1] > 0 else 1.0 / w
    # half extents of each box kind (relative to the image), as TOPI's hybrid script
    half_w = [s * h / w / 2 for s in sizes]
    half_h = [s / 2 for s in sizes]
    for r in ratios[1:]:
        half_w.append(sizes[0] * h / w * math.sqrt(r) / 2)
        half_h.append(sizes[0] / math.sqrt(r) / 2)
    cy = (np.arange(h) + attrs.offsets[0]) * step_h
    cx = (np.arange(w) + attrs.offsets[1]) * step_w
    cy, cx = (a.reshape(h, w, 1) for a in np.meshgrid(cy, cx, indexing="ij"))
    hw, hh = np.array(half_w), np.array(half_h)
    boxes = np.stack([cx - hw, cy - hh, cx + hw, cy + hh], axis=-1)  # (H, W, K, 4)
    if attrs.clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    return as_dtype(boxes.reshape(1, -1, 4), data.dtype)


register_op("vision.multibox_prior", attrs=MultiBoxPriorAttrs, num_inputs=1,
            arg_names=("data",), support_level=5, relation=_multibox_prior_rel,
            reference=_multibox_prior_ref,
            doc="SSD anchor boxes for an (N, C, H, W) feature map: (1, H * W * (len(sizes) + "
                "len(ratios) - 1), 4). Cell (i, j) is centred at ((j + offset_x) * step_x, "
                "(i + offset_y) * step_y); box k < len(sizes) has half extents (sizes[k] * H / "
                "W / 2, sizes[k] / 2), then one box per further ratio r with (sizes[0] * H / W "
                "* sqrt(r) / 2, sizes[0] / sqrt(r) / 2). Only the data's shape is used.")


# -- vision.roi_align / vision.roi_pool ----------------------------------------------------

def _check_roi_attrs(attrs: object) -> None:
    size = attrs.pooled_size  # type: ignore[attr-defined]
    if len(size) == 1:
        object.__setattr__(attrs, "pooled_size", (size[0], size[0]))
    elif len(size) != 2:
        raise AttrError(f"pooled_size must have 1 or 2 values, found {size}", "pooled_size")
    if any(s < 1 for s in attrs.pooled_size):  # type: ignore[attr-defined]
        raise AttrError(f"pooled_size values must be >= 1, found {size}", "pooled_size")
    if attrs.layout not in ("NCHW", "NHWC"):  # type: ignore[attr-defined]
        raise AttrError(f"layout must be NCHW or NHWC, found "
                        f"{attrs.layout!r}", "layout")  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class ROIAlignAttrs:
    """``sample_ratio`` samples per bin and axis (<= 0: ceil(roi extent / pooled size));
    ``mode`` avg or max over a bin's bilinear samples."""

    pooled_size: tuple[int, ...]
    spatial_scale: float
    sample_ratio: int = -1
    layout: str = "NCHW"
    mode: str = "avg"

    def __post_init__(self) -> None:
        _check_roi_attrs(self)
        if self.mode not in ("avg", "max"):
            raise AttrError(f"mode must be 'avg' or 'max', found {self.mode!r}", "mode")


@dataclass(frozen=True, slots=True)
class ROIPoolAttrs:
    pooled_size: tuple[int, ...]
    spatial_scale: float
    layout: str = "NCHW"

    def __post_init__(self) -> None:
        _check_roi_attrs(self)


def _roi_rel(op: str):  # noqa: ANN202 - a relation
    def rel(arg_types: list[Type], attrs: ROIAlignAttrs | ROIPoolAttrs) -> object:
        args = tensor_args(op, arg_types, 2, ("data", "rois"))
        if args is NOT_YET:
            return NOT_YET
        data, rois = args
        check_rank(op, data, 4, "data")
        check_rank(op, rois, 2, "rois")
        if not dims_compatible(rois.shape[1], 5):
            raise RelationError(f"{op}: rois must have shape (num_roi, 5), found "
                                f"{shape_text(rois.shape)}")
        if not is_float(data.dtype) or rois.dtype != data.dtype:
            raise RelationError(f"{op}: data and rois must have the same float dtype, found "
                                f"{data.dtype} and {rois.dtype}")
        ph, pw = attrs.pooled_size
        if attrs.layout == "NCHW":
            return TensorType((rois.shape[0], data.shape[1], ph, pw), data.dtype)
        return TensorType((rois.shape[0], ph, pw, data.shape[3]), data.dtype)
    return rel


def _batch_index(op: str, roi: Array, batch: int) -> int:
    b = int(roi[0])
    if not 0 <= b < batch:
        raise OpRuntimeError(f"{op}: ROI batch index {roi[0]} is out of range for a batch of "
                             f"{batch}")
    return b


def _bilinear(img: Array, y: float, x: float) -> Array:
    """Bilinear sample of a (C, H, W) image at (y, x): 0 outside [-1, H] x [-1, W], the
    border value between -1 and 0 (TOPI's ``_bilinear``)."""
    _, h, w = img.shape
    if y < -1 or y > h or x < -1 or x > w:
        return np.zeros(img.shape[0])
    y, x = min(max(y, 0.0), h - 1), min(max(x, 0.0), w - 1)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    dy, dx = y - y0, x - x0
    total = np.zeros(img.shape[0])
    for yy, wy in ((y0, 1 - dy), (y0 + 1, dy)):
        for xx, wx in ((x0, 1 - dx), (x0 + 1, dx)):
            if yy < h and xx < w:
                total = total + wy * wx * img[:, yy, xx]
    return total


def _roi_align_ref(args: list, attrs: ROIAlignAttrs) -> Array:
    op = "vision.roi_align"
    data = np.asarray(args[0])
    x = to_canonical(data, attrs.layout, "NCHW").astype(np.float64)
    rois = np.asarray(args[1]).astype(np.float64)
    ph, pw = attrs.pooled_size
    out = np.zeros((rois.shape[0], x.shape[1], ph, pw))
    for r, roi in enumerate(rois):
        img = x[_batch_index(op, roi, x.shape[0])]
        x0, y0, x1, y1 = roi[1:] * attrs.spatial_scale
        roi_h, roi_w = max(y1 - y0, 1.0), max(x1 - x0, 1.0)
        bin_h, bin_w = roi_h / ph, roi_w / pw
        gh = attrs.sample_ratio if attrs.sample_ratio > 0 else math.ceil(roi_h / ph)
        gw = attrs.sample_ratio if attrs.sample_ratio > 0 else math.ceil(roi_w / pw)
        for i in range(ph):
            for j in range(pw):
                samples = [_bilinear(img, y0 + i * bin_h + (a + 0.5) * bin_h / gh,
                                     x0 + j * bin_w + (b + 0.5) * bin_w / gw)
                           for a in range(gh) for b in range(gw)]
                stack = np.stack(samples)
                out[r, :, i, j] = stack.mean(0) if attrs.mode == "avg" else stack.max(0)
    return as_dtype(from_canonical(out, attrs.layout, "NCHW"), data.dtype)


def _roi_pool_ref(args: list, attrs: ROIPoolAttrs) -> Array:
    op = "vision.roi_pool"
    data = np.asarray(args[0])
    x = to_canonical(data, attrs.layout, "NCHW")
    rois = np.asarray(args[1]).astype(np.float64)
    _, c, h, w = x.shape
    ph, pw = attrs.pooled_size
    out = np.zeros((rois.shape[0], c, ph, pw), data.dtype)
    for r, roi in enumerate(rois):
        img = x[_batch_index(op, roi, x.shape[0])]
        # corners rounded half to even (TOPI's reference uses Python's round)
        x0, y0, x1, y1 = (int(np.round(v * attrs.spatial_scale)) for v in roi[1:])
        bin_h, bin_w = max(y1 - y0 + 1, 1) / ph, max(x1 - x0 + 1, 1) / pw
        for i in range(ph):
            hs = min(max(math.floor(i * bin_h) + y0, 0), h)
            he = min(max(math.ceil((i + 1) * bin_h) + y0, 0), h)
            for j in range(pw):
                ws = min(max(math.floor(j * bin_w) + x0, 0), w)
                we = min(max(math.ceil((j + 1) * bin_w) + x0, 0), w)
                if he > hs and we > ws:
                    out[r, :, i, j] = img[:, hs:he, ws:we].max(axis=(1, 2))
    return as_dtype(from_canonical(out, attrs.layout, "NCHW"), data.dtype)


register_op("vision.roi_align", attrs=ROIAlignAttrs, num_inputs=2,
            arg_names=("data", "rois"), support_level=5,
            relation=_roi_rel("vision.roi_align"), reference=_roi_align_ref,
            doc="ROI Align (Mask R-CNN): each ROI (scaled by ``spatial_scale``, at least 1 x 1) "
                "is cut into pooled_size bins; a bin averages (or maxes) a grid of bilinear "
                "samples at the centres of its sample_ratio x sample_ratio sub-cells. Output "
                "(num_roi, C, PH, PW) for NCHW, (num_roi, PH, PW, C) for NHWC.")
register_op("vision.roi_pool", attrs=ROIPoolAttrs, num_inputs=2,
            arg_names=("data", "rois"), support_level=5,
            relation=_roi_rel("vision.roi_pool"), reference=_roi_pool_ref,
            doc="ROI max pooling (Fast R-CNN): ROI corners scaled by ``spatial_scale`` and "
                "rounded; bin (i, j) covers rows [floor(i * bh), ceil((i + 1) * bh)) of the "
                "ROI (clipped to the map) and is 0 when empty. Output shaped as roi_align's.")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

for _name in ("vision.roi_align", "vision.roi_pool"):
    EXAMPLES[_name] = Examples(attrs=({"pooled_size": (2, 2), "spatial_scale": 1.0},),
                               args=(((1, 2, 4, 4), (2, 5)),))


# -- vision.get_valid_counts / vision.non_max_suppression -----------------------------------
#
# Detection rows (TVM's convention): data is (batch, num_anchors, L) with, per anchor, a class
# id at ``id_index`` (-1: no class column), a score at ``score_index`` and, for NMS, four
# coordinates from ``coord_start``. A row of -1 is an invalid (or suppressed) anchor.

def _scalar_arg(op: str, t: TensorType, what: str, kind: str) -> None:
    """``t`` must be a scalar (rank 0 or a single element) of ``kind`` (float / int)."""
    ok = is_float(t.dtype) if kind == "float" else is_int(t.dtype)
    single = t.ndim == 0 or (t.ndim == 1 and dims_compatible(t.shape[0], 1))
    if not (ok and single):
        raise RelationError(f"{op}: {what} must be a {kind} scalar, found {describe(t)}")


def _check_columns(op: str, data: TensorType, **columns: int) -> None:
    """Every named column index must exist in rows of length ``data.shape[2]``."""
    length = data.shape[2]
    for name, index in columns.items():
        if dim_le(length, index) is True:
            raise RelationError(f"{op}: {name}={index} but the rows of data have {length} "
                                f"values (shape {shape_text(data.shape)})")


def _check_indices(attrs: object, *names: str) -> None:
    for name in names:
        value = getattr(attrs, name)
        low = -1 if name == "id_index" else 0
        if value < low:
            raise AttrError(f"{name} must be >= {low}, found {value}", name)


@dataclass(frozen=True, slots=True)
class GetValidCountsAttrs:
    """TVM's fields; ``score_threshold`` is unused (the threshold is the second argument,
    as TVM's ``MakeGetValidCounts`` builds the call). ``id_index`` -1: no class column."""

    score_threshold: float | None = None
    id_index: int = 0
    score_index: int = 1

    def __post_init__(self) -> None:
        _check_indices(self, "id_index", "score_index")


def _get_valid_counts_rel(arg_types: list[Type], attrs: GetValidCountsAttrs) -> object:
    """TVM's ``GetValidCountRel``: (valid_count (B) int32, data's type, indices (B, N)
    int32); here also float 3-d data whose rows hold the named columns, and a scalar
    threshold."""
    op = "vision.get_valid_counts"
    args = tensor_args(op, arg_types, 2, ("data", "score_threshold"))
    if args is NOT_YET:
        return NOT_YET
    data, thr = args
    check_rank(op, data, 3, "data")
    if not is_float(data.dtype):
        raise RelationError(f"{op}: data must be floating point, found {data.dtype}")
    _scalar_arg(op, thr, "score_threshold", "float")
    _check_columns(op, data, id_index=attrs.id_index, score_index=attrs.score_index)
    b, n = data.shape[0], data.shape[1]
    return TupleType((TensorType((b,), "int32"), TensorType(data.shape, data.dtype),
                      TensorType((b, n), "int32")))


def _get_valid_counts_ref(args: list, attrs: GetValidCountsAttrs) -> tuple[Array, ...]:
    data = np.asarray(args[0])
    thr = np.asarray(args[1]).reshape(-1)[0]
    b, n, _ = data.shape
    keep = data[:, :, attrs.score_index] > thr
    if attrs.id_index >= 0:
        keep &= data[:, :, attrs.id_index] >= 0
    counts = np.zeros(b, np.int32)
    out = np.full(data.shape, -1, data.dtype)
    indices = np.full((b, n), -1, np.int32)
    for i in range(b):
        rows = np.flatnonzero(keep[i])
        counts[i] = len(rows)
        out[i, :len(rows)] = data[i, rows]
        indices[i, :len(rows)] = rows
    return counts, out, indices


register_op("vision.get_valid_counts", attrs=GetValidCountsAttrs, num_inputs=2,
            arg_names=("data", "score_threshold"), support_level=5,
            relation=_get_valid_counts_rel, reference=_get_valid_counts_ref,
            doc="(valid_count, out, out_indices): per batch, the anchors whose score "
                "exceeds score_threshold (and, unless id_index = -1, whose class id is >= 0) "
                "moved to the top of ``out`` in their input order, the rest rows of -1; "
                "out_indices gives each kept row's anchor index (-1 after them); "
                "valid_count how many were kept.")


@dataclass(frozen=True, slots=True)
class NonMaximumSuppressionAttrs:
    force_suppress: bool = False
    top_k: int = -1
    coord_start: int = 2
    score_index: int = 1
    id_index: int = 0
    return_indices: bool = True
    invalid_to_bottom: bool = False

    def __post_init__(self) -> None:
        _check_indices(self, "coord_start", "score_index", "id_index")


_NMS_NAMES = ("data", "valid_count", "indices", "max_output_size", "iou_threshold")


def _nms_rel(arg_types: list[Type], attrs: NonMaximumSuppressionAttrs) -> object:
    """TVM's ``NMSRel``: with ``return_indices`` the tuple (box indices (B, N) int32,
    valid box count (B, 1) int32), else the data's type. Here also: float 3-d data whose
    rows hold the named columns, valid_count (B) and indices (B, N) integer tensors,
    scalar max_output_size (integer) and iou_threshold (float)."""
    op = "vision.non_max_suppression"
    args = tensor_args(op, arg_types, 5, _NMS_NAMES)
    if args is NOT_YET:
        return NOT_YET
    data, valid, indices, max_out, iou = args
    check_rank(op, data, 3, "data")
    if not is_float(data.dtype):
        raise RelationError(f"{op}: data must be floating point, found {data.dtype}")
    check_rank(op, valid, 1, "valid_count")
    check_rank(op, indices, 2, "indices")
    for t, what in ((valid, "valid_count"), (indices, "indices")):
        if not is_int(t.dtype):
            raise RelationError(f"{op}: {what} must be an integer tensor, found {t.dtype}")
    b, n = data.shape[0], data.shape[1]
    if not (dims_compatible(valid.shape[0], b) and dims_compatible(indices.shape[0], b)
            and dims_compatible(indices.shape[1], n)):
        raise RelationError(f"{op}: valid_count {shape_text(valid.shape)} and indices "
                            f"{shape_text(indices.shape)} must be ({dim_text(b)}) and "
                            f"({dim_text(b)}, {dim_text(n)}) for data "
                            f"{shape_text(data.shape)}")
    _scalar_arg(op, max_out, "max_output_size", "int")
    _scalar_arg(op, iou, "iou_threshold", "float")
    _check_columns(op, data, score_index=attrs.score_index, id_index=attrs.id_index)
    if dim_lt(data.shape[2], attrs.coord_start + 4) is True:
        raise RelationError(f"{op}: the 4 coordinates from coord_start={attrs.coord_start} "
                            f"do not fit in rows of {data.shape[2]} values")
    if attrs.return_indices:
        return TupleType((TensorType((b, n), "int32"), TensorType((b, 1), "int32")))
    return TensorType(data.shape, data.dtype)


def _iou(a: Array, b: Array) -> object:
    """Intersection over union of two boxes given as two corners each (any order), in the
    boxes' dtype; 0 when the union is empty."""
    al, ar = min(a[0], a[2]), max(a[0], a[2])
    at, ab = min(a[1], a[3]), max(a[1], a[3])
    bl, br = min(b[0], b[2]), max(b[0], b[2])
    bt, bb = min(b[1], b[3]), max(b[1], b[3])
    zero = a.dtype.type(0)
    inter = max(zero, min(ar, br) - max(al, bl)) * max(zero, min(ab, bb) - max(at, bt))
    union = (ar - al) * (ab - at) + (br - bl) * (bb - bt) - inter
    return zero if union <= zero else inter / union


def _nms_batch(rows: Array, vc: int, max_out: int, iou_thr: object,
               attrs: NonMaximumSuppressionAttrs) -> tuple[Array, Array]:
    """TOPI's ``hybrid_nms`` on one batch: (output rows, box index per row, -1 if none)."""
    n = rows.shape[0]
    out = np.full_like(rows, -1)
    box = np.full(n, -1, np.int64)
    si, ii, cs = attrs.score_index, attrs.id_index, attrs.coord_start
    if not iou_thr > 0:  # no suppression: the valid rows, unsorted
        out[:vc], box[:vc] = rows[:vc], np.arange(vc)
        return out, box
    order = np.argsort(-rows[:vc, si], kind="stable")  # by score, descending; ties in order
    keep = attrs.top_k if 0 < attrs.top_k < vc else vc
    out[:keep], box[:keep] = rows[order[:keep]], order[:keep]
    valid = 0
    for j in range(vc):
        if valid == max_out:
            out[j], box[j] = -1, -1
        elif out[j, si] > 0:  # rows scoring <= 0 stay, neither kept nor suppressing
            for k in range(j):
                if (out[k, si] > 0 and (ii < 0 or out[k, ii] >= 0)
                        and (attrs.force_suppress or ii < 0 or out[j, ii] == out[k, ii])
                        and _iou(out[j, cs:cs + 4], out[k, cs:cs + 4]) >= iou_thr):
                    out[j], box[j] = -1, -1
                    break
            else:
                valid += 1
    return out, box


def _nms_ref(args: list, attrs: NonMaximumSuppressionAttrs) -> object:
    data = np.asarray(args[0])
    valid_count = np.asarray(args[1]).astype(np.int64)
    indices = np.asarray(args[2]).astype(np.int64)
    max_out = int(np.asarray(args[3]).reshape(-1)[0])
    iou_thr = np.asarray(args[4]).reshape(-1)[0].astype(data.dtype)
    b, n, _ = data.shape
    outs, boxes = np.empty_like(data), np.empty((b, n), np.int64)
    for i in range(b):
        vc = int(valid_count[i])
        if not 0 <= vc <= n:
            raise OpRuntimeError(f"vision.non_max_suppression: valid_count[{i}] = {vc} is "
                                 f"outside [0, {n}]")
        outs[i], boxes[i] = _nms_batch(data[i], vc, max_out, iou_thr, attrs)
        if attrs.return_indices:  # back to the anchors' indices in the original input
            live = np.flatnonzero(boxes[i, :vc] >= 0)
            boxes[i, live] = indices[i, boxes[i, live]]
    if attrs.return_indices:
        return _compact_indices(boxes)
    if attrs.invalid_to_bottom:  # rows whose first value is >= 0 first, in order
        for i in range(b):
            rows = outs[i][outs[i, :, 0] >= 0]
            outs[i] = -1
            outs[i, :len(rows)] = rows
    return outs


def _compact_indices(boxes: Array) -> tuple[Array, Array]:
    """TOPI's ``hybrid_rearrange_indices_out``: per batch, the indices >= 0 in order, then
    -1s, and their count (B, 1). An index outside [-N, N] (never one from
    get_valid_counts) also appends a 0, as TOPI does."""
    b, n = boxes.shape
    out = np.full((b, n), -1, np.int32)
    counts = np.zeros((b, 1), np.int32)
    for i in range(b):
        kept: list[int] = []
        for d in boxes[i].tolist():
            if d >= 0:
                kept.append(d)
            if d > n or d < -n:
                kept.append(0)
        if len(kept) > n or any(d > np.iinfo(np.int32).max for d in kept):
            raise OpRuntimeError("vision.non_max_suppression: indices hold values that TVM "
                                 "would write out of bounds")
        out[i, :len(kept)] = kept
        counts[i, 0] = len(kept)
    return out, counts


register_op("vision.non_max_suppression", attrs=NonMaximumSuppressionAttrs, num_inputs=5,
            arg_names=_NMS_NAMES, support_level=5, relation=_nms_rel, reference=_nms_ref,
            doc="Greedy non-maximum suppression per batch (TOPI's hybrid_nms). With "
                "iou_threshold <= 0 the first valid_count rows are kept as they are. Else "
                "those rows are sorted by score (descending, stable), cut to top_k (> 0), "
                "and walked in order: once max_output_size boxes are kept (< 0: no limit) "
                "the rest become -1; a row scoring > 0 is dropped (-1) when its IoU with an "
                "earlier kept row of the same class (any class with force_suppress or "
                "id_index = -1) is >= iou_threshold; rows scoring <= 0 stay unchanged. "
                "return_indices: (the kept rows' entries of ``indices``, compacted to the "
                "front, -1 after; their count (B, 1)), else the rows (invalid_to_bottom: "
                "rows whose first value is >= 0 moved to the top).")


# -- test-generation hints for the ops above (relay_ref.testing.programs) ------------------
# rows of 6 values: class id, score, 4 coordinates (coord_start 2); valid_count and indices
# are run-time values from the int32 pool (a count outside [0, N] is a run-time error)
EXAMPLES["vision.non_max_suppression"] = Examples(attrs=(
    {"return_indices": False}, {"return_indices": False, "invalid_to_bottom": True},
    {"force_suppress": True}, {"top_k": 2}, {"id_index": -1, "return_indices": False},
    {"score_index": 0, "coord_start": 1, "id_index": -1}), args=(
    (((1, 3, 6), "float32"), ((1,), "int32"), ((1, 3), "int32"), ((), "int32"),
     ((), "float32")),
    (((2, 3, 5), "float32"), ((2,), "int32"), ((2, 3), "int32"), ((1,), "int32"),
     ((1,), "float32"))))
