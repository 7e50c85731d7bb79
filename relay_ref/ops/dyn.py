"""Dynamic-shape operators (TVM ``src/relay/op/dyn/``): the shape-like argument is a run-time
tensor instead of an attribute. The relation only sees that tensor's type, so every output
dimension is ``?``; the rank comes from the shape tensor's static length. The references use
the run-time values (and raise ``OpRuntimeError`` when they do not fit the data).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.types import ANY, TensorType, Type
from relay_ref.ops.registry import (
    NOT_YET,
    AttrError,
    OpRuntimeError,
    RelationError,
    register_op,
)
from relay_ref.ops.relations import check_dtype, describe, is_int, tensor_args
from relay_ref.ops.transform import (
    StridedSliceAttrs,
    cast_value,
    fresh,
    reshape_shape,
    strided_slice_ref,
)

Array = np.ndarray


def _vector_len(op: str, t: TensorType, what: str) -> int:
    """Static length of a 1-d integer tensor argument (``shape``, ``reps``, ...)."""
    if not is_int(t.dtype):
        raise RelationError(f"{op}: {what} must have an integer dtype, found {t.dtype}")
    if t.ndim != 1:
        raise RelationError(f"{op}: {what} must be a 1-d tensor, found {describe(t)}")
    if not isinstance(t.shape[0], int):  # ? or a shape expression
        raise RelationError(f"{op}: the length of {what} must be static")
    return int(t.shape[0])  # type: ignore[arg-type]


def _values(x: object) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(x).reshape(-1))


def _shape_values(op: str, x: object) -> tuple[int, ...]:
    shape = _values(x)
    if any(d < 0 for d in shape):
        raise OpRuntimeError(f"{op}: shape must be non-negative, found {shape}")
    return shape


def _runtime(fn: Callable[[list, object], Array]) -> Callable[[list, object], Array]:
    def ref(args: list, attrs: object) -> Array:
        try:
            return fn(args, attrs)
        except (RelationError, AttrError, ValueError) as err:
            raise OpRuntimeError(str(err)) from None
    return ref


def _any_shape(n: int) -> tuple:
    return (ANY,) * n


# -- dyn.reshape -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DynReshapeAttrs:
    """TVM's ReshapeAttrs with ``newshape`` unset (it is the second argument). Run-time
    codes: 0 copies the input dimension (unless ``allowzero``), -1 infers one."""

    newshape: tuple[int, ...] | None = None
    allowzero: bool = False


def _dyn_reshape_rel(arg_types: list[Type], attrs: DynReshapeAttrs) -> object:
    op = "dyn.reshape"
    args = tensor_args(op, arg_types, 2, ("data", "newshape"))
    if args is NOT_YET:
        return NOT_YET
    data, newshape = args
    return TensorType(_any_shape(_vector_len(op, newshape, "newshape")), data.dtype)


def _dyn_reshape_ref(args: list, attrs: DynReshapeAttrs) -> Array:
    op = "dyn.reshape"
    x, newshape = np.asarray(args[0]), _values(args[1])
    if any(v < -1 for v in newshape):
        raise OpRuntimeError(f"{op}: newshape values must be >= -1, found {newshape}")
    return fresh(x).reshape(reshape_shape(op, x.shape, newshape, attrs.allowzero))


register_op("dyn.reshape", attrs=DynReshapeAttrs, num_inputs=2,
            arg_names=("data", "newshape"), support_level=3, relation=_dyn_reshape_rel,
            reference=_runtime(_dyn_reshape_ref),
            doc="``reshape`` with ``newshape`` given as a 1-d integer tensor (0 copies a "
                "dimension, -1 infers one). Output dims are ``?``.")


# -- dyn.broadcast_to, dyn.zeros, dyn.ones, dyn.full -----------------------------------

@dataclass(frozen=True, slots=True)
class DynInitOpAttrs:
    """TVM's InitOpAttrs with ``shape`` unset; ``dtype`` "" = float32 (zeros/ones), the
    fill value's dtype (full), data's dtype (broadcast_to)."""

    shape: tuple[int, ...] | None = None
    dtype: str = ""

    def __post_init__(self) -> None:
        if self.dtype:
            check_dtype(self.dtype)


def _dyn_broadcast_to_rel(arg_types: list[Type], attrs: DynInitOpAttrs) -> object:
    op = "dyn.broadcast_to"
    args = tensor_args(op, arg_types, 2, ("data", "shape"))
    if args is NOT_YET:
        return NOT_YET
    data, shape = args
    n = _vector_len(op, shape, "shape")
    if data.ndim > n:
        raise RelationError(f"{op}: cannot broadcast rank {data.ndim} data to rank {n}")
    return TensorType(_any_shape(n), data.dtype)


def _dyn_broadcast_to_ref(args: list, attrs: DynInitOpAttrs) -> Array:
    x = np.asarray(args[0])
    return fresh(np.broadcast_to(x, _shape_values("dyn.broadcast_to", args[1])))


register_op("dyn.broadcast_to", attrs=DynInitOpAttrs, num_inputs=2,
            arg_names=("data", "shape"), support_level=4, relation=_dyn_broadcast_to_rel,
            reference=_runtime(_dyn_broadcast_to_ref),
            doc="Broadcast ``data`` (NumPy rules) to the run-time ``shape`` (1-d integer "
                "tensor). Output dims are ``?``.")


def _dyn_init_rel(op: str) -> Callable[[list[Type], DynInitOpAttrs], object]:
    def rel(arg_types: list[Type], attrs: DynInitOpAttrs) -> object:
        args = tensor_args(op, arg_types, 1, ("shape",))
        if args is NOT_YET:
            return NOT_YET
        return TensorType(_any_shape(_vector_len(op, args[0], "shape")),
                          attrs.dtype or "float32")
    return rel


for _name, _value in (("dyn.zeros", 0), ("dyn.ones", 1)):
    register_op(_name, attrs=DynInitOpAttrs, num_inputs=1, arg_names=("shape",),
                support_level=3, relation=_dyn_init_rel(_name),
                reference=(lambda op, v: _runtime(lambda args, attrs: np.full(
                    _shape_values(op, args[0]), v, dtype=attrs.dtype or "float32")))(
                        _name, _value),
                doc=f"A tensor of {_name[4:]} of ``dtype`` with the run-time ``shape`` (1-d "
                    f"integer tensor). Output dims are ``?``.")


def _dyn_full_rel(arg_types: list[Type], attrs: DynInitOpAttrs) -> object:
    op = "dyn.full"
    args = tensor_args(op, arg_types, 2, ("fill_value", "shape"))
    if args is NOT_YET:
        return NOT_YET
    fill, shape = args
    if fill.ndim != 0:
        raise RelationError(f"{op}: fill_value must be a scalar, found {describe(fill)}")
    return TensorType(_any_shape(_vector_len(op, shape, "shape")),
                      attrs.dtype or fill.dtype)


def _dyn_full_ref(args: list, attrs: DynInitOpAttrs) -> Array:
    fill = np.asarray(args[0])
    dtype = attrs.dtype or fill.dtype.name
    return np.full(_shape_values("dyn.full", args[1]), cast_value(fill, dtype), dtype=dtype)


register_op("dyn.full", attrs=DynInitOpAttrs, num_inputs=2,
            arg_names=("fill_value", "shape"), support_level=3, relation=_dyn_full_rel,
            reference=_runtime(_dyn_full_ref),
            doc="A tensor of the run-time ``shape`` filled with the scalar ``fill_value`` "
                "(cast to ``dtype``). Output dims are ``?``.")


# -- dyn.tile --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DynTileAttrs:
    """No attributes (``reps`` is the second argument)."""


def _dyn_tile_rel(arg_types: list[Type], attrs: DynTileAttrs) -> object:
    op = "dyn.tile"
    args = tensor_args(op, arg_types, 2, ("data", "reps"))
    if args is NOT_YET:
        return NOT_YET
    data, reps = args
    n = _vector_len(op, reps, "reps")
    return TensorType(_any_shape(max(n, data.ndim)), data.dtype)


def _dyn_tile_ref(args: list, attrs: DynTileAttrs) -> Array:
    reps = _values(args[1])
    if any(r < 0 for r in reps):
        raise OpRuntimeError(f"dyn.tile: reps must be >= 0, found {reps}")
    return fresh(np.tile(np.asarray(args[0]), reps))


register_op("dyn.tile", attrs=DynTileAttrs, num_inputs=2, arg_names=("data", "reps"),
            support_level=3, relation=_dyn_tile_rel, reference=_runtime(_dyn_tile_ref),
            doc="``numpy.tile`` with run-time ``reps`` (1-d integer tensor); output rank "
                "max(rank(data), len(reps)), dims ``?``.")


# -- dyn.strided_slice -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class DynStridedSliceAttrs:
    """TVM's StridedSliceAttrs with begin/end/strides unset (they are arguments)."""

    begin: tuple[int, ...] | None = None
    end: tuple[int, ...] | None = None
    strides: tuple[int, ...] | None = None
    slice_mode: str = "end"
    axes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.slice_mode not in ("end", "size"):
            raise AttrError(f"slice_mode must be end or size, found {self.slice_mode!r}",
                            "slice_mode")


