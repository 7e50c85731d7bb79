"""``relay fmt`` and ``relay check`` on several files, as a user runs them (subprocesses):
comments survive, ``-i`` keeps permissions and symlinks and writes atomically, a missing
file is reported without stopping the others, and the shipped examples are formatted and
run as their header comments say."""

from __future__ import annotations

import os
import re
import shlex
import stat
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.relay"))


MESSY = """// what @main does
def @main() -> int32 { let %x = 1; // one
  %x + 1 /* plus one */ }
"""
FORMATTED = """#[version = "0.0.5"]
// what @main does
def @main() -> int32 {
  let %x = 1; // one
  add(%x, 1) /* plus one */
}
"""


def test_fmt_in_place_keeps_comments_and_permission_bits(relay, tmp_path: Path) -> None:
    path = tmp_path / "prog.relay"
    path.write_text(MESSY)
    path.chmod(0o640)
    result = relay("fmt", "-i", str(path))
    assert result.returncode == 0, result.stderr
    assert path.read_text() == FORMATTED
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["prog.relay"]  # no temporary left over
    assert relay("fmt", "--check", str(path)).returncode == 0


def test_fmt_in_place_writes_through_a_symlink(relay, tmp_path: Path) -> None:
    target_dir = tmp_path / "real"
    target_dir.mkdir()
    target = target_dir / "prog.relay"
    target.write_text(MESSY)
    target.chmod(0o600)
    link = tmp_path / "link.relay"
    link.symlink_to(target)
    result = relay("fmt", "-i", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == FORMATTED
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target_dir.iterdir()) == ["prog.relay"]


def test_fmt_in_place_error_leaves_the_file_untouched(relay, tmp_path: Path) -> None:
    bad = tmp_path / "bad.relay"
    bad.write_text("def @main() { let %x = ; %x }\n")
    result = relay("fmt", "-i", str(bad))
    assert result.returncode == 1
    assert bad.read_text() == "def @main() { let %x = ; %x }\n"


def test_fmt_check_passes_on_every_shipped_example(relay) -> None:
    result = relay("fmt", "--check", *map(str, EXAMPLES))
    assert result.returncode == 0, result.stderr
    assert "would reformat" not in result.stderr


def test_check_reports_a_missing_file_and_checks_the_others(relay, tmp_path: Path) -> None:
    (tmp_path / "a.relay").write_text("def @main() -> int32 { 1 }\n")
    (tmp_path / "b.relay").write_text("def @main() -> int32 { 2 }\n")
    (tmp_path / "bad.relay").write_text("def @main() -> int32 { True }\n")
    result = relay("check", "a.relay", "missing.relay", "b.relay", cwd=tmp_path)
    assert result.returncode == 2
    assert "missing.relay" in result.stderr and "no such file" in result.stderr
    assert "a.relay: ok" in result.stderr and "b.relay: ok" in result.stderr
    worst = relay("check", "bad.relay", "missing.relay", "a.relay", cwd=tmp_path)
    assert worst.returncode == 2 and "a.relay: ok" in worst.stderr
    assert "bad.relay:1:" in worst.stderr  # the type error is still reported
    errors_only = relay("check", "a.relay", "bad.relay", cwd=tmp_path)
    assert errors_only.returncode == 1


def test_fmt_reports_a_missing_file_and_formats_the_others(relay, tmp_path: Path) -> None:
    (tmp_path / "a.relay").write_text(MESSY)
    result = relay("fmt", "missing.relay", "a.relay", cwd=tmp_path)
    assert result.returncode == 2
    assert "missing.relay" in result.stderr
    assert result.stdout == FORMATTED


def _run_lines(example: Path) -> list[str]:
    """The ``relay run ...`` command lines in an example's header comment."""
    lines = []
    for line in example.read_text().splitlines():
        if line.startswith("#[version"):
            continue
        if not line.startswith("//"):
            break
        text = line.lstrip("/ ")
        if text.startswith("relay run "):
            lines.append(text.split("  ")[0])
    return lines


def test_mlp_example_runs_as_its_header_comment_says(relay, tmp_path: Path) -> None:
    demo, own = _run_lines(ROOT / "examples" / "mlp.relay")
    assert demo == "relay run examples/mlp.relay --entry demo"
    result = relay(*shlex.split(demo)[1:])
    assert result.returncode == 0, result.stderr
    probs = [float(v) for v in re.findall(r"([-+0-9.e]+)f", result.stdout)]
    assert len(probs) == 10 and abs(sum(probs) - 1) < 1e-5
    assert probs == sorted(probs) and probs[0] < probs[-1]  # the biases rank the classes
    # The second command line, with .npy files of the annotated shapes in the current dir.
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    shapes = {"x": (1, 784), "w1": (128, 784), "b1": (128,), "w2": (10, 128), "b2": (10,)}
    for name, shape in shapes.items():
        np.save(tmp_path / f"{name}.npy", np.full(shape, 0.01, dtype="float32"))
    result = relay(*shlex.split(own)[1:], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(re.findall(r"[0-9]f", result.stdout)) == 10  # ten float32 probabilities
