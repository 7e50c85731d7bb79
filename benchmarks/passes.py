"""Time of every pass on real-network-shaped programs, and its growth with program size.

    python benchmarks/passes.py [--sizes 500 1000 2000] [--repeat 3] [--markdown]

For each registered pass (``rr.pass_names()``) and each size ``n``, times the pass alone
(median of ``--repeat`` runs, wall clock, on an already type-checked module) on the
residual chain of ``relay_ref.testing.growth`` (``%i = add(%i-1, nn.relu(%i-1))``, n blocks:
every node shared, as in ResNet blocks). The ratio column is the time at ``n`` over the
time at the previous size (2.0 per doubling means linear). Also times the inference
pipeline ``SimplifyInference, FoldConstant, FoldScaleAxis, FuseOps`` on
``resnet_like_module()`` (ResNet-50's block layout, batch-norm after every convolution).
Results are recorded in benchmarks/README.md ("Passes").
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

import relay_ref as rr
from relay_ref.passes import get_pass
from relay_ref.testing.growth import residual_chain
from relay_ref.testing.typed_strategies import resnet_like_module

PIPELINE = ["SimplifyInference", "FoldConstant", "FoldScaleAxis", "FuseOps"]


def _median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    names = rr.pass_names()
    mods = {n: rr.infer_types(rr.parse(residual_chain(n))) for n in args.sizes}
    rows = []
    with Progress(transient=True) as progress:
        task = progress.add_task("passes", total=len(names) * len(args.sizes) + 1)
        for name in names:
            times = []
            for n in args.sizes:
                progress.update(task, description=f"{name} n={n}")
                times.append(_median_time(lambda n=n: get_pass(name)(mods[n]), args.repeat))
                progress.advance(task)
            rows.append((name, times))
        resnet = rr.infer_types(resnet_like_module())
        progress.update(task, description="pipeline on resnet-like")
        pipeline = _median_time(lambda: rr.optimize(resnet, PIPELINE), args.repeat)
        progress.advance(task)
    _print(rows, args.sizes, pipeline, args.markdown)


def _print(rows, sizes, pipeline: float, markdown: bool) -> None:
    heads = ["pass"] + [f"n={n} (s)" for n in sizes] + [
        f"x {b}/{a}" for a, b in zip(sizes, sizes[1:], strict=False)]
    body = []
    for name, times in rows:
        ratios = [f"{b / a:.2f}" if a > 0 else "-" for a, b in zip(times, times[1:],
                                                                   strict=False)]
        body.append([name] + [f"{t:.3f}" for t in times] + ratios)
    note = (f"pipeline {', '.join(PIPELINE)} on resnet_like_module(): {pipeline:.2f} s "
            f"(Python {platform.python_version()})")
    if markdown:
        print("| " + " | ".join(heads) + " |")
        print("|" + "---|" * len(heads))
        for row in body:
            print("| " + " | ".join(row) + " |")
        print(f"\n{note}")
        return
    table = Table(title="passes on residual chains (median seconds)")
    for h in heads:
        table.add_column(h, justify="left" if h == "pass" else "right")
    for row in body:
        table.add_row(*row)
    console = Console()
    console.print(table)
    console.print(note)


if __name__ == "__main__":
    main()
