"""``relay partition`` (spec/byoc.md): --help, the error paths (unknown backend: a
diagnostic, exit 1; no --target, a missing file or weights file: usage, exit 2) and the
printed partition for the built-in ``ort`` backend (a subprocess cannot see a backend
registered in the test process)."""

from __future__ import annotations

from pathlib import Path

import pytest

PROGRAM = """def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  nn.relu(%x)
}
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "p.relay"
    path.write_text(PROGRAM)
    return path


def test_help(relay) -> None:
    result = relay("partition", "--help")
    assert result.returncode == 0
    assert "--target" in result.stdout and "--params" in result.stdout


def test_listed_in_relay_help(relay) -> None:
    assert "partition" in relay("--help").stdout


def test_unknown_backend_is_a_diagnostic(relay, program: Path) -> None:
    result = relay("partition", "--target", "nosuchbackend", program)
    assert result.returncode == 1
    assert "unknown backend 'nosuchbackend'" in result.stderr
    assert result.stdout == ""


def test_misspelt_builtin_backend_gets_a_hint(relay, program: Path) -> None:
    result = relay("partition", "--target", "orrt", program)
    assert result.returncode == 1 and "did you mean 'ort'" in result.stderr


def test_no_target_is_a_usage_error(relay, program: Path) -> None:
    result = relay("partition", program)
    assert result.returncode == 2 and "--target" in result.stderr


def test_missing_file_is_a_usage_error(relay, tmp_path: Path) -> None:
    result = relay("partition", "--target", "ort", tmp_path / "nope.relay")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_missing_weights_is_a_usage_error(relay, program: Path, tmp_path: Path) -> None:
    result = relay("partition", "--target", "ort", "--params", tmp_path / "w.npz", program)
    assert result.returncode == 2 and "--params" in result.stderr


def test_ill_typed_program_is_a_diagnostic(relay, tmp_path: Path) -> None:
    path = tmp_path / "bad.relay"
    path.write_text("def @main(%x: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {\n"
                    "  add(%x, (%x, %x))\n}\n")
    result = relay("partition", "--target", "ort", path)
    assert result.returncode == 1 and "bad.relay:2" in result.stderr


def test_prints_the_partitioned_program(relay, tmp_path: Path) -> None:
    """With the built-in ``ort`` backend (once it is merged): one region, printed in TVM's
    form, that parses back and computes what the original computes."""
    import numpy as np

    import relay_ref as rr

    path = tmp_path / "m.relay"
    # big enough for ort's cost model (a tiny region is not worth a session)
    path.write_text("def @main(%x: Tensor[(64, 64), float32]) -> Tensor[(64, 64), float32] {\n"
                    "  %0 = nn.relu(%x);\n  %1 = exp(%0);\n  add(%1, %0)\n}\n")
    result = relay("partition", "--target", "ort", path)
    assert result.returncode == 0, result.stderr
    assert 'Compiler="ort"' in result.stdout and "global_symbol=" in result.stdout
    out = rr.parse(result.stdout)
    x = np.linspace(-1, 1, 64 * 64, dtype="float32").reshape(64, 64)
    np.testing.assert_allclose(rr.evaluate(out, x), rr.evaluate(rr.parse(path.read_text()), x),
                               rtol=1e-6)
