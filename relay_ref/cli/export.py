"""``relay export FILE -o MODEL.onnx [--weights W.npz] [--entry NAME] [--opset N]``: a
dataflow Relay function as an ONNX model (``relay_ref.frontend.onnx.to_onnx``).

The function's parameters become the graph's inputs, except those the weights give (by
parameter name, as ``relay import`` saves them): those become initializers. The weights
are ``--weights``, else the ``.npz`` file the text's header names (``relay import -o``
writes that header), when it exists. The program is type-checked first; every shape must
be static.

Exit codes are ``_common``'s: 1 for a program that cannot be exported (a parse or type
error, or an operator, attribute or construct ONNX cannot express: a located diagnostic),
2 for usage (a missing or unreadable file or weights, weights naming no parameter, an
output that is an input). The model is written atomically (``outputs.Outputs``: a
temporary file beside the target, renamed over it when complete).

Part of the CLI layer: it uses only the public API.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import relay_ref as rr
from relay_ref import repl
from relay_ref.cli._common import EXIT_OK, EXIT_USER, UsageError, read_text, use_colour
from relay_ref.cli.outputs import OutputError, Outputs, refuse_clobbering, write_error


def add_parser(sub: Any) -> None:
    """The ``export`` subcommand's options (``cli.build_parser`` calls this)."""
    p = sub.add_parser(
        "export", help="export a Relay function to an ONNX model",
        description="Export the dataflow function @main (or --entry) of the Relay program "
                    "FILE to an ONNX model: its parameters become the graph inputs, except "
                    "those the weights give, which become initializers. Every shape must "
                    "be static; operators, attributes and constructs (if, match, closures, "
                    "references) ONNX cannot express are reported where they are.",
        epilog="Exit status: 0 ok, 1 the program cannot be exported (the diagnostic says "
               "where and why), 2 usage errors.")
    p.add_argument("file", metavar="FILE", help="the .relay program ('-': standard input)")
    p.add_argument("-o", "--output", metavar="MODEL.onnx", required=True,
                   help="where to write the ONNX model (atomically)")
    p.add_argument("--params", "--weights", dest="weights", metavar="W.npz",
                   help="arrays keyed by parameter name to embed as initializers, as "
                        "'relay run --params' binds them (default: "
                        "the .npz file named in FILE's header, as 'relay import -o' "
                        "writes it, when it exists)")
    p.add_argument("--entry", default="main", metavar="NAME",
                   help="the function to export (default: main)")
    p.add_argument("--opset", type=int, default=None, metavar="N",
                   help="the ONNX opset to target (13 to 21; default 17)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``relay export`` command; exit codes as ``relay_ref.cli``."""
    import os

    from relay_ref.cli._common import source_name
    from relay_ref.cli.weights import WeightsError, load_weights, weights_named_in

    if args.opset is not None and not 13 <= args.opset <= 21:
        raise UsageError(f"--opset {args.opset}: choose an opset from 13 to 21")
    text = read_text(args.file)
    weights_path = args.weights
    if weights_path is None and args.file != "-":
        named = weights_named_in(text, args.file)
        weights_path = named if named is not None and os.path.isfile(named) else None
    try:
        refuse_clobbering([("FILE", None if args.file == "-" else args.file),
                           ("--weights", weights_path)], [("-o", args.output)])
    except OutputError as err:
        raise UsageError(str(err)) from None
    weights: dict[str, Any] = {}
    if weights_path is not None:
        try:
            weights = load_weights(weights_path)
        except WeightsError as err:
            raise UsageError(f"--weights {err}") from None
    entry = args.entry.removeprefix("@")
    try:
        mod = rr.infer_types(rr.parse(text, source_name(args.file)))
        if entry not in mod.functions:
            raise UsageError(f"{args.file}: no function @{entry} to export")
        names = {p.name_hint for p in mod.functions[entry].params}
        unknown = sorted(set(weights) - names)
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more"
                                              if len(unknown) > 5 else "")
            raise UsageError(f"{weights_path}: {shown} name(s) no parameter of @{entry}")
        model = repl.export_onnx(mod, weights, entry=entry, opset=args.opset)
    except rr.RelayError as err:
        print(err.render(use_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    data = model.SerializeToString()
    try:
        with Outputs() as out:
            out.stage(args.output, lambda f: f.write(data))
    except OSError as err:
        raise UsageError(write_error(err)) from None
    graph = model.graph
    print(f"relay: wrote {args.output} (opset {model.opset_import[0].version}, "
          f"{len(graph.node)} nodes, {len(graph.input)} inputs, "
          f"{len(graph.initializer)} initializers, {len(graph.output)} outputs)",
          file=sys.stderr)
    return EXIT_OK
