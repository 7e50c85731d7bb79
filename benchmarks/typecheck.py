"""Type-checking time against program size (spec/typing.md 6.1, 6.2, 6.5).

Runs ``rr.infer_types`` on generated programs. Two sections (``--only`` picks one):

``chains`` (``relay_ref.testing.typed_strategies``):

* let chains of 1k, 10k and 100k bindings ``let %vi = add(%v(i-1), %x);``
* dataflow graphs of the same sizes without lets (calls nested n deep: recursion on the
  big-stack worker thread),
* a ResNet-50-sized graph (about 180 operator calls and 50 projections, shared nodes),

with the time per binding and the growth ratios: linear inference means the time ratio
between consecutive sizes stays close to the size ratio (10).

``nested`` (``relay_ref.testing.nested_fns``): programs whose *types* grow with their depth
(nested function literals with and without annotations, closures applied at once, curried
chains returning pairs, higher-order and reference chains, shared tuple types), 1 000 /
4 000 / 16 000 deep (``--sizes``): the median check time and its ratio to the first size;
with a linear occurs check the time grows like the depth (x4, x16), one doubling at a time
(the "per doubling" column) close to 2. Shapes marked "error" end with a located "cannot
infer" diagnostic (a parameter nothing determines), which is timed too.

Usage: ``python benchmarks/typecheck.py [--repeat N] [--only chains|nested] [--sizes ...]
[--markdown]``; the nested section prints a rich table (and Markdown with ``--markdown``).
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time

from rich.console import Console
from rich.table import Table

import relay_ref as rr
from relay_ref.ir.module import IRModule
from relay_ref.testing.nested_fns import NESTED_SHAPES, UNKNOWN
from relay_ref.testing.typed_strategies import (
    graph_chain_module,
    let_chain_module,
    resnet_like_module,
)

SIZES = (1_000, 10_000, 100_000)


def best_time(mod: IRModule, repeat: int) -> float:
    """Fastest of ``repeat`` runs of ``infer_types``, in seconds of process CPU time (all
    threads: inference runs on a worker thread), which other load on the machine disturbs
    less than wall-clock time."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        rr.infer_types(mod)
        best = min(best, time.process_time() - start)
    return best


def median_check_time(mod: IRModule, repeat: int) -> float:
    """Median of ``repeat`` runs of ``infer_types`` (process CPU time, all threads), a
    located type error counting as a finished check."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        try:
            rr.infer_types(mod)
        except rr.RelayTypeError:
            pass
        times.append(time.process_time() - start)
    return statistics.median(times)


def chains(repeat: int) -> None:
    """The let-chain / nested-graph / resnet table (Markdown)."""
    rr.infer_types(let_chain_module(100))  # warm up imports and the op registry
    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"best of {repeat} runs, CPU time\n")
    print("| program | size | time (s) | µs / binding | time ratio | size ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, build in (("let chain", let_chain_module), ("nested graph", graph_chain_module)):
        previous = None
        for n in SIZES:
            seconds = best_time(build(n), repeat)
            ratio = "" if previous is None else f"{seconds / previous:.1f}"
            size_ratio = "" if previous is None else "10"
            print(f"| {label} | {n:,} | {seconds:.3f} | {seconds / n * 1e6:.1f} | {ratio} "
                  f"| {size_ratio} |")
            previous = seconds
    mod = resnet_like_module()
    seconds = best_time(mod, repeat)
    nodes = len(rr.infer_types(mod).checked_types)
    print(f"| resnet50-sized graph | {nodes} nodes | {seconds:.3f} | "
          f"{seconds / nodes * 1e6:.1f} / node | | |")


def nested(sizes: list[int], repeat: int, markdown: bool) -> None:
    """Check time of each ``NESTED_SHAPES`` program at each depth (rich table)."""
    console = Console(width=120)
    rows: list[tuple[str, ...]] = []
    for shape, gen in NESTED_SHAPES.items():
        first: float | None = None
        for n in sizes:
            console.print(f"[dim]{shape} x {n:,}...[/dim]", end="\r")
            seconds = median_check_time(rr.parse(gen(n)), repeat)
            ratio = per_doubling = ""
            if first is None:
                first = seconds
            elif first > 0:
                ratio = f"{seconds / first:.1f}x"
                per_doubling = f"{(seconds / first) ** (1 / math.log2(n / sizes[0])):.2f}x"
            label = f"{shape} (error)" if shape in UNKNOWN else shape
            rows.append((label, f"{n:,}", f"{seconds:.3f}", f"{seconds / n * 1e6:.1f}",
                         ratio, per_doubling))
    title = (f"Type checking nested functions: median of {repeat} runs, CPU seconds "
             f"(Python {platform.python_version()}, {platform.machine()}); ratios to depth "
             f"{sizes[0]:,}")
    table = Table(title=title)
    headers = ("shape", "depth", "check (s)", "µs / level", f"x n={sizes[0]:,}",
               "per doubling")
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|---|" + "---:|" * (len(headers) - 1))
        for row in rows:
            print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per size (chains: best kept; nested: median)")
    parser.add_argument("--only", choices=("chains", "nested"), help="run one section")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 4_000, 16_000],
                        help="depths of the nested section")
    parser.add_argument("--markdown", action="store_true",
                        help="also print the nested table as Markdown")
    args = parser.parse_args()
    if args.only in (None, "chains"):
        chains(args.repeat)
    if args.only in (None, "nested"):
        nested(args.sizes, args.repeat, args.markdown)


if __name__ == "__main__":
    main()
