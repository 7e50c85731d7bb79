"""A reference backend: its codegen runs the region with the definitional interpreter.

For property tests and teaching (the notebook): ``register_reference_backend(name,
supported_ops, patterns)`` registers a backend whose codegen wraps the partitioned function
(BYOC-Extern's contract: ``codegen(func, types) -> callable``) in a one-function module and
returns a callable evaluating it with ``rr.evaluate``'s interpreter on NumPy arrays. Its
values are the interpreter's by construction, so a partitioned program compiled with it
computes what the original computes exactly when partitioning and the executor's extern
calls are right. ``calls`` counts the codegen's invocations (compile time, once per
region).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from relay_ref.byoc.backend import Backend, register_backend
from relay_ref.interpreter.driver import evaluate
from relay_ref.ir.expr import Expr, Function
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import Type

__all__ = ["ReferenceCodegen", "register_reference_backend"]


class ReferenceCodegen:
    """The codegen: ``self(func, types)`` -> a callable over NumPy arrays (one per
    parameter) returning an array or a tuple of arrays. ``calls``: codegen invocations;
    ``regions``: the functions it was given."""

    def __init__(self) -> None:
        self.calls = 0
        self.regions: list[Function] = []

    def __call__(self, func: Function, types: Mapping[Expr, Type]) -> Any:
        self.calls += 1
        self.regions.append(func)

        mod = IRModule({"main": func})

        def run(*args: Any) -> Any:
            return _plain(evaluate(mod, *args))

        return run


def _plain(value: Any) -> Any:
    """An interpreter result as NumPy: tuples stay tuples."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return np.asarray(value)


def register_reference_backend(name: str, supported_ops: Iterable[str] | Mapping[str, Any],
                               patterns: Iterable[Any] = (), *, replace: bool = True,
                               **options: Any) -> Backend:
    """Register backend ``name`` running its regions with the interpreter (see the module
    docstring); ``backend.codegen.calls`` counts its compilations."""
    return register_backend(name, supported_ops=supported_ops, patterns=patterns,
                            codegen=ReferenceCodegen(), replace=replace,
                            description="reference: regions run by the interpreter",
                            **options)
