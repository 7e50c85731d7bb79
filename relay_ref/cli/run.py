"""``relay run FILE [ARG...]``: type-check a program, evaluate ``@main``, print the value.

Arguments are Relay expressions evaluated in the module's context (``3``, ``2.5f``,
``'(1, True)'``, ``'Cons(1, Cons(2, Nil))'``) or ``.npy`` files. A scalar literal written
without a suffix takes the parameter's dtype when it fits exactly (``3`` for an ``int64``
parameter). Exit codes and colours are ``_common``'s: 0 ok, 1 an error in the program
or its arguments (diagnostics on stderr), 2 bad usage (unreadable file, result not a tensor
for ``--output``, options that do not combine, an ``--output`` that is the program, the
``--params`` archive or a ``.npy`` argument -- after resolving links, checked before
anything runs).

``--output`` is written through ``outputs.Outputs``: atomically, keeping an existing
file's mode, owner and group; a failed write leaves the old file. Values are printed on a
big stack (``repl.run_deep``) and types iteratively: a 1000-deep tuple or closure type in
the "not a tensor" refusal is not an internal error.

``--params FILE.npz`` binds the parameters of ``@main`` named by the archive's keys to its
arrays (the weights ``relay import`` saves; ``weights.py``) before anything runs, as
``rr.compile(mod, params=...)`` binds them: the remaining parameters are the arguments. A key
naming no parameter, or an array that does not fit its parameter's type, is an error located
at the parameter (exit 1); an unreadable archive a usage error (exit 2).

``--compile`` runs ``@main`` through ``rr.compile`` (the fast executor) instead of the
definitional interpreter; everything else -- argument parsing, the printed value, located
diagnostics, exit codes -- is the same. ``--plan`` (the compiled plan) and ``--profile``
(the time per fused group and kernel) print to stderr and need ``--compile``; the
interpreter's ``--trace`` is a usage error with it, while ``--max-depth`` bounds compiled
call nesting as it bounds the interpreter's (``rr.compile(..., max_depth=N)``).
``--threads N`` (with ``--compile``) is ``rr.compile(..., threads=N)``: decimal digits, as
``$RELAY_REF_NUM_THREADS`` is read (``thread_count``); a count past ``rr.compile``'s limit
(``max(64, 4 x the CPUs available)``) is its error, named ``--threads`` (exit 1), and the
plan says the count came ``from --threads``.

``--memory-budget BUDGET`` (with ``--compile``) runs every kernel under Dynamic Tensor
Rematerialization (``rr.compile(..., memory_budget=...)``): bytes, or a fraction of the
unbudgeted peak (``0.4``, ``40%``); ``--heuristic``, ``--dealloc``, ``--cost`` and
``--dtr-log`` are ``rr.compile``'s arguments of the same names, ``--dtr-stats`` prints
``exe.dtr_stats`` as a table to stderr after the result. A bad budget or option value is a
usage error (exit 2) naming the option, an unknown heuristic (with "did you mean") and a
``--dtr-log`` path that cannot be written included; a budget the program cannot run in is a
located error (exit 1), as every other.

``--trace`` (or ``--trace=rules``) prints each evaluation rule applied, ``--trace=values``
also each step's value (``relay_ref.interpreter.trace``), on stdout before the value; at
most ``--trace-limit`` lines (default ``TRACE_LIMIT``; 0: all), then how many were left
out. A stuck evaluation prints its trace up to the stuck step (ending with the stuck rule,
the line kept past the limit), then the error on stderr.

Part of the CLI layer: it uses only the public API and ``relay_ref.repl`` (DESIGN.md
section 2; tests/test_layering.py checks it).

Malformed input is never an internal error:

* A literal argument is Relay text: bad syntax is a ``ParseError``, an ill-typed literal a
  ``RelayTypeError`` (it is type-checked against the parameter before it is evaluated), a
  failing one a ``RelayRuntimeError``; each located in ``<argument N>`` (exit 1).
* A ``.npy`` argument that cannot be read is a usage error (exit 2) naming the file and what
  is wrong with it: ``relay: error: x.npy: cannot load argument 1: it is truncated: ...``.
  The file is the problem, not the program, so there is nothing to locate in Relay text.
  ``weights.load_npy`` checks the header against the file's size before reading: a header that
  promises more data than the file holds is refused without allocating anything; pickled
  (object) arrays are never loaded.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

import relay_ref as rr
from relay_ref import repl
from relay_ref.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    EXIT_USER,
    UsageError,
    non_negative_int,
    positive_int,
    use_colour,
)
from relay_ref.cli.outputs import OutputError, Outputs, refuse_clobbering, write_error
from relay_ref.cli.weights import NpyError, load_npy

TRACE_LIMIT = 1000
"""Lines of a ``--trace`` shown by default (``--trace-limit N`` to change; 0: all)."""


def add_parser(sub: Any) -> None:
    """The ``run`` subcommand's options (``app.build_parser`` calls this)."""
    p = sub.add_parser("run", help="type-check and evaluate @main",
                       formatter_class=_RunFormatter,
                       description="Type-check FILE, then evaluate @main with the "
                                   "definitional interpreter (with --compile: the fast "
                                   "CPU executor, rr.compile) and print its value.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("args", nargs="*", metavar="ARG",
                   help="arguments of @main: Relay literals (e.g. 3, 2.5f, '(1, 2)', "
                        "'Cons(1, Nil)') or .npy files")
    p.add_argument("--entry", default="main", help="the global to run (default: main)")
    p.add_argument("--trace", action=TraceMode, default=None,
                   help="print each evaluation rule applied (for teaching; interpreter "
                        "only); --trace=values also shows each step's value, the "
                        "environments closures capture, the store and pattern matching. "
                        "A stuck evaluation prints the trace up to the stuck rule")
    p.add_argument("--trace-limit", type=non_negative_int, default=None, metavar="N",
                   help="with --trace: print at most N lines of the trace, then how many "
                        "were left out (default 1000; 0: all)")
    p.add_argument("-o", "--output", metavar="OUT.npy",
                   help="save the resulting tensor to a .npy file (never one of the "
                        "inputs: FILE, --params or an ARG)")
    p.add_argument("--no-prelude", action="store_true",
                   help="do not supply prelude definitions")
    p.add_argument("--max-depth", type=positive_int, default=None, metavar="N",
                   help="report recursion deeper than N nested calls (default 1000000; "
                        "with --compile too)")
    p.add_argument("--params", metavar="FILE.npz",
                   help="bind @main's parameters named by the keys of FILE.npz to its "
                        "arrays (the weights 'relay import' saves); the remaining "
                        "parameters are the ARGs")
    p.add_argument("--compile", action="store_true",
                   help="compile the program with rr.compile (fused numba kernels, "
                        "generated Python for control flow) and run that instead of the "
                        "interpreter: same arguments, value and errors")
    p.add_argument("--plan", action="store_true",
                   help="with --compile: print the compiled plan (passes, fused groups, "
                        "kernel calls, buffers) to stderr before running")
    p.add_argument("--profile", action="store_true",
                   help="with --compile: after the result, print the call's time and the "
                        "time spent in each fused group or kernel to stderr")
    p.add_argument("--threads", type=thread_count, default=None, metavar="N",
                   help="with --compile: threads the kernels use (rr.compile(threads=N); "
                        "at most max(64, 4 x the CPUs available); default "
                        "$RELAY_REF_NUM_THREADS, $OMP_NUM_THREADS, $NUMBA_NUM_THREADS, "
                        "else the CPUs available, at most 8)")
    dtr = p.add_argument_group(
        "memory budget (Dynamic Tensor Rematerialization, with --compile)")
    dtr.add_argument("--memory-budget", metavar="BUDGET", default=None,
                     help="run every kernel under a memory budget, evicting tensors and "
                          "recomputing them when needed (same results): bytes (1048576), "
                          "or a fraction of the unbudgeted peak (0.4 or 40%%, measured by "
                          "a first run without budget); inputs and weights count")
    dtr.add_argument("--heuristic", metavar="NAME", default=None,
                     help="which tensor to evict: dtr_eq (default), dtr, dtr_local, lru, "
                          "size, msps, random, or ablation(s=0|1,m=0|1,c=estar|eq|local|none)")
    dtr.add_argument("--dealloc", choices=("eager", "banish", "ignore"), default=None,
                     help="what a tensor the program drops becomes: evicted (eager, the "
                          "default), freed for good (banish), or nothing (ignore)")
    dtr.add_argument("--cost", choices=("flops", "unit", "measured"), default=None,
                     help="the cost of recomputing a tensor: flops (default, from shapes), "
                          "unit (1 per kernel) or measured (kernel wall time)")
    dtr.add_argument("--dtr-stats", action="store_true",
                     help="after the result, print the budgeted run's statistics (peak, "
                          "evictions, rematerializations, slowdown, ...) to stderr")
    dtr.add_argument("--dtr-log", metavar="LOG.jsonl", default=None,
                     help="write the budgeted run as the DTR paper's JSON-lines log")
    p.set_defaults(func=run)


