"""The ``relay`` command line: the parser of every subcommand, and ``main``.

Each subcommand is a module of this package (``check``, ``run``, ``fmt``, ``import_onnx``,
``rule``, ``opt``, ``partition``, ``ops``, ``doc``, ``dtr``) with ``add_parser(subparsers)``
and ``run(args) -> int``; this module builds ``relay``'s parser from them and turns what
escapes a command into an exit code and a message, never a traceback.

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
from typing import Any

from relay_ref import RelayError, __version__
from relay_ref.cli import (
    check,
    doc,
    dtr,
    export,
    fmt,
    import_onnx,
    ops,
    opt,
    partition,
    rule,
    run,
)
from relay_ref.cli._common import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    EXIT_USER,
    UsageError,
    use_colour,
)
from relay_ref.cli.outputs import OutputError

# One module per subcommand, each with add_parser(subparsers) and run(args) -> int.
SUBCOMMANDS = (check, run, fmt, import_onnx, export, rule, opt, partition, ops, doc, dtr)


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


def _is_number(text: str) -> bool:
    """A negative Relay literal such as ``-3``, ``-2.5f`` or ``-1i64`` (not an option)."""
    return text.startswith("-") and (text[1:2].isdigit() or text[1:2] == ".")


def build_parser() -> _Parser:
    """``relay``'s parser: ``--version`` and each module of ``SUBCOMMANDS``'s parser (its
    ``set_defaults(func=run)`` names what runs it)."""
    parser = _Parser(
        prog="relay",
        description="Check, run, format and optimise programs in TVM's Relay text format "
                    "(v0.0.5); import ONNX models as Relay text; list and document the "
                    "operators.",
        epilog="Exit status: 0 ok, 1 errors in the program, 2 usage errors, 70 internal "
               "errors. Set NO_COLOR to disable colours.")
    parser.add_argument("--version", action="version", version=f"relay_ref {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in SUBCOMMANDS:  # in this order in --help
        command.add_parser(sub)
    parser.subcommands = dict(sub.choices)
    return parser


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
    """Run ``relay`` on ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    _encode_or_escape(sys.stdout, sys.stderr)
    parser = build_parser()
    try:
        argv = run.bare_trace(list(sys.argv[1:] if argv is None else argv))
    except UsageError as err:
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
    except (UsageError, OutputError) as err:
        print(f"relay: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except RelayError as err:
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
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
