"""Stuck-Depth in compiled code (spec/semantics.md 4 and 6; ``codegen``'s Depth).

``rr.compile(max_depth=N)`` counts nested applications as ``rr.evaluate(max_depth=N)``
does, a self tail call compiled as a loop iteration included, and stops with the same
located error: message, call, Relay call stack, notes. Small bounds are counted exactly
(compared with the interpreter on every depth around the bound); the default bound uses
Python's recursion limit, tested here scaled down (the constants patched) so that it runs
in milliseconds; one test runs ``relay run --compile`` on an endless loop at the default.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref import deepstack
from relay_ref.cli import main
from relay_ref.executor import codegen, executable

FOREVER = """def @forever(%n: int32) -> int32 { @forever(%n + 1) }
def @main() -> int32 { @forever(0) }
"""

#: Each ``@main(%n)`` recurses about ``%n`` deep (or forever for a negative ``%n``).
PROGRAMS = {
    "non-tail": """
def @f(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @f(%n - 1) } }
def @main(%n: int32) -> int32 { @f(%n) }""",
    "mutual": """
def @ev(%n: int32) -> bool { if (%n == 0) { True } else { @od(%n - 1) } }
def @od(%n: int32) -> bool { if (%n == 0) { False } else { @ev(%n - 1) } }
def @main(%n: int32) -> bool { @ev(%n) }""",
    "tail": """
def @c(%i: int32, %n: int32) -> int32 { if (%i == %n) { %i } else { @c(%i + 1, %n) } }
def @main(%n: int32) -> int32 { @c(0, %n) }""",
    "loop under recursion": """
def @c(%i: int32, %n: int32) -> int32 { if (%i == %n) { %i } else { @c(%i + 1, %n) } }
def @f(%n: int32, %m: int32) -> int32 {
  if (%n <= 0) { @c(0, %m) } else { 1 + @f(%n - 1, %m) }
}
def @main(%n: int32) -> int32 { @f(%n / 2, %n - %n / 2) }""",
    "recursion under a loop": """
def @f(%n: int32) -> int32 { if (%n <= 0) { 0 } else { 1 + @f(%n - 1) } }
def @c(%i: int32, %n: int32) -> int32 {
  if (%i == %n) { @f(%n - %i + 2) } else { @c(%i + 1, %n) }
}
def @main(%n: int32) -> int32 { @c(0, %n) }""",
    "local loop": """
def @main(%n: int32) -> int32 {
  let %g = fn (%i: int32) -> int32 { if (%i == %n) { %i } else { %g(%i + 1) } };
  %g(0)
}""",
    "local non-tail": """
def @main(%n: int32) -> int32 {
  let %g = fn (%i: int32) -> int32 { if (%i == %n) { %i } else { 1 + %g(%i + 1) } };
  %g(0)
}""",
    "through a value": """
def @ap(%h: fn (int32) -> int32, %x: int32) -> int32 { %h(%x) }
def @f(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @ap(@f, %n - 1) } }
def @main(%n: int32) -> int32 { @f(%n) }""",
}


def _outcome(run, *args, **kwargs) -> tuple:
    """``run(*args, **kwargs)``'s value, or its error as the user sees it (rendered, and
    the Relay call stack)."""
    try:
        return ("value", np.asarray(run(*args, **kwargs)).item())
    except rr.RelayRuntimeError as err:
        return ("error", err.render(False), err.relay_stack)


@pytest.mark.parametrize("max_depth", [5, 50])
def test_endless_tail_recursion_stops_with_the_interpreters_error(max_depth: int) -> None:
    mod = rr.parse(FOREVER, "forever.relay")
    expected = _outcome(rr.evaluate, mod, max_depth=max_depth)
    exe = rr.compile(mod, max_depth=max_depth)
    assert "while True" in exe.source and exe.max_depth == max_depth
    assert _outcome(exe) == expected
    assert f"recursion deeper than {max_depth} calls [Stuck-Depth]" in expected[1]
    assert expected[2] == ("main", *["forever"] * (max_depth - 1))


@pytest.mark.parametrize("name", PROGRAMS)
def test_small_bounds_are_exact(name: str) -> None:
    """Every depth from well under to well over the bound (and endless recursion): the
    compiled program gives the interpreter's value or error."""
    mod = rr.parse(PROGRAMS[name], "p.relay")
    for max_depth in (4, 9):
        exe = rr.compile(mod, max_depth=max_depth)
        for n in [*range(2 * max_depth + 3), -1]:
            expected = _outcome(rr.evaluate, mod, n, max_depth=max_depth)
            assert _outcome(exe, n) == expected, (name, max_depth, n)


