"""``relay rule NAME...`` prints rules as ``spec/`` writes them; ``relay rule --list`` lists
every rule by family.

Each rule prints as its name and where it is (``spec/typing.md 3.8 T-App``), then its text:
the judgement, premises and conclusion, and the prose (``relay_ref.rules.format_rule``; a
table row as ``column: cell`` lines). In a terminal the name is bold, inline code and the
names of other rules are coloured; piped, the text is plain. A name is matched exactly, or
case-insensitively when that names one rule (``relay rule t-app``). An unknown name is a
usage error (exit 2) naming the closest rules.

Part of the CLI layer: it uses ``relay_ref.rules`` (which reads the spec) and nothing else.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from relay_ref import rules
from relay_ref.cli import EXIT_OK, _colour, _Usage


def add_parser(sub: Any) -> None:
    """The ``rule`` subcommand's options (``cli.build_parser`` calls this)."""
    p = sub.add_parser(
        "rule", help="print a rule of the spec (T-App, E-Let, ...)",
        description="Print each rule NAME as spec/ writes it (judgement, premises, "
                    "conclusion, prose) and where it is. Rule names are the ones that "
                    "errors, traces and derivations cite.",
        epilog="Exit status: 0 ok, 2 an unknown rule name (the closest are suggested).")
    p.add_argument("names", nargs="*", metavar="NAME", help="rule names, e.g. T-App E-Let")
    p.add_argument("--list", action="store_true", help="list every rule, by family")
    p.set_defaults(func=run)


def resolve(name: str) -> rules.Rule:
    """The rule named ``name`` (exactly, else case-insensitively when that is unique);
    ``_Usage`` with a did-you-mean otherwise."""
    rule = rules.find(name)
    if rule is not None:
        return rule
    raise _Usage(f"no rule {name} in spec/{rules.did_you_mean(name)} "
                 "('relay rule --list' lists them)")


def run(args: argparse.Namespace) -> int:
    if args.list == bool(args.names):
        raise _Usage("give rule names (relay rule T-App) or --list")
    if args.list:
        _print(rules.format_index(), header_lines=())
        return EXIT_OK
    found = [resolve(name) for name in args.names]  # all or nothing: check every name first
    for i, rule in enumerate(found):
        if i:
            sys.stdout.write("\n")
        _print(rules.format_rule(rule), header_lines=(0,))
    return EXIT_OK


_STYLED = re.compile(rf"`[^`\n]+`|{rules.NAME_RE.pattern}")


def _print(text: str, header_lines: tuple[int, ...]) -> None:
    """``text`` on stdout, with rich styles when stdout is a terminal (colours off
    otherwise, so the text is exactly ``text``)."""
    from rich.console import Console
    from rich.text import Text

    colour = _colour(sys.stdout)
    console = Console(file=sys.stdout, force_terminal=colour, no_color=not colour,
                      highlight=False, soft_wrap=True, emoji=False, markup=False)
    if not colour:
        sys.stdout.write(text)
        return
    for number, line in enumerate(text.splitlines()):
        styled = Text(line, style="bold" if number in header_lines else "")
        for m in _STYLED.finditer(line):
            styled.stylize("cyan" if m.group(0).startswith("`") else "bold magenta",
                           m.start(), m.end())
        console.print(styled)
