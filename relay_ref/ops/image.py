"""Image operators (TVM ``src/relay/op/image/*.cc``) and ``nn.upsampling`` (which TOPI
computes with the same resize kernel).

Layouts: any permutation of ``NCHW`` (``NHWC`` included); the references transpose to
``NCHW``, resize, and transpose back. Methods: nearest neighbour, (bi)linear and
(bi)cubic (TOPI's spline with ``cubic_alpha``; ``cubic_exclude`` drops and renormalises
taps outside the input).

Coordinates (TOPI ``get_inx``), with ``scale = in_size / out_size``:
``half_pixel``: (x + 0.5) * scale - 0.5; ``align_corners``: x * (in - 1) / (out - 1);
``asymmetric``: x * scale; ``pytorch_half_pixel``: as half_pixel but 0 when out == 1;
``tf_half_pixel_for_nn``: (x + 0.5) * scale. Nearest rounds with ``rounding_method``
(empty: ``round`` for align_corners, else ``floor``); linear interpolates between
floor(x) and floor(x) + 1. Source indices are clamped to the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import ANY, dim_map, is_symbolic, shape_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import as_dtype, check_dtype, is_float, tensor_args

Array = np.ndarray

_CTMS = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
         "tf_half_pixel_for_nn")
_ROUNDING = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")


def _check_layout(layout: str, what: str = "layout") -> None:
    if sorted(layout) != sorted("NCHW"):
        raise AttrError(f"{what} must be a permutation of 'NCHW', found {layout!r}", what)


def _perm(layout: str) -> list[int]:
    return [layout.index(c) for c in "NCHW"]


def _source(out: int, size_in: int, ctm: str) -> Array:
    x = np.arange(out, dtype=np.float64)
    scale = size_in / out if out else 0.0
    if ctm == "half_pixel":
        return (x + 0.5) * scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (x + 0.5) * scale - 0.5 if out > 1 else np.zeros_like(x)
    if ctm == "align_corners":
        return x * ((size_in - 1) / (out - 1)) if out > 1 else np.zeros_like(x)
    if ctm == "tf_half_pixel_for_nn":
        return (x + 0.5) * scale
    return x * scale  # asymmetric


def _source_exact(out: int, size_in: int, ctm: str) -> tuple[Array, int]:
    """``_source`` as exact fractions (numerators, denominator), as TOPI computes nearest
    indices when the sizes are static (so 3 * 4 / 3 floors to 4, not 3)."""
    x = np.arange(out, dtype=np.int64)
    if ctm in ("half_pixel", "pytorch_half_pixel"):
        if ctm == "pytorch_half_pixel" and out <= 1:
            return np.zeros_like(x), 1
        return (2 * x + 1) * size_in - out, 2 * out
    if ctm == "align_corners":
        if out <= 1:
            return np.zeros_like(x), 1
        return x * (size_in - 1), out - 1
    if ctm == "tf_half_pixel_for_nn":
        return (2 * x + 1) * size_in, 2 * out
    return x * size_in, out  # asymmetric


def _nearest(out: int, size_in: int, ctm: str, method: str) -> Array:
    """Nearest source indices (TOPI ``get_closest_index`` on fractions), clamped."""
    n, d = _source_exact(out, size_in, ctm)
    if method == "round":
        idx = (n + d // 2) // d
    elif method == "round_prefer_floor":
        idx = (n + (d - 1) // 2) // d
    elif method == "round_prefer_ceil":  # halves (possible only for even d) go up
        idx = (n + d // 2) // d
    elif method == "ceil":
        idx = (n + d - 1) // d
    else:
        idx = n // d
    return np.clip(idx, 0, size_in - 1).astype(np.intp)


def _cubic_taps(src: Array, size: int, alpha: float, exclude: bool) -> tuple[Array, Array]:
    """Indices (out, 4) and weights (out, 4) of TOPI's cubic spline interpolation."""
    x0 = np.floor(src)
    t = (src - x0)[:, None]
    t2, t3 = t * t, t * t * t
    w = np.concatenate([alpha * (t3 - 2 * t2 + t),
                        (alpha + 2) * t3 - (3 + alpha) * t2 + 1,
                        -(alpha + 2) * t3 + (3 + 2 * alpha) * t2 - alpha * t,
                        -alpha * t3 + alpha * t2], axis=1)
    idx = x0[:, None] + np.arange(-1, 3)[None, :]
    if exclude:
        w = np.where((idx < 0) | (idx >= size), 0.0, w)
        w = w / w.sum(axis=1, keepdims=True)
    return np.clip(idx, 0, size - 1).astype(np.intp), w


