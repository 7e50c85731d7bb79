"""``relay check --derive FILE [--global NAME]``: typing derivations of a file's globals.

Prints the derivation of ``Δ; Γ ⊢ e : τ`` for the definition of every global of FILE, in
file order, one tree after another (a blank line between), as ``relay check`` checks every
global; ``--global NAME`` prints ``@NAME``'s alone (``relay_ref.typecheck.derive``). Each
node shows its rule, expression and type, the holes it created and what solved them, each
type-relation run (T-Rel) and its answer. Long derivations are elided past ``--max-depth``
levels (default 40) and ``--max-nodes`` nodes (default 2000) each, with counts.

Exit codes (as ``relay check``): 0 every derived global is well typed (the whole module,
for all of them); 1 a parse or type error (for a type error the derivation is printed up to
and including the failed rules, on stdout, then the located error on stderr, each distinct
error once; with ``--global``, errors of other globals are listed after the tree, under
"errors outside this derivation"; without it they are in their own globals' trees, and
only errors no global's tree holds are listed so); 2 usage: more than one FILE, ``--global``,
``--max-depth`` or ``--max-nodes`` without ``--derive``, or a global the file does not
define (the message names its globals). Rule names are bold on a terminal (not with
``NO_COLOR``; ``FORCE_COLOR`` forces it).
"""

from __future__ import annotations

import argparse
import dataclasses
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
from relay_ref.repl import derivation_text, derive_global, own_globals


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
    text = read_text(path)
    try:
        mod = rr.parse(text, source_name(path), prelude=not args.no_prelude)
    except RelayError as err:
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    names = own_globals(mod)  # the file's globals, in file order (not the prelude's)
    if args.global_name is not None:
        name = args.global_name.removeprefix("@")
        if name not in mod.functions:
            listed = ", ".join(f"@{n}" for n in names) or "none"
            raise UsageError(f"{path}: no global @{name} to derive (its globals: {listed})")
        names = [name]
    elif not names:
        raise UsageError(f"{path}: no global to derive (the file defines none)")
    trees = [derive_global(mod, name) for name in names]
    if len(trees) > 1:  # an error in a shown global is in its own tree: not listed again
        shown = tuple(f"@{name}: " for name in names)
        trees = [dataclasses.replace(t, outside=tuple(e for e in t.outside
                                                      if not e.startswith(shown)))
                 for t in trees]
    colour = use_colour(sys.stdout)
    print("\n\n".join(derivation_text(t, args.max_depth, args.max_nodes, colour=colour)
                      for t in trees))
    errors = {}  # each distinct error once, in the order found
    for tree in trees:
        if tree.error is not None:
            errors.setdefault(tree.error.render(use_colour(sys.stderr)), None)
    for rendered in errors:
        print(rendered, file=sys.stderr)
    return EXIT_USER if errors else EXIT_OK
