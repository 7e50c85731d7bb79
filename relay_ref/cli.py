"""The ``relay`` command: check, run, format and optimise Relay programs; import ONNX models
(``cli_import``); list and document the operators (``cli_ops``).

A misspelt subcommand (``relay chek``) or option (``--trce``) is a usage error that names the
closest one (``; did you mean check?``), as every unknown name relay reports does
(``relay_ref.suggest`` through ``repl``).

Exit codes: 0 success; 1 a user error in the program (diagnostics on stderr) or a failed
``fmt --check``; 2 bad command-line usage or an unreadable file; 70 an internal error (a bug
in relay_ref: reported with a short message, the traceback only with ``RELAY_DEBUG=1``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from relay_ref import RelayError, __version__
from relay_ref.cli_outputs import OutputError, Outputs, write_error

EXIT_OK, EXIT_USER, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70


class _Usage(Exception):
    """A command-line mistake (bad argument, unreadable file)."""


class _Parser(argparse.ArgumentParser):
    """argparse with "did you mean" for a value outside an argument's choices (the
    subcommand: ``relay chek``). Python 3.11's argparse has no suggestions; this adds them the
    way every other relay message words them. ``subcommands``: the ``COMMAND`` parsers by
    name, set by ``build_parser`` (for the options an unknown one may have meant)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, argparse.ArgumentParser] = {}

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            from relay_ref.repl import did_you_mean

            names = [str(c) for c in action.choices]
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{did_you_mean(str(value), names)} "
                        f"(choose from {', '.join(names)})")
        super()._check_value(action, value)


def _unrecognized(parser: _Parser, command: str | None, unknown: list[str]) -> str:
    """argparse's "unrecognized arguments" message, with the closest option of the command
    (or of ``relay`` itself) for each unknown option: ``--trce; did you mean --trace?``."""
    from relay_ref.repl import close_names, suggestion_hint

    known = list(parser._option_string_actions)
    if command in parser.subcommands:
        known += parser.subcommands[command]._option_string_actions
    near = [c for arg in unknown if arg.startswith("-")
            for c in close_names(arg.partition("=")[0], known)]
    return f"unrecognized arguments: {' '.join(unknown)}" \
           f"{suggestion_hint(list(dict.fromkeys(near)), conjunction='and')}"


