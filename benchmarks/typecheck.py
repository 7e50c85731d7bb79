"""Type-checking time against program size (spec/typing.md 6.2, 6.5).

Runs ``rr.infer_types`` on generated programs (``relay_ref.testing.typed_strategies``):

* let chains of 1k, 10k and 100k bindings ``let %vi = add(%v(i-1), %x);``
* dataflow graphs of the same sizes without lets (calls nested n deep: recursion on the
  big-stack worker thread),
* a ResNet-50-sized graph (about 180 operator calls and 50 projections, shared nodes),

and prints a Markdown table with the time per binding and the growth ratios: linear
inference means the time ratio between consecutive sizes stays close to the size ratio (10).

Usage: ``python benchmarks/typecheck.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import platform
import time

import relay_ref as rr
from relay_ref.ir.module import IRModule
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (best is kept)")
    args = parser.parse_args()
    rr.infer_types(let_chain_module(100))  # warm up imports and the op registry

    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"best of {args.repeat} runs, CPU time\n")
    print("| program | size | time (s) | µs / binding | time ratio | size ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, build in (("let chain", let_chain_module), ("nested graph", graph_chain_module)):
        previous = None
        for n in SIZES:
            seconds = best_time(build(n), args.repeat)
            ratio = "" if previous is None else f"{seconds / previous:.1f}"
            size_ratio = "" if previous is None else "10"
            print(f"| {label} | {n:,} | {seconds:.3f} | {seconds / n * 1e6:.1f} | {ratio} "
                  f"| {size_ratio} |")
            previous = seconds
    mod = resnet_like_module()
    seconds = best_time(mod, args.repeat)
    nodes = len(rr.infer_types(mod).checked_types)
    print(f"| resnet50-sized graph | {nodes} nodes | {seconds:.3f} | "
          f"{seconds / nodes * 1e6:.1f} / node | | |")


if __name__ == "__main__":
    main()
