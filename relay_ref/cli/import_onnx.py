"""``relay import MODEL.onnx [-o OUT.relay]``: an ONNX model as readable Relay text.

The text is ``@main`` in graph form (``%0 = nn.conv2d(...);`` bindings, as TVM's frontend
output reads), type-checked before it is written, under a header of ``//`` comments naming
the source model, the weights and how to run it. The weights go, by default, to a side
``.npz`` file (``weights.py``: keys are ``@main``'s parameter names, so ``relay run OUT.relay
--params OUT.npz INPUT.npy`` binds them by name and the remaining parameters are the
inputs). ``--embed`` binds them into the program instead: they become constants, written in
the text's ``#[metadata]`` section, and ``@main`` takes only the inputs; the graph is the one
the side-file import has. ``--freeze-params`` imports with ``from_onnx(...,
freeze_params=True)``: weights are constants while importing, so the importer folds the
computations on them it can (implies ``--embed``).

Exit codes are ``_common``'s: 1 for a model that cannot be imported (a file that is
not ONNX, unsupported operators -- all listed in one error -- or a ``--shape`` naming no
input), 2 for usage (a missing model file, a malformed ``--shape``, an unwritable output,
an output that is the model, one of its external data files, or the other output -- after
resolving links, ``outputs.refuse_clobbering``). The text and the weights are written
in one transaction (``weights.write_files`` on ``outputs.Outputs``): an error leaves
every old file as it was and nothing half-written. A progress bar (stderr, terminals only)
follows the steps of a large model.

Part of the CLI layer: it uses only the public API and ``relay_ref.repl``.
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import relay_ref as rr
from relay_ref.cli._common import EXIT_OK, UsageError
from relay_ref.cli.outputs import refuse_clobbering, write_error

if TYPE_CHECKING:
    from relay_ref.repl import OnnxImport


def add_parser(sub: Any) -> None:
    """The ``import`` subcommand's options (``cli.build_parser`` calls this)."""
    p = sub.add_parser(
        "import", help="convert an ONNX model to Relay text",
        description="Convert the ONNX model MODEL to Relay text: @main in graph form, "
                    "type-checked, with the graph inputs first and then the weights as "
                    "parameters. The weights are saved to a .npz file keyed by parameter "
                    "name (named in a comment at the top of the text), for "
                    "'relay run OUT.relay --params OUT.npz INPUT.npy'.",
        epilog="Exit status: 0 ok, 1 the model cannot be imported (every unsupported "
               "operator is listed), 2 usage errors.")
    p.add_argument("model", metavar="MODEL", help="the .onnx file")
    p.add_argument("-o", "--output", metavar="OUT.relay",
                   help="write the text here (atomically) and the weights beside it, to "
                        "OUT.npz; without -o the text goes to standard output and the "
                        "weights only where --weights says")
    p.add_argument("--weights", metavar="FILE.npz",
                   help="where to save the weights (default with -o: OUT.npz)")
    p.add_argument("--embed", action="store_true",
                   help="bind the weights into the program as constants, written in the "
                        "text's #[metadata] section (no .npz; @main takes only the inputs)")
    p.add_argument("--freeze-params", action="store_true",
                   help="import with the weights as constants (from_onnx freeze_params): "
                        "the importer folds what it can compute from them; implies --embed")
    p.add_argument("--shape", action="append", default=[], type=shape_spec,
                   metavar="NAME=DIMS",
                   help="fix an input's shape (data=1,3,224,224; ? keeps a dim as the "
                        "model declares it) or a symbolic dimension (batch=1); repeatable")
    p.set_defaults(func=run)


def shape_spec(text: str) -> tuple[str, tuple[int | None, ...]]:
    """argparse type for ``--shape``: ``NAME=D1,D2,...`` (each a non-negative int or ``?``;
    brackets allowed, ``NAME=()`` a scalar)."""
    name, eq, dims = text.partition("=")
    name, dims = name.strip(), dims.strip().strip("[]()").strip()
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=DIMS (e.g. data=1,3,224,224), "
                                         f"got {text!r}")
    if not dims:
        if text.rstrip().endswith(("()", "[]")):
            return name, ()
        raise argparse.ArgumentTypeError(f"{name}: no dims given in {text!r} (write {name}=() "
                                         "for a scalar)")
    out: list[int | None] = []
    for part in dims.split(","):
        part = part.strip()
        if part == "?":
            out.append(None)
            continue
        try:
            value = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: dim {part!r} is not an integer or ? "
                                             f"(in {text!r})") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{name}: dim {value} is negative (in {text!r})")
        out.append(value)
    return name, tuple(out)


