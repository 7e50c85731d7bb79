"""``image.grid_sample`` (TVM ``src/relay/op/image/grid_sample.cc``): sample ``data`` at
the normalised coordinates of ``grid``, PyTorch's and ONNX's GridSample.

Shapes: ``data`` is NCHW (grid ``(N, 2, H_out, W_out)``) or NCDHW (grid ``(N, 3, D_out,
H_out, W_out)``); the grid is channel-first as in TVM and its channel 0 is x (the last
spatial axis), 1 is y, 2 is z; the result is ``(N, C, *grid spatial)`` in data's dtype.

Semantics (ONNX's reference, ``onnx.reference.ops.op_grid_sample``): a coordinate ``g`` in
[-1, 1] of an axis of length ``L`` maps to ``(g + 1) / 2 * (L - 1)`` with
``align_corners`` (-1 and 1 are the centres of the corner pixels), else to ``((g + 1) * L -
1) / 2`` (they are the outer edges). A coordinate beyond the border (``[0, L - 1]`` or
``[-0.5, L - 0.5]``) is clamped to ``[0, L - 1]`` with ``padding_mode="border"`` and
reflected back inside with ``"reflection"``. ``nearest`` rounds half to even (before the
border rule); ``bilinear`` and ``bicubic`` (Keys' kernel, alpha -0.75) weight the 2 or 4
taps per axis around it; a tap outside the input reads 0 (``zeros``), the edge pixel
(``border``) or its reflection (``reflection``). ``bicubic`` is defined for both ranks (TVM
has it for 4-d data only). Injective to fusion, as TVM registers it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dims_compatible, shape_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import as_dtype, is_float, tensor_args

Array = np.ndarray

_LAYOUTS = {"NCHW": 4, "NCDHW": 5}


@dataclass(frozen=True, slots=True)
class GridSampleAttrs:
    method: str = "bilinear"
    layout: str = "NCHW"
    padding_mode: str = "zeros"
    align_corners: bool = True

    def __post_init__(self) -> None:
        if self.method not in ("nearest", "bilinear", "bicubic"):
            raise AttrError(f"method must be 'nearest', 'bilinear' or 'bicubic', found "
                            f"{self.method!r}", "method")
        if self.layout not in _LAYOUTS:
            raise AttrError(f"layout must be 'NCHW' or 'NCDHW', found {self.layout!r}",
                            "layout")
        if self.padding_mode not in ("zeros", "border", "reflection"):
            raise AttrError(f"padding_mode must be 'zeros', 'border' or 'reflection', "
                            f"found {self.padding_mode!r}", "padding_mode")


def _grid_sample_rel(arg_types: list[Type], attrs: GridSampleAttrs) -> object:
    op = "image.grid_sample"
    args = tensor_args(op, arg_types, 2, ("data", "grid"))
    if args is NOT_YET:
        return NOT_YET
    data, grid = args
    rank = _LAYOUTS[attrs.layout]
    if data.ndim != rank or grid.ndim != rank:
        raise RelationError(f"{op}: {attrs.layout} needs data and grid of rank {rank}, found "
                            f"{shape_text(data.shape)} and {shape_text(grid.shape)}")
    if not is_float(data.dtype) or grid.dtype != data.dtype:
        raise RelationError(f"{op}: data and grid must have one float dtype, found "
                            f"{data.dtype} and {grid.dtype}")
    if not dims_compatible(grid.shape[0], data.shape[0]):
        raise RelationError(f"{op}: grid's batch {grid.shape[0]} differs from data's "
                            f"{data.shape[0]}")
    if not dims_compatible(grid.shape[1], rank - 2):
        raise RelationError(f"{op}: grid's axis 1 must hold {rank - 2} coordinates, found "
                            f"{grid.shape[1]}")
    return TensorType((data.shape[0], data.shape[1]) + tuple(grid.shape[2:]), data.dtype)


def _reflect(x: Array, lo: float, hi: float) -> Array:
    """Fold ``x`` back into ``[lo, hi]`` by reflecting at the borders."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below = x < lo
    dx = np.where(below, lo - x, x - hi)
    n = np.floor(dx / span)
    r = dx - n * span
    even = n % 2 == 0
    inside_from_below = np.where(even, lo + r, hi - r)
    inside_from_above = np.where(even, hi - r, lo + r)
    return np.where(below, inside_from_below, np.where(x > hi, inside_from_above, x))


