"""Testing tools: hypothesis strategies for Relay programs and ``check_pass``.

* ``check_pass(pass_, ...)``: property-test any ``IRModule -> IRModule`` callable against
  the interpreter on generated programs (``relay_ref.testing.check``).
* ``programs()`` / ``arguments(types)``: the type-directed generator it uses
  (``relay_ref.testing.programs``); ``strategies`` and ``typed_strategies``: the syntax
  and soundness generators.

Names are imported on first use, so importing a submodule stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PassCheckError", "arguments", "check_pass", "programs", "values_equal"]


def __getattr__(name: str) -> Any:
    if name in ("check_pass", "PassCheckError", "values_equal"):
        from relay_ref.testing import check

        return getattr(check, name)
    if name in ("programs", "arguments"):
        from relay_ref.testing import programs as _programs

        return getattr(_programs, name)
    raise AttributeError(f"module 'relay_ref.testing' has no attribute {name!r}")