@pytest.fixture
def python_bounds_depth(monkeypatch: pytest.MonkeyPatch) -> int:
    """The default configuration scaled down: Python's recursion limit is the bound for a
    ``max_depth`` >= 1200 (not 990 000), set to ``max_depth + 300`` frames, and loops read
    the stack after 16 iterations (not 1 024). Returns such a ``max_depth``."""
    monkeypatch.setattr(deepstack, "RECURSION_LIMIT", 1500)
    monkeypatch.setattr(executable, "RECURSION_LIMIT", 1500)
    monkeypatch.setattr(executable, "FRAME_SLACK", 300)
    monkeypatch.setattr(codegen, "FRAME_SLACK", 300)
    monkeypatch.setattr(codegen, "LOOP_CHECK", 16)
    assert not codegen.counts_calls(1200) and codegen.counts_calls(1199)
    return 1200


@pytest.mark.parametrize("name", PROGRAMS)
def test_python_bounded_depth_gives_the_interpreters_error(name: str,
                                                          python_bounds_depth: int) -> None:
    """Endless recursion of each kind stops with the interpreter's error; a recursion well
    inside the bound gives its value."""
    max_depth = python_bounds_depth
    mod = rr.parse(PROGRAMS[name], "p.relay")
    exe = rr.compile(mod, max_depth=max_depth)
    assert "_DEPTH" not in exe.source  # nothing counted per call
    for n in (-1, max_depth // 4):
        expected = _outcome(rr.evaluate, mod, n, max_depth=max_depth)
        assert _outcome(exe, n) == expected, (name, n)
    assert expected[0] == "value"


def test_a_loop_near_the_bound_reads_its_depth(python_bounds_depth: int) -> None:
    """A loop started deep in a recursion reads its real depth after ``LOOP_CHECK``
    iterations, and then stops exactly where the interpreter does."""
    max_depth = python_bounds_depth
    mod = rr.parse(PROGRAMS["loop under recursion"], "p.relay")
    exe = rr.compile(mod, max_depth=max_depth)
    for n in (2 * max_depth - 100, 2 * max_depth + 100):  # 600 deep, then a long loop
        expected = _outcome(rr.evaluate, mod, n, max_depth=max_depth)
        assert _outcome(exe, n) == expected, n
    assert expected[0] == "error"


def test_the_count_restarts_with_each_call() -> None:
    mod = rr.parse(PROGRAMS["non-tail"], "p.relay")
    exe = rr.compile(mod, max_depth=10)
    with pytest.raises(rr.RelayRuntimeError, match="deeper than 10 calls"):
        exe(-1)
    assert [int(exe(8)) for _ in range(3)] == [8, 8, 8]  # @main, then 9 nested @f
    with pytest.raises(rr.RelayRuntimeError, match="deeper than 10 calls"):
        exe(9)


def test_a_returned_closure_counts_from_its_own_call() -> None:
    mod = rr.parse("""
def @f(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @f(%n - 1) } }
def @main() -> fn (int32) -> int32 { fn (%n: int32) -> int32 { @f(%n) } }
""")
    closure = rr.compile(mod, max_depth=6)()
    assert int(closure(4)) == 4  # the closure, then @f(4) ... @f(0): 6 nested calls
    with pytest.raises(rr.RelayRuntimeError, match=r"deeper than 6 calls \[Stuck-Depth\]"):
        closure(5)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True])
def test_max_depth_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(TypeError, match="max_depth must be a positive int"):
        rr.compile(rr.parse(FOREVER), max_depth=bad)


def test_relay_run_compile_stops_an_endless_loop(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    """The default bound, 10^6 self tail calls: stopped as the interpreter stops it (whose
    run of the same takes ~15 s; the message is compared with its words)."""
    prog = tmp_path / "forever.relay"
    prog.write_text(FOREVER)
    assert main(["run", "--compile", str(prog)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{prog}:1:36: error: recursion deeper than 1000000 calls [Stuck-Depth]" in err
    assert "Relay call stack (innermost last): @main -> @forever (x999999)" in err
    assert f"{prog}:2:24: note: @forever called here" in err
