"""Shape variables in compiled code (issue 29; spec/semantics.md Shape-Bind).

The code generator gives a generated function a *shape environment* ``_e`` (a dict: shape
variable name -> int, one per activation) when its parameter types mention shape variables
or its body runs ``match_cast`` / ``call_dps_packed`` / ``call_tir``:

* on entry, ``params_binder(...)(_e, *values)`` for the parameters whose types mention
  shape variables: every bare variable of every parameter bound first, then every other
  dimension checked (as the interpreter's ``bind_params``). A mismatch is a
  ``ShapeBindMismatch`` (at the call, as the interpreter locates it; at the entry, the
  parameter) worded as the interpreter's (``call of @f: argument %y: dimension 0: ...``);
* gradual casts whose target mentions shape variables (``_cast(value, K, _e)``) and the
  result against a symbolic return type (``check_result_shape``) are checked in ``_e``;
* ``match_cast(value, T, _e)`` (Shape-MatchCast) checks the value against ``T`` in the
  current environment and binds ``T``'s new variables into it; failure is an
  ``OpRuntimeError`` located at the ``match_cast``;
* ``call_dps_packed`` / ``call_tir`` (Shape-DPS) is one runtime step whose arguments are the
  inputs' tuple and ``_e``: outputs allocated from ``out_type`` evaluated in ``_e``.

Invariants: an environment only grows within an activation (``match_cast`` adds names it
did not have, T-ShapeScope makes a name bound once), except that the names a branch of
``if`` / a clause of ``match`` binds are dropped after it (``_e`` saved and put back, as
the interpreter scopes them), so a size evaluated from it stays valid while it can be
named. A closure starts from a snapshot of the enclosing activation's environment taken
when it is made (lexical scope), extended by its own parameters and ``match_cast`` s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from relay_ref.ir.shape import ShapeBindError, bind_shape, dim_vars, is_symbolic
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.symbolic import DPSAttrs, call_packed, match_value
from relay_ref.typecheck.shapes import type_vars

__all__ = ["ShapeBindMismatch", "ShapeMismatch", "bind_param", "bounds_check",
           "check_result_shape", "dps_step", "has_shape_vars", "match_cast", "params_binder",
           "type_vars"]


class ShapeMismatch(Exception):
    """A value that came through a ``?`` dimension contradicts a static annotation;
    ``at_call``: the annotation is a parameter's, so the error is the call's (as the
    interpreter locates it). ``rule``: the stuck state's rule tag."""

    rule = "Stuck-Cast"

    def __init__(self, message: str, at_call: bool) -> None:
        super().__init__(message)
        self.at_call = at_call
        #: where the error is when the activation is the entry's (a parameter), if known
        self.span: Any = None


class ShapeBindMismatch(ShapeMismatch):
    """An argument's shape contradicts its parameter's symbolic type (Shape-Bind)."""

    rule = "Shape-Bind"


def has_shape_vars(ty: Type | None) -> bool:
    return bool(type_vars(ty))


def bind_param(env: dict[str, int], value: Any, ty: Type, name: str) -> None:
    """Shape-Bind for one value alone (``params_binder`` for all of a function's)."""
    problem = _bind_leaves(((value, ty, f"%{name}"),), env)
    if problem is not None:
        raise ShapeBindMismatch(f"shape mismatch: {problem[1]}", True)


def _bind_leaves(items: tuple[tuple[Any, Type, str], ...],
                 env: dict[str, int]) -> tuple[int, str] | None:
    """The interpreter's ``bind_params`` (relay_ref.interpreter.shapes): every tensor of
    every item bound with ``bind_shape`` in order, twice when there are several (a
    dimension skipped because a variable was bound only by a later parameter is checked
    by the second pass); None, or the item and what does not match (``%y: dimension 0:
    ...``)."""
    leaves: list[tuple[TensorType, tuple[int, ...], str, int]] = []
    for k, (value, ty, what) in enumerate(items):
        stack: list[tuple[Type, Any, str]] = [(ty, value, what)]
        while stack:
            t, v, w = stack.pop()
            if type(t) is TensorType:
                shape = getattr(v, "shape", None)
                if shape is not None:
                    leaves.append((t, tuple(shape), w, k))
            elif type(t) is TupleType and type(v) is tuple and len(v) == len(t.fields):
                stack.extend((ft, fv, f"{w} (field {i})")
                             for i, (ft, fv) in reversed(list(enumerate(zip(t.fields, v,
                                                                             strict=True)))))
    for rounds in (0, 1):
        if rounds and len(leaves) < 2:
            break
        for t, shape, w, k in leaves:
            try:
                bind_shape(t.shape, shape, env)
            except ShapeBindError as err:
                return k, f"{w}: {err}"
    return None