def _dyn_strided_slice_rel(arg_types: list[Type], attrs: DynStridedSliceAttrs) -> object:
    op = "dyn.strided_slice"
    args = tensor_args(op, arg_types, 4, ("data", "begin", "end", "strides"))
    if args is NOT_YET:
        return NOT_YET
    data = args[0]
    lens = [_vector_len(op, t, w) for t, w in zip(args[1:], ("begin", "end", "strides"),
                                                   strict=True)]
    if lens[0] != lens[1]:
        raise RelationError(f"{op}: begin has {lens[0]} values, end has {lens[1]}")
    if lens[0] > data.ndim:
        raise RelationError(f"{op}: begin has {lens[0]} values but the data has rank "
                            f"{data.ndim}")
    return TensorType(_any_shape(data.ndim), data.dtype)


def _dyn_strided_slice_ref(args: list, attrs: DynStridedSliceAttrs) -> Array:
    static = StridedSliceAttrs(begin=_values(args[1]), end=_values(args[2]),
                               strides=_values(args[3]) or None,
                               slice_mode=attrs.slice_mode, axes=attrs.axes)
    return strided_slice_ref([args[0]], static)


register_op("dyn.strided_slice", attrs=DynStridedSliceAttrs, num_inputs=4,
            arg_names=("data", "begin", "end", "strides"), support_level=4,
            relation=_dyn_strided_slice_rel, reference=_runtime(_dyn_strided_slice_ref),
            doc="``strided_slice`` with ``begin``/``end``/``strides`` as run-time 1-d "
                "integer tensors; output rank = data's, dims ``?``.")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

# begin / end / strides are run-time values (drawn from the int32 pool: some slices are
# empty or have a zero stride, a run-time error)
EXAMPLES["dyn.strided_slice"] = Examples(attrs=({"slice_mode": "size"}, {"axes": (1,)}), args=(
    (((2, 3), "float32"), ((2,), "int32"), ((2,), "int32"), ((2,), "int32")),
    (((2, 3), "int32"), ((1,), "int32"), ((1,), "int32"), ((1,), "int32")),
    (((2, 1, 3), "float32"), ((3,), "int32"), ((3,), "int32"), ((3,), "int32"))))
