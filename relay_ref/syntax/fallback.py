"""What the parser needs from a fallback module (the prelude is the one in use).

The parser resolves a name that the text does not define, nor ``base_module``, in
``fallback.module`` (globals, types) and ``fallback.constructors``; afterwards it merges
``fallback.closure(used)`` into the module it returns: the fallback definitions the text
used plus every fallback definition those use, transitively. The parser knows nothing more
about the prelude: ``relay_ref.prelude`` implements this protocol (``prelude_fallback()``)
and the public ``rr.parse(..., prelude=True)`` passes it (DESIGN.md section 2).

Invariants an implementation keeps: ``module`` is never mutated; ``constructors`` is
``module.constructors``; ``closure(roots)`` returns definitions of ``module`` only, in
``module``'s order, and contains every root that ``module`` defines.
"""

from __future__ import annotations

from typing import Protocol

from relay_ref.ir.expr import Constructor, Function
from relay_ref.ir.module import IRModule, TypeData

__all__ = ["Fallback"]


class Fallback(Protocol):
    """A module whose definitions a parsed text may use without defining them."""

    @property
    def module(self) -> IRModule:
        """The definitions on offer."""
        ...

    @property
    def constructors(self) -> dict[str, Constructor]:
        """``module``'s constructors by name (computed once)."""
        ...

    def closure(self, roots: frozenset[str]
                ) -> tuple[list[TypeData], list[tuple[str, Function]]]:
        """The definitions reachable from ``roots`` (``"@f"`` for a global, ``"T"`` for a
        type), as ``(type definitions, (name, function) pairs)`` in ``module``'s order."""
        ...
