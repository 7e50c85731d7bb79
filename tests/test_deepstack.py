"""relay_ref.deepstack.run_deep: big-stack workers, recursion limit hygiene, interrupts."""

from __future__ import annotations

import _thread
import sys
import threading
import time

import pytest

from relay_ref.deepstack import RECURSION_LIMIT, in_deep_worker, run_deep


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_deep_python_recursion_runs_and_the_limit_is_restored():
    before = sys.getrecursionlimit()
    assert run_deep(lambda: _depth(200_000)) == 200_000
    assert sys.getrecursionlimit() == before


def test_errors_are_reraised_in_the_caller():
    def boom():
        raise ValueError("from the worker")

    with pytest.raises(ValueError, match="from the worker"):
        run_deep(boom)


def test_nested_run_deep_stays_on_the_same_worker():
    def outer():
        assert in_deep_worker()
        return run_deep(lambda: threading.current_thread().name)

    assert run_deep(outer, name="relay-outer") == "relay-outer"
    assert not in_deep_worker()


def test_interrupt_abandons_a_busy_worker_without_lowering_its_limit():
    before = sys.getrecursionlimit()
    release = threading.Event()
    seen: dict[str, int] = {}

    def stubborn():  # ignores the stop request until released
        release.wait(10)
        seen["limit"] = sys.getrecursionlimit()
        return 1

    stopped = []
    threading.Timer(0.2, _thread.interrupt_main).start()
    with pytest.raises(KeyboardInterrupt):
        run_deep(stubborn, on_interrupt=lambda: stopped.append(True))
    assert stopped == [True]
    assert sys.getrecursionlimit() == RECURSION_LIMIT  # the worker still runs deep
    release.set()
    for _ in range(100):
        if sys.getrecursionlimit() == before:
            break
        time.sleep(0.05)
    assert seen["limit"] == RECURSION_LIMIT
    assert sys.getrecursionlimit() == before
