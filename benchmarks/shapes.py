"""Symbolic shapes (issue 29): one compile for every shape, against a compile per shape.

    python benchmarks/shapes.py [--rounds 5] [--only mlp cnn squeezenet resnet50]
                                [--skip-run] [--skip-typecheck] [--skip-memory] [--markdown]

Three measurements, each printed as a rich table (Markdown with ``--markdown``):

* **run**: each model written with a symbolic batch ``n`` (``def @main(%x: Tensor[(n, ...)])``)
  is compiled once and run at every batch size, against the same program with the batch a
  number, compiled for that size. The ONNX light models (random-weight variants,
  ``relay_ref.testing.onnx_light``) are imported with batch 1 and made symbolic by
  rewriting ``@main``'s first parameter to ``n`` and each ``reshape(newshape=[1, ...])`` to
  ``[-1, ...]`` (the static program gets the same rewrite, so both run the same
  operators); the MLP and CNN are the programs of tests/executor/test_symbolic_compile.py.
  Both executables run in interleaved rounds (alternating order, 0.12 s sleeps between
  them, each measurement a loop of at least 0.2 s), the ratio is the median over rounds of
  the per-round ratio symbolic / static. Outputs are checked equal first, and the plans'
  structure (groups, strategies, kernels, buffers) compared: "same plan" says whether it
  is the static program's. Target: ratio <= 1.1 at every batch size.
* **type-check**: ``rr.infer_types`` of ResNet-50 (the ONNX light model's Relay program, 176
  compute nodes before SimplifyInference) with batch ``n`` against batch 1, interleaved, each
  on a freshly parsed module (the check is cached on a module). Target: ratio <= 1.5.
* **memory**: the planned buffers' bytes: the static plan's at each batch, the symbolic
  plan without ``shape_bounds`` after running every batch size (buffers grow to the largest
  call), and with ``shape_bounds={"n": B}`` (preallocated at the bound ``B``, the largest
  batch size: nothing is allocated while running).

Results are recorded in benchmarks/README.md ("Symbolic shapes").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "executor"))

from interleave import one_round  # noqa: E402  (benchmarks/interleave.py)
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import relay_ref as rr  # noqa: E402

SLEEP = 0.12
TARGET_SECONDS = 0.2
BATCHES = {"mlp": (1, 7, 64), "cnn": (1, 7, 64), "squeezenet": (1, 4), "shufflenet": (1, 4),
           "resnet50": (1, 4)}


def _onnx_text(name: str) -> tuple[str, dict[str, np.ndarray], tuple[int, ...]]:
    """The light model's Relay text (batch 1, reshapes to ``-1``), params, feature shape."""
    import onnx

    from relay_ref.frontend.onnx import from_onnx
    from relay_ref.testing import onnx_light

    model = onnx_light.random_variant(onnx.load(onnx_light.model_path(name)))
    mod, params = from_onnx(model)
    text = rr.astext(mod).replace("newshape=[1, ", "newshape=[-1, ")
    return text, dict(params), (3, 224, 224)


def _with_batch(text: str, batch: object) -> str:
    """``text`` with ``@main``'s first parameter's batch (1) replaced by ``batch``."""
    head = "Tensor[(1, "
    k = text.index(head)
    return text[:k] + f"Tensor[({batch}, " + text[k + len(head):]


def model(name: str) -> tuple[Any, dict[str, np.ndarray], tuple[int, ...]]:
    """(batch -> program text, params, feature shape) of a benchmark model."""
    if name in ("mlp", "cnn"):
        import test_symbolic_compile as t  # tests/executor

        source = t._mlp if name == "mlp" else t._cnn
        params = t._params(rr.parse(source("n")))
        return source, params, (64,) if name == "mlp" else (3, 16, 16)
    text, params, feature = _onnx_text(name)
    return (lambda b: _with_batch(text, b)), params, feature


def _loops(fn: Any) -> int:
    start = time.perf_counter()
    fn()
    return max(1, int(TARGET_SECONDS / max(time.perf_counter() - start, 1e-6)))


def _summary(plan: Any) -> tuple:
    groups = sorted((g.label, g.strategy, g.kernels, g.count) for g in plan.groups)
    return groups, plan.buffers, plan.planned_values, plan.launches, plan.constants


def bench_run(names: list[str], rounds: int) -> list[tuple]:
    rows = []
    for name in names:
        source, params, feature = model(name)
        exe = rr.compile(rr.parse(source("n")), params=params)
        rng = np.random.default_rng(0)
        for batch in BATCHES.get(name, (1, 4)):
            static = rr.compile(rr.parse(source(batch)), params=params)
            x = rng.standard_normal((batch, *feature)).astype("float32")
            a, b = exe(x), static(x)
            if not np.allclose(a, b, rtol=1e-4, atol=1e-6):
                rows.append((name, batch, None, None, None, None, "outputs differ"))
                continue
            same = _summary(exe.plan) == _summary(static.plan)
            compiled = exe.stats.compilations
            n = _loops(lambda e=exe, x=x: e(x))
            entries = [("sym", lambda e=exe, x=x: e(x), n),
                       ("static", lambda e=static, x=x: e(x), n)]
            ratios, sym_t, sta_t = [], [], []
            for r in range(rounds):
                got = one_round(r, entries, SLEEP)
                ratios.append(got["sym"] / got["static"])
                sym_t.append(got["sym"])
                sta_t.append(got["static"])
            rows.append((name, batch, statistics.median(sym_t), statistics.median(sta_t),
                         statistics.median(ratios), (min(ratios), max(ratios)),
                         f"{'yes' if same else 'NO'}; compilations {compiled}"))
    return rows


