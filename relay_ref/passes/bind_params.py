"""BindParams: bind weights by parameter name (``rr.compile(params=)``, ``relay run
--params``, ``relay import --embed``, the REPL all bind through this pass).

``BindParams(params, entry="main", label="params")`` replaces the ``@entry`` parameters
named in ``params`` by constants. Invariants of the result:

* ``@entry`` keeps its name and becomes the bound function: its other parameters stay, in
  order, and its body has the constants where the bound parameters were.
* Every other use of ``@entry`` keeps the full signature. When any function of the module
  refers to ``@entry`` (another global calling it, a closure capturing it, it passed as a
  value, the entry calling itself), the original function stays in the module as
  ``@<entry>_unbound`` (a number appended while that name is taken, ``unbound_name``), with
  fresh binders, right after ``@entry``, and every ``@entry`` reference in the module, the
  bound entry's body included, is renamed to it. So ``@entry``'s value on the remaining
  arguments is its original value on all of them, and every other global's value is
  unchanged. A module where nothing refers to ``@entry`` gains no function.
* Each value is checked against its parameter's type by the argument rule
  (spec/semantics.md 4.1) and copied (the caller may reuse its buffer); a key naming no
  parameter, a value that does not fit, or one that is not a tensor is a ``RelayError``
  located at the entry or the parameter; ``label`` names ``params`` in those messages.
* Empty ``params`` (the default): the module is returned as it is (the identity), so the
  pass is ``check_pass``-safe and ``relay opt --passes BindParams`` changes nothing.

The input is type-checked (types inferred when absent); the result has no recorded types
(the pass manager checks it, ``bind_params`` does so itself).

``bind_params(mod, entry, params, label=)`` is the one helper for callers outside a pipeline
(``relay run --params``, ``relay import --embed``, the REPL through ``relay_ref.repl``):
the pass on ``mod``, type-checked. ``check_entry`` is the one "no function @entry" check.
``entry`` may be written with or without its ``@`` everywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from relay_ref.diagnostics import RelayError
from relay_ref.interpreter.args import ArgumentError, convert_argument
from relay_ref.interpreter.driver import param_types
from relay_ref.ir.expr import Constant, Expr, Function, GlobalVar, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.rewrite import fresh_copy, rewrite
from relay_ref.suggest import did_you_mean
from relay_ref.typecheck.infer import infer_types

__all__ = ["BindParams", "bind_params", "check_entry", "unbound_name"]


@register_pass
class BindParams(Pass):
    """Replace ``@entry``'s parameters named in ``params`` by constants (weights), keeping
    the original as ``@<entry>_unbound`` for the functions that call it (see the module
    docstring)."""

    name = "BindParams"
    opt_level = 0

    def __init__(self, params: Mapping[str, Any] | None = None, entry: str = "main",
                 label: str = "params") -> None:
        if params is not None and not isinstance(params, Mapping):
            raise TypeError(f"BindParams: params must be a dict of parameter name to array, "
                            f"not {type(params).__name__}")
        if not isinstance(entry, str) or not isinstance(label, str):
            raise TypeError("BindParams: entry and label must be strings")
        self.params = dict(params or {})
        self.entry = entry.removeprefix("@")
        self.label = label

    def spec(self) -> str:
        """The configured pass, its weights named by key only (arrays are no literals)."""
        if not self.params:
            return self.name
        entry = "" if self.entry == "main" else f", entry={self.entry!r}"
        return f"{self.name}(params=<{', '.join(map(repr, self.params))}>{entry})"

    def __call__(self, mod: IRModule) -> IRModule:
        if not self.params:
            return mod
        check_entry(mod, self.entry, self.label)
        typed = mod if mod.checked_types else infer_types(mod)
        return _bind(typed, self.entry, self.params, self.label)


def check_entry(mod: IRModule, entry: str, label: str) -> str:
    """``entry`` without its ``@``; a ``RelayError`` (``label: the module has no function
    @entry``, with a suggestion) when ``mod`` defines no such function."""
    name = entry.removeprefix("@")
    if name not in mod.functions:
        raise RelayError(f"{label}: the module has no function @{name}"
                         + did_you_mean(name, mod.functions, sigil="@"))
    return name


def bind_params(mod: IRModule, entry: str, params: Mapping[str, Any], *,
                label: str = "params") -> IRModule:
    """``mod`` type-checked, with ``@entry``'s parameters named in ``params`` replaced by
    constants: ``BindParams(params, entry, label)`` (see the module docstring); ``mod``
    itself (type-checked) when ``params`` is empty. ``entry`` may carry its ``@``; a module
    without it is a ``RelayError`` even when ``params`` is empty. ``label`` names
    ``params`` in the messages."""
    entry = check_entry(mod, entry, label)
    out = BindParams(params, entry, label)(mod)
    if out is mod:
        return mod if mod.checked_types else infer_types(mod)
    return infer_types(out)


def _bind(mod: IRModule, entry: str, params: Mapping[str, Any], label: str) -> IRModule:
    func = mod.functions[entry]
    by_name = {p.name_hint: p for p in func.params}
    for key in params:
        if not isinstance(key, str) or key not in by_name:
            raise RelayError(f"{label} names no parameter of @{entry}: {key!r} (its "
                             f"parameters: {', '.join('%' + n for n in by_name) or 'none'})",
                             func.span)
    types = dict(zip(func.params, param_types(mod, entry, func), strict=True))
    consts: dict[Var, Constant] = {}
    for key, value in params.items():
        var = by_name[key]
        try:
            array = convert_argument(value, types[var], mod)
        except ArgumentError as err:
            raise RelayError(f"{label}[{key!r}] does not fit %{key}: {err.message}",
                             var.span) from None
        if type(array) is not np.ndarray:
            raise RelayError(f"{label}[{key!r}]: only tensor parameters can be bound",
                             var.span)
        array = np.array(array, copy=True)  # the caller may reuse its buffer
        consts[var] = Constant(array, var.span)
    unbound = unbound_name(mod, entry)

    def retarget(e: Expr) -> Expr | None:
        """A reference to ``@entry`` -> one to the full-signature original."""
        if unbound is not None and type(e) is GlobalVar and e.name == entry:
            return dataclasses.replace(e, name=unbound)
        return None

    def bind(e: Expr) -> Expr | None:
        return consts.get(e) if type(e) is Var else retarget(e)

    body = rewrite(func.body, bind)
    functions: dict[str, Function] = {}
    for name, f in mod.functions.items():
        if name != entry:
            functions[name] = rewrite(f, retarget) if unbound is not None else f
            continue
        functions[entry] = Function(tuple(p for p in func.params if p not in consts), body,
                                    func.ret_type, func.type_params, func.attrs, func.span)
        if unbound is not None:  # its binders fresh: a Var is bound by one binder only
            functions[unbound] = cast(Function, fresh_copy(rewrite(func, retarget)))
    return dataclasses.replace(mod, functions=functions, checked_types={}, global_types={})


def unbound_name(mod: IRModule, entry: str) -> str | None:
    """The name ``BindParams`` keeps ``@entry``'s original under: None when no function of
    ``mod`` refers to ``@entry`` (nothing needs it), else ``<entry>_unbound``, with the
    first number from 1 appended that makes it a name ``mod`` does not define."""
    refers = any(type(node) is GlobalVar and node.name == entry
                 for f in mod.functions.values() for node in post_order(f))
    if not refers:
        return None
    name, n = f"{entry}_unbound", 0
    while name in mod.functions:
        n += 1
        name = f"{entry}_unbound{n}"
    return name
