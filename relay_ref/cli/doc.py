"""``relay doc OP...``: what the kernel's ``:doc OP`` shows, for each operator OP
(``repl.op_doc``, one function for both): the signature with every attribute and its
default, the support level, the op's type with its relation, then the documentation. An
unknown name is a usage error (exit 2) naming the closest operators; every name is checked
before any is printed. The first line is bold on a terminal.

Part of the CLI layer: the registry is reached through ``relay_ref.repl`` (DESIGN.md
section 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_ref import repl
from relay_ref.cli._common import EXIT_OK, UsageError, use_colour
from relay_ref.cli.ops import NEAR


def add_parser(sub: Any) -> None:
    """The ``doc`` subcommand (``app.build_parser`` calls this)."""
    doc = sub.add_parser(
        "doc", help="document an operator (attributes and defaults, type, description)",
        description="Print the documentation of each operator OP, as the kernel's :doc "
                    "shows it: its signature with every attribute and its default, its "
                    "support level, its type with the relation that constrains it, then "
                    "its description.",
        epilog="Exit status: 0 ok, 2 an unknown operator (the closest are suggested).")
    doc.add_argument("names", nargs="+", metavar="OP", help="operator names, e.g. nn.conv2d")
    doc.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``relay doc`` command; the exit code."""
    docs = []
    for name in args.names:  # every name first: an unknown one prints nothing
        text = repl.op_doc(name)
        if text is None:
            hint = repl.did_you_mean(name, repl.op_names(), limit=3, cutoff=NEAR)
            raise UsageError(f"no operator {name}{hint} ('relay ops' lists them)")
        docs.append(text)
    colour = use_colour(sys.stdout)
    for i, text in enumerate(docs):
        if i:
            sys.stdout.write("\n")
        if not colour:
            sys.stdout.write(text + "\n")
            continue
        from rich.console import Console
        from rich.text import Text

        console = Console(file=sys.stdout, force_terminal=True, highlight=False,
                          soft_wrap=True, emoji=False, markup=False)
        head, _, rest = text.partition("\n")
        console.print(Text(head, style="bold"))
        if rest:
            console.print(Text(rest))
    return EXIT_OK
