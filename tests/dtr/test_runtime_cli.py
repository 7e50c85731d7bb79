"""``relay run --compile --memory-budget``: the same value as without a budget, the DTR
statistics table on stderr, the log written; options that need a budget or ``--compile``
and bad budgets are usage errors (exit 2); an infeasible budget a located error (exit 1)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from relay_ref.cli import main
from relay_ref.dtr.log import read_log

PROGRAM = """def @loss(%x: Tensor[(64, 16), float32], %w: Tensor[(16, 16), float32]) -> float32 {
  let %a = tanh(nn.dense(%x, %w));
  let %b = tanh(nn.dense(%a, %w));
  let %c = tanh(nn.dense(%b, %w));
  let %d = tanh(nn.dense(%c, %w));
  let %e = tanh(nn.dense(%d, %w));
  sum(%e * %e)
}
def @main(%x: Tensor[(64, 16), float32], %w: Tensor[(16, 16), float32]) {
  gradient(@loss)(%x, %w)
}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def program(tmp_path: Path) -> list[str]:
    path = tmp_path / "step.relay"
    path.write_text(PROGRAM)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.standard_normal((64, 16)).astype("float32"))
    np.save(tmp_path / "w.npy", (rng.standard_normal((16, 16)) * 0.3).astype("float32"))
    return [str(path), str(tmp_path / "x.npy"), str(tmp_path / "w.npy")]


def test_memory_budget_prints_the_same_value_and_the_stats(capsys, program, tmp_path):
    want = run(capsys, "run", "--compile", *program)
    assert want[0] == 0, want[2]
    log = tmp_path / "run.jsonl"
    code, out, err = run(capsys, "run", "--compile", "--memory-budget", "70%",
                         "--heuristic", "lru", "--dtr-stats", "--dtr-log", str(log), *program)
    assert code == 0, err
    assert out == want[1]
    for field in ("peak_bytes", "evictions", "rematerializations", "slowdown", "lru"):
        assert field in err
    assert any(type(r).__name__ == "LogCall" for r in read_log(log))


@pytest.mark.parametrize(("argv", "says"), [
    (["--memory-budget", "40%"], "add --compile"),
    (["--compile", "--heuristic", "lru"], "add --memory-budget"),
    (["--compile", "--dtr-stats"], "add --memory-budget"),
    (["--compile", "--memory-budget", "-5"], "--memory-budget: -5 bytes"),
    (["--compile", "--memory-budget", "150%"], "--memory-budget: the percentage 150%"),
    (["--compile", "--memory-budget", "lots"], "--memory-budget: 'lots' is not a budget"),
    (["--compile", "--memory-budget", "1e9"], "bytes are an integer: 1000000000"),
    (["--compile", "--memory-budget", "50%", "--heuristic", "dtr-eq"],
     "--heuristic: unknown DTR heuristic 'dtr-eq'; did you mean dtr_eq?"),
    (["--compile", "--memory-budget", "90%", "--dtr-log", "/nonexistent/d/x.jsonl"],
     "--dtr-log: /nonexistent/d/x.jsonl: no directory /nonexistent/d"),
])
def test_misused_options_are_usage_errors(capsys, program, argv, says):
    code, out, err = run(capsys, "run", *argv, *program)
    assert code == 2 and says in err and "Traceback" not in err


def test_an_infeasible_budget_is_a_located_error(capsys, program):
    code, out, err = run(capsys, "run", "--compile", "--memory-budget", "2000", *program)
    assert code == 1 and "out of memory" in err and "budget of 2000 bytes" in err
    assert "step.relay" in err and "Traceback" not in err


def test_a_dtr_log_that_is_a_directory_is_a_usage_error_before_the_run(capsys, program,
                                                                       tmp_path):
    # review of issue 27: was IsADirectoryError (exit 70) after the whole run, with a stray
    # temporary file beside it
    code, out, err = run(capsys, "run", "--compile", "--memory-budget", "90%", "--dtr-log",
                         str(tmp_path), *program)
    assert code == 2 and f"--dtr-log: {tmp_path} is a directory" in err and out == ""
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_a_budget_below_an_input_names_the_input(capsys, program):
    code, out, err = run(capsys, "run", "--compile", "--memory-budget", "100", *program)
    assert code == 1 and "input %x (4096 bytes) does not fit the budget of 100 bytes" in err
    assert "step.relay:9:" in err and "operator constant" not in err


def test_the_cli_resolves_a_percentage_as_rr_compile_does(capsys, program):
    import relay_ref as rr

    code, out, err = run(capsys, "run", "--compile", "--memory-budget", "60%", "--dtr-stats",
                         *program)
    assert code == 0, err
    exe = rr.compile(rr.parse(Path(program[0]).read_text()), memory_budget=0.6)
    exe(*(np.load(p) for p in program[1:]))
    row = re.search(r"\bbudget\b\W+(\d+)", err)
    assert row and int(row.group(1)) == exe.dtr_stats.budget, err


def test_help_describes_the_budget_options(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for flag in ("--memory-budget", "--heuristic", "--dealloc", "--cost", "--dtr-stats",
                 "--dtr-log"):
        assert flag in text
