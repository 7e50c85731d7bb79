"""The nine ``light_*`` ONNX models through ``rr.compile`` and onnxruntime, same 2 threads.

    python benchmarks/models.py [--rounds 7] [--only squeezenet ...] [--refeval small|all|none]
                                [--cold] [--no-first] [--load N] [--markdown]

Each model is the random-weight variant of the wheel's ``light_<name>.onnx``
(``relay_ref.testing.onnx_light.random_variant``, seed 0: every ``ConstantOfShape`` weight
replaced by a seeded initializer drawn by role, performance.md section 2); the same
variant goes to both runtimes, with one standard-normal 1x3x224x224 input.

* **check first**: ``from_onnx`` then ``rr.compile(mod, params=params)``; the compiled
  outputs, and the pre-softmax logits (``onnx_light.with_logits``), are compared with
  onnxruntime's as tests/frontend/test_onnx_light.py does: max |relay - ORT| <= rtol x
  max |ORT| for each (rtol 1e-3, densenet121 2e-3; the column "max rel. diff" is the
  largest such ratio), and ``np.allclose`` (atol 1e-6) for the model's own output; a model
  whose outputs differ is reported, not timed.
* **steady state**: onnxruntime (CPU EP, ``intra_op_num_threads=2``,
  ``inter_op_num_threads=1``, default graph optimisations) against the compiled executable
  (its thread policy, below), in interleaved rounds in this process (the order
  alternates between rounds, 0.12 s sleeps between the two, each measurement the mean of
  a loop lasting at least 0.2 s); the ratio is the median over rounds of the per-round ratio
  relay / ORT, with the lowest and highest per-round ratio (they show the machine's load).
  The executable runs under its thread policy (``rr.compile``'s default: threads from
  ``$RELAY_REF_NUM_THREADS`` or the CPUs; BLAS on one thread inside each call, the work
  pool splitting products; ``exe.plan``'s ``threads:`` line is printed per model).
* **under load** (``--load N``): ``N`` busy processes (``benchmarks/load.py``, one spinning
  core each) compete for the cores while the interleaved rounds run, so both runtimes are
  measured under the same load in the same rounds; the note gives the load average before
  and after the run, and the table's title says how many processes competed.
* **first inference**: in a fresh subprocess per model, the seconds from an ONNX file on
  disk to the first result: ``from_onnx`` (reading and converting), ``rr.compile``
  (passes, planning, loading or compiling the numba kernels) and the first call; importing
  relay_ref, onnx and numba is printed apart. The kernel cache is the one a user has
  (``~/.cache/relay_ref`` or ``$RELAY_REF_CACHE_DIR``, warm once any run filled it);
  ``--cold`` points ``RELAY_REF_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` at a new empty folder.
* **ReferenceEvaluator**: ``onnx.reference.ReferenceEvaluator`` on the same variant, 3
  rounds of one RefEval run followed by a relay loop; the time is the median RefEval run,
  the ratio the median of the per-round RefEval / relay (by default on the five models it
  runs in under ~3 s; ``--refeval all`` for all nine). It is not an oracle for these
  opset-9 models (performance.md section 2): only its time is used.

Targets (issue 30): on a quiet machine median ratio <= 1.5x onnxruntime, every model
<= 2.5x; with ``--load 2`` (both runtimes under the same competing processes) median <= 2x,
every model <= 4x; ``rr.compile`` at least 10x faster than ReferenceEvaluator on every model.
Results are recorded in benchmarks/README.md ("ONNX models").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interleave import one_round, per_call  # noqa: E402  (benchmarks/interleave.py)
from load import busy, competing, loadavg, process_count  # noqa: E402  (benchmarks/load.py)

import relay_ref as rr  # noqa: E402
from relay_ref.testing import onnx_light  # noqa: E402

SLEEP = 0.12  # seconds between implementations (thread pools wind down)
TARGET_SECONDS = 0.2  # each measurement loops for at least this long
SMALL = ("bvlc_alexnet", "resnet50", "shufflenet", "squeezenet", "zfnet512")
RTOL = {"densenet121": 2e-3}


@dataclass
class Row:
    """One model's results (seconds; ``None`` where not measured)."""

    name: str
    nodes: int = 0
    relay: float | None = None
    ort: float | None = None
    ratio: float | None = None
    spread: tuple[float, float] | None = None
    first: dict[str, float] | None = None  # import, compile, first call, total
    error: float | None = None  # largest |relay - ort| / max|ort| over outputs and logits
    refeval: float | None = None
    refeval_ratio: float | None = None  # median of adjacent RefEval / relay per round
    note: str = ""
    threads: str = ""  # exe.plan's thread-policy line