def _colour(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def source_name(path: str) -> str:
    """The name diagnostics give the text of ``path`` (``<stdin>`` for ``-``)."""
    return "<stdin>" if path == "-" else path


def _read(path: str) -> str:
    """The text of ``path``; ``-`` reads standard input (as ``relay check -``)."""
    if path == "-":
        try:
            return sys.stdin.read()
        except (OSError, UnicodeDecodeError) as err:
            raise _Usage(f"-: cannot read standard input: {err}") from None
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _Usage(f"{path}: no such file") from None
    except IsADirectoryError:
        raise _Usage(f"{path}: is a directory") from None
    except (OSError, UnicodeDecodeError) as err:
        raise _Usage(f"{path}: cannot read: {err}") from None


def _each_file(paths: list[str], work) -> int:
    """``work(path)`` for every path, reporting a missing or unreadable file as a usage
    error without stopping; the exit status is the worst of the results (2 > 1 > 0)."""
    status = EXIT_OK
    for path in paths:
        try:
            result = work(path)
        except _Usage as err:
            print(f"relay: error: {err}", file=sys.stderr)
            result = EXIT_USAGE
        status = max(status, result)
    return status


def _cmd_check(args: argparse.Namespace) -> int:
    import relay_ref as rr
    from relay_ref.repl import type_text

    if args.derive or args.global_name is not None or args.max_depth is not None \
            or args.max_nodes is not None:
        from relay_ref.cli_derive import check_derive

        return check_derive(args)

    def check(path: str) -> int:
        source = _read(path)
        try:
            mod = rr.parse(source, source_name(path), prelude=not args.no_prelude)
            mod = rr.infer_types(mod)
            _check_gradients(mod, source)
        except RelayError as err:
            print(err.render(_colour(sys.stderr)), file=sys.stderr)
            return EXIT_USER
        if args.types:
            # type_text is iterative: a 1000-deep type prints without deep recursion
            print("\n".join(f"@{name} : {type_text(mod.global_types.get(name))}"
                            for name in mod.functions))
        elif not args.quiet:
            print(f"{path}: ok", file=sys.stderr)
        return EXIT_OK

    return _each_file(args.files, check)


def _check_gradients(mod: object, source: str) -> None:
    """``gradient(f)`` calls expanded as ``relay run`` would (spec/ad.md AD-Grad-Op), so
    what the AD pass refuses (an op without a rule, an ADT with a function field) is
    reported by ``check`` too. Only for a source that names the operator (the expansion
    type-checks its result again)."""
    import relay_ref as rr

    if "gradient" in source:
        rr.optimize(mod, ["ExpandGradient"])


def _cmd_fmt(args: argparse.Namespace) -> int:
    """``relay fmt``. With ``-i`` every file that formats is written at the end, all in one
    ``Outputs`` transaction (keeping each file's mode, owner and group, and writing through
    symlinks); a file that cannot be written leaves every file as it was. A file with an
    error in it is reported and left alone; the others are still formatted."""
    import relay_ref as rr

    outputs = Outputs() if args.in_place else None

    def fmt(path: str) -> int:
        if args.in_place and path == "-":
            raise _Usage("-: standard input cannot be formatted in place")
        source = _read(path)
        try:
            # Prelude definitions the file uses are resolved but not printed into it; the
            # file's comments are kept (spec/syntax.md, Pr-Comments).
            text = rr.astext(rr.parse(source, source_name(path)), omit_prelude=True)
        except RelayError as err:
            print(err.render(_colour(sys.stderr)), file=sys.stderr)
            return EXIT_USER
        if not text.endswith("\n"):
            text += "\n"
        if args.check:
            if text != source:
                print(f"{path}: would reformat", file=sys.stderr)
                return EXIT_USER
        elif outputs is not None:
            if text != source and outputs.active:  # after a failed write, none is written
                try:
                    outputs.text(path, text)
                except OSError as err:
                    raise _Usage(write_error(err)) from None
        else:
            sys.stdout.write(text)
        return EXIT_OK

    if outputs is None:
        return _each_file(args.files, fmt)
    try:
        status = _each_file(args.files, fmt)
    except BaseException:  # an interrupt or a bug: no temporary file left behind
        outputs.discard()
        raise
    try:
        outputs.commit()
    except OSError as err:
        print(f"relay: error: {write_error(err)}", file=sys.stderr)
        status = EXIT_USAGE
    return status


def _cmd_run(args: argparse.Namespace) -> int:
    from relay_ref.cli_run import run_file

    return run_file(args)


def _cmd_opt(args: argparse.Namespace) -> int:
    from relay_ref.cli_opt import run_opt

    return run_opt(args)


def _is_number(text: str) -> bool:
    """A negative Relay literal such as ``-3``, ``-2.5f`` or ``-1i64`` (not an option)."""
    return text.startswith("-") and (text[1:2].isdigit() or text[1:2] == ".")


def build_parser() -> _Parser:
    parser = _Parser(
        prog="relay",
        description="Check, run, format and optimise programs in TVM's Relay text format "
                    "(v0.0.5); import ONNX models as Relay text; list and document the "
                    "operators.",
        epilog="Exit status: 0 ok, 1 errors in the program, 2 usage errors, 70 internal "
               "errors. Set NO_COLOR to disable colours.")
    parser.add_argument("--version", action="version", version=f"relay_ref {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="parse and type-check files",
                           description="Parse and type-check each FILE; report every error.")
    check.add_argument("files", nargs="+", metavar="FILE", help="files to check (- reads "
                       "standard input)")
    check.add_argument("--types", action="store_true", help="print the type of each global")
    check.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    check.add_argument("--no-prelude", action="store_true",
                       help="do not supply prelude definitions (List, map, ...)")
    check.add_argument("--derive", action="store_true",
                       help="print the typing derivation of a global (one FILE): each rule, "
                            "its premises, the holes it made and how they were solved, each "
                            "type relation's answers")
    check.add_argument("--global", dest="global_name", metavar="NAME", default=None,
                       help="with --derive: the global to derive (default: main)")
    check.add_argument("--max-depth", type=_positive_int, default=None, metavar="N",
                       help="with --derive: elide premises deeper than N levels (default 40)")
    check.add_argument("--max-nodes", type=_positive_int, default=None, metavar="N",
                       help="with --derive: show at most N nodes (default 2000)")
    check.set_defaults(func=_cmd_check)

    run = sub.add_parser("run", help="type-check and evaluate @main",
                         formatter_class=_RunFormatter,
                         description="Type-check FILE, then evaluate @main with the "
                                     "definitional interpreter (with --compile: the fast "
                                     "CPU executor, rr.compile) and print its value.")
    run.add_argument("file", metavar="FILE")
    run.add_argument("args", nargs="*", metavar="ARG",
                     help="arguments of @main: Relay literals (e.g. 3, 2.5f, '(1, 2)', "
                          "'Cons(1, Nil)') or .npy files")
    run.add_argument("--entry", default="main", help="the global to run (default: main)")
    run.add_argument("--trace", action=_TraceMode, default=None,
                     help="print each evaluation rule applied (for teaching; interpreter "
                          "only); --trace=values also shows each step's value, the "
                          "environments closures capture, the store and pattern matching. "
                          "A stuck evaluation prints the trace up to the stuck rule")
    run.add_argument("--trace-limit", type=_non_negative_int, default=None, metavar="N",
                     help="with --trace: print at most N lines of the trace, then how many "
                          "were left out (default 1000; 0: all)")
    run.add_argument("-o", "--output", metavar="OUT.npy",
                     help="save the resulting tensor to a .npy file (never one of the "
                          "inputs: FILE, --params or an ARG)")
    run.add_argument("--no-prelude", action="store_true",
                     help="do not supply prelude definitions")
    run.add_argument("--max-depth", type=_positive_int, default=None, metavar="N",
                     help="report recursion deeper than N nested calls (default 1000000; "
                          "with --compile too)")
    run.add_argument("--params", metavar="FILE.npz",
                     help="bind @main's parameters named by the keys of FILE.npz to its "
                          "arrays (the weights 'relay import' saves); the remaining "
                          "parameters are the ARGs")
    run.add_argument("--compile", action="store_true",
                     help="compile the program with rr.compile (fused numba kernels, "
                          "generated Python for control flow) and run that instead of the "
                          "interpreter: same arguments, value and errors")
    run.add_argument("--plan", action="store_true",
                     help="with --compile: print the compiled plan (passes, fused groups, "
                          "kernel calls, buffers) to stderr before running")
    run.add_argument("--profile", action="store_true",
                     help="with --compile: after the result, print the call's time and the "
                          "time spent in each fused group or kernel to stderr")
    run.set_defaults(func=_cmd_run)

    fmt = sub.add_parser("fmt", help="print files in canonical form",
                         description="Print each FILE in canonical Relay text.")
    fmt.add_argument("files", nargs="+", metavar="FILE")
    mode = fmt.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="exit 1 if a file is not in canonical form; change nothing")
    mode.add_argument("-i", "--in-place", action="store_true",
                      help="rewrite files in place (atomically, all at the end, keeping "
                           "each file's mode, owner and group; a file that cannot be "
                           "written leaves every file unchanged)")
    fmt.set_defaults(func=_cmd_fmt)

    from relay_ref.cli_import import add_parser as add_import

    add_import(sub)

    from relay_ref.cli_rule import add_parser as add_rule

    add_rule(sub)

    opt = sub.add_parser("opt", help="run optimisation passes, or check them",
                         description="Print FILE after the named passes (type-checked before "
                                     "and after), or, with --check N, property-test the "
                                     "passes against the interpreter on N generated "
                                     "programs each.")
    opt.add_argument("file", nargs="?", metavar="FILE", help="the program (- reads standard "
                     "input)")
    opt.add_argument("--passes", metavar="A,B",
                     help="comma-separated pass names, run in order (see --list)")
    opt.add_argument("--opt-level", type=_non_negative_int, default=None, metavar="N",
                     help="run only the named passes whose opt level is at most N "
                          "(default: run every named pass)")
    opt.add_argument("--check", type=_positive_int, default=None, metavar="N",
                     help="check each pass with check_pass on N generated programs")
    opt.add_argument("--list", action="store_true", help="list the registered passes")
    opt.set_defaults(func=_cmd_opt)

    from relay_ref.cli_ops import add_parsers as add_ops

    add_ops(sub)
    parser.subcommands = dict(sub.choices)
    return parser


