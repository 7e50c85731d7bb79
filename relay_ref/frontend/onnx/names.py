"""ONNX names as Relay identifiers.

A Relay local is ``%`` followed by ``[A-Za-z_][A-Za-z0-9_]*`` segments joined by ``/``
(grammar/relay.lark, ``LOCAL``). ONNX names are arbitrary strings (``onnx::Conv_3``,
``1``, ``blobs_queue_e24a-...``). ``NameTable.relay_name`` maps each ONNX name to a valid,
unique identifier, keeping the name unchanged when it is already valid and free.

Invariants: ``relay_name`` is a function of the names seen so far (the same ONNX name
always maps to the same identifier); two ONNX names never share an identifier; every
identifier matches ``VALID``.

A symbolic dimension (``dim_param``: ``"batch_size"``, ``"N"``, ``"unk__123"``,
``"batch-size"``) becomes a shape variable (spec/typing.md 5.2, T-ShapeScope): ``DimTable``
maps each ``dim_param`` to a shape variable name with the same invariants (the same
``dim_param`` is the same variable wherever it occurs, two ``dim_param``s are two
variables), every name matching ``DIM_VALID`` and none a word the type grammar reserves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:/[A-Za-z0-9_]+)*")
_BAD = re.compile(r"[^A-Za-z0-9_]")
DIM_VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# words a dimension cannot be: keywords and type-level names of grammar/relay.lark
_DIM_RESERVED = frozenset({"def", "type", "extern", "let", "fn", "if", "else", "ref",
                           "match", "Tensor", "True", "False", "_", "floordiv", "floormod",
                           "min", "max", "ndim", "meta"})


def sanitise(name: str) -> str:
    """``name`` with every character a Relay identifier cannot hold replaced by ``_``
    (slashes kept between non-empty segments; a leading digit or an empty name gets a
    ``_`` prefix)."""
    segments = [_BAD.sub("_", s) or "_" for s in name.split("/")]
    if segments[0][0].isdigit():
        segments[0] = "_" + segments[0]
    return "/".join(segments)


@dataclass(slots=True)
class NameTable:
    """ONNX name -> Relay identifier, unique within one table (one ``@main``)."""

    forward: dict[str, str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)

    def reserve(self, onnx_names: list[str]) -> None:
        """Give every name in ``onnx_names`` that is already a Relay identifier itself, so
        that sanitising another (``"input:0"`` -> ``input_0``) cannot take it."""
        for name in onnx_names:
            if name not in self.forward and sanitise(name) == name and name not in self.taken:
                self.forward[name] = name
                self.taken.add(name)

    def relay_name(self, onnx_name: str) -> str:
        if onnx_name in self.forward:
            return self.forward[onnx_name]
        base = sanitise(onnx_name)
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.forward[onnx_name] = name
        self.taken.add(name)
        return name


@dataclass(slots=True)
class DimTable:
    """``dim_param`` -> shape variable name, unique within one conversion (one ``@main``)."""

    forward: dict[str, str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)

    def reserve(self, dim_params: list[str]) -> None:
        """Give every ``dim_param`` that is already a valid name itself, so that sanitising
        another (``"batch-size"``) cannot take it (``"batch_size"``)."""
        for p in dim_params:
            if p not in self.forward and DIM_VALID.fullmatch(p) and p not in _DIM_RESERVED \
                    and p not in self.taken:
                self.forward[p] = p
                self.taken.add(p)

    def dim_name(self, dim_param: str) -> str:
        if dim_param in self.forward:
            return self.forward[dim_param]
        base = _BAD.sub("_", dim_param) or "d"
        if base[0].isdigit():
            base = "d" + base
        if base in _DIM_RESERVED:
            base += "_"
        name = self.fresh(base)
        self.forward[dim_param] = name
        return name

    def fresh(self, base: str) -> str:
        """A name not taken (``base``, ``base_1`` ...), taken from now on. ``base`` must
        be valid and not reserved."""
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name