def variant_path(name: str, folder: Path) -> Path:
    """The random-weight variant of ``light_<name>``, with its logits as a second output,
    saved in ``folder`` (the first-inference subprocess reads it from there)."""
    import onnx

    path = folder / f"{name}.onnx"
    if not path.exists():
        model = onnx_light.with_logits(
            onnx_light.random_variant(onnx.load(onnx_light.model_path(name)), seed=0))
        onnx.save(model, path)
    return path


def ort_session(path: Path) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])



def prepare(row: Row, path: Path) -> tuple[Callable[[], object], Callable[[], object]] | None:
    """Import, compile and check one model; the two callables to time (None when the
    outputs differ or the import fails: ``row.note`` says why)."""
    import onnx

    from relay_ref.frontend.onnx import from_onnx

    model = onnx.load(path)
    row.nodes = len(model.graph.node)
    feeds = onnx_light.feeds(model)
    try:
        mod, params = from_onnx(model)
        exe = rr.compile(mod, params=params)
        got = exe(**feeds)
    except rr.RelayError as err:
        row.note = f"relay error: {str(err).splitlines()[0][:100]}"
        return None
    sess = ort_session(path)
    want = sess.run(None, feeds)
    got = list(got) if isinstance(got, tuple) else [got]
    rtol = RTOL.get(row.name, 1e-3)
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        # relative to the output's scale: deep random-weight logits reach 1e4 and more
        rel = float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-30)) \
            if g.shape == w.shape else float("inf")
        if rel > rtol or (i == 0 and not np.allclose(g, w, rtol=rtol, atol=1e-6)):
            row.note = (f"WRONG: output {i} differs from ORT (shapes {g.shape} / {w.shape}, "
                        f"max |d| / max |ORT| {rel:.2g})")
            return None
        worst = max(worst, rel)
    row.error = worst
    out_names = [o.name for o in sess.get_outputs()][:1]  # time the model's own output
    row.threads = exe.plan.threads
    return (lambda: exe(**feeds)), (lambda: sess.run(out_names, feeds))


def measure(row: Row, relay_fn: Callable[[], object], ort_fn: Callable[[], object],
            rounds: int) -> None:
    """Interleaved rounds (see the module docstring)."""
    for _ in range(2):  # warm both (thread pools, caches)
        relay_fn()
        ort_fn()
    n_relay = max(1, int(TARGET_SECONDS / per_call(relay_fn, 1)))
    n_ort = max(1, int(TARGET_SECONDS / per_call(ort_fn, 1)))
    t_relay, t_ort, ratios = [], [], []
    for r in range(rounds):
        got = one_round(r, [("relay", relay_fn, n_relay), ("ort", ort_fn, n_ort)], SLEEP)
        t_relay.append(got["relay"])
        t_ort.append(got["ort"])
        ratios.append(got["relay"] / got["ort"])
    row.relay, row.ort = statistics.median(t_relay), statistics.median(t_ort)
    row.ratio = statistics.median(ratios)
    row.spread = (min(ratios), max(ratios))


