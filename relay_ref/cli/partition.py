"""``relay partition``: cut a program into regions for BYOC backends and print it.

``relay partition --target ort [--target xla] FILE [--params WEIGHTS.npz]`` runs
``rr.partition`` (spec/byoc.md: MergeComposite, AnnotateTarget, MergeCompilerRegions,
PartitionGraph through the pass manager) and prints the result as canonical text (prelude
definitions the file uses resolved but not printed), as ``relay opt`` prints its output:
each region a ``def @tvmgen_default_<backend>_main_<k>`` with ``Compiler="<backend>"``, called
from the host program. ``--params`` binds ``@main``'s weights first (they become constants,
bound into the regions that use them); the input's header comments (``relay import``'s
``// Weights:`` and ``// Run:`` lines, which name the weights file) are then replaced by one
line saying the weights are bound, so ``relay export`` / ``relay run`` of the output load no
weights file.

Target priority (BYOC-Annotate): composites are formed first, trying the backends' pattern
tables in ``--target`` order, and a composite goes to the backend owning it; each remaining
operator goes to the first ``--target`` supporting it.

The command knows the built-in backends (``ort``, ``xla``); a backend registered with
``relay_ref.byoc.register_backend`` is for the Python API (``rr.partition``).

Exit codes as ``relay_ref.cli``: a program that does not parse or type-check is a
diagnostic (exit 1); an unknown backend (with a did-you-mean: ``onnxruntime`` -> ``ort``,
``jax`` -> ``xla``), a missing file, an unreadable weights file or no ``--target`` a usage
error (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

#: What users call the built-in backends' engines, mapped to the backend's name.
ALIASES = {"onnxruntime": "ort", "onnx": "ort", "jax": "xla"}


def check_targets(names: list[str]) -> None:
    """``UsageError`` for a name that is no backend this command knows (the built-in ones
    and any registered in this process), with a did-you-mean."""
    from relay_ref import repl
    from relay_ref.cli._common import UsageError

    known = repl.backend_choices()
    for name in names:
        if name in known:
            continue
        alias = ALIASES.get(name.lower())
        tip = repl.suggestion_hint([repr(alias)]) if alias in known else \
            repl.did_you_mean(name, known, quote=True)
        raise UsageError(f"--target: unknown backend {name!r}{tip} (backends: "
                         f"{', '.join(known)})")


def _fresh_header(mod: Any, weights: str) -> Any:
    """``mod`` with its header comments replaced by one line saying ``weights`` are bound."""
    from relay_ref import repl

    return repl.with_header(mod, f"// Partitioned by relay partition with the weights of "
                                 f"{os.path.basename(weights)} bound as constants (no "
                                 "weights file to load).")


def run_partition(args: argparse.Namespace) -> int:
    """The ``relay partition`` command (exit codes as ``relay_ref.cli``)."""
    import relay_ref as rr
    from relay_ref.cli._common import EXIT_OK, UsageError, read_text, source_name

    if not args.target:
        raise UsageError("name the backends with --target NAME (e.g. --target ort)")
    check_targets(list(args.target))
    params = None
    if args.params:
        from relay_ref.cli.weights import WeightsError, load_weights

        try:
            params = load_weights(args.params)
        except WeightsError as err:
            raise UsageError(f"--params {err}") from None
    mod = rr.parse(read_text(args.file), source_name(args.file))
    out = rr.partition(mod, list(args.target), params)
    if params is not None:
        out = _fresh_header(out, args.params)
    text = rr.astext(out, omit_prelude=True)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


def add_parser(sub: Any) -> None:
    """The ``partition`` subcommand's options (``app.build_parser`` calls this)."""
    p = sub.add_parser("partition", help="cut a program into regions for BYOC backends",
                       description="Print FILE partitioned for the named backends (Bring "
                                   "Your Own Codegen, spec/byoc.md): each region a global "
                                   "function with Compiler=\"<backend>\", called from the "
                                   "host program. Composites are formed first, trying the "
                                   "backends' pattern tables in --target order, and a "
                                   "composite goes to the backend owning it; each remaining "
                                   "operator goes to the first --target supporting it.")
    p.add_argument("file", metavar="FILE", help="the program (- reads standard input)")
    p.add_argument("--target", action="append", metavar="NAME", required=True,
                   help="a backend to partition for: ort (onnxruntime) or xla (JAX), the "
                        "built-in ones (a backend registered with relay_ref.byoc."
                        "register_backend is for the Python API, rr.partition); repeat for "
                        "several, in priority order")
    p.add_argument("--params", metavar="FILE.npz",
                   help="bind @main's parameters named by the archive's keys to its arrays "
                        "first (the weights 'relay import' saves); the input's header "
                        "comments naming a weights file are replaced")
    p.set_defaults(func=run_partition)
