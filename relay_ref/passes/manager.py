"""The pass manager: the one pipeline through which ``rr.optimize``, ``relay opt`` and
``rr.compile`` run passes (TVM's ``Sequential`` under a ``PassContext``, with ``InferType``
between passes).

* ``make_pass(spec)``: a configured pass from a spec (``"FuseOps(max_depth=8)"``, see
  ``relay_ref.passes.spec``): the registered class built with the spec's options. An
  unknown name, an unknown option, a missing one or a value of the wrong kind is a
  ``PassSpecError`` (a ``ValueError``) naming the pass and its valid options.
* ``resolve_passes(passes)``: specs (a list, or one comma-separated string), pass instances
  and any callables ``IRModule -> IRModule`` -> the pass objects, in order.
* ``Pipeline(passes, opt_level=None, required=(), disabled=(), label="optimize")``: a
  declared pipeline; ``pipeline(mod)`` runs it, ``pipeline.specs()`` names what it runs.
* ``run_passes(mod, passes, **rule)``: ``Pipeline(passes, **rule)(mod)``.
* ``Sequential``: TVM's plain composition (selection by opt level, no type checks).

Selection (``rr.optimize``'s rule): without ``opt_level`` every listed pass runs except those
named in ``disabled``; with ``opt_level=N`` a pass runs when its ``opt_level`` is at most N
or it is named in ``required``, never when named in ``disabled``. Names in ``required`` and
``disabled`` must name registered or listed passes.

Running (invariants):

* the input is type-checked first (types inferred when absent; the input's own type errors
  propagate as they are); the output of every pass that changed the module (returned
  another object) is type-checked again, one that returned its input is not;
* a pass whose class declares itself idempotent (``declares_idempotent``; see
  ``relay_ref.passes.base``) is not rerun on its own output (the module the same class
  with the same spec returned last); every other pass always runs (PartialEvaluate twice
  unfolds further; two BindParams with different weights share a spec but never a skip);
* failures name the pass (its spec). Blame follows the pass: a built-in pass that raises
  anything but a ``RelayError``, recurses too deeply, returns no module or returns an
  ill-typed one is an *internal error* (``PassError``, a ``RelayError`` saying "this is a
  bug in relay_ref", with ``pass_label`` and ``cause``); a
  user's pass that returns no module is a ``TypeError``, one whose output does not
  type-check a ``RelayTypeError`` headed "the output of pass NAME does not type-check", and
  what it raises propagates unchanged. ``RelayError``s (user mistakes such as a bad weight
  for ``BindParams``) always propagate unchanged.
* the result is type-checked (``checked_types`` filled).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from relay_ref.diagnostics import ERROR, Diagnostic, RelayError, RelayTypeError
from relay_ref.ir.module import IRModule
from relay_ref.passes.base import REQUIRED, ModulePass, Pass, registered
from relay_ref.passes.registry import pass_names
from relay_ref.passes.spec import PassSpec, PassSpecError, parse_spec, parse_specs
from relay_ref.suggest import did_you_mean

__all__ = ["PassError", "Pipeline", "Sequential", "UnknownPassError", "declares_idempotent",
           "is_builtin", "make_pass", "pass_label", "resolve_passes", "run_passes", "select"]


class PassError(RelayError):
    """A built-in pass failed (an internal error): ``pass_label`` names it (its spec),
    ``cause`` is what it raised (a ``RelayTypeError`` when its output did not type-check;
    None when it returned no module)."""

    def __init__(self, diagnostics: Any, pass_label: str,
                 cause: BaseException | None = None) -> None:
        super().__init__(diagnostics)
        self.pass_label, self.cause = pass_label, cause


class UnknownPassError(PassSpecError):
    """A spec naming no registered pass (``name``: the name given)."""

    def __init__(self, message: str, name: str, text: str = "", start: int = 0,
                 end: int = 0) -> None:
        super().__init__(message, text, start, end)
        self.name = name


def make_pass(spec: str | PassSpec, *, label: str = "optimize") -> Pass:
    """The registered pass ``spec`` names, built with its options (see the module
    docstring); ``label`` starts the error messages."""
    if isinstance(spec, str):
        try:
            spec = parse_spec(spec)
        except PassSpecError as err:
            raise PassSpecError(f"{label}: {err.message}", err.text, err.start,
                                err.end) from None
    cls = registered().get(spec.name)
    if cls is None:
        raise UnknownPassError(
            f"{label}: passes names no pass: {spec.name!r}"
            f"{did_you_mean(spec.name, registered(), quote=True)} (passes: "
            f"{', '.join(pass_names())})", spec.name, *spec.at(spec.name))
    defaults = cls.option_defaults()
    valid = (f"its options: {', '.join(defaults)}" if defaults
             else f"{spec.name} takes no options")
    for key in spec.options:
        if key not in defaults:
            raise PassSpecError(f"{label}: {spec.name} has no option {key!r}"
                                f"{did_you_mean(key, defaults, quote=True)} ({valid})",
                                *spec.at(key))
    if len(spec.args) > len(defaults):
        many = f"at most {len(defaults)} options ({valid})" if defaults else "no options"
        raise PassSpecError(f"{label}: {spec.name} takes {many}", *spec.at())
    try:
        bound = inspect.signature(cls).bind(*spec.args, **spec.options)
    except TypeError as err:
        raise PassSpecError(f"{label}: {spec.name}: {err} ({valid})", *spec.at()) from None
    for key, value in bound.arguments.items():
        problem = _kind_problem(value, defaults.get(key, REQUIRED))
        if problem:
            raise PassSpecError(f"{label}: {spec.name} option {key}={value!r}: {problem}",
                                *spec.at(key if key in spec.options else ""))
    try:
        return cls(*bound.args, **bound.kwargs)
    except (TypeError, ValueError) as err:  # located at the option it names, if one
        named = [k for k in spec.options if k in str(err)]
        message = str(err).removeprefix(f"{spec.name}: ")
        raise PassSpecError(f"{label}: {spec.name}: {message}",
                            *spec.at(named[0] if named else "")) from None


def _kind_problem(value: Any, default: Any) -> str:
    """Why ``value`` cannot stand for an option whose default is ``default`` ("" when it
    can): booleans, ints, floats and strings keep their kind; other defaults accept any."""
    if default is REQUIRED or default is None:
        return ""
    if type(default) is bool:
        return "" if type(value) is bool else "expected True or False"
    if type(default) is int:
        return "" if type(value) is int else "expected an int"
    if type(default) is float:
        return "" if type(value) in (int, float) else "expected a number"
    if type(default) is str:
        return "" if type(value) is str else "expected a string"
    return ""


def resolve_passes(passes: Any, *, label: str = "optimize") -> tuple[ModulePass, ...]:
    """``passes`` (specs: a list, or one comma-separated string; pass instances; callables)
    as pass objects, in order. ``TypeError`` for a value of the wrong kind (a pass class
    rather than an instance), ``PassSpecError`` (a ``ValueError``) for a bad spec."""
    out: list[ModulePass] = []
    for item in _names_or_items(label, "passes", passes):
        if isinstance(item, str):
            try:
                specs = parse_specs(item)
            except PassSpecError as err:
                raise PassSpecError(f"{label}: {err.message}", err.text, err.start,
                                    err.end) from None
            out.extend(make_pass(s, label=label) for s in specs)
        elif isinstance(item, type):
            raise TypeError(f"{label}: give a pass instance, {item.__name__}(), not the "
                            f"class {item.__name__}")
        elif callable(item):
            out.append(item)
        else:
            raise TypeError(f"{label}: each pass must be a name or a callable, not "
                            f"{type(item).__name__}")
    return tuple(out)


def _names_or_items(label: str, arg: str, value: Any) -> list[Any]:
    """``value`` as a list: one comma-separated string (kept whole here, split by
    ``parse_specs``), or any iterable."""
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise TypeError(f"{label}: {arg} must be a list of pass names (or a comma-separated "
                        f"string), not {type(value).__name__}") from None


def pass_name(p: ModulePass) -> str:
    """The name selection rules use: ``p.name``, else the function's name."""
    return getattr(p, "name", None) or getattr(p, "__name__", None) or repr(p)


