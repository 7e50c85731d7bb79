"""Growth of every phase on real-network-shaped programs: linear in nodes, not paths.

    python benchmarks/growth.py [--sizes 1000 2000 4000] [--repeat 3] [--shapes residual ...]
    python benchmarks/growth.py --compile --shapes nested_tuple residual --sizes 2000 4000 8000

For each program shape of ``relay_ref.testing.growth`` (residual chain ``%i = add(%i-1,
nn.relu(%i-1))`` as TVM prints ResNet blocks, the same with ``let``, a DenseNet-like fan-in,
residual blocks inside closures, and ``%k = add(%k-1, %k-1)`` whose ``2**n`` paths punish
path walking) and each size, times parse, type check, evaluate, print, alpha-equality
(against the re-parsed text) and structural hashing: the median of ``--repeat`` runs, wall
clock. Prints a table of seconds and the ratio of each size's time to the previous size's
(2.0 for a doubling of size means linear). ``--compile`` adds ``rr.compile`` (the pass
pipeline, its type checks, fusion, the memory plan, code generation; kernels already in
numba's cache). Results are recorded in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

import relay_ref as rr
from relay_ref.testing.growth import SHAPES

PHASES = ("parse", "check", "evaluate", "print", "alpha_equal", "hash")


def _median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(shape: str, n: int, repeat: int, compile_: bool = False) -> dict[str, float]:
    """Median seconds of each phase on the ``shape`` program of size ``n``."""
    text = SHAPES[shape](n)
    arg = np.float32(1e-30) if shape == "doubling" else np.full(8, 1e-3, "float32")
    mod = rr.parse(text)
    checked = rr.infer_types(mod)
    printed = rr.astext(checked)
    again = rr.parse(printed)
    fresh = [rr.parse(text) for _ in range(repeat)]  # unchecked copies for "check"
    if compile_:
        rr.compile(rr.parse(SHAPES[shape](10)))  # numba kernels compiled once, not timed
    with np.errstate(over="ignore"):
        times = {
            "parse": _median_time(lambda: rr.parse(text), repeat),
            "check": _median_time(lambda: rr.infer_types(fresh.pop()), repeat),
            "evaluate": _median_time(lambda: rr.evaluate(checked, arg), repeat),
            "print": _median_time(lambda: rr.astext(checked), repeat),
            "alpha_equal": _median_time(lambda: rr.alpha_equal(checked, again), repeat),
            "hash": _median_time(lambda: rr.structural_hash(checked), repeat),
        }
        if compile_:
            times["compile"] = _median_time(lambda: rr.compile(checked), repeat)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 4000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    ap.add_argument("--compile", action="store_true", help="also time rr.compile")
    args = ap.parse_args()
    phases = (*PHASES, "compile") if args.compile else PHASES
    console = Console(width=150)
    results: dict[tuple[str, int], dict[str, float]] = {}
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("measuring", total=len(args.shapes) * len(args.sizes))
        for shape in args.shapes:
            for n in args.sizes:
                progress.update(task, description=f"{shape} x {n}")
                results[shape, n] = measure(shape, n, args.repeat, args.compile)
                progress.advance(task)
    table = Table(title=f"Seconds per phase (median of {args.repeat}); x = ratio to the "
                        f"previous size ({platform.python_version()}, "
                        f"{platform.machine()})")
    table.add_column("shape")
    table.add_column("blocks", justify="right")
    for phase in phases:
        table.add_column(phase, justify="right")
    for shape in args.shapes:
        previous = None
        for n in args.sizes:
            row = results[shape, n]
            cells = []
            for phase in phases:
                cell = f"{row[phase]:.3f}"
                if previous is not None and previous[phase] > 0:
                    cell += f" ({row[phase] / previous[phase]:.1f}x)"
                cells.append(cell)
            table.add_row(shape, f"{n:,}", *cells)
            previous = row
    console.print(table)
    if args.markdown:
        print("| shape | blocks | " + " | ".join(phases) + " |")
        print("|---|---:|" + "---:|" * len(phases))
        for shape in args.shapes:
            previous = None
            for n in args.sizes:
                row = results[shape, n]
                cells = [f"{row[p]:.3f}" + (f" ({row[p] / previous[p]:.1f}x)"
                                            if previous and previous[p] > 0 else "")
                         for p in phases]
                print(f"| {shape} | {n:,} | " + " | ".join(cells) + " |")
                previous = row


if __name__ == "__main__":
    main()
