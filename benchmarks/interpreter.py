"""Speed of the definitional interpreter against the same programs in plain Python.

    python benchmarks/interpreter.py            # fib(25), map/foldl over 100 000 elements
    python benchmarks/interpreter.py --quick    # fib(20), 20 000 elements

Python baselines: plain ints (what a Python programmer would write: for map/foldl both the
idiomatic list + loop and the same recursion over cons cells) and the same arithmetic on 0-d
NumPy int32 arrays (the values the interpreter computes with, so that ratio shows the
interpreter's own overhead). Every time is the median of ``--repeat`` runs in CPU seconds
(``time.process_time``), which other processes on a shared machine disturb less than wall
time; relay_ref's median wall time is printed too. Ratios are of CPU medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relay_ref as rr  # noqa: E402
from relay_ref.deepstack import run_deep  # noqa: E402
from relay_ref.interpreter.values import ConstructorValue  # noqa: E402

FIB = """#[version = "0.0.5"]
def @fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }
}
def @main(%n: int32) -> int32 { @fib(%n) }
"""

MAP_FOLD = """#[version = "0.0.5"]
def @main(%xs: List[int32]) -> int32 {
  let %ys = @map(fn (%x: int32) -> int32 { %x * 2 }, %xs);
  @foldl(fn (%acc: int32, %y: int32) -> int32 { %acc + %y }, 0, %ys)
}
"""


def measure(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """Median CPU seconds, median wall seconds and the result of ``repeat`` runs of fn."""
    cpu, wall, result = [], [], None
    for _ in range(repeat):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        result = fn()
        cpu.append(time.process_time() - start_cpu)  # CPU time: robust on a busy machine
        wall.append(time.perf_counter() - start_wall)
    return statistics.median(cpu), statistics.median(wall), result


def py_fib(n: int) -> int:
    return n if n < 2 else py_fib(n - 1) + py_fib(n - 2)


ONE, TWO = np.array(1, "int32"), np.array(2, "int32")


def np_fib(n: np.ndarray) -> np.ndarray:
    if np.less(n, TWO):
        return n
    return np.add(np_fib(np.subtract(n, ONE)), np_fib(np.subtract(n, TWO)))


def py_map_fold(xs: list[int]) -> int:
    ys = [x * 2 for x in xs]
    acc = 0
    for y in ys:
        acc = (acc + y + 2**31) % 2**32 - 2**31  # int32 wrap-around, as Relay
    return acc


def py_map_fold_rec(xs: tuple | None) -> int:
    """The Relay program itself: a cons list of ``(head, tail)`` pairs, a recursive map and
    a (tail-)recursive foldl; run on a deep stack like the interpreter (``run_deep``)."""
    def map_(f: Callable[[int], int], xs: tuple | None) -> tuple | None:
        return None if xs is None else (f(xs[0]), map_(f, xs[1]))

    def foldl(f: Callable[[int, int], int], acc: int, xs: tuple | None) -> int:
        return acc if xs is None else foldl(f, f(acc, xs[0]), xs[1])

    ys = map_(lambda x: x * 2, xs)
    return foldl(lambda acc, y: (acc + y + 2**31) % 2**32 - 2**31, 0, ys)


def np_map_fold(xs: list[np.ndarray]) -> np.ndarray:
    ys = [np.multiply(x, TWO) for x in xs]
    acc = np.array(0, "int32")
    for y in ys:
        acc = np.add(acc, y)
    return acc


def relay_list(items: list[int], mod: rr.IRModule) -> ConstructorValue:
    cons, nil = mod.type_definitions["List"].constructors
    out = ConstructorValue(nil, ())
    for item in reversed(items):
        out = ConstructorValue(cons, (np.array(item, "int32"), out))
    return out


def cons_list(items: list[int]) -> tuple | None:
    out = None
    for item in reversed(items):
        out = (item, out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n_fib, n_list = (20, 20_000) if args.quick else (25, 100_000)
    rows = []

    fib = rr.infer_types(rr.parse(FIB))
    t_relay, w_relay, v_relay = measure(lambda: rr.evaluate(fib, n_fib), args.repeat)
    t_py, _, v_py = measure(lambda: py_fib(n_fib), args.repeat)
    sys.setrecursionlimit(10_000)
    t_np, _, v_np = measure(lambda: np_fib(np.array(n_fib, "int32")), args.repeat)
    assert int(v_relay) == v_py == int(v_np)
    rows.append((f"fib({n_fib}), int32 scalars", t_relay, w_relay, "recursion", t_py, t_np))

    mf = rr.infer_types(rr.parse(MAP_FOLD))
    items = list(range(n_list))
    xs = relay_list(items, mf)
    t_relay, w_relay, v_relay = measure(lambda: rr.evaluate(mf, xs), args.repeat)
    t_py, _, v_py = measure(lambda: py_map_fold(items), args.repeat)
    cells = cons_list(items)
    t_rec, _, v_rec = measure(lambda: run_deep(lambda: py_map_fold_rec(cells)), args.repeat)
    arrays = [np.array(i, "int32") for i in items]
    t_np, _, v_np = measure(lambda: np_map_fold(arrays), args.repeat)
    assert int(v_relay) == v_py == v_rec == int(v_np)
    name = f"@map + @foldl, {n_list} elements"
    rows.append((name, t_relay, w_relay, "list + loop", t_py, t_np))
    rows.append((name, t_relay, w_relay, "cons + recursion", t_rec, None))

    print(f"{'program':32} {'relay_ref':>9} {'(wall)':>8}  {'Python ints':27} {'ratio':>6} "
          f"{'NumPy 0-d':>9} {'ratio':>6}")
    for name, t_r, w_r, how, t_p, t_n in rows:
        numpy_cols = f"{t_n:8.3f}s {t_r / t_n:5.1f}x" if t_n is not None else ""
        print(f"{name:32} {t_r:8.3f}s {w_r:7.2f}s  {how:17} {t_p:8.4f}s {t_r / t_p:5.0f}x "
              f"{numpy_cols}")


if __name__ == "__main__":
    main()
