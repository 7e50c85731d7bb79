"""Differentiation rules of the data-movement ops (registry protocol "Differentiation
protocol", spec/ad.md; the math follows TVM's ``_tensor_grad.py``).

Every op here is linear in its float arguments, so each forward rule is the op itself
applied to the tangents, and each reverse rule is the op's transpose:
* shape-only ops (reshape, expand_dims, squeeze, batch_flatten) reshape ``out_grad`` back
  (``reshape_like``); transpose / reverse / concatenate / split / stack invert themselves;
  broadcasts collapse (``collapse_sum_like``); gathers scatter-add.
* ``INDEX_MAPPED`` ops (strided_slice, tile, repeat, pad, depth/space rearrangements,
  layout_transform) move elements at positions fixed by static shapes and attributes: the
  rule runs the op's reference once on the *index* tensor ``arange(n).reshape(shape)``
  (a static computation on types and attributes, never on program values) to learn which
  input element each output element reads, and the adjoint scatter-adds ``out_grad`` there
  (``scatter_elements`` with ``reduction="add"``), which sums over repeated reads (tile).
"""

from __future__ import annotations

import numpy as np

from relay_ref.ir.expr import Call, Constant, Expr, Tuple
from relay_ref.ops.grad_common import (
    TypeOf,
    dtype,
    fields,
    op,
    op_with,
    shape,
    tensor_type,
    tuple_len,
    unbroadcast,
    zeros_like,
)
from relay_ref.ops.registry import GradientUnsupported, get_op


