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
* ``set_threads(n)`` changes it (n >= 1) for the calling thread: the count is per thread
  (every thread starts at 1), so executables with different policies running on two
  threads at once each keep their own.

Implementation. ``threads() - 1`` daemon workers, created on the first ``run_tasks`` that
needs them and kept: the pool never shrinks (after a call with 64 threads, 63 workers stay
until the process exits, asleep: no CPU, a thread's stack each); each sleeps on its own
raw lock (no spinning: on a busy machine a spinning worker steals the core the caller
needs). A call publishes a ``_Job`` (the task,
an ``itertools.count`` as the shared counter: ``next`` on it is atomic under the GIL),
wakes at most ``count - 1`` workers and runs tasks itself. A worker woken late finds the
counter exhausted and goes back to sleep: nobody waits for a worker that took no task.
Each participant adds the tasks it ran to ``done`` once, after its loop; whoever brings it
to ``count`` releases the job's ``finished`` lock if the caller is waiting on it.

Invariants: one job at a time. A ``run_tasks`` made while a job runs (a task calling it, or
another thread's executable) runs its tasks serially on its own thread, so nesting never
deadlocks. After an exception, tasks not yet started are skipped (still counted).
Cost per call, measured on the 2-core box with 2 threads: ~0.2 µs with one task (a plain
call), ~2 µs for 2-4 empty tasks (a worker woken; the caller often runs them all first).
``tests/executor/test_threads.py`` checks the semantics.
"""

from __future__ import annotations

import _thread
import itertools
import threading
from collections.abc import Callable

__all__ = ["run_tasks", "set_threads", "threads"]

class _Count(threading.local):
    n = 1  # every thread starts serial


_COUNT = _Count()


def threads() -> int:
    """Threads that run tasks for ``run_tasks`` called on this thread, the caller
    included."""
    return _COUNT.n


def set_threads(n: int) -> None:
    """Run this thread's tasks on ``n`` threads (the caller included); ``n >= 1``."""
    if type(n) is not int or n < 1:
        raise ValueError(f"threads must be an int >= 1, not {n!r}")
    _COUNT.n = n


class _Job:
    """One ``run_tasks`` call: its tasks, the shared counter and the completion count."""

    __slots__ = ("count", "task", "indices", "done", "lock", "finished", "waiting", "error")

    def __init__(self, count: int, task: Callable[[int], None]) -> None:
        self.count = count
        self.task = task
        self.indices = itertools.count()
        self.done = 0  # tasks finished (or skipped after an error); under ``lock``
        self.lock = _thread.allocate_lock()
        self.finished = _thread.allocate_lock()
        self.finished.acquire()  # released by whoever brings ``done`` to ``count``
        self.waiting = False  # the caller waits on ``finished`` (set under ``lock``)
        self.error: BaseException | None = None

    def work(self) -> bool:
        """Run tasks until the counter passes ``count``; True when this brought ``done`` to
        ``count``."""
        count, task, indices = self.count, self.task, self.indices
        ran = 0
        for i in indices:
            if i >= count:
                break
            if self.error is None:
                try:
                    task(i)
                except BaseException as err:  # noqa: BLE001 - re-raised by the caller
                    if self.error is None:
                        self.error = err
            ran += 1
        if not ran:
            return False
        with self.lock:
            self.done += ran
            return self.done == count


class _Pool:
    """The workers: one raw lock each to sleep on, and the job they serve."""

    def __init__(self) -> None:
        self.wakes: list[_thread.LockType] = []
        self.job: _Job | None = None
        self.busy = _thread.allocate_lock()  # held while a job runs (one at a time)

    def grow(self, workers: int) -> None:
        while len(self.wakes) < workers:
            wake = _thread.allocate_lock()
            wake.acquire()
            self.wakes.append(wake)
            threading.Thread(target=self._serve, args=(wake,), daemon=True,
                             name=f"relay-ref-pool-{len(self.wakes)}").start()

    def _serve(self, wake: _thread.LockType) -> None:
        while True:
            wake.acquire()  # released by ``run`` for each job
            job = self.job
            if job is not None and job.work():
                with job.lock:
                    if job.waiting:
                        job.finished.release()
                    job.waiting = False

    def run(self, count: int, task: Callable[[int], None], workers: int) -> None:
        job = _Job(count, task)
        self.grow(workers)
        self.job = job
        for wake in self.wakes[:workers]:
            # only ``run`` releases, only the worker acquires: "locked" means it sleeps
            # (or is about to) and needs waking; unlocked means a wake is still pending,
            # and the worker reads ``self.job`` (this job) after consuming it
            if wake.locked():
                wake.release()
        last = job.work()
        if not last:
            with job.lock:
                pending = job.done != count
                job.waiting = pending
            if pending:
                job.finished.acquire()
        self.job = None
        if job.error is not None:
            raise job.error


_POOL = _Pool()


def run_tasks(count: int, task: Callable[[int], None]) -> None:
    """``task(i)`` for every ``i`` in ``range(count)`` (see the module docstring)."""
    n = _COUNT.n
    if n == 1 or count <= 1:
        for i in range(count):
            task(i)
        return
    pool = _POOL
    if not pool.busy.acquire(False):  # nested, or another thread's job: serially
        for i in range(count):
            task(i)
        return
    try:
        pool.run(count, task, min(n, count) - 1)
    finally:
        pool.busy.release()
