"""How kernel drivers cut their work into ``parallel.run_tasks`` tasks.

A driver (pooling, softmax, reductions) calls one serial ``nogil`` numba kernel on a range
``[lo, hi)`` of independent items (planes, rows). Small work is one plain call on the
caller; large work is split into row blocks run by the work pool. No numba ``prange``: a
``parallel=True`` kernel costs seconds of compiling on the first call (issue 30, cold
start) and wakes an OpenMP pool of its own; the serial kernel compiles once and serves both
paths.

Contract:

* ``task_count(items, work)`` is 1 when the pool is serial or the whole job is under two
  tasks' worth (``MIN_TASK_WORK`` elements each), else between 2 and ``4 * threads()``
  (several tasks per thread: the pool balances them dynamically), never more than
  ``items``.
* ``bounds(i, count, items)`` is the ``i``-th of ``count`` contiguous ranges that cover
  ``[0, items)`` in order, their sizes differing by at most one.
* ``run_blocks(items, work, kernel)`` calls ``kernel(lo, hi)`` on those ranges: once on
  the caller for ``[0, items)`` when ``task_count`` is 1, else as the pool's tasks.
"""

from __future__ import annotations

from collections.abc import Callable

from relay_ref.compute.cpu import parallel

#: elements a task should touch at least: below this a split does not pay (a task of ~10 us
#: against a few us to hand it to a worker)
MIN_TASK_WORK = 1 << 15


def task_count(items: int, work: int) -> int:
    """Tasks for ``items`` independent items of about ``work`` elements each."""
    threads = parallel.threads()
    if threads == 1:
        return 1
    return max(1, min(items, items * work // MIN_TASK_WORK, 4 * threads))


def bounds(i: int, count: int, items: int) -> tuple[int, int]:
    """The ``i``-th of ``count`` near-equal ranges of ``[0, items)``."""
    return i * items // count, (i + 1) * items // count


def run_blocks(items: int, work: int, kernel: Callable[[int, int], object]) -> None:
    """``kernel(lo, hi)`` over ``[0, items)``: one call, or ``task_count`` blocks as tasks."""
    count = task_count(items, work)
    if count == 1:
        kernel(0, items)
        return

    def task(i: int) -> None:
        kernel(*bounds(i, count, items))

    parallel.run_tasks(count, task)