def run(args: argparse.Namespace) -> int:
    """The ``relay import`` command; exit codes as ``relay_ref.cli``."""
    from relay_ref import repl
    from relay_ref.cli.weights import write_files
    model = args.model
    if not os.path.exists(model):
        raise UsageError(f"{model}: no such file")
    if os.path.isdir(model):
        raise UsageError(f"{model}: is a directory, not an ONNX model")
    output = None if args.output in (None, "-") else Path(args.output)
    embed = args.embed or args.freeze_params
    if embed and args.weights:
        raise UsageError("--weights saves the weights to a side file; --embed and "
                     "--freeze-params put them in the text: give one or the other")
    weights_path = Path(args.weights) if args.weights else (
        output.with_suffix(".npz") if output is not None and not embed else None)
    weights_label = "--weights" if args.weights else "the weights file (from -o)"
    inputs = [("MODEL", model)] + [(f"external data of {model}", data)
                                   for data in _external_data(model)]
    refuse_clobbering(inputs, [("-o", output), (weights_label, weights_path)])
    for target in (output, weights_path):  # before the import's work, not after it
        if target is not None and not target.parent.is_dir():
            raise UsageError(f"{target}: cannot write (no folder {target.parent})")
        if target is not None and target.is_dir():
            raise UsageError(f"{target}: cannot write: it is a directory")

    with _Steps() as progress:
        step = progress.step
        step(f"importing {os.path.basename(model)}")
        try:
            imported = repl.import_onnx(model, args.shape, freeze_params=args.freeze_params)
        except rr.FrontendError as err:
            raise _in_cli_words(err, args.shape) from None
        params = dict(imported.params)
        step("checking types")
        mod = rr.infer_types(imported.module)
        if embed and params:
            mod = repl.bind_params(mod, "main", params, label="--embed")
            params = {}
        step("printing")
        text = _header(model, imported, output, weights_path, embed, params) + \
            rr.astext(mod)
        if not text.endswith("\n"):
            text += "\n"
        progress.more(len(params) if weights_path is not None else 0)
        step("writing weights" if weights_path is not None and params else "writing")
        texts = {output: text} if output is not None else {}
        arrays = {weights_path: params} if weights_path is not None and params else {}
        try:
            write_files(texts, arrays, advance=lambda key: progress.advance())
        except OSError as err:
            raise UsageError(write_error(err)) from None
    if output is None:
        sys.stdout.write(text)
    _summary(output, weights_path if arrays else None, text, params)
    return EXIT_OK


def _in_cli_words(err: rr.FrontendError,
                  specs: list[tuple[str, tuple[int | None, ...]]]) -> rr.FrontendError:
    """``err`` as ``relay import`` says it: an error about a ``shapes`` entry (``from_onnx``
    speaks of ``shapes['data_0']``) names the ``--shape`` option that gave it, as the user
    wrote it (``--shape data_0=1,2,3``), or the option to give (``--shape data_0=DIMS``).
    The spec is the one named by the entry's key, or the one whose dims are the value
    (``repl.import_onnx`` passes them on as they are, under the ONNX name of an input the
    user named by its Relay name). Other errors are returned unchanged."""
    words = getattr(err, "shapes_words", None)
    if words is None:
        return err
    template, key, value = words
    given = [s for s in specs if s[0] == key] or [s for s in specs if s[1] is value]
    spec = f"{key}=DIMS"
    if given:
        name, dims = given[0]
        spec = f"{name}={','.join('?' if d is None else str(d) for d in dims) or '()'}"
    return rr.FrontendError(template.replace("{entry}", f"--shape {spec}")
                            .replace("{fix}", f"--shape {key}=DIMS"))


