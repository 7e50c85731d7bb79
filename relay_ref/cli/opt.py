"""``relay opt``: run optimisation passes on a file, or check them against the interpreter.

* ``relay opt FILE --passes A,B [--opt-level N]`` prints the optimised program (canonical
  text, prelude definitions the file uses resolved but not printed), after type-checking
  both the input and the result.
* ``relay opt --passes A,B --check N`` runs ``relay_ref.testing.check_pass`` for each
  named pass on N generated programs and prints a table: per pass, how many programs the
  pass changed, how many of those were compared with the interpreter, the focus, and the
  verdict (``CheckReport``). Exit 1 if a pass fails (the shrunk counterexample follows the
  table) or its check is vacuous (fewer than ``--min-fired`` programs, default 20, nor all
  N, changed and compared: the check proved nothing; the hint says how to focus it),
  unless ``--allow-vacuous``. ``--focus OP[,OP]`` (operators, op families, expression
  forms) directs the generated programs (default: inferred, as ``check_pass`` infers it);
  an unknown name is a usage error (exit 2) with a did-you-mean.
  ``relay opt FILE --passes A,B --check N`` checks each pass on FILE too, with N argument
  tuples drawn for its ``@main``'s parameter types, and reports both (a FILE whose
  ``@main`` takes values no arguments are drawn for, such as an ADT, is an error, exit 1).
  FILE is fixed, so vacuity there is whether the pass changed it: a pass that leaves FILE
  unchanged is reported ``unchanged`` (not a failure: there is nothing to check on FILE;
  the generated programs judge the pass); one that changed it but none of whose argument
  tuples gave results to compare is ``vacuous``.
* ``relay opt --list`` lists the registered passes: name, opt level, options, guarantee.

``--passes`` takes pass specs (``relay_ref.passes.spec``): ``'FuseOps(max_depth=8),FoldConstant'``
gives FuseOps its option (Python literal values; commas inside parentheses do not split).
The passes run through the pass manager, as ``rr.optimize`` runs them. Unknown pass names
are usage errors (exit 2) that list the known passes; a malformed spec or an unknown option
is a usage error pointing into the ``--passes`` text (coloured on a terminal), naming the
pass's valid options. Passes named on the command line run whatever their opt level unless
``--opt-level`` is given (then TVM's rule applies: a pass runs when its level is at most N).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from relay_ref import IRModule, RelayError
from relay_ref.cli._common import non_negative_int, positive_int


def run_opt(args: argparse.Namespace) -> int:
    """The ``relay opt`` command (exit codes as ``relay_ref.cli``)."""
    import relay_ref as rr
    from relay_ref.cli._common import (
        EXIT_OK,
        EXIT_USAGE,
        EXIT_USER,
        UsageError,
        read_text,
        source_name,
        use_colour,
    )

    if args.list:
        _print_passes()
        return EXIT_OK
    from relay_ref.repl import configured_passes, pass_specs

    try:
        specs = pass_specs(args.passes or "")
    except RelayError as err:  # a malformed list: located in the --passes text
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USAGE
    names = [text for _, text in specs]
    if not names:
        raise UsageError("name the passes to run with --passes A,B (relay opt --list shows "
                         "them)")
    known = rr.pass_names()
    unknown = [name for name, _ in specs if name not in known]
    if unknown:
        from relay_ref.repl import close_names, suggestion_hint

        # one suggestion per unknown name: "unknown passes Fold, Dce; did you mean
        # FoldConstant and DeadCodeElimination?"
        hint = suggestion_hint([c for n in unknown for c in close_names(n, known)],
                               conjunction="and")
        raise UsageError(f"unknown pass{'es' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)}{hint} (known passes: {', '.join(known)})")
    try:
        passes = configured_passes(args.passes)
    except RelayError as err:  # an unknown option or a bad value: located
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USAGE
    if args.check is None:
        given = [o for o, v in (("--focus", args.focus), ("--allow-vacuous", args.allow_vacuous),
                                ("--min-fired", args.min_fired))
                 if v is not None and v is not False]
        if given:
            raise UsageError(f"{given[0]} applies to a check: use it with --check N")
    else:
        options = _CheckOptions(args.check, _focus(args.focus), args.min_fired,
                                args.allow_vacuous)
        try:
            program = (rr.parse(read_text(args.file), source_name(args.file)) if args.file
                       else None)
            where = source_name(args.file) if args.file else None
            return EXIT_OK if _check(names, options, program, where) else EXIT_USER
        except RelayError as err:  # FILE does not parse or check, or has no arguments
            print(err.render(use_colour(sys.stderr)), file=sys.stderr)
            return EXIT_USER
    if not args.file:
        raise UsageError("give a FILE to optimise (or --check N to test the passes)")
    source = read_text(args.file)
    try:
        mod = rr.parse(source, source_name(args.file))
        # rr.optimize's rule: without an opt level every named pass runs
        out = rr.optimize(mod, passes, opt_level=args.opt_level)
    except RelayError as err:
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    text = rr.astext(out, omit_prelude=True)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def _print_passes() -> None:
    from rich.console import Console
    from rich.table import Table

    from relay_ref.repl import pass_info, pass_options

    table = Table(title="relay_ref passes")
    table.add_column("pass", style="bold")
    table.add_column("opt level", justify="right")
    table.add_column("options (Name(option=value))")
    table.add_column("guarantee")
    for name, level, summary in pass_info():
        table.add_row(name, str(level), pass_options(name), summary)
    Console().print(table)


@dataclass(frozen=True)
class _CheckOptions:
    """``--check N`` and the options that go with it."""

    examples: int
    focus: str | None
    min_fired: int | None
    allow_vacuous: bool


def _focus(text: str | None) -> str | None:
    """``--focus``'s text, its names known (a usage error with a did-you-mean otherwise)."""
    from relay_ref.cli._common import UsageError
    from relay_ref.repl import check_focus

    if text is None:
        return None
    try:
        check_focus(text)
    except ValueError as err:
        raise UsageError(str(err).replace("check_pass: focus", "--focus", 1)) from None
    return text


