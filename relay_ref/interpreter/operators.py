"""Operator calls for the interpreter's E-App-Op (spec/semantics.md 3.9): the registry's
NumPy reference, the run-time argument check of unchecked programs (Stuck-Op, spec 4) and
an operator's failure as a stuck state. No operator logic lives here: each operator is data
in ``relay_ref.ops.registry``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from relay_ref.interpreter.stuck import Stuck
from relay_ref.interpreter.values import Value, value_to_text
from relay_ref.ir.expr import Call
from relay_ref.ir.span import Span
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import TensorType, TupleType, Type

__all__ = ["check_op_arguments", "checked_reference", "op_failure", "op_reference"]


def op_reference(name: str, attrs: object,
                 call: Call | None) -> tuple[Callable[..., Any], object]:
    """The operator's NumPy reference and its attributes (the defaults when ``attrs`` is
    None: an operator used as a value). An unknown operator is Stuck-Op."""
    from relay_ref.ops.registry import get_op

    try:
        opdef = get_op(name)
    except KeyError:
        raise Stuck(f"unknown operator {name}", _span(call), rule="Stuck-Op") from None
    if attrs is None:
        attrs = opdef.attrs()
    return opdef.reference, attrs


def checked_reference(name: str, reference: Callable[..., Any],
                      call: Call | None) -> Callable[..., Any]:
    """``reference`` preceded by Stuck-Op's check, for programs that were not type-checked:
    NumPy would happily add a tuple to a tensor."""
    from relay_ref.ops.registry import get_op

    opdef = get_op(name)

    def checked(values: list[Value], attrs: object) -> Value:
        check_op_arguments(opdef, values, attrs, call)
        return reference(values, attrs)

    return checked


def check_op_arguments(opdef: Any, values: list[Value], attrs: object,
                        call: Call | None) -> None:
    """Stuck-Op for unchecked programs: the argument values' types must satisfy the
    operator's arity and type relation (T-App-Op, checked at run time)."""
    from relay_ref.ops.registry import RelationError

    name = opdef.name
    if opdef.num_inputs >= 0 and len(values) != opdef.num_inputs:
        raise Stuck(f"operator {name} takes {opdef.num_inputs} argument(s), got "
                    f"{len(values)}", _span(call), rule="Stuck-Op")
    types = []
    for v in values:
        ty = _value_type(v)
        if ty is None:
            raise Stuck(f"operator {name} cannot take {short(value_to_text(v))}: its "
                        "arguments are tensors or tuples of tensors", _span(call),
                        rule="Stuck-Op")
        types.append(ty)
    try:
        opdef.relation(types, attrs)
    except RelationError as err:
        message = str(err)
        raise Stuck(message if message.startswith(name) else f"{name}: {message}",
                    _span(call), rule="Stuck-Op") from None
    except Exception as err:  # noqa: BLE001 - a relation failing on odd types is stuck
        raise Stuck(f"{name}: arguments of types "
                    f"{', '.join(type_to_text(t) for t in types)} are not accepted "
                    f"({type(err).__name__}: {err})", _span(call), rule="Stuck-Op") from None


def _value_type(value: Value) -> Type | None:
    """The type of a tensor or (nested) tuple of tensors; None for other values."""
    if type(value) is np.ndarray:
        return TensorType(tuple(value.shape), value.dtype.name)
    if type(value) is tuple:
        fields = [_value_type(v) for v in value]
        return None if any(f is None for f in fields) else TupleType(tuple(fields))
    return None


def op_failure(name: str, err: Exception, call: Call | None) -> Exception:
    """What an operator's exception becomes: a stuck state at the call (its message named
    by the operator), except the interpreter's own ``Stuck`` and ``RecursionError`` (an
    operator applying a function), which pass through."""
    from relay_ref.ops.registry import OpRuntimeError

    if isinstance(err, Stuck | RecursionError):  # RecursionError: Stuck-Depth in apply
        return err
    message = str(err) if isinstance(err, OpRuntimeError) else f"{name}: {err}"
    if not message.startswith(name):
        message = f"{name}: {message}"
    return Stuck(message, _span(call))


def short(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters (for values quoted in messages)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _span(node: object) -> Span | None:
    return getattr(node, "span", None)
