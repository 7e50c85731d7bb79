"""``relay run --compile``: the same output, diagnostics and exit codes as ``relay run``.

Most cases call ``relay_ref.cli.main`` in this process (what ``python -m relay_ref`` runs) and
compare its output with the interpreter's; two run the command in a subprocess, as a user
does, to see that errors print no traceback.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from relay_ref.cli import main

ROOT = Path(__file__).resolve().parents[2]

FIB = """def @fib(%n: int32) -> int32 {
  if (less(%n, 2)) { %n } else { add(@fib(subtract(%n, 1)), @fib(subtract(%n, 2))) }
}
def @main(%n: int32) -> int32 { @fib(%n) }
"""

ADT = """def @main(%xs: List[int32], %k: int32) {
  let %ys = @map(fn (%x: int32) -> int32 { multiply(%x, %k) }, %xs);
  (@foldl(fn (%a: int32, %b: int32) -> int32 { add(%a, %b) }, 0, %ys), %ys, Some(%k))
}
"""

REFS = """def @count(%r: ref(int32), %n: int32) -> int32 {
  if (equal(%n, 0)) { ref_read(%r) } else {
    let %u = ref_write(%r, add(ref_read(%r), %n));
    @count(%r, subtract(%n, 1))
  }
}
def @div(%a: int32, %b: int32) -> int32 { divide(%a, %b) }
def @main(%n: int32) -> int32 { @count(ref(0), %n) }
"""

TENSORS = """def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32], %c: bool) {
  let %z = add(%x, %y);
  if (%c) { (multiply(%z, %z), %z) } else { (%z, subtract(%x, %y)) }
}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {"fib": FIB, "adt": ADT, "refs": REFS, "tensors": TENSORS}.items():
        out[name] = tmp_path / f"{name}.relay"
        out[name].write_text(text)
    np.save(tmp_path / "x.npy", np.array([1, 2, 3], "float32"))
    np.save(tmp_path / "y.npy", np.array([0.5, 1, -1], "float32"))
    np.save(tmp_path / "y4.npy", np.ones(4, "float32"))
    return out


@pytest.mark.parametrize(("name", "args"), [
    ("fib", ["15"]),
    ("adt", ["Cons(1, Cons(2, Cons(3, Nil)))", "4"]),
    ("refs", ["200"]),
    ("refs", ["--entry", "div", "-7", "2"]),
    ("tensors", ["x.npy", "y.npy", "True"]),
    ("tensors", ["x.npy", "y.npy", "False"]),
])
def test_compiled_prints_what_the_interpreter_prints(files, capsys, name, args):
    path = files[name]
    args = [str(path.parent / a) if a.endswith(".npy") else a for a in args]
    want = run(capsys, "run", str(path), *args)
    got = run(capsys, "run", "--compile", str(path), *args)
    assert want[0] == 0, want[2]
    assert got == want


def test_example_compiled(capsys):
    code, out, _ = run(capsys, "run", "--compile", str(ROOT / "examples/list_sum.relay"))
    assert (code, out.strip()) == (0, "385")


def test_runtime_errors_are_the_interpreters(files, capsys):
    path = files["refs"]
    want = run(capsys, "run", str(path), "--entry", "div", "7", "0")
    got = run(capsys, "run", "--compile", str(path), "--entry", "div", "7", "0")
    assert got == want
    assert got[0] == 1 and f"{path}:7:43: error: divide: integer division by zero" in got[2]


def test_argument_errors_are_the_interpreters(files, capsys):
    t, fib = files["tensors"], files["fib"]
    x, y4 = str(t.parent / "x.npy"), str(t.parent / "y4.npy")
    for argv, code in [([str(fib)], 2),                        # missing argument
                       ([str(fib), "(1,"], 1),                 # bad literal
                       ([str(fib), "True"], 1),                # wrong type
                       ([str(t), x, str(fib), "True"], 1),     # not a literal
                       ([str(t), x, y4, "True"], 1)]:          # wrong shape
        want = run(capsys, "run", *argv)
        got = run(capsys, "run", "--compile", *argv)
        assert got == want and got[0] == code, argv
    code, _, err = run(capsys, "run", "--compile", str(t), x, y4, "True")
    assert "argument %y of @main: expected a tensor of type Tensor[(3), float32]" in err