def bench_typecheck(rounds: int) -> tuple[float, float, float, tuple[float, float]]:
    text, _, _ = _onnx_text("resnet50")
    sym_text, static_text = _with_batch(text, "n"), text
    times: dict[str, list[float]] = {"sym": [], "static": []}
    ratios = []
    for r in range(rounds):
        order = ["sym", "static"] if r % 2 == 0 else ["static", "sym"]
        got = {}
        for label in order:
            mods = [rr.parse(sym_text if label == "sym" else static_text) for _ in range(3)]
            time.sleep(SLEEP)
            start = time.perf_counter()
            for m in mods:
                rr.infer_types(m)
            got[label] = (time.perf_counter() - start) / len(mods)
            times[label].append(got[label])
        ratios.append(got["sym"] / got["static"])
    return (statistics.median(times["sym"]), statistics.median(times["static"]),
            statistics.median(ratios), (min(ratios), max(ratios)))


def bench_memory(names: list[str]) -> list[tuple]:
    rows = []
    for name in names:
        source, params, feature = model(name)
        batches = BATCHES.get(name, (1, 4))
        bound = max(batches)
        mod = rr.parse(source("n"))
        grow = rr.compile(mod, params=params)
        bounded = rr.compile(mod, params=params, shape_bounds={"n": bound})
        at_compile = bounded.runtime.nbytes
        static = {}
        for b in batches:
            x = np.zeros((b, *feature), np.float32)
            grow(x)
            bounded(x)
            static[b] = rr.compile(rr.parse(source(b)), params=params).plan.peak_bytes
        rows.append((name, batches, static, grow.runtime.nbytes, grow.runtime.allocations,
                     at_compile, bounded.runtime.allocations,
                     " + ".join(grow.plan.symbolic_buffers)))
    return rows


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*",
                    default=["mlp", "cnn", "squeezenet", "shufflenet", "resnet50"])
    ap.add_argument("--skip-run", action="store_true")
    ap.add_argument("--skip-typecheck", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    console = Console()
    tables = []
    if not args.skip_run:
        t = Table(title="symbolic batch (one compile) vs a static compile per batch")
        for c in ("model", "batch", "symbolic ms", "static ms", "ratio", "min-max",
                  "same plan; compilations"):
            t.add_column(c)
        for name, b, s, st, ratio, spread, note in bench_run(args.only, args.rounds):
            if ratio is None:
                t.add_row(name, str(b), "-", "-", "-", "-", note)
                continue
            t.add_row(name, str(b), f"{s * 1e3:.3f}", f"{st * 1e3:.3f}", f"{ratio:.2f}x",
                      f"{spread[0]:.2f}-{spread[1]:.2f}", note)
        tables.append(t)
    if not args.skip_typecheck:
        s, st, ratio, spread = bench_typecheck(args.rounds)
        t = Table(title="type-checking ResNet-50: batch n vs batch 1")
        for c in ("symbolic ms", "static ms", "ratio", "min-max"):
            t.add_column(c)
        t.add_row(f"{s * 1e3:.1f}", f"{st * 1e3:.1f}", f"{ratio:.2f}x",
                  f"{spread[0]:.2f}-{spread[1]:.2f}")
        tables.append(t)
    if not args.skip_memory:
        t = Table(title="planned buffers (MB): static per batch, symbolic growing, bounded")
        for c in ("model", "static peak per batch", "symbolic, after all batches",
                  "grown (allocations)", "shape_bounds at compile", "allocations after",
                  "symbolic sizes (bytes)"):
            t.add_column(c)
        for name, batches, static, grown, allocs, bounded, ballocs, sizes in \
                bench_memory(args.only):
            t.add_row(name, ", ".join(f"{b}: {_mb(static[b])}" for b in batches), _mb(grown),
                      str(allocs), f"{_mb(bounded)} (n <= {max(batches)})", str(ballocs),
                      sizes if len(sizes) < 60 else sizes[:57] + "...")
        tables.append(t)
    for t in tables:
        console.print(t)
        if args.markdown:
            cols = [c.header for c in t.columns]
            print("| " + " | ".join(cols) + " |")
            print("|" + "---|" * len(cols))
            for row in zip(*(c._cells for c in t.columns), strict=True):
                print("| " + " | ".join(str(x) for x in row) + " |")
            print()


if __name__ == "__main__":
    main()
