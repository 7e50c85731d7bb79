"""Traces of evaluations that get stuck (spec/semantics.md 4): the trace up to the stuck
step, ending with the stuck rule, in plain and value traces, through the API
(``RelayRuntimeError.trace``) and ``relay run --trace``; the stuck rule's tag in the
error's message; ``--trace``'s modes, ``--trace-limit`` and a non-UTF-8 stdout."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref.cli import main as cli_main
from relay_ref.interpreter.trace import format_trace

ROOT = Path(__file__).resolve().parents[2]

HEAD_OF_NIL = """#[version = "0.0.5"]
def @head(%l: List[int32]) -> int32 {
  match? (%l) {
    Cons(%x, _) => %x,
  }
}
def @main() -> int32 {
  @head(Nil)
}
"""

COUNTDOWN = """#[version = "0.0.5"]
def @f(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { @f(%n - 1) }
}
def @main(%n: int32) -> int32 { @f(%n) }
"""


def stuck_trace(program: rr.IRModule | rr.Expr, *args: object, trace: bool | str = "values",
                **kwargs: object) -> tuple[rr.RelayRuntimeError, str]:
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.evaluate(program, *args, trace=trace, **kwargs)
    return info.value, format_trace(info.value.trace)


def test_match_fail_value_trace_ends_with_the_stuck_rule():
    err, text = stuck_trace(rr.parse(HEAD_OF_NIL))
    assert err.message == "no match clause matched the value Nil [E-Match-Fail]"
    assert text == """\
E-App-Closure  (host call) ⇒ stuck
  E-App-Closure  @head(Nil) ⇒ stuck   ρ'[%l ↦ Nil]
    E-Global  @head ⇒ <closure @head>
    E-App-Ctor  Nil ⇒ Nil
      E-Ctor  Nil ⇒ <constructor Nil>
    E-Match-Fail  match? (%l) { ... } ⇒ stuck
      E-Var  %l ⇒ Nil
      P-Ctor  Nil ▷ Cons(%x, _)   fails: Nil is not Cons (clause 1 of 1)
      E-Match-Fail  stuck: no match clause matched the value Nil"""


def test_match_fail_plain_trace_ends_with_the_stuck_rule():
    _, text = stuck_trace(rr.parse(HEAD_OF_NIL), trace=True)
    assert text == """\
