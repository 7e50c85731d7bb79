"""``relay partition`` (spec/byoc.md): --help, the error paths (unknown backend, no
--target, a missing file or weights file: usage, exit 2; a bad program: exit 1), the header
once --params binds the weights, and the
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


def test_unknown_backend_is_a_usage_error(relay, program: Path) -> None:
    result = relay("partition", "--target", "nosuchbackend", program)
    assert result.returncode == 2
    assert "unknown backend 'nosuchbackend'" in result.stderr
    assert result.stdout == ""


def test_misspelt_builtin_backend_gets_a_hint(relay, program: Path) -> None:
    result = relay("partition", "--target", "orrt", program)
    assert result.returncode == 2 and "did you mean 'ort'" in result.stderr


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


@pytest.mark.parametrize("name, suggestion", [("onnxruntime", "ort"), ("jax", "xla"),
                                              ("orrt", "ort")])
def test_unknown_target_is_a_usage_error_with_a_hint(relay, program: Path, name: str,
                                                     suggestion: str) -> None:
    result = relay("partition", "--target", name, program)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"relay: error: --target: unknown backend '{name}'; "
                                    f"did you mean '{suggestion}'?"), result.stderr


def test_target_is_required_in_the_usage_line(relay, program: Path) -> None:
    result = relay("partition", program)
    assert result.returncode == 2
    usage = relay("partition", "--help").stdout.split("\n\n")[0]
    assert " --target NAME " in usage and "[--target NAME]" not in usage


def test_help_names_the_builtin_backends_and_the_priority(relay) -> None:
    text = " ".join(relay("partition", "--help").stdout.split())
    assert "ort (onnxruntime) or xla (JAX)" in text
    assert "Composites are formed first" in text
    assert "first --target supporting it" in text
    assert "the first that supports an operator wins" not in text


def test_params_replace_the_stale_weights_header(relay, tmp_path: Path) -> None:
    """``relay import``'s header names the weights file; once ``--params`` binds them, the
    output names none (``relay export`` / ``run`` would load them again) and says so."""
    import numpy as np

    import relay_ref as rr
    from relay_ref.cli.weights import weights_named_in

    w = np.linspace(-1, 1, 64 * 64, dtype="float32").reshape(64, 64)
    np.savez(tmp_path / "w.npz", w=w)
    path = tmp_path / "m.relay"
    path.write_text("// Imported from m.onnx by relay import (relay_ref 0.1.0): 2 nodes.\n"
                    "// Weights: w.npz (1 arrays keyed by @main's parameter names)\n"
                    "// Run: relay run m.relay --params w.npz INPUT_x.npy\n"
                    "def @main(%x: Tensor[(64, 64), float32], %w: Tensor[(64, 64), float32]) "
                    "{\n  %0 = nn.relu(add(%x, %w));\n  exp(%0)\n}\n")
    assert weights_named_in(path.read_text(), str(path)) is not None  # the stale header
    result = relay("partition", "--target", "ort", "--params", tmp_path / "w.npz", path)
    assert result.returncode == 0, result.stderr
    out_path = tmp_path / "part.relay"
    out_path.write_text(result.stdout)
    assert weights_named_in(result.stdout, str(out_path)) is None
    assert "w.npz" in result.stdout.splitlines()[0] and "bound" in result.stdout.splitlines()[0]
    assert "--params" not in result.stdout and "Weights:" not in result.stdout
    x = np.linspace(0, 1, 64 * 64, dtype="float32").reshape(64, 64)
    np.testing.assert_allclose(rr.evaluate(rr.parse(result.stdout), x),
                               rr.evaluate(rr.parse(path.read_text()), x, w), rtol=1e-6)
