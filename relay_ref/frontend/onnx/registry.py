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


def lookup(op_type: str, version: int) -> Converter | None:
    """The converter of ``op_type`` at op version ``version``, None when there is none."""
    _load()
    for entry in _TABLE.get(op_type, ()):
        if entry.handles(version):
            return entry
    return None


def table() -> dict[str, tuple[Converter, ...]]:
    """Every registered converter, by op type (for documentation and tests)."""
    _load()
    return {k: tuple(sorted(v, key=lambda c: c.since)) for k, v in sorted(_TABLE.items())}


def _load() -> None:
    # Importing the families registers their converters (idempotent).
    from relay_ref.frontend.onnx import (  # noqa: F401
        ops_control,
        ops_control_scan,
        ops_extra,
        ops_extra_attention,
        ops_extra_loss,
        ops_extra_quant,
        ops_extra_rnn,
        ops_extra_scatter,
        ops_image,
        ops_math,
        ops_nn,
        ops_reduce,
        ops_tensor,
    )
