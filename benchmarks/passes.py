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

    python benchmarks/passes.py --ad-layers 10 25 50 100 [--repeat 5] [--markdown]

instead times ``PartialEvaluate, DeadCodeElimination`` on the higher-order reverse-mode AD
output (``rr.gradient``) of an n-layer MLP (``relu(dense(h, w_i))``, 2x4 float64), with the
size of the result and the refs and closures left in it (benchmarks/README.md,
"PartialEvaluate on AD output").
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
    parser.add_argument("--ad-layers", type=int, nargs="+",
                        help="time PartialEvaluate + DCE on the gradient of MLPs instead")
    args = parser.parse_args()
    if args.ad_layers:
        _ad(args.ad_layers, args.repeat, args.markdown)
        return
    names = rr.pass_names()
    mods = {n: rr.infer_types(rr.parse(residual_chain(n))) for n in args.sizes}
    rows = []
    with Progress(transient=True) as progress:
        task = progress.add_task("passes", total=len(names) * len(args.sizes) + 1)
        for name in names:
            times = []
            for n in args.sizes:
                progress.update(task, description=f"{name} n={n}")
                run = get_pass(name)
                times.append(_median_time(lambda n=n, run=run: run(mods[n]), args.repeat))
                progress.advance(task)
            rows.append((name, times))
        resnet = rr.infer_types(resnet_like_module())
        progress.update(task, description="pipeline on resnet-like")
        pipeline = _median_time(lambda: rr.optimize(resnet, PIPELINE), args.repeat)
        progress.advance(task)
    _print(rows, args.sizes, pipeline, args.markdown)


def _mlp(n: int, d: int = 4) -> str:
    params = ", ".join(f"%w{i}: Tensor[({d}, {d}), float64]" for i in range(n))
    body = "".join(f"  let %h{i + 1} = nn.relu(nn.dense(%h{i}, %w{i}));\n" for i in range(n))
    return (f"def @main(%h0: Tensor[(2, {d}), float64], {params}) -> float64 {{\n"
            f"{body}  sum(%h{n})\n}}")


def _ad(layers: list[int], repeat: int, markdown: bool) -> None:
    """PartialEvaluate + DCE on ``rr.gradient`` of n-layer MLPs: time and what is left."""
    from relay_ref.ir.expr import Function, RefCreate
    from relay_ref.ir.visitor import post_order

    heads = ["layers", "gradient nodes", "PE+DCE (s)", "nodes after", "refs", "closures"]
    body = []
    for n in layers:
        grad = rr.gradient(rr.parse(_mlp(n)))
        seconds = _median_time(
            lambda g=grad: rr.optimize(g, ["PartialEvaluate", "DeadCodeElimination"]), repeat)
        out = rr.optimize(grad, ["PartialEvaluate", "DeadCodeElimination"])["main"]
        nodes = list(post_order(out))
        body.append([str(n), str(sum(1 for _ in post_order(grad["main"]))),
                     f"{seconds:.3f}", str(len(nodes)),
                     str(sum(type(x) is RefCreate for x in nodes)),
                     str(sum(type(x) is Function for x in nodes) - 1)])
    if markdown:
        print("| " + " | ".join(heads) + " |")
        print("|" + "---|" * len(heads))
        for row in body:
            print("| " + " | ".join(row) + " |")
        return
    table = Table(title="PartialEvaluate + DCE on the gradient of an MLP (median seconds)")
    for h in heads:
        table.add_column(h, justify="right")
    for row in body:
        table.add_row(*row)
    Console().print(table)


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
