"""Building blocks of the rewriting passes (TVM's ``src/relay/transforms/pattern_utils.h``).

* ``op_call(name, *args, **attrs)``: a call of a registered operator, attributes checked by the
  op's schema (``make_attrs``), as the parser builds it.
* ``scalar(value, dtype)``: a 0-d constant (TVM ``MakeConstantScalar``: the value goes through
  float32 first, as there).
* ``expand_bias_to_match_axis(bias, ndim, axes)``: ``expand_dims`` so that a tensor whose
  dimensions are ``axes`` of an ``ndim``-d tensor broadcasts against it (TVM
  ``ExpandBiasToMatchAxis``).
* ``reshape_to_match_axis`` / ``reshape_or_expand_to_match_axis``: the same by ``reshape``
  (several axes) or by ``expand_dims`` (one axis).
* ``match_broadcast_to_left_axes(lhs, rhs, axes, rhs_value)``: does ``rhs`` broadcast into
  ``lhs`` touching only ``axes`` (TVM ``MatchBroadcastToLeftAxes``)? With ``rhs_value``, also
  the expression that turns it into a tensor over exactly those axes.
* ``is_all_positive_constant(expr)`` / ``is_all_nonzero_constant(expr)``: a constant, seen
  through shape-only ops, whose elements are all >= 0 / all != 0.
* ``tensor_type(types, expr)``: the recorded ``TensorType`` of an (original) node, or None.
"""

from __future__ import annotations

import numpy as np

from relay_ref.ir.expr import Call, Constant, Expr, Op
from relay_ref.ir.types import TensorType, Type
from relay_ref.ops.registry import make_attrs

#: Shape-only operators ``is_all_positive_constant`` looks through (TVM's list).
_SHAPE_OPS = frozenset({"expand_dims", "reshape", "transpose", "squeeze", "repeat"})


def op_call(name: str, *args: Expr, **attrs: object) -> Call:
    """``name(args..., attrs...)`` with the op's attrs object (defaults for the rest)."""
    return Call(Op(name), tuple(args), make_attrs(name, attrs))


def scalar(value: float, dtype: str) -> Constant:
    """A 0-d constant of ``dtype`` holding ``value`` (rounded through float32, as TVM)."""
    return Constant(np.array(np.float32(value), dtype=dtype))


def tensor_type(types: dict[Expr, Type], expr: Expr) -> TensorType | None:
    """``expr``'s recorded type when it is a tensor type with a static shape, else None."""
    ty = types.get(expr)
    if isinstance(ty, TensorType) and all(isinstance(d, int) for d in ty.shape):
        return ty
    return None


def expand_bias_to_match_axis(bias: Expr, ndim: int, axes: tuple[int, ...]) -> Expr:
    """``bias`` (dims = ``axes``, sorted) expanded to broadcast against an ``ndim``-d tensor."""
    for i in range(len(axes), 0, -1):
        if i == len(axes):
            num = ndim - axes[i - 1] - 1
        else:
            num = axes[i] - axes[i - 1]
        if num > 0:
            bias = op_call("expand_dims", bias, axis=i, num_newaxis=num)
    return bias


def reshape_to_match_axis(scale: Expr, shape: tuple, axes: tuple[int, ...]) -> Expr | None:
    """``scale`` reshaped to ``shape``'s dims on ``axes`` and 1 elsewhere (None: dynamic)."""
    new = []
    for i, d in enumerate(shape):
        if i in axes:
            if not isinstance(d, int):
                return None
            new.append(d)
        else:
            new.append(1)
    return op_call("reshape", scale, newshape=tuple(new))


def reshape_or_expand_to_match_axis(scale: Expr, shape: tuple,
                                    axes: tuple[int, ...]) -> Expr | None:
    """``expand_dims`` for one axis, ``reshape`` for several (TVM's choice)."""
    if len(axes) > 1:
        return reshape_to_match_axis(scale, shape, axes)
    return expand_bias_to_match_axis(scale, len(shape), axes)


def match_broadcast_to_left_axes(lhs: TensorType, rhs: TensorType, axes: tuple[int, ...],
                                 rhs_value: Expr | None = None) -> tuple[bool, Expr | None]:
    """Whether ``rhs`` broadcasts into ``lhs`` only along ``axes`` (its other dims are 1 or
    absent), and, given ``rhs_value``, ``rhs_value`` turned into a tensor whose dims are
    exactly ``lhs``'s ``axes`` (squeezed; a scalar is expanded and repeated)."""
    if lhs.ndim < rhs.ndim:
        return False, None
    base = lhs.ndim - rhs.ndim
    if rhs.ndim == 0 and rhs_value is not None and axes:
        value = op_call("expand_dims", rhs_value, axis=0, num_newaxis=len(axes))
        for i in range(len(axes)):
            value = op_call("repeat", value, repeats=lhs.shape[axes[0]], axis=i)
        return True, value
    squeeze = []
    j = 0
    for i in range(lhs.ndim):
        if j < len(axes) and i == axes[j]:
            if i < base or lhs.shape[i] != rhs.shape[i - base]:
                return False, None
            j += 1
        elif i >= base:
            if rhs.shape[i - base] != 1:
                return False, None
            squeeze.append(i - base)
    if rhs_value is not None and squeeze:
        rhs_value = op_call("squeeze", rhs_value, axis=tuple(squeeze))
    return True, rhs_value


def _constant_through_shape_ops(expr: Expr) -> Constant | None:
    while isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name in _SHAPE_OPS:
        expr = expr.args[0]
    return expr if isinstance(expr, Constant) else None


def is_all_positive_constant(expr: Expr) -> bool:
    """A constant (through shape-only ops) with every element >= 0 (TVM's meaning)."""
    const = _constant_through_shape_ops(expr)
    if const is None or const.data.dtype.kind not in "fiu":
        return False
    return bool(np.all(const.data >= 0))


def is_all_nonzero_constant(expr: Expr) -> bool:
    """A constant (through shape-only ops) with no zero (nor NaN) element."""
    const = _constant_through_shape_ops(expr)
    if const is None or const.data.dtype.kind not in "fiu":
        return False
    return bool(np.all(const.data != 0) and not np.any(np.isnan(const.data)))
