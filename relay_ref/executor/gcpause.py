"""Python's cyclic garbage collector paused while compiled code runs.

Compiled code that builds ADT values (a 4 000-element ``List`` is 8 000 tracked objects:
a ``ConstructorValue`` and its fields tuple each) makes CPython's collector run its young
generations every 700 allocations and its oldest one repeatedly over everything alive
(the executor's and numba's own objects included): measured on ``benchmarks/
control_flow.py``'s list program, about two thirds of a call. Values the generated code
drops are freed by reference counting, which the pause leaves alone; only cycles (a
recursive closure, a reference cell holding itself) wait for the collector, and it runs
again, at its usual thresholds, once the outermost call returns.

Invariants:

* ``paused()`` is reentrant and thread-safe: a count of the calls running (in any thread)
  under one lock; the first to enter records whether the collector was enabled and disables
  it, the last to leave enables it again if it was. The state is restored on every path
  (a ``try``/``finally`` around the call), exceptions included.
* The user's own choice stands outside calls: a collector disabled before the outermost
  call stays disabled. (A ``gc.enable()``/``gc.disable()`` made by another thread while a
  call runs is overridden when the last call returns.)
* A call never runs a collection itself; cyclic garbage made during one call is collected
  after it (memory held by such cycles grows for the call's duration only).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused"]

_lock = threading.Lock()
_running = 0  # calls inside ``paused`` (all threads)
_was_enabled = False  # the collector's state when the first of them entered


def enter() -> None:
    """Start of a call (pair it with ``leave`` in a ``finally``)."""
    global _running, _was_enabled
    with _lock:
        if _running == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _running += 1


def leave() -> None:
    """End of a call: the collector restored when it was the last one running."""
    global _running
    with _lock:
        _running -= 1
        if _running == 0 and _was_enabled:
            gc.enable()


@contextmanager
def paused() -> Iterator[None]:
    """The collector paused for the duration of the block (see the module docstring)."""
    enter()
    try:
        yield
    finally:
        leave()
