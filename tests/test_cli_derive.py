"""``relay check --derive FILE [--global NAME]`` (relay_ref/cli/derive.py), as a subprocess:
the derivation on stdout (exit 0), every global's in file order without ``--global``, the
derivation up to the failure then the located error (exit 1), other globals' errors listed
apart, usage errors (exit 2), rule names coloured only on request (FORCE_COLOR; never with
NO_COLOR)."""

from __future__ import annotations

from pathlib import Path

GOLDEN = Path(__file__).parent / "typecheck" / "derivations"


def test_derive_prints_the_golden_tree(relay) -> None:
    res = relay("check", "--derive", str(GOLDEN / "broadcast.relay"))
    assert res.returncode == 0, res.stderr
    assert res.stdout == (GOLDEN / "broadcast.txt").read_text()
    assert res.stderr == ""


def test_derive_of_an_ill_typed_global(relay, tmp_path: Path) -> None:
    path = tmp_path / "p.relay"
    path.write_text("def @f(%x: Tensor[(3), float32]) { add(%x, 1) }\ndef @main() { 1 }\n")
    res = relay("check", "--derive", str(path), "--global", "f")
    assert res.returncode == 1
    assert res.stdout.startswith("T-Fn  @f = fn (%x) { %x + 1 }")
    assert "error: add: dtypes differ: float32 vs int32 [T-App-Op]" in res.stdout
    assert res.stderr.startswith(f"{path}:1:36: error: add: dtypes differ")
    res = relay("check", "--derive", str(path), "--global", "g")
    assert res.returncode == 2 and res.stdout == ""
    assert f"{path}: no global @g to derive (its globals: @f, @main)" in res.stderr


def test_errors_of_other_globals_are_listed_apart(relay) -> None:
    path = GOLDEN / "other_global_error.relay"
    res = relay("check", "--derive", str(path), "--global", "main")
    assert res.returncode == 1
    assert res.stdout == (GOLDEN / "other_global_error.txt").read_text()
    assert res.stderr.startswith(f"{path}:2:1: error: the body does not have the declared")


def test_derive_options_need_derive_and_colour(relay) -> None:
    path = str(GOLDEN / "broadcast.relay")
    for option in ("--max-depth", "--max-nodes"):
        res = relay("check", option, "3", path)
        assert res.returncode == 2 and res.stdout == ""
        assert f"{option} applies to a derivation: use it with --derive" in res.stderr
    res = relay("check", "--derive", path, env={"FORCE_COLOR": "1", "PATH": ""})
    assert res.returncode == 0
    assert res.stdout.startswith("\x1b[1;35mT-Fn\x1b[0m  @main = ")
    res = relay("check", "--derive", path, env={"FORCE_COLOR": "1", "NO_COLOR": "1",
                                                 "PATH": ""})
    assert "\x1b" not in res.stdout


def test_derive_without_global_shows_every_global_in_file_order(relay, tmp_path: Path) -> None:
    path = tmp_path / "three.relay"
    # not alphabetical, @main in the middle, one ill-typed, one using the prelude's @map
    path.write_text("def @zeta(%x: int32) -> float32 { %x }\n"
                    "def @main() -> List[int32] { @map(@alpha, Cons(1, Nil)) }\n"
                    "def @alpha(%y: int32) { add(%y, 1) }\n")
    res = relay("check", "--derive", str(path))
    assert res.returncode == 1
    roots = [line for line in res.stdout.splitlines() if line.startswith("T-Fn")]
    assert [r.split()[1] for r in roots] == ["@zeta", "@main", "@alpha"], res.stdout
    assert "\n\nT-Fn  @main = " in res.stdout and "\n\nT-Fn  @alpha = " in res.stdout
    assert "T-Fn  @alpha = fn (%y) { %y + 1 } : fn (int32) -> int32" in res.stdout
    assert "error: the body does not have the declared return type" in res.stdout
    # @zeta's error is in its own tree: not listed again, and reported once on stderr
    assert "errors outside this derivation" not in res.stdout
    assert res.stderr.count("error: the body does not have the declared") == 1
    assert res.stderr.startswith(f"{path}:1:1: error:")
    one = relay("check", "--derive", str(path), "--global", "@alpha")
    assert one.returncode == 1 and one.stdout.startswith("T-Fn  @alpha = ")
    assert one.stdout.count("T-Fn  @") == 1 and "errors outside this derivation" in one.stdout
