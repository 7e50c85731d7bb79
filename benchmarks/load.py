"""Competing load for benchmarks: ``with competing(n): ...`` runs ``n`` busy processes
(pure-Python spin loops, one core each) for the block's duration (issue 30: a loaded
machine, both runtimes measured under the same load).

Invariants: the processes are stopped when the block exits, by an exception or Ctrl-C
included (terminate, then kill after a second); each also exits by itself within ~0.1 s
once its parent is gone (it polls its parent's pid), so a benchmark killed by SIGKILL
leaves no spinning process behind on a shared machine. ``n == 0`` starts nothing.
``loadavg()`` is the 1-minute load average, for the note printed with each table.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator

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
