"""Annotation operators (TVM ``src/relay/op/annotation/annotation.cc``, ``on_device.cc``,
``device_copy.cc``): values pass through unchanged and the output type is the input type.

They carry hints for TVM's passes (fusion, partitioning, device planning, autodiff); the
reference semantics is the identity. Tensors and tuples of tensors are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.types import TensorType, TupleType, Type, has_hole
from relay_ref.ops.registry import NOT_YET, NoAttrs, RelationError, register_op
from relay_ref.ops.relations import check_arity, describe, output_is_input


def _passthrough_rel(op: str):  # noqa: ANN202 - a relation
    def rel(arg_types: list[Type], attrs: object) -> object:
        check_arity(op, arg_types, 1)
        ty = arg_types[0]
        if has_hole(ty):
            return NOT_YET
        if isinstance(ty, TensorType):
            return TensorType(ty.shape, ty.dtype)
        if isinstance(ty, TupleType) and all(isinstance(f, TensorType) for f in ty.fields):
            return TupleType(tuple(TensorType(f.shape, f.dtype) for f in ty.fields))
        raise RelationError(f"{op}: data must be a tensor or a tuple of tensors, found "
                            f"{describe(ty)}")
    return rel


def _copy_value(value: object) -> object:
    if isinstance(value, tuple):
        return tuple(_copy_value(v) for v in value)
    return np.array(value, copy=True)


def _passthrough_ref(args: list, attrs: object) -> object:
    return _copy_value(args[0])


@dataclass(frozen=True, slots=True)
class CompilerAttrs:
    """Name of the external compiler (BYOC) the annotated region is offloaded to."""

    compiler: str = ""


@dataclass(frozen=True, slots=True)
class OnDeviceAttrs:
    """``virtual_device`` is kept as an opaque printed value. ``se_scope``, ``device_type``
    and ``is_fixed`` are older TVM spellings, accepted and ignored."""

    virtual_device: object = None
    constrain_result: bool = False
    constrain_body: bool = True
    se_scope: object = None
    device_type: int | None = None
    is_fixed: bool = False


@dataclass(frozen=True, slots=True)
class DeviceCopyAttrs:
    """Newer TVM prints ``src_virtual_device``/``dst_virtual_device`` (opaque here); older
    TVM prints ``src_se_scope``/``dst_se_scope`` (opaque) or ``src_dev_type``/
    ``dst_dev_type`` (ints). Any of these spellings is accepted."""

    src_virtual_device: object = None
    dst_virtual_device: object = None
    src_se_scope: object = None
    dst_se_scope: object = None
    src_dev_type: int | None = None
    dst_dev_type: int | None = None


_DOCS = {
    "annotation.stop_fusion": (NoAttrs, "Identity; marks a boundary operator fusion must "
                                        "not cross."),
    "annotation.checkpoint": (NoAttrs, "Identity; marks a tensor (or tuple) to be "
                                       "recomputed rather than stored by autodiff."),
    "annotation.compiler_begin": (CompilerAttrs, "Identity; starts a region offloaded to "
                                                 "the external ``compiler``."),
    "annotation.compiler_end": (CompilerAttrs, "Identity; ends a region offloaded to the "
                                               "external ``compiler``."),
    "stop_gradient": (NoAttrs, "Identity in the forward pass; its gradient is zero."),
    "on_device": (OnDeviceAttrs, "Identity; constrains the device its argument (and/or "
                                 "result) lives on."),
    "device_copy": (DeviceCopyAttrs, "Copies a tensor between devices; the value is "
                                     "unchanged."),
}

for _name, (_attrs, _doc) in _DOCS.items():
    register_op(_name, attrs=_attrs, num_inputs=1, arg_names=("data",), support_level=10,
                relation=_passthrough_rel(_name), reference=_passthrough_ref,
                predicate=output_is_input(_passthrough_rel(_name)), relation_name="Identity",
                doc=_doc + " Output type = input type (tensor or tuple of tensors).")
