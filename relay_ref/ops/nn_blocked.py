"""Convolutions on blocked ("packed") layouts (TVM ``src/relay/op/nn/convolution.cc``):
``nn.contrib_conv2d_NCHWc`` and ``nn.contrib_depthwise_conv2d_NCHWc``, which TVM's
``AlterOpLayout`` produces for x86 (data ``NCHW8c``, kernel ``OIHW8i8o`` or ``OIHW1i8o``).

Both mean exactly ``nn.conv2d`` on the unpacked tensors: unpack the data from
``data_layout`` to NCHW and the weight from ``kernel_layout`` to OIHW (``layout.py``),
convolve, and pack the result into ``out_layout`` (default: ``data_layout``). The relation
does the same with shapes; a split axis must be a multiple of its block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dims_compatible, shape_text
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops import nn
from relay_ref.ops.layout import (
    LayoutAxis,
    blocked_shape,
    from_canonical,
    from_primal,
    parse_layout,
    primal,
    shape_from,
    shape_to,
    to_canonical,
    to_primal,
    unblocked_shape,
)
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import check_dtype, tensor_args

Array = np.ndarray


@dataclass(frozen=True, slots=True)
class Conv2DNCHWcAttrs:
    """TVM's ``Conv2DAttrs`` (same fields and defaults) with blocked layouts allowed: each
    layout's primal axes are a permutation of NCHW (data, out) or OIHW (kernel)."""

    strides: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple[int, ...] | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = ""
    out_dtype: str = ""

    def __post_init__(self) -> None:
        # the plain attrs validate strides, padding, dilation, groups, kernel_size, out_dtype
        nn.Conv2DAttrs(strides=self.strides, padding=self.padding, dilation=self.dilation,
                       groups=self.groups, kernel_size=self.kernel_size)
        for name in ("strides", "dilation", "kernel_size"):
            values = getattr(self, name)
            if values is not None and len(values) == 1:
                object.__setattr__(self, name, (values[0], values[0]))
        for name, canon in (("data_layout", "NCHW"), ("kernel_layout", "OIHW"),
                            ("out_layout", "NCHW")):
            text = getattr(self, name)
            if name == "out_layout" and not text:
                continue
            if sorted(primal(parse_layout(text, name))) != sorted(canon):
                raise AttrError(f"{name} {text!r} must have the axes of {canon!r} (each "
                                f"possibly blocked)", name)
        if self.out_dtype:
            check_dtype(self.out_dtype, "out_dtype")

    def plain(self) -> nn.Conv2DAttrs:
        """The same convolution on NCHW data and an OIHW kernel."""
        return nn.Conv2DAttrs(strides=self.strides, padding=self.padding,
                              dilation=self.dilation, groups=self.groups,
                              channels=self.channels, kernel_size=self.kernel_size,
                              out_dtype=self.out_dtype)


def _unpacked_shape(op: str, t: TensorType, axes: tuple[LayoutAxis, ...], canon: str,
                    what: str, layout: str) -> tuple:
    if t.ndim != len(axes):
        raise RelationError(f"{op}: {what} {shape_text(t.shape)} has rank {t.ndim} but "
                            f"{layout!r} has {len(axes)} axes")
    for a, n in zip(axes, t.shape, strict=True):
        if a.is_block and not dims_compatible(n, a.factor):
            raise RelationError(f"{op}: the {a.factor}{a.name.lower()} block of {what} "
                                f"{shape_text(t.shape)} ({layout!r}) has size {n}")
    return shape_to(unblocked_shape(t.shape, axes), primal(axes), canon)


def _blocked_conv_rel(op: str):  # noqa: ANN202 - a relation
    def rel(arg_types: list[Type], attrs: Conv2DNCHWcAttrs) -> object:
        args = tensor_args(op, arg_types, 2, ("data", "weight"))
        if args is NOT_YET:
            return NOT_YET
        data, weight = args
        dl = parse_layout(attrs.data_layout)
        kl = parse_layout(attrs.kernel_layout)
        ol = parse_layout(attrs.out_layout or attrs.data_layout)
        d = _unpacked_shape(op, data, dl, "NCHW", "data", attrs.data_layout)
        w = _unpacked_shape(op, weight, kl, "OIHW", "weight", attrs.kernel_layout)
        try:
            out = nn.conv2d_rel([TensorType(d, data.dtype), TensorType(w, weight.dtype)],
                                attrs.plain())
        except RelationError as err:
            raise RelationError(str(err).replace("nn.conv2d", op, 1)) from None
        assert isinstance(out, TensorType)
        shape = blocked_shape(op, shape_from(out.shape, primal(ol), "NCHW"), ol)
        return TensorType(shape, out.dtype)
    return rel


def _blocked_conv_ref(args: list, attrs: Conv2DNCHWcAttrs) -> Array:
    dl = parse_layout(attrs.data_layout)
    kl = parse_layout(attrs.kernel_layout)
    ol = parse_layout(attrs.out_layout or attrs.data_layout)
    x = to_canonical(to_primal(np.asarray(args[0]), dl), primal(dl), "NCHW")
    w = to_canonical(to_primal(np.asarray(args[1]), kl), primal(kl), "OIHW")
    out = nn.conv2d_ref([x, w], attrs.plain())
    return from_primal(np.ascontiguousarray(from_canonical(out, primal(ol), "NCHW")), ol)


_DOC = ("2-d convolution on blocked layouts: nn.conv2d of the data unpacked from "
        "``data_layout`` (e.g. NCHW8c: (N, C/8, H, W, 8)) and the weight unpacked from "
        "``kernel_layout`` (e.g. OIHW8i8o: (O/8, I/8, KH, KW, 8, 8)), packed into "
        "``out_layout`` (default ``data_layout``). TVM's relation trusts ``channels`` and "
        "``kernel_size``; this one checks them against the weight.")

register_op("nn.contrib_conv2d_NCHWc", attrs=Conv2DNCHWcAttrs, num_inputs=2,
            arg_names=("data", "weight"), support_level=10,
            relation=_blocked_conv_rel("nn.contrib_conv2d_NCHWc"),
            reference=_blocked_conv_ref, doc=_DOC)
register_op("nn.contrib_depthwise_conv2d_NCHWc", attrs=Conv2DNCHWcAttrs, num_inputs=2,
            arg_names=("data", "weight"), support_level=10,
            relation=_blocked_conv_rel("nn.contrib_depthwise_conv2d_NCHWc"),
            reference=_blocked_conv_ref,
            doc=_DOC + " Depthwise: ``groups`` = input channels, kernel e.g. OIHW1i8o.")
