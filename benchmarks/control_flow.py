"""Control flow, closures, ADTs and refs through ``rr.compile`` and ``rr.evaluate`` against
the same algorithm in plain Python / NumPy.

    python benchmarks/control_flow.py [--rounds 7] [--only fib rnn ...] [--markdown]

Programs (Relay text, parsed with ``rr.parse``; the prelude supplies ``List``, ``@map`` and
``@foldl``):

* ``fib(20)`` on int32: the doubly recursive ``@fib``; Python: the same recursion on ints.
* ``List`` of 4 000: built by a tail-recursive ``@build``, then ``@map(x * 2)`` and
  ``@foldl(+)``; Python: the same cons cells as ``(head, tail)`` tuples, built by a loop
  (a self tail call is a loop), a recursive map, foldl as a loop.
* ``ref`` 4 000 times: a tail-recursive ``@count`` doing ``r := !r + i``; Python: a loop
  updating a one-element list.
* closure 20 000 times: ``@apply_n(f, n, x)`` applies ``fn (y) { y + k }`` n times
  (tail-recursive, higher-order); Python: a loop calling a ``lambda``.
* RNN 1 000 steps: ``h = tanh(nn.dense(h, W) + b)`` on (1,64) by tail recursion; NumPy: a
  loop of ``np.tanh(h @ W.T + b)``.

The Python baselines compute on Python ints without int32 wrap-around (no value here
overflows), the fastest way to write them. Each program is compiled once (``rr.compile``;
the compile time is printed) and run once before timing; the three results must be equal
(ints exactly, the RNN within rtol 1e-5).
Rounds interleave plain, compiled and evaluated runs with 0.12 s sleeps between them
(../shared/reference/performance.md); a measurement is the mean of a loop lasting ~50 ms
(at least one run); the ratios are medians of per-round ratios to plain Python.
Results are recorded in benchmarks/README.md ("Executor: control flow").
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relay_ref as rr  # noqa: E402

SLEEP = 0.12
TARGET_SECONDS = 0.05
#: issue 30's targets, compiled / plain: every program <= 2x, fib <= 1.5x
TARGET, FIB_TARGET = 2.0, 1.5

FIB = """#[version = "0.0.5"]
def @fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }
}
def @main(%n: int32) -> int32 { @fib(%n) }
"""

LIST = """#[version = "0.0.5"]
def @build(%i: int32, %acc: List[int32]) -> List[int32] {
  if (%i == 0) { %acc } else { @build(%i - 1, Cons(%i, %acc)) }
}
def @main(%n: int32) -> int32 {
  let %xs = @build(%n, Nil);
  let %ys = @map(fn (%x: int32) -> int32 { %x * 2 }, %xs);
  @foldl(fn (%acc: int32, %y: int32) -> int32 { %acc + %y }, 0, %ys)
}
"""

REF = """#[version = "0.0.5"]
def @count(%r: ref(int32), %i: int32) -> () {
  if (%i == 0) { () } else {
    ref_write(%r, ref_read(%r) + %i);
    @count(%r, %i - 1)
  }
}
def @main(%n: int32) -> int32 {
  let %r = ref(0);
  let %u = @count(%r, %n);
  ref_read(%r)
}
"""

CLOSURE = """#[version = "0.0.5"]
def @apply_n(%f: fn (int32) -> int32, %n: int32, %x: int32) -> int32 {
  if (%n == 0) { %x } else { @apply_n(%f, %n - 1, %f(%x)) }
}
def @main(%n: int32, %k: int32) -> int32 {
  let %add_k = fn (%y: int32) -> int32 { %y + %k };
  @apply_n(%add_k, %n, 0)
}
"""

RNN = """#[version = "0.0.5"]
def @rnn(%i: int32, %h: Tensor[(1, 64), float32], %w: Tensor[(64, 64), float32],
         %b: Tensor[(64), float32]) -> Tensor[(1, 64), float32] {
  if (%i == 0) { %h } else { @rnn(%i - 1, tanh(add(nn.dense(%h, %w), %b)), %w, %b) }
}
def @main(%n: int32, %h: Tensor[(1, 64), float32], %w: Tensor[(64, 64), float32],
          %b: Tensor[(64), float32]) -> Tensor[(1, 64), float32] {
  @rnn(%n, %h, %w, %b)
}
"""


def py_fib(n: int) -> int:
    return n if n < 2 else py_fib(n - 1) + py_fib(n - 2)


def py_list(n: int) -> int:
    def map_(f: Callable[[int], int], xs: tuple | None) -> tuple | None:
        return None if xs is None else (f(xs[0]), map_(f, xs[1]))

    xs = None
    while n != 0:  # @build: a self tail call
        xs, n = (n, xs), n - 1
    ys = map_(lambda x: x * 2, xs)
    acc = 0
    while ys is not None:  # @foldl: a self tail call
        acc, ys = acc + ys[0], ys[1]
    return acc


def py_ref(n: int) -> int:
    r = [0]
    while n != 0:
        r[0] = r[0] + n
        n -= 1
    return r[0]


def py_closure(n: int, k: int) -> int:
    def apply_n(f: Callable[[int], int], n: int, x: int) -> int:
        while n != 0:
            n, x = n - 1, f(x)
        return x

    return apply_n(lambda y: y + k, n, 0)


def np_rnn(n: int, h: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    wt = w.T
    for _ in range(n):
        h = np.tanh(h @ wt + b)
    return h


@dataclass(frozen=True)
class Program:
    name: str
    text: str
    args: tuple[Any, ...]
    plain: Callable[[], Any]
    baseline: str


def programs(rng: np.random.Generator) -> list[Program]:
    h = rng.standard_normal((1, 64)).astype("float32")
    w = (rng.standard_normal((64, 64)) / 8).astype("float32")
    b = (rng.standard_normal(64) * 0.1).astype("float32")
    return [
        Program("fib(20), int32", FIB, (20,), lambda: py_fib(20), "recursion on ints"),
        Program("List 4000: build, @map, @foldl", LIST, (4000,), lambda: py_list(4000),
                "cons tuples: loop, recursive map, loop"),
        Program("ref updated 4000 times", REF, (4000,), lambda: py_ref(4000),
                "loop on a 1-element list"),
        Program("closure applied 20000 times", CLOSURE, (20000, 3),
                lambda: py_closure(20000, 3), "loop calling a lambda"),
        Program("RNN 1000 steps, (1,64)", RNN, (1000, h, w, b),
                lambda: np_rnn(1000, h, w, b), "NumPy loop"),
    ]


def same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6)
    return a.shape == b.shape and bool(np.all(a == b))


def per_run(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


@dataclass
class Row:
    program: Program
    compile_s: float = 0.0
    plain: float = 0.0
    compiled: float = 0.0
    evaluated: float = 0.0
    r_compiled: float = 0.0
    r_evaluated: float = 0.0
    note: str = ""


def run(program: Program, rounds: int, progress: Progress, task: Any) -> Row:
    row = Row(program)
    mod = rr.parse(program.text)
    try:
        start = time.perf_counter()
        exe = rr.compile(mod)
        row.compile_s = time.perf_counter() - start
        got = exe(*program.args)
    except Exception as err:  # noqa: BLE001 - an executor failure is reported, not fatal
        row.note = f"compile/run error: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
        progress.advance(task, rounds)
        return row
    want = program.plain()
    oracle = rr.evaluate(mod, *program.args)
    if not (same(got, want) and same(oracle, want)):
        row.note = f"WRONG: compiled {got!r}, evaluated {oracle!r}, plain {want!r}"
        progress.advance(task, rounds)
        return row
    impls: list[tuple[str, Callable[[], object]]] = [
        ("plain", program.plain), ("compiled", lambda: exe(*program.args)),
        ("evaluated", lambda: rr.evaluate(mod, *program.args))]
    counts = {k: max(1, int(TARGET_SECONDS / max(per_run(f, 1), 1e-7))) for k, f in impls}
    times: dict[str, list[float]] = {k: [] for k, _ in impls}
    for r in range(rounds):
        for label, fn in (impls if r % 2 == 0 else impls[::-1]):
            time.sleep(SLEEP)
            times[label].append(per_run(fn, counts[label]))
        progress.advance(task)
    row.plain = statistics.median(times["plain"])
    row.compiled = statistics.median(times["compiled"])
    row.evaluated = statistics.median(times["evaluated"])
    row.r_compiled = statistics.median(c / p for c, p in zip(times["compiled"], times["plain"],
                                                              strict=True))
    row.r_evaluated = statistics.median(e / p for e, p in zip(times["evaluated"],
                                                              times["plain"], strict=True))
    return row


HEADS = ["program", "plain ms", "plain baseline", "compiled ms", "compiled / plain",
         "evaluate ms", "evaluate / plain", "compile s", "target <= 2x (fib 1.5x)"]


def table_rows(rows: list[Row]) -> list[list[str]]:
    body = []
    for row in rows:
        p = row.program
        if row.note:
            body.append([p.name, "-", p.baseline, "-", "-", "-", "-", f"{row.compile_s:.2f}",
                         row.note])
            continue
        limit = FIB_TARGET if p.name.startswith("fib") else TARGET
        verdict = f"<= {limit:g}x: " + ("met" if row.r_compiled <= limit else "missed")
        body.append([p.name, f"{row.plain * 1e3:.3f}", p.baseline, f"{row.compiled * 1e3:.3f}",
                     f"{row.r_compiled:.2f}x", f"{row.evaluated * 1e3:.1f}",
                     f"{row.r_evaluated:.1f}x", f"{row.compile_s:.2f}", verdict])
    return body


def main() -> None:
    parser = argparse.ArgumentParser(
        description="Control flow, closures, ADTs and refs through rr.compile and rr.evaluate "
        "against the same algorithm in plain Python / NumPy.",
        epilog="Times are medians over rounds of wall-clock ms per run.")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--only", nargs="+", metavar="WORD", default=None,
                        help="run only the programs whose name contains one of these words")
    parser.add_argument("--sources", action="store_true",
                        help="also print each program's generated Python (exe.source)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))  # py_list's recursive map
    selected = [p for p in programs(np.random.default_rng(0))
                if args.only is None or any(w in p.name for w in args.only)]
    rows = []
    with Progress(transient=True) as progress:
        task = progress.add_task("programs", total=len(selected) * args.rounds)
        for program in selected:
            progress.update(task, description=program.name)
            rows.append(run(program, args.rounds, progress, task))
    note = f"Python {platform.python_version()}, numpy {np.__version__}; {args.rounds} rounds"
    if args.markdown:
        print("| " + " | ".join(HEADS) + " |")
        print("|" + "---|" * len(HEADS))
        for line in table_rows(rows):
            print("| " + " | ".join(line) + " |")
        print(f"\n{note}")
    else:
        table = Table(title="control flow: rr.compile and rr.evaluate vs plain Python")
        for h in HEADS:
            table.add_column(h, justify="left" if h in ("program", "plain baseline") or
                             h.startswith("target") else "right")
        for line in table_rows(rows):
            table.add_row(*line)
        console = Console(width=max(Console().width, 170))
        console.print(table)
        console.print(note)
    if args.sources:
        for program in selected:
            print(f"\n== {program.name}\n{rr.compile(rr.parse(program.text)).source}")


if __name__ == "__main__":
    main()