def _cubic(t: Array) -> list[Array]:
    a = -0.75
    u = 1 - t
    return [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * u - (a + 3)) * u * u + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]


def grid_sample(data: Array, grid: Array, method: str, padding_mode: str,
                align_corners: bool) -> Array:
    """The reference on channel-first grids (module doc)."""
    n_batch, n_chan = data.shape[:2]
    dims = data.shape[2:]
    nd = len(dims)
    if 0 in dims:  # every tap lies outside an empty input
        return np.zeros((n_batch, n_chan) + grid.shape[2:], data.dtype)
    taps_per_axis: list[list[tuple[Array, Array]]] = []  # per axis: (index, weight) taps
    for k, size in enumerate(dims):
        g = grid[:, nd - 1 - k].astype(grid.dtype)
        x = ((g + 1) / 2 * (size - 1) if align_corners else ((g + 1) * size - 1) / 2)
        x = x.astype(np.float64)
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if method == "nearest":
            x = np.rint(x)
        out = (x < lo) | (x > hi)
        if padding_mode == "border":
            x = np.where(out, np.clip(x, 0, size - 1), x)
        elif padding_mode == "reflection":
            x = np.where(out, _reflect(x, lo, hi), x)
        if method == "nearest":
            taps_per_axis.append([(np.trunc(x).astype(np.int64), np.ones_like(x))])
            continue
        x0 = np.floor(x)
        t = x - x0
        base = x0.astype(np.int64)
        if method == "bilinear":
            taps_per_axis.append([(base, 1 - t), (base + 1, t)])
        else:
            taps_per_axis.append([(base + d, w) for d, w in zip(range(-1, 3), _cubic(t),
                                                              strict=True)])
    batch = np.arange(n_batch).reshape((n_batch,) + (1,) * (grid.ndim - 2))
    acc = np.zeros((n_batch,) + grid.shape[2:] + (n_chan,), dtype=np.float64)
    src = data.astype(np.float64)
    for combo in itertools.product(*taps_per_axis):
        weight = np.ones(grid.shape[:1] + grid.shape[2:])
        valid = np.ones(weight.shape, dtype=bool)
        index = []
        for (idx, w), size in zip(combo, dims, strict=True):
            weight = weight * w
            lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
            if padding_mode == "zeros":
                valid &= (idx >= 0) & (idx < size)
            elif padding_mode == "reflection":
                idx = np.trunc(_reflect(idx.astype(np.float64), lo, hi)).astype(np.int64)
            index.append(np.clip(idx, 0, size - 1))
        picked = src[(batch, slice(None), *index)]  # (N, *out, C): advanced axes first
        acc += np.where(valid, weight, 0.0)[..., None] * picked
    return as_dtype(np.moveaxis(acc, -1, 1), data.dtype)


def _grid_sample_ref(args: list, attrs: GridSampleAttrs) -> Array:
    data, grid = np.asarray(args[0]), np.asarray(args[1])
    with np.errstate(all="ignore"):
        return grid_sample(data, grid, attrs.method, attrs.padding_mode, attrs.align_corners)


register_op("image.grid_sample", attrs=GridSampleAttrs, num_inputs=2,
            arg_names=("data", "grid"), support_level=5, relation=_grid_sample_rel,
            reference=_grid_sample_ref,
            doc="Sample ``data`` (NCHW / NCDHW) at the normalised coordinates of the "
                "channel-first ``grid`` (x, y[, z] in [-1, 1]) by nearest, bilinear or "
                "bicubic interpolation with zeros, border or reflection padding.")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["image.grid_sample"] = Examples(
    attrs=({"method": "nearest", "padding_mode": "border"},
           {"method": "bicubic", "padding_mode": "reflection",
            "align_corners": False},
           {"layout": "NCDHW"}),
    args=((((1, 2, 3, 4), "float32"), ((1, 2, 2, 3), "float32")),
          (((1, 1, 2, 3, 2), "float32"), ((1, 3, 2, 2, 2), "float32"))))
