"""The pass base class and registration (TVM's ``tvm.transform`` in miniature; DESIGN.md
section 4). Pass modules import this module and nothing else of the pass infrastructure:
looking passes up by name is ``relay_ref.passes.registry`` (which imports every pass
module), running them is ``relay_ref.passes.manager`` (the one pipeline of ``rr.optimize``,
``relay opt`` and ``rr.compile``), so no pass module imports back into a module that
imports it.

A *pass* is any callable ``IRModule -> IRModule``. The project's passes are small classes
with a ``name``, an ``opt_level`` and ``__call__``; each states its guarantee in its
docstring, and every guarantee includes the two that ``relay_ref.testing.check_pass``
checks on generated programs: the result type-checks with ``@main``'s type unchanged, and
it *refines* the input (same value wherever the input returns one).

* ``Pass``: the base class (``name``, ``opt_level``). A pass's *options* are the keyword
  parameters of its constructor (``FuseOps(max_depth=8)``), each kept as the attribute of
  the same name; ``option_defaults()`` lists them, ``options()`` gives an instance's values,
  ``spec()`` the text that names the configured pass (``"FuseOps(max_depth=8)"``).
* ``register_pass(cls)``: makes a pass class known by its ``name`` (``relay opt --passes``);
  ``registered()`` is the registry, read by ``relay_ref.passes.registry``;
  ``unregister_pass(name)`` forgets one (tests, notebooks).

A pass class may declare itself *idempotent on its own output* (``idempotent = True``, on
the class itself: a subclass declares it again): run again on the module it just returned,
with the same options, it returns that module's equal. The pass manager relies on it (it
does not rerun such a pass on its own output: ``rr.compile``'s second FoldConstant after a
FoldScaleAxis that folded nothing); every other pass always runs (PartialEvaluate unfolds
further on a second run, LambdaLift lifts again). ``tests/passes/test_pass_idempotent.py``
checks every declaring pass on the golden programs. A declaring pass's options must be
literals, so that its ``spec()`` names its configuration (the manager's key).

Invariants: passes never mutate their input (modules and expressions are immutable); a pass
returns a module without recorded types (``checked_types`` empty) when it changed anything,
so stale types are never read; passes run after ``infer_types`` when they need types.

Types stay determined, not only correct: on a well-typed input a pass's output type-checks
on its own (``infer_types`` infers every type again, from what is left). A pass that drops
code or replaces a variable by its value may remove the only thing that fixed a type
(``add(ones_like(%a), 1)`` types ``%a`` backwards; ``let %e: List[float32] = Nil`` types
``Nil`` by its annotation), so such passes (DeadCodeElimination, ToGraphNormalForm,
SimplifyExpr) use ``relay_ref.passes.pin_types``: ``annotate_params`` first gives every
unannotated parameter its checked type (what TVM's frontends produce anyway), and
``Determinacy`` lets them drop code only when every variable in it is typed without it,
and drop an annotation only when the value's type follows from the value alone. This is
checked by the passes themselves, not by ``rr.optimize``: ``check_pass`` calls a pass
directly.

Output round-trips through text: ``parse(astext(pass(m)))`` is alpha-equal to ``pass(m)``.
An operator call built from an operator value (``let %f = add; %f(x, y)`` with ``%f``
substituted) carries the operator's default attrs, as the parser gives ``add(x, y)``
(``relay_ref.passes.rewrite.with_children`` does it for every pass that rebuilds with it);
``alpha_equal`` tells ``None`` from default attrs, as TVM's structural equality does.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from relay_ref.ir.module import IRModule

ModulePass = Callable[[IRModule], IRModule]

#: The default of an option without one (a required constructor argument).
REQUIRED: Any = inspect.Parameter.empty


class Pass:
    """Base class of the project's passes (see the module docstring)."""

    name: str = "Pass"
    opt_level: int = 2
    #: Declared by the class itself: rerun on its own output, it changes nothing.
    idempotent: ClassVar[bool] = False

    def __call__(self, mod: IRModule) -> IRModule:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """The pass's options (its constructor's named parameters) and their defaults
        (``REQUIRED`` for one without a default), in declaration order."""
        try:
            sig = inspect.signature(cls)
        except (TypeError, ValueError):  # pragma: no cover - a builtin constructor
            return {}
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return {p.name: p.default for p in sig.parameters.values() if p.kind in kinds}

    def options(self) -> dict[str, Any]:
        """This instance's option values (the attributes named as the options)."""
        return {k: getattr(self, k) for k in self.option_defaults() if hasattr(self, k)}

    def spec(self) -> str:
        """``Name`` or ``Name(opt=value, ...)`` with the options that differ from their
        defaults, as ``relay opt --passes`` and ``rr.optimize`` read it back (when every
        such value is a Python literal)."""
        defaults = self.option_defaults()
        changed = []
        for key, value in self.options().items():
            try:
                same = bool(value == defaults[key]) and type(value) is type(defaults[key])
            except Exception:  # noqa: BLE001 - arrays and the like: not comparable
                same = False
            if not same:
                changed.append(f"{key}={value!r}")
        return f"{self.name}({', '.join(changed)})" if changed else self.name

    def __repr__(self) -> str:
        return self.spec() if self.spec() != self.name else f"{self.name}()"


_PASSES: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make ``cls`` available by ``cls.name``."""
    if cls.name in _PASSES and _PASSES[cls.name] is not cls:
        raise ValueError(f"a pass named {cls.name!r} is already registered")
    _PASSES[cls.name] = cls
    return cls


def unregister_pass(name: str) -> None:
    """Forget the pass registered as ``name`` (a test's or a notebook's own pass); no-op when
    none is."""
    _PASSES.pop(name, None)


def registered() -> Mapping[str, type[Pass]]:
    """The registered pass classes by name (a live, read-only view: the pass modules
    register when imported; ``relay_ref.passes.registry`` imports them all)."""
    from types import MappingProxyType

    return MappingProxyType(_PASSES)
