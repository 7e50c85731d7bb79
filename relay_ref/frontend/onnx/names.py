"""ONNX names as Relay identifiers.

A Relay local is ``%`` followed by ``[A-Za-z_][A-Za-z0-9_]*`` segments joined by ``/``
(grammar/relay.lark, ``LOCAL``). ONNX names are arbitrary strings (``onnx::Conv_3``,
``1``, ``blobs_queue_e24a-...``). ``NameTable.relay_name`` maps each ONNX name to a valid,
unique identifier, keeping the name unchanged when it is already valid and free.

Invariants: ``relay_name`` is a function of the names seen so far (the same ONNX name
always maps to the same identifier); two ONNX names never share an identifier; every
identifier matches ``VALID``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

VALID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:/[A-Za-z0-9_]+)*")
_BAD = re.compile(r"[^A-Za-z0-9_]")


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
