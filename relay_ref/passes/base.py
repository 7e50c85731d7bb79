"""Passes and the pass manager (TVM's ``tvm.transform`` in miniature; DESIGN.md section 4).

A *pass* is any callable ``IRModule -> IRModule``. The project's passes are small classes
with a ``name``, an ``opt_level`` and ``__call__``; each states its guarantee in its
docstring, and every guarantee includes the two that ``relay_ref.testing.check_pass``
checks on generated programs: the result type-checks with ``@main``'s type unchanged, and
it *refines* the input (same value wherever the input returns one).

* ``Pass``: the base class (``name``, ``opt_level``, ``required``: passes it needs first).
* ``register_pass(cls)``: makes a pass class known by its ``name`` (``relay opt --passes``).
* ``get_pass(name)`` / ``pass_names()``: the registry.
* ``Sequential(passes, opt_level=2, required=(), disabled=())``: runs passes in order, as
  TVM's ``Sequential`` under a ``PassContext``: a pass runs when its ``opt_level`` is at most
  the context's, or when it is named in ``required``; never when named in ``disabled``.

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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from relay_ref.ir.module import IRModule

ModulePass = Callable[[IRModule], IRModule]


class Pass:
    """Base class of the project's passes (see the module docstring)."""

    name: str = "Pass"
    opt_level: int = 2

    def __call__(self, mod: IRModule) -> IRModule:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{self.name}()"


_PASSES: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make ``cls`` available by ``cls.name``."""
    if cls.name in _PASSES and _PASSES[cls.name] is not cls:
        raise ValueError(f"a pass named {cls.name!r} is already registered")
    _PASSES[cls.name] = cls
    return cls


def pass_names() -> list[str]:
    """Names of the registered passes, sorted."""
    _load()
    return sorted(_PASSES)


def get_pass(name: str) -> Pass:
    """A fresh instance of the pass called ``name``; ``KeyError`` naming the known passes."""
    _load()
    try:
        return _PASSES[name]()
    except KeyError:
        raise KeyError(f"unknown pass {name!r}{_did_you_mean(name)} (known passes: "
                       f"{', '.join(sorted(_PASSES))})") from None


def _did_you_mean(name: str) -> str:
    """``; did you mean 'FoldConstant'?`` for a near miss (any case), else ``""``."""
    from relay_ref.suggest import did_you_mean

    return did_you_mean(name, _PASSES, quote=True)


def _load() -> None:
    import relay_ref.passes  # noqa: F401  (registration side effects)


@dataclass(frozen=True)
class Sequential:
    """Run ``passes`` in order under an opt level (see the module docstring)."""

    passes: Sequence[ModulePass]
    opt_level: int = 2
    required: Iterable[str] = field(default=())
    disabled: Iterable[str] = field(default=())
    name: str = "Sequential"

    def selected(self) -> list[ModulePass]:
        """The passes that will run, in order."""
        required, disabled = set(self.required), set(self.disabled)
        out = []
        for p in self.passes:
            name = getattr(p, "name", getattr(p, "__name__", ""))
            if name in disabled:
                continue
            if getattr(p, "opt_level", 0) <= self.opt_level or name in required:
                out.append(p)
        return out

    def __call__(self, mod: IRModule) -> IRModule:
        for p in self.selected():
            mod = p(mod)
        return mod
