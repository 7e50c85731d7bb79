"""``check_pass``: property-test a program transformation against the interpreter.

A pass is any callable ``IRModule -> IRModule``. On generated well-typed programs
(``relay_ref.testing.programs.programs()`` by default) and random arguments for ``@main``,
``check_pass(pass_)`` checks that

1. the pass returns an ``IRModule`` and leaves its input unchanged;
2. the result type-checks and ``@main``'s type is unchanged (alpha-equal);
3. the result *refines* the input: where the input returns a value, the result returns an
   equal one (``numpy.allclose`` with ``rtol``/``atol`` for floating point, NaN equal to
   NaN, exact otherwise; tuples, ADT values and references compared structurally;
   functions are not compared); where the input fails at run time the result may fail
   differently or return a value (DCE may drop a dead ``1 / 0``) -- unless
   ``strict_errors=True``, which demands an error of the same kind (class and message).

Values (``edge_values=True``, the default): arguments, and the constants of generated
programs, come from small pools (zeros, ties, negatives); one floating-point tensor in
eight also takes values near the ends of the float range (+-1e38, +-3e38, +-1e-38, +-inf
for float32), so a rewrite whose folded constants overflow (``w * s`` with ``w = 4``,
``s = 1e38``: inf, and ``0 * inf`` is NaN where ``(0 * 4) * 1e38`` is 0) is found.
A pass that reassociates floating-point arithmetic is only equal up to rounding, which
near the ends of the range includes overflowing in one order and not the other: to check
such a pass on ordinary values only, pass ``edge_values=False``.

Both programs run with ``max_depth`` (default 1000) nested calls at most, so a pass that
breaks a loop's termination fails instead of hanging. On failure hypothesis shrinks the
program and the arguments, then ``check_pass`` reduces the program itself (a node replaced
by a same-typed part, unused lets, parameters, globals and ADTs dropped, while the pass
still fails), and raises a ``PassCheckError`` (an
``AssertionError``) whose message shows the minimal program before and after the pass in
Relay text, the arguments and both results; the same pieces are its attributes.

Fire counting and vacuity: a check only proves something about the programs on which the
pass *fired* -- changed the program (not alpha-equal) and both programs returned values
that were compared (sharing counts: merging two equal calls into one node is a change).
``check_pass`` counts them and returns a ``CheckReport`` (programs
generated, changed, compared, fired; the operators and forms in the changed regions; the
focus; the time). Fewer than ``min_fired`` (default 20, or every program when fewer were
run) make the check *vacuous*: it raises ``VacuousCheck`` (a ``PassCheckError``) saying so,
how many programs it tried and how to focus it, unless ``allow_vacuous=True``.

Focus: ``focus="maximum"`` (operators, op families such as ``"reduce"``, expression forms
such as ``"match"``, ``"ref"``, ``"closure"``; a list or a comma-separated string) makes
most generated programs contain those constructs in varied contexts (``@main``'s result,
under ``if``, in closures, shared by several users, fed by and feeding other operators),
with argument values from the focused operators' *values that matter* (the ``values``
aspect of ``relay_ref.ops``: thresholds, ties, inf/nan, overflow, empty axes). Without
``focus`` (and with generated programs), the focus is inferred
(``relay_ref.testing.autofocus``): a pilot sample goes through the pass; if the pass fires
rarely, the run is focused on what the pilot saw it rewrite; if it never fired, op families
and then expression forms are tried in turn (one-call programs and a few focused ones each,
within a budget) and the first that makes it fire gives the focus. When the pilot said no
focus was needed and the unfocused run turns out vacuous, the check reruns once, focused on
the operators that run saw the pass change (the report's ``focus_source``: ``"rerun"``).
A focus inferred from changed regions (the pilot's, the rerun's) is sharpened like the
search's: the signatures and constant operands on which the pass fires in one-call programs
of those operators are drawn for half their calls (``autofocus.with_hints``).

Extra draws: a focused run on generated programs (a given or inferred focus; not
``focus=()``, not ``programs=``) in which the pass fired, but fewer than ``min_fired`` times,
keeps drawing programs -- as many as the rate seen so far says are needed, in rounds, up to
``MORE_FACTOR`` (4) times ``examples`` in all -- before it is declared vacuous: how often a
rewrite's pattern is drawn varies between runs, and a check of a pass that fires on one
focused program in twenty must not fail at random. The report's ``extra`` says how many
programs were drawn beyond ``examples`` (``generated`` includes them). A pass that never
fired in the first ``examples`` programs, an unfocused check and one on the caller's
programs get no extra draws (nor a check of fewer than ``min_fired`` programs, which must
fire on every one).

Budget: ``examples`` programs (default 200, or the active hypothesis profile's
``max_examples`` when that is larger). The ``thorough`` profile registered here runs 2000
(``settings.load_profile("thorough")``, or ``HYPOTHESIS_PROFILE=thorough`` in this
project's test suite).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed
from hypothesis import settings as Settings
from hypothesis import strategies as st

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import RelayError
from relay_ref.interpreter.driver import evaluate
from relay_ref.interpreter.values import ConstructorValue, RefValue, value_to_text
from relay_ref.ir.equal import alpha_equal
from relay_ref.ir.expr import (
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import free_vars, post_order
from relay_ref.passes.rewrite import rewrite
from relay_ref.syntax.printer import astext
from relay_ref.testing.focus import Focus
from relay_ref.testing.programs import arguments, resolve_focus
from relay_ref.testing.programs import programs as generated_programs
from relay_ref.testing.regions import changed, changed_regions, summarise
from relay_ref.testing.report import CheckReport
from relay_ref.typecheck.infer import infer_types

__all__ = ["CheckReport", "PassCheckError", "VacuousCheck", "check_pass", "values_equal"]

DEFAULT_MIN_FIRED = 20

DEFAULT_EXAMPLES = 200
#: a focused run that fired too rarely keeps drawing, up to this many times ``examples``
MORE_FACTOR = 4
#: the fewest programs one round of extra draws takes
MORE_AT_LEAST = 20
#: seeds of the extra rounds of a derandomized check (its first round's seed is
#: hypothesis's, derived from ``check``'s source; a later round must draw other programs)
MORE_SEED = 0x5EED
THOROUGH_EXAMPLES = 2000
_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

Settings.register_profile("thorough", max_examples=THOROUGH_EXAMPLES, deadline=None,
                          suppress_health_check=_HEALTH)


class PassCheckError(AssertionError):
    """``check_pass`` found a counterexample: ``reason``, the program ``before`` and
    ``after`` the pass (``after`` is None when the pass raised), the ``args`` and both
    results (``expected``, ``got``: a value or the exception)."""

    def __init__(self, message: str, *, reason: str, before: IRModule,
                 after: IRModule | None, args: tuple, expected: Any, got: Any) -> None:
        super().__init__(message)
        self.reason, self.before, self.after = reason, before, after
        self.args_, self.expected, self.got = args, expected, got
        #: the run's ``CheckReport`` (set when ``check_pass`` raises this)
        self.report: CheckReport | None = None


class VacuousCheck(PassCheckError):
    """The check proved nothing: fewer than ``min_fired`` programs were changed by the pass
    and compared. ``report``: the run's ``CheckReport``; ``before`` etc. are None."""

    def __init__(self, message: str, report: CheckReport) -> None:
        AssertionError.__init__(self, message)
        self.reason, self.before, self.after = "vacuous", None, None  # type: ignore[assignment]
        self.args_, self.expected, self.got = (), None, None
        self.report = report