def pass_label(p: ModulePass) -> str:
    """How messages and ``exe.plan.passes`` name ``p``: a ``Pass``'s spec, else its name."""
    return p.spec() if isinstance(p, Pass) else pass_name(p)


def is_builtin(p: ModulePass) -> bool:
    """Whether ``p`` is one of the project's own passes: an instance of a registered pass
    class defined in ``relay_ref`` (a user's registered pass is the user's)."""
    return (isinstance(p, Pass) and registered().get(p.name) is type(p)
            and type(p).__module__.startswith("relay_ref."))


def declares_idempotent(p: ModulePass) -> bool:
    """Whether ``p``'s own class declares it idempotent on its own output (``idempotent =
    True`` in the class body: a subclass that may behave otherwise does not inherit it)."""
    return isinstance(p, Pass) and vars(type(p)).get("idempotent", False) is True


def select(passes: Iterable[ModulePass], opt_level: int | None, required: Iterable[str] = (),
           disabled: Iterable[str] = ()) -> tuple[ModulePass, ...]:
    """The passes that run, in order (the selection rule of the module docstring)."""
    required, disabled = set(required), set(disabled)
    out = []
    for p in passes:
        name = pass_name(p)
        if name in disabled:
            continue
        if opt_level is None or getattr(p, "opt_level", 0) <= opt_level or name in required:
            out.append(p)
    return tuple(out)


