"""Tensor transforms (TVM ``src/relay/op/tensor/transform.cc``): reshape, transpose, squeeze,
expand_dims, concatenate, stack, split, take, gather, strided_slice, broadcast_to, tile,
repeat, reverse, where, cast, init ops (zeros, ones, full, *_like, arange), shape_of,
ndarray_size, one_hot.

Invariants: relations compute shapes only from types and attributes (never values), and
propagate ``?``; references return fresh arrays (never views of their inputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import (
    dim_divisible,
    dim_eq,
    dim_known_or_sym,
    dim_lt,
    dim_map,
    dim_max,
    dim_min,
    dim_vars,
    dims_compatible,
    floordiv,
    is_any,
    is_symbolic,
    prove_le,
    shape_prod,
    shape_text,
)
from relay_ref.ir.types import ANY, TensorType, TupleType, Type
from relay_ref.ops.registry import (
    NOT_YET,
    AttrError,
    OpRuntimeError,
    RelationError,
    register_op,
)
from relay_ref.ops.relations import (
    DTYPES,
    as_dtype,
    broadcast_shapes,
    check_arity,
    check_dtype,
    describe,
    identity_rel,
    is_float,
    is_int,
    normalize_axis,
    output_is_input,
    tensor_args,
    tuple_of_tensors,
)

Array = np.ndarray


def fresh(x: object, dtype: object = None) -> Array:
    """A new array (never a view of an input) of ``dtype`` (default: x's)."""
    arr = np.asarray(x)
    return np.array(arr, dtype=dtype or arr.dtype, copy=True)


def _runtime(fn: object) -> object:
    """Wrap a reference: shape errors found at run time become ``OpRuntimeError``."""
    def ref(args: list, attrs: object) -> object:
        try:
            return fn(args, attrs)  # type: ignore[operator]
        except RelationError as err:
            raise OpRuntimeError(str(err)) from None
    ref.__doc__ = fn.__doc__  # type: ignore[attr-defined]
    return ref


def _int_indices(op: str, t: TensorType, what: str = "indices") -> None:
    if not is_int(t.dtype):
        raise RelationError(f"{op}: {what} must have an integer dtype, found {t.dtype}")


# -- reshape ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ReshapeAttrs:
    """``newshape`` with TVM's special values: 0 copies the input dimension (unless
    ``allowzero``), -1 infers one dimension, -2 copies all remaining dimensions, -3 merges
    two consecutive dimensions, -4 splits one dimension into the next two values."""

    newshape: tuple[int, ...]
    allowzero: bool = False

    def __post_init__(self) -> None:
        if any(v < -4 for v in self.newshape):
            raise AttrError(f"newshape values must be >= -4, found {self.newshape}",
                            "newshape")


def reshape_shape(op: str, ishape: tuple, newshape: tuple[int, ...],
                  allowzero: bool = False) -> tuple:
    """The output shape of ``reshape(data: ishape, newshape)``; ``RelationError`` on
    inconsistent codes or element counts. ``?`` input dims make inferred dims ``?``."""
    out: list = []
    used_in: set[int] = set()  # input dims copied verbatim (0, -2, -3, -4) ...
    used_out: set[int] = set()  # ... and the output dims they produced
    src = 0
    infer = -1
    i = 0
    n_in = len(ishape)

    def need(k: int, code: int) -> None:
        if src + k > n_in:
            raise RelationError(f"{op}: newshape {tuple(newshape)} uses more dimensions "
                                f"than the input {shape_text(ishape)} has (code {code})")

    while i < len(newshape):
        v = newshape[i]
        if v > 0:
            out.append(v)
            src += 1
        elif v == 0:
            if allowzero:
                out.append(0)
            else:
                need(1, 0)
                used_in.add(src)
                used_out.add(len(out))
                out.append(ishape[src])
            src += 1
        elif v == -1:
            if infer >= 0:
                raise RelationError(f"{op}: newshape {tuple(newshape)} has more than one -1")
            infer = len(out)
            out.append(1)
            src += 1
        elif v == -2:
            for k in range(src, n_in):
                used_in.add(k)
                used_out.add(len(out))
                out.append(ishape[k])
            src = n_in
        elif v == -3:
            need(2, -3)
            used_in.update((src, src + 1))
            used_out.add(len(out))
            out.append(dim_map(lambda a, b: a * b, ishape[src], ishape[src + 1]))
            src += 2
        else:  # -4
            if i + 2 >= len(newshape):
                raise RelationError(f"{op}: -4 in newshape must be followed by two values")
            need(1, -4)
            d = ishape[src]
            d0, d1 = newshape[i + 1], newshape[i + 2]
            if d0 == -1 and d1 == -1:
                raise RelationError(f"{op}: -4 split cannot infer both parts")
            if d0 < -1 or d1 < -1 or d0 == 0 or d1 == 0:
                raise RelationError(f"{op}: -4 split parts must be positive or -1")
            if d0 == -1:
                d0 = dim_map(lambda d, p=d1: d // p, d)
            if d1 == -1:
                d1 = dim_map(lambda d, p=d0: d // p, d)  # type: ignore[operator]
            if not is_any(d) and not is_any(d0) and not is_any(d1) and not dims_compatible(
                    d0 * d1, d):
                raise RelationError(f"{op}: cannot split dimension {d} into {d0} x {d1}")
            used_in.add(src)
            used_out.update((len(out), len(out) + 1))
            out.extend([d0, d1])
            src += 1
            i += 2
        i += 1
    total_in = shape_prod(ishape)
    if infer >= 0:
        # as TVM: dims copied verbatim cancel out, so `?` there does not spoil the -1
        free_in = shape_prod([d for k, d in enumerate(ishape) if k not in used_in])
        rest = shape_prod([d for k, d in enumerate(out) if k not in used_out and k != infer])
        if is_any(free_in) or is_any(rest):
            out[infer] = ANY
        elif rest == 0 or dim_divisible(free_in, rest) is False:
            raise RelationError(f"{op}: cannot reshape {shape_text(ishape)} to "
                                f"{tuple(newshape)} ({total_in} elements)")
        else:
            # Shape-Rel: the -1 is the exact quotient (floordiv of an expression when the
            # division is not provably exact: the element counts are checked at run time)
            out[infer] = floordiv(free_in, rest)  # type: ignore[arg-type]
    total_out = shape_prod(out)
    if not is_any(total_in) and not is_any(total_out) and not dims_compatible(total_in,
                                                                               total_out):
        raise RelationError(f"{op}: cannot reshape {shape_text(ishape)} ({total_in} "
                            f"elements) to {shape_text(tuple(out))} ({total_out} elements)")
    return tuple(out)


def _reshape_rel(arg_types: list[Type], attrs: ReshapeAttrs) -> object:
    args = tensor_args("reshape", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    return TensorType(reshape_shape("reshape", data.shape, attrs.newshape, attrs.allowzero),
                      data.dtype)


def _reshape_ref(args: list, attrs: ReshapeAttrs) -> Array:
    x = np.asarray(args[0])
    shape = reshape_shape("reshape", x.shape, attrs.newshape, attrs.allowzero)
    return fresh(x).reshape(shape)


register_op("reshape", attrs=ReshapeAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=_reshape_rel, reference=_runtime(_reshape_ref),
            doc="Reshape to ``newshape`` (row-major), with TVM's special codes: 0 copy a "
                "dimension, -1 infer, -2 copy the rest, -3 merge two, -4 split one in two.")


@dataclass(frozen=True, slots=True)
class ReshapeLikeAttrs:
    """Replace data's dims [lhs_begin, lhs_end) by shape_like's dims [rhs_begin, rhs_end)."""

    lhs_begin: int = 0
    lhs_end: int | None = None
    rhs_begin: int = 0
    rhs_end: int | None = None


def _span(op: str, ndim: int, begin: int, end: int | None) -> tuple[int, int]:
    b = begin + ndim if begin < 0 else begin
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise RelationError(f"{op}: range [{begin}, {end}) is invalid for rank {ndim}")
    return b, e


def _reshape_like_shape(op: str, data: tuple, like: tuple, attrs: ReshapeLikeAttrs) -> tuple:
    lb, le = _span(op, len(data), attrs.lhs_begin, attrs.lhs_end)
    rb, re = _span(op, len(like), attrs.rhs_begin, attrs.rhs_end)
    out = tuple(data[:lb]) + tuple(like[rb:re]) + tuple(data[le:])
    a, b = shape_prod(data), shape_prod(out)
    if not dims_compatible(a, b):
        raise RelationError(f"{op}: cannot reshape {shape_text(data)} ({a} elements) to "
                            f"{shape_text(out)} ({b} elements)")
    return out


def _reshape_like_rel(arg_types: list[Type], attrs: ReshapeLikeAttrs) -> object:
    args = tensor_args("reshape_like", arg_types, 2, ("data", "shape_like"))
    if args is NOT_YET:
        return NOT_YET
    data, like = args
    return TensorType(_reshape_like_shape("reshape_like", data.shape, like.shape, attrs),
                      data.dtype)


register_op("reshape_like", attrs=ReshapeLikeAttrs, num_inputs=2,
            arg_names=("data", "shape_like"), support_level=3, relation=_reshape_like_rel,
            reference=_runtime(lambda args, attrs: fresh(args[0]).reshape(
                _reshape_like_shape("reshape_like", np.shape(args[0]), np.shape(args[1]),
                                    attrs))),
            doc="Reshape ``data`` to the shape of ``shape_like`` (or a range of its dims).")


# -- transpose, squeeze, expand_dims -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TransposeAttrs:
    """``axes``: a permutation (negative values allowed); None reverses the axes."""

    axes: tuple[int, ...] | None = None


def _perm(op: str, ndim: int, axes: tuple[int, ...] | None) -> list[int]:
    if axes is None or len(axes) == 0:
        return list(range(ndim))[::-1]
    if len(axes) != ndim:
        raise RelationError(f"{op}: axes {tuple(axes)} do not match rank {ndim}")
    perm = [normalize_axis(op, a, ndim) for a in axes]
    if sorted(perm) != list(range(ndim)):
        raise RelationError(f"{op}: axes {tuple(axes)} are not a permutation")
    return perm


def _transpose_rel(arg_types: list[Type], attrs: TransposeAttrs) -> object:
    args = tensor_args("transpose", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    perm = _perm("transpose", data.ndim, attrs.axes)
    return TensorType(tuple(data.shape[p] for p in perm), data.dtype)


register_op("transpose", attrs=TransposeAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=_transpose_rel,
            reference=_runtime(lambda args, attrs: fresh(np.transpose(
                args[0], _perm("transpose", np.ndim(args[0]), attrs.axes)))),
            doc="Permute the axes (default: reverse them).")


@dataclass(frozen=True, slots=True)
class SqueezeAttrs:
    """``axis``: dimensions of size 1 to remove; None removes every size-1 dimension."""

    axis: tuple[int, ...] | None = None


def _squeeze_shape(op: str, shape: tuple, axis: tuple[int, ...] | None) -> tuple:
    if axis is None:
        for i, d in enumerate(shape):
            # Shape-Rel (as TVM's SqueezeRel for non-constant dims): whether an expression
            # is squeezed depends on its value, so it must provably differ from 1
            if is_symbolic(d) and dim_eq(d, 1) is not False:
                raise RelationError(f"{op}: axis must be given: dimension {i} ({d}) may be 1")
        return tuple(d for d in shape if d != 1)
    drop = {normalize_axis(op, a, len(shape)) for a in axis}
    for k in drop:
        if not dims_compatible(shape[k], 1):
            raise RelationError(f"{op}: cannot squeeze axis {k} of size {shape[k]}")
    return tuple(d for i, d in enumerate(shape) if i not in drop)


def _squeeze_rel(arg_types: list[Type], attrs: SqueezeAttrs) -> object:
    args = tensor_args("squeeze", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    return TensorType(_squeeze_shape("squeeze", args[0].shape, attrs.axis), args[0].dtype)


register_op("squeeze", attrs=SqueezeAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=_squeeze_rel,
            reference=_runtime(lambda args, attrs: fresh(args[0]).reshape(
                _squeeze_shape("squeeze", np.shape(args[0]), attrs.axis))),
            doc="Remove dimensions of size 1 (``?`` dims are kept when axis is None).")


@dataclass(frozen=True, slots=True)
class ExpandDimsAttrs:
    """Insert ``num_newaxis`` dims of size 1 at ``axis`` (in [-ndim-1, ndim])."""

    axis: int
    num_newaxis: int = 1

    def __post_init__(self) -> None:
        if self.num_newaxis < 0:
            raise AttrError("num_newaxis must be >= 0", "num_newaxis")


def _expand_shape(op: str, shape: tuple, attrs: ExpandDimsAttrs) -> tuple:
    ndim = len(shape)
    axis = normalize_axis(op, attrs.axis, ndim + 1)
    return tuple(shape[:axis]) + (1,) * attrs.num_newaxis + tuple(shape[axis:])


def _expand_dims_rel(arg_types: list[Type], attrs: ExpandDimsAttrs) -> object:
    args = tensor_args("expand_dims", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    return TensorType(_expand_shape("expand_dims", args[0].shape, attrs), args[0].dtype)


register_op("expand_dims", attrs=ExpandDimsAttrs, num_inputs=1, arg_names=("data",),
            support_level=1, relation=_expand_dims_rel,
            reference=_runtime(lambda args, attrs: fresh(args[0]).reshape(
                _expand_shape("expand_dims", np.shape(args[0]), attrs))),
            doc="Insert ``num_newaxis`` unit dimensions at ``axis``.")


# -- concatenate, stack, split -----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConcatenateAttrs:
    axis: int = 0


def _concatenate_rel(arg_types: list[Type], attrs: ConcatenateAttrs) -> object:
    op = "concatenate"
    check_arity(op, arg_types, 1)
    fields = tuple_of_tensors(op, arg_types[0], "input")
    if fields is NOT_YET:
        return NOT_YET
    if not fields:
        raise RelationError(f"{op}: the input tuple is empty")
    first = fields[0]
    if first.ndim == 0:
        raise RelationError(f"{op}: cannot concatenate scalars")
    axis = normalize_axis(op, attrs.axis, first.ndim)
    out = list(first.shape)
    total: object = first.shape[axis]
    for i, f in enumerate(fields[1:], 1):
        if f.dtype != first.dtype:
            raise RelationError(f"{op}: dtypes differ: {first.dtype} (field 0) vs {f.dtype} "
                                f"(field {i})")
        if f.ndim != first.ndim:
            raise RelationError(f"{op}: field {i} has rank {f.ndim}, field 0 has rank "
                                f"{first.ndim}")
        for k in range(first.ndim):
            if k == axis:
                continue
            if not dims_compatible(out[k], f.shape[k]):
                raise RelationError(f"{op}: field {i} has shape {shape_text(f.shape)}, "
                                    f"incompatible with {shape_text(first.shape)} outside "
                                    f"axis {attrs.axis}")
            out[k] = dim_known_or_sym(out[k], f.shape[k])
        total = dim_map(lambda a, b: a + b, total, f.shape[axis])
    out[axis] = total
    return TensorType(tuple(out), first.dtype)


def _concatenate_ref(args: list, attrs: ConcatenateAttrs) -> Array:
    parts = [np.asarray(a) for a in args[0]]
    try:
        return np.concatenate(parts, axis=attrs.axis)
    except (ValueError, np.exceptions.AxisError) as err:
        raise OpRuntimeError(f"concatenate: {err}") from None


register_op("concatenate", attrs=ConcatenateAttrs, num_inputs=1, arg_names=("data",),
            support_level=1, relation=_concatenate_rel, reference=_concatenate_ref,
            doc="Join a *tuple* of tensors along ``axis``; other dims must match.")


@dataclass(frozen=True, slots=True)
class StackAttrs:
    axis: int = 0


def _stack_rel(arg_types: list[Type], attrs: StackAttrs) -> object:
    op = "stack"
    check_arity(op, arg_types, 1)
    fields = tuple_of_tensors(op, arg_types[0], "input")
    if fields is NOT_YET:
        return NOT_YET
    if not fields:
        raise RelationError(f"{op}: the input tuple is empty")
    first = fields[0]
    shape = list(first.shape)
    for i, f in enumerate(fields[1:], 1):
        if f.dtype != first.dtype:
            raise RelationError(f"{op}: dtypes differ: {first.dtype} (field 0) vs {f.dtype} "
                                f"(field {i})")
        if f.ndim != first.ndim or not all(
                dims_compatible(a, b) for a, b in zip(shape, f.shape, strict=True)):
            raise RelationError(f"{op}: field {i} has shape {shape_text(f.shape)}, field 0 "
                                f"has {shape_text(first.shape)}")
        shape = [dim_known_or_sym(a, b) for a, b in zip(shape, f.shape, strict=True)]
    axis = normalize_axis(op, attrs.axis, first.ndim + 1)
    shape.insert(axis, len(fields))
    return TensorType(tuple(shape), first.dtype)


def _stack_ref(args: list, attrs: StackAttrs) -> Array:
    try:
        return np.stack([np.asarray(a) for a in args[0]], axis=attrs.axis)
    except (ValueError, np.exceptions.AxisError) as err:
        raise OpRuntimeError(f"stack: {err}") from None


register_op("stack", attrs=StackAttrs, num_inputs=1, arg_names=("data",), support_level=3,
            relation=_stack_rel, reference=_stack_ref,
            doc="Stack a *tuple* of equally shaped tensors along a new axis.")


@dataclass(frozen=True, slots=True)
class SplitAttrs:
    """``indices_or_sections``: a number of equal sections, or ascending split indices."""

    indices_or_sections: int | tuple[int, ...]
    axis: int = 0

    def __post_init__(self) -> None:
        ios = self.indices_or_sections
        if isinstance(ios, int) and ios < 1:
            raise AttrError("the number of sections must be >= 1", "indices_or_sections")


def _split_sizes(op: str, d: object, ios: int | tuple[int, ...]) -> list:
    if isinstance(ios, int):
        if dim_divisible(d, ios) is False:
            raise RelationError(f"{op}: dimension {d} is not divisible into {ios} sections")
        return [dim_map(lambda d: d // ios, d)] * ios
    sizes = []
    begin = 0
    for idx in ios:
        if idx <= begin and not (begin == 0 and idx == 0 and not sizes):
            raise RelationError(f"{op}: indices {tuple(ios)} must be ascending")
        if dim_lt(d, idx) is True:
            raise RelationError(f"{op}: index {idx} is beyond dimension {d}")
        sizes.append(idx - begin)
        begin = idx
    sizes.append(dim_map(lambda d: d - begin, d))
    return sizes


def _split_rel(arg_types: list[Type], attrs: SplitAttrs) -> object:
    op = "split"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    if data.ndim == 0:
        raise RelationError(f"{op}: cannot split a scalar")
    axis = normalize_axis(op, attrs.axis, data.ndim)
    fields = []
    for size in _split_sizes(op, data.shape[axis], attrs.indices_or_sections):
        shape = list(data.shape)
        shape[axis] = size
        fields.append(TensorType(tuple(shape), data.dtype))
    return TupleType(tuple(fields))


def _split_ref(args: list, attrs: SplitAttrs) -> tuple[Array, ...]:
    x = np.asarray(args[0])
    axis = normalize_axis("split", attrs.axis, x.ndim)
    sizes = _split_sizes("split", x.shape[axis], attrs.indices_or_sections)
    bounds = np.cumsum([0] + sizes)
    return tuple(fresh(np.take(x, np.arange(bounds[i], bounds[i + 1]), axis=axis))
                 for i in range(len(sizes)))


register_op("split", attrs=SplitAttrs, num_inputs=1, arg_names=("data",), support_level=3,
            relation=_split_rel, reference=_runtime(_split_ref),
            doc="Split along ``axis`` into equal sections or at the given indices; the "
                "result is a tuple.")


# -- take, gather, strided_slice -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TakeAttrs:
    """``axis=None`` takes from the flattened data; ``mode``: clip (clamp into range),
    wrap (modulo), fast (no check; out of range is a run-time error here)."""

    batch_dims: int = 0
    axis: int | None = None
    mode: str = "clip"

    def __post_init__(self) -> None:
        if self.mode not in ("clip", "wrap", "fast"):
            raise AttrError(f"mode must be clip, wrap or fast, found {self.mode!r}", "mode")


def _take_geometry(op: str, dshape: tuple, ishape: tuple, attrs: TakeAttrs
                   ) -> tuple[int | None, int, tuple]:
    """(axis, batch_dims, output shape)."""
    if attrs.axis is None:
        return None, 0, tuple(ishape)
    axis = normalize_axis(op, attrs.axis, len(dshape))
    b = attrs.batch_dims + len(ishape) if attrs.batch_dims < 0 else attrs.batch_dims
    if not 0 <= b <= len(ishape):
        raise RelationError(f"{op}: batch_dims {attrs.batch_dims} is out of range for "
                            f"indices of rank {len(ishape)}")
    if b > axis:
        raise RelationError(f"{op}: batch_dims ({b}) must be <= axis ({axis})")
    for k in range(b):
        if not dims_compatible(dshape[k], ishape[k]):
            raise RelationError(f"{op}: batch dimension {k} differs: {dshape[k]} vs "
                                f"{ishape[k]}")
    out = tuple(dshape[:axis]) + tuple(ishape[b:]) + tuple(dshape[axis + 1:])
    return axis, b, out


def _take_rel(arg_types: list[Type], attrs: TakeAttrs) -> object:
    op = "take"
    args = tensor_args(op, arg_types, 2, ("data", "indices"))
    if args is NOT_YET:
        return NOT_YET
    data, indices = args
    _int_indices(op, indices)
    _, _, out = _take_geometry(op, data.shape, indices.shape, attrs)
    return TensorType(out, data.dtype)


def _fix_indices(op: str, idx: Array, n: int, mode: str) -> Array:
    idx = idx.astype(np.int64)
    if mode == "clip":
        return np.clip(idx, 0, max(n - 1, 0)) if n else idx
    if mode == "wrap":
        if n == 0:
            raise OpRuntimeError(f"{op}: cannot take from an empty dimension")
        return np.mod(idx, n)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise OpRuntimeError(f"{op}: index out of range [0, {n}) (mode=fast)")
    return np.where(idx < 0, idx + n, idx)


def _take_ref(args: list, attrs: TakeAttrs) -> Array:
    op = "take"
    data, indices = np.asarray(args[0]), np.asarray(args[1])
    axis, b, out_shape = _take_geometry(op, data.shape, indices.shape, attrs)
    if axis is None:
        flat = data.reshape(-1)
        if flat.size == 0 and indices.size:
            raise OpRuntimeError(f"{op}: cannot take from an empty tensor")
        return fresh(flat[_fix_indices(op, indices, flat.size, attrs.mode)])
    n = data.shape[axis]
    if n == 0 and indices.size:
        raise OpRuntimeError(f"{op}: cannot take from an empty dimension")
    idx = _fix_indices(op, indices, n, attrs.mode)
    bsz = int(np.prod(data.shape[:b], dtype=np.int64))
    pre = int(np.prod(data.shape[b:axis], dtype=np.int64))
    post = data.shape[axis + 1:]
    d = data.reshape((bsz, pre, n) + post)
    i = idx.reshape(bsz, -1) if idx.size or bsz else idx.reshape(bsz, 0)
    bi = np.arange(bsz)[:, None, None]
    pi = np.arange(pre)[None, :, None]
    res = d[bi, pi, i[:, None, :]]
    return fresh(res.reshape(out_shape))


register_op("take", attrs=TakeAttrs, num_inputs=2, arg_names=("data", "indices"),
            support_level=3, relation=_take_rel, reference=_runtime(_take_ref),
            doc="Gather slices of ``data`` along ``axis`` at ``indices`` (output: data.shape"
                "[:axis] + indices.shape[batch_dims:] + data.shape[axis+1:]).")


@dataclass(frozen=True, slots=True)
class GatherAttrs:
    axis: int


def _gather_rel(arg_types: list[Type], attrs: GatherAttrs) -> object:
    op = "gather"
    args = tensor_args(op, arg_types, 2, ("data", "indices"))
    if args is NOT_YET:
        return NOT_YET
    data, indices = args
    _int_indices(op, indices)
    if data.ndim != indices.ndim:
        raise RelationError(f"{op}: data and indices must have the same rank, found "
                            f"{data.ndim} and {indices.ndim}")
    normalize_axis(op, attrs.axis, data.ndim)
    return TensorType(indices.shape, data.dtype)


def _gather_ref(args: list, attrs: GatherAttrs) -> Array:
    data, indices = np.asarray(args[0]), np.asarray(args[1])
    axis = normalize_axis("gather", attrs.axis, data.ndim)
    n = data.shape[axis]
    idx = indices.astype(np.int64)
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise OpRuntimeError(f"gather: index out of range [0, {n})")
    idx = np.where(idx < 0, idx + n, idx)
    for k in range(data.ndim):
        if k != axis and idx.shape[k] > data.shape[k]:
            raise OpRuntimeError("gather: indices are larger than data outside the axis")
    sub = data[tuple(slice(0, idx.shape[k]) if k != axis else slice(None)
                     for k in range(data.ndim))]
    return fresh(np.take_along_axis(sub, idx, axis=axis))


register_op("gather", attrs=GatherAttrs, num_inputs=2, arg_names=("data", "indices"),
            support_level=3, relation=_gather_rel, reference=_runtime(_gather_ref),
            doc="``out[i][j][k] = data[i][indices[i][j][k]][k]`` for axis=1 (ONNX "
                "GatherElements).")


@dataclass(frozen=True, slots=True)
class StridedSliceAttrs:
    """``begin``/``end``/``strides`` per axis (missing trailing axes: whole range, stride
    1). ``slice_mode="size"``: ``end`` holds sizes (-1 = to the end) and strides are 1.
    ``axes``: the axes the lists refer to (default: the first len(begin) axes)."""

    begin: tuple[int, ...]
    end: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    slice_mode: str = "end"
    axes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.slice_mode not in ("end", "size"):
            raise AttrError(f"slice_mode must be end or size, found {self.slice_mode!r}",
                            "slice_mode")
        if self.strides is not None and 0 in self.strides:
            raise AttrError("strides must not be 0", "strides")


#: the largest int64: ONNX and PyTorch write "to the end" as this, and a dimension (a shape
#: variable included) never exceeds it, so ``min(end, n)`` is ``n`` (TVM's analyzer knows
#: the same from the int64 type of its shape variables).
_INT64_MAX = 2**63 - 1


def _dmin(a: object, b: object) -> object:
    """``min`` of two dimensions (ints or expressions, never ``?``): decided when provable
    (either way round) with every shape variable in the int64 range, else an opaque ``min``
    (Shape-Rel)."""
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    bounds = _int64_bounds(a, b)
    if prove_le(a, b, bounds) is True:  # type: ignore[arg-type]
        return a
    if prove_le(b, a, bounds) is True:  # type: ignore[arg-type]
        return b
    return dim_min(a, b)  # type: ignore[arg-type]


def _dmax(a: object, b: object) -> object:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    bounds = _int64_bounds(a, b)
    if prove_le(a, b, bounds) is True:  # type: ignore[arg-type]
        return b
    if prove_le(b, a, bounds) is True:  # type: ignore[arg-type]
        return a
    return dim_max(a, b)  # type: ignore[arg-type]


def _int64_bounds(*dims: object) -> dict[str, tuple[int, int]]:
    names: set[str] = set()
    for d in dims:
        names |= dim_vars(d)
    return {v: (0, _INT64_MAX) for v in names}


def _slices(op: str, shape: tuple, attrs: StridedSliceAttrs) -> list[tuple]:
    """Per axis (begin, end, stride, out_dim) with canonical (clamped) begin/end; for an
    unknown dim begin/end are None and out_dim is ``?``. For a symbolic dim the same
    arithmetic runs on expressions (Shape-Rel): the clamps are ``min``/``max``, decided
    where provable, and the length is exact (``x[1:]`` of ``n`` is ``max(n - 1, 0)``)."""
    ndim = len(shape)
    axes = list(range(len(attrs.begin))) if attrs.axes is None else [
        normalize_axis(op, a, ndim) for a in attrs.axes]
    if len(axes) > ndim:
        raise RelationError(f"{op}: begin has {len(axes)} values but the data has rank "
                            f"{ndim}")
    if attrs.axes is not None and len(attrs.begin) != len(axes):
        raise RelationError(f"{op}: begin and axes have different lengths")
    out = [(0, d, 1, d) for d in shape]
    strides = attrs.strides or ()
    for j, ax in enumerate(axes):
        d = shape[ax]
        stride = 1
        if attrs.slice_mode == "end" and strides:
            stride = strides[j] if j < len(strides) else (strides[0] if len(strides) == 1
                                                          else 1)
        b = attrs.begin[j]
        e_raw = attrs.end[j] if j < len(attrs.end) else None
        if is_any(d):
            out[ax] = (None, None, stride, ANY)
            continue
        if attrs.slice_mode == "size":
            bb = b + d if b < 0 else b
            e = d if e_raw is None or e_raw < 0 else bb + e_raw
            e_raw = e
        lo, hi = (0, d) if stride > 0 else (-1, d - 1)
        bb = b + d if b < 0 else b
        bb = _dmin(_dmax(bb, lo), hi)
        if e_raw is None:
            ee = d if stride > 0 else -1
        else:
            ee = e_raw + d if (attrs.slice_mode == "end" and e_raw < 0) else e_raw
            ee = _dmin(_dmax(ee, lo), hi)
        span = -floordiv(ee - bb, -stride) if stride > 0 else -floordiv(bb - ee, stride)
        n = _dmax(0, span)
        if is_symbolic(d) and stride > 0 and attrs.slice_mode == "end":
            n = floordiv(_unit_len(d, b, e_raw) + stride - 1, stride)  # simpler, same value
        out[ax] = (bb, ee, stride, n)
    return out


def _unit_len(d: object, b: int, e: int | None) -> object:
    """The length of ``[b:e]`` (stride 1, NumPy's clamping) of a symbolic dimension ``d``,
    in closed form: the generic ``max(0, min(e, d) - min(b, d))`` is the same value, but
    interval proofs lose the link between the two ``d``; these forms keep it (each was
    derived case by case on the signs of ``b`` and ``e``, and the property tests substitute
    values to check them)."""
    to_end = e is None or e >= _INT64_MAX
    if b >= 0:
        if to_end:
            return _dmax(d - b, 0)  # type: ignore[operator]
        if e >= 0:
            return 0 if e <= b else _dmin(e - b, _dmax(d - b, 0))  # type: ignore[operator]
        return _dmax(d + e - b, 0)  # type: ignore[operator]
    if to_end:
        return _dmin(-b, d)
    if e >= 0:
        return _dmax(0, _dmin(_dmin(e - b - d, -b), _dmin(e, d)))  # type: ignore[operator]
    return _dmax(0, _dmin(e - b, d + e))  # type: ignore[operator]


def _strided_slice_rel(arg_types: list[Type], attrs: StridedSliceAttrs) -> object:
    op = "strided_slice"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    return TensorType(tuple(s[3] for s in _slices(op, data.shape, attrs)), data.dtype)


def strided_slice_ref(args: list, attrs: StridedSliceAttrs) -> Array:
    """The ``strided_slice`` reference; shared by ``dyn.strided_slice``."""
    x = np.asarray(args[0])
    index = []
    for b, e, s, n in _slices("strided_slice", x.shape, attrs):
        if n == 0:  # canonical begin may be -1 ("before 0"), which Python reads as "last"
            index.append(slice(0, 0))
        else:
            index.append(slice(b, None if e == -1 and s < 0 else e, s))
    return fresh(x[tuple(index)])


register_op("strided_slice", attrs=StridedSliceAttrs, num_inputs=1, arg_names=("data",),
            support_level=4, relation=_strided_slice_rel,
            reference=_runtime(strided_slice_ref),
            doc="NumPy-style slicing ``data[begin:end:strides]`` per axis; out-of-range "
                "bounds are clamped.")


# -- gather_nd -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GatherNDAttrs:
    """``indices`` has shape (M, B..., Y...): its first axis holds the M coordinates.
    ``index_rank``: M, needed when indices' first dimension is ``?``."""

    batch_dims: int = 0
    index_rank: int | None = None

    def __post_init__(self) -> None:
        if self.batch_dims < 0:
            raise AttrError(f"batch_dims must be >= 0, found {self.batch_dims}",
                            "batch_dims")
        if self.index_rank is not None and self.index_rank < 0:
            raise AttrError(f"index_rank must be >= 0, found {self.index_rank}",
                            "index_rank")


def _gather_nd_rel(arg_types: list[Type], attrs: GatherNDAttrs) -> object:
    op = "gather_nd"
    args = tensor_args(op, arg_types, 2, ("data", "indices"))
    if args is NOT_YET:
        return NOT_YET
    data, indices = args
    if not is_int(indices.dtype):
        raise RelationError(f"{op}: indices must have an integer dtype, found "
                            f"{indices.dtype}")
    if indices.ndim < 1:
        raise RelationError(f"{op}: indices must have rank >= 1, found a scalar")
    m = indices.shape[0]
    if attrs.index_rank is not None:
        if not dims_compatible(m, attrs.index_rank):
            raise RelationError(f"{op}: index_rank={attrs.index_rank} but indices' first "
                                f"dimension is {m}")
        m = attrs.index_rank
    if not isinstance(m, int):  # ? or a shape expression: the rank must be known
        raise RelationError(f"{op}: indices' first dimension is unknown; give index_rank")
    b = attrs.batch_dims
    if m + b > data.ndim:
        raise RelationError(f"{op}: {m} coordinates plus batch_dims={b} exceed data's rank "
                            f"{data.ndim}")
    if indices.ndim - 1 < b:
        raise RelationError(f"{op}: indices {shape_text(indices.shape)} have fewer than "
                            f"batch_dims={b} batch axes")
    for j in range(b):
        if not dims_compatible(indices.shape[1 + j], data.shape[j]):
            raise RelationError(f"{op}: batch axis {j} differs: data {data.shape[j]} vs "
                                f"indices {indices.shape[1 + j]}")
    return TensorType(tuple(indices.shape[1:]) + tuple(data.shape[m + b:]), data.dtype)


def _gather_nd_ref(args: list, attrs: GatherNDAttrs) -> Array:
    data, ind = np.asarray(args[0]), np.asarray(args[1]).astype(np.int64)
    m, b = ind.shape[0], attrs.batch_dims
    rest = ind.shape[1:]
    keys: list[Array] = []
    for j in range(b):
        shape = [1] * len(rest)
        shape[j] = data.shape[j]
        keys.append(np.arange(data.shape[j]).reshape(shape))
    for i in range(m):
        d = data.shape[b + i]
        if ind[i].size and (ind[i].min() < -d or ind[i].max() >= d):
            raise OpRuntimeError(f"gather_nd: index out of range for axis {b + i} "
                                 f"(size {d})")
        keys.append(ind[i])
    if not keys:
        return np.broadcast_to(data, rest + data.shape).copy()
    return np.array(data[tuple(keys)], dtype=data.dtype)


register_op("gather_nd", attrs=GatherNDAttrs, num_inputs=2, arg_names=("data", "indices"),
            support_level=3, relation=_gather_nd_rel, reference=_gather_nd_ref,
            doc="out[b..., y...] = data[b..., indices[0, b..., y...], ..., "
                "indices[M-1, b..., y...], ...]; output shape indices.shape[1:] + "
                "data.shape[M + batch_dims:]. Negative indices count from the end.")


# -- broadcast_to, tile, repeat, reverse, where --------------------------------------------

@dataclass(frozen=True, slots=True)
class BroadcastToAttrs:
    shape: tuple[int, ...]


def _broadcast_to_shape(op: str, data: tuple, target: tuple) -> tuple:
    out = broadcast_shapes(op, data, target)
    if len(out) != len(target) or not all(dims_compatible(a, b)
                                          for a, b in zip(out, target, strict=True)):
        raise RelationError(f"{op}: cannot broadcast {shape_text(data)} to "
                            f"{shape_text(target)}")
    return tuple(target)


def _broadcast_to_rel(arg_types: list[Type], attrs: BroadcastToAttrs) -> object:
    args = tensor_args("broadcast_to", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    return TensorType(_broadcast_to_shape("broadcast_to", args[0].shape, attrs.shape),
                      args[0].dtype)


def _broadcast_to_like_rel(arg_types: list[Type], attrs: object) -> object:
    """TVM's ``BroadCastToLikeRel``: the result is ``broadcast_type``'s type (``data`` must
    broadcast to it, with the same dtype). Bidirectional (``output_is_input`` on argument
    1): a known result fixes ``broadcast_type``."""
    args = tensor_args("broadcast_to_like", arg_types, 2, ("data", "broadcast_type"))
    if args is NOT_YET:
        return NOT_YET
    if args[0].dtype != args[1].dtype:
        raise RelationError(f"broadcast_to_like: dtypes differ: {args[0].dtype} (data) vs "
                            f"{args[1].dtype} (broadcast_type)")
    return TensorType(_broadcast_to_shape("broadcast_to_like", args[0].shape,
                                          args[1].shape), args[0].dtype)


register_op("broadcast_to", attrs=BroadcastToAttrs, num_inputs=1, arg_names=("data",),
            support_level=4, relation=_broadcast_to_rel,
            reference=_runtime(lambda args, attrs: fresh(np.broadcast_to(
                args[0], _broadcast_to_shape("broadcast_to", np.shape(args[0]),
                                             attrs.shape)))),
            doc="Broadcast ``data`` to ``shape`` (NumPy rules).")
register_op("broadcast_to_like", num_inputs=2, arg_names=("data", "broadcast_type"),
            support_level=10, relation=_broadcast_to_like_rel,
            predicate=output_is_input(_broadcast_to_like_rel, 1), relation_name="BroadCastToLike",
            reference=_runtime(lambda args, attrs: fresh(np.broadcast_to(
                args[0], _broadcast_to_shape("broadcast_to_like", np.shape(args[0]),
                                             np.shape(args[1]))))),
            doc="Broadcast ``data`` to the shape of ``broadcast_type``.")


@dataclass(frozen=True, slots=True)
class TileAttrs:
    reps: tuple[int, ...]

    def __post_init__(self) -> None:
        if any(r < 0 for r in self.reps):
            raise AttrError("reps must be >= 0", "reps")


def _tile_rel(arg_types: list[Type], attrs: TileAttrs) -> object:
    args = tensor_args("tile", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    shape, reps = tuple(args[0].shape), tuple(attrs.reps)
    n = max(len(shape), len(reps))
    shape = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    out = tuple(dim_map(lambda d, r=r: d * r, d) for d, r in zip(shape, reps, strict=True))
    return TensorType(out, args[0].dtype)


register_op("tile", attrs=TileAttrs, num_inputs=1, arg_names=("data",), support_level=3,
            relation=_tile_rel,
            reference=lambda args, attrs: fresh(np.tile(args[0], attrs.reps)),
            doc="Repeat the whole tensor ``reps`` times per axis (``numpy.tile``).")


@dataclass(frozen=True, slots=True)
class RepeatAttrs:
    repeats: int
    axis: int

    def __post_init__(self) -> None:
        if self.repeats < 1:
            raise AttrError("repeats must be >= 1", "repeats")


def _repeat_rel(arg_types: list[Type], attrs: RepeatAttrs) -> object:
    args = tensor_args("repeat", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    axis = normalize_axis("repeat", attrs.axis, data.ndim)
    shape = list(data.shape)
    shape[axis] = dim_map(lambda d: d * attrs.repeats, shape[axis])
    return TensorType(tuple(shape), data.dtype)


register_op("repeat", attrs=RepeatAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=_repeat_rel,
            reference=lambda args, attrs: fresh(np.repeat(args[0], attrs.repeats,
                                                            axis=attrs.axis)),
            doc="Repeat each element ``repeats`` times along ``axis`` (``numpy.repeat``).")


@dataclass(frozen=True, slots=True)
class ReverseAttrs:
    axis: int


def _reverse_rel(arg_types: list[Type], attrs: ReverseAttrs) -> object:
    args = tensor_args("reverse", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    normalize_axis("reverse", attrs.axis, args[0].ndim)
    return TensorType(args[0].shape, args[0].dtype)


register_op("reverse", attrs=ReverseAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=_reverse_rel,
            reference=lambda args, attrs: fresh(np.flip(args[0], axis=attrs.axis)),
            doc="Reverse the order of elements along ``axis``.")


def _where_rel(arg_types: list[Type], attrs: object) -> object:
    op = "where"
    args = tensor_args(op, arg_types, 3, ("condition", "x", "y"))
    if args is NOT_YET:
        return NOT_YET
    cond, x, y = args
    if x.dtype != y.dtype:
        raise RelationError(f"{op}: dtypes differ: {x.dtype} (x) vs {y.dtype} (y)")
    shape = broadcast_shapes(op, broadcast_shapes(op, cond.shape, x.shape), y.shape)
    return TensorType(shape, x.dtype)


register_op("where", num_inputs=3, arg_names=("condition", "x", "y"), support_level=4,
            relation=_where_rel,
            reference=lambda args, attrs: as_dtype(
                np.where(np.asarray(args[0]).astype(bool), args[1], args[2]),
                np.asarray(args[1]).dtype),
            doc="Elementwise ``x if condition else y`` with three-way broadcasting; a "
                "non-bool condition is true where non-zero.")


# -- cast -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CastAttrs:
    dtype: str

    def __post_init__(self) -> None:
        check_dtype(self.dtype)


def cast_value(x: object, dtype: str) -> Array:
    """A new array of ``x`` converted to ``dtype`` (to bool: nonzero; overflow wraps)."""
    arr = np.asarray(x)
    with np.errstate(all="ignore"):
        if dtype == "bool":
            return np.asarray(arr != 0)
        return np.array(arr, dtype=dtype, copy=True)


def _cast_rel(arg_types: list[Type], attrs: CastAttrs) -> object:
    args = tensor_args("cast", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    return TensorType(args[0].shape, attrs.dtype)


def _cast_like_rel(arg_types: list[Type], attrs: object) -> object:
    args = tensor_args("cast_like", arg_types, 2, ("data", "dtype_like"))
    if args is NOT_YET:
        return NOT_YET
    return TensorType(args[0].shape, args[1].dtype)


register_op("cast", attrs=CastAttrs, num_inputs=1, arg_names=("data",), support_level=3,
            relation=_cast_rel,
            reference=lambda args, attrs: cast_value(args[0], attrs.dtype),
            doc="Convert to ``dtype`` (floats to integers truncate toward zero; out-of-range "
                "values are unspecified, as in C).")
register_op("cast_like", num_inputs=2, arg_names=("data", "dtype_like"), support_level=3,
            relation=_cast_like_rel,
            reference=lambda args, attrs: cast_value(args[0], np.asarray(args[1]).dtype.name),
            doc="Convert ``data`` to the dtype of ``dtype_like``.")


def _reinterpret_rel(arg_types: list[Type], attrs: CastAttrs) -> object:
    args = tensor_args("reinterpret", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    src = args[0].dtype
    if src not in DTYPES:
        raise RelationError(f"reinterpret: unsupported dtype {src}")
    if np.dtype(src).itemsize != np.dtype(attrs.dtype).itemsize:
        raise RelationError(f"reinterpret: {src} and {attrs.dtype} have different sizes")
    return TensorType(args[0].shape, attrs.dtype)


register_op("reinterpret", attrs=CastAttrs, num_inputs=1, arg_names=("data",),
            support_level=3, relation=_reinterpret_rel,
            reference=lambda args, attrs: np.array(args[0], copy=True).view(attrs.dtype),
            doc="Reinterpret the bits as ``dtype`` (same element size).")


# -- init ops ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class InitOpAttrs:
    """``shape`` of the result; ``dtype`` ("" = float32 for zeros/ones, the fill value's
    dtype for full)."""

    shape: tuple[int, ...] | None = None
    dtype: str = ""

    def __post_init__(self) -> None:
        if self.dtype:
            check_dtype(self.dtype)
        if self.shape is not None and any(d < 0 for d in self.shape):
            raise AttrError(f"shape must be non-negative, found {self.shape}", "shape")


def _init_rel(op: str) -> object:
    def rel(arg_types: list[Type], attrs: InitOpAttrs) -> object:
        check_arity(op, arg_types, 0)
        if attrs.shape is None:
            raise RelationError(f"{op}: the shape attribute is required")
        return TensorType(tuple(attrs.shape), attrs.dtype or "float32")
    return rel


def _full_rel(arg_types: list[Type], attrs: InitOpAttrs) -> object:
    args = tensor_args("full", arg_types, 1, ("fill_value",))
    if args is NOT_YET:
        return NOT_YET
    if args[0].ndim != 0:
        raise RelationError(f"full: fill_value must be a scalar, found "
                            f"{describe(args[0])}")
    if attrs.shape is None:
        raise RelationError("full: the shape attribute is required")
    return TensorType(tuple(attrs.shape), attrs.dtype or args[0].dtype)


for _name, _value in (("zeros", 0), ("ones", 1)):
    register_op(_name, attrs=InitOpAttrs, num_inputs=0, arg_names=(), support_level=3,
                relation=_init_rel(_name),
                reference=(lambda v: lambda args, attrs: np.full(
                    attrs.shape, v, dtype=attrs.dtype or "float32"))(_value),
                doc=f"A tensor of {_name} with the given ``shape`` and ``dtype``.")

register_op("full", attrs=InitOpAttrs, num_inputs=1, arg_names=("fill_value",),
            support_level=3, relation=_full_rel,
            reference=lambda args, attrs: np.full(
                attrs.shape, cast_value(args[0], attrs.dtype or np.asarray(args[0]).dtype.name),
                dtype=attrs.dtype or np.asarray(args[0]).dtype),
            doc="A tensor of ``shape`` filled with the scalar ``fill_value``.")

for _name, _value in (("zeros_like", 0), ("ones_like", 1)):
    register_op(_name, num_inputs=1, arg_names=("data",), support_level=4,
                relation=identity_rel(_name),
                reference=(lambda v: lambda args, attrs: np.full_like(
                    np.asarray(args[0]), v))(_value),
                doc=f"{_name.split('_')[0].capitalize()} with the shape and dtype of "
                    "``data``.\n\nType relation: identity.")


def _full_like_rel(arg_types: list[Type], attrs: object) -> object:
    args = tensor_args("full_like", arg_types, 2, ("data", "fill_value"))
    if args is NOT_YET:
        return NOT_YET
    if args[1].ndim != 0:
        raise RelationError("full_like: fill_value must be a scalar")
    return TensorType(args[0].shape, args[0].dtype)


register_op("full_like", num_inputs=2, arg_names=("data", "fill_value"), support_level=3,
            relation=_full_like_rel,
            reference=lambda args, attrs: np.full_like(
                np.asarray(args[0]), cast_value(args[1], np.asarray(args[0]).dtype.name)),
            doc="The shape and dtype of ``data`` filled with the scalar ``fill_value``.")


@dataclass(frozen=True, slots=True)
class ArangeAttrs:
    """TVM keeps the (constant) start/stop/step expressions in the attrs so the relation
    can compute a static length; here they are optional numbers. Without them the output
    length is ``?``. The values themselves come from the three scalar inputs."""

    start: float | None = None
    stop: float | None = None
    step: float | None = None
    dtype: str = "float32"

    def __post_init__(self) -> None:
        check_dtype(self.dtype)
        if self.step == 0:
            raise AttrError("step must not be 0", "step")


def _arange_len(start: float, stop: float, step: float) -> int:
    return max(0, math.ceil((stop - start) / step))


def _arange_rel(arg_types: list[Type], attrs: ArangeAttrs) -> object:
    args = tensor_args("arange", arg_types, 3, ("start", "stop", "step"))
    if args is NOT_YET:
        return NOT_YET
    for t, name in zip(args, ("start", "stop", "step"), strict=True):
        if t.ndim != 0:
            raise RelationError(f"arange: {name} must be a scalar, found {describe(t)}")
    if attrs.start is not None and attrs.stop is not None and attrs.step is not None:
        return TensorType((_arange_len(attrs.start, attrs.stop, attrs.step),), attrs.dtype)
    return TensorType((ANY,), attrs.dtype)


def _arange_ref(args: list, attrs: ArangeAttrs) -> Array:
    start, stop, step = (float(np.asarray(a)) for a in args)
    if step == 0:
        raise OpRuntimeError("arange: step must not be 0")
    n = _arange_len(start, stop, step)
    if attrs.start is not None and attrs.stop is not None and attrs.step is not None \
            and _arange_len(attrs.start, attrs.stop, attrs.step) != n:
        raise OpRuntimeError("arange: the start/stop/step inputs disagree with the "
                             "attributes the type was computed from")
    dtype = np.dtype(attrs.dtype)
    if is_float(attrs.dtype):
        return (dtype.type(start) + np.arange(n, dtype=dtype) * dtype.type(step)).astype(dtype)
    return as_dtype(int(start) + np.arange(n, dtype=np.int64) * int(step), dtype)


register_op("arange", attrs=ArangeAttrs, num_inputs=3, arg_names=("start", "stop", "step"),
            support_level=3, relation=_arange_rel, reference=_arange_ref,
            doc="``[start, start + step, ...)`` below ``stop``: length ceil((stop - start) / "
                "step).")


# -- shape_of, ndarray_size, one_hot --------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ShapeOfAttrs:
    dtype: str = "int32"

    def __post_init__(self) -> None:
        check_dtype(self.dtype)
        if not is_int(self.dtype):
            raise AttrError(f"dtype must be an integer type, found {self.dtype}", "dtype")


def _shape_of_rel(arg_types: list[Type], attrs: ShapeOfAttrs) -> object:
    args = tensor_args("shape_of", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    return TensorType((args[0].ndim,), attrs.dtype)


def _ndarray_size_rel(arg_types: list[Type], attrs: ShapeOfAttrs) -> object:
    args = tensor_args("ndarray_size", arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    return TensorType((), attrs.dtype)


register_op("shape_of", attrs=ShapeOfAttrs, num_inputs=1, arg_names=("data",),
            support_level=10, relation=_shape_of_rel,
            reference=lambda args, attrs: np.array(np.shape(args[0]), dtype=attrs.dtype),
            doc="The shape of ``data`` as a 1-d tensor (int32 by default).")
register_op("ndarray_size", attrs=ShapeOfAttrs, num_inputs=1, arg_names=("data",),
            support_level=10, relation=_ndarray_size_rel,
            reference=lambda args, attrs: np.array(np.size(args[0]), dtype=attrs.dtype),
            doc="The number of elements of ``data`` as a scalar (int32 by default).")


@dataclass(frozen=True, slots=True)
class OneHotAttrs:
    depth: int
    axis: int = -1
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.depth < 0:
            raise AttrError("depth must be >= 0", "depth")
        check_dtype(self.dtype)


def _one_hot_rel(arg_types: list[Type], attrs: OneHotAttrs) -> object:
    op = "one_hot"
    args = tensor_args(op, arg_types, 3, ("indices", "on_value", "off_value"))
    if args is NOT_YET:
        return NOT_YET
    indices, on, off = args
    _int_indices(op, indices)
    if on.ndim or off.ndim:
        raise RelationError(f"{op}: on_value and off_value must be scalars")
    axis = normalize_axis(op, attrs.axis, indices.ndim + 1)
    shape = list(indices.shape)
    shape.insert(axis, attrs.depth)
    return TensorType(tuple(shape), attrs.dtype)


def _one_hot_ref(args: list, attrs: OneHotAttrs) -> Array:
    indices = np.asarray(args[0]).astype(np.int64)
    on = cast_value(args[1], attrs.dtype)
    off = cast_value(args[2], attrs.dtype)
    axis = attrs.axis % (indices.ndim + 1)
    hot = np.expand_dims(indices, axis) == np.arange(attrs.depth).reshape(
        [-1 if k == axis else 1 for k in range(indices.ndim + 1)])
    return as_dtype(np.where(hot, on, off), attrs.dtype)


register_op("one_hot", attrs=OneHotAttrs, num_inputs=3,
            arg_names=("indices", "on_value", "off_value"), support_level=10,
            relation=_one_hot_rel, reference=_one_hot_ref,
            doc="One-hot encode ``indices`` with ``depth`` classes inserted at ``axis``; "
                "out-of-range indices give an all-off row.")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["transpose"] = Examples(attrs=({"axes": (1, 0)}, {"axes": (2, 0, 1)}, {"axes": (0, 2, 1)}))
EXAMPLES["reshape"] = Examples(
    attrs=({"newshape": (-1,)}, {"newshape": (3, 2)},
           {"newshape": (0, -1)}, {"newshape": (2, 3)}, {"newshape": (3,)}))
EXAMPLES["squeeze"] = Examples(attrs=({"axis": (1,)},))
EXAMPLES["expand_dims"] = Examples(attrs=({"axis": 0}, {"axis": -1, "num_newaxis": 2}))
for _name in ("concatenate", "stack"):
    EXAMPLES[_name] = Examples(attrs=({"axis": 0}, {"axis": 1}, {"axis": -1}))
EXAMPLES["split"] = Examples(attrs=({"indices_or_sections": 3, "axis": -1},
                                    {"indices_or_sections": (1,), "axis": 0}))
EXAMPLES["strided_slice"] = Examples(attrs=(
    {"begin": (0,), "end": (2,)}, {"begin": (1, 0), "end": (2, 3), "strides": (1, 2)},
    {"begin": (2,), "end": (0,), "strides": (-1,)}))
EXAMPLES["take"] = Examples(attrs=({"axis": 0}, {"axis": 1, "mode": "wrap"}, {"mode": "fast"}))
EXAMPLES["tile"] = Examples(attrs=({"reps": (2,)}, {"reps": (1, 2)}))
EXAMPLES["repeat"] = Examples(attrs=({"repeats": 2, "axis": 0}, {"repeats": 2, "axis": -1}))
EXAMPLES["reverse"] = Examples(attrs=({"axis": 0}, {"axis": -1}))
for _name in ("cast", "reinterpret"):
    EXAMPLES[_name] = Examples(attrs=({"dtype": "float32"}, {"dtype": "int32"}, {"dtype": "bool"}))
EXAMPLES["broadcast_to"] = Examples(attrs=({"shape": (2, 3)}, {"shape": (2, 2, 3)}))
EXAMPLES["one_hot"] = Examples(attrs=({"depth": 3, "axis": -1, "dtype": "float32"},))
for _name in ("zeros", "ones"):
    EXAMPLES[_name] = Examples(attrs=({"shape": (2, 3), "dtype": "float32"},
                                       {"shape": (3,), "dtype": "int32"}))
EXAMPLES["full"] = Examples(attrs=({"shape": (2, 3), "dtype": "float32"},))


# -- values that matter (the ``values`` aspect, attached by ``relay_ref.ops``) ---------------

from relay_ref.ops.registry import Values  # noqa: E402

#: this family's ``values`` aspect: where rewrites of these ops go wrong
VALUES: dict[str, Values] = {
    # out-of-range and negative indices, where clip, wrap and fast modes differ
    "take": Values(ints=(-1, -4, 3, 5, 7, 0, 1, 2),
                   attrs=({"mode": "clip"}, {"mode": "wrap"}, {"axis": 0, "mode": "clip"},
                          {"axis": 1, "mode": "wrap"})),
    # rank 3 with distinct extents and explicit permutations
    "transpose": Values(attrs=({"axes": (1, 0, 2)}, {"axes": (2, 0, 1)}, {"axes": (0, 2, 1)},
                               {"axes": (1, 0)}),
                        args=(((2, 3, 4),), ((2, 1, 3),), ((2, 3),))),
    # operands of one shape but different values, on every axis
    "concatenate": Values(attrs=({"axis": 1}, {"axis": -1}),
                          args=(([(2, 3), (2, 3)],), ([(2, 3), (2, 3), (2, 3)],),
                                ([(2, 1, 3), (2, 1, 3)],))),
    "where": Values(floats=(0.0, -0.0, float("nan"), float("inf"))),
    "cast": Values(floats=(0.5, -0.5, 1e10, -1e10, float("nan"), float("inf")),
                   ints=(2**31 - 1, -(2**31))),
}