@dataclass
class _Tally:
    """Counts of the main run (``CheckReport``'s fields)."""

    generated: int = 0
    changed: int = 0
    compared: int = 0
    fired: int = 0
    operators: Counter = field(default_factory=Counter)
    forms: Counter = field(default_factory=Counter)
    #: what sat at the top of the changed regions (operators or forms): where it fired
    tops: Counter = field(default_factory=Counter)
    #: a counterexample was found: hypothesis's shrinking runs are not counted
    stopped: bool = False


@dataclass(frozen=True)
class _Case:
    """One drawn test case: a checked module and arguments for its ``@main``."""

    module: IRModule
    args: tuple

    def __repr__(self) -> str:
        return f"\n{astext(self.module)}\nwith arguments {_args_text(self.args)}"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # hypothesis's report
        p.text(repr(self))


@dataclass(frozen=True)
class _Error:
    """A run-time failure (the exception), as an outcome."""

    error: BaseException

    @property
    def kind(self) -> str:
        err = self.error
        if isinstance(err, RelayError) and err.diagnostics:
            return f"{type(err).__name__}: {err.diagnostics[0].message}"
        return f"{type(err).__name__}: {err}"


def check_pass(pass_: Callable[[IRModule], IRModule], *,
               programs: st.SearchStrategy | Iterable[IRModule | str] | None = None,
               examples: int | None = None, rtol: float = 1e-5, atol: float = 1e-6,
               settings: Settings | None = None, strict_errors: bool = False,
               max_depth: int = 1000, edge_values: bool = True,
               focus: str | Iterable[str] | None = None, min_fired: int = DEFAULT_MIN_FIRED,
               allow_vacuous: bool = False) -> CheckReport:
    """Check that ``pass_`` preserves types and refines meaning on generated programs (see
    the module docstring) and return the ``CheckReport``. ``programs``: a hypothesis
    strategy of modules, or a list of modules / Relay texts to draw from (default:
    ``programs(edge=edge_values, focus=...)``). ``focus``: operators, op families and
    expression forms to exercise (default: inferred, see the module docstring; ``()``:
    unfocused, nothing inferred; ignored with ``programs``). ``min_fired``: how many
    programs the pass must change and have compared (``VacuousCheck`` otherwise, unless
    ``allow_vacuous``).
    ``edge_values``: sometimes draw values near the ends of the float range (for the
    arguments, and the constants of the default programs). ``settings``: hypothesis
    settings to start from (default: the active profile without an example database:
    every ``check_pass`` call shares one test function, so saved examples of one pass would
    be replayed on another). Raises ``PassCheckError``."""
    if not callable(pass_):
        hint = (" (a pass name? use relay_ref.passes.get_pass(name))"
                if isinstance(pass_, str) else "")
        raise TypeError(f"check_pass: pass_ must be callable, not "
                        f"{type(pass_).__name__}{hint}")
    if examples is not None and (isinstance(examples, bool) or not isinstance(examples, int)
                                 or examples < 1):
        raise ValueError(f"check_pass: examples must be a positive integer, not {examples!r}")
    if isinstance(min_fired, bool) or not isinstance(min_fired, int) or min_fired < 0:
        raise ValueError(f"check_pass: min_fired must be a non-negative integer, not "
                         f"{min_fired!r}")
    started = time.perf_counter()
    base = settings if settings is not None else Settings(Settings.default, database=None)
    count = examples if examples is not None else max(DEFAULT_EXAMPLES, base.max_examples)
    if focus is not None and not isinstance(focus, str | Focus):
        names = list(focus) if isinstance(focus, Iterable) else None
        if names is None or not all(isinstance(n, str) for n in names):
            raise TypeError(f"check_pass: focus must be a str or an iterable of str "
                            f"(operators, op families, forms), not {focus!r}")
        focus = names
    unfocused = isinstance(focus, list) and not focus
    chosen = Focus() if unfocused else resolve_focus(focus)
    how, probed = ("given" if chosen else "unfocused"), 0
    if programs is not None:
        chosen, how = Focus(), "programs"
    elif not chosen and not unfocused:
        from relay_ref.testing.autofocus import infer_focus

        chosen, how, probed = infer_focus(pass_, examples=count, min_fired=min_fired,
                                          edge=edge_values, settings=base)
    source = _source(programs, edge_values, chosen)
    tally = _Tally()
    extra = 0
    config = Settings(base, max_examples=count, deadline=None, report_multiple_bugs=False,
                      suppress_health_check=list(base.suppress_health_check) + _HEALTH,
                      phases=[p for p in base.phases if p is not Phase.explain])

    def run(case: _Case, tally: _Tally | None = None) -> None:
        # one big-stack thread per example for checking, the pass and both runs; once a
        # counterexample is found, the shrinking runs are not counted (nor is ``check``'s
        # source changed for it: hypothesis derives its derandomized seed from that source)
        counted = tally if tally is not None and not tally.stopped else None
        try:
            run_deep(lambda: _check_one(pass_, case, rtol=rtol, atol=atol,
                                        strict_errors=strict_errors, max_depth=max_depth,
                                        tally=counted))
        except PassCheckError:
            if counted is not None:
                counted.stopped = True
            raise

    @config
    @given(_cases(source, edge_values, chosen))
    def check(case: _Case) -> None:
        run(case, tally)

    def check_more(n: int, round_: int) -> None:
        # more programs of the same source, same checks; a derandomized check seeds each
        # round (else it would draw the first round's programs again)
        @Settings(config, max_examples=n)
        @given(_cases(source, edge_values, chosen))
        def more(case: _Case) -> None:
            run(case, tally)

        (seed(MORE_SEED + round_)(more) if config.derandomize else more)()

    name = _name(pass_)

    def report(failed: bool = False) -> CheckReport:
        return CheckReport(name, tally.generated, tally.changed, tally.compared, tally.fired,
                           min_fired, chosen.names, how, probed, dict(tally.operators),
                           dict(tally.forms), time.perf_counter() - started, allow_vacuous,
                           failed, extra)

    try:
        check()
        round_ = 0
        while (n := _more_wanted(tally, count, min_fired, extra,
                                 bool(chosen) and programs is None)):
            round_ += 1
            before = tally.generated
            check_more(n, round_)
            if tally.generated == before:  # hypothesis drew nothing more: give up
                break
            extra += tally.generated - before
    except PassCheckError as err:
        best = _reduced(err, run)
        best.report = report(failed=True)
        # hypothesis's own "Falsifying example" notes repeat what the message shows
        with contextlib.suppress(AttributeError):
            del best.__notes__
        # a pass that raised: its exception stays the cause, so the user's line shows
        raise best from best.__cause__
    result = report()
    again_focus = Focus()
    if result.vacuous and how == "none":
        # the pilot over-estimated how often the pass fires unfocused: one rerun, focused on
        # what sat at the top of the regions the unfocused run saw it change, or, when it
        # changed nothing, on what the search (the pilot's verdict set aside) finds
        from relay_ref.testing.autofocus import focus_of, infer_focus, with_hints

        again_focus, sharpening = with_hints(pass_, focus_of(tally.tops))
        result = dataclasses.replace(result, probed=result.probed + sharpening)
        if not again_focus:
            again_focus, _, searched = infer_focus(pass_, examples=count, min_fired=min_fired,
                                                   edge=edge_values, settings=base,
                                                   trust_pilot=False)
            result = dataclasses.replace(result, probed=result.probed + searched)
    if result.vacuous and how == "none" and again_focus:
        try:
            again = check_pass(pass_, examples=examples, rtol=rtol, atol=atol,
                               settings=settings, strict_errors=strict_errors,
                               max_depth=max_depth, edge_values=edge_values, focus=again_focus,
                               min_fired=min_fired, allow_vacuous=True)
        except PassCheckError as err:
            if err.report is not None:
                err.report = dataclasses.replace(
                    err.report, focus_source="rerun",
                    probed=err.report.probed + result.probed + result.generated)
            raise
        result = dataclasses.replace(again, focus_source="rerun",
                                     probed=again.probed + result.probed + result.generated,
                                     seconds=time.perf_counter() - started,
                                     allow_vacuous=allow_vacuous)
    if result.vacuous and not allow_vacuous:
        raise VacuousCheck(_vacuous_message(result), result)
    return result


