"""SimplifyInference (TVM ``src/relay/transforms/simplify_inference.cc``): replace the
training-time normalisation and dropout operators by the arithmetic they compute at
inference, so that later passes (FoldScaleAxis, FoldConstant, FuseOps) see plain
elementwise, broadcast and reduce operators.

Rules (``RULES``, a rule table of the pattern language ``relay_ref.passes.pattern``, one
rule per operator, applied in one bottom-up sweep; ``x`` the data, ``c`` its ``axis`` made
non-negative, ``n`` its rank, ``eps`` the attribute as a scalar of x's dtype, ``E(v)`` =
``v`` expanded to broadcast along ``c``, i.e. ``expand_dims(v, axis=1,
num_newaxis=n-c-1)`` when that is > 0):

* ``nn.batch_norm(x, gamma, beta, mean, var).0`` -> ``x * E(scale) + E(shift)`` with
  ``scale = 1 / sqrt(var + eps) * gamma`` (``* gamma`` only if ``scale=True``) and
  ``shift = -mean * scale + beta`` (``+ beta`` only if ``center=True``). Only the
  projection ``.0`` of a batch_norm *call* is rewritten, as TVM matches
  ``TupleGetItem(batch_norm(...), 0)``: other uses of the call (``.1``, ``.2``: the running
  statistics, or the whole tuple) keep the call, so they stay correct. When the
  statistics are constants (``rr.compile`` binds them), ``scale`` and ``shift`` are
  computed now and the call is kept unless both are finite and ``|scale|`` is at most
  ``fold_scale_axis.headroom`` (the square root of the largest finite value, 1.8e19 for
  float32): with ``var + eps = 0`` (zero variance, ``epsilon=0f``) or an overflowing
  ``gamma / sqrt(..)`` the expansion would give NaN where batch_norm gives
  ``(x - mean) / 0`` = +-inf, or inf where it gives a finite value, and a huge scale
  overflows ``x * scale`` for ordinary ``x`` where ``(x - mean) * scale`` cancels (TVM
  expands anyway).
* ``nn.dropout(x).0`` -> ``x``.
* ``nn.layer_norm(x, gamma, beta)`` -> ``(x - m) / sqrt(variance(x, m) + eps) * E(gamma) +
  E(beta)``, ``m = mean(x, axis=[axis], keepdims=True)`` (``axis`` as written), variance
  with the same axes and ``keepdims``.
* ``nn.instance_norm``: the same over every axis but 0 and ``c``.
* ``nn.group_norm``: reshape ``c`` into (num_groups, C / num_groups), normalise over every
  axis but 0 and the group axis (TVM: only the later axes; the same for axis=1), reshape
  back, then gamma and beta.
* ``nn.l2_normalize(x)`` -> ``x / sqrt(maximum(sum(x * x, axis, keepdims=True), eps))``
  (``eps`` in x's dtype; TVM always uses float32, which only matters for other dtypes).

The expansions are written exactly as TVM builds them (same operators, order and
attributes), so TVM's expected programs are alpha-equal to ours.

Guarantee: the result type-checks with every type unchanged and computes the same values up
to float rounding (the expansions associate differently from the references). For
batch_norm that holds where ``scale`` and ``shift`` are finite, which is checked when the
statistics are constants; statistics known only at run time are expanded as TVM does, and
at run time a zero ``var + eps`` or a ``gamma`` near the float range then gives NaN or inf
where batch_norm may not. ``x * scale + shift`` also rounds and overflows differently from
``(x - mean) / sqrt(..) * gamma`` where ``x`` and ``mean`` nearly cancel or ``x * scale``
comes near the float range. Needs types
(run ``infer_types`` first or let the pass do it); the norms on non-floating-point data and
group_norm on a dynamic shape are left as calls. Linear in the number of distinct nodes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relay_ref.ir.expr import Call, Expr
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.fold_constant import constant_value
from relay_ref.passes.fold_scale_axis import headroom
from relay_ref.passes.pattern import (
    Match,
    Rule,
    RuleTable,
    is_op,
    is_tuple_get_item,
    rewrite_module,
    wildcard,
)
from relay_ref.passes.pattern_utils import expand_bias_to_match_axis, op_call, scalar
from relay_ref.typecheck.infer import infer_types


def batch_norm_to_infer(call: Call, ty: TensorType) -> Expr | None:
    """``nn.batch_norm(...).0`` at inference (TVM ``BatchNormToInferUnpack``); None (keep
    the call) when the statistics are constants giving a scale or shift that is not
    finite."""
    data, gamma, beta, mean, var = call.args
    attrs = call.attrs
    scale: Expr = op_call("divide", scalar(1.0, ty.dtype),
                          op_call("sqrt", op_call("add", var, scalar(attrs.epsilon, ty.dtype))))
    if attrs.scale:
        scale = op_call("multiply", scale, gamma)
    shift: Expr = op_call("multiply", op_call("negative", mean), scale)
    if attrs.center:
        shift = op_call("add", shift, beta)
    scale_value, shift_value = constant_value(scale), constant_value(shift)  # None: run time
    if scale_value is not None and not (np.all(np.isfinite(scale_value)) and np.all(
            np.abs(scale_value) <= headroom(scale_value.dtype))):
        return None
    if shift_value is not None and not np.all(np.isfinite(shift_value)):
        return None
    axis = attrs.axis % ty.ndim
    scale = expand_bias_to_match_axis(scale, ty.ndim, (axis,))
    shift = expand_bias_to_match_axis(shift, ty.ndim, (axis,))
    return op_call("add", op_call("multiply", data, scale), shift)


def _normalize(data: Expr, axes: tuple[int, ...], eps: float, dtype: str) -> Expr:
    """``(data - mean) / sqrt(variance + eps)`` over ``axes``, keepdims (TVM's order)."""
    mean = op_call("mean", data, axis=axes, keepdims=True)
    var = op_call("variance", data, mean, axis=axes, keepdims=True)
    denom = op_call("sqrt", op_call("add", var, scalar(eps, dtype)))
    return op_call("divide", op_call("subtract", data, mean), denom)


def _affine(out: Expr, call: Call, ndim: int, axis: int) -> Expr:
    """``* gamma`` and ``+ beta`` along ``axis`` as the attrs ask."""
    if call.attrs.scale:
        out = op_call("multiply", out, expand_bias_to_match_axis(call.args[1], ndim, (axis,)))
    if call.attrs.center:
        out = op_call("add", out, expand_bias_to_match_axis(call.args[2], ndim, (axis,)))
    return out


def layer_norm_to_infer(call: Call, ty: TensorType) -> Expr:
    """``nn.layer_norm`` (TVM ``LayerNormToInferUnpack``; the reduce axis as written)."""
    out = _normalize(call.args[0], (call.attrs.axis,), call.attrs.epsilon, ty.dtype)
    return _affine(out, call, ty.ndim, call.attrs.axis % ty.ndim)


def instance_norm_to_infer(call: Call, ty: TensorType) -> Expr:
    """``nn.instance_norm`` (TVM ``InstanceNormToInferUnpack``)."""
    axis = call.attrs.axis % ty.ndim
    axes = tuple(i for i in range(1, ty.ndim) if i != axis)
    out = _normalize(call.args[0], axes, call.attrs.epsilon, ty.dtype)
    return _affine(out, call, ty.ndim, axis)


def group_norm_to_infer(call: Call, ty: TensorType) -> Expr | None:
    """``nn.group_norm`` (TVM ``GroupNormToInferUnpack``); None on a dynamic shape."""
    if not all(isinstance(d, int) for d in ty.shape):
        return None
    axis = call.attrs.axis % ty.ndim
    groups = call.attrs.num_groups
    new_shape: list[int] = []
    for i, d in enumerate(ty.shape):
        new_shape += [groups, d // groups] if i == axis else [d]
    # Normalise over every axis but the batch axis 0 and the group axis, as the op's
    # reference does. TVM reduces only the axes after the group axis, which is the same
    # for the usual axis=1 but not for a channel axis further right (its expansion then
    # disagrees with the operator it replaces).
    axes = [i for i in range(len(new_shape)) if i not in (0, axis)]
    data = op_call("reshape", call.args[0], newshape=tuple(new_shape))
    out = _normalize(data, tuple(axes), call.attrs.epsilon, ty.dtype)
    out = op_call("reshape", out, newshape=tuple(ty.shape))
    return _affine(out, call, ty.ndim, axis)


def l2_normalize_to_infer(call: Call, ty: TensorType) -> Expr:
    """``nn.l2_normalize`` (TVM ``L2NormToInferUnpack``)."""
    data = call.args[0]
    axis = call.attrs.axis or None  # () and None both reduce every axis
    sqr = op_call("multiply", data, data)
    total = op_call("maximum", op_call("sum", sqr, axis=axis, keepdims=True),
                    scalar(call.attrs.eps, ty.dtype))
    return op_call("divide", data, op_call("sqrt", total))


def _is_float(ty: TensorType) -> bool:
    """The expansions use sqrt and divide: floating-point data only (others stay calls)."""
    return ty.dtype.startswith(("float", "bfloat"))


def _float_tensor(e: Expr, m: Match) -> bool:
    ty = m.type_of(e)
    return isinstance(ty, TensorType) and _is_float(ty)


def _call_rule(op: str, expand: Callable[[Call, TensorType], Expr | None]) -> Rule:
    """``op(...)`` of floating-point type -> ``expand(call, type)`` (None: keep)."""
    pattern = is_op(op).call_any().where(_float_tensor, "a floating-point tensor")
    return Rule(f"{op} -> its inference arithmetic", pattern,
                lambda m: expand(m.expr, m.type_of(m.expr)))  # type: ignore[arg-type]


def _projection_rule(op: str, expand: Callable[[Call, TensorType], Expr | None]) -> Rule:
    """``op(...).0`` of floating-point type -> ``expand(call, type of .0)`` (None: keep)."""
    call = is_op(op).call_any()
    pattern = is_tuple_get_item(call, 0).where(_float_tensor, "a floating-point tensor")
    return Rule(f"{op}(...).0 -> its inference arithmetic", pattern,
                lambda m: expand(m[call], m.type_of(m.expr)))  # type: ignore[arg-type]


def _tensor(e: Expr, m: Match) -> bool:
    return isinstance(m.type_of(e), TensorType)


_DROPOUT_X = wildcard()

#: The rules, by the operator they replace (the first that matches and expands wins).
RULES = RuleTable((
    _call_rule("nn.layer_norm", layer_norm_to_infer),  # normalise over axis, gamma/beta
    _call_rule("nn.instance_norm", instance_norm_to_infer),  # all axes but batch and axis
    _call_rule("nn.group_norm", group_norm_to_infer),  # over each group of channels
    _call_rule("nn.l2_normalize", l2_normalize_to_infer),  # x / sqrt(max(sum(x*x), eps))
    _projection_rule("nn.batch_norm", batch_norm_to_infer),  # x * scale + shift (finite)
    Rule("nn.dropout(x).0 -> x",  # identity at inference, any dtype
         is_tuple_get_item(is_op("nn.dropout")(_DROPOUT_X), 0).where(_tensor, "a tensor"),
         lambda m: m[_DROPOUT_X]),
))


@register_pass
class SimplifyInference(Pass):
    """Replace batch_norm, dropout and the other norms by their inference-time arithmetic
    (see the module docstring). Opt level 0, as TVM registers it."""

    name = "SimplifyInference"
    idempotent = True
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        if not mod.checked_types:
            mod = infer_types(mod)
        # One sweep: the expansions build no norm or dropout, so it is the fixpoint.
        return rewrite_module(mod, RULES, keep_types=True, max_sweeps=1)
