"""Speed of the definitional interpreter against the same programs in plain Python.

    python benchmarks/interpreter.py            # fib(25), map/foldl over 100 000 elements
    python benchmarks/interpreter.py --quick    # fib(20), 20 000 elements

Two Python baselines: plain ints (what a Python programmer would write) and the same
arithmetic on 0-d NumPy int32 arrays (the values the interpreter computes with, so the
ratio shows the interpreter's own overhead). Best of ``--repeat`` runs, in CPU seconds
(``time.process_time``), which other processes on a shared machine disturb less than wall
time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import relay_ref as rr  # noqa: E402
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


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.process_time()  # CPU time: robust on a shared, busy machine
        result = fn()
        times.append(time.process_time() - start)
    return min(times), result


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n_fib, n_list = (20, 20_000) if args.quick else (25, 100_000)
    rows = []

    fib = rr.infer_types(rr.parse(FIB))
    t_relay, v_relay = best(lambda: rr.evaluate(fib, n_fib), args.repeat)
    t_py, v_py = best(lambda: py_fib(n_fib), args.repeat)
    sys.setrecursionlimit(10_000)
    t_np, v_np = best(lambda: np_fib(np.array(n_fib, "int32")), args.repeat)
    assert int(v_relay) == v_py == int(v_np)
    rows.append((f"fib({n_fib}), int32 scalars", t_relay, t_py, t_np))

    mf = rr.infer_types(rr.parse(MAP_FOLD))
    items = list(range(n_list))
    xs = relay_list(items, mf)
    t_relay, v_relay = best(lambda: rr.evaluate(mf, xs), args.repeat)
    t_py, v_py = best(lambda: py_map_fold(items), args.repeat)
    arrays = [np.array(i, "int32") for i in items]
    t_np, v_np = best(lambda: np_map_fold(arrays), args.repeat)
    assert int(v_relay) == v_py == int(v_np)
    rows.append((f"@map + @foldl, {n_list} elements", t_relay, t_py, t_np))

    print(f"{'program':34} {'relay_ref':>10} {'Python':>9} {'ratio':>7} "
          f"{'Py+NumPy':>9} {'ratio':>7}")
    for name, t_r, t_p, t_n in rows:
        print(f"{name:34} {t_r:9.3f}s {t_p:8.4f}s {t_r / t_p:6.0f}x {t_n:8.3f}s "
              f"{t_r / t_n:6.1f}x")


if __name__ == "__main__":
    main()
