"""Bring Your Own Codegen (issue 28): what region boundaries cost, with onnxruntime and XLA.

    python benchmarks/byoc.py [--rounds 7] [--quick] [--only squeezenet ...] [--all]
                              [--markdown]

Each model is the random-weight variant of the wheel's ``light_<name>.onnx`` with its
logits as a second output (``benchmarks/models.py``'s ``variant_path``: seed 0, one
standard-normal 1x3x224x224 input); by default the five small ones of
tests/frontend/test_onnx_light.py (``--all``: all nine). Per model, the configurations:

* **default**: ``rr.compile(mod, params)``, no targets (numba 2 threads, OpenBLAS 2
  threads): the reference every other configuration's outputs are checked against;
* **ORT file**: onnxruntime on the variant file, with the session options of the ``ort``
  codegen (``relay_ref/byoc/ort.py``: CPU execution provider, ``intra_op_num_threads=1``,
  ``inter_op_num_threads=1``, ``ORT_ENABLE_ALL``), so the comparison is like with like;
* **ort codegen direct**: ``relay_ref.byoc.ort.ort_codegen`` called directly on the whole
  ``@main`` with the weights bound (``BindParams``, then type-checked): the model exported
  back by ``to_onnx`` in one session, no host program; over ORT file it is what the export
  (not the boundary) costs;
* **ort whole**: ``rr.compile(mod, params, targets=["ort"])``; every operator of these
  models exports, so ``exe.plan.regions`` must hold one ``ort`` region (checked). Its time
  over ORT file is the boundary overhead the issue targets (<= 1.1x); the summary also
  gives it over ort codegen direct (the host program, the region's argument and result
  checks alone);
* **ort conv** / **ort conv + worth**: a backend ``ort_conv`` registered with
  ``ort_codegen`` and ``supported_ops={"nn.conv2d": <ort's own predicate>}`` (no composites),
  first without a cost model (every convolution its own region), then with ``ort``'s
  ``worth`` (``relay_ref.byoc.ort.worth``: regions estimated below ``MIN_FLOPS`` stay on
  the host): many regions, each a session call, the rest on the host executor;
* **jax.jit whole**: ``relay_ref.byoc.xla.xla_codegen`` called directly on ``@main`` with
  the weights bound (``BindParams``, then type-checked): exactly ``jax.jit`` of the whole
  model, compiled ahead of time, weights on the device once;
* **xla whole**: ``rr.compile(mod, params, targets=["xla"])`` (one ``xla`` region, checked):
  the same XLA program behind the boundary and the host glue;
* **xla conv** / **xla conv + worth**: ``xla_conv`` registered like ``ort_conv`` with
  ``xla_codegen`` and xla's predicate for ``nn.conv2d``; the cost model is ``ort``'s
  ``worth`` (the ``xla`` backend has none of its own).

**Check first**: each configuration's outputs against the default executor's with the
light-model tolerance of tests/frontend/test_onnx_light.py (logits: max |d| <= 2e-5 x max
|default|; the model's output: ``np.allclose`` rtol 1e-3, atol 1e-6); a configuration
that differs, or fails to compile, is reported in its row and not timed.
**Steady state**: every timed configuration of a model in interleaved rounds in this
process (``benchmarks/interleave.py``: order alternating between rounds, 0.12 s sleeps,
each measurement the mean of a loop lasting at least 0.2 s, 0.1 s with ``--quick``); each
ratio is the median over rounds of the per-round ratio against a baseline measured in the
same round (the rounds' lowest and highest ratio show the machine's load). "compile s" is
the one ``rr.compile`` (or codegen) call, regions' sessions / XLA compilations included.

Results are recorded in benchmarks/README.md ("BYOC (issue 28)").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from interleave import blas_threads, one_round, per_call  # noqa: E402
from models import variant_path  # noqa: E402

import relay_ref as rr  # noqa: E402
from relay_ref.testing import onnx_light  # noqa: E402

SLEEP = 0.12  # seconds between implementations (thread pools wind down)
SMALL = ("bvlc_alexnet", "inception_v1", "shufflenet", "squeezenet", "zfnet512")
LOGIT_RTOL = 2e-5  # tests/frontend/test_onnx_light.py
OUT_RTOL, OUT_ATOL = 1e-3, 1e-6
BOUNDARY_TARGET = 1.1

#: configuration -> (the whole-model external baseline it is compared with, or None)
CONFIGS: dict[str, str | None] = {
    "default": None,
    "ORT file": None,
    "ort codegen direct": "ORT file",
    "ort whole": "ORT file",
    "ort conv": "ORT file",
    "ort conv + worth": "ORT file",
    "jax.jit whole": None,
    "xla whole": "jax.jit whole",
    "xla conv": "jax.jit whole",
    "xla conv + worth": "jax.jit whole",
}


@dataclass
class Config:
    """One configuration of one model (seconds; ``None`` where not measured)."""

    model: str
    name: str
    fn: Callable[[], Any] | None = None
    regions: str = "-"
    compile_s: float | None = None
    time: float | None = None
    vs_default: float | None = None
    vs_whole: float | None = None
    default_range: tuple[float, float] | None = None  # the rounds' lowest and highest
    whole_range: tuple[float, float] | None = None
    error: float | None = None  # largest logits |d| / max |default|
    note: str = ""
    times: list[float] = field(default_factory=list)


def register_conv_backends() -> None:
    """``ort_conv`` and ``xla_conv`` (+ their ``... + worth`` twins): ``nn.conv2d`` only,
    with the built-in backend's own predicate and codegen."""
    from relay_ref.byoc import get_backend, register_backend
    from relay_ref.byoc.ort import ort_codegen, worth
    from relay_ref.byoc.xla import xla_codegen

    for base, codegen in (("ort", ort_codegen), ("xla", xla_codegen)):
        pred = get_backend(base).support.ops["nn.conv2d"]
        register_backend(f"{base}_conv", supported_ops={"nn.conv2d": pred}, codegen=codegen,
                         replace=True, description=f"{base}, convolutions only")
        register_backend(f"{base}_conv_worth", supported_ops={"nn.conv2d": pred},
                         codegen=codegen, worth=worth, replace=True,
                         description=f"{base}, convolutions only, ort's cost model")