class _TraceMode(argparse.Action):
    """``--trace`` or ``--trace=rules|values``: the trace's mode in ``args.trace``.

    argparse cannot give an option an optional value written only after ``=``: with
    ``nargs="?"`` it would take ``FILE`` in ``--trace FILE`` as the value. So ``main``
    writes a bare ``--trace`` of ``relay run`` as ``--trace=rules`` before parsing
    (``_bare_trace``), and this action takes exactly one value, which must be a mode."""

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
        if isinstance(action, _TraceMode):
            return "--trace[=rules|values]"
        return super()._format_action_invocation(action)


def _bare_trace(argv: list[str]) -> list[str]:
    """``relay run``'s arguments with a bare ``--trace`` written ``--trace=rules`` (see
    ``_TraceMode``); what follows ``--`` is left as it is. ``--trace values`` (a space for
    the ``=``) raises ``_Usage``: ``values`` would otherwise be read as the FILE."""
    if not argv or argv[0] != "run":
        return argv
    end = argv.index("--") if "--" in argv else len(argv)
    out = list(argv)
    for i in range(1, end):
        if argv[i] == "--trace":
            if i + 1 < end and argv[i + 1] in _TraceMode.MODES:
                raise _Usage(f"--trace {argv[i + 1]}: write --trace={argv[i + 1]} (the mode "
                             "follows '=', not a space)")
            out[i] = "--trace=rules"
    return out


