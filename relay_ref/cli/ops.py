"""``relay ops [PREFIX]`` lists the registered operators (``relay doc OP...``, ``doc.py``,
documents them).

* ``relay ops`` prints a table of every operator (``relay ops nn.`` those whose name starts
  with ``nn.``), one row each: its name, number of inputs (``*``: any number), support level
  (TVM's: 1 basic tensor ops ... 10 temporary/internal) and the first sentence of its
  documentation, cut to the width (a terminal's; 120 columns when piped, so ``relay ops |
  grep conv`` sees whole rows). A prefix no operator starts with is a usage error (exit 2)
  naming the closest operators or families.
* ``relay doc OP`` (``doc.py``) prints what the kernel's ``:doc OP`` shows.

Part of the CLI layer: the registry is reached through ``relay_ref.repl`` (DESIGN.md
section 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from relay_ref import repl
from relay_ref.cli._common import EXIT_OK, UsageError, use_colour

NEAR = 0.7
"""Suggestions for an unknown operator or prefix score at least this (difflib's ratio):
operator names share ``nn.``, so the default 0.6 would offer ``nn.pad`` for ``nn.dens``."""
PIPED_WIDTH = 120
"""``relay ops``'s width when stdout is no terminal and ``COLUMNS`` is unset."""


def add_parser(sub: Any) -> None:
    """The ``ops`` subcommand (``app.build_parser`` calls this)."""
    ops = sub.add_parser(
        "ops", help="list the operators (name, inputs, support level, summary)",
        description="List the registered operators, or those whose name starts with "
                    "PREFIX ('nn.', 'nn.conv', 'image.'), one row each: name, number of "
                    "inputs, support level and a one-line summary ('relay doc OP' has the "
                    "rest).",
        epilog="Exit status: 0 ok, 2 no operator starts with PREFIX (the closest are "
               "suggested).")
    ops.add_argument("prefix", nargs="?", default="", metavar="PREFIX",
                     help="list only the operators whose name starts with PREFIX")
    ops.set_defaults(func=run)


def _families(names: list[str]) -> list[str]:
    """``nn.``, ``image.``, ...: the dotted prefixes of the operator names."""
    return sorted({n.rpartition(".")[0] + "." for n in names if "." in n})


def run(args: argparse.Namespace) -> int:
    """The ``relay ops`` command; the exit code."""
    from rich.console import Console
    from rich.table import Table

    names = repl.op_names()
    shown = [n for n in names if n.startswith(args.prefix)]
    if not shown:
        hint = repl.did_you_mean(args.prefix, _families(names) + names, limit=3,
                                 cutoff=NEAR)
        raise UsageError(f"no operator starts with {args.prefix!r}{hint} ('relay ops' lists "
                     "them all)")
    colour = use_colour(sys.stdout)
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPED_WIDTH
    console = Console(file=sys.stdout, no_color=not colour, highlight=False, markup=False,
                      emoji=False, width=width)
    title = "relay_ref operators" + (f" starting {args.prefix}" if args.prefix else "")
    count = f"{len(shown)} of {len(names)}" if args.prefix else str(len(names))
    table = Table(title=title, caption=f"{count} operators; 'relay doc OP' documents one")
    # the fixed columns as wide as their longest entry; the summary gets the rest of the
    # width (5 rules and 8 spaces of padding between and around 4 columns), cut short
    name_width = max(len(n) for n in shown)
    table.add_column("operator", style="bold", no_wrap=True, min_width=name_width)
    table.add_column("inputs", justify="right", no_wrap=True, min_width=6)
    table.add_column("level", justify="right", no_wrap=True, min_width=5)
    table.add_column("summary", no_wrap=True, overflow="ellipsis",
                     max_width=max(console.width - name_width - 6 - 5 - 13, 10))
    for name in shown:
        op = repl.op_info(name)
        inputs = "*" if op.num_inputs < 0 else str(op.num_inputs)
        table.add_row(name, inputs, str(op.support_level), repl.op_summary(name))
    console.print(table)
    return EXIT_OK
