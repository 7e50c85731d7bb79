"""The executor's work pool: how CPU kernels use the cores (issue 30, "one way to use the
cores").

Contract (fixed; the implementation behind it may change):

* ``run_tasks(count, task)`` calls ``task(i)`` once for every ``i`` in ``range(count)``, on
  the calling thread and on the pool's workers, and returns when all have returned. Tasks
  are taken dynamically (a shared counter), so a descheduled worker never holds the others
  up: whoever is free takes the next one. ``task`` must release the GIL for the pool to
  help (a NumPy BLAS call, a ``nogil=True`` numba kernel); tasks must write disjoint
  outputs. An exception in any task is re-raised in the caller after every task started
  has finished.
* ``threads()`` is the number of threads that run tasks (the caller included), 1 = serial:
  ``run_tasks`` then runs every task on the caller, in order.
* ``set_threads(n)`` changes it (n >= 1).

Until the thread-policy work lands, this is the serial implementation of that contract.
"""

from __future__ import annotations

from collections.abc import Callable

_THREADS = 1


def threads() -> int:
    """Threads that run tasks, the caller included."""
    return _THREADS


def set_threads(n: int) -> None:
    """Run tasks on ``n`` threads (the caller included); ``n >= 1``."""
    global _THREADS
    if n < 1:
        raise ValueError(f"threads must be >= 1, not {n}")
    _THREADS = n


def run_tasks(count: int, task: Callable[[int], None]) -> None:
    """``task(i)`` for every ``i`` in ``range(count)`` (see the module docstring)."""
    for i in range(count):
        task(i)