def _non_negative_int(text: str) -> int:
    """argparse type for ``--opt-level``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _positive_int(text: str) -> int:
    """argparse type for ``--max-depth`` and ``--check``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _encode_or_escape(*streams: object) -> None:
    """Output streams whose encoding cannot write what relay prints (``⇒``, ``ρ``, ``ℓ``,
    ``Δ; Γ ⊢``...: an ``ascii`` or ``latin-1`` terminal, ``PYTHONIOENCODING=ascii``) escape
    those characters (``\\u21d2``) instead of failing: the text is reconfigured with
    ``errors="backslashreplace"``. UTF-8 streams are left as they are."""
    for stream in streams:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        try:
            "⇒ρσℓ↦▷⊣Δ⊢τ…".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                with contextlib.suppress(ValueError, OSError):
                    reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    _encode_or_escape(sys.stdout, sys.stderr)
    parser = build_parser()
    try:
        argv = _bare_trace(list(sys.argv[1:] if argv is None else argv))
    except _Usage as err:
        print(f"relay run: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    args, extras = parser.parse_known_args(argv)
    if extras and args.command == "run":
        # `relay run FILE --entry f 100`: arguments of @main may follow options.
        args.args = list(args.args) + [e for e in extras if e != "--"]
        after_dashes = extras[extras.index("--"):] if "--" in extras else []
        unknown = [e for e in extras if e.startswith("-") and not _is_number(e)
                   and e != "--" and e not in after_dashes]
        if unknown:
            parser.error(_unrecognized(parser, args.command, unknown))
    elif extras:
        parser.error(_unrecognized(parser, args.command, extras))
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except (_Usage, OutputError) as err:
        print(f"relay: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except RelayError as err:
        print(err.render(_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    except KeyboardInterrupt:
        print("relay: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `relay run ... | head`: the reader left, as with any filter
        with contextlib.suppress(OSError):  # no flush error at exit either
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a pipeline member
    except Exception as err:  # a bug in relay_ref: say so plainly
        if os.environ.get("RELAY_DEBUG"):
            traceback.print_exc()
        print(f"relay: internal error: {type(err).__name__}: {err}\n"
              "This is a bug in relay_ref; rerun with RELAY_DEBUG=1 for the traceback.",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
