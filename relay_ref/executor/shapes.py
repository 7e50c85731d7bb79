"""Shape variables in compiled code (issue 29; spec/semantics.md Shape-Bind).

The code generator gives a generated function a *shape environment* ``_e`` (a dict: shape
variable name -> int, one per activation) when its parameter types mention shape variables
or its body runs ``match_cast`` / ``call_dps_packed`` / ``call_tir``:

* on entry, ``bind_param(_e, value, T, name)`` per such parameter, in parameter order
  (``relay_ref.ir.shape.bind_shape``: bare variables bound left to right, then every
  dimension whose variables are bound checked). A mismatch is a ``ShapeBindMismatch``
  (a ``ShapeMismatch`` at the call, as the interpreter locates it; at the entry, the
  parameter) naming the parameter, the dimension and both values;
* ``match_cast(value, T, _e)`` (Shape-MatchCast) checks the value against ``T`` in the
  current environment and binds ``T``'s new variables into it; failure is an
  ``OpRuntimeError`` located at the ``match_cast``;
* ``call_dps_packed`` / ``call_tir`` (Shape-DPS) is one runtime step whose arguments are the
  inputs' tuple and ``_e``: outputs allocated from ``out_type`` evaluated in ``_e``.

Invariant: an environment only grows within an activation (``match_cast`` adds names it did
not have, T-ShapeScope makes a name bound once), so a size evaluated from it stays valid
for the rest of the activation. Closures get an environment of their own (their own
parameters and ``match_cast`` s), not the enclosing activation's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relay_ref.ir.shape import ShapeBindError, bind_shape, dim_vars, is_symbolic, shape_vars
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.symbolic import DPSAttrs, call_packed, match_value

__all__ = ["ShapeBindMismatch", "ShapeMismatch", "bind_param", "dps_step", "has_shape_vars",
           "match_cast", "param_binder", "type_vars"]


class ShapeMismatch(Exception):
    """A value that came through a ``?`` dimension contradicts a static annotation;
    ``at_call``: the annotation is a parameter's, so the error is the call's (as the
    interpreter locates it). ``rule``: the stuck state's rule tag."""

    rule = "Stuck-Cast"

    def __init__(self, message: str, at_call: bool) -> None:
        super().__init__(message)
        self.at_call = at_call


class ShapeBindMismatch(ShapeMismatch):
    """An argument's shape contradicts its parameter's symbolic type (Shape-Bind)."""

    rule = "Shape-Bind"


def type_vars(ty: Type | None) -> frozenset[str]:
    """The shape variables a (tensor or tuple) type mentions."""
    if type(ty) is TensorType:
        return shape_vars(ty.shape)
    if type(ty) is TupleType:
        out: frozenset[str] = frozenset()
        for f in ty.fields:
            out |= type_vars(f)
        return out
    return frozenset()


def has_shape_vars(ty: Type | None) -> bool:
    return bool(type_vars(ty))


def bind_param(env: dict[str, int], value: Any, ty: Type, name: str) -> None:
    """Shape-Bind for one parameter: bind and check ``value``'s shapes against ``ty``."""
    if type(ty) is TupleType:
        if type(value) is not tuple or len(value) != len(ty.fields):
            return  # the type's own checks (the argument rule, casts) cover the form
        for k, (v, t) in enumerate(zip(value, ty.fields, strict=True)):
            bind_param(env, v, t, f"{name}.{k}")
        return
    if type(ty) is not TensorType:
        return
    shape = np.shape(value)
    try:
        bind_shape(ty.shape, shape, env)
    except ShapeBindError as err:
        raise ShapeBindMismatch(f"shape mismatch: %{name}: {err}", True) from None


def param_binder(ty: Type, name: str) -> Any:
    """``bind_param`` for one parameter, specialised at compile time: a tensor type's
    numbers and bare variables are checked / bound by a loop over precomputed pairs, other
    dimensions (``n * 4``) evaluated after; any mismatch is handed to ``bind_param`` for its
    message (the same checks, in ``bind_shape``'s order). Other types: ``bind_param``."""
    if type(ty) is not TensorType:
        return lambda env, value: bind_param(env, value, ty, name)
    from relay_ref.ir.shape import eval_dim, var_name

    rank = len(ty.shape)
    simple = tuple((i, d if type(d) is int else var_name(d)) for i, d in enumerate(ty.shape)
                   if type(d) is int or var_name(d) is not None)
    exprs = tuple((i, d) for i, d in enumerate(ty.shape)
                  if type(d) is not int and var_name(d) is None and is_symbolic(d))

    def bind(env: dict[str, int], value: Any) -> None:
        shape = value.shape if type(value) is np.ndarray else np.shape(value)
        if len(shape) != rank:
            bind_param(env, value, ty, name)
            return
        for i, d in simple:
            n = shape[i]
            if type(d) is int:
                if d != n:
                    break
            else:
                have = env.get(d)
                if have is None:
                    env[d] = int(n)
                elif have != n:
                    break
        else:
            for i, d in exprs:
                if dim_vars(d) <= env.keys() and eval_dim(d, env) != shape[i]:
                    break
            else:
                return
        bind_param(env, value, ty, name)  # the mismatch, reported by the rule's checks

    return bind


def match_cast(value: Any, ty: Type, env: dict[str, int]) -> Any:
    """Shape-MatchCast at run time: ``value`` (unchanged) after checking it against ``ty``
    and binding ``ty``'s new shape variables into ``env``."""
    match_value(value, ty, env)
    return value


def dps_step(op: str, attrs: DPSAttrs) -> Any:
    """The kernel of a ``call_dps_packed`` / ``call_tir`` step: ``fn(inputs, env)``."""

    def run(inputs: Any, env: dict[str, int]) -> Any:
        return call_packed(op, attrs, inputs if type(inputs) is tuple else (inputs,), env)

    run.__name__ = f"{op}_{attrs.func_name}"
    return run