def _outputs(value: Any) -> list[np.ndarray]:
    return [np.asarray(v) for v in value] if isinstance(value, tuple | list) \
        else [np.asarray(value)]


def compare(got: list[np.ndarray], want: list[np.ndarray]) -> tuple[float, str]:
    """(logits |d| / max |want|, "" or why ``got`` differs from ``want``)."""
    if len(got) != len(want):
        return float("inf"), f"WRONG: {len(got)} outputs, the default executor gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return float("inf"), (f"WRONG: output {i} is {g.shape} {g.dtype}, the default "
                                  f"executor's {w.shape} {w.dtype}")
    scale = max(float(np.abs(want[-1]).max()), 1e-30)
    rel = float(np.abs(got[-1] - want[-1]).max()) / scale
    if not rel <= LOGIT_RTOL:
        return rel, f"WRONG: logits max |d| / max |default| {rel:.2g} > {LOGIT_RTOL:g}"
    if not np.allclose(got[0], want[0], rtol=OUT_RTOL, atol=OUT_ATOL):
        worst = float(np.abs(got[0] - want[0]).max())
        return rel, f"WRONG: output 0 differs from the default executor's (max |d| {worst:.2g})"
    return rel, ""


def _region_text(exe: Any, backend: str) -> str:
    regions = exe.plan.regions
    on = sum(1 for r in regions if r.backend == backend)
    host = len(regions) - on
    return f"{on}" + (f" (+{host} host)" if host else "")


