"""Converters of ONNX ops that map to one of the later registry ops: Scatter (9),
ScatterElements (11+) and ScatterND (11+) to ``scatter_elements`` / ``scatter_nd``, Einsum
(12) to ``einsum``, GridSample (16+) to ``image.grid_sample``; and GridSample's companion
AffineGrid (20), an ``nn.batch_matmul`` of a constant base grid by ``theta``.

Layout differences, as TVM's ONNX frontend bridged them: ScatterND's indices hold the
coordinates on their *last* axis, ``scatter_nd``'s on the first (a transpose); GridSample's
grid holds them last too, ``image.grid_sample``'s on axis 1 (a transpose). ONNX's reduction
``none`` is ``update``.
"""

from __future__ import annotations

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext, axis_of
from relay_ref.frontend.onnx.dtypes import promote
from relay_ref.frontend.onnx.registry import converter
from relay_ref.ir.expr import Expr

_REDUCTIONS = {"none": "update", "add": "add", "mul": "mul", "min": "min", "max": "max"}


def _check_reduction(ctx: NodeContext) -> list[str]:
    reduction = ctx.attr("reduction", "none")
    return [] if reduction in _REDUCTIONS else [f"reduction={reduction!r}"]


@converter("Scatter", since=9, until=10)
def scatter(ctx: NodeContext) -> Expr:
    """Scatter-9 is ScatterElements without a reduction (deprecated by it in 11)."""
    return _scatter_elements(ctx)


@converter("ScatterElements", since=11, check=_check_reduction)
def scatter_elements(ctx: NodeContext) -> Expr:
    return _scatter_elements(ctx)


def _scatter_elements(ctx: NodeContext) -> Expr:
    axis = axis_of(ctx, int(ctx.attr("axis", 0)), ctx.rank(0))
    return ctx.call("scatter_elements", ctx.need(0), ctx.need(1), ctx.need(2), axis=axis,
                    reduction=_REDUCTIONS[ctx.attr("reduction", "none")])


@converter("ScatterND", since=11, check=_check_reduction)
def scatter_nd(ctx: NodeContext) -> Expr:
    """Indices (..., M) become (M, ...): the coordinates move to the first axis."""
    rank = ctx.rank(1)
    if rank < 1 or not isinstance(ctx.shape(1)[-1], int):
        raise ConvertError("ScatterND needs indices whose last dim (the coordinates) is "
                           "static")
    indices = ctx.call("transpose", ctx.need(1), axes=[rank - 1, *range(rank - 1)])
    return ctx.call("scatter_nd", ctx.need(0), indices, ctx.need(2),
                    mode=_REDUCTIONS[ctx.attr("reduction", "none")])


@converter("Einsum", since=12)
def einsum(ctx: NodeContext) -> Expr:
    operands = [x for x in ctx.inputs if x is not None]
    return ctx.call("einsum", ctx.builder.tuple(*operands),
                    equation=str(ctx.attr("equation")).replace(" ", ""))


_GRID_MODES = {"bilinear": "bilinear", "linear": "bilinear", "bicubic": "bicubic",
               "cubic": "bicubic", "nearest": "nearest"}


def _check_grid_sample(ctx: NodeContext) -> list[str]:
    out = []
    mode = ctx.attr("mode", "linear" if ctx.version >= 20 else "bilinear")
    if mode not in _GRID_MODES:
        out.append(f"mode={mode!r}")
    padding = ctx.attr("padding_mode", "zeros")
    if padding not in ("zeros", "border", "reflection"):
        out.append(f"padding_mode={padding!r}")
    return out


@converter("GridSample", since=16, check=_check_grid_sample)
def grid_sample(ctx: NodeContext) -> Expr:
    """Grid (N, *out, nd) becomes (N, nd, *out); 4-d (NCHW) and 5-d (NCDHW) data.

    X and the grid may differ in type (T1, T2): both are sampled in the wider of the two
    and the result cast to X's type, so a float32 grid keeps its precision over float16
    data (casting the grid to X's type moved the sampling points)."""
    rank = ctx.rank(0)
    layout = {4: "NCHW", 5: "NCDHW"}.get(rank)
    if layout is None:
        raise ConvertError(f"GridSample of rank-{rank} data is not supported (4 or 5)")
    x, grid = ctx.need(0), ctx.need(1)
    wide = promote(ctx.dtype(0), ctx.dtype(1))
    if ctx.dtype(0) != wide:
        x = ctx.call("cast", x, dtype=wide)
    if ctx.dtype(1) != wide:
        grid = ctx.call("cast", grid, dtype=wide)
    grid = ctx.call("transpose", grid, axes=[0, rank - 1, *range(1, rank - 1)])
    mode = ctx.attr("mode", "linear" if ctx.version >= 20 else "bilinear")
    y = ctx.call("image.grid_sample", x, grid, method=_GRID_MODES[mode],
                 layout=layout, padding_mode=ctx.attr("padding_mode", "zeros"),
                 align_corners=bool(int(ctx.attr("align_corners", 0))))
    return y if ctx.dtype(0) == wide else ctx.call("cast", y, dtype=ctx.dtype(0))


@converter("AffineGrid", since=20, static_inputs=(1,))
def affine_grid(ctx: NodeContext) -> Expr:
    """``grid[n, p] = theta[n] @ [x_p, y_p(, z_p), 1]`` over the output's pixel centres
    ``p`` (normalised to [-1, 1]: the corner centres with ``align_corners``, else the
    edges), x varying fastest; the result is (N, H, W, 2) or (N, D, H, W, 3)."""
    size = ctx.static_ints(1, "size") or []
    if len(size) not in (4, 5):
        raise ConvertError(f"size {size} must be (N, C, H, W) or (N, C, D, H, W)")
    n, dims = size[0], size[2:]
    align = bool(int(ctx.attr("align_corners", 0)))
    axes = [np.linspace(-1, 1, d) if align else (np.arange(d) * 2 + 1) / d - 1
            for d in dims]
    mesh = np.meshgrid(*axes, indexing="ij")  # (z,) y, x
    points = [m.reshape(-1) for m in reversed(mesh)]  # x, y(, z)
    base = np.stack([*points, np.ones_like(points[0])], axis=1).astype(ctx.dtype(0))
    base_b = ctx.call("broadcast_to", ctx.const(base), shape=[n, *base.shape])
    grid = ctx.call("nn.batch_matmul", base_b, ctx.need(0))  # x @ theta^T per batch
    return ctx.call("reshape", grid, newshape=[n, *dims, len(dims)])
