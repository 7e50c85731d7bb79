"""Competing load for benchmarks: ``with competing(n): ...`` runs ``n`` busy processes
(pure-Python spin loops, one core each) for the block's duration (issue 30: a loaded
machine, both runtimes measured under the same load).

Invariants: the processes are stopped when the block exits, by an exception or Ctrl-C
included (terminate, then kill after a second); each also exits by itself within ~0.1 s
once its parent is gone (it polls its parent's pid), so a benchmark killed by SIGKILL
leaves no spinning process behind on a shared machine. ``n == 0`` starts nothing.
``loadavg()`` is the 1-minute load average, for the note printed with each table;
``busy(n)`` says "1 busy process" / "n busy processes"; ``at_least(k)`` is an argparse
type (an int >= k), ``process_count = at_least(0)`` the one of the benchmarks' ``--load N``.

As a script, ``python benchmarks/load.py N --seconds S`` runs ``N`` busy processes for ``S``
seconds (default 60; Ctrl-C stops them early), to load the machine for another command.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

# spins in slices of ~0.05 s and leaves when its parent is no longer the one that started
# it (the parent's pid is passed in: after the parent dies, getppid() changes)
_SPIN = """
import os, sys, time
parent = int(sys.argv[1])
while os.getppid() == parent:
    end = time.perf_counter() + 0.05
    while time.perf_counter() < end:
        pass
"""


@contextlib.contextmanager
def competing(n: int) -> Iterator[list[subprocess.Popen]]:
    """``n`` busy processes while the block runs (see the module docstring)."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", _SPIN, str(os.getpid())],
                                          stdin=subprocess.DEVNULL))
        if procs:
            time.sleep(0.3)  # let them start spinning before anything is measured
        yield procs
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def loadavg() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def busy(n: int) -> str:
    """``"1 busy process"``, ``"3 busy processes"``."""
    return f"{n} busy process" + ("" if n == 1 else "es")


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an int >= ``minimum``."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {n}")
        return n
    return parse


#: argparse type for ``--load N``: an int >= 0
process_count = at_least(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Load the machine: N busy processes (pure-Python spin loops, one core "
                    "each) for S seconds, stopped on exit or Ctrl-C. The benchmarks' "
                    "--load N uses the same processes (competing()).")
    parser.add_argument("n", type=process_count, metavar="N", help="busy processes")
    parser.add_argument("--seconds", type=float, default=60.0, metavar="S",
                        help="how long they run (default 60)")
    args = parser.parse_args(argv)
    if not args.seconds >= 0:  # NaN too
        parser.error(f"--seconds: must be at least 0, got {args.seconds}")
    print(f"{busy(args.n)} for {args.seconds:g} s; load average (1 min) {loadavg():.2f}",
          file=sys.stderr)
    try:
        with competing(args.n):
            time.sleep(args.seconds)
    except KeyboardInterrupt:
        pass
    print(f"done; load average (1 min) {loadavg():.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
