"""``relay rule NAME...`` prints rules as ``spec/`` writes them; ``relay rule --list
[PREFIX...]`` lists the rules by family.

Each rule prints as its name and where it is (``spec/typing.md 3.8 T-App``), then its text:
the judgement, premises and conclusion, the prose and the code blocks and tables that belong
to it (``repl.rule_text``; a table row as ``column: cell`` lines). In a terminal the name is
bold, inline code and the names of other rules are coloured; piped, the text is plain. A
name is matched exactly, or case-insensitively when that names one rule (``relay rule
t-app``); ``E-If-*`` names every rule starting ``E-If-``. An unknown name is a usage error
(exit 2) naming the closest rules, all the rules that extend it first (``E-If-``, with or
without the hyphen: E-If-True, E-If-False). With ``--list``, names are prefixes: ``relay
rule --list T`` lists the T family, ``--list E-App`` E-App and the E-App-... rules.

Part of the CLI layer: it reaches the rules through ``relay_ref.repl`` (DESIGN.md section 2).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from relay_ref import repl
from relay_ref.cli._common import EXIT_INTERNAL, EXIT_OK, UsageError, use_colour


def add_parser(sub: Any) -> None:
    """The ``rule`` subcommand's options (``cli.build_parser`` calls this)."""
    p = sub.add_parser(
        "rule", help="print a rule of the spec (T-App, E-Let, ...)",
        description="Print each rule NAME as spec/ writes it (judgement, premises, "
                    "conclusion, prose) and where it is. Rule names are the ones that "
                    "errors, traces and derivations cite; NAME may end in * "
                    "('E-If-*': every rule starting E-If-).",
        epilog="Exit status: 0 ok, 2 an unknown rule name (the closest are suggested).")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="rule names, e.g. T-App E-Let 'E-If-*'; with --list, prefixes "
                        "(T: the T family)")
    p.add_argument("--list", action="store_true",
                   help="list the rules by family (all, or those starting each NAME)")
    p.set_defaults(func=run)


def resolve(name: str) -> list[repl.Rule]:
    """The rules ``name`` names (``repl.select_rules``: exactly, case-insensitively when
    that is unique, or a ``PREFIX*`` wildcard); ``UsageError`` with a did-you-mean otherwise."""
    found = repl.select_rules(name)
    if found:
        return found
    raise UsageError(f"no rule {name} in spec/{repl.rule_did_you_mean(name)} "
                 "('relay rule --list' lists them)")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except FileNotFoundError as err:  # an install without its spec: say so, not a traceback
        sys.stderr.write(f"relay: error: {err}\n")
        return EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    if args.list:
        for prefix in args.names:  # all or nothing: check every prefix first
            if not repl.rules_starting(prefix):
                raise UsageError(f"--list {prefix}: no rule starts with {prefix}"
                             f"{repl.rule_did_you_mean(prefix)} (families: "
                             f"{', '.join(repl.RULE_FAMILIES)})")
        _print(repl.rule_index(args.names), header_lines=())
        return EXIT_OK
    if not args.names:
        raise UsageError("give rule names (relay rule T-App, relay rule 'E-If-*') "
                     "or --list [PREFIX]")
    found = [rule for name in args.names for rule in resolve(name)]  # check every name first
    for i, (rule, names) in enumerate(repl.shared_rules(found)):  # a shared block once
        if i:
            sys.stdout.write("\n")
        _print(repl.rule_text(rule, names), header_lines=(0,))
    return EXIT_OK


_STYLED = re.compile(rf"`[^`\n]+`|{repl.RULE_NAME_RE.pattern}")


def _print(text: str, header_lines: tuple[int, ...]) -> None:
    """``text`` on stdout, with rich styles when stdout is a terminal (colours off
    otherwise, so the text is exactly ``text``)."""
    from rich.console import Console
    from rich.text import Text

    colour = use_colour(sys.stdout)
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
