"""``relay check FILE...``: parse and type-check each file; report every error.

``--types`` prints each global's type; ``--derive`` (with ``--global NAME``, ``--max-depth``,
``--max-nodes``) prints the typing derivation of each global, or of ``@NAME``, instead
(``derive.py``). ``gradient(f)`` calls
are expanded as ``relay run`` would, so what the AD pass refuses is reported here too.
Exit codes (``_common``): 0 every file checks, 1 a parse or type error, 2 usage (a missing
or unreadable file: reported, and the other files are still checked).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_ref import RelayError
from relay_ref.cli._common import (
    EXIT_OK,
    EXIT_USER,
    each_file,
    positive_int,
    read_text,
    source_name,
    use_colour,
)


def add_parser(sub: Any) -> None:
    """The ``check`` subcommand's options (``app.build_parser`` calls this)."""
    check = sub.add_parser("check", help="parse and type-check files",
                           description="Parse and type-check each FILE; report every error.")
    check.add_argument("files", nargs="+", metavar="FILE", help="files to check (- reads "
                       "standard input)")
    check.add_argument("--types", action="store_true", help="print the type of each global")
    check.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    check.add_argument("--no-prelude", action="store_true",
                       help="do not supply prelude definitions (List, map, ...)")
    check.add_argument("--derive", action="store_true",
                       help="print the typing derivation of each global of FILE (one FILE), "
                            "in file order: each rule, its premises, the holes it made and "
                            "how they were solved, each type relation's answers")
    check.add_argument("--global", dest="global_name", metavar="NAME", default=None,
                       help="with --derive: derive this global alone (default: every global "
                            "of FILE, in file order)")
    check.add_argument("--max-depth", type=positive_int, default=None, metavar="N",
                       help="with --derive: elide premises deeper than N levels (default 40)")
    check.add_argument("--max-nodes", type=positive_int, default=None, metavar="N",
                       help="with --derive: show at most N nodes (default 2000)")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``relay check`` command; the exit code."""
    import relay_ref as rr
    from relay_ref.repl import type_text

    if args.derive or args.global_name is not None or args.max_depth is not None \
            or args.max_nodes is not None:
        from relay_ref.cli import derive

        return derive.run(args)

    def check(path: str) -> int:
        source = read_text(path)
        try:
            mod = rr.parse(source, source_name(path), prelude=not args.no_prelude)
            mod = rr.infer_types(mod)
            _check_gradients(mod, source)
        except RelayError as err:
            print(err.render(use_colour(sys.stderr)), file=sys.stderr)
            return EXIT_USER
        if args.types:
            # type_text is iterative: a 1000-deep type prints without deep recursion
            print("\n".join(f"@{name} : {type_text(mod.global_types.get(name))}"
                            for name in mod.functions))
        elif not args.quiet:
            print(f"{path}: ok", file=sys.stderr)
        return EXIT_OK

    return each_file(args.files, check)


def _check_gradients(mod: object, source: str) -> None:
    """``gradient(f)`` calls expanded as ``relay run`` would (spec/ad.md AD-Grad-Op), so
    what the AD pass refuses (an op without a rule, an ADT with a function field) is
    reported by ``check`` too. Only for a source that names the operator (the expansion
    type-checks its result again)."""
    import relay_ref as rr

    if "gradient" in source:
        rr.optimize(mod, ["ExpandGradient"])
