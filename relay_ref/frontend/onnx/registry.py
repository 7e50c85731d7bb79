"""Converters as data: ONNX op type -> the converters that handle it, by op version.

An ONNX model imports operator set N of a domain; a node of type ``T`` then means the
newest version of ``T`` whose ``since_version`` is at most N (``onnx.defs.get_schema``).
A ``Converter`` covers the op versions ``since ..= until`` (until None: the newest the
installed ``onnx`` knows), so per-version semantics (Softmax before and from 13, axes as
an attribute or an input) are separate entries of one table, and the up-front check can
say exactly which (op, version) pairs a model needs that the table lacks.

Converter protocol: ``convert(ctx: NodeContext) -> Expr | Sequence[Expr | None]``, one
expression per ONNX output (a single one when the node has one output); ``static_inputs``
lists the input positions read as values at import time (shapes, axes, pads), which lets
the converter embed initializers read there as constants; ``outputs`` is how many of the
node's outputs the converter produces (later ones, when a model uses them, are
unsupported); ``check(node) -> list[str]`` names the attribute values it cannot handle.

This module is the table and its decorator only: the converter families (``ops_*.py``)
import ``converter`` from here, and ``lookup.py`` (which imports the families, so that
their converters are registered) answers ``lookup`` and ``table`` -- no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# The domains whose operators the table covers ("" and "ai.onnx" are the same domain).
DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True, slots=True)
class Converter:
    op_type: str
    convert: Callable[..., object]
    since: int = 1
    until: int | None = None
    static_inputs: tuple[int, ...] = ()
    outputs: int = 1
    check: Callable[..., list[str]] | None = None

    def handles(self, version: int) -> bool:
        return self.since <= version and (self.until is None or version <= self.until)


_TABLE: dict[str, list[Converter]] = {}


def converter(op_types: str | tuple[str, ...], *, since: int = 1, until: int | None = None,
              static_inputs: tuple[int, ...] = (), outputs: int = 1,
              check: Callable[..., list[str]] | None = None) -> Callable:
    """Decorator: register the function as the converter of ``op_types`` for op versions
    ``since ..= until``. Version ranges of one op type must not overlap."""
    names = (op_types,) if isinstance(op_types, str) else op_types

    def register(fn: Callable) -> Callable:
        for name in names:
            entry = Converter(name, fn, since, until, static_inputs, outputs, check)
            for other in _TABLE.get(name, []):
                if entry.handles(other.since) or other.handles(since):
                    raise ValueError(f"converters of {name} overlap at version "
                                     f"{max(since, other.since)}")
            _TABLE.setdefault(name, []).append(entry)
        return fn
    return register


def registered(op_type: str) -> tuple[Converter, ...]:
    """The converters registered so far for ``op_type`` (none loaded here: see lookup.py)."""
    return tuple(_TABLE.get(op_type, ()))


def registered_op_types() -> list[str]:
    """The op types with a converter registered so far."""
    return list(_TABLE)