E-App-Closure  (host call)
  E-App-Closure  @head(Nil)
    E-Global  @head
    E-App-Ctor  Nil
      E-Ctor  Nil
    E-Match-Fail  match? (%l) { ... }
      E-Var  %l
      E-Match-Fail  stuck: no match clause matched the value Nil"""


def test_failed_clause_shows_its_first_failing_step():
    prog = rr.parse_expr("match? ((1, Cons(2, Nil))) { (_, Cons(_, Cons(_, _))) => 0, "
                         "(_, Nil) => 1 }")
    _, text = stuck_trace(prog)
    fails = [line.strip() for line in text.splitlines() if "fails:" in line]
    assert fails == ["P-Ctor  Nil ▷ Cons(_, _)   fails: Nil is not Cons (clause 1 of 2)",
                     "P-Ctor  Cons(2, Nil) ▷ Nil   fails: Cons is not Nil (clause 2 of 2)"]
    assert text.splitlines()[-1] == \
        "  E-Match-Fail  stuck: no match clause matched the value (1, Cons(2, Nil))"


def test_stuck_depth_trace_and_the_limit_keeps_the_stuck_rule():
    mod = rr.parse(COUNTDOWN)
    err, text = stuck_trace(mod, 50, max_depth=3)
    assert err.message == "recursion deeper than 3 calls [Stuck-Depth]"
    lines = text.splitlines()
    assert lines[-1].strip() == "Stuck-Depth  stuck: recursion deeper than 3 calls"
    # @main (the host call), @f(50), @f(49) nested: the call of @f(48) is the fourth
    assert [line.split("⇒")[0].strip() for line in lines
            if "E-App-Closure  @f(" in line] == ["E-App-Closure  @f(%n)",
                                                  "E-App-Closure  @f(%n - 1)",
                                                  "E-App-Closure  @f(%n - 1)"]
    assert all("⇒ stuck" in line for line in lines if "E-App-Closure" in line)
    limited = format_trace(err.trace, limit=4).splitlines()
    assert limited[:4] == lines[:4]
    assert limited[4] == f"... {len(lines) - 5} more steps"
    assert limited[5].strip() == lines[-1].strip() and len(limited) == 6


def test_an_unnamed_stuck_state_ends_with_the_rule_that_failed():
    err, text = stuck_trace(rr.parse_expr("let %z = 0; (1, 7 / %z)"), trace=True)
    assert err.message == "divide: integer division by zero"  # spec 4 names no rule
    assert text.splitlines()[-2:] == ["      E-Var  %z",
                                      "      E-App-Op  stuck: divide: integer division by zero"]


def test_cli_prints_the_stuck_trace_then_the_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    prog = tmp_path / "head.relay"
    prog.write_text(HEAD_OF_NIL)
    assert cli_main(["run", "--trace=values", str(prog)]) == 1
    out = capsys.readouterr()
    _, expected = stuck_trace(rr.parse(HEAD_OF_NIL))
    assert out.out == expected + "\n"
    assert "error: no match clause matched the value Nil [E-Match-Fail]" in out.err
    assert cli_main(["run", str(prog), "--trace"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == \
        "      E-Match-Fail  stuck: no match clause matched the value Nil"


def test_cli_trace_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    prog = tmp_path / "count.relay"
    prog.write_text(COUNTDOWN)
    # 301 calls of @f, about 12 steps each: more than the default limit
    assert cli_main(["run", "--trace", str(prog), "300"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1000 + 2 and lines[-1] == "0"
    assert lines[-2].startswith("... ") and lines[-2].endswith(" more steps")
    total = 1000 + int(lines[-2].split()[1])
    assert cli_main(["run", "--trace", "--trace-limit", "0", str(prog), "300"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == total + 1
    assert cli_main(["run", "--trace=values", "--trace-limit=3", str(prog), "300"]) == 0
    assert capsys.readouterr().out.splitlines()[3:] == [f"... {total - 3} more steps", "0"]
    assert cli_main(["run", "--trace-limit", "3", str(prog), "1"]) == 2
    assert "--trace-limit bounds the lines of a trace: add --trace" in capsys.readouterr().err
    # stuck past the limit: the stuck rule is still the last line of the trace
    assert cli_main(["run", "--trace", "--trace-limit=2", "--max-depth=2", str(prog), "9"]) == 1
    shown = capsys.readouterr().out.splitlines()
    assert len(shown) == 4 and shown[2].endswith("more steps")
    assert shown[3].strip() == "Stuck-Depth  stuck: recursion deeper than 2 calls"


def test_cli_trace_modes_and_usage(tmp_path, capsys):
    prog = tmp_path / "count.relay"
    prog.write_text(COUNTDOWN)
    with pytest.raises(SystemExit) as exit_:
        cli_main(["run", "--trace=everything", str(prog), "1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--trace takes rules or values (--trace=values), not 'everything'" in err
    assert "[--trace[=rules|values]]" in err  # the usage line shows the modes
    assert cli_main(["run", "--trace", "values", str(prog), "1"]) == 2
    assert "write --trace=values (the mode follows '=', not a space)" in \
        capsys.readouterr().err
    assert cli_main(["run", "--trace=rules", str(prog), "0"]) == 0
    assert "⇒" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main(["run", "--help"])
    assert "--trace[=rules|values]" in capsys.readouterr().out


def test_non_utf8_stdout_escapes_instead_of_failing(tmp_path, monkeypatch):
    prog = tmp_path / "head.relay"
    prog.write_text(HEAD_OF_NIL)
    out = subprocess.run([sys.executable, "-m", "relay_ref", "run", "--trace=values",
                          str(prog)], capture_output=True, text=True, timeout=120,
                         env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                              "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"})
    assert out.returncode == 1, out.stderr  # stuck, not an internal error (70)
    assert "internal error" not in out.stderr
    assert "E-Match-Fail  match? (%l) { ... } \\u21d2 stuck" in out.stdout
    # in process, a stream in ascii: `relay rule` prints the rule's ⊢ escaped
    stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stream)
    assert cli_main(["rule", "T-App"]) == 0
    stream.flush()
    assert "\\u22a2" in stream.buffer.getvalue().decode("ascii")
