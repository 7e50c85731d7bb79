"""Type soundness as a checkable property (progress + preservation, as PLT Redex checks it;
the theorems are spec/semantics.md section 7).

``value_conforms(value, ty, mod)`` decides the value typing ``Σ ⊢ v : τ`` of
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
  types (V-Op; ``negative`` does not conform to ``fn (int32) -> float32``);
* ``ref(T)``: a ``RefValue`` whose contents conform to ``T`` (V-Ref with V-Store at the
  cell); each cell is checked once per type, so a cyclic store terminates;
* a type variable: any value;

and V-Closure's premise ``Σ ⊢ ρ(x) : Γ(x)`` on every closure reachable from the value
(through tuples, ADT values, cells and other closures' environments): each captured value
conforms to its variable's annotation or inferred type (``mod.checked_types``), so the cells
a closure captured are checked too (V-Store on every reachable location).

The one conformance routine is ``relay_ref.interpreter.args.value_mismatch`` (the host
arguments' check, A-Value, spec/semantics.md 4.1); this module adds the walk over closure
environments and the classification of stuck states.

``stuck_kind(err)`` names what a ``RelayRuntimeError`` is, from the rule tag its message
ends with (``[E-Match-Fail]``; ``relay_ref.interpreter.stuck``) or, for the untagged rows of
spec section 4, its operator's message. ``check_soundness(case)`` runs one generated
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
from relay_ref.ir.expr import Op
from relay_ref.ir.module import IRModule
from relay_ref.ir.shape import ANY
from relay_ref.ir.types import FuncType, RefType, TensorType, TupleType, Type, TypeCall, substitute
from relay_ref.syntax.printer import astext
from relay_ref.typecheck.infer import infer_types

__all__ = ["ALLOWED_STUCK", "CAST_RULES", "Outcome", "SoundnessViolation",
           "check_soundness", "conformance_problem", "stuck_kind", "substitute",
           "value_conforms"]


def value_conforms(value: object, ty: Type, mod: IRModule) -> bool:
    """``Σ ⊢ value : ty`` with V-Store on every location it reaches (module docstring)."""
    return conformance_problem(value, ty, mod) is None


def conformance_problem(value: object, ty: Type, mod: IRModule) -> str | None:
    """None when ``value_conforms``, else what does not conform (a message)."""
    problem = value_mismatch(value, ty, mod, check_functions=True)
    if problem is not None:
        return problem[0]
    wrong_op = _operator_problem(value, ty, mod)
    if wrong_op is not None:
        return wrong_op
    for closure in _reachable_closures(value):  # V-Closure's premise: Σ ⊢ ρ(x) : Γ(x)
        for var, captured in closure.env.items():
            var_ty = var.type_annotation or mod.checked_types.get(var)
            if var_ty is None:
                continue
            problem = value_mismatch(captured, var_ty, mod, check_functions=True)
            wrong_op = problem[0] if problem is not None else \
                _operator_problem(captured, var_ty, mod)
            if wrong_op is not None:
                return f"captured %{var.name_hint} of a closure: {wrong_op}"
    return None


def _operator_problem(value: object, ty: Type, mod: IRModule) -> str | None:
    """V-Op, which ``value_mismatch`` leaves out (it accepts any operator at a function
    type): an operator reached at a function type over tensors conforms when its type
    relation, given the argument types, gives the result type (``?`` matching any extent).
    The value is walked with its type through tuples, ADT values and cells (each cell once
    per type: a cyclic store terminates)."""
    stack: list[tuple[object, Type]] = [(value, ty)]
    cells: set[tuple[int, Type]] = set()
    while stack:
        v, t = stack.pop()
        if isinstance(t, TupleType) and isinstance(v, tuple) \
                and not isinstance(v, ConstructorValue):
            stack.extend(zip(v, t.fields, strict=False))
        elif isinstance(t, TypeCall) and isinstance(v, ConstructorValue):
            td = mod.type_definitions.get(t.func.name)
            if td is not None:
                subst = dict(zip(td.type_vars, t.args, strict=False))
                stack.extend((f, substitute(i, subst))
                             for f, i in zip(v.fields, v.constructor.inputs, strict=False))
        elif isinstance(t, RefType) and isinstance(v, RefValue):
            if (id(v), t) not in cells:
                cells.add((id(v), t))
                stack.append((v.value, t.value))
        elif isinstance(t, FuncType) and isinstance(v, Op) and \
                all(isinstance(a, TensorType) for a in (*t.arg_types, t.ret_type)):
            from relay_ref.ops.registry import get_op

            opdef = get_op(v.name)
            try:
                out = opdef.relation(list(t.arg_types), opdef.attrs())
            except Exception as err:  # noqa: BLE001 - a refusing relation is the answer
                return f"the operator {v.name} does not have type {astext(t)} ({err})"
            ret = t.ret_type
            assert isinstance(ret, TensorType)
            if not (isinstance(out, TensorType) and out.dtype == ret.dtype
                    and len(out.shape) == len(ret.shape)
                    and all(a == b or ANY in (a, b) for a, b in
                            zip(out.shape, ret.shape, strict=True))):
                return (f"the operator {v.name} does not have type {astext(t)} (its "
                        f"relation gives {astext(out)})")
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

#: Rule tags a failed gradual cast may carry (a ``?`` dimension meeting a static one at run
#: time, spec/semantics.md 4), beside any tag with "Cast" in its name. Untagged, the same
#: state reads "shape mismatch: ..." (``Interpreter.check_annotation``).
CAST_RULES: frozenset[str] = frozenset()

#: The stuck kinds of spec/semantics.md 4's first table a generated program may reach, and
#: the feature (``sound_programs.FEATURES``) the program must use for each. Stuck-Depth is
#: allowed by the spec but unreachable here (every recursion has a small bound), so it is
#: not listed: reaching it would be a bug.
ALLOWED_STUCK = {"match-fail": "match?", "cast": "?", "divide": "divide", "take": "take"}


def stuck_kind(err: RelayRuntimeError) -> str:
    """``"match-fail"`` (E-Match-Fail), ``"cast"`` (a ``?`` dimension contradicted),
    ``"divide"`` / ``"take"`` (those operators failing as their references say), else the
    rule tag (``Stuck-Proj``, ``Stuck-Depth`` ...) or ``"other"`` (an internal error, an
    operator failing otherwise)."""
    message = err.diagnostics[0].message if err.diagnostics else str(err)
    tag = re.search(r"\[([A-Za-z][\w-]*)\]\s*$", message)
    if tag is not None:
        rule = tag.group(1)
        if rule == "E-Match-Fail":
            return "match-fail"
        if rule in CAST_RULES or "cast" in rule.lower():
            return "cast"
        return rule
    if message.startswith("shape mismatch:"):
        return "cast"
    if message.startswith("divide: integer division by zero"):
        return "divide"
    if message.startswith("take: index out of range"):
        return "take"
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
