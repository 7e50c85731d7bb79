"""``CallInfo``: an operator call as a predicate on it sees it, with its checked types.

What a BYOC backend's support predicate and a composite's check receive
(``relay_ref.passes.compiler_support``), and what an ONNX exporter's ``supports`` and a jax
implementation read (``relay_ref.frontend.onnx.export_ops``, ``relay_ref.byoc.xla_ops``):
one record at the bottom layer, so the passes, the exporter and the backends share it.

Invariant: ``args`` and ``arg_types`` have one entry per argument; a type is None where the
checker recorded none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relay_ref.ir.expr import Call, Expr, Op
from relay_ref.ir.types import Type

__all__ = ["CallInfo"]


@dataclass(frozen=True, slots=True)
class CallInfo:
    """The call, its operator's name and attributes, its arguments with their checked
    types, its own type, and (for a composite's check) the pattern match, whose
    ``match[p]`` gives inner bindings."""

    expr: Call
    op: str
    attrs: object
    args: tuple[Expr, ...]
    arg_types: tuple[Type | None, ...]
    type: Type | None
    match: Any = None

    @staticmethod
    def of(call: Call, type_of: Callable[[Expr], Type | None], match: Any = None) -> CallInfo:
        """The ``CallInfo`` of ``call``, types read with ``type_of`` (``types.get``); the
        operator's name is empty when the callee is no operator."""
        op = call.op.name if type(call.op) is Op else ""
        return CallInfo(call, op, call.attrs, tuple(call.args),
                        tuple(type_of(a) for a in call.args), type_of(call), match)
