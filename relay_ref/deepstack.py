"""Running inherently recursive work (checking, evaluating) without hitting Python's limits.

``run_deep(job)`` runs ``job()`` on a fresh thread whose stack is large (1 GiB, reserved
address space, not committed memory) with the recursion limit raised while any such thread
runs, and returns its result or re-raises its exception in the caller.

Invariants:
* The recursion limit is raised only while at least one deep worker runs and is restored
  when the last one ends, so callers (and test frameworks) never observe a changed limit.
* A ``run_deep`` called from inside a deep worker runs ``job`` directly (already deep).
* The caller waits in short slices, so ``KeyboardInterrupt`` reaches it promptly; it then
  calls ``on_interrupt`` (which should make the worker stop), waits briefly, and re-raises.
* If the platform refuses a big-stack thread, ``job`` runs on the caller's thread with the
  default limit (shallower programs still work; deep ones raise ``RecursionError``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

STACK_BYTES = 1 << 30
RECURSION_LIMIT = 2_000_000

_R = TypeVar("_R")
_lock = threading.Lock()
_local = threading.local()
_workers = 0
_saved_limit = 1000


def in_deep_worker() -> bool:
    """True on a thread started by ``run_deep``."""
    return getattr(_local, "deep", False)


def _enter() -> None:
    global _workers, _saved_limit
    if _workers == 0:
        _saved_limit = sys.getrecursionlimit()
        if _saved_limit < RECURSION_LIMIT:
            sys.setrecursionlimit(RECURSION_LIMIT)
    _workers += 1


def _leave() -> None:
    global _workers
    _workers -= 1
    if _workers == 0:
        sys.setrecursionlimit(_saved_limit)


def run_deep(job: Callable[[], _R], *, on_interrupt: Callable[[], None] | None = None,
             name: str = "relay-deep") -> _R:
    """Run ``job()`` on a big-stack thread; see the module docstring."""
    if in_deep_worker():
        return job()
    box: dict[str, object] = {}

    def target() -> None:
        _local.deep = True
        try:
            box["value"] = job()
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            box["error"] = err

    with _lock:
        old = threading.stack_size()
        try:
            threading.stack_size(STACK_BYTES)
            worker: threading.Thread | None = threading.Thread(target=target, name=name,
                                                               daemon=True)
        except (RuntimeError, ValueError, MemoryError):
            worker = None
        if worker is not None:
            _enter()
            try:
                worker.start()
            except (RuntimeError, MemoryError):
                _leave()
                worker = None
        threading.stack_size(old)
    if worker is None:
        return job()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        worker.join(2.0)
        raise
    finally:
        with _lock:
            _leave()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