def _same(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t f(x, ...) = f(tx, ...) (f linear in x; other arguments as they are)."""
    return op_with(call.op.name, call.attrs, t[0], *call.args[1:])


def _identity_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d f(x) = g (f is the identity on values: copy, annotations, device placement)."""
    return (g,)


def _reshape_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d reshape(x) = reshape_like(g, x) (also expand_dims, squeeze, batch_flatten)."""
    return (op("reshape_like", g, call.args[0]),)


def _reshape_like_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d reshape_like(x, like) = (reshape_like(g, x), 0)."""
    return op("reshape_like", g, call.args[0]), zeros_like(call.args[1])


def _transpose_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d transpose(x, axes) = transpose(g, argsort(axes))."""
    n = len(shape(call.args[0], to))
    axes = call.attrs.axes
    axes = tuple(reversed(range(n))) if axes is None else tuple(a % n for a in axes)
    return (op("transpose", g, axes=tuple(int(i) for i in np.argsort(axes))),)


def _reverse_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d reverse(x, axis) = reverse(g, axis)."""
    return (op_with("reverse", call.attrs, g),)


def _broadcast_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d broadcast_to(x) = collapse_sum_like(g, x)."""
    return (unbroadcast(g, call.args[0], call, to),)


def _broadcast_like_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d broadcast_to_like(x, like) = (collapse_sum_like(g, x), 0)."""
    return unbroadcast(g, call.args[0], call, to), zeros_like(call.args[1])


def _cast_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d cast(x) = cast(g, dtype of x)."""
    return (op("cast", g, dtype=dtype(call.args[0], to)),)


def _cast_like_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d cast_like(x, like) = (cast_like(g, x), 0)."""
    return op("cast_like", g, call.args[0]), zeros_like(call.args[1])


def _concat_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d concatenate((x1..xn), axis) = (split(g, at the xi's boundaries, axis))."""
    (xs,) = call.args
    n = tuple_len(xs, to)
    axis = call.attrs.axis
    sizes = [tensor_type(t).shape[axis] for t in to(xs).fields]
    cuts = tuple(int(c) for c in np.cumsum(sizes)[:-1])
    parts = op("split", g, indices_or_sections=cuts, axis=axis)
    return (Tuple(fields(parts, n)),)


def _stack_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d stack((x1..xn), axis) = (squeeze(split(g, n, axis)[i], axis))."""
    (xs,) = call.args
    n = tuple_len(xs, to)
    axis = call.attrs.axis % len(shape(call, to))
    parts = fields(op("split", g, indices_or_sections=n, axis=axis), n)
    return (Tuple(tuple(op("squeeze", p, axis=(axis,)) for p in parts)),)


def _split_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d split(x, axis) = concatenate((g1..gn), axis)."""
    n = tuple_len(call, to)
    return (op("concatenate", Tuple(fields(g, n)), axis=call.attrs.axis),)


def _where_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d where(c, x, y) = (0, collapse(where(c, g, 0)), collapse(where(c, 0, g)))."""
    c, x, y = call.args
    zero = zeros_like(g)
    return (zeros_like(c), unbroadcast(op("where", c, g, zero), x, call, to),
            unbroadcast(op("where", c, zero, g), y, call, to))


def _where_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t where(c, x, y) = where(c, tx, ty)."""
    return op("where", call.args[0], t[1], t[2])


def _zero_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d f(args) = 0 for each argument (the result does not depend on their values)."""
    return tuple(zeros_like(a) for a in call.args)


def _zero_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t f(args) = 0."""
    return zeros_like(call)


def _full_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d full(v) = sum(g) (every element is v)."""
    return (op("sum", g),)


def _full_like_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d full_like(x, v) = (0, sum(g))."""
    return zeros_like(call.args[0]), op("sum", g)


def _full_like_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t full_like(x, v) = full_like(x, tv)."""
    return op("full_like", call.args[0], t[1])


def _norm_indices(call: Call, n: int, to: TypeOf) -> Expr:
    """``take``'s indices as in-range positions (its ``mode``: clip, wrap, fast)."""
    ind = call.args[1]
    dt = dtype(ind, to)

    def c(v: int) -> Constant:
        return Constant(np.array(v, dtype=dt))
    if call.attrs.mode == "wrap":
        return op("floor_mod", ind, c(n))
    if call.attrs.mode == "clip":
        return op("minimum", op("maximum", ind, c(0)), c(n - 1))
    return op("where", op("less", ind, c(0)), op("add", ind, c(n)), ind)


def _take_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d take(x, i, axis) = (scatter-add of g at i along axis, 0)."""
    x, ind = call.args
    a = call.attrs
    if a.batch_dims != 0:
        raise GradientUnsupported("take: the gradient with batch_dims != 0 is not implemented")
    xs = shape(x, to)
    k = int(np.prod(shape(ind, to), dtype=np.int64))
    if a.axis is None:
        flat = op("reshape", x, newshape=(-1,))
        upd = op("reshape", g, newshape=(-1,))
        idx = op("reshape", _norm_indices(call, int(np.prod(xs, dtype=np.int64)), to),
                 newshape=(-1,))
        out = op("scatter_elements", zeros_like(flat), idx, upd, axis=0, reduction="add")
        return op("reshape_like", out, x), zeros_like(ind)
    axis = a.axis % len(xs)
    pre, post = xs[:axis], xs[axis + 1:]
    upd = op("reshape", g, newshape=(*pre, k, *post))
    idx = op("reshape", _norm_indices(call, xs[axis], to),
             newshape=(*([1] * len(pre)), k, *([1] * len(post))))
    idx = op("broadcast_to", idx, shape=(*pre, k, *post))
    out = op("scatter_elements", zeros_like(x), idx, upd, axis=axis, reduction="add")
    return out, zeros_like(ind)


def _gather_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d gather(x, i, axis) = (scatter-add of g at i along axis, 0)."""
    x, ind = call.args
    out = op("scatter_elements", zeros_like(x), ind, g, axis=call.attrs.axis,
             reduction="add")
    return out, zeros_like(ind)


def _gather_nd_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d gather_nd(x, i) = (scatter_nd(0, i, g, mode=add), 0) (batch_dims = 0)."""
    x, ind = call.args
    if call.attrs.batch_dims != 0:
        raise GradientUnsupported("gather_nd: the gradient with batch_dims != 0 is not implemented")
    return op("scatter_nd", zeros_like(x), ind, g, mode="add"), zeros_like(ind)


# -- index-mapped ops -------------------------------------------------------------------

def source_index(call: Call, to: TypeOf) -> np.ndarray:
    """For each element of ``call``'s result, the flat index of the element of
    ``call.args[0]`` it reads, -1 where it reads none (padding): the op's reference run on
    the index tensor (static: shapes and attributes only)."""
    xs = shape(call.args[0], to)
    index = np.arange(int(np.prod(xs, dtype=np.int64)), dtype=np.int64).reshape(xs)
    extra = [np.array(-1, dtype=np.int64) for _ in call.args[1:]]  # pad_value
    attrs = call.attrs
    if call.op.name == "nn.pad" and not call.args[1:]:
        import dataclasses
        attrs = dataclasses.replace(attrs, pad_value=-1)
    return np.asarray(get_op(call.op.name).reference([index, *extra], attrs))


def _index_mapped_rev(call: Call, g: Expr, to: TypeOf) -> tuple:
    """d f(x) = scatter-add of g at the source of each output element (x's shape);
    d pad_value = sum of g over the padding."""
    x = call.args[0]
    src = source_index(call, to).reshape(-1)
    reads = np.nonzero(src >= 0)[0]
    g_flat = op("reshape", g, newshape=(-1,))
    upd = op("take", g_flat, Constant(reads.astype(np.int64)), axis=0)
    flat = op("reshape", x, newshape=(-1,))
    out = op("scatter_elements", zeros_like(flat), Constant(src[reads]), upd, axis=0,
             reduction="add")
    grads: list[Expr] = [op("reshape_like", out, x)]
    if call.args[1:]:
        pads = np.nonzero(src < 0)[0].astype(np.int64)
        grads.append(op("sum", op("take", g_flat, Constant(pads), axis=0))
                     if len(pads) else zeros_like(call.args[1]))
    return tuple(grads)


def _index_mapped_fwd(call: Call, t: tuple, to: TypeOf) -> Expr:
    """t f(x, ...) = f(tx, ...) (pad's fill value moves with its tangent)."""
    return op_with(call.op.name, call.attrs, *t)


INDEX_MAPPED = ("strided_slice", "tile", "repeat", "nn.pad", "nn.depth_to_space",
                "nn.space_to_depth", "layout_transform")

IDENTITY = ("copy", "device_copy", "on_device", "annotation.stop_fusion",
            "annotation.checkpoint", "annotation.compiler_begin", "annotation.compiler_end")
RESHAPING = ("reshape", "expand_dims", "squeeze", "nn.batch_flatten")

RULES: dict[str, tuple] = {
    **{n: (_identity_rev, _same) for n in IDENTITY},
    **{n: (_reshape_rev, _same) for n in RESHAPING},
    **{n: (_index_mapped_rev, _index_mapped_fwd) for n in INDEX_MAPPED},
    "reshape_like": (_reshape_like_rev, _same),
    "transpose": (_transpose_rev, _same),
    "reverse": (_reverse_rev, _same),
    "broadcast_to": (_broadcast_rev, _same),
    "broadcast_to_like": (_broadcast_like_rev, _same),
    "cast": (_cast_rev, _same),
    "cast_like": (_cast_like_rev, _same),
    "concatenate": (_concat_rev, _same),
    "stack": (_stack_rev, _same),
    "split": (_split_rev, _same),
    "where": (_where_rev, _where_fwd),
    "take": (_take_rev, _same),
    "gather": (_gather_rev, _same),
    "gather_nd": (_gather_nd_rev, _same),
    "zeros": (_zero_rev, _zero_fwd), "ones": (_zero_rev, _zero_fwd),
    "zeros_like": (_zero_rev, _zero_fwd), "ones_like": (_zero_rev, _zero_fwd),
    "full": (_full_rev, _same),
    "full_like": (_full_like_rev, _full_like_fwd),
}

_LATER = "not implemented yet"
NOT_DIFFERENTIABLE: dict[str, str] = {
    "shape_of": "integer result (a shape)", "ndarray_size": "integer result (a size)",
    "argsort": "integer result (indices)", "arange": f"{_LATER} (start/stop/step rule)",
    "one_hot": f"{_LATER} (on/off value rule; the indices are integers)",
    "sort": f"{_LATER} (a permutation of the input: scatter by argsort)",
    "topk": f"{_LATER} (values: scatter by the indices; the indices are integers)",
    "scatter_elements": f"{_LATER} (data: masked by the scattered positions; updates: a "
                        "gather)",
    "scatter_nd": f"{_LATER} (data: masked; updates: gather_nd)",
    "einsum": f"{_LATER} (each operand's adjoint is another einsum)",
    "reinterpret": "reinterprets the bits as another dtype: not a numeric function",
    "nonzero": "integer result (coordinates)",
    "unique": f"{_LATER} (values: a scatter-add by the inverse; the rest are integers)",
}
