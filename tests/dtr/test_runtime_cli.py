"""``relay run --compile --memory-budget``: the same value as without a budget, the DTR
statistics table on stderr, the log written; options that need a budget or ``--compile``
and bad budgets are usage errors (exit 2); an infeasible budget a located error (exit 1)."""

from __future__ import annotations

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
    (["--compile", "--memory-budget", "0"], "not positive"),
    (["--compile", "--memory-budget", "150%"], "none of these"),
    (["--compile", "--memory-budget", "lots"], "none of these"),
])
def test_misused_options_are_usage_errors(capsys, program, argv, says):
    code, out, err = run(capsys, "run", *argv, *program)
    assert code == 2 and says in err and "Traceback" not in err


def test_an_infeasible_budget_is_a_located_error(capsys, program):
    code, out, err = run(capsys, "run", "--compile", "--memory-budget", "2000", *program)
    assert code == 1 and "out of memory" in err and "budget of 2000 bytes" in err
    assert "step.relay" in err and "Traceback" not in err


def test_an_unknown_heuristic_is_an_error_naming_the_known_ones(capsys, program):
    code, out, err = run(capsys, "run", "--compile", "--memory-budget", "50%",
                         "--heuristic", "dtr-eq", *program)
    assert code == 1 and "dtr_eq" in err and "Traceback" not in err


def test_help_describes_the_budget_options(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    for flag in ("--memory-budget", "--heuristic", "--dealloc", "--cost", "--dtr-stats",
                 "--dtr-log"):
        assert flag in text
