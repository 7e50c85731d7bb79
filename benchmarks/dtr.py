"""Dynamic Tensor Rematerialization (issue 27): budget ratio against slowdown per heuristic.

    python benchmarks/dtr.py [--repeat 3] [--ratios 0.1:1.0:0.1]
                             [--heuristics dtr,dtr_eq,lru,size,random]
                             [--paper-logs PATH] [--plot-dir docs]

Training steps (the loss and an SGD step of every weight, through ``gradient(@loss)``) of a
ResNet-style CNN, a TreeLSTM-style model over a tree ADT (``rr.gradient``, higher-order) and
a transformer block. For each:

* the plain compiled step and the step through the DTR runtime with an unlimited budget:
  wall time, the median of ``--repeat`` runs each, measured in this run (the runtime's own
  overhead is their ratio); the unbudgeted peak;
* the step recorded once as a DTR log (``dtr_log=``) and swept through the simulator at
  every ratio with every heuristic (flops cost model: deterministic); the lowest feasible
  ratio per heuristic; ``heuristic_evaluations`` of ``dtr_eq`` against ``dtr``;
* the ResNet-style step run for real through ``rr.compile(memory_budget=1/3 of its peak,
  heuristic="dtr_eq")``: its slowdown (the target: <= 1.3x) and whether its values are
  bit-identical to the plain step's.

``--paper-logs PATH`` (the artifact's ``simrd/logs.zip``, or the folder it unzips to; not
shipped: the artifact has no licence) also sweeps the paper's eight PyTorch logs through the
simulator with their measured ``TIME`` costs and the artifact's D-Access convention
(``access="simrd"``). ``--plot-dir`` writes one PNG per model
(``dtr-<model>.png``) in the paper's Figure 2 style. Results are recorded in
benchmarks/README.md ("DTR (issue 27)").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

import relay_ref as rr
from relay_ref.cli.dtr import (
    SweepResult,
    parse_budgets,
    parse_heuristics,
    plot_sweep,
    run_sweep,
    sweep_table,
)
from relay_ref.dtr.log import read_log

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' model builders
from tests.dtr import dtr_models  # noqa: E402
from tests.dtr.dtr_models import arrays, leaves, training_step  # noqa: E402

UNLIMITED = 1 << 62


def resnet(blocks: int = 8, batch: int = 8, ch: int = 16, hw: int = 16) -> tuple[Any, list]:
    """Residual blocks of two 3x3 convolutions and a skip connection (the tests' builder,
    larger)."""
    return dtr_models.resnet(blocks, batch, ch, hw, scale=0.1)


def transformer(seq: int = 128, d: int = 64, ff: int = 128) -> tuple[Any, list]:
    """One block: single-head attention with a residual, a two-layer feed-forward with a
    residual."""
    params = [("x", (seq, d)), ("wq", (d, d)), ("wk", (d, d)), ("wv", (d, d)), ("wo", (d, d)),
              ("w1", (ff, d)), ("w2", (d, ff))]
    body = """let %q = nn.dense(%x, %wq);
      let %k = nn.dense(%x, %wk);
      let %v = nn.dense(%x, %wv);
      let %s = nn.softmax(nn.dense(%q, %k) * 0.125f);
      let %a = nn.dense(%s, transpose(%v));
      let %o = nn.dense(%a, %wo) + %x;
      let %f = nn.dense(nn.relu(nn.dense(%o, %w1)), %w2) + %o;
      sum(%f * %f)"""
    return rr.parse(training_step(params, [n for n, _ in params[1:]], body)), \
        arrays([s for _, s in params], 4, 0.1)


def treelstm(depth: int = 5) -> tuple[Any, list]:
    """A TreeLSTM-style cell by recursion over a binary tree ADT, differentiated by
    ``rr.gradient`` (higher-order mode: closures and recursion); the tests' builder, larger."""
    return dtr_models.treelstm(depth, rows=16, width=32)


