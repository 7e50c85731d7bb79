"""Python's cyclic garbage collector held back while compiled code runs.

Compiled code that builds ADT values (a 4 000-element ``List`` is 8 000 tracked objects:
a ``ConstructorValue`` and its fields tuple each) makes CPython's collector run its oldest
generation over everything alive (the executor's and numba's own objects included) again
and again: measured on ``benchmarks/control_flow.py``'s list program, three quarters of a
call (19 ms against 4.2 ms, quiet machine). During a call the thresholds are raised to
``CALL_THRESHOLDS`` (at least; the user's higher ones stand): young collections run ten
times less often and the oldest generation practically never (measured: as fast as
disabling the collector, 4.2 ms against 4.15). Values the generated code drops are freed
by reference counting, which this leaves alone; cycles that die young (a recursive closure
made and dropped in a loop) are still collected during the call, so memory stays bounded;
only cyclic garbage that survived the young generations waits for the end of the call.

Invariants:

* ``enter``/``leave`` (and ``paused()``) are reentrant and thread-safe: a count of the calls
  running (in any thread) under one lock; the first to enter records the thresholds and
  raises them, the last to leave restores what it recorded. ``Executable`` calls them in a
  ``try``/``finally``: restored on every path, exceptions included.
* Whether the collector is enabled is never touched: a collector the user disabled stays
  disabled. (Thresholds another thread sets while a call runs are overwritten when the last
  call returns.)
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["CALL_THRESHOLDS", "enter", "leave", "paused"]

#: the collector's thresholds (at least) while compiled code runs: young generation every
#: 10 000 net allocations instead of 700, the oldest after 1 000 middle collections
CALL_THRESHOLDS = (10_000, 10, 1_000)

_lock = threading.Lock()
_running = 0  # calls between ``enter`` and ``leave`` (all threads)
_saved: tuple[int, ...] = ()  # the thresholds when the first of them entered


def enter() -> None:
    """Start of a call (pair it with ``leave`` in a ``finally``)."""
    global _running, _saved
    with _lock:
        if _running == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(*(max(a, b) for a, b in zip(_saved, CALL_THRESHOLDS,
                                                           strict=False)))
        _running += 1


def leave() -> None:
    """End of a call: the thresholds restored when it was the last one running."""
    global _running
    with _lock:
        _running -= 1
        if _running == 0:
            gc.set_threshold(*_saved)


@contextmanager
def paused() -> Iterator[None]:
    """The collector held back for the duration of the block (see the module docstring)."""
    enter()
    try:
        yield
    finally:
        leave()