def params_binder(params: tuple[tuple[str, Type, Any], ...], callee: str) -> Any:
    """Shape-Bind for a function's parameters whose types mention shape variables
    (``(name, type, span)`` in parameter order), specialised at compile time:
    ``bind(env, *values)``. Every bare variable of every parameter is bound first, then
    every other dimension checked (``n * 2`` of the first parameter against the ``n`` of
    the second), as the interpreter's ``bind_params`` does. The fast path (tensor
    parameters): a loop over precomputed (position, number-or-name) pairs, then the
    dimension expressions; on any mismatch the bindings it made are undone and the
    rule's own checks (``_bind_leaves``) give the message, raised as a
    ``ShapeBindMismatch`` at the call (at the entry: the parameter's span)."""
    from relay_ref.ir.shape import eval_dim, var_name

    fast = all(type(ty) is TensorType for _, ty, _ in params)
    plan = []
    for k, (_, ty, _) in enumerate(params):
        if type(ty) is not TensorType:
            continue
        simple = tuple((i, d if type(d) is int else var_name(d)) for i, d in enumerate(ty.shape)
                       if type(d) is int or var_name(d) is not None)
        exprs = tuple((i, d, frozenset(dim_vars(d))) for i, d in enumerate(ty.shape)
                      if type(d) is not int and var_name(d) is None and is_symbolic(d))
        plan.append((k, len(ty.shape), simple, exprs))

    def slow(env: dict[str, int], added: list[str], values: tuple[Any, ...]) -> None:
        for n in added:
            del env[n]
        problem = _bind_leaves(tuple((v, ty, f"%{name}") for v, (name, ty, _)
                                     in zip(values, params, strict=True)), env)
        if problem is not None:
            err = ShapeBindMismatch(f"call of {callee}: argument {problem[1]}", True)
            err.span = params[problem[0]][2]
            raise err

    def bind(env: dict[str, int], *values: Any) -> None:
        added: list[str] = []
        if not fast:
            slow(env, added, values)
            return
        shapes = []
        for k, rank, simple, _ in plan:
            value = values[k]
            shape = value.shape if type(value) is np.ndarray else getattr(value, "shape", None)
            if shape is None or len(shape) != rank:
                return slow(env, added, values)
            shapes.append(shape)
            for i, d in simple:
                n = shape[i]
                if type(d) is int:
                    if d != n:
                        return slow(env, added, values)
                else:
                    have = env.get(d)
                    if have is None:
                        env[d] = int(n)
                        added.append(d)
                    elif have != n:
                        return slow(env, added, values)
        for (_, _, _, exprs), shape in zip(plan, shapes, strict=True):
            for i, d, names in exprs:
                if names <= env.keys() and eval_dim(d, env) != shape[i]:
                    return slow(env, added, values)
        return None

    return bind


def bounds_check(bounds: dict[str, int], span: Any) -> Any:
    """``check(env)``: ``rr.compile(shape_bounds=...)``'s promises at the entry, once its
    parameters bound their shape variables: a variable above its bound is a
    ``RelayRuntimeError`` at ``span`` (the entry), whether or not the memory plan
    preallocated buffers for the bound (as Relax's upper-bound attribute, a promise)."""
    items = tuple(bounds.items())

    def check(env: dict[str, int]) -> None:
        for name, bound in items:
            have = env.get(name)
            if have is not None and have > bound:
                from relay_ref.diagnostics import RelayRuntimeError

                raise RelayRuntimeError(
                    f"shape variable {name} is {have}, above its bound {bound} given to "
                    f"rr.compile(shape_bounds=...); compile with a larger bound, or without "
                    f"shape_bounds", span)

    return check


def check_result_shape(value: Any, ty: Type, env: dict[str, int], callee: str) -> None:
    """Shape-Bind, the result: an activation's result against its return type in the
    activation's environment (not changed); dimensions with unbound variables are not
    checked. A mismatch is a ``ShapeBindMismatch`` at the function's body, worded as
    the interpreter's."""
    scratch = dict(env)
    problem = _bind_leaves(((value, ty, "the result"),), scratch)
    if problem is not None:
        raise ShapeBindMismatch(f"{callee} returned a value that does not have its return "
                                f"type: {problem[1]}", False)


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