def _name_list(label: str, arg: str, value: Any, known: set[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        names = [n.strip() for n in value.split(",") if n.strip()]
    else:
        names = _names_or_items(label, arg, value)
    for n in names:
        if not isinstance(n, str) or n not in known:
            raise ValueError(f"{label}: {arg} names no pass: {n!r} (passes: "
                             f"{', '.join(sorted(known))})")
    return tuple(names)


@dataclass(frozen=True)
class Pipeline:
    """A declared pipeline: ``passes`` (as ``resolve_passes`` takes them; stored resolved)
    under the selection rule (``opt_level``, ``required``, ``disabled``); ``label`` starts
    its messages (``"optimize"``, ``"compile"``). Argument errors are raised on
    construction: ``TypeError`` for wrong kinds, ``ValueError`` for unknown names or
    options."""

    passes: Any
    opt_level: int | None = None
    required: Any = ()
    disabled: Any = ()
    label: str = "optimize"
    _selected: tuple[ModulePass, ...] = field(default=(), init=False, repr=False,
                                             compare=False)

    def __post_init__(self) -> None:
        label = self.label
        passes = resolve_passes(self.passes, label=label)
        if self.opt_level is not None and (type(self.opt_level) is not int):
            raise TypeError(f"{label}: opt_level must be an int or None, not "
                            f"{self.opt_level!r}")
        if self.opt_level is not None and self.opt_level < 0:
            raise ValueError(f"{label}: opt_level must be at least 0, not {self.opt_level}")
        known = set(pass_names()) | {pass_name(p) for p in passes}
        required = _name_list(label, "required", self.required, known)
        disabled = _name_list(label, "disabled", self.disabled, known)
        object.__setattr__(self, "passes", passes)
        object.__setattr__(self, "required", required)
        object.__setattr__(self, "disabled", disabled)
        object.__setattr__(self, "_selected",
                           select(passes, self.opt_level, required, disabled))

    def selected(self) -> tuple[ModulePass, ...]:
        """The passes that run, in order."""
        return self._selected

    def specs(self) -> tuple[str, ...]:
        """How the passes that run are named (``pass_label``): ``exe.plan.passes``."""
        return tuple(pass_label(p) for p in self._selected)

    def __call__(self, mod: IRModule) -> IRModule:
        """Run the selected passes on ``mod`` (see the module docstring)."""
        from relay_ref.typecheck.infer import infer_types

        if not mod.checked_types:
            mod = infer_types(mod)
        outputs: dict[tuple[type, str], IRModule] = {}  # idempotent pass -> last output
        for p in self._selected:
            key = (type(p), pass_label(p)) if declares_idempotent(p) else None
            if key is not None and outputs.get(key) is mod:
                continue  # idempotent on its own output
            mod = _run_one(p, mod, self.label)
            if key is not None:
                outputs[key] = mod
        return mod


def run_passes(mod: IRModule, passes: Any, *, opt_level: int | None = None,
               required: Any = (), disabled: Any = (), label: str = "optimize") -> IRModule:
    """``Pipeline(passes, opt_level, required, disabled, label)(mod)``."""
    return Pipeline(passes, opt_level, required, disabled, label)(mod)


def _run_one(p: ModulePass, mod: IRModule, label: str) -> IRModule:
    """``p(mod)`` type-checked, failures named (see the module docstring)."""
    from relay_ref.typecheck.infer import infer_types

    ours, name = is_builtin(p), pass_label(p)
    try:
        out = p(mod)
    except RelayError:
        raise
    except Exception as err:  # RecursionError included
        if not ours:
            raise
        deep = " (it recursed too deeply)" if isinstance(err, RecursionError) else ""
        raise PassError(f"internal error: pass {name} failed ({type(err).__name__}: "
                        f"{err}){deep}; this is a bug in relay_ref", name, err) from err
    if out is mod:
        return mod
    if not isinstance(out, IRModule):
        if ours:
            raise PassError(f"internal error: pass {name} returned {type(out).__name__}, "
                            "not an IRModule; this is a bug in relay_ref", name)
        raise TypeError(f"{label}: pass {name} returned {type(out).__name__}, not an "
                        "IRModule")
    try:
        return infer_types(out)
    except RelayTypeError as err:
        if ours:
            head = Diagnostic(ERROR, f"internal error: the output of pass {name} does not "
                              "type-check; this is a bug in relay_ref")
            raise PassError([head, *err.diagnostics], name, err) from None
        head = Diagnostic(ERROR, f"the output of pass {name} does not type-check (the "
                          "errors below point into its output; rr.astext shows it)")
        raise RelayTypeError([head, *err.diagnostics]) from None


@dataclass(frozen=True)
class Sequential:
    """TVM's ``Sequential``: run ``passes`` (pass objects) in order under an opt level (the
    selection rule above, TVM's default level 2), with no type checks between them: a
    plain composition. ``Pipeline`` is what the API and the CLI run."""

    passes: Any
    opt_level: int = 2
    required: Iterable[str] = field(default=())
    disabled: Iterable[str] = field(default=())
    name: str = "Sequential"

    def selected(self) -> list[ModulePass]:
        """The passes that will run, in order."""
        return list(select(self.passes, self.opt_level, self.required, self.disabled))

    def __call__(self, mod: IRModule) -> IRModule:
        for p in self.selected():
            mod = p(mod)
        return mod
