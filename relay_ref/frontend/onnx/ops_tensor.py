"""Converters of shape manipulation, constants, indexing and data movement.

Shape inputs (``Reshape``'s shape, ``Unsqueeze``'s axes from 13, ``Slice``'s bounds from
10 ...) must be static: constants, initializers (embedded as constants, see
``Converter.static_inputs``) or arithmetic on static shapes (``Shape`` of a tensor whose
shape is static is a constant).
"""

from __future__ import annotations

import math

import numpy as np

from relay_ref.frontend.onnx.builder import ConvertError
from relay_ref.frontend.onnx.context import NodeContext, axis_of, match_cast
from relay_ref.frontend.onnx.dtypes import relay_dtype, type_name
from relay_ref.frontend.onnx.registry import converter
from relay_ref.frontend.onnx.shape_values import is_symbolic_value
from relay_ref.ir.expr import Expr
from relay_ref.ir.shape import (
    ANY,
    DimMismatch,
    broadcast_shapes,
    dim_vars,
    eval_dim,
    floordiv,
    floormod,
    is_any,
    prove_equal,
    shape_prod,
)
from relay_ref.ir.types import Dim, TensorType

_MANY = 1 << 16  # "any number of outputs" (Split)


@converter("Identity")
def identity(ctx: NodeContext) -> Expr:
    return ctx.need(0)


# -- reshaping ----------------------------------------------------------------------------

@converter("Reshape", since=5, static_inputs=(1,))
def reshape(ctx: NodeContext) -> Expr:
    """``0`` copies the input dim (unless ``allowzero=1``, Reshape-14), ``-1`` is inferred:
    Relay's ``reshape`` reads them the same way."""
    allowzero = bool(ctx.attr("allowzero", 0))
    dims = ctx.builder.known_dims(ctx.need(1))
    if dims is not None and is_symbolic_value(dims):
        return _symbolic_reshape(ctx, list(dims.reshape(-1)), allowzero)
    shape = ctx.static_ints(1, "shape")
    if any(d < -1 for d in shape or ()):
        raise ConvertError(f"shape {shape} has a negative dim other than -1")
    return ctx.call("reshape", ctx.need(0), newshape=shape, allowzero=allowzero)


def _symbolic_reshape(ctx: NodeContext, dims: list[object], allowzero: bool) -> Expr:
    """``Reshape`` to a shape known symbolically (``[n, -1]`` from ``Shape -> Gather ->
    Concat``). The target dims are resolved first (``0``: the input's dim; ``-1``: the
    element count divided by the others' product when provably exact); then a static
    ``newshape`` keeps numbers, writes ``0`` for a symbolic dim provably equal to the
    input's at that position and ``-1`` for one other symbolic dim (the relation computes
    it). When that cannot be done, ``dyn.reshape`` by the run-time shape, then
    ``match_cast`` to the resolved dims (Shape-MatchCast)."""
    in_shape = ctx.shape(0)
    if any(isinstance(d, int) and d < -1 for d in dims) or dims.count(-1) > 1:
        raise ConvertError(f"shape {[str(d) for d in dims]} has a negative dim other than "
                           "one -1")
    resolved: list[Dim] = []
    for i, d in enumerate(dims):
        if isinstance(d, int) and d == 0 and not allowzero:
            if i >= len(in_shape):
                raise ConvertError(f"shape dim {i} is 0 (copy) beyond the input's rank")
            d = in_shape[i]
        resolved.append(d)  # type: ignore[arg-type]
    if -1 in dims:
        k = dims.index(-1)
        rest = shape_prod([d for i, d in enumerate(resolved) if i != k])
        total = shape_prod(in_shape)
        resolved[k] = _exact_quotient(total, rest)
    newshape: list[int] = []
    free = True  # one dim may be left to the relation as -1
    for i, (d, r) in enumerate(zip(dims, resolved, strict=True)):
        if isinstance(d, int) and d != -1:
            newshape.append(d)  # a number, or 0 (copy; a zero with allowzero)
        elif isinstance(r, int):
            newshape.append(r)  # -1 resolved to a number
        elif not is_any(r) and not allowzero and i < len(in_shape) and \
                prove_equal(r, in_shape[i]) is True:
            newshape.append(0)
        elif free:
            free = False
            newshape.append(-1)
        else:
            y = ctx.call("dyn.reshape", ctx.need(0), ctx.need(1), allowzero=allowzero)
            return match_cast(ctx, y, TensorType(tuple(resolved), ctx.dtype(0)))
    return ctx.call("reshape", ctx.need(0), newshape=newshape, allowzero=allowzero)


