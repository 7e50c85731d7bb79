"""``relay run`` as a user runs it: in a subprocess (outputs, --output, --trace, errors)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def relay_run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_ref", "run", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                               "PYTHONPATH": str(ROOT)})


def test_example_runs():
    out = relay_run("examples/list_sum.relay")  # the README's first command
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "385"
    out = relay_run("examples/list_sum.relay", "100", "--entry", "sum_of_squares")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "338350"


def test_literal_adt_and_npy_arguments(tmp_path):
    prog = tmp_path / "p.relay"
    prog.write_text("""#[version = "0.0.5"]
def @main(%xs: List[int64], %t: Tensor[(2, 2), float32], %k: int64) {
  (@length(%xs), %t * 2f, %k)
}
""")
    np.save(tmp_path / "t.npy", np.arange(4, dtype="float32").reshape(2, 2))
    out = relay_run(str(prog), "Cons(1i64, Cons(2i64, Nil))", str(tmp_path / "t.npy"), "7")
    assert out.returncode == 0, out.stderr
    assert " ".join(out.stdout.split()) == "(2, [[0f, 2f], [4f, 6f]], 7i64)"


def test_output_saves_tensor(tmp_path):
    prog = tmp_path / "p.relay"
    prog.write_text("def @main(%x: Tensor[(3), float32]) { %x + 1f }\n")
    np.save(tmp_path / "x.npy", np.array([1, 2, 3], "float32"))
    out = relay_run(str(prog), str(tmp_path / "x.npy"), "--output", str(tmp_path / "o.npy"))
    assert out.returncode == 0, out.stderr
    assert np.load(tmp_path / "o.npy").tolist() == [2.0, 3.0, 4.0]
    bad = relay_run(str(prog), str(tmp_path / "x.npy"), "-o", str(tmp_path / "no" / "o.npy"))
    assert bad.returncode == 2 and "cannot write" in bad.stderr


def test_runtime_error_prints_diagnostic_without_traceback(tmp_path):
    prog = tmp_path / "p.relay"
    prog.write_text("def @main(%xs: List[int32]) -> int32 { @hd(%xs) }\n")
    out = relay_run(str(prog), "Nil")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert f"{prog}:1:40: error: call of @hd failed: no match clause matched" in out.stderr
    assert "@main -> @hd" in out.stderr


def test_usage_errors(tmp_path):
    prog = tmp_path / "p.relay"
    prog.write_text("def @main(%x: int32) -> int32 { %x }\n")
    (tmp_path / "bad.npy").write_text("not numpy")
    assert relay_run(str(prog)).returncode == 2                        # missing argument
    out = relay_run(str(prog), str(tmp_path / "bad.npy"))
    assert out.returncode == 2 and "cannot load" in out.stderr
    out = relay_run(str(prog), "(1,")                                  # bad literal
    assert out.returncode == 1 and "Traceback" not in out.stderr
    out = relay_run(str(prog), "True")                                 # wrong type
    assert out.returncode == 1 and "argument %x" in out.stderr


def test_trace_and_type_errors(tmp_path):
    prog = tmp_path / "p.relay"
    prog.write_text("def @main() -> int32 { let %x = 1; %x + 1 }\n")
    out = relay_run(str(prog), "--trace")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "2" and any("E-Let" in ln for ln in lines)
    prog.write_text("def @main() -> int32 { True }\n")
    out = relay_run(str(prog))
    assert out.returncode == 1 and "error" in out.stderr and "Traceback" not in out.stderr
