"""``relay check --derive FILE [--global NAME]`` (relay_ref/cli_derive.py), as a subprocess:
the derivation on stdout (exit 0), the derivation up to the failure then the located error
(exit 1), usage errors naming the globals (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "typecheck" / "derivations"


def _relay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relay_ref", *args], capture_output=True,
                          text=True, timeout=120, env={"NO_COLOR": "1", "PATH": ""})


def test_derive_prints_the_golden_tree() -> None:
    res = _relay("check", "--derive", str(GOLDEN / "broadcast.relay"))
    assert res.returncode == 0, res.stderr
    assert res.stdout == (GOLDEN / "broadcast.txt").read_text()
    assert res.stderr == ""


def test_derive_of_an_ill_typed_global(tmp_path: Path) -> None:
    path = tmp_path / "p.relay"
    path.write_text("def @f(%x: Tensor[(3), float32]) { add(%x, 1) }\ndef @main() { 1 }\n")
    res = _relay("check", "--derive", str(path), "--global", "f")
    assert res.returncode == 1
    assert res.stdout.startswith("T-Fn  @f = fn (%x) { %x + 1 }")
    assert "error: add: dtypes differ: float32 vs int32 [T-App-Op]" in res.stdout
    assert res.stderr.startswith(f"{path}:1:36: error: add: dtypes differ")
    res = _relay("check", "--derive", str(path), "--global", "g")
    assert res.returncode == 2 and res.stdout == ""
    assert f"{path}: no global @g to derive (its globals: @f, @main)" in res.stderr