def _external_data(model: str) -> list[str]:
    """The external data files the model's tensors name (``location``, beside the model):
    inputs an output must not overwrite. Only a model whose bytes hold the protobuf key
    ``location`` is parsed for them (without loading the data); a model that cannot be read
    names none (the import reports it)."""
    try:
        with open(model, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            if m.find(b"\x08location") < 0:
                return []
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return []
    import onnx

    try:
        proto = onnx.load(model, load_external_data=False)
    except Exception:  # noqa: BLE001 - not a model: from_onnx says so
        return []
    found: list[str] = []
    graphs = [proto.graph]
    while graphs:  # the graph and its subgraphs (If, Loop, Scan bodies)
        graph = graphs.pop()
        tensors = list(graph.initializer)
        tensors += [t for s in graph.sparse_initializer for t in (s.values, s.indices)]
        for node in graph.node:
            for attr in node.attribute:
                tensors += [attr.t, *attr.tensors]
                graphs += [attr.g, *attr.graphs] if attr.HasField("g") else list(attr.graphs)
        for tensor in tensors:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                where = {e.key: e.value for e in tensor.external_data}.get("location")
                if where:
                    found.append(os.path.join(os.path.dirname(model), where))
    return list(dict.fromkeys(found))


def _header(model: str, imported: OnnxImport, output: Path | None,
            weights: Path | None, embed: bool, params: dict[str, Any]) -> str:
    """The leading ``//`` comments: the source, where the weights are, how to run it."""
    from relay_ref.cli.weights import WEIGHTS_LINE

    lines = [f"// Imported from {os.path.basename(model)} by relay import (relay_ref "
             f"{rr.__version__}): ONNX opset {imported.opset}, {imported.nodes} nodes."]
    inputs = " ".join(f"INPUT_{r}.npy" for _, r in imported.inputs) or ""
    me = output.name if output is not None else "OUT.relay"
    if embed or not params:
        lines.append("// Weights: " + ("constants in the #[metadata] section" if embed
                                       else "none"))
        lines.append(f"// Run: relay run {me} {inputs}".rstrip())
    elif weights is not None:
        where = os.path.relpath(weights, output.parent if output is not None else ".")
        lines.append(WEIGHTS_LINE.format(name=where, count=len(params)))
        lines.append(f"// Run: relay run {me} --params {where} {inputs}".rstrip())
    else:
        lines.append(f"// Weights: not saved ({len(params)} parameters after the inputs; "
                     "relay import -o OUT.relay or --weights FILE.npz saves them)")
    for onnx_name, relay_name in imported.inputs:
        if onnx_name != relay_name:
            lines.append(f"// Input %{relay_name} is the ONNX input {onnx_name!r}.")
    return "\n".join(lines) + "\n"


def _summary(output: Path | None, weights: Path | None, text: str,
             params: dict[str, Any]) -> None:
    parts = []
    if output is not None:
        parts.append(f"{output} ({text.count(chr(10))} lines)")
    if weights is not None:
        size = sum(getattr(a, "nbytes", 0) for a in params.values())
        parts.append(f"{weights} ({len(params)} arrays, {size / 1e6:.1f} MB)")
    if parts:
        print("relay import: wrote " + " and ".join(parts), file=sys.stderr)


class _Steps:
    """A rich progress bar over the import's steps and the arrays written (stderr, shown
    only when stderr is a terminal, whatever FORCE_COLOR says, and removed when done);
    ``step`` starts the next step."""

    STEPS = 4  # import, check, print, write

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(stderr=True)
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                 BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=console, transient=True,
                                 disable=not sys.stderr.isatty())  # not FORCE_COLOR
        self.task = self.progress.add_task("relay import", total=self.STEPS)
        self.started = False

    def __enter__(self) -> _Steps:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def step(self, description: str) -> None:
        if self.started:
            self.progress.advance(self.task)
        self.started = True
        self.progress.update(self.task, description=description)

    def more(self, count: int) -> None:
        """``count`` more units of work (arrays to write)."""
        total = self.progress.tasks[0].total or 0
        self.progress.update(self.task, total=total + count)

    def advance(self) -> None:
        self.progress.advance(self.task)