def ort_file_session(path: Path) -> Any:
    """onnxruntime on the file, with the ``ort`` codegen's session options."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3  # the models' unused Caffe2 blobs make ORT warn
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def codegen_whole(codegen: Callable[..., Any], mod: Any, params: dict[str, np.ndarray]
                  ) -> Callable[..., Any]:
    """``codegen`` called directly on the whole ``@main``, weights bound (with
    ``xla_codegen``: jax.jit of the model)."""
    from relay_ref.passes.bind_params import BindParams

    bound = rr.infer_types(BindParams(params, "main")(mod))
    return codegen(bound["main"], bound.checked_types)


def prepare(name: str, path: Path, progress: Any, task: Any) -> list[Config]:
    """Compile and check every configuration of one model (see the module docstring)."""
    import onnx

    from relay_ref.byoc.ort import ort_codegen
    from relay_ref.byoc.xla import xla_codegen
    from relay_ref.frontend.onnx import from_onnx

    model = onnx.load(path)
    feeds = onnx_light.feeds(model)
    mod, params = from_onnx(model)
    inputs = [p.name_hint for p in mod["main"].params if p.name_hint in feeds]
    args = [feeds[n] for n in inputs]
    configs = {c: Config(name, c) for c in CONFIGS}
    want: list[np.ndarray] = []

    def build(cfg: Config, make: Callable[[], tuple[Callable[[], Any], str]]) -> None:
        progress.update(task, description=f"{name}: {cfg.name}: compile, check")
        start = time.perf_counter()
        try:
            fn, regions = make()
            cfg.compile_s = time.perf_counter() - start
            cfg.regions = regions
            got = _outputs(fn())
        except Exception as err:  # noqa: BLE001 - reported in the row, not raised
            cfg.note = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:90]}"
            return
        finally:
            progress.advance(task)
        if cfg.name == "default":
            want.extend(got)
            cfg.error = 0.0
        else:
            cfg.error, cfg.note = compare(got, want)
        if not cfg.note:
            cfg.fn = fn

    def compiled(targets: list[str] | None, backend: str, whole: bool = False
                 ) -> Callable[[], tuple[Callable[[], Any], str]]:
        def make() -> tuple[Callable[[], Any], str]:
            exe = rr.compile(mod, params, targets=targets) if targets else \
                rr.compile(mod, params=params)
            regions = _region_text(exe, backend) if targets else "-"
            if whole and (len(exe.plan.regions) != 1 or exe.plan.regions[0].backend != backend):
                raise RuntimeError(f"expected one {backend} region, got {regions}")
            return (lambda: exe(**feeds)), regions
        return make

    def ort_file() -> tuple[Callable[[], Any], str]:
        sess = ort_file_session(path)
        return (lambda: sess.run(None, feeds)), "-"

    def direct(codegen: Callable[..., Any]) -> Callable[[], tuple[Callable[[], Any], str]]:
        def make() -> tuple[Callable[[], Any], str]:
            region = codegen_whole(codegen, mod, params)
            return (lambda: region(*args)), "-"
        return make

    build(configs["default"], compiled(None, ""))
    if configs["default"].fn is None:  # nothing to check the others against
        for cfg in list(configs.values())[1:]:
            cfg.note = "not run: the default executor failed"
        return list(configs.values())
    build(configs["ORT file"], ort_file)
    build(configs["ort codegen direct"], direct(ort_codegen))
    build(configs["ort whole"], compiled(["ort"], "ort", whole=True))
    build(configs["ort conv"], compiled(["ort_conv"], "ort_conv"))
    build(configs["ort conv + worth"], compiled(["ort_conv_worth"], "ort_conv_worth"))
    build(configs["jax.jit whole"], direct(xla_codegen))
    build(configs["xla whole"], compiled(["xla"], "xla", whole=True))
    build(configs["xla conv"], compiled(["xla_conv"], "xla_conv"))
    build(configs["xla conv + worth"], compiled(["xla_conv_worth"], "xla_conv_worth"))
    return list(configs.values())


def measure(configs: list[Config], rounds: int, target_s: float) -> None:
    """Interleaved rounds of every checked configuration (see the module docstring)."""
    timed = [c for c in configs if c.fn is not None]
    for _ in range(2):  # warm (thread pools, caches)
        for c in timed:
            c.fn()  # type: ignore[misc]
    entries = [(c.name, c.fn, max(1, int(target_s / per_call(c.fn, 1))))  # type: ignore[arg-type]
               for c in timed]
    by_name = {c.name: c for c in configs}
    per_round: list[dict[str, float]] = [one_round(r, entries, SLEEP) for r in range(rounds)]
    for c in timed:
        c.times = [got[c.name] for got in per_round]
        c.time = statistics.median(c.times)
        default = by_name["default"]
        if c.name != "default" and default.times:
            ratios = [a / b for a, b in zip(c.times, default.times, strict=True)]
            c.vs_default = statistics.median(ratios)
            c.default_range = (min(ratios), max(ratios))
        base = by_name.get(CONFIGS[c.name] or "")
        if base is not None and base.times:
            ratios = [a / b for a, b in zip(c.times, base.times, strict=True)]
            c.vs_whole = statistics.median(ratios)
            c.whole_range = (min(ratios), max(ratios))


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.1f}"


def _x(r: float | None, span: tuple[float, float] | None) -> str:
    """The median ratio and, in brackets, the rounds' lowest and highest."""
    if r is None:
        return "-"
    return f"{r:.2f}x" + ("" if span is None else f" ({span[0]:.2f}-{span[1]:.2f})")


HEADS = ["model", "configuration", "regions", "compile s", "ms", "/ default (range)",
         "/ whole-model ORT or jax.jit (range)", "max rel. diff"]


def table_rows(configs: list[Config]) -> list[list[str]]:
    body = []
    for c in configs:
        body.append([
            c.model, c.name, c.regions,
            "-" if c.compile_s is None else f"{c.compile_s:.2f}",
            _ms(c.time), _x(c.vs_default, c.default_range), _x(c.vs_whole, c.whole_range),
            "-" if c.error is None or c.name == "default" else f"{c.error:.1e}",
        ] + ([c.note] if c.note else []))
    return body