def refeval_time(row: Row, path: Path, relay_fn: Callable[[], object] | None,
                 runs: int = 3) -> None:
    """``row.refeval``: the median seconds per inference of
    ``onnx.reference.ReferenceEvaluator``; ``row.refeval_ratio``: the median over ``runs``
    rounds of RefEval / relay, each round timing one RefEval run and then a relay loop
    (adjacent, so the machine's load changes less between the two)."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(path)
    ref = ReferenceEvaluator(model)
    feeds = onnx_light.feeds(model)
    out = [model.graph.output[0].name]
    n_relay = max(1, int(TARGET_SECONDS / per_call(relay_fn, 1))) if relay_fn else 0
    times, ratios = [], []
    for _ in range(runs):
        time.sleep(SLEEP)
        start = time.perf_counter()
        ref.run(out, feeds)
        times.append(time.perf_counter() - start)
        if relay_fn is not None:
            time.sleep(SLEEP)
            ratios.append(times[-1] / per_call(relay_fn, n_relay))
    row.refeval = statistics.median(times)
    row.refeval_ratio = statistics.median(ratios) if ratios else None


def first_inference(path: Path, cold: bool) -> dict[str, float]:
    """Run this script's ``--first-inference`` child on ``path`` in a fresh process."""
    env = dict(os.environ)
    tmp = None
    if cold:
        tmp = tempfile.TemporaryDirectory(prefix="relay-cold-")
        env["RELAY_REF_CACHE_DIR"] = env["NUMBA_CACHE_DIR"] = tmp.name
    try:
        out = subprocess.run([sys.executable, __file__, "--first-inference", str(path)],
                             capture_output=True, text=True, env=env, timeout=900)
    finally:
        if tmp is not None:
            tmp.cleanup()
    if out.returncode != 0:
        raise RuntimeError(f"first-inference child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _child(path: str) -> None:
    """``--first-inference PATH``: time import, compile and the first call; print JSON."""
    start = time.perf_counter()
    import onnx  # noqa: F401

    import relay_ref.compute.cpu  # noqa: F401  (numba, as rr.compile imports it)
    from relay_ref.frontend.onnx import from_onnx

    t0 = time.perf_counter()
    mod, params = from_onnx(path)
    t1 = time.perf_counter()
    exe = rr.compile(mod, params=params)
    t2 = time.perf_counter()
    model = onnx.load(path)
    feeds = onnx_light.feeds(model)  # drawn before the clock runs again
    t3 = time.perf_counter()
    exe(**feeds)
    t4 = time.perf_counter()
    print(json.dumps({"modules": t0 - start, "import": t1 - t0, "compile": t2 - t1,
                      "first call": t4 - t3, "total": (t1 - t0) + (t2 - t1) + (t4 - t3)}))


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.1f}"


HEADS = ["model", "nodes (variant)", "relay ms", "ORT ms", "relay / ORT", "rounds' range",
         "first inference s (import + compile + 1st call)", "max rel. diff",
         "RefEval ms", "RefEval / relay"]


def table_rows(rows: list[Row]) -> list[list[str]]:
    body = []
    for r in rows:
        first = "-" if r.first is None else (
            f"{r.first['total']:.2f} ({r.first['import']:.2f} + {r.first['compile']:.2f} + "
            f"{r.first['first call']:.2f})")
        body.append([
            r.name, str(r.nodes), _ms(r.relay), _ms(r.ort),
            "-" if r.ratio is None else f"{r.ratio:.2f}x",
            "-" if r.spread is None else f"{r.spread[0]:.2f}-{r.spread[1]:.2f}",
            first, "-" if r.error is None else f"{r.error:.1e}",
            _ms(r.refeval) if r.refeval is not None else "-",
            "-" if r.refeval_ratio is None else f"{r.refeval_ratio:.0f}x",
        ] + ([r.note] if r.note else []))
    return body