class TraceMode(argparse.Action):
    """``--trace`` or ``--trace=rules|values``: the trace's mode in ``args.trace``.

    argparse cannot give an option an optional value written only after ``=``: with
    ``nargs="?"`` it would take ``FILE`` in ``--trace FILE`` as the value. So ``main``
    writes a bare ``--trace`` of ``relay run`` as ``--trace=rules`` before parsing
    (``bare_trace``), and this action takes exactly one value, which must be a mode."""

    MODES = ("rules", "values")

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        kwargs.setdefault("metavar", "=rules|values")
        super().__init__(option_strings, dest, nargs=None, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        if values not in self.MODES:
            parser.error(f"--trace takes rules or values (--trace=values), not {values!r}")
        setattr(namespace, self.dest, values)


class _RunFormatter(argparse.HelpFormatter):
    """``relay run``'s help: ``--trace[=rules|values]``, as it is written (no space)."""

    def _format_usage(self, *args: object, **kwargs: object) -> str:
        return super()._format_usage(*args, **kwargs).replace(  # type: ignore[arg-type]
            "[--trace =rules|values]", "[--trace[=rules|values]]")

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if isinstance(action, TraceMode):
            return "--trace[=rules|values]"
        return super()._format_action_invocation(action)


def thread_count(text: str) -> int:
    """argparse type for ``--threads``: decimal digits (``str.isdecimal``: ``３`` counts,
    ``²`` does not), >= 1, read as ``$RELAY_REF_NUM_THREADS`` is; the upper limit is
    ``rr.compile``'s to check."""
    digits = text.strip()
    if not digits.isdecimal():
        raise argparse.ArgumentTypeError(f"not a thread count (decimal digits): {text!r}")
    if len(digits.lstrip("0")) > 20:  # int() refuses past 4300 digits
        raise argparse.ArgumentTypeError(f"too many threads: {len(digits)} digits (at most "
                                         "max(64, 4 x the CPUs available))")
    value = int(digits)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def bare_trace(argv: list[str]) -> list[str]:
    """``relay run``'s arguments with a bare ``--trace`` written ``--trace=rules`` (see
    ``TraceMode``); what follows ``--`` is left as it is. ``--trace values`` (a space for
    the ``=``) raises ``UsageError``: ``values`` would otherwise be read as the FILE."""
    if not argv or argv[0] != "run":
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    out = list(argv)
    for i in range(1, end):
        if argv[i] == "--trace":
            if i + 1 < end and argv[i + 1] in TraceMode.MODES:
                raise UsageError(f"--trace {argv[i + 1]}: write --trace={argv[i + 1]} (the mode "
                             "follows '=', not a space)")
            out[i] = "--trace=rules"
    return out


def _usage(message: str) -> int:
    print(f"relay: error: {message}", file=sys.stderr)
    return EXIT_USAGE


#: the options that only mean something with ``--memory-budget``
_DTR_FLAGS = (("heuristic", "--heuristic"), ("dealloc", "--dealloc"), ("cost", "--cost"),
              ("dtr_stats", "--dtr-stats"), ("dtr_log", "--dtr-log"))


def _option_conflict(args: argparse.Namespace) -> str | None:
    """Why the options cannot be combined (a usage error), or None.

    ``--trace`` is the interpreter's: compiled code applies no evaluation rules.
    ``--plan``, ``--profile``, ``--memory-budget`` and ``--threads`` describe a compiled
    program, so they need ``--compile``; ``--heuristic``, ``--dealloc``, ``--cost``,
    ``--dtr-stats`` and ``--dtr-log`` configure a budget, so they need ``--memory-budget``;
    ``--trace-limit`` bounds a trace, so it needs ``--trace``."""
    if getattr(args, "trace_limit", None) is not None and not args.trace:
        return "--trace-limit bounds the lines of a trace: add --trace (or --trace=values)"
    if getattr(args, "memory_budget", None) is None:
        for flag, name in _DTR_FLAGS:
            if getattr(args, flag, None) not in (None, False):
                return f"{name} configures a memory budget: add --memory-budget"
    if getattr(args, "compile", False):
        if args.trace:
            return ("--trace lists the interpreter's evaluation rules; compiled code applies "
                    "none: drop --compile to trace, or --trace to compile")
        return None
    for flag, name in (("plan", "--plan"), ("profile", "--profile"),
                       ("memory_budget", "--memory-budget"), ("threads", "--threads")):
        if getattr(args, flag, None) not in (None, False):
            return f"{name} describes a compiled program: add --compile"
    return None


def run(args: argparse.Namespace) -> int:
    """Run ``args.file`` as ``relay run`` does; return the exit code.

    With ``args.compile`` @entry runs through ``rr.compile`` instead of the interpreter
    (same argument parsing, printing, diagnostics and exit codes); ``args.plan`` prints the
    plan and ``args.profile`` the per-kernel times, both to stderr."""
    conflict = _option_conflict(args)
    if conflict is not None:
        return _usage(conflict)
    try:
        refuse_clobbering(_inputs(args), [("-o", args.output)])
    except OutputError as err:
        return _usage(str(err))
    compiled = getattr(args, "compile", False)
    profile = getattr(args, "profile", False)
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except FileNotFoundError:
        return _usage(f"{args.file}: no such file")
    except IsADirectoryError:
        return _usage(f"{args.file}: is a directory")
    except UnicodeDecodeError as err:
        return _usage(f"{args.file}: not UTF-8 text (byte {err.start})")
    except OSError as err:
        return _usage(f"{args.file}: cannot read: {err.strerror or err}")
    weights = None
    if getattr(args, "params", None):
        from relay_ref.cli.weights import WeightsError, load_weights

        try:
            weights = load_weights(args.params)
        except WeightsError as err:
            return _usage(f"--params {err}")
    try:
        mod = rr.infer_types(rr.parse(text, args.file, prelude=not args.no_prelude))
        args.entry = args.entry.removeprefix("@")  # --entry main and --entry @main alike
        entry = mod.functions.get(args.entry)
        if entry is None:
            own = [name for name in mod.functions if name in text]  # not the prelude's
            hint = repl.did_you_mean(args.entry, own or list(mod.functions), sigil="@")
            return _usage(f"{args.file}: no function @{args.entry} to run{hint}")
        if args.output and not repl.returns_tensor(mod, args.entry):
            ret = repl.type_text(mod.global_types[args.entry].ret_type)
            if len(ret) > 120:  # a deep type: its start says enough
                ret = ret[:117] + "..."
            return _usage(f"--output: @{args.entry} returns {ret}, "
                          f"not a tensor: only a tensor can be saved to {args.output}")
        if weights:
            # the weights become constants; the parameters left are the arguments
            mod = repl.bind_params(mod, args.entry, weights, label=args.params)
            entry = mod.functions[args.entry]
        if len(args.args) != len(entry.params):
            names = " ".join(f"%{p.name_hint}" for p in entry.params[:8]) or "no arguments"
            if len(entry.params) > 8:
                names += f" and {len(entry.params) - 8} more"
            return _usage(f"@{args.entry} takes {len(entry.params)} argument(s) ({names}), "
                          f"{len(args.args)} given{_weights_hint(args, text)}")
        values = []
        for i, (arg, param) in enumerate(zip(args.args, entry.params, strict=True)):
            value = parse_argument(arg, i, mod, param.type_annotation, param.name_hint)
            if isinstance(value, int):  # an exit code
                return value
            values.append(value)
        if compiled:
            budgeted = _budget_options(args)
            bad = _bad_budget_option(args) if budgeted else None
            if bad is not None:
                return _usage(bad)
            try:
                exe = rr.compile(mod, entry=args.entry, profile=profile,
                                 max_depth=getattr(args, "max_depth", None),
                                 threads=getattr(args, "threads", None),
                                 threads_source="--threads", **budgeted)
            except (ValueError, TypeError) as err:
                if not budgeted:
                    raise
                return _usage(f"--memory-budget: {err}")
            if getattr(args, "plan", False):
                print(exe.plan, file=sys.stderr)
            result = exe(*values)
        else:
            trace = {"rules": True, "values": "values"}.get(args.trace, False)
            result = rr.evaluate(mod, *values, entry=args.entry, trace=trace,
                                 max_depth=getattr(args, "max_depth", None))
    except rr.RelayError as err:
        if args.trace and getattr(err, "trace", None):  # stuck: the trace up to there
            _print_trace(args, err.trace)
            sys.stdout.flush()
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    status = _print_result(args, result)
    if compiled and profile:
        print(_profile_text(exe.stats), file=sys.stderr)
    if compiled and getattr(args, "dtr_stats", False):
        _print_dtr_stats(exe.dtr_stats)
    return status


def _budget_options(args: argparse.Namespace) -> dict[str, Any]:
    """``rr.compile``'s DTR arguments from ``--memory-budget`` and its companions (none
    without a budget). The budget is passed as written: ``rr.compile`` reads ``40%``,
    ``0.4`` and ``1048576``, and says what is wrong with anything else."""
    if getattr(args, "memory_budget", None) is None:
        return {}
    out: dict[str, Any] = {"memory_budget": args.memory_budget}
    for key in ("heuristic", "dealloc", "cost"):
        if getattr(args, key, None) is not None:
            out[key] = getattr(args, key)
    if getattr(args, "dtr_log", None):
        out["dtr_log"] = args.dtr_log
    return out


def _bad_budget_option(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--memory-budget``, ``--heuristic`` or ``--dtr-log`` (a usage
    error naming the option: the checks ``rr.compile`` makes, made here first so that the
    message names the option as written; a log path that cannot be written fails before
    the run), or None."""
    from relay_ref.dtr.errors import DTRError
    from relay_ref.dtr.options import check_dtr_log, check_heuristic, parse_budget

    checks = [("--memory-budget", lambda: parse_budget(args.memory_budget, "--memory-budget")),
              ("--dtr-log", lambda: check_dtr_log(getattr(args, "dtr_log", None),
                                                  "--dtr-log"))]
    if getattr(args, "heuristic", None) is not None:
        checks.append(("--heuristic", lambda: check_heuristic(args.heuristic)))
    for flag, check in checks:
        try:
            check()
        except (DTRError, TypeError) as err:
            text = err.message if isinstance(err, DTRError) else str(err)
            return text if text.startswith(flag) else f"{flag}: {text}"
    return None


def _print_dtr_stats(stats: Any) -> None:
    """``--dtr-stats``: the run's statistics as a table on stderr."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="DTR run", show_header=True)
    table.add_column("statistic")
    table.add_column("value", justify="right")
    for key, value in stats.as_dict().items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        table.add_row(key, text)
    Console(file=sys.stderr, no_color=not use_colour(sys.stderr), width=80).print(table)


def _inputs(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The files ``relay run`` reads, labelled for ``refuse_clobbering``: the program,
    ``--params`` and the ``.npy`` arguments."""
    files = [("FILE", args.file), ("--params", getattr(args, "params", None))]
    files += [(f"argument {i + 1}", arg) for i, arg in enumerate(args.args)
              if arg.endswith(".npy")]
    return files


def _deep(show: Any, item: Any) -> str:
    """``show(item)`` on a big stack: a type or value may nest deeper than Python's
    recursion limit (a 1000-deep tuple or closure)."""
    return repl.run_deep(lambda: show(item))


def _weights_hint(args: argparse.Namespace, text: str) -> str:
    """For a file ``relay import`` wrote, run without ``--params``: which file to give."""
    if getattr(args, "params", None):
        return ""
    from relay_ref.cli.weights import weights_named_in

    named = weights_named_in(text, args.file)
    return f"; its weights are in {named}: add --params {named}" if named else ""


def _profile_text(stats: Any) -> str:
    """``--profile``'s report: the call's time, then the per-kernel table. ``relay run``
    makes one call, the first: its kernel times include loading (or compiling) each numba
    kernel, which the report says."""
    text = str(stats)
    if not stats.kernels:
        return text + "\n(no kernel calls: the program ran as generated Python only)"
    return text + ("\n(one call, the first: a kernel's time includes loading it from numba's "
                   "cache, or compiling it)")


def _print_result(args: argparse.Namespace, result: Any) -> int:
    """Print (or with ``--output`` save) the value ``@entry`` returned; the exit code."""
    if args.trace:
        result, events = result
        _print_trace(args, events)
    if args.output:
        if not isinstance(result, np.ndarray):
            print(_deep(repl.value_text, result))
            return _usage(f"--output: the result is not a tensor, cannot save it to "
                          f"{args.output}")
        try:
            with Outputs() as out:  # to a file object: np.save(path) would append ".npy"
                out.stage(args.output, lambda f: np.save(f, result))
        except OSError as err:
            return _usage(f"--output: {write_error(err)}")
        print(f"saved {result.dtype.name} tensor of shape {tuple(result.shape)} to "
              f"{args.output}", file=sys.stderr)
        return EXIT_OK
    print(_deep(repl.value_text, result))
    return EXIT_OK


def _print_trace(args: argparse.Namespace, events: list[Any]) -> None:
    """The trace, at most ``--trace-limit`` lines (``TRACE_LIMIT`` by default, 0: all)."""
    limit = getattr(args, "trace_limit", None)
    limit = TRACE_LIMIT if limit is None else (limit or None)
    if events:
        print(repl.format_trace(events, limit=limit, colour=use_colour(sys.stdout)))


def parse_argument(arg: str, index: int, mod: rr.IRModule, ty: repl.Type | None,
              name: str = "arg") -> Any:
    """The value of command-line argument ``arg`` (an exit code int on usage errors): a
    ``.npy`` file, else a Relay literal checked against the parameter's type
    (``repl.argument_value``)."""
    if arg.endswith(".npy"):
        try:
            return load_npy(arg)
        except NpyError as err:
            return _usage(f"{arg}: cannot load argument {index + 1}: {err}")
    return repl.argument_value(arg, f"<argument {index + 1}>", mod, ty, name,
                               f"argument {index + 1} (%{name})")
