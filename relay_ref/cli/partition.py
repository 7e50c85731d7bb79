"""``relay partition``: cut a program into regions for BYOC backends and print it.

``relay partition --target ort [--target xla] FILE [--params WEIGHTS.npz]`` runs
``rr.partition`` (spec/byoc.md: MergeComposite, AnnotateTarget, MergeCompilerRegions,
PartitionGraph through the pass manager) and prints the result as canonical text (prelude
definitions the file uses resolved but not printed), as ``relay opt`` prints its output:
each region a ``def @tvmgen_default_<backend>_main_<k>`` with ``Compiler="<backend>"``, called
from the host program. ``--params`` binds ``@main``'s weights first (they become constants,
bound into the regions that use them).

Exit codes as ``relay_ref.cli``: an unknown backend, or a program that does not parse or
type-check, is a diagnostic (exit 1); a missing file, an unreadable weights file or no
``--target`` a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def run_partition(args: argparse.Namespace) -> int:
    """The ``relay partition`` command (exit codes as ``relay_ref.cli``)."""
    import relay_ref as rr
    from relay_ref.cli._common import EXIT_OK, UsageError, read_text, source_name

    if not args.target:
        raise UsageError("name the backends with --target NAME (e.g. --target ort)")
    params = None
    if args.params:
        from relay_ref.cli.weights import WeightsError, load_weights

        try:
            params = load_weights(args.params)
        except WeightsError as err:
            raise UsageError(f"--params {err}") from None
    mod = rr.parse(read_text(args.file), source_name(args.file))
    out = rr.partition(mod, list(args.target), params)
    text = rr.astext(out, omit_prelude=True)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """The ``partition`` subcommand's options (``app.build_parser`` calls this)."""
    p = sub.add_parser("partition", help="cut a program into regions for BYOC backends",
                       description="Print FILE partitioned for the named backends (Bring "
                                   "Your Own Codegen, spec/byoc.md): each region a global "
                                   "function with Compiler=\"<backend>\", called from the "
                                   "host program.")
    p.add_argument("file", metavar="FILE", help="the program (- reads standard input)")
    p.add_argument("--target", action="append", metavar="NAME", default=[],
                   help="a backend to partition for (ort, xla, or one registered with "
                        "relay_ref.byoc.register_backend); repeat for several, the first "
                        "that supports an operator wins")
    p.add_argument("--params", metavar="FILE.npz",
                   help="bind @main's parameters named by the archive's keys to its arrays "
                        "first (the weights 'relay import' saves)")
    p.set_defaults(func=run_partition)