MODELS: dict[str, Callable[[], tuple[Any, list]]] = {
    "resnet": resnet, "treelstm": treelstm, "transformer": transformer}


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_model(name: str, repeat: int, ratios: list[float], heuristics: list[str],
                plot_dir: str | None, progress: Progress) -> dict[str, Any]:
    mod, args = MODELS[name]()
    plain = rr.compile(mod)
    expected = plain(*args)
    unlimited = rr.compile(mod, memory_budget=UNLIMITED)
    unlimited(*args)  # warm: kernels loaded
    t_plain = _median(lambda: plain(*args), repeat)
    t_dtr = _median(lambda: unlimited(*args), repeat)
    peak = unlimited.dtr_stats.peak_bytes
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "step.jsonl")
        rr.compile(mod, memory_budget=UNLIMITED, dtr_log=log)(*args)
        records = read_log(log)
    task = progress.add_task(f"{name}: sweep", total=len(ratios) * len(heuristics))
    result = run_sweep(records, name, ratios, heuristics, cost="flops",
                       progress=lambda done, total: progress.update(task, completed=done))
    out: dict[str, Any] = {"name": name, "t_plain": t_plain, "t_dtr": t_dtr, "peak": peak,
                           "result": result}
    if name == "resnet":  # the target: dtr_eq at 1/3 of the peak, run for real
        third = rr.compile(mod, memory_budget=peak // 3, heuristic="dtr_eq")
        try:
            got = third(*args)
            out["third"] = third.dtr_stats
            out["third_identical"] = all(np.array_equal(a, b) for a, b in zip(
                leaves(expected), leaves(got), strict=True))
        except rr.RelayRuntimeError as err:
            out["third"] = None
            out["third_error"] = err.message
    if plot_dir:
        plot_sweep(result, os.path.join(plot_dir, f"dtr-{name}.png"),
                   f"DTR: {name} training step (this project)")
    return out


def _evals(result: SweepResult, h: str) -> int:
    """heuristic_evaluations summed over the ratios where both dtr and dtr_eq finished."""
    both = [r for r in result.ratios if all(
        not result.point(r, x).stats.oom and not result.point(r, x).stats.thrashed
        for x in ("dtr", "dtr_eq"))]
    return sum(result.point(r, h).stats.heuristic_evaluations for r in both)


def paper_logs(path: str) -> list[tuple[str, str]]:
    """(model, log path) for the artifact's logs: a folder (searched recursively) or the
    zip (extracted to a temporary folder that lives as long as the process)."""
    if zipfile.is_zipfile(path):
        tmp = tempfile.mkdtemp(prefix="dtr-paper-logs-")
        with zipfile.ZipFile(path) as z:
            z.extractall(tmp)
        path = tmp
    logs = sorted(Path(path).rglob("*.log"), key=lambda p: p.stat().st_size)  # small first
    return [(p.name.split("-")[0], str(p)) for p in logs]


def report(console: Console, rows: list[dict[str, Any]], heuristics: list[str]) -> None:
    """The summary table, then each model's sweep table and the 1/3 run."""
    summary = Table(title="DTR runtime: training steps")
    for col in ("model", "peak bytes", "plain s", "dtr unlimited s", "overhead",
                *(f"lowest {h}" for h in heuristics), "evals dtr_eq/dtr"):
        summary.add_column(col, justify="right")
    for r in rows:
        res: SweepResult = r["result"]
        low = [res.lowest_feasible(h) for h in heuristics]
        ev = ""
        if "dtr" in heuristics and "dtr_eq" in heuristics and _evals(res, "dtr"):
            ev = f"{_evals(res, 'dtr_eq') / _evals(res, 'dtr'):.3f}"
        summary.add_row(r["name"], str(r["peak"]), f"{r['t_plain']:.4f}", f"{r['t_dtr']:.4f}",
                        f"{r['t_dtr'] / r['t_plain']:.2f}x",
                        *("none" if x is None else f"{x:.2f}" for x in low), ev)
    console.print(summary)
    for r in rows:
        console.print(sweep_table(r["result"]))
        if "third" in r:
            st = r["third"]
            if st is None:
                console.print(f"resnet at 1/3 of its peak, dtr_eq: {r['third_error']}")
            else:
                console.print(f"resnet at 1/3 of its peak, dtr_eq, run: slowdown "
                              f"{st.slowdown:.3f}, peak {st.peak_bytes} <= budget {st.budget}, "
                              f"bit-identical {r['third_identical']}, evictions {st.evictions}"
                              f", rematerializations {st.rematerializations}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ratios", default="0.1:1.0:0.1")
    ap.add_argument("--heuristics", default="dtr,dtr_eq,lru,size,random")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--paper-logs", default=None, metavar="PATH")
    ap.add_argument("--paper-heuristics", default="dtr_eq,dtr,lru")
    ap.add_argument("--plot-dir", default=None)
    a = ap.parse_args()
    ratios = parse_budgets(a.ratios)
    heuristics = parse_heuristics(a.heuristics)
    console = Console(width=150)
    if a.plot_dir:
        os.makedirs(a.plot_dir, exist_ok=True)
    console.print(f"{platform.processor() or platform.machine()}, Python "
                  f"{platform.python_version()}, numpy {np.__version__}; repeat {a.repeat}")
    rows = []
    with Progress(console=console, transient=True) as progress:
        for name in filter(None, a.models.split(",")):
            rows.append(bench_model(name, a.repeat, ratios, heuristics, a.plot_dir, progress))
    if rows:
        report(console, rows, heuristics)
    if a.paper_logs:
        ph = parse_heuristics(a.paper_heuristics)
        for model, path in paper_logs(a.paper_logs):  # each printed as soon as it is done
            with Progress(console=console, transient=True) as progress:
                task = progress.add_task(model, total=len(ratios) * len(ph))
                start = time.perf_counter()
                res = run_sweep(read_log(path), model, ratios, ph, cost="measured",
                                progress=lambda d, t, task=task: progress.update(task, completed=d),
                                access="simrd")
            console.print(sweep_table(res))
            console.print(f"({time.perf_counter() - start:.0f} s)")
            if a.plot_dir:
                plot_sweep(res, os.path.join(a.plot_dir, f"dtr-paper-{res.label}.png"),
                           f"DTR: the paper's {res.label} log (simulated)")

if __name__ == "__main__":
    main()