def _exact_quotient(total: Dim, rest: Dim) -> Dim:
    """``total / rest`` when provably exact (``60 * n / (3 * n)`` is 20, ``60 * n / 3`` is
    ``20 * n``), else ``?``."""
    if is_any(total) or is_any(rest) or rest == 0:
        return ANY
    if prove_equal(floormod(total, rest), 0) is True:  # type: ignore[arg-type]
        return floordiv(total, rest)  # type: ignore[arg-type]
    names = dim_vars(total) | dim_vars(rest)
    env = {n: 2 for n in names}
    t, r = eval_dim(total, env), eval_dim(rest, env)
    if r and t % r == 0 and prove_equal(rest * (t // r), total) is True:  # type: ignore
        return t // r
    return ANY


@converter("Flatten")
def flatten(ctx: NodeContext) -> Expr:
    """To 2-d: (prod(dims[:axis]), prod(dims[axis:]))."""
    rank = ctx.rank(0)
    axis = int(ctx.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise ConvertError(f"axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis  # [-rank, rank] -> [0, rank]
    shape = ctx.shape(0)
    if all(isinstance(d, int) for d in shape):
        new = [math.prod(shape[:axis]), math.prod(shape[axis:])]  # type: ignore[arg-type]
    elif axis == 0:
        new = [1, -1]
    elif axis == 1:
        new = [0, -1]
    elif all(isinstance(d, int) for d in shape[:axis]):
        new = [math.prod(shape[:axis]), -1]  # type: ignore[arg-type]
    elif all(isinstance(d, int) for d in shape[axis:]):
        new = [-1, math.prod(shape[axis:])]  # type: ignore[arg-type]
    else:
        raise ConvertError("Flatten needs static dims before or after its axis")
    return ctx.call("reshape", ctx.need(0), newshape=new)


@converter("Transpose")
def transpose(ctx: NodeContext) -> Expr:
    rank = ctx.rank(0)
    perm = [int(p) for p in ctx.attr("perm", list(range(rank))[::-1])]
    return ctx.call("transpose", ctx.need(0), axes=perm)


@converter("Concat", since=4)
def concat(ctx: NodeContext) -> Expr:
    args = [x for x in ctx.inputs if x is not None]
    axis = axis_of(ctx, int(ctx.attr("axis")), ctx.rank(0))
    if len(args) == 1:
        return args[0]
    return ctx.call("concatenate", ctx.builder.tuple(*args), axis=axis)


def _unsqueeze(ctx: NodeContext, axes: list[int]) -> Expr:
    """Unit axes at ``axes`` of the output (negative: from its end); runs of consecutive
    axes become one ``expand_dims``, applied in increasing order."""
    out_rank = ctx.rank(0) + len(axes)
    norm = sorted(axis_of(ctx, a, out_rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise ConvertError(f"axes {axes} repeat an axis")
    x = ctx.need(0)
    i = 0
    while i < len(norm):
        j = i
        while j + 1 < len(norm) and norm[j + 1] == norm[j] + 1:
            j += 1
        x = ctx.call("expand_dims", x, axis=norm[i], num_newaxis=j - i + 1)
        i = j + 1
    return x


@converter("Unsqueeze", until=12)
def unsqueeze_attr(ctx: NodeContext) -> Expr:
    return _unsqueeze(ctx, [int(a) for a in ctx.attr("axes", [])])


@converter("Unsqueeze", since=13, static_inputs=(1,))
def unsqueeze_input(ctx: NodeContext) -> Expr:
    return _unsqueeze(ctx, ctx.static_ints(1, "axes") or [])


def _squeeze(ctx: NodeContext, axes: list[int] | None) -> Expr:
    rank = ctx.rank(0)
    if axes is None:
        return ctx.call("squeeze", ctx.need(0))
    return ctx.call("squeeze", ctx.need(0), axis=sorted(axis_of(ctx, a, rank) for a in axes))


@converter("Squeeze", until=12)
def squeeze_attr(ctx: NodeContext) -> Expr:
    axes = ctx.attr("axes")
    return _squeeze(ctx, None if axes is None else [int(a) for a in axes])


@converter("Squeeze", since=13, static_inputs=(1,))
def squeeze_input(ctx: NodeContext) -> Expr:
    return _squeeze(ctx, ctx.static_ints(1, "axes"))


@converter("Expand", since=8, static_inputs=(1,))
def expand(ctx: NodeContext) -> Expr:
    """Bidirectional broadcast of the input with ``shape``. A shape known only
    symbolically (``Shape`` of a tensor with a batch variable): ``dyn.broadcast_to`` by the
    run-time shape, then a ``match_cast`` to the broadcast of the known dims."""
    dims = ctx.builder.known_dims(ctx.need(1))
    if dims is not None and is_symbolic_value(dims):
        try:
            out_dims = broadcast_shapes(ctx.shape(0), tuple(dims.reshape(-1)))
        except DimMismatch as err:
            raise ConvertError(f"cannot expand {ctx.shape(0)} to "
                               f"{[str(d) for d in dims.reshape(-1)]} ({err})") from None
        y = ctx.call("dyn.broadcast_to", ctx.need(0), ctx.need(1))
        return match_cast(ctx, y, TensorType(out_dims, ctx.dtype(0)))
    shape = ctx.static_ints(1, "shape") or []
    data = ctx.shape(0)
    rank = max(len(data), len(shape))
    a = [1] * (rank - len(data)) + list(data)
    b = [1] * (rank - len(shape)) + shape
    out = []
    for da, db in zip(a, b, strict=True):
        if db == 1:
            if not isinstance(da, int):
                raise ConvertError("Expand keeps a dim the input leaves unknown; fix it with "
                                   "shapes=")
            out.append(da)
        elif isinstance(da, int) and da not in (1, db):
            raise ConvertError(f"cannot expand {tuple(data)} to {tuple(shape)}")
        else:
            out.append(db)
    return ctx.call("broadcast_to", ctx.need(0), shape=out)


@converter("Tile", since=6, static_inputs=(1,))
def tile(ctx: NodeContext) -> Expr:
    return ctx.call("tile", ctx.need(0), reps=ctx.static_ints(1, "repeats"))


@converter("DepthToSpace", check=lambda ctx: [] if ctx.attr("mode", "DCR") in ("DCR", "CRD")
           else [f"mode={ctx.attr('mode')!r}"])
def depth_to_space(ctx: NodeContext) -> Expr:
    return ctx.call("nn.depth_to_space", ctx.need(0), block_size=int(ctx.attr("blocksize")),
                    mode=ctx.attr("mode", "DCR"))


@converter("SpaceToDepth", check=lambda ctx: [] if ctx.attr("mode", "DCR") in ("DCR", "CRD")
           else [f"mode={ctx.attr('mode')!r}"])
def space_to_depth(ctx: NodeContext) -> Expr:
    """DCR (the only layout before SpaceToDepth-28) is ``nn.space_to_depth``; CRD keeps
    each channel's block of ``b * b`` together: reshape, transpose, reshape."""
    b = int(ctx.attr("blocksize"))
    if ctx.attr("mode", "DCR") == "DCR":
        return ctx.call("nn.space_to_depth", ctx.need(0), block_size=b)
    n, c, h, w = ctx.static_shape(0, "SpaceToDepth's input in CRD mode")
    if h % b or w % b:
        raise ConvertError(f"spatial dims {(h, w)} are not multiples of blocksize {b}")
    y = ctx.call("reshape", ctx.need(0), newshape=[n, c, h // b, b, w // b, b])
    y = ctx.call("transpose", y, axes=[0, 1, 3, 5, 2, 4])
    return ctx.call("reshape", y, newshape=[n, c * b * b, h // b, w // b])


# -- shapes and constants -----------------------------------------------------------------

@converter("Shape")
def shape(ctx: NodeContext) -> Expr:
    """A constant when the input's shape is static; else ``shape_of`` (sliced by
    ``start``/``end``, Shape-15)."""
    rank = ctx.rank(0)
    start, end = int(ctx.attr("start", 0)), ctx.attr("end")
    lo = max(0, min(rank, start + rank if start < 0 else start))
    hi = rank if end is None else int(end)
    hi = max(0, min(rank, hi + rank if hi < 0 else hi))
    dims = ctx.shape(0)[lo:hi]
    if all(isinstance(d, int) for d in dims):
        return ctx.const(np.array(dims, dtype=np.int64).reshape(len(dims)))
    y = ctx.call("shape_of", ctx.need(0), dtype="int64")
    if (lo, hi) != (0, rank):
        y = ctx.call("strided_slice", y, begin=[lo], end=[hi])
    return y


@converter("Size")
def size(ctx: NodeContext) -> Expr:
    shape = ctx.shape(0)
    if all(isinstance(d, int) for d in shape):
        return ctx.const(np.array(math.prod(shape), dtype=np.int64))  # type: ignore[arg-type]
    return ctx.call("ndarray_size", ctx.need(0), dtype="int64")


def _check_constant(ctx: NodeContext) -> list[str]:
    for key in ("sparse_value", "value_string", "value_strings"):
        if key in ctx.attrs:
            return [f"attribute {key} is not supported"]
    value = ctx.attrs.get("value")
    if isinstance(value, np.ndarray) and value.dtype.kind in "OSU":
        return ["a string tensor is not supported"]
    return []


@converter("Constant", check=_check_constant)
def constant(ctx: NodeContext) -> Expr:
    a = ctx.attrs
    if "value" in a:
        return ctx.const(np.asarray(a["value"]))
    if "value_float" in a:
        return ctx.const(np.array(a["value_float"], dtype=np.float32))
    if "value_floats" in a:
        return ctx.const(np.array(a["value_floats"], dtype=np.float32).reshape(-1))
    if "value_int" in a:
        return ctx.const(np.array(a["value_int"], dtype=np.int64))
    if "value_ints" in a:
        return ctx.const(np.array(a["value_ints"], dtype=np.int64).reshape(-1))
    raise ConvertError("a Constant without a value")


@converter("ConstantOfShape", since=9, static_inputs=(0,))
def constant_of_shape(ctx: NodeContext) -> Expr:
    """``full(value, shape)``: small results are folded to a constant by the builder,
    large ones stay a ``full`` call (the model's text stays small)."""
    value = ctx.attr("value")
    fill = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(())
    dims = ctx.builder.known_dims(ctx.need(0))
    if dims is not None and is_symbolic_value(dims):  # dyn.full, then its known type
        y = ctx.call("dyn.full", ctx.const(fill), ctx.need(0), dtype=fill.dtype.name)
        return match_cast(ctx, y, TensorType(tuple(dims.reshape(-1)), fill.dtype.name))
    shape = ctx.static_ints(0, "shape") or []
    return ctx.call("full", ctx.const(fill), shape=shape, dtype=fill.dtype.name)


def _check_cast(ctx: NodeContext) -> list[str]:
    to = int(ctx.attr("to", 0))
    return [] if relay_dtype(to) else [f"to={type_name(to)} has no Relay dtype"]


@converter("Cast", since=6, check=_check_cast)
def cast(ctx: NodeContext) -> Expr:
    return ctx.call("cast", ctx.need(0), dtype=relay_dtype(int(ctx.attr("to"))))


@converter("CastLike", since=15)
def cast_like(ctx: NodeContext) -> Expr:
    return ctx.call("cast", ctx.need(0), dtype=ctx.dtype(1))


@converter("Range", since=11, static_inputs=(0, 1, 2))
def range_(ctx: NodeContext) -> Expr:
    values = [ctx.builder.static(ctx.need(i)) for i in range(3)]
    dtype = ctx.dtype(0)
    if all(isinstance(v, np.ndarray) for v in values):
        start, limit, delta = (np.asarray(v).item() for v in values)  # type: ignore[union-attr]
        return ctx.const(np.arange(start, limit, delta, dtype=dtype))
    return ctx.call("arange", ctx.need(0), ctx.need(1), ctx.need(2), dtype=dtype)


@converter("Where", since=9)
def where(ctx: NodeContext) -> Expr:
    return ctx.call("where", ctx.need(0), ctx.need(1), ctx.need(2))


# -- indexing -----------------------------------------------------------------------------

def _nonneg_indices(ctx: NodeContext, indices: Expr, dim: object) -> tuple[Expr, str]:
    """Indices with negatives counted from the end (ONNX allows [-dim, dim)), and the
    ``take`` mode that fits: static indices are normalised here; others by a ``where``
    when ``dim`` is static, else by ``wrap``."""
    value = ctx.builder.static(indices)
    if isinstance(value, np.ndarray) and isinstance(dim, int):
        return ctx.const(np.where(value < 0, value + dim, value).astype(value.dtype)), "fast"
    if isinstance(dim, int):
        dtype = ctx.builder.tensor_type(indices).dtype
        zero, d = ctx.scalar(0, dtype), ctx.scalar(dim, dtype)
        fixed = ctx.call("where", ctx.call("less", indices, zero),
                         ctx.call("add", indices, d), indices)
        return fixed, "fast"
    return indices, "wrap"


@converter("Gather")
def gather(ctx: NodeContext) -> Expr:
    rank = ctx.rank(0)
    axis = axis_of(ctx, int(ctx.attr("axis", 0)), rank)
    indices, mode = _nonneg_indices(ctx, ctx.need(1), ctx.shape(0)[axis])
    return ctx.call("take", ctx.need(0), indices, axis=axis, mode=mode)


@converter("GatherElements", since=11)
def gather_elements(ctx: NodeContext) -> Expr:
    axis = axis_of(ctx, int(ctx.attr("axis", 0)), ctx.rank(0))
    indices, _ = _nonneg_indices(ctx, ctx.need(1), ctx.shape(0)[axis])
    return ctx.call("gather", ctx.need(0), indices, axis=axis)


@converter("GatherND", since=11)
def gather_nd(ctx: NodeContext) -> Expr:
    """ONNX keeps the coordinates on the last axis of the indices, Relay on the first."""
    r = ctx.rank(1)
    m = ctx.shape(1)[-1]
    if not isinstance(m, int):
        raise ConvertError("GatherND needs a static last dim of the indices")
    idx = ctx.call("transpose", ctx.need(1), axes=[r - 1, *range(r - 1)])
    return ctx.call("gather_nd", ctx.need(0), idx, batch_dims=int(ctx.attr("batch_dims", 0)),
                    index_rank=m)


def _slice(ctx: NodeContext, starts: list[int], ends: list[int], axes: list[int] | None,
           steps: list[int] | None) -> Expr:
    rank = ctx.rank(0)
    axes = list(range(len(starts))) if axes is None else [axis_of(ctx, a, rank) for a in axes]
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ConvertError("starts, ends, axes and steps differ in length")
    if 0 in steps:
        raise ConvertError("a step of 0")
    return ctx.call("strided_slice", ctx.need(0), begin=starts, end=ends, strides=steps,
                    axes=axes)


@converter("Slice", until=9)
def slice_attrs(ctx: NodeContext) -> Expr:
    axes = ctx.attr("axes")
    return _slice(ctx, [int(v) for v in ctx.attr("starts")], [int(v) for v in ctx.attr("ends")],
                  None if axes is None else [int(a) for a in axes], None)


@converter("Slice", since=10, static_inputs=(1, 2, 3, 4))
def slice_inputs(ctx: NodeContext) -> Expr:
    """Run-time ``starts``/``ends`` (a ``Loop`` body slicing at its iteration number) make
    a ``dyn.strided_slice``: its dims are then ``?``; ``axes`` and ``steps`` stay static."""
    if any(ctx.input(i) is not None and ctx.builder.static(ctx.need(i)) is None
           for i in (1, 2)):
        rank = ctx.rank(0)
        axes = ctx.static_ints(3, "axes")
        n = ctx.builder.tensor_type(ctx.need(1)).shape[0]
        if not isinstance(n, int):
            raise ConvertError("run-time starts need a static length")
        axes = list(range(n)) if axes is None else [axis_of(ctx, a, rank) for a in axes]
        steps = ctx.static_ints(4, "steps") or [1] * n
        return ctx.call("dyn.strided_slice", ctx.need(0), ctx.need(1), ctx.need(2),
                        ctx.const(np.array(steps, np.int64)), axes=axes)
    return _slice(ctx, ctx.static_ints(1, "starts") or [], ctx.static_ints(2, "ends") or [],
                  ctx.static_ints(3, "axes"), ctx.static_ints(4, "steps"))


def _split(ctx: NodeContext, sizes: list[int] | None) -> list[Expr]:
    rank = ctx.rank(0)
    axis = axis_of(ctx, int(ctx.attr("axis", 0)), rank)
    n = len(ctx.node.output)
    dim = ctx.shape(0)[axis]
    if sizes is None and ctx.version >= 18 and "num_outputs" in ctx.attrs:
        n = int(ctx.attr("num_outputs"))
        if not isinstance(dim, int):
            raise ConvertError("Split with num_outputs needs a static dim on the axis")
        chunk = -(-dim // n)
        sizes = [min(chunk, dim - i * chunk) for i in range(n)]
    if sizes is None:
        if n == 1:
            return [ctx.need(0)]
        y = ctx.call("split", ctx.need(0), indices_or_sections=n, axis=axis)
    else:
        if isinstance(dim, int) and sum(sizes) != dim:
            raise ConvertError(f"split sizes {sizes} do not add up to {dim}")
        if len(sizes) == 1:
            return [ctx.need(0)]
        if 0 in sizes:  # ``split`` needs ascending indices: a slice per part
            ends = np.cumsum(sizes).tolist()
            return [ctx.call("strided_slice", ctx.need(0), begin=[e - k], end=[e],
                             axes=[axis]) for e, k in zip(ends, sizes, strict=True)]
        indices = list(np.cumsum(sizes[:-1]).tolist())
        y = ctx.call("split", ctx.need(0), indices_or_sections=indices, axis=axis)
    count = len(ctx.builder.type_of(y).fields)  # type: ignore[attr-defined]
    return [ctx.builder.item(y, i) for i in range(count)]


@converter("Split", since=2, until=12, outputs=_MANY)
def split_attr(ctx: NodeContext) -> list[Expr]:
    split = ctx.attr("split")
    return _split(ctx, None if split is None else [int(s) for s in split])


@converter("Split", since=13, static_inputs=(1,), outputs=_MANY)
def split_input(ctx: NodeContext) -> list[Expr]:
    return _split(ctx, ctx.static_ints(1, "split"))


def _check_pad(ctx: NodeContext) -> list[str]:
    mode = ctx.attr("mode", "constant")
    return [] if mode in ("constant", "reflect", "edge") else [f"mode={mode!r}"]


def _pad(ctx: NodeContext, pads: list[int], value: Expr | None,
         axes: list[int] | None = None) -> Expr:
    """Positive pads by ``nn.pad``; negative ones crop with ``strided_slice``."""
    rank = ctx.rank(0)
    axes = list(range(rank)) if axes is None else [axis_of(ctx, a, rank) for a in axes]
    if len(pads) != 2 * len(axes):
        raise ConvertError(f"pads {pads} do not fit {len(axes)} axes")
    width = [[0, 0] for _ in range(rank)]
    for k, ax in enumerate(axes):
        width[ax] = [pads[k], pads[k + len(axes)]]
    mode = ctx.attr("mode", "constant")
    x = ctx.need(0)
    grow = [[max(b, 0), max(e, 0)] for b, e in width]
    if any(b or e for b, e in grow):
        fill = value if value is not None else ctx.scalar(0)
        x = ctx.call("nn.pad", x, fill, pad_width=grow, pad_mode=mode)
    crop = [(i, -b, e) for i, (b, e) in enumerate(width) if b < 0 or e < 0]
    if crop:
        begin = [max(c[1], 0) for c in crop]
        end = [(e if e < 0 else 2**63 - 1) for _, _, e in crop]
        x = ctx.call("strided_slice", x, begin=begin, end=end, axes=[c[0] for c in crop])
    return x


@converter("Pad", since=2, until=10, check=_check_pad)
def pad_attrs(ctx: NodeContext) -> Expr:
    value = float(ctx.attr("value", 0.0))
    return _pad(ctx, [int(p) for p in ctx.attr("pads")], ctx.scalar(value))


@converter("Pad", since=11, static_inputs=(1, 3), check=_check_pad)
def pad_inputs(ctx: NodeContext) -> Expr:
    value = ctx.input(2)
    if value is not None and ctx.builder.tensor_type(value).shape != ():
        value = ctx.call("reshape", value, newshape=[])
    axes = ctx.static_ints(3, "axes")
    return _pad(ctx, ctx.static_ints(1, "pads") or [], value, axes)


@converter("OneHot", since=9, static_inputs=(1,))
def one_hot(ctx: NodeContext) -> Expr:
    """``values`` is [off, on]; negative indices count from ``depth``'s end (OneHot-11)."""
    depth_v = ctx.static(1, "depth")
    depth = int(np.asarray(depth_v).reshape(-1)[0])  # type: ignore[arg-type]
    indices = ctx.need(0)
    if not ctx.dtype(0).startswith(("int", "uint")):
        indices = ctx.call("cast", indices, dtype="int64")
    indices, _ = _nonneg_indices(ctx, indices, depth)
    values = ctx.need(2)
    off = ctx.call("take", values, ctx.const(np.array(0, np.int64)), axis=0)
    on = ctx.call("take", values, ctx.const(np.array(1, np.int64)), axis=0)
    return ctx.call("one_hot", indices, on, off, depth=depth, axis=int(ctx.attr("axis", -1)),
                    dtype=ctx.dtype(2))
