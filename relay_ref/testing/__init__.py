"""Testing tools: hypothesis strategies for Relay programs and ``check_pass``.

* ``check_pass(pass_, ...)``: property-test any ``IRModule -> IRModule`` callable against
  the interpreter on generated programs (``relay_ref.testing.check``), focused on what the
  pass rewrites (``focus``, ``autofocus``); returns a ``CheckReport`` (``report``) and
  raises ``VacuousCheck`` when the pass fired on too few programs to prove anything.
* ``programs()`` / ``arguments(types)``: the type-directed generator it uses
  (``relay_ref.testing.programs``); ``strategies`` and ``typed_strategies``: the syntax
  and well-typed generators; ``sound_programs``, ``soundness`` and ``census``: the
  soundness property (spec/semantics.md 7), its check and its census;
  ``symbolic_programs``: well-typed programs with symbolic shapes (match_cast, DPS calls,
  dataflow blocks) and ``strategies.modules(symbolic=True)`` their syntax anywhere.

Names are imported on first use, so importing a submodule stays cheap.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

__all__ = ["CheckReport", "PassCheckError", "VacuousCheck", "arguments", "check_pass",
           "programs", "values_equal"]


def __getattr__(name: str) -> Any:
    if name in ("check_pass", "PassCheckError", "VacuousCheck", "CheckReport", "values_equal"):
        return getattr(importlib.import_module("relay_ref.testing.check"), name)
    if name in ("programs", "arguments"):
        return getattr(importlib.import_module("relay_ref.testing.programs"), name)
    raise AttributeError(f"module 'relay_ref.testing' has no attribute {name!r}")


class _Package(ModuleType):
    """This package, whose public name ``programs`` is the generator function although a
    submodule has that name too: when the import system binds the submodule
    ``relay_ref.testing.programs`` as an attribute of the package (after any ``from
    relay_ref.testing.programs import ...``), the function is bound instead. So
    ``relay_ref.testing.programs`` is always the function, and the module is reached
    through ``from relay_ref.testing.programs import ...`` (``sys.modules``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "programs" and isinstance(value, ModuleType):
            value = value.programs
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
