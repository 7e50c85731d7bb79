"""``relay dtr sweep`` (relay_ref/cli/dtr.py): the table on a generated log and on a Relay
program's training step (ratios, heuristics, slowdown 1.0 at ratio 1.0, OOM at a tiny
ratio, numbers equal to ``simulate``'s), ``--plot`` writing a PNG, and bad arguments as
usage errors (exit 2) or located diagnostics (exit 1), never a traceback."""

from __future__ import annotations

import re
import sys

import pytest

from relay_ref.cli import main
from relay_ref.cli._common import UsageError
from relay_ref.cli.dtr import parse_budgets, parse_heuristics
from relay_ref.dtr.simulator import simulate
from tests.dtr.chain import chain_log

MLP = """def @main(%x: Tensor[(32, 16), float32], %w1: Tensor[(24, 16), float32],
          %w2: Tensor[(24, 24), float32], %w3: Tensor[(4, 24), float32]) -> float32 {
  let %h1 = nn.relu(nn.dense(%x, %w1));
  let %h2 = tanh(nn.dense(%h1, %w2));
  let %o = nn.dense(%h2, %w3);
  sum(%o * %o)
}
"""


def _rows(stdout: str) -> dict[str, list[str]]:
    """The table's body rows: first cell -> the other cells (box characters dropped)."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃|]", line)[1:-1]]
        if cells and cells[0] and (cells[0][0].isdigit() or cells[0] == "lowest feasible"):
            rows[cells[0]] = cells[1:]
    return rows


def _header(stdout: str) -> list[str]:
    line = next(ln for ln in stdout.splitlines() if "budget ratio" in ln)
    return [c.strip() for c in re.split(r"[│┃|]", line)[1:-1]]


@pytest.fixture
def chain_file(tmp_path):
    path = tmp_path / "chain.jsonl"
    path.write_text("\n".join(chain_log(40)) + "\n")
    return path


def test_sweep_of_a_log_in_process(chain_file, capsys):
    assert main(["dtr", "sweep", str(chain_file), "--budgets", "0.05,0.25:1.0:0.25",
                 "--heuristics", "dtr,dtr_eq,lru", "--cost", "unit"]) == 0
    out = capsys.readouterr().out
    assert _header(out) == ["budget ratio", "budget bytes", "dtr", "dtr_eq", "lru"]
    rows = _rows(out)
    assert list(rows) == ["0.05", "0.25", "0.50", "0.75", "1.00", "lowest feasible"]
    assert rows["1.00"][1:] == ["1.000x"] * 3
    assert rows["0.05"][1:] == ["OOM"] * 3  # 2 of 42 bytes: no call's working set fits
    for ratio in ("0.25", "0.50"):
        for h, cell in zip(["dtr", "dtr_eq", "lru"], rows[ratio][1:], strict=True):
            s = simulate(str(chain_file), float(ratio), h, "eager", "unit")
            want = "OOM" if s.oom else "thrash" if s.thrashed else f"{s.slowdown:.3f}x"
            assert cell.startswith(want), (ratio, h, cell, s)
    assert rows["lowest feasible"][1] == "0.25"  # e* reaches the lowest ratio given


def test_sweep_cli_on_a_log_and_its_errors(relay, chain_file, tmp_path):
    r = relay("dtr", "sweep", chain_file, "--budgets", "0.1:1.0:0.1", "--heuristics",
              "dtr_eq,size")
    assert r.returncode == 0, r.stderr
    rows = _rows(r.stdout)
    assert [k for k in rows if k[0].isdigit()] == [f"{k / 10:.2f}" for k in range(1, 11)]
    assert rows["1.00"][1:] == ["1.000x", "1.000x"]
    assert "cost model measured" in r.stdout  # the generated chain has no FLOPS: TIME
    assert "15/15" not in r.stderr and "20/20" in r.stderr  # the progress bar's last frame
    # bad arguments: usage errors, said plainly
    for argv, words in [
        (["--budgets", "0.1:1.0"], "START:STOP:STEP"),
        (["--budgets", "1.5"], "not in (0, 1]"),
        (["--budgets", "abc"], "is not a budget"),
        (["--heuristics", "dtr,lrux"], "did you mean lru?"),
    ]:
        r = relay("dtr", "sweep", chain_file, *argv)
        assert r.returncode == 2 and words in r.stderr, (argv, r.stderr)
    r = relay("dtr", "sweep", tmp_path / "missing.jsonl")
    assert r.returncode == 2 and "no such file" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(chain_file.read_text().replace('"CALL"', '"CALLL"', 1))
    r = relay("dtr", "sweep", bad)
    assert r.returncode == 1 and "malformed DTR log" in r.stderr and "bad.jsonl:" in r.stderr


def test_sweep_of_a_relay_training_step(relay, tmp_path):
    prog = tmp_path / "mlp.relay"
    prog.write_text(MLP)
    png = tmp_path / "sweep.png"
    r = relay("dtr", "sweep", prog, "--gradient", "--budgets", "0.02,0.9,1",
              "--heuristics", "dtr_eq,lru", "--plot", png)
    assert r.returncode == 0, r.stderr
    assert "(gradient)" in r.stdout and "cost model flops" in r.stdout
    rows = _rows(r.stdout)
    assert rows["1.00"][1:] == ["1.000x", "1.000x"]
    assert rows["0.02"][1:] == ["OOM", "OOM"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a parameter that cannot be drawn, and --plot over the input: usage errors
    tree = tmp_path / "tree.relay"
    tree.write_text("def @main(%l: List[Tensor[(2,), float32]]) -> int32 { 0 }")
    r = relay("dtr", "sweep", tree)
    assert r.returncode == 2 and "parameter %l of @main" in r.stderr
    r = relay("dtr", "sweep", prog, "--plot", prog)
    assert r.returncode == 2 and "same file as the input" in r.stderr


def test_plot_without_matplotlib_is_a_clear_usage_error(chain_file, tmp_path, monkeypatch,
                                                         capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    assert main(["dtr", "sweep", str(chain_file), "--plot", str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib" in err and not (tmp_path / "p.png").exists()


def test_budget_and_heuristic_lists():
    assert parse_budgets("0.1:1.0:0.1") == [round(k / 10, 9) for k in range(1, 11)]
    assert parse_budgets("25%,0.5, 1") == [0.25, 0.5, 1.0]
    assert parse_heuristics("dtr, ablation(s=1,m=0,c=eq),lru") == \
        ["dtr", "ablation(s=1,m=0,c=eq)", "lru"]
    for text in ("0", "0.5:0.1:0.1", "", "nan"):
        with pytest.raises(UsageError):
            parse_budgets(text)
    with pytest.raises(UsageError, match="did you mean dtr_eq"):
        parse_heuristics("dtr_qe")


def test_sweep_usage_errors_come_before_the_sweep(chain_file, tmp_path, monkeypatch, capsys):
    # review of issue 27: an unwritable --plot was found only after the whole sweep;
    # --gradient with a log was silently ignored
    import relay_ref.cli.dtr as cli

    def never(*args, **kwargs):
        raise AssertionError("the sweep ran")

    monkeypatch.setattr(cli, "run_sweep", never)
    for argv, says in [
        (["--plot", str(tmp_path / "no" / "p.png")], f"no directory {tmp_path / 'no'}"),
        (["--plot", str(tmp_path)], "is a directory"),
        (["--gradient"], "is a DTR log"),
    ]:
        assert main(["dtr", "sweep", str(chain_file), *argv]) == 2, argv
        assert says in capsys.readouterr().err, argv


def test_sweep_footer_says_what_is_pinned(chain_file, capsys):
    assert main(["dtr", "sweep", str(chain_file), "--budgets", "1", "--heuristics", "lru",
                 "--dealloc", "banish"]) == 0
    out = capsys.readouterr().out
    assert "pinned at most at once" in out and "the children banishing pinned" in out
    assert "(inputs and weights)" not in out
    assert main(["dtr", "sweep", str(chain_file), "--budgets", "1", "--heuristics", "lru"]) == 0
    assert "banishing" not in capsys.readouterr().out
