"""What every ``relay`` subcommand shares: exit codes, usage errors, reading files, colour,
and argparse's number types.

A module of the ``relay_ref.cli`` package only (its name starts with ``_``: nothing outside
the package imports it); the names in it are public to the package.

Exit codes: ``EXIT_OK`` 0 success; ``EXIT_USER`` 1 a user error in the program (diagnostics
on stderr) or a failed ``fmt --check``; ``EXIT_USAGE`` 2 bad command-line usage or an
unreadable file; ``EXIT_INTERNAL`` 70 an internal error (a bug in relay_ref).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

EXIT_OK, EXIT_USER, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70


class UsageError(Exception):
    """A command-line mistake (bad argument, unreadable file): ``relay: error: MESSAGE``,
    exit ``EXIT_USAGE``."""


def use_colour(stream: TextIO) -> bool:
    """Whether to colour what goes to ``stream``: never with ``NO_COLOR``, always with
    ``FORCE_COLOR``, else when it is a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def source_name(path: str) -> str:
    """The name diagnostics give the text of ``path`` (``<stdin>`` for ``-``)."""
    return "<stdin>" if path == "-" else path


def read_text(path: str) -> str:
    """The text of ``path``; ``-`` reads standard input (as ``relay check -``). A missing,
    unreadable or non-UTF-8 file raises ``UsageError``."""
    if path == "-":
        try:
            return sys.stdin.read()
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"-: cannot read standard input: {err}") from None
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: cannot read: {err}") from None


def each_file(paths: list[str], work: Callable[[str], int]) -> int:
    """``work(path)`` for every path, reporting a missing or unreadable file as a usage
    error without stopping; the exit status is the worst of the results (2 > 1 > 0)."""
    status = EXIT_OK
    for path in paths:
        try:
            result = work(path)
        except UsageError as err:
            print(f"relay: error: {err}", file=sys.stderr)
            result = EXIT_USAGE
        status = max(status, result)
    return status


def _int_at_least(low: int, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type for ``--opt-level`` and ``--trace-limit``."""
    return _int_at_least(0, text)


def positive_int(text: str) -> int:
    """argparse type for ``--max-depth``, ``--max-nodes`` and ``--check``."""
    return _int_at_least(1, text)
