"""The ``relay`` command, run as a user runs it: in a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


GOOD = """#[version = "0.0.5"]
def @double(%x: int32) -> int32 { %x * 2 }
def @main() -> int32 { @double(21) }
"""

BAD_SYNTAX = """def @main() {
  let %x = ;
  %x
}
"""

BAD_TYPE = """def @main(%x: Tensor[(3), float32], %y: Tensor[(4), float32]) {
  add(%x, %y)
}
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {"good": GOOD, "syntax": BAD_SYNTAX, "type": BAD_TYPE}.items():
        path = tmp_path / f"{name}.relay"
        path.write_text(text)
        out[name] = path
    return out


def test_version_and_help(relay):
    version = relay("--version")
    assert version.returncode == 0 and "relay_ref" in version.stdout
    helped = relay("--help")
    assert helped.returncode == 0
    for command in ("check", "run", "fmt"):
        assert command in helped.stdout


def test_no_command_is_a_usage_error(relay):
    result = relay()
    assert result.returncode == 2
    assert "usage" in result.stderr


def test_check_ok_and_types(relay, files):
    result = relay("check", "--types", str(files["good"]))
    assert result.returncode == 0, result.stderr
    assert "@double : fn (int32) -> int32" in result.stdout
    assert "@main : fn () -> int32" in result.stdout


def test_check_reports_syntax_error_with_location(relay, files):
    result = relay("check", str(files["syntax"]))
    assert result.returncode == 1
    assert f"{files['syntax']}:2:" in result.stderr
    assert "Traceback" not in result.stderr
    assert "^" in result.stderr


def test_check_reports_type_error_with_location(relay, files):
    result = relay("check", str(files["type"]))
    assert result.returncode == 1
    assert f"{files['type']}:2:" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_continues_after_a_bad_file(relay, files):
    result = relay("check", str(files["syntax"]), str(files["good"]))
    assert result.returncode == 1
    assert "good.relay: ok" in result.stderr


def test_missing_file_is_a_usage_error(relay, tmp_path):
    result = relay("check", str(tmp_path / "nope.relay"))
    assert result.returncode == 2
    assert "no such file" in result.stderr and "Traceback" not in result.stderr


def test_run_prints_the_value(relay, files):
    result = relay("run", str(files["good"]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "42"


def test_fmt_is_canonical_and_check_mode(relay, files, tmp_path):
    printed = relay("fmt", str(files["good"]))
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith('#[version = "0.0.5"]')
    canonical = tmp_path / "canonical.relay"
    canonical.write_text(printed.stdout)
    assert relay("fmt", "--check", str(canonical)).returncode == 0
    messy = tmp_path / "messy.relay"
    messy.write_text("def @main() -> int32 {   1 +   2 }\n")
    check = relay("fmt", "--check", str(messy))
    assert check.returncode == 1 and "would reformat" in check.stderr
    assert messy.read_text() == "def @main() -> int32 {   1 +   2 }\n"


def test_fmt_in_place_rewrites_and_is_idempotent(relay, tmp_path):
    messy = tmp_path / "messy.relay"
    messy.write_text("def @main() -> int32 {   1 +   2 }\n")
    assert relay("fmt", "-i", str(messy)).returncode == 0
    once = messy.read_text()
    assert once.startswith('#[version = "0.0.5"]')
    assert relay("fmt", "-i", str(messy)).returncode == 0
    assert messy.read_text() == once
    assert not list(tmp_path.glob("*.tmp"))


def test_fmt_leaves_a_bad_file_untouched(relay, files):
    before = files["syntax"].read_text()
    result = relay("fmt", "-i", str(files["syntax"]))
    assert result.returncode == 1
    assert files["syntax"].read_text() == before


def test_fmt_keeps_prelude_definitions_out_of_the_file(relay, tmp_path):
    uses_prelude = tmp_path / "p.relay"
    uses_prelude.write_text("def @main() -> int32 { @sum(@map(fn (%x: int32) { %x + 1 }, "
                            "Cons(1, Nil))) }\n")
    result = relay("fmt", str(uses_prelude))
    assert result.returncode == 0, result.stderr
    assert "@map(" in result.stdout and "def @map" not in result.stdout
    assert "type List" not in result.stdout


def test_output_goes_to_the_named_path_or_is_a_usage_error(relay, files, tmp_path):
    # np.save(path) appended ".npy" to a name without it, so "saved ... to X" was untrue and
    # "-o DIR" wrote DIR.npy next to it.
    out = tmp_path / "result.bin"
    r = relay("run", str(files["good"]), "-o", str(out))
    assert r.returncode == 0 and out.exists() and not (tmp_path / "result.bin.npy").exists()
    r = relay("run", str(files["good"]), "-o", str(tmp_path))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path.parent / (tmp_path.name + ".npy")).exists()


def test_a_closed_pipe_is_not_an_internal_error(tmp_path, monkeypatch) -> None:
    """`relay run ... | head`: the reader leaving is not a bug in relay_ref."""
    import io

    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    program = tmp_path / "p.relay"
    program.write_text("def @main() { 1 }\n")
    fd, path = __import__("tempfile").mkstemp(dir=tmp_path)
    stdout = Closed()
    stdout.fileno = lambda: fd  # type: ignore[method-assign]
    monkeypatch.setattr("sys.stdout", stdout)
    from relay_ref.cli import main as cli_main

    assert cli_main(["run", str(program)]) == 141


def test_output_of_a_non_tensor_is_refused_before_running(relay, tmp_path) -> None:
    program = tmp_path / "pair.relay"
    # refused before running: no value printed, no file written
    program.write_text("def @main(%x: float32) { (%x, %x) }\n")
    out = tmp_path / "o.npy"
    r = relay("run", str(program), "1", "-o", str(out))
    assert r.returncode == 2 and "not a tensor" in r.stderr and "(float32, float32)" in r.stderr
    assert r.stdout == "" and not out.exists()
