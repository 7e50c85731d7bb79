"""Type soundness as a checkable property (progress + preservation, as PLT Redex checks it;
the theorems are spec/semantics.md section 7).

``store_conforms(value, ty, mod)`` decides the value typing ``Σ ⊢ v : τ`` of
spec/semantics.md 1.1 together with the store typing V-Store (1.2) on every location the
value reaches:

* ``Tensor[s, d]``: an ``ndarray`` of dtype ``d`` whose shape matches ``s`` (``?`` matches any
  extent; V-Tensor);
* ``(T1, ..., Tn)``: a tuple of n conforming values (V-Tuple);
* ``Adt[T1, ..., Tk]``: a ``ConstructorValue`` of one of the ADT's constructors whose fields
  conform to the constructor's field types at the ``Ti`` (V-Ctor);
* ``fn (...) -> R``: a closure or recursive closure whose function type-checks against the
  type (V-Closure, V-RecClosure: ``fn (%x: int32) { True }`` does not conform to
  ``fn (float32) -> float32``), a constructor whose signature unifies with it (V-CtorFn), an
  operator whose type relation gives ``R`` from the argument types when they are tensor
  types (V-Op; ``negative`` does not conform to ``fn (int32) -> float32``): the cases of
  ``value_mismatch(..., check_functions=True)``;
* ``ref(T)``: a ``RefValue`` whose contents conform to ``T`` (V-Ref with V-Store at the
  cell); each cell is checked once per type, so a cyclic store terminates;
* a type variable: any value;

and V-Closure's premise ``Σ ⊢ ρ(x) : Γ(x)`` on every closure reachable from the value
(through tuples, ADT values, cells and other closures' environments): each captured value
conforms to its variable's annotation or inferred type (``mod.checked_types``), so the cells
a closure captured are checked too (V-Store on every reachable location).

The one conformance routine is ``relay_ref.interpreter.args.value_mismatch`` (the host
arguments' check, A-Value, spec/semantics.md 4.1, whose predicate form there is
``args.value_conforms``); ``store_conforms`` adds only the walk over closure environments
(V-Closure's premise, so the store reachable through closures is checked too), and this
module the classification of stuck states.

``stuck_kind(err)`` names what a ``RelayRuntimeError`` is, from the rule tag its message
ends with (``[E-Match-Fail]``, ``[Stuck-Cast]``; ``relay_ref.interpreter.stuck``) or, for an
operator failing on its values (untagged: spec section 4 names no rule), the operator the
message starts with. ``check_soundness(case)`` runs one generated
program and raises ``SoundnessViolation`` unless it returned a conforming value or got
stuck in a way section 4 allows *for a program using what this one uses*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from relay_ref.diagnostics import RelayError, RelayRuntimeError
from relay_ref.interpreter.args import value_mismatch
from relay_ref.interpreter.driver import evaluate
from relay_ref.interpreter.values import Closure, ConstructorValue, RecClosure, RefValue
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import Type
from relay_ref.syntax.printer import astext
from relay_ref.typecheck.infer import infer_types

__all__ = ["ALLOWED_STUCK", "Outcome", "SoundnessViolation", "check_soundness",
           "conformance_problem", "store_conforms", "stuck_kind"]


def store_conforms(value: object, ty: Type, mod: IRModule) -> bool:
    """``Σ ⊢ value : ty`` with V-Store on every location it reaches (module docstring)."""
    return conformance_problem(value, ty, mod) is None


def conformance_problem(value: object, ty: Type, mod: IRModule) -> str | None:
    """None when ``store_conforms``, else what does not conform (a message)."""
    problem = value_mismatch(value, ty, mod, check_functions=True)
    if problem is not None:
        return problem[0]
    for closure in _reachable_closures(value):  # V-Closure's premise: Σ ⊢ ρ(x) : Γ(x)
        for var, captured in closure.env.items():
            var_ty = var.type_annotation or mod.checked_types.get(var)
            if var_ty is None:
                continue
            problem = value_mismatch(captured, var_ty, mod, check_functions=True)
            if problem is not None:
                return f"captured %{var.name_hint} of a closure: {problem[0]}"
    return None


def _reachable_closures(value: object) -> list[Closure]:
    """Every closure reachable from ``value`` (through tuples, ADT values, cells, closure
    environments), each once; iterative and safe on cyclic stores."""
    out: list[Closure] = []
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray) or id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, tuple) and not isinstance(v, ConstructorValue):
            stack.extend(v)
        elif isinstance(v, ConstructorValue):
            stack.extend(v.fields)
        elif isinstance(v, RefValue):
            stack.append(v.value)
        elif isinstance(v, RecClosure):
            stack.append(v.closure)
        elif isinstance(v, Closure):
            out.append(v)
            stack.extend(v.env.values())
    return out


# -- stuck states ---------------------------------------------------------------------------

#: The stuck kinds of spec/semantics.md 4's first table a generated program may reach, and
#: the feature (``sound_programs.FEATURES``) the program must use for each. A failed cast
#: (Stuck-Cast) and an operator whose operands do not broadcast at run time are allowed only
#: where the generator actually sent a value of another extent through ``?``
#: ("?-mismatch"): with only ``?`` annotations the values have the static extents, and a
#: cast that fails there is a bug. Stuck-Depth is allowed by the spec but unreachable here
#: (every recursion has a small bound), so it is not listed: reaching it would be a bug.
ALLOWED_STUCK = {"match-fail": "match?", "cast": "?-mismatch", "broadcast": "?-mismatch",
                 "divide": "divide", "take": "take"}


def stuck_kind(err: RelayRuntimeError) -> str:
    """``"match-fail"`` (E-Match-Fail), ``"cast"`` (Stuck-Cast: a ``?`` dimension
    contradicted), else the rule tag the message ends with (``Stuck-Proj``, ``Stuck-Depth``
    ...). An untagged error is an operator failing on its values (spec section 4 names no
    rule for it; ``interpreter/operators.op_failure`` starts its message with the
    operator's name): ``"divide"`` / ``"take"`` (division by zero, an index out of range),
    ``"broadcast"`` (operands whose run-time shapes do not broadcast), else ``"other"``
    (an internal error, an operator failing otherwise)."""
    message = err.diagnostics[0].message if err.diagnostics else str(err)
    tag = re.search(r"\[([A-Za-z][\w-]*)\]\s*$", message)
    if tag is not None:
        return {"E-Match-Fail": "match-fail", "Stuck-Cast": "cast"}.get(tag.group(1),
                                                                         tag.group(1))
    op, _, reason = message.partition(": ")
    if op == "divide" and reason.startswith("integer division by zero"):
        return "divide"
    if op == "take" and reason.startswith("index out of range"):
        return "take"
    if "could not be broadcast" in reason:
        return "broadcast"
    return "other"


class SoundnessViolation(AssertionError):
    """A well-typed program got stuck where the spec says it cannot, or returned a value
    (or left a store) that does not conform to its type; the message holds the program."""


@dataclass(frozen=True)
class Outcome:
    """What one program did: its value, or the kind of stuck state (``stuck_kind``) and
    the error's first line."""

    value: object = None
    stuck: str | None = None
    message: str = ""


def check_soundness(case: object) -> Outcome:
    """Type-check and evaluate a ``sound_programs`` case (``module``, ``features``,
    ``text()``) and check the property of spec/semantics.md 7; raises
    ``SoundnessViolation`` (a generator bug, an ill-typed program, is one too: it must fail
    loudly, not be filtered away)."""
    mod, features = case.module, case.features  # type: ignore[attr-defined]
    try:
        typed = infer_types(mod)
    except RelayError as err:
        raise SoundnessViolation(f"generated program is ill-typed (generator bug):\n"
                                 f"{err.render()}\n{case.text()}") from None  # type: ignore
    ty = typed.global_types["main"].ret_type
    try:
        value = evaluate(typed)
    except RelayRuntimeError as err:
        kind = stuck_kind(err)
        needs = ALLOWED_STUCK.get(kind)
        if needs is None or needs not in features:
            raise SoundnessViolation(
                f"well-typed program stuck where section 4 does not allow it ({kind}; "
                f"features {sorted(features)}):\n{err.render()}\n{astext(typed)}"
            ) from None
        return Outcome(stuck=kind, message=err.diagnostics[0].message)
    except Exception as err:  # noqa: BLE001 - progress: nothing else may escape
        raise SoundnessViolation(f"evaluate raised {type(err).__name__}: {err}\n"
                                 f"{astext(typed)}") from err
    problem = conformance_problem(value, ty, typed)
    if problem is not None:
        raise SoundnessViolation(f"preservation: the value does not conform to "
                                 f"{astext(ty)}: {problem}\n{astext(typed)}")
    return Outcome(value=value)