def resize2d_nchw(x: Array, out_hw: tuple[int, int], method: str, ctm: str,
                  rounding: str, dtype: str, cubic_alpha: float = -0.5,
                  cubic_exclude: bool = False) -> Array:
    """Resize an NCHW array to ``out_hw``; the result has dtype ``dtype``."""
    n, c, h, w = x.shape
    oh, ow = out_hw
    sy, sx = _source(oh, h, ctm), _source(ow, w, ctm)
    if h == 0 or w == 0:
        return np.zeros((n, c, oh, ow), dtype)
    if method == "cubic":
        iy, wy = _cubic_taps(sy, h, cubic_alpha, cubic_exclude)
        ix, wx = _cubic_taps(sx, w, cubic_alpha, cubic_exclude)
        acc = x.dtype if is_float(x.dtype.name) else np.dtype(np.float64)
        xf = x.astype(acc, copy=False)
        with np.errstate(all="ignore"):
            rows = np.einsum("ncykw,yk->ncyw", xf[:, :, iy, :], wy.astype(acc))
            out = np.einsum("ncyxk,xk->ncyx", rows[:, :, :, ix], wx.astype(acc))
        return as_dtype(out, dtype)
    if method == "nearest_neighbor":
        rounding = rounding or ("round" if ctm == "align_corners" else "floor")
        iy, ix = _nearest(oh, h, ctm, rounding), _nearest(ow, w, ctm, rounding)
        return as_dtype(x[:, :, iy[:, None], ix[None, :]], dtype)
    acc = x.dtype if is_float(x.dtype.name) else np.dtype(np.float64)
    xf = x.astype(acc, copy=False)
    y0, x0 = np.floor(sy), np.floor(sx)
    ly, lx = (sy - y0).astype(acc), (sx - x0).astype(acc)
    y0i = np.clip(y0, 0, h - 1).astype(np.intp)
    y1i = np.clip(y0 + 1, 0, h - 1).astype(np.intp)
    x0i = np.clip(x0, 0, w - 1).astype(np.intp)
    x1i = np.clip(x0 + 1, 0, w - 1).astype(np.intp)
    top = xf[:, :, y0i, :]
    bot = xf[:, :, y1i, :]
    ly = ly[:, None]
    with np.errstate(all="ignore"):
        rows = top + (bot - top) * ly
        left, right = rows[:, :, :, x0i], rows[:, :, :, x1i]
        out = left + (right - left) * lx
    return as_dtype(out, dtype)


# -- image.resize2d ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Resize2DAttrs:
    size: tuple[int, ...] = ()
    roi: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    layout: str = "NCHW"
    method: str = "linear"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = ""
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    extrapolation_value: float = 0.0
    out_dtype: str = ""

    def __post_init__(self) -> None:
        if len(self.size) == 1:
            object.__setattr__(self, "size", (self.size[0], self.size[0]))
        if len(self.size) != 2 or any(s < 0 for s in self.size):
            raise AttrError(f"size must be two non-negative integers, found {self.size}",
                            "size")
        _check_layout(self.layout)
        if self.method not in ("nearest_neighbor", "linear", "cubic"):
            raise AttrError(f"method must be 'nearest_neighbor', 'linear' or 'cubic', "
                            f"found {self.method!r}", "method")
        if self.coordinate_transformation_mode not in _CTMS:
            raise AttrError("coordinate_transformation_mode must be one of "
                            f"{', '.join(_CTMS)}, found "
                            f"{self.coordinate_transformation_mode!r}",
                            "coordinate_transformation_mode")
        if self.rounding_method not in _ROUNDING:
            raise AttrError(f"rounding_method must be one of {_ROUNDING}, found "
                            f"{self.rounding_method!r}", "rounding_method")
        if self.out_dtype:
            check_dtype(self.out_dtype, "out_dtype")


def _resize_rel(op: str, out_hw: object) -> object:
    def rel(arg_types: list[Type], attrs: object) -> object:
        args = tensor_args(op, arg_types, 1)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        if data.ndim != 4:
            raise RelationError(f"{op}: data must have rank 4, found shape "
                                f"{shape_text(data.shape)}")
        if data.dtype == "bool":
            raise RelationError(f"{op}: data must be numeric, found bool")
        perm = _perm(attrs.layout)  # type: ignore[attr-defined]
        n, c, h, w = (data.shape[i] for i in perm)
        oh, ow = out_hw(attrs, h, w)  # type: ignore[operator]
        canon = (n, c, oh, ow)
        shape = tuple(canon["NCHW".index(ch)] for ch in attrs.layout)  # type: ignore
        return TensorType(shape, getattr(attrs, "out_dtype", "") or data.dtype)
    return rel


