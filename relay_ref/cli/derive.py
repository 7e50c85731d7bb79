"""``relay check --derive FILE [--global NAME]``: the typing derivation of one global.

Prints the derivation of ``Δ; Γ ⊢ e : τ`` for the definition of ``@NAME`` (default
``main``; ``relay_ref.typecheck.derive``): each node's rule, expression and type, the holes it
created and what solved them, each type-relation run (T-Rel) and its answer. Long
derivations are elided past ``--max-depth`` levels (default 40) and ``--max-nodes`` nodes
(default 2000), with counts.

Exit codes (as ``relay check``): 0 the global is well typed; 1 a parse or type error (for a
type error the derivation is printed up to and including the failed rules, on stdout, then
the located error on stderr; errors of other globals are listed after the tree, under
"errors outside this derivation"); 2 usage: more than one FILE, ``--global``,
``--max-depth`` or ``--max-nodes`` without ``--derive``, or a global the file does not
define (the message names its globals). Rule names are bold on a terminal (not with
``NO_COLOR``; ``FORCE_COLOR`` forces it).
"""

from __future__ import annotations

import argparse
import sys

from relay_ref import RelayError
from relay_ref.cli._common import (
    EXIT_OK,
    EXIT_USER,
    UsageError,
    read_text,
    source_name,
    use_colour,
)
from relay_ref.repl import derivation_text, derive_global


def run(args: argparse.Namespace) -> int:
    """``relay check`` with ``--derive`` (or a stray ``--global``, ``--max-depth``,
    ``--max-nodes``)."""
    import relay_ref as rr

    if not args.derive:
        option = ("--global NAME" if args.global_name is not None
                  else "--max-depth" if args.max_depth is not None else "--max-nodes")
        raise UsageError(f"{option} applies to a derivation: use it with --derive")
    if len(args.files) != 1:
        raise UsageError("--derive takes one FILE")
    path = args.files[0]
    name = (args.global_name or "main").removeprefix("@")
    text = read_text(path)
    try:
        mod = rr.parse(text, source_name(path), prelude=not args.no_prelude)
    except RelayError as err:
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    if name not in mod.functions:
        names = ", ".join(f"@{n}" for n in mod.functions) or "none"
        raise UsageError(f"{path}: no global @{name} to derive (its globals: {names})")
    tree = derive_global(mod, name)
    print(derivation_text(tree, args.max_depth, args.max_nodes, colour=use_colour(sys.stdout)))
    if tree.error is not None:
        print(tree.error.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    return EXIT_OK
