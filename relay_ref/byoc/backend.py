"""Backend registration (spec/byoc.md BYOC-Support, BYOC-Composite, BYOC-Extern).

A backend is a name, a support table (which operators it takes, with optional predicates on
the call, and its named composite patterns; ``relay_ref.passes.compiler_support.Support``,
which the partitioning passes read) and a codegen: ``codegen(func, types) -> callable``,
called once per partitioned region at compile time (the contract in
``relay_ref.executor.externs``' docstring: ``func`` a type-checked ``Compiler=<name>``
function, ``types`` its checked types; the callable takes one array per parameter, as
read-only views it must not write into, and returns an array or a tuple of them).
``codegen=None``: the regions run on the host (useful to test partitioning itself).

``register_backend`` normalises what the user wrote and checks it before anything is
registered: an operator name nothing registered is a ``ValueError`` with a did-you-mean, a
pattern that is no ``DFPattern`` a ``TypeError``, a taken name a ``ValueError`` unless
``replace``; a backend name that is no identifier (``[A-Za-z_][A-Za-z0-9_]*``: the outlined
``@tvmgen_default_<name>_main_<k>`` must parse) or a composite name with a quote, backslash
or control character (it is printed in ``Composite="..."``) a ``ValueError`` naming the
character. Both tables (support, passes layer; codegen, here) are updated together.

Invariant: ``get_backend(name)`` exists exactly when ``get_support(name)`` does for the
backends registered through this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from relay_ref.diagnostics import RelayError
from relay_ref.ops.registry import all_ops
from relay_ref.passes.compiler_support import (
    DEFAULT,
    Composite,
    RegionCost,
    Support,
    UnknownCompiler,
    check_backend_name,
    check_composite_name,
    register_support,
    unregister_support,
)
from relay_ref.passes.pattern import DFPattern
from relay_ref.suggest import did_you_mean

__all__ = ["Backend", "Codegen", "backend_names", "ensure_backends", "get_backend",
           "register_backend", "unregister_backend"]

#: ``codegen(func, types) -> callable`` (the codegen contract)
Codegen = Callable[..., Callable[..., Any]]

#: built-in backends, imported on first use (each module registers itself at import)
BUILTIN = {"ort": "relay_ref.byoc.ort", "xla": "relay_ref.byoc.xla"}


@dataclass(frozen=True, slots=True)
class Backend:
    """One registered backend: its name, support table, codegen (None: host) and a
    one-line description."""

    name: str
    support: Support
    codegen: Codegen | None = None
    description: str = ""


_BACKENDS: dict[str, Backend] = {}


def register_backend(name: str, *, supported_ops: Iterable[str] | Mapping[str, Any],
                     patterns: Iterable[Any] = (), codegen: Codegen | None = None,
                     min_region_size: int | None = None,
                     worth: Callable[[RegionCost], bool] | None = None,
                     replace: bool = False, description: str = "") -> Backend:
    """Register backend ``name`` (see the module docstring) and return it.

    ``supported_ops``: operator names, or a mapping operator name -> predicate on the call
    (``CallInfo``) or None; ``patterns``: ``(name, pattern)``, ``(name, pattern, check)`` or
    ``Composite``, in priority order; ``min_region_size`` / ``worth``: the cost model
    (BYOC-Cost); ``codegen``: ``codegen(func, types) -> callable`` or None."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_backend: name must be a non-empty str, not {name!r}")
    check_backend_name(name, "register_backend")
    if name == DEFAULT:
        raise ValueError(f"register_backend: {DEFAULT!r} names the host executor; a backend "
                         "needs another name")
    if name in _BACKENDS and not replace:
        raise ValueError(f"register_backend: backend {name!r} is already registered "
                         "(replace=True to redefine it)")
    if codegen is not None and not callable(codegen):
        raise TypeError(f"register_backend: codegen must be callable or None, not "
                        f"{type(codegen).__name__}")
    if min_region_size is not None and (type(min_region_size) is not int or min_region_size < 0):
        raise TypeError(f"register_backend: min_region_size must be a non-negative int, not "
                        f"{min_region_size!r}")
    if worth is not None and not callable(worth):
        raise TypeError("register_backend: worth must be a predicate on a RegionCost")
    support = Support(name, _ops(supported_ops), _patterns(patterns), min_region_size, worth)
    register_support(support, replace=True)
    backend = Backend(name, support, codegen, description)
    _BACKENDS[name] = backend
    return backend