def _more_wanted(tally: _Tally, count: int, min_fired: int, extra: int,
                 focused: bool) -> int:
    """How many more programs a run that fired too rarely draws next (0: none): for a
    focused run on generated programs whose pass fired at least once but fewer than
    ``min_fired`` times in ``min_fired`` or more programs, half as many again as the rate
    seen so far says are needed (``MORE_AT_LEAST`` at least), within ``MORE_FACTOR`` times
    ``count`` in all."""
    if (not focused or tally.stopped or not 0 < tally.fired < min_fired
            or tally.generated < min_fired):
        return 0
    left = MORE_FACTOR * count - count - extra
    needed = -(-3 * (min_fired - tally.fired) * tally.generated // (2 * tally.fired))
    return max(0, min(left, max(needed, MORE_AT_LEAST)))


def _name(pass_: Callable) -> str:
    return getattr(pass_, "name", None) or getattr(pass_, "__name__", None) or repr(pass_)


def _threshold(report: CheckReport) -> str:
    """The bound a vacuous check missed, as applied: ``min_fired``, or every program when
    fewer were generated."""
    if report.generated < report.min_fired:
        return f"all {report.generated} generated, as min_fired={report.min_fired} > examples"
    return f"min_fired={report.min_fired}"


def _vacuous_message(report: CheckReport) -> str:
    """Why the check proved nothing, and how to make it prove something."""
    if report.focus_source == "programs":
        hint = ("give programs the pass rewrites, or pass allow_vacuous=True if it "
                "legitimately changes none of them")
    else:
        where = {"given": f"the focus ({', '.join(report.focus)}) does not make it fire "
                          "often enough: focus on what it rewrites (or give programs= a "
                          "strategy of modules containing the pattern it rewrites, e.g. a "
                          "particular constant operand)",
                 "not found": "no op family or expression form tried made it fire"}.get(
            report.focus_source, "focus it on what it rewrites")
        hint = (f"{where}, e.g. check_pass(pass_, focus=\"maximum\") or "
                "focus=[\"nn.relu\", \"reduce\", \"match\"] (operators, op families, "
                "expression forms); allow_vacuous=True accepts a pass that legitimately "
                "rarely fires")
    drawn = (f", {report.extra} of them drawn beyond examples as it fired rarely"
             if report.extra else "")
    return (f"check_pass({report.pass_name}) was vacuous: the pass changed "
            f"{report.changed} of {report.generated} programs{drawn} and {report.fired} of "
            f"those were compared (fewer than {_threshold(report)}; {report.probed} more "
            f"programs probed to choose a focus), so the check proved nothing.\n{hint}.\n"
            f"{report.text()}")


def _reduced(err: PassCheckError, run: Callable[[_Case], None]) -> PassCheckError:
    """Hypothesis shrinks the choices that built the program; this shrinks the program
    itself (as C-Reduce does): replace a node by a sub-expression of the same type, drop
    unused lets, parameters, globals and types, while the pass still fails. Returns the
    error of the smallest failing program found."""
    case = _Case(err.before, err.args_)
    best = err
    progress = True
    while progress:
        progress = False
        for candidate in _smaller(case):
            try:
                run(candidate)
            except PassCheckError as again:
                case, best, progress = candidate, again, True
                break
            except Exception:  # noqa: BLE001 - an ill-formed candidate: not interesting
                continue
    return best


def _smaller(case: _Case) -> Iterator[_Case]:
    """Candidate reductions of ``case``, most aggressive first; each is checked by running
    it (an ill-typed one fails to check and is skipped)."""
    mod, args = case.module, case.args
    used_globals: set[str] = set()
    used_types: set[str] = set()
    for fn in mod.functions.values():
        for node in post_order(fn):
            if isinstance(node, GlobalVar):
                used_globals.add(node.name)
            elif isinstance(node, Constructor):
                used_types.add(node.belong_to.name)
    types_text = astext(mod)
    for name in mod.functions:  # unused globals
        if name != "main" and name not in used_globals:
            fns = {k: f for k, f in mod.functions.items() if k != name}
            yield _Case(replace(mod, functions=fns, checked_types={}, global_types={}), args)
    for name in mod.type_definitions:  # unused ADTs
        if name not in used_types and f"{name}[" not in types_text.split("def @", 1)[-1]:
            tds = {k: t for k, t in mod.type_definitions.items() if k != name}
            yield _Case(replace(mod, type_definitions=tds, checked_types={},
                                global_types={}), args)
    main = mod["main"]
    free = set(free_vars(main.body))
    for i, p in enumerate(main.params):  # unused parameters
        if p not in free:
            fn = replace(main, params=main.params[:i] + main.params[i + 1:])
            yield _Case(mod.with_function("main", fn), args[:i] + args[i + 1:])
    for name, fn in mod.functions.items():  # a node replaced by a same-typed part
        nodes = [n for n in post_order(fn.body) if not isinstance(n, Var | Function)]
        for node in reversed(nodes):  # outermost first
            for part in _parts(node):
                if part is node or not _closed_in(part, node):
                    continue
                new = rewrite(fn.body, lambda n, node=node, part=part:
                              part if n is node else None) if node is not fn.body else part
                yield _Case(mod.with_function(name, replace(fn, body=new)), args)


def _parts(node: Expr) -> list[Expr]:
    """Sub-expressions that may stand for ``node`` (the type check decides)."""
    match node:
        case If():
            return [node.true_branch, node.false_branch]
        case Let():
            return [node.body, node.value]
        case Match():
            return [c.rhs for c in node.clauses]
        case TupleGetItem(Tuple(fields), i):
            return [fields[i]]
    return list(children(node))


def _closed_in(part: Expr, node: Expr) -> bool:
    """``part`` uses no variable bound inside ``node`` (it may replace ``node``)."""
    return set(free_vars(part)) <= set(free_vars(node))


def _source(programs: Any, edge: bool, focus: Focus) -> st.SearchStrategy:
    if programs is None:
        return generated_programs(edge=edge, focus=focus or None)
    if isinstance(programs, st.SearchStrategy):
        return programs
    if isinstance(programs, str | IRModule):
        programs = [programs]  # one program
    if not isinstance(programs, Iterable):
        raise TypeError(f"check_pass: programs must be IRModules or Relay texts (a list, or a "
                        f"hypothesis strategy of modules), not {type(programs).__name__}")
    mods = []
    for p in programs:
        if isinstance(p, str):
            from relay_ref.prelude import prelude_fallback
            from relay_ref.syntax.parser import parse

            p = parse(p, "<check_pass>", fallback=prelude_fallback())
        if not isinstance(p, IRModule):
            raise TypeError(f"check_pass: programs must hold IRModules or Relay texts, "
                            f"not {type(p).__name__}")
        if "main" not in p.functions:
            raise ValueError("check_pass: a program given in programs has no @main")
        mods.append(p)
    if not mods:
        raise ValueError("check_pass: programs is empty")
    return st.sampled_from(mods)


@st.composite
def _cases(draw: st.DrawFn, source: st.SearchStrategy, edge: bool, focus: Focus) -> _Case:
    mod = draw(source)
    params = mod["main"].params
    if all(p.type_annotation is not None for p in params):
        types = [p.type_annotation for p in params]
    else:  # only then check here (checking happens once per example, on a deep stack)
        types = list(infer_types(mod).global_types["main"].arg_types)
    return _Case(mod, draw(arguments(types, edge, focus or None)))


def _run(mod: IRModule, args: tuple, max_depth: int) -> Any:
    """The value of ``@main`` or the ``_Error``; NumPy's warnings (overflow, invalid casts
    of NaN) are silenced: they are the program's business."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return evaluate(mod, *_copy(args), typecheck="done", max_depth=max_depth)
    except RelayError as err:
        return _Error(err)


def _copy(args: tuple) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _check_one(pass_: Callable[[IRModule], IRModule], case: _Case, *, rtol: float,
               atol: float, strict_errors: bool, max_depth: int,
               tally: _Tally | None = None) -> None:
    before, args = infer_types(case.module), case.args  # the pass sees a checked module
    name = _name(pass_)
    expected = _run(before, args, max_depth)

    def fail(reason: str, after: IRModule | None, got: Any,
             cause: BaseException | None = None) -> None:
        raise PassCheckError(_message(name, reason, before, after, args, expected, got),
                             reason=reason, before=before, after=after, args=args,
                             expected=expected, got=got) from cause

    functions = dict(before.functions)
    try:
        after = pass_(before)
    except Exception as err:  # noqa: BLE001 - any failure of the pass is a finding
        fail(f"the pass raised {type(err).__name__}: {err}", None, _Error(err), err)
    if not isinstance(after, IRModule):
        fail(f"the pass returned {type(after).__name__}, not an IRModule", None, None)
    if (before.functions.keys() != functions.keys()
            or any(before.functions[k] is not f for k, f in functions.items())):
        fail("the pass modified its input module", after, None)
    try:
        checked = infer_types(after)
    except RelayError as err:
        fail(f"the result does not type-check:\n{err.render()}", after, _Error(err))
    old, new = before.global_types["main"], checked.global_types.get("main")
    if new is None or not alpha_equal(old, new):
        shown = "nothing" if new is None else astext(new)
        fail(f"the type of @main changed from {astext(old)} to {shown}", after, None)
    got = _run(checked, args, max_depth)
    if tally is not None:
        _count(tally, before, after, expected, got)
    if isinstance(expected, _Error):
        if strict_errors and (not isinstance(got, _Error) or got.kind != expected.kind):
            fail("the input fails at run time but the result does not fail the same way "
                 "(strict_errors)", after, got)
        return
    if isinstance(got, _Error):
        fail("the input returns a value but the result fails at run time", after, got)
    if not values_equal(expected, got, rtol=rtol, atol=atol):
        fail("the result returns a different value", after, got)


def _count(tally: _Tally, before: IRModule, after: IRModule, expected: Any, got: Any) -> None:
    """Tally one program: changed (not alpha-equal), compared (both returned values)."""
    tally.generated += 1
    compared = not isinstance(expected, _Error) and not isinstance(got, _Error)
    tally.compared += compared
    if not changed(before, after):
        return
    tally.changed += 1
    tally.fired += compared
    regions = summarise(changed_regions(before, after))
    tally.operators.update(regions.ops)
    tally.forms.update(regions.forms)
    tally.tops.update(regions.roots)


def values_equal(a: Any, b: Any, *, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Run-time values equal: tensors of the same shape and dtype, close in floating point
    (NaN equal to NaN) and exact otherwise; tuples, ADT values and reference contents
    structurally; two functions always (their bodies are not compared). Iterative: a
    100 000-element list compares without deep recursion."""
    stack = [(a, b)]
    while stack:
        a, b = stack.pop()
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            a, b = np.asarray(a), np.asarray(b)
            if a.shape != b.shape or a.dtype != b.dtype:
                return False
            if np.issubdtype(a.dtype, np.floating):
                with np.errstate(all="ignore"):  # inf - inf inside allclose
                    close = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
                if not close:
                    return False
            elif not np.array_equal(a, b):
                return False
        elif isinstance(a, tuple) and isinstance(b, tuple):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, ConstructorValue) and isinstance(b, ConstructorValue):
            if a.constructor.name != b.constructor.name or len(a.fields) != len(b.fields):
                return False
            stack.extend(zip(a.fields, b.fields, strict=True))
        elif isinstance(a, RefValue) and isinstance(b, RefValue):
            stack.append((a.value, b.value))
        elif type(a) is not type(b):
            if not (_is_function(a) and _is_function(b)):
                return False
        elif not (_is_function(a) or a == b):
            return False
    return True


def _is_function(v: Any) -> bool:
    return not isinstance(v, np.ndarray | tuple | ConstructorValue | RefValue)


def _outcome_text(outcome: Any) -> str:
    if outcome is None:
        return "(not run)"
    if isinstance(outcome, _Error):
        return f"error: {outcome.kind}"
    try:
        return value_to_text(outcome)
    except Exception:  # noqa: BLE001 - a value the printer cannot show
        return repr(outcome)


def _args_text(args: tuple) -> str:
    return "(" + ", ".join(_outcome_text(a) for a in args) + ")"


def _message(name: str, reason: str, before: IRModule, after: IRModule | None,
             args: tuple, expected: Any, got: Any) -> str:
    lines = [f"check_pass({name}): {reason}", "", "-- program before the pass --",
             astext(before).strip(), "", f"-- after {name} --",
             astext(after).strip() if after is not None else "(no module: see the reason above)",
             "", f"-- arguments of @main -- {_args_text(args)}",
             f"-- result before -- {_outcome_text(expected)}",
             f"-- result after --  {_outcome_text(got)}"]
    return "\n".join(lines)
