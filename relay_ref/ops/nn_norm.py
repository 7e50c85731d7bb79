"""Normalisation operators beyond batch/layer norm (TVM ``src/relay/op/nn/nn.cc``):
``nn.instance_norm``, ``nn.group_norm`` and ``nn.l2_normalize``.

All three keep the data's type; gamma and beta (where present) are 1-d along ``axis``.
References compute mean and biased variance in the data's dtype, as TOPI does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dim_divisible, dims_compatible, shape_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.layout import along
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import (
    as_dtype,
    is_float,
    normalize_axis,
    output_is_input,
    reduce_axes,
    tensor_args,
)

Array = np.ndarray


# -- nn.instance_norm / nn.group_norm ----------------------------------------------------

@dataclass(frozen=True, slots=True)
class InstanceNormAttrs:
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@dataclass(frozen=True, slots=True)
class GroupNormAttrs:
    num_groups: int = 0
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True

    def __post_init__(self) -> None:
        if self.num_groups < 1:
            raise AttrError(f"num_groups must be >= 1, found {self.num_groups}",
                            "num_groups")


def _norm_rel(op: str) -> object:
    names = ("data", "gamma", "beta")

    def rel(arg_types: list[Type], attrs: InstanceNormAttrs | GroupNormAttrs) -> object:
        args = tensor_args(op, arg_types, 3, names)
        if args is NOT_YET:
            return NOT_YET
        data = args[0]
        if data.ndim < 2:
            raise RelationError(f"{op}: data must have rank >= 2, found shape "
                                f"{shape_text(data.shape)}")
        axis = normalize_axis(op, attrs.axis, data.ndim)
        c = data.shape[axis]
        for t, name in zip(args[1:], names[1:], strict=True):
            if t.ndim != 1 or not dims_compatible(t.shape[0], c):
                raise RelationError(f"{op}: {name} must have shape ({c},), found "
                                    f"{shape_text(t.shape)}")
            if t.dtype != data.dtype:
                raise RelationError(f"{op}: dtypes differ: {data.dtype} (data) vs "
                                    f"{t.dtype} ({name})")
        if isinstance(attrs, GroupNormAttrs) and dim_divisible(c, attrs.num_groups) is False:
            raise RelationError(f"{op}: channels {c} are not divisible by "
                                f"num_groups={attrs.num_groups}")
        if not is_float(data.dtype):
            raise RelationError(f"{op}: data must be floating point, found {data.dtype}")
        return TensorType(data.shape, data.dtype)
    return rel


def _normalize(x: Array, axes: tuple[int, ...], eps: float) -> Array:
    mean = np.mean(x, axis=axes, keepdims=True, dtype=x.dtype)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True, dtype=x.dtype)
    return (x - mean) / np.sqrt(var + np.asarray(eps, x.dtype))


def _affine(out: Array, args: list, attrs: object, axis: int) -> Array:
    if attrs.scale:  # type: ignore[attr-defined]
        out = out * along(np.asarray(args[1]), out.ndim, axis)
    if attrs.center:  # type: ignore[attr-defined]
        out = out + along(np.asarray(args[2]), out.ndim, axis)
    return out


def _instance_norm_ref(args: list, attrs: InstanceNormAttrs) -> Array:
    x = np.asarray(args[0])
    axis = attrs.axis % x.ndim
    if x.size == 0:
        return x.copy()
    axes = tuple(a for a in range(1, x.ndim) if a != axis)
    with np.errstate(all="ignore"):
        out = _affine(_normalize(x, axes, attrs.epsilon), args, attrs, axis)
    return as_dtype(out, x.dtype)


def _group_norm_ref(args: list, attrs: GroupNormAttrs) -> Array:
    x = np.asarray(args[0])
    axis = attrs.axis % x.ndim
    if x.size == 0:
        return x.copy()
    g = attrs.num_groups
    shape = x.shape
    grouped = x.reshape(shape[:axis] + (g, shape[axis] // g) + shape[axis + 1:])
    axes = tuple(a for a in range(grouped.ndim) if a not in (0, axis))
    with np.errstate(all="ignore"):
        out = _normalize(grouped, axes, attrs.epsilon).reshape(shape)
        out = _affine(out, args, attrs, axis)
    return as_dtype(out, x.dtype)


register_op("nn.instance_norm", attrs=InstanceNormAttrs, num_inputs=3,
            arg_names=("data", "gamma", "beta"), support_level=1,
            relation=_norm_rel("nn.instance_norm"), reference=_instance_norm_ref,
            doc="Instance normalisation: normalise over every axis except the batch axis 0 "
                "and ``axis`` (mean and biased variance), then scale by gamma and shift by "
                "beta along ``axis``.")
register_op("nn.group_norm", attrs=GroupNormAttrs, num_inputs=3,
            arg_names=("data", "gamma", "beta"), support_level=1,
            relation=_norm_rel("nn.group_norm"), reference=_group_norm_ref,
            doc="Group normalisation: split ``axis`` into ``num_groups`` groups; normalise "
                "each (batch, group) over the group's channels and every other non-batch "
                "axis; then per-channel gamma/beta along ``axis``.")


# -- nn.l2_normalize ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class L2NormalizeAttrs:
    eps: float
    axis: tuple[int, ...] | None = None


def _l2_normalize_rel(arg_types: list[Type], attrs: L2NormalizeAttrs) -> object:
    op = "nn.l2_normalize"
    args = tensor_args(op, arg_types, 1)
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    reduce_axes(op, data.ndim, attrs.axis or None, False)
    if not is_float(data.dtype):
        raise RelationError(f"{op}: data must be floating point, found {data.dtype}")
    return TensorType(data.shape, data.dtype)


def _l2_normalize_ref(args: list, attrs: L2NormalizeAttrs) -> Array:
    x = np.asarray(args[0])
    axes = tuple(a % x.ndim for a in attrs.axis) if attrs.axis else None
    with np.errstate(all="ignore"):
        ss = np.sum(x * x, axis=axes, keepdims=True, dtype=x.dtype)
        out = x / np.sqrt(np.maximum(ss, np.asarray(attrs.eps, x.dtype)))
    return as_dtype(out, x.dtype)


register_op("nn.l2_normalize", attrs=L2NormalizeAttrs, num_inputs=1, arg_names=("data",),
            support_level=2, relation=_l2_normalize_rel, reference=_l2_normalize_ref,
            predicate=output_is_input(_l2_normalize_rel), relation_name="Identity",
            doc="x / sqrt(max(sum(x * x, axis, keepdims), eps)); ``axis=None`` (or empty) "
                "reduces over every axis.")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["nn.group_norm"] = Examples(attrs=({"num_groups": 2}, {"num_groups": 1}),
                                     args=(((1, 4, 2, 2), (4,), (4,)),))
EXAMPLES["nn.instance_norm"] = Examples(args=(((1, 2, 4, 4), (2,), (2,)),))
EXAMPLES["nn.l2_normalize"] = Examples(attrs=({"eps": 1e-3, "axis": (1,)}, {"eps": 1e-3}))