def summary(rows: list[Row], load: int = 0) -> str:
    """The medians against issue 30's targets: quiet, or under ``load`` competing
    processes (``--load``)."""
    ratios = [r.ratio for r in rows if r.ratio is not None]
    speedups = [r.refeval_ratio for r in rows if r.refeval_ratio is not None]
    if not ratios:
        return "no model timed"
    med, worst = statistics.median(ratios), max(ratios)
    med_target, worst_target = (2.0, 4.0) if load else (1.5, 2.5)
    text = (f"median relay / ORT {med:.2f}x (target <= {med_target:g}x: "
            f"{'met' if med <= med_target else 'missed'}), worst {worst:.2f}x (target "
            f"every model <= {worst_target:g}x: {'met' if worst <= worst_target else 'missed'})")
    if speedups:
        text += (f"; rr.compile vs ReferenceEvaluator: {min(speedups):.0f}x-"
                 f"{max(speedups):.0f}x faster (target >= 10x: "
                 f"{'met' if min(speedups) >= 10 else 'missed'})")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(
        description="The nine light ONNX models (random weights by role) through rr.compile "
                    "and onnxruntime with 2 threads: outputs checked, then interleaved "
                    "rounds; first-inference time; ReferenceEvaluator on the small models.")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--only", nargs="+", metavar="WORD", default=None,
                        help="only the models whose name contains one of these words")
    parser.add_argument("--refeval", choices=("small", "all", "none"), default="small",
                        help="time onnx.reference.ReferenceEvaluator on the five small "
                             f"models ({', '.join(SMALL)}; default), all nine, or none")
    parser.add_argument("--cold", action="store_true",
                        help="first inference with an empty kernel cache (every numba "
                             "kernel compiles)")
    parser.add_argument("--no-first", action="store_true",
                        help="skip the first-inference subprocess")
    parser.add_argument("--load", type=process_count, default=0, metavar="N",
                        help="N busy processes compete for the cores during the interleaved "
                             "rounds (benchmarks/load.py; default 0)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--first-inference", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_inference:
        _child(args.first_inference)
        return

    from ops import settings
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    names = [n for n in onnx_light.NAMES
             if args.only is None or any(w in n for w in args.only)]
    rows = [Row(n) for n in names]
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="relay-models-") as tmp, \
            Progress(console=console, transient=True) as progress:
        task = progress.add_task("models", total=len(rows) * 4)
        for row in rows:
            path = variant_path(row.name, Path(tmp))
            if not args.no_first:
                progress.update(task, description=f"{row.name}: first inference "
                                                  "(subprocess)")
                row.first = first_inference(path, args.cold)
            progress.advance(task)
            progress.update(task, description=f"{row.name}: import, compile, check")
            fns = prepare(row, path)
            progress.advance(task)
            progress.update(task, description=f"{row.name}: {args.rounds} interleaved rounds")
            if fns is not None:
                with competing(args.load):
                    measure(row, *fns, args.rounds)
            progress.advance(task)
            if args.refeval == "all" or (args.refeval == "small" and row.name in SMALL):
                progress.update(task, description=f"{row.name}: ReferenceEvaluator")
                refeval_time(row, path, fns[0] if fns is not None else None)
            progress.advance(task)
    load = loadavg()
    competition = (f"{busy(args.load)} competing during the interleaved rounds "
                   "(--load)" if args.load else "no competing processes started (quiet-ish)")
    policy = sorted({r.threads for r in rows if r.threads})
    note = (f"{settings()}; executor {'; '.join(policy) or 'threads: -'}; {args.rounds} "
            f"rounds; {competition}; first inference "
            + ("skipped" if args.no_first else
               f"with the kernel cache {'empty (--cold)' if args.cold else 'as found'}")
            + f"; load average (1 min) before/after {LOAD0[0]:.2f} / {load:.2f}")
    title = ("light ONNX models: rr.compile vs onnxruntime (2 threads)"
             + (f", {busy(args.load)} competing" if args.load else ", no added load"))
    if args.markdown:
        print(f"**{title}**\n")
        print("| " + " | ".join(HEADS) + " |")
        print("|" + "---|" * len(HEADS))
        for line in table_rows(rows):
            print("| " + " | ".join(line) + " |")
        print(f"\n{summary(rows, args.load)}\n\n{note}")
    else:
        table = Table(title=title)
        for h in HEADS:
            table.add_column(h, justify="left" if h == "model" else "right")
        for line in table_rows(rows):
            table.add_row(*line[:len(HEADS)])
        out = Console(width=max(Console().width, 160))
        out.print(table)
        for r in rows:
            if r.note:
                out.print(f"{r.name}: {r.note}")
        out.print(summary(rows, args.load))
        out.print(note)


LOAD0 = os.getloadavg()

if __name__ == "__main__":
    main()
