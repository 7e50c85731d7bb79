"""ONNX ``Resize`` semantics in NumPy, at import time: the output size and scale of each
axis, and each axis's sampling as a matrix (the converter applies it with Relay ops).

ONNX's Resize is separable: the result is the input resized along one axis after another
(``onnx.reference.ops.op_resize._interpolate_nd``), each axis a linear map ``y = M x``
(``M`` of shape ``(out, in)``), except that with ``tf_crop_and_resize`` the output
positions whose source coordinate falls outside the input (``extrapolated``) take
``extrapolation_value`` instead. Coordinates map by the axis's *scale*, which differs from
``out / in`` when ``out = floor(in * scale)`` is not exact, or under
``keep_aspect_ratio_policy``; ``antialias`` widens linear and cubic kernels by ``1 /
scale`` when downsampling. The weights are computed in float64 as the reference computes
them; a row of a nearest-neighbour matrix has a single 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class AxisPlan:
    """How one axis is resized: ``size_in -> size_out`` with coordinate scale ``scale``;
    ``roi`` is the axis's (start, end) for ``tf_crop_and_resize``."""

    size_in: int
    size_out: int
    scale: float
    roi: tuple[float, float] = (0.0, 1.0)

    @property
    def identity(self) -> bool:
        return (math.isclose(self.scale, 1.0) and self.size_out == self.size_in
                and math.isclose(self.roi[0], 0.0) and math.isclose(self.roi[1], 1.0))


def plan(shape: tuple[int, ...], scales: list[float] | None, sizes: list[int] | None,
         axes: list[int], roi: list[float] | None, policy: str = "stretch"
         ) -> list[AxisPlan]:
    """Each axis's plan, as ONNX's reference derives it: ``sizes`` (over ``axes``) give
    the scales ``out / in`` (both adjusted by a ``keep_aspect_ratio_policy`` other than
    stretch: one scale for every axis in ``axes``, sizes rounded half up), else the
    ``scales`` give the sizes ``floor(in * scale)``. Axes outside ``axes`` keep size and
    scale 1. ``roi`` is ``[starts..., ends...]`` over ``axes``."""
    rank = len(shape)
    scale = [1.0] * rank
    out = list(shape)
    if sizes is not None:
        for a, s in zip(axes, sizes, strict=True):
            out[a] = int(s)
        scale = [out[i] / shape[i] if shape[i] else 1.0 for i in range(rank)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            common = pick(scale[a] for a in axes)
            scale = [common if i in axes else 1.0 for i in range(rank)]
            out = [int(common * shape[i] + 0.5) if i in axes else shape[i]
                   for i in range(rank)]
    elif scales is not None:
        for a, s in zip(axes, scales, strict=True):
            scale[a] = float(s)
            out[a] = int(math.floor(float(s) * shape[a]))
    else:
        raise ValueError("neither scales nor sizes is given")
    bounds = [(0.0, 1.0)] * rank
    if roi is not None and len(roi) == 2 * len(axes):
        n = len(axes)
        for k, a in enumerate(axes):
            bounds[a] = (float(roi[k]), float(roi[n + k]))
    return [AxisPlan(shape[i], out[i], scale[i], bounds[i]) for i in range(rank)]


def source(p: AxisPlan, coord: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Each output position's source coordinate, and (``tf_crop_and_resize`` only)
    whether it is extrapolated."""
    y = np.arange(p.size_out, dtype=np.float64)
    size_in, scale = p.size_in, p.scale
    width = scale * size_in  # the output width before flooring
    if coord == "align_corners":
        return (np.zeros_like(y) if width == 1 else y * (size_in - 1) / (width - 1)), None
    if coord == "asymmetric":
        return y / scale, None
    if coord == "tf_crop_and_resize":
        lo, hi = p.roi
        x = (np.full_like(y, (hi - lo) * (size_in - 1) / 2) if width == 1
             else y * (hi - lo) * (size_in - 1) / (width - 1))
        x = x + lo * (size_in - 1)
        return x, (x < 0) | (x > size_in - 1)
    if coord == "pytorch_half_pixel":
        return (np.full_like(y, -0.5) if width == 1 else (y + 0.5) / scale - 0.5), None
    if coord == "half_pixel":
        return (y + 0.5) / scale - 0.5, None
    if coord == "half_pixel_symmetric":
        offset = size_in / 2 * (1 - p.size_out / width)
        return offset + (y + 0.5) / scale - 0.5, None
    raise ValueError(f"coordinate_transformation_mode {coord!r}")


def _coeffs(ratio: float, scale: float, mode: str, nearest: str, cubic_a: float,
            antialias: bool) -> np.ndarray:
    """The kernel taps at fractional offset ``ratio`` in (0, 1] (ONNX's ``*_coeffs``)."""
    if mode == "nearest":
        if float(ratio).is_integer():
            return np.array([0.0, 1.0])
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
              "floor": False, "ceil": True}[nearest]
        return np.array([0.0, 1.0]) if up else np.array([1.0, 0.0])
    if mode == "linear":
        if not antialias:
            return np.array([1 - ratio, ratio])
        s = min(scale, 1.0)
        start = int(np.floor(-1 / s) + 1)
        args = (np.arange(start, start + 2 - 2 * start) - ratio) * s
        c = np.clip(1 - np.abs(args), 0, 1)
        return c / c.sum()
    a = cubic_a
    if not antialias:
        r, q = ratio, 1 - ratio
        return np.array([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                         ((a + 2) * r - (a + 3)) * r * r + 1,
                         ((a + 2) * q - (a + 3)) * q * q + 1,
                         ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a])
    s = min(scale, 1.0)
    i_start = int(np.floor(-2 / s) + 1)
    x = np.abs(s * (np.arange(i_start, 2 - i_start) - ratio))
    c = np.where(x <= 1, (a + 2) * x**3 - (a + 3) * x**2 + 1,
                 np.where(x < 2, a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a, 0.0))
    return c / c.sum()


def weights(p: AxisPlan, mode: str, coord: str, *, nearest: str = "round_prefer_floor",
            cubic_a: float = -0.75, exclude_outside: bool = False, antialias: bool = False
            ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(M, extrapolated)``: the axis's sampling matrix ``(size_out, size_in)`` in float64
    (taps beyond the input clamp to its edge, as ONNX's edge padding does) and the
    extrapolated output positions (None unless ``tf_crop_and_resize``)."""
    x, extrapolated = source(p, coord)
    m = np.zeros((p.size_out, p.size_in), dtype=np.float64)
    for o, xo in enumerate(x):
        base = math.floor(xo)
        ratio = 1.0 if xo == base else xo - base
        c = _coeffs(ratio, p.scale, mode, nearest, cubic_a, antialias)
        n = len(c)
        pad = -(-n // 2)
        xp = xo + pad
        fp = math.floor(xp)
        frac = xp - fp
        if n % 2 == 0:
            offset = -(n // 2) if frac == 0 else -(n // 2) + 1
        else:
            offset = -((n - 1) // 2) + (0 if frac <= 0.5 else 1)
        idx = fp + offset + np.arange(n) - pad
        if exclude_outside:
            c = np.where((idx < 0) | (idx >= p.size_in), 0.0, c)
            total = c.sum()
            c = c / (total if total else 1.0)
        np.add.at(m[o], np.clip(idx, 0, p.size_in - 1), c)
    return m, extrapolated
