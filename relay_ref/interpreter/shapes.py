"""Shape variables at run time (spec/semantics.md, Symbolic shapes: Shape-Bind,
Shape-MatchCast, Shape-DPS): the per-activation shape environment and the checks of values
against types whose dimensions mention shape variables.

A shape environment maps shape-variable names to the integers they stand for in one
function activation. Invariants:

* A frame holds its shape environment under the key ``SHAPE_ENV`` (a ``Var`` no program
  can mention), and only once some variable is bound: a program without shape variables
  never creates one, and a function whose types have none does no work for them
  (``type_mentions_shape_vars`` is computed once per function, ``_FnInfo``).
* A shape environment stored in a frame is never mutated: binding copies it first
  (``bind_params``'s caller and ``match_cast`` do), so a closure, which captures the dict
  of the frame it was made in, sees exactly the variables bound before it was made
  (lexical scope, spec T-ShapeScope), and a callee's bindings never leak into its caller.
* The shape variables a branch of ``if`` or a clause of ``match`` binds are its own: the
  frame's environment is put back once the ``if``/``match`` has its value
  (``Interpreter.eval``), as the checker scopes them.
* Checks never fail falsely: a dimension whose variables are not all bound is not checked
  (``bind_shape``'s rule; the checker refuses programs with unbound variables).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from relay_ref.ir.expr import Var
from relay_ref.ir.shape import ANY, ShapeBindError, bind_shape, is_symbolic
from relay_ref.ir.symdim import dim_vars, eval_dim
from relay_ref.ir.types import TensorType, TupleType, Type

__all__ = ["SHAPE_ENV", "bind_params", "bound_text", "check_result", "resolve_type",
           "type_mentions_shape_vars"]

#: The frame key of an activation's shape environment (``dict[str, int]``). A ``Var``, so
#: that code reading a closure's captured environment treats it as an unannotated variable
#: (``relay_ref.interpreter.args``, ``relay_ref.testing.soundness``), never as a shared node.
SHAPE_ENV = Var("shape variables")


def type_mentions_shape_vars(ty: Type | None) -> bool:
    """Whether a tensor in ``ty`` (through tuple fields) has a symbolic dimension: the
    types a value is checked against at a function boundary (Shape-Bind)."""
    stack = [ty]
    while stack:
        t = stack.pop()
        if type(t) is TensorType:
            if any(is_symbolic(d) for d in t.shape):
                return True
        elif type(t) is TupleType:
            stack.extend(t.fields)
    return False


def _leaves(ty: Type, value: object, what: str) -> Iterator[tuple[TensorType, np.ndarray, str]]:
    """The (tensor type, tensor, description) pairs of ``value`` at ``ty``, left to right
    (tuple fields in order); parts whose value does not have the type's form are skipped
    (the conformance checks report those)."""
    stack: list[tuple[Type, object, str]] = [(ty, value, what)]
    while stack:
        t, v, w = stack.pop()
        if type(t) is TensorType:
            if isinstance(v, np.generic):
                v = np.asarray(v)
            if isinstance(v, np.ndarray):
                yield t, v, w
        elif type(t) is TupleType and type(v) is tuple and len(v) == len(t.fields):
            fields = enumerate(zip(t.fields, v, strict=True))  # lengths checked above
            stack.extend((ft, fv, f"{w} (field {i})") for i, (ft, fv) in reversed(list(fields)))


def bind_params(checks: tuple[tuple[Var, Type], ...], frame: Mapping[Var, object],
                env: dict[str, int]) -> tuple[Var, str] | None:
    """Shape-Bind: bind the shape variables of the parameter types ``checks`` from the
    argument values in ``frame`` into ``env``, in parameter order, and check every
    dimension; None, or the parameter and what does not match (``%y: dimension 0: n is 3
    but the value has 4``). A dimension skipped because a variable was bound only by a
    later parameter is checked by a second pass."""
    # one tensor parameter needs no second pass (bind_shape already binds before it
    # checks); a tuple parameter's fields are separate shapes, so it does
    single = len(checks) == 1 and type(checks[0][1]) is TensorType
    for rounds in (0, 1):
        if rounds and single:
            break
        for param, ty in checks:
            for t, arr, what in _leaves(ty, frame[param], f"%{param.name_hint}"):
                try:
                    bind_shape(t.shape, arr.shape, env)
                except ShapeBindError as err:
                    return param, f"{what}: {err}"
    return None


def check_result(ty: Type, value: object, env: Mapping[str, int]) -> str | None:
    """The result of an activation against its return type ``ty`` in the activation's
    shape environment ``env`` (not changed); None or what does not match."""
    scratch = dict(env)
    for t, arr, what in _leaves(ty, value, "the result"):
        try:
            bind_shape(t.shape, arr.shape, scratch)
        except ShapeBindError as err:
            return f"{what}: {err}"
    return None


def bound_text(ty: Type, env: Mapping[str, int]) -> str:
    """``n = 3, m = 2``: the shape variables of ``ty``'s tensors (through tuple fields)
    that ``env`` binds, sorted, for messages; empty when none."""
    names: set[str] = set()
    stack = [ty]
    while stack:
        t = stack.pop()
        if type(t) is TensorType:
            for d in t.shape:
                names |= dim_vars(d)
        elif type(t) is TupleType:
            stack.extend(t.fields)
    return ", ".join(f"{n} = {env[n]}" for n in sorted(names) if n in env)


def resolve_type(ty: Type, env: Mapping[str, int]) -> Type:
    """``ty`` at run time, in its tensors (through tuple fields): each symbolic dimension
    whose variables ``env`` all binds is its number, every other one ``?`` (not checked:
    never a false failure); ``ty`` itself when it has no symbolic dimension."""
    if type(ty) is TensorType:
        if not any(is_symbolic(d) for d in ty.shape):
            return ty
        shape = tuple(d if not is_symbolic(d) else
                      eval_dim(d, env) if dim_vars(d) <= env.keys() else ANY
                      for d in ty.shape)
        return TensorType(shape, ty.dtype, ty.span)
    if type(ty) is TupleType:
        fields = tuple(resolve_type(f, env) for f in ty.fields)  # types are shallow
        if all(a is b for a, b in zip(fields, ty.fields, strict=True)):
            return ty
        return TupleType(fields, ty.span)
    return ty