def summary(configs: list[Config]) -> str:
    """The boundary overhead against its target, and the conv-only medians."""
    parts = []
    for name, label in (("ort whole", "ort whole / ORT file (boundary overhead)"),
                        ("xla whole", "xla whole / jax.jit whole")):
        ratios = [c.vs_whole for c in configs if c.name == name and c.vs_whole is not None]
        if ratios:
            med, worst = statistics.median(ratios), max(ratios)
            verdict = f" (target <= {BOUNDARY_TARGET}x: " \
                f"{'met' if worst <= BOUNDARY_TARGET else 'missed'})" \
                if name == "ort whole" else ""
            parts.append(f"{label}: median {med:.2f}x, worst {worst:.2f}x{verdict}")
    pure = []
    for model in dict.fromkeys(c.model for c in configs):
        got = {c.name: c.times for c in configs if c.model == model and c.times}
        if "ort whole" in got and "ort codegen direct" in got:
            pure.append(statistics.median(a / b for a, b in zip(
                got["ort whole"], got["ort codegen direct"], strict=True)))
    if pure:
        parts.append(f"ort whole / ort codegen direct (the host side alone): median "
                     f"{statistics.median(pure):.2f}x, worst {max(pure):.2f}x")
    for name in ("ort conv", "ort conv + worth", "xla conv", "xla conv + worth"):
        ratios = [c.vs_default for c in configs if c.name == name and c.vs_default is not None]
        if ratios:
            parts.append(f"{name} / default: median {statistics.median(ratios):.2f}x")
    wrong = [f"{c.model} {c.name}" for c in configs if c.note]
    if wrong:
        parts.append(f"not timed: {', '.join(wrong)}")
    return "; ".join(parts) if parts else "nothing timed"


def settings() -> str:
    """The thread settings in effect."""
    import jax
    import onnxruntime

    from relay_ref.compute.cpu import numba

    return (f"host executor: numba {numba.__version__} {numba.get_num_threads()} threads, "
            f"numpy {np.__version__} OpenBLAS {blas_threads()} threads; onnxruntime "
            f"{onnxruntime.__version__} CPU EP intra_op 1 / inter_op 1 (the ort codegen's and "
            f"the ORT file baseline's); jax {jax.__version__} on {jax.devices()[0].platform} "
            f"(XLA's own thread pool, {os.cpu_count()} cores); Python "
            f"{platform.python_version()}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description="BYOC: the light ONNX models with every operator in one ort / xla region "
                    "(the boundary overhead) and with convolutions only (many regions), "
                    "against the default executor, onnxruntime on the file and jax.jit of "
                    "the whole model; outputs checked first, then interleaved rounds.")
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved rounds (default 7, 3 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds of 0.1 s loops (unless --rounds is given)")
    parser.add_argument("--only", nargs="+", metavar="WORD", default=None,
                        help="only the models whose name contains one of these words")
    parser.add_argument("--all", action="store_true",
                        help=f"all nine models (default: {', '.join(SMALL)})")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    rounds = args.rounds if args.rounds is not None else 3 if args.quick else 7
    target_s = 0.1 if args.quick else 0.2

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    register_conv_backends()
    pool = onnx_light.NAMES if args.all or args.only else SMALL
    names = [n for n in pool if args.only is None or any(w in n for w in args.only)]
    configs: list[Config] = []
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="relay-byoc-") as tmp, \
            Progress(console=console, transient=True) as progress:
        task = progress.add_task("models", total=len(names) * (len(CONFIGS) + 1))
        for name in names:
            path = variant_path(name, Path(tmp))
            model_configs = prepare(name, path, progress, task)
            progress.update(task, description=f"{name}: {rounds} interleaved rounds")
            measure(model_configs, rounds, target_s)
            progress.advance(task)
            configs += model_configs
    load = os.getloadavg()
    note = (f"{settings()}; {rounds} rounds of >= {target_s} s loops; load average "
            f"(1 min) before/after {LOAD0[0]:.2f} / {load[0]:.2f}")
    if args.markdown:
        print("| " + " | ".join(HEADS) + " |")
        print("|" + "---|" * len(HEADS))
        for line in table_rows(configs):
            print("| " + " | ".join(line[:len(HEADS)]) + " |")
        for c in configs:
            if c.note:
                print(f"\n{c.model} {c.name}: {c.note}")
        print(f"\n{summary(configs)}\n\n{note}")
    else:
        table = Table(title="BYOC: region boundaries with onnxruntime and XLA")
        for h in HEADS:
            table.add_column(h, justify="left" if h in ("model", "configuration") else "right")
        for line in table_rows(configs):
            table.add_row(*line[:len(HEADS)])
        out = Console(width=max(Console().width, 160))
        out.print(table)
        for c in configs:
            if c.note:
                out.print(f"{c.model} {c.name}: {c.note}")
        out.print(summary(configs))
        out.print(note)


LOAD0 = os.getloadavg()

if __name__ == "__main__":
    main()