def test_output_file(files, capsys, tmp_path):
    t = files["tensors"]
    prog = tmp_path / "one.relay"
    prog.write_text("def @main(%x: Tensor[(3), float32]) { %x * 2f }\n")
    code, _, err = run(capsys, "run", "--compile", str(prog), str(tmp_path / "x.npy"),
                       "-o", str(tmp_path / "o.npy"))
    assert code == 0, err
    assert np.load(tmp_path / "o.npy").tolist() == [2.0, 4.0, 6.0]
    code, out, err = run(capsys, "run", "--compile", str(t), str(tmp_path / "x.npy"),
                         str(tmp_path / "y.npy"), "True", "-o", str(tmp_path / "p.npy"))
    # refused before running: nothing computed, nothing printed
    assert code == 2 and "not a tensor" in err and out == ""


def test_plan_and_profile(files, capsys):
    t = files["tensors"]
    code, out, err = run(capsys, "run", "--compile", "--plan", "--profile", str(t),
                         str(t.parent / "x.npy"), str(t.parent / "y.npy"), "True")
    assert code == 0, err
    assert out.split() == ["([2.25f,", "9f,", "4f],", "[1.5f,", "3f,", "2f])"]
    plan_at = err.index("plan for @main (target cpu")
    assert "fused groups:" in err and "buffers:" in err
    stats_at = err.index("calls: 1, last call:")
    assert plan_at < stats_at
    table = err[stats_at:]
    assert "kernel" in table and "us/call" in table and "add" in table
    code, out, err = run(capsys, "run", "--compile", "--profile", str(files["fib"]), "5")
    assert code == 0 and out.strip() == "5"
    assert "calls: 1, last call:" in err and "plan for" not in err
    code, out, err = run(capsys, "run", "--compile", "--plan", "--threads", "1", str(t),
                         str(t.parent / "x.npy"), str(t.parent / "y.npy"), "True")
    assert code == 0, err
    assert "threads: 1 (work pool 1, BLAS 1 per call, numba 1; from --threads)" \
        in err.splitlines()


@pytest.mark.parametrize(("flags", "says"), [
    (["--compile", "--trace"], "--trace lists the interpreter's evaluation rules"),
    (["--plan"], "--plan describes a compiled program: add --compile"),
    (["--threads", "2"], "--threads describes a compiled program: add --compile"),
    (["--profile"], "--profile describes a compiled program: add --compile"),
])
def test_options_that_do_not_combine(files, capsys, flags, says):
    code, out, err = run(capsys, "run", *flags, str(files["fib"]), "5")
    assert (code, out) == (2, "")
    assert err.startswith("relay: error: ") and says in err


def test_help_describes_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--compile compile the program with rr.compile" in text
    assert "--plan with --compile:" in text and "--profile with --compile:" in text
    assert "interpreter only" in text


def test_match_failure_located_without_traceback(relay, tmp_path):
    prog = tmp_path / "p.relay"
    prog.write_text("def @main(%xs: List[int32]) -> int32 { @hd(%xs) }\n")
    out = relay("run", "--compile", str(prog), "Nil")
    assert out.returncode == 1 and out.stdout == ""
    assert "Traceback" not in out.stderr
    assert f"{prog}:1:40: error: call of @hd failed: no match clause matched" in out.stderr
    assert "@main -> @hd" in out.stderr
    usage = relay("run", "--compile", "--trace", str(prog), "Nil")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_max_depth_bounds_compiled_recursion_as_it_bounds_the_interpreter(relay, tmp_path) -> None:
    prog = tmp_path / "forever.relay"
    prog.write_text("def @forever(%n: int32) -> int32 { @forever(%n + 1) }\n"
                    "def @main() { @forever(0) }\n")
    outs = []
    for extra in ([], ["--compile"]):
        done = relay("run", prog, "--max-depth", "50", *extra)
        assert done.returncode == 1 and "recursion deeper than 50" in done.stderr, done.stderr
        assert "[Stuck-Depth]" in done.stderr
        outs.append(done.stderr.splitlines()[0])
    assert outs[0] == outs[1]