def _ops(supported: Iterable[str] | Mapping[str, Any]) -> dict[str, Any]:
    """``supported_ops`` as a mapping op name -> predicate or None (names checked)."""
    if isinstance(supported, str):
        raise TypeError("register_backend: supported_ops must be a collection of operator "
                        f"names, not the single string {supported!r}")
    if not isinstance(supported, Iterable):
        raise TypeError("register_backend: supported_ops must be a collection of operator "
                        "names or a mapping of operator name to predicate (or None), not "
                        f"{type(supported).__name__}")
    items = list(supported.items()) if isinstance(supported, Mapping) else \
        [(n, None) for n in supported]
    known = all_ops()
    out: dict[str, Any] = {}
    for op, pred in items:
        if not isinstance(op, str):
            raise TypeError(f"register_backend: an operator name must be a str, not {op!r}")
        if op not in known:
            raise ValueError(f"register_backend: unknown operator {op!r}"
                             f"{did_you_mean(op, known, quote=True)}")
        if pred is not None and not callable(pred):
            raise TypeError(f"register_backend: the predicate of {op!r} must be callable "
                            "(on a CallInfo) or None")
        out[op] = pred
    return out


def _patterns(patterns: Iterable[Any]) -> tuple[Composite, ...]:
    """``patterns`` as ``Composite`` records (each pattern a ``DFPattern``)."""
    if isinstance(patterns, str | Mapping) or not isinstance(patterns, Iterable):
        raise TypeError("register_backend: patterns must be a sequence of (name, pattern), "
                        "(name, pattern, check) or Composite entries, not "
                        f"{type(patterns).__name__}")
    out = []
    for entry in patterns:
        if isinstance(entry, Composite):
            comp = entry
        elif isinstance(entry, tuple) and len(entry) in (2, 3):
            comp = Composite(*entry)
        else:
            raise TypeError(f"register_backend: a pattern entry must be (name, pattern), "
                            f"(name, pattern, check) or a Composite, not {entry!r}")
        if not isinstance(comp.name, str) or not comp.name:
            raise TypeError(f"register_backend: a composite's name must be a str, not "
                            f"{comp.name!r}")
        check_composite_name(comp.name, "register_backend")
        if not isinstance(comp.pattern, DFPattern):
            raise TypeError(f"register_backend: the pattern of composite {comp.name!r} must "
                            f"be a DFPattern (relay_ref.passes.pattern), not "
                            f"{type(comp.pattern).__name__}")
        if comp.check is not None and not callable(comp.check):
            raise TypeError(f"register_backend: the check of composite {comp.name!r} must "
                            "be callable")
        out.append(comp)
    return tuple(out)


def unregister_backend(name: str) -> None:
    """Forget backend ``name`` (its support table too); nothing when unknown."""
    _BACKENDS.pop(name, None)
    unregister_support(name)


def backend_names() -> tuple[str, ...]:
    """The registered backends, in registration order."""
    return tuple(_BACKENDS)


def get_backend(name: str) -> Backend:
    """Backend ``name`` (a built-in one is loaded first); ``UnknownCompiler`` naming the
    known ones otherwise."""
    ensure_backends((name,))
    return _BACKENDS[name]


def ensure_backends(names: Iterable[str]) -> tuple[Backend, ...]:
    """The backends ``names``, loading the built-in ones not registered yet (``"ort"``,
    ``"xla"``); an unknown name is ``UnknownCompiler`` with a did-you-mean."""
    out = []
    for name in names:
        if name not in _BACKENDS and name in BUILTIN:
            _load(name)
        if name not in _BACKENDS:
            known = sorted({*_BACKENDS, *BUILTIN})
            raise UnknownCompiler(f"unknown backend {name!r}"
                                  f"{did_you_mean(str(name), known, quote=True)} (backends: "
                                  f"{', '.join(known)})")
        out.append(_BACKENDS[name])
    return tuple(out)



def _load(name: str) -> None:
    """Import the module of built-in backend ``name`` (it registers itself at its first
    import; its ``register(replace=True)`` again after an ``unregister_backend``); a
    missing optional dependency is a ``RelayError`` naming it."""
    import importlib

    try:
        module = importlib.import_module(BUILTIN[name])
    except ImportError as err:
        missing = err.name or "a package"
        if missing.startswith("relay_ref"):
            raise RelayError(f"backend {name!r} is not part of this installation of "
                             f"relay_ref ({err})") from None
        raise RelayError(f"backend {name!r} needs {missing}, which is not installed "
                         f"({err})") from None
    if name not in _BACKENDS:  # imported before, then unregistered: register it again
        module.register(replace=True)