def _check(names: list[str], options: _CheckOptions, program: IRModule | None = None,
           file: str | None = None) -> bool:
    """check_pass on ``options.examples`` generated programs per pass -- first, given
    ``program`` (read from ``file``), on it with that many argument tuples -- with a
    progress bar and a table of what each check exercised and its verdict; each failure's
    counterexample (its arguments among it), or a vacuous check's hint, follows the table.
    True when every check held and none was vacuous (unless allowed). Raises
    ``RelayError`` when ``program`` cannot be checked (``check_named_pass``)."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from relay_ref.repl import check_named_pass

    examples = options.examples
    console = Console(stderr=True)
    runs: list[tuple[IRModule | None, str]] = [(None, "generated programs")]
    if program is not None:
        runs.insert(0, (program, file or "FILE"))
    rows, failures = [], []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("checking passes", total=len(names) * len(runs))
        for name in names:
            for mod, where in runs:
                progress.update(task, description=f"checking {name} on {where}")
                found = check_named_pass(name, examples, mod, focus=options.focus,
                                         min_fired=options.min_fired,
                                         allow_vacuous=options.allow_vacuous)
                row = (_file_row(found, options.allow_vacuous) if mod is not None
                       else _generated_row(found))
                rows.append((name, where, *row))
                if row[-1] in ("FAILED", "vacuous"):
                    failures.append((name, where, mod is not None, found))
                progress.advance(task)
    title = f"check_pass on {examples} generated programs per pass"
    if program is not None:
        title = f"check_pass on {file} ({examples} argument tuples) and on {examples} " \
                "generated programs per pass"
    table = Table(title=title)
    table.add_column("pass", style="bold", no_wrap=True)
    table.add_column("on")
    table.add_column("changed", justify="right")
    table.add_column("of those compared", justify="right")
    table.add_column("focus")
    table.add_column("result")
    for name, where, changed, fired, focus, result in rows:
        colour = "green" if result == "ok" else "red" if result in ("FAILED", "vacuous") \
            else "yellow"
        table.add_row(name, where, changed, fired, focus, f"[{colour}]{result}[/]")
    Console().print(table)
    for name, where, on_file, found in failures:
        vacuous = _is_vacuous(found, on_file)
        shrunk = " (shrunk while it still fails)" if on_file and not vacuous else ""
        console.print(f"{name} on {where}{shrunk}: ", style="bold red", end="",
                      soft_wrap=True)
        message = _vacuous_hint(name, found, on_file, where) if vacuous else found.problem
        console.print(message, highlight=False, markup=False, soft_wrap=True)
    return not failures


def _generated_row(found: Any) -> tuple[str, str, str, str]:
    """changed, changed-and-compared, focus, result for a check on generated programs."""
    report = found.report
    result = ("vacuous" if found.vacuous else "FAILED" if found.problem is not None
              else report.verdict)  # "ok" or "vacuous (allowed)"
    if report is None:
        return "-", "-", "-", result
    focus = ", ".join(report.focus) if report.focus else "none"
    if report.focus_source in ("pilot", "search", "rerun"):
        focus += " (inferred)"
    return f"{report.changed} of {report.generated}", str(report.fired), focus, result


def _file_row(found: Any, allow_vacuous: bool) -> tuple[str, str, str, str]:
    """The same for FILE: whether the pass changed it, how many argument tuples were
    compared; ``unchanged`` when it did not change it, ``vacuous`` when none was compared."""
    report = found.report
    if found.problem is not None or report is None:
        return "-", "-", "-", "FAILED"
    if report.changed == 0:
        result = "unchanged"
    elif report.fired == 0:
        result = "vacuous (allowed)" if allow_vacuous else "vacuous"
    else:
        result = "ok"
    changed = "no" if report.changed == 0 else "yes"
    fired = f"{report.fired} of {report.generated} argument tuples"
    return changed, fired, "-", result


def _is_vacuous(found: Any, on_file: bool) -> bool:
    """A failure that is a vacuous check (not a counterexample)."""
    return found.vacuous or (on_file and found.problem is None)


def _vacuous_hint(name: str, found: Any, on_file: bool, where: str) -> str:
    """Why a check proved nothing, and the command-line options that make it prove
    something."""
    report = found.report
    if on_file:
        return (f"{name} changed {where} but none of {report.generated} argument tuples gave "
                "results to compare (each run raised), so the check proved nothing on it; "
                "--allow-vacuous accepts this")
    need = (f"--min-fired {report.min_fired}" if report.min_fired <= report.generated
            else f"all {report.generated}, as --check {report.generated} is below --min-fired "
            f"{report.min_fired}")
    return (f"the check was vacuous: {name} changed {report.changed} of {report.generated} "
            f"generated programs and {report.fired} of those were compared (fewer than "
            f"{need}), so it proved nothing.\n"
            "Focus it on what it rewrites with --focus OP[,OP] (operators such as maximum, "
            "op families such as reduce, expression forms such as match or ref); "
            "--allow-vacuous accepts a pass that legitimately rarely fires.\n"
            + report.text())


def add_parser(sub: Any) -> None:
    """The ``opt`` subcommand's options (``app.build_parser`` calls this)."""
    opt = sub.add_parser("opt", help="run optimisation passes, or check them",
                         description="Print FILE after the named passes (type-checked before "
                                     "and after), or, with --check N, property-test the "
                                     "passes against the interpreter on N generated "
                                     "programs each (and on FILE, when given), reporting "
                                     "how often each pass changed a program and was "
                                     "compared; a check that proved nothing (vacuous) "
                                     "fails unless --allow-vacuous.")
    opt.add_argument("file", nargs="?", metavar="FILE", help="the program (- reads standard "
                     "input)")
    opt.add_argument("--passes", metavar="A,B",
                     help="comma-separated pass specs, run in order: names (see --list), "
                     "options in parentheses, e.g. 'FuseOps(max_depth=8),FoldConstant'")
    opt.add_argument("--opt-level", type=non_negative_int, default=None, metavar="N",
                     help="run only the named passes whose opt level is at most N "
                          "(default: run every named pass)")
    opt.add_argument("--check", type=positive_int, default=None, metavar="N",
                     help="check each pass with check_pass on N generated programs (and, "
                     "given FILE, on FILE with N argument tuples): the table shows how many "
                     "programs each pass changed and how many of those were compared. Exit "
                     "1 on a counterexample, or when the check is vacuous: fewer than "
                     "--min-fired generated programs changed and compared. On FILE, a pass "
                     "that leaves it unchanged is reported 'unchanged' (not a failure); one "
                     "that changed it with no results compared is vacuous")
    opt.add_argument("--focus", metavar="OP[,OP]", default=None,
                     help="with --check: generate programs dense in these operators, op "
                     "families (e.g. reduce) or expression forms (e.g. match, ref) "
                     "(default: inferred from what the pass changes; FILE is checked as it "
                     "is)")
    opt.add_argument("--min-fired", type=non_negative_int, default=None, metavar="K",
                     help="with --check: how many generated programs a pass must change and "
                     "have compared for the check to count (default 20, or all N when N is "
                     "smaller: then a generated program that fails to run makes the check "
                     "vacuous; 0: never vacuous)")
    opt.add_argument("--allow-vacuous", action="store_true",
                     help="with --check: report a vacuous check ('vacuous (allowed)') "
                     "instead of failing, for a pass that legitimately rarely fires")
    opt.add_argument("--list", action="store_true", help="list the registered passes")
    opt.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``relay opt`` command; the exit code."""
    return run_opt(args)
