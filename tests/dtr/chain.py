"""Generated logs in the paper's format for the tests (tests/dtr): the linear chain of
Theorem 3.1 (spec/dtr.md §9), unit size and unit cost."""

from __future__ import annotations

import math

from relay_ref.dtr.log import format_line


def chain_log(n: int, size: int = 1, time: int = 1) -> list[str]:
    """A forward pass t1 = f(t0), ..., tn = f(tn-1) over a constant t0, then a backward
    pass gn = df(tn); g(i-1) = b(t(i-1), gi), releasing gi and ti once used: every tensor
    ``size`` bytes, every call ``time`` ns. 2n + 1 calls."""
    lines = [format_line({"ANNOTATION": "START", "INSTRUCTION": "ANNOTATE"}),
             format_line({"INSTRUCTION": "CONSTANT", "NAME": "t0"}),
             format_line({"INSTRUCTION": "MEMORY", "MEMORY": str(size), "NAME": "t0"})]

    def call(name: str, args: list[str], res: str) -> None:
        lines.append(format_line({"ARGS": args, "INSTRUCTION": "CALL", "NAME": name,
                                  "RESULT": [res], "TIME": str(time)}))
        lines.append(format_line({"INSTRUCTION": "MEMORY", "MEMORY": str(size), "NAME": res}))
        lines.append(format_line({"ALIAS": "-1", "INSTRUCTION": "ALIAS", "NAME": res}))

    def release(name: str) -> None:
        lines.append(format_line({"INSTRUCTION": "RELEASE", "NAME": name}))

    for i in range(1, n + 1):
        call("f", [f"t{i - 1}"], f"t{i}")
    lines.append(format_line({"ANNOTATION": "BACKWARD", "INSTRUCTION": "ANNOTATE"}))
    call("df", [f"t{n}"], f"g{n}")
    for i in range(n, 0, -1):
        call("b", [f"t{i - 1}", f"g{i}"], f"g{i - 1}")
        release(f"g{i}")
        release(f"t{i}")
    return lines


def sqrt_budget(n: int, size: int = 1) -> int:
    """Theorem 3.1's budget, 2·ceil(sqrt(n)) tensors."""
    return 2 * math.ceil(math.sqrt(n)) * size
