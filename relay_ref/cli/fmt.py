"""``relay fmt FILE...``: print each file in canonical Relay text (``--check``: only say
which would change, exit 1; ``-i``: rewrite them in place).

Prelude definitions a file uses are resolved but not printed into it; the file's comments
are kept (spec/syntax.md, Pr-Comments). With ``-i`` every file that formats is written at
the end, all in one ``Outputs`` transaction (keeping each file's mode, owner and group, and
writing through symlinks); a file that cannot be written leaves every file as it was. A
file with an error in it is reported and left alone; the others are still formatted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_ref import RelayError
from relay_ref.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    EXIT_USER,
    UsageError,
    each_file,
    read_text,
    source_name,
    use_colour,
)
from relay_ref.cli.outputs import Outputs, write_error


def add_parser(sub: Any) -> None:
    """The ``fmt`` subcommand's options (``app.build_parser`` calls this)."""
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
    fmt.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``relay fmt`` command; the exit code."""
    import relay_ref as rr

    outputs = Outputs() if args.in_place else None

    def fmt(path: str) -> int:
        if args.in_place and path == "-":
            raise UsageError("-: standard input cannot be formatted in place")
        source = read_text(path)
        try:
            # Prelude definitions the file uses are resolved but not printed into it; the
            # file's comments are kept (spec/syntax.md, Pr-Comments).
            text = rr.astext(rr.parse(source, source_name(path)), omit_prelude=True)
        except RelayError as err:
            print(err.render(use_colour(sys.stderr)), file=sys.stderr)
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
                    raise UsageError(write_error(err)) from None
        else:
            sys.stdout.write(text)
        return EXIT_OK

    if outputs is None:
        return each_file(args.files, fmt)
    try:
        status = each_file(args.files, fmt)
    except BaseException:  # an interrupt or a bug: no temporary file left behind
        outputs.discard()
        raise
    try:
        outputs.commit()
    except OSError as err:
        print(f"relay: error: {write_error(err)}", file=sys.stderr)
        status = EXIT_USAGE
    return status
