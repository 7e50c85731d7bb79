"""``relay opt``: the optimised program, ``--check`` (counts, verdicts, vacuity, ``--focus``),
``--list`` and usage errors."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import relay_ref as rr
from relay_ref.cli import main

PROGRAM = """def @main(%x: Tensor[(2), float32]) {
  %0 = add(1f, 2f);
  let %dead = subtract(%x, %x);
  multiply(%x, %0)
}
"""


def test_opt_prints_the_optimised_program(relay, tmp_path):
    path = tmp_path / "p.relay"
    path.write_text(PROGRAM)
    res = relay("opt", str(path), "--passes", "FoldConstant,DeadCodeElimination")
    assert res.returncode == 0, res.stderr
    out = rr.parse(res.stdout)
    want = rr.parse("def @main(%x: Tensor[(2), float32]) { multiply(%x, 3f) }")
    assert rr.alpha_equal(out, want), res.stdout


def test_named_passes_run_whatever_their_level_unless_a_level_is_given(relay, tmp_path):
    path = tmp_path / "p.relay"
    path.write_text("def @main(%x: float32) { (add(%x, 1f), add(%x, 1f)) }")
    cse = relay("opt", str(path), "--passes", "EliminateCommonSubexpr")  # opt level 3
    assert cse.returncode == 0 and cse.stdout.count("add(") == 1, cse.stdout
    skipped = relay("opt", str(path), "--passes", "EliminateCommonSubexpr", "--opt-level", "2")
    assert skipped.returncode == 0 and skipped.stdout.count("add(") == 2, skipped.stdout


def test_usage_errors(relay, tmp_path):
    path = tmp_path / "p.relay"
    path.write_text(PROGRAM)
    res = relay("opt", str(path), "--passes", "FoldConstant,NoSuchPass")
    assert res.returncode == 2
    assert "unknown pass NoSuchPass" in res.stderr and "FoldConstant" in res.stderr
    assert "Traceback" not in res.stderr
    res = relay("opt", str(path), "--passes", "foldconstant")
    assert res.returncode == 2 and "did you mean FoldConstant?" in res.stderr
    res = relay("opt", str(path))
    assert res.returncode == 2 and "--passes" in res.stderr
    res = relay("opt", str(tmp_path / "missing.relay"), "--passes", "FoldConstant")
    assert res.returncode == 2 and "no such file" in res.stderr
    res = relay("opt", "--passes", "FoldConstant", "--check", "0")
    assert res.returncode == 2


def test_an_ill_typed_file_is_a_located_diagnostic(relay, tmp_path):
    path = tmp_path / "bad.relay"
    path.write_text("def @main(%x: float32) {\n  add(%x, 1)\n}\n")
    res = relay("opt", str(path), "--passes", "FoldConstant")
    assert res.returncode == 1
    assert "bad.relay:2:3: error:" in res.stderr and "Traceback" not in res.stderr


def test_check_reports_each_pass(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the table's rows unwrapped
    assert main(["opt", "--passes", "FoldConstant,DeadCodeElimination", "--check", "5",
                 "--allow-vacuous"]) == 0
    out = capsys.readouterr().out
    for name in ("FoldConstant", "DeadCodeElimination"):
        assert re.search(rf"{name} +│ generated programs │ +\d of 5 │", out), out


def test_check_fails_with_the_counterexample(broken_pass, capsys):
    # 600 programs: subtract with unequal operands is a small share of the generated
    # calls, and how many of 200 derandomized draws hit one depends on the process history
    assert main(["opt", "--passes", broken_pass, "--check", "600"]) == 1
    captured = capsys.readouterr()
    assert "FAILED" in captured.out
    assert "subtract" in captured.err  # the shrunk program, before and after


def test_list_shows_every_registered_pass(capsys):
    assert main(["opt", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("FoldConstant", "DeadCodeElimination", "ToANormalForm"):
        assert name in out
    assert "max_depth=256" in out  # FuseOps's options, with their defaults


def test_standard_input_is_read_for_a_dash():
    res = subprocess.run([sys.executable, "-m", "relay_ref", "opt", "-", "--passes",
                          "FoldConstant"], input="def @main() { add(1f, 2f) }\n",
                         capture_output=True, text=True, timeout=120,
                         env={"NO_COLOR": "1", "PATH": ""})
    assert res.returncode == 0 and "3f" in res.stdout, res.stderr
    res = subprocess.run([sys.executable, "-m", "relay_ref", "check", "-"],
                         input="def @main() { add(1f, 2) }\n", capture_output=True, text=True,
                         timeout=120, env={"NO_COLOR": "1", "PATH": ""})
    assert res.returncode == 1 and "<stdin>:1:15: error:" in res.stderr


CHAIN = "def @main(%x: Tensor[(4), float32]) {\n  exp(exp(exp(exp(exp(%x)))))\n}\n"


def test_passes_take_options(relay, tmp_path):
    path = tmp_path / "chain.relay"
    path.write_text(CHAIN)
    res = relay("opt", str(path), "--passes", "FuseOps(max_depth=2), FoldConstant")
    assert res.returncode == 0, res.stderr
    # the same pipeline as the API's: the same program, printed the same way
    want = rr.optimize(rr.parse(CHAIN), ["FuseOps(max_depth=2)", "FoldConstant"])
    assert res.stdout == rr.astext(want, omit_prelude=True).rstrip("\n") + "\n"
    assert res.stdout.count("Primitive=1") == 3  # five calls, at most two per group
    default = relay("opt", str(path), "--passes", "FuseOps,FoldConstant")
    assert default.returncode == 0 and default.stdout.count("Primitive=1") == 1


def test_a_bad_option_is_a_located_usage_error(relay, tmp_path):
    path = tmp_path / "chain.relay"
    path.write_text(CHAIN)
    res = relay("opt", str(path), "--passes", "FoldConstant,FuseOps(depth=8)")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--passes:1:22: error: FuseOps has no option 'depth'" in res.stderr, res.stderr
    assert "max_depth" in res.stderr and "^^^^^" in res.stderr
    res = relay("opt", str(path), "--passes", "FuseOps(max_depth=__import__('os'))")
    assert res.returncode == 2 and "must be Python literals" in res.stderr
    assert "Traceback" not in res.stderr
    res = relay("opt", str(path), "--passes", "FuseOps(max_depth=8")
    assert res.returncode == 2 and "--passes:1:8: error: unclosed '('" in res.stderr
    res = relay("opt", str(path), "--passes", "FuseOps(max_depth=0)")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "--passes:1:9: error: FuseOps: max_depth must be at least 1" in res.stderr
    for deep in ("-" * 5000, "-" * 20000):  # Python's parser would recurse / run out
        res = relay("opt", str(path), "--passes", f"FuseOps(max_depth={deep}1)")
        assert res.returncode == 2 and "--passes:1:" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and "internal error" not in res.stderr


def test_check_takes_configured_passes(capsys):
    assert main(["opt", "--passes", "FuseOps(max_depth=2)", "--check", "3",
                 "--allow-vacuous"]) == 0
    assert "FuseOps(max_depth=2)" in capsys.readouterr().out


@pytest.fixture
def small_passes():
    """Two registered passes, unregistered after the test: ``TestNeverFires`` (the
    identity: a check of it proves nothing) and ``TestCommuteAdd`` (``add(a, b)`` to
    ``add(b, a)``: correct, and it changes every program with an ``add``)."""
    from relay_ref.ir.expr import Call, Op
    from relay_ref.passes import Pass, register_pass, unregister_pass
    from relay_ref.passes.rewrite import map_functions, rewrite

    @register_pass
    class NeverFires(Pass):
        """Changes nothing."""

        name = "TestNeverFires"
        opt_level = 0

        def __call__(self, mod):
            return mod

    @register_pass
    class CommuteAdd(Pass):
        """Swaps the operands of add (correct: add commutes)."""

        name = "TestCommuteAdd"
        opt_level = 0

        def __call__(self, mod):
            def rule(node):
                if isinstance(node, Call) and node.op == Op("add"):
                    return Call(node.op, node.args[::-1], node.attrs)
                return None
            return map_functions(mod, lambda _, f: rewrite(f, rule))

    yield
    unregister_pass(NeverFires.name)
    unregister_pass(CommuteAdd.name)


def _row(out: str, name: str, on: str = "generated programs") -> list[str]:
    """The cells of the table row of pass ``name`` on ``on``."""
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if cells[:2] == [name, on]:
            return cells
    raise AssertionError(f"no row for {name} on {on}:\n{out}")


def test_a_vacuous_check_fails_with_the_hint_unless_allowed(small_passes, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    argv = ["opt", "--passes", "TestNeverFires", "--check", "10", "--focus", "maximum"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert _row(captured.out, "TestNeverFires")[2:] == ["0 of 10", "0", "maximum", "vacuous"]
    assert "the check was vacuous: TestNeverFires changed 0 of 10" in captured.err
    assert "--focus OP[,OP]" in captured.err and "--allow-vacuous" in captured.err
    assert main([*argv, "--allow-vacuous"]) == 0
    captured = capsys.readouterr()
    assert _row(captured.out, "TestNeverFires")[-1] == "vacuous (allowed)"
    assert "vacuous" not in captured.err


def test_a_good_pass_shows_what_it_changed_and_compared(small_passes, capsys, monkeypatch,
                                                        tmp_path):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)  # the table names FILE as given
    uses_add, no_add = tmp_path / "add.relay", tmp_path / "mul.relay"
    uses_add.write_text("def @main(%x: Tensor[(3), float32]) { add(%x, 1f) }\n")
    no_add.write_text("def @main(%x: Tensor[(3), float32]) { multiply(%x, 2f) }\n")
    argv = ["opt", "--passes", "TestCommuteAdd", "--check", "30", "--focus", "add",
            "--min-fired", "5"]
    assert main([*argv, uses_add.name]) == 0
    out = capsys.readouterr().out
    changed, fired, focus, result = _row(out, "TestCommuteAdd")[2:]
    count, of = map(int, changed.split(" of "))
    assert of == 30 and 5 <= int(fired) <= count <= 30 and (focus, result) == ("add", "ok")
    # on FILE: it changed the program, and every argument tuple was compared
    assert _row(out, "TestCommuteAdd", "add.relay")[2:] == [
        "yes", "30 of 30 argument tuples", "-", "ok"]
    # a FILE the pass leaves alone is reported unchanged: not a failure
    assert main([*argv, no_add.name]) == 0
    out = capsys.readouterr().out
    assert _row(out, "TestCommuteAdd", "mul.relay")[2:] == [
        "no", "0 of 30 argument tuples", "-", "unchanged"]
    # a FILE it changes whose every run fails (integer division by zero) proved nothing
    fails = tmp_path / "div.relay"
    fails.write_text("def @main(%x: Tensor[(3), int32]) { divide(add(%x, 1), 0) }\n")
    assert main([*argv, fails.name]) == 1
    captured = capsys.readouterr()
    assert _row(captured.out, "TestCommuteAdd", "div.relay")[2:] == [
        "yes", "0 of 30 argument tuples", "-", "vacuous"]
    assert "TestCommuteAdd changed div.relay but none of 30 argument tuples" in captured.err
    assert main([*argv, fails.name, "--allow-vacuous"]) == 0
    assert _row(capsys.readouterr().out, "TestCommuteAdd", "div.relay")[-1] == \
        "vacuous (allowed)"


def test_focus_directs_the_check_at_the_broken_rewrite(broken_pass, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["opt", "--passes", broken_pass, "--check", "30", "--focus", "subtract"]) == 1
    captured = capsys.readouterr()
    assert _row(captured.out, broken_pass)[-2:] == ["subtract", "FAILED"]
    assert "subtract(" in captured.err  # the shrunk program, before and after


def test_focus_usage_errors(relay):
    res = relay("opt", "--passes", "FoldConstant", "--check", "5", "--focus", "maxmum")
    assert res.returncode == 2 and res.stdout == ""
    assert "--focus 'maxmum' is not an operator" in res.stderr
    assert "did you mean 'maximum'?" in res.stderr
    for option in (["--focus", "maximum"], ["--allow-vacuous"], ["--min-fired", "3"],
                   ["--min-fired", "0"]):
        res = relay("opt", "--passes", "FoldConstant", *option)
        assert res.returncode == 2
        assert f"{option[0]} applies to a check: use it with --check N" in res.stderr
