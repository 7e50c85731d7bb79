"""Helpers the ONNX converter families share (``ops_*.py`` import them from here, never
from each other): the padding rules of convolutions and pools (``ops_nn``, ``ops_extra``)
and the pieces of functional loops that ``Loop`` (``ops_control``) and ``Scan``
(``ops_control_scan``) both build.

Invariants: every expression built here gets its type recorded in the builder
(``b.types``), as every converter's expressions do; nothing here registers a converter.
"""

from __future__ import annotations

import numpy as np

from relay_ref.frontend.onnx.builder import Builder, ConvertError
from relay_ref.frontend.onnx.context import NodeContext
from relay_ref.frontend.onnx.names import VALID, sanitise
from relay_ref.ir.expr import Call, Expr, If
from relay_ref.ir.types import ANY, TensorType, Type

# -- padding (convolutions and pools) ------------------------------------------------------

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def check_auto_pad(ctx: NodeContext) -> list[str]:
    pad = ctx.attr("auto_pad", "NOTSET")
    return [] if pad in AUTO_PADS else [
        f"auto_pad={pad!r} (supported: {', '.join(AUTO_PADS)})"]


def spatial_dims(ctx: NodeContext) -> int:
    nd = ctx.rank(0) - 2
    if nd not in (1, 2, 3):
        raise ConvertError(f"{nd}-d spatial input is not supported (1 to 3)")
    return nd


def resolve_pads(ctx: NodeContext, kernel: list[int], strides: list[int],
                 dilations: list[int], ceil: bool = False) -> list[int]:
    """Explicit pads ``[begins..., ends...]`` from ``pads`` / ``auto_pad``."""
    nd = len(kernel)
    mode = ctx.attr("auto_pad", "NOTSET")
    if mode == "VALID":
        return [0] * (2 * nd)
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        dims = ctx.static_shape(0, "the input of auto_pad=SAME")[2:]
        begins, ends = [], []
        for n, k, s, d in zip(dims, kernel, strides, dilations, strict=True):
            out = -(-n // s)
            total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
            small, big = total // 2, total - total // 2
            begins.append(small if mode == "SAME_UPPER" else big)
            ends.append(big if mode == "SAME_UPPER" else small)
        return begins + ends
    pads = [int(p) for p in ctx.attr("pads", [0] * (2 * nd))]
    if len(pads) != 2 * nd or min(pads, default=0) < 0:
        raise ConvertError(f"pads {pads} do not fit {nd} spatial dims")
    return pads


def relay_padding(pads: list[int]) -> list[int]:
    """Relay's ``padding``: all zeros is written as one zero per spatial dim (the default,
    so the printer leaves it out)."""
    return pads if any(pads) else [0] * (len(pads) // 2)


# -- functional loops (Loop and Scan) -----------------------------------------------------

MANY_OUTPUTS = 1 << 30  # If and Loop have as many outputs as their subgraphs


def short_type_text(ty: Type) -> str:
    if isinstance(ty, TensorType):
        return f"Tensor[({', '.join(str(d) for d in ty.shape)}), {ty.dtype}]"
    return str(ty)


def loop_var_name(onnx_name: str, fallback: str) -> str:
    return onnx_name if VALID.fullmatch(onnx_name or "") else sanitise(onnx_name or fallback)


def generalise(a: TensorType, b: Type, what: str) -> TensorType:
    """The parameter type that holds both ``a`` (so far) and ``b`` (the body's output):
    differing dims become ``?``; the dtype and rank must agree."""
    if not isinstance(b, TensorType) or b.dtype != a.dtype or len(b.shape) != len(a.shape):
        raise ConvertError(f"{what} has type {short_type_text(a)} before the loop and "
                           f"{short_type_text(b)} after an iteration; only its dims may change")
    return TensorType(tuple(x if x == y and x is not ANY and y is not ANY else ANY
                            for x, y in zip(a.shape, b.shape, strict=True)), a.dtype)


def grow_accumulator(ctx: NodeContext, it: Expr, acc: Expr, item: Expr) -> Expr:
    """``acc`` with ``item`` appended on a new first axis. When ``item``'s shape is not
    static the empty start has 0 for its unknown dims, so the first iteration starts the
    accumulator afresh instead (``if (%iter == 0)``)."""
    b = ctx.builder
    row = ctx.call("expand_dims", item, axis=0, num_newaxis=1)
    grown = ctx.call("concatenate", b.tuple(acc, row), axis=0)
    if b.tensor_type(item).is_static:
        return grown
    # The first row as the accumulator's type (its dims ``?``): an ``if`` is typed at the
    # most precise type both branches are consistent with (T-If), so a static ``row`` would
    # make the later, longer accumulators fail its cast (Stuck-Cast, spec/semantics.md 4.2).
    start = ctx.call("dyn.reshape", row, ctx.call("shape_of", row, dtype="int64"),
                     allowzero=True)
    expr = If(ctx.call("equal", it, b.const(np.int64(0))), start, grown)
    b.types[expr] = b.type_of(acc)
    return expr


def typed_call(b: Builder, fn: Expr, ret: Type, *args: Expr) -> Expr:
    expr = Call(fn, tuple(args))
    b.types[expr] = ret
    return expr
