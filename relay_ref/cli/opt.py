"""``relay opt``: run optimisation passes on a file, or check them against the interpreter.

* ``relay opt FILE --passes A,B [--opt-level N]`` prints the optimised program (canonical
  text, prelude definitions the file uses resolved but not printed), after type-checking
  both the input and the result.
* ``relay opt --passes A,B --check N`` runs ``relay_ref.testing.check_pass`` for each
  named pass on N generated programs and prints a table (exit 1 if a pass fails, with the
  shrunk counterexample). ``relay opt FILE --passes A,B --check N`` checks each pass on
  FILE too, with N argument tuples drawn for its ``@main``'s parameter types, and reports
  both (a FILE whose ``@main`` takes values no arguments are drawn for, such as an ADT, is
  an error, exit 1).
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
    if args.check is not None:
        try:
            program = (rr.parse(read_text(args.file), source_name(args.file)) if args.file
                       else None)
            where = source_name(args.file) if args.file else None
            return EXIT_OK if _check(names, args.check, program, where) else EXIT_USER
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


def _check(names: list[str], examples: int, program: IRModule | None = None,
           file: str | None = None) -> bool:
    """check_pass on ``examples`` generated programs per pass -- first, given ``program``
    (read from ``file``), on it with ``examples`` argument tuples -- with a progress bar
    and a table; each failure's counterexample (its arguments among it) follows the table.
    Raises ``RelayError`` when ``program`` cannot be checked (``check_named_pass``)."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from relay_ref.repl import check_named_pass

    console = Console(stderr=True)
    runs: list[tuple[IRModule | None, str, str]] = [(None, "generated programs",
                                                       "programs")]
    if program is not None:
        runs.insert(0, (program, file or "FILE", "argument tuples"))
    rows, failures = [], []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("checking passes", total=len(names) * len(runs))
        for name in names:
            for mod, where, cases in runs:
                progress.update(task, description=f"checking {name} on {where}")
                problem = check_named_pass(name, examples, mod)
                rows.append((name, where, f"{examples} {cases}",
                             "ok" if problem is None else "FAILED"))
                if problem is not None:  # a FILE's counterexample is FILE shrunk
                    shrunk = " (shrunk while it still fails)" if mod is not None else ""
                    failures.append((f"{name} on {where}{shrunk}", problem))
                progress.advance(task)
    title = f"check_pass on {examples} generated programs per pass"
    if program is not None:
        title = f"check_pass on {file} ({examples} argument tuples) and on {examples} " \
                "generated programs per pass"
    table = Table(title=title)
    table.add_column("pass", style="bold")
    table.add_column("on")
    table.add_column("cases", justify="right")
    table.add_column("result")
    for name, where, count, result in rows:
        table.add_row(name, where, count, f"[green]{result}[/]" if result == "ok"
                      else f"[red]{result}[/]")
    Console().print(table)
    for what, problem in failures:
        console.print(f"{what}: ", style="bold red", end="", soft_wrap=True)
        console.print(problem, highlight=False, markup=False)
    return not failures


def add_parser(sub: Any) -> None:
    """The ``opt`` subcommand's options (``app.build_parser`` calls this)."""
    opt = sub.add_parser("opt", help="run optimisation passes, or check them",
                         description="Print FILE after the named passes (type-checked before "
                                     "and after), or, with --check N, property-test the "
                                     "passes against the interpreter on N generated "
                                     "programs each.")
    opt.add_argument("file", nargs="?", metavar="FILE", help="the program (- reads standard "
                     "input)")
    opt.add_argument("--passes", metavar="A,B",
                     help="comma-separated pass specs, run in order: names (see --list), "
                     "options in parentheses, e.g. 'FuseOps(max_depth=8),FoldConstant'")
    opt.add_argument("--opt-level", type=non_negative_int, default=None, metavar="N",
                     help="run only the named passes whose opt level is at most N "
                          "(default: run every named pass)")
    opt.add_argument("--check", type=positive_int, default=None, metavar="N",
                     help="check each pass with check_pass on N generated programs")
    opt.add_argument("--list", action="store_true", help="list the registered passes")
    opt.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``relay opt`` command; the exit code."""
    return run_opt(args)
