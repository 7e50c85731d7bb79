"""Parse + print throughput of the Relay text format on a large generated module.

    python benchmarks/parse.py [--defs N]

Generates a module of >= 10 000 lines mixing the common constructs (let chains, operator
calls with attributes, binary operators, graph bindings, fn literals, if, match on the
prelude's List, tuples), then times parse, print (astext) and re-parse, and prints a table
in KB/s (best of 3). Results are recorded in benchmarks/README.md ("Parse/print").
"""

from __future__ import annotations

import argparse
import platform
import time

import relay_ref as rr
from relay_ref import parse  # the prelude on, as users parse
from relay_ref.syntax.printer import astext


def generate(defs: int) -> str:
    parts = ['#[version = "0.0.5"]\n']
    for i in range(defs):
        parts.append(f"""
def @layer{i}(%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(16, 16, 3, 3), float32],
             %xs: List[int32]) -> (Tensor[(1, 16, 8, 8), float32], int32) {{
  let %c = nn.conv2d(%x, %w, padding=[1, 1], channels=16, kernel_size=[3, 3]);
  %0 = nn.relu(%c);
  %1 = add(%0, %0);
  let %s = %1 * 2f - %0 / 3f;
  let %f = fn (%a: int32, %b: int32) -> int32 {{ %a * %b + 1 }};
  let %n = match (%xs) {{
    Cons(%h, Cons(_, %t)) => {{ %f(%h, 2) }},
    Cons(%h, Nil) => %h,
    Nil => 0,
  }};
  let %m = if (%n > 10) {{ %n - 10 }} else {{ %n + @layer_helper(%n) }};
  (%s, %m)
}}
""")
    parts.append("\ndef @layer_helper(%k: int32) -> int32 {\n  %k * %k\n}\n")
    return "".join(parts)


def best_of(n: int, fn) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(n):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--defs", type=int, default=700)
    args = ap.parse_args()
    text = generate(args.defs)
    lines = text.count("\n")
    kb = len(text.encode()) / 1024
    parse("def @main() { 1 }")  # build the grammar tables once
    t_parse, mod = best_of(3, lambda: parse(text, "bench.relay"))
    t_print, printed = best_of(3, lambda: astext(mod))
    pkb = len(printed.encode()) / 1024
    t_reparse, again = best_of(3, lambda: parse(printed, "printed.relay"))
    assert rr.alpha_equal(mod, again)
    print(f"module: {lines} lines, {kb:.0f} KB ({args.defs} defs); "
          f"Python {platform.python_version()}")
    print(f"{'phase':<10} {'seconds':>8} {'KB':>8} {'KB/s':>8}")
    for name, secs, size in (("parse", t_parse, kb), ("print", t_print, pkb),
                             ("re-parse", t_reparse, pkb)):
        print(f"{name:<10} {secs:8.3f} {size:8.0f} {size / secs:8.0f}")


if __name__ == "__main__":
    main()