def _resize_ref(out_hw: object, method: object, ctm: object, rounding: object) -> object:
    def ref(args: list, attrs: object) -> Array:
        data = np.asarray(args[0])
        layout = attrs.layout  # type: ignore[attr-defined]
        x = np.transpose(data, _perm(layout))
        oh, ow = out_hw(attrs, x.shape[2], x.shape[3])  # type: ignore[operator]
        dtype = getattr(attrs, "out_dtype", "") or data.dtype.name
        out = resize2d_nchw(x, (oh, ow), method(attrs), ctm(attrs),  # type: ignore
                            rounding(attrs), dtype,  # type: ignore[operator]
                            getattr(attrs, "cubic_alpha", -0.5),
                            bool(getattr(attrs, "cubic_exclude", 0)))
        return as_dtype(np.transpose(out, ["NCHW".index(ch) for ch in layout]), dtype)
    return ref


def _resize_size(attrs: Resize2DAttrs, h: object, w: object) -> tuple:
    return attrs.size[0], attrs.size[1]


register_op("image.resize2d", attrs=Resize2DAttrs, num_inputs=1, arg_names=("data",),
            support_level=5, relation=_resize_rel("image.resize2d", _resize_size),
            reference=_resize_ref(_resize_size, lambda a: a.method,
                                  lambda a: a.coordinate_transformation_mode,
                                  lambda a: a.rounding_method),
            doc="Resize the H and W axes to ``size`` by nearest-neighbour or bilinear "
                "sampling (see the module doc for coordinate modes). Integer data: "
                "linear results are computed in float64 and truncated toward zero.")


# -- nn.upsampling ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class UpSamplingAttrs:
    scale_h: float = 1.0
    scale_w: float = 1.0
    layout: str = "NCHW"
    method: str = "nearest_neighbor"
    align_corners: bool = False

    def __post_init__(self) -> None:
        if not (self.scale_h > 0 and self.scale_w > 0):
            raise AttrError(f"scale_h and scale_w must be > 0, found {self.scale_h}, "
                            f"{self.scale_w}", "scale_h")
        _check_layout(self.layout)
        if self.method not in ("nearest_neighbor", "bilinear", "bicubic"):
            raise AttrError(f"method must be 'nearest_neighbor', 'bilinear' or 'bicubic', "
                            f"found {self.method!r}", "method")


def _scaled(n: object, scale: float) -> object:
    """round(n * scale) (TVM casts to int); a symbolic ``n`` stays exact under a whole
    scale (``h * 2``) and is ``?`` under a fractional one (Shape-Rel)."""
    if is_symbolic(n):
        return n * int(scale) if float(scale).is_integer() else ANY  # type: ignore[operator]
    return int(np.round(n * scale))  # type: ignore[operator]


def _upsampling_size(attrs: UpSamplingAttrs, h: object, w: object) -> tuple:
    return (dim_map(lambda h: _scaled(h, attrs.scale_h), h),
            dim_map(lambda w: _scaled(w, attrs.scale_w), w))


register_op("nn.upsampling", attrs=UpSamplingAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=_resize_rel("nn.upsampling", _upsampling_size),
            reference=_resize_ref(
                _upsampling_size,
                lambda a: {"bilinear": "linear", "bicubic": "cubic"}.get(a.method, a.method),
                lambda a: "align_corners" if a.align_corners else "asymmetric",
                lambda a: ""),
            doc="Upsample H and W to round(H * scale_h), round(W * scale_w): image.resize2d "
                "with coordinate mode asymmetric (align_corners: align_corners); "
                "``bilinear``/``bicubic`` are linear/cubic (alpha -0.5).")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["image.resize2d"] = Examples(
    attrs=({"size": (2, 2)},
           {"size": (6, 6), "method": "nearest_neighbor"},
           {"size": (3, 5), "method": "cubic"}),
    args=(((1, 2, 4, 4),),))
EXAMPLES["nn.upsampling"] = Examples(
    attrs=({"scale_h": 2.0, "scale_w": 2.0},
           {"scale_h": 2.0, "scale_w": 1.0, "method": "bilinear"}),
    args=(((1, 2, 3, 3),),))
