"""The files ``relay`` commands write (``relay_ref.cli.outputs``), run as a user runs them.

* An output that is one of the command's inputs -- the same path, written another way, or
  reached through a symlink or a hard link -- or another output is refused (exit 2, both
  paths named) and nothing is touched: ``run -o``, ``import -o/--weights``.
* A write that fails leaves every old file as it was and no temporary behind: ``import``
  into a folder or a read-only folder, ``fmt -i`` with one file in a read-only folder.
* A replaced file keeps its mode, owner and group; when the owner cannot be kept (a user
  other than root) a warning says so.
* Deep types and values on the CLI's own paths (``check --types``, ``run -o``'s refusal)
  are not internal errors.

The helper itself (``Outputs``: rollback of a failed commit, a folder staged after a file)
is tested in-process. Cases that need another user run only as root.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from relay_ref.cli.outputs import OutputError, Outputs, refuse_clobbering, same_file

ROOT = Path(__file__).resolve().parent.parent
NOBODY = 65534
ENV = {"NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
AS_ROOT = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="gives files to other users: root only")


def as_user(user: int | None) -> list[str]:
    """The command prefix that runs a command as ``user`` (``setpriv``; None: as we are)."""
    if user is None:
        return []
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"]


@functools.cache
def can_run_as_nobody() -> bool:
    """Root, with ``setpriv``, and this Python (and relay_ref) usable by ``nobody``."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    probe = subprocess.run([*as_user(NOBODY), sys.executable, "-c", "import relay_ref.cli"],
                           capture_output=True, cwd=ROOT, env=ENV, timeout=60)
    return probe.returncode == 0


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry of ``folder`` (recursively): a file's bytes, a link's target."""
    out: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            out[name] = "-> " + os.readlink(path)
        elif path.is_file():
            out[name] = path.read_bytes()
    return out


def model() -> onnx.ModelProto:
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1, name="fc")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(w, "w")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    return proto


PROGRAM = "def @main(%x: Tensor[(3), float32]) { %x + 1f }\n"
MESSY = "def @main() -> int32 { let %x = 1; %x + 1 }\n"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every user may enter and write (pytest's tmp_path is root's alone), for
    tests that run ``relay`` as ``nobody``: skipped where that cannot be done."""
    if not can_run_as_nobody():
        pytest.skip("needs root, setpriv, and a Python that user nobody can run")
    folder = Path(tempfile.mkdtemp(prefix="relay-outputs-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- item 5: an output is never an input ------------------------------------------------------

def test_run_refuses_an_output_that_is_an_input(relay, tmp_path: Path) -> None:
    (tmp_path / "p.relay").write_text(PROGRAM)
    np.save(tmp_path / "x.npy", np.ones(3, np.float32))
    np.savez(tmp_path / "w.npz", unused=np.ones(1))
    (tmp_path / "link.relay").symlink_to("p.relay")
    os.link(tmp_path / "x.npy", tmp_path / "hard.npy")
    sub = tmp_path / "sub"
    sub.mkdir()
    before = snapshot(tmp_path)
    cases = [  # (-o, the input it is, extra arguments)
        ("p.relay", "FILE p.relay", []),
        (str(tmp_path / "p.relay"), "FILE p.relay", []),
        ("link.relay", "FILE p.relay", []),
        ("sub/../p.relay", "FILE p.relay", []),
        ("hard.npy", "argument 1 x.npy", []),
        ("w.npz", "--params w.npz", ["--params", "w.npz"]),
    ]
    for out, named, extra in cases:
        result = relay("run", "p.relay", "x.npy", *extra, "-o", out, cwd=tmp_path)
        assert result.returncode == 2, (out, result.stderr)
        assert f"-o {out} is the same file as the input {named}" in result.stderr
        assert snapshot(tmp_path) == before, out


def test_import_refuses_an_output_that_is_an_input_or_the_other_output(
        relay, tmp_path: Path) -> None:
    onnx.save(model(), tmp_path / "m.onnx")
    (tmp_path / "l.onnx").symlink_to(tmp_path / "m.onnx")
    os.link(tmp_path / "m.onnx", tmp_path / "h.onnx")
    (tmp_path / "sub").mkdir()
    # a model whose weights are an external data file: that file is an input too
    onnx.save_model(model(), tmp_path / "e.onnx", save_as_external_data=True,
                    all_tensors_to_one_file=True, location="e.data", size_threshold=0)
    before = snapshot(tmp_path)
    cases = [  # (arguments, what the message says)
        (["m.onnx", "-o", "m.onnx"], "-o m.onnx is the same file as the input MODEL m.onnx"),
        (["m.onnx", "-o", "l.onnx"], "-o l.onnx is the same file as the input MODEL m.onnx"),
        (["l.onnx", "-o", str(tmp_path / "m.onnx")], "is the same file as the input MODEL "
                                                     "l.onnx"),
        (["m.onnx", "--weights", "h.onnx"], "--weights h.onnx is the same file as the input "
                                            "MODEL m.onnx"),
        (["m.npz", "-o", "m.relay"], None),  # see below: the weights would be the model
        (["m.onnx", "-o", "x.relay", "--weights", "sub/../x.relay"],
         "--weights sub/../x.relay is the same file as the output -o x.relay"),
        (["e.onnx", "-o", "e.relay", "--weights", "e.data"],
         "--weights e.data is the same file as the input external data of e.onnx"),
    ]
    shutil.copy(tmp_path / "m.onnx", tmp_path / "m.npz")  # a model named like its weights
    before["m.npz"] = (tmp_path / "m.npz").read_bytes()
    for args, message in cases:
        result = relay("import", *args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert (message or "the weights file (from -o) m.npz is the same file as the "
                           "input MODEL m.npz") in result.stderr, result.stderr
        assert snapshot(tmp_path) == before, args
    ok = relay("import", "e.onnx", "-o", "e.relay", cwd=tmp_path)  # beside it: fine
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "e.data").read_bytes() == before["e.data"]


def test_refuse_clobbering_in_process(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_text("a")
    (tmp_path / "b").symlink_to(a)
    assert same_file(str(a), str(tmp_path / "b"))
    assert same_file(str(tmp_path / "new"), str(tmp_path / "." / "new"))  # neither exists
    assert not same_file(str(a), str(tmp_path / "new"))
    refuse_clobbering([("IN", str(a)), ("stdin", "-")], [("-o", "-"), ("-o", None)])
    with pytest.raises(OutputError, match="-o .*/b is the same file as the input IN"):
        refuse_clobbering([("IN", str(a))], [("-o", tmp_path / "b")])


# -- item 6: a failed write changes nothing --------------------------------------------------

def test_import_into_a_folder_leaves_every_file(relay, tmp_path: Path) -> None:
    onnx.save(model(), tmp_path / "m.onnx")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir.npz").write_bytes(b"old weights")
    (tmp_path / "t.relay").write_text("old text")
    before = snapshot(tmp_path)
    for args in (["-o", "outdir/"], ["-o", "t.relay", "--weights", str(tmp_path / "outdir")]):
        result = relay("import", "m.onnx", *args, cwd=tmp_path)
        assert result.returncode == 2 and "directory" in result.stderr, (args, result.stderr)
        assert snapshot(tmp_path) == before, args  # no sibling replaced, no temporary left


def test_run_output_into_a_folder(relay, tmp_path: Path) -> None:
    (tmp_path / "p.relay").write_text(PROGRAM)
    (tmp_path / "out").mkdir()
    np.save(tmp_path / "x.npy", np.ones(3, np.float32))
    before = snapshot(tmp_path)
    result = relay("run", "p.relay", "x.npy", "-o", "out/", cwd=tmp_path)
    assert result.returncode == 2 and "cannot write out/: Is a directory" in result.stderr
    assert snapshot(tmp_path) == before  # neither out.npy nor a temporary


def test_a_read_only_folder_leaves_every_file(relay, shared: Path) -> None:
    """As a user other than root, so that permissions apply: the weights could be written,
    the text could not; neither file changes. Likewise ``fmt -i`` over two files."""
    onnx.save(model(), shared / "m.onnx")
    (shared / "m.onnx").chmod(0o644)
    ro = shared / "ro"
    ro.mkdir()
    (ro / "a.relay").write_text("old text")
    (ro / "b.relay").write_text(MESSY)
    (shared / "w.npz").write_bytes(b"old weights")
    (shared / "a.relay").write_text(MESSY)
    for path in (ro / "a.relay", ro / "b.relay", shared / "w.npz", shared / "a.relay"):
        path.chmod(0o666)
    ro.chmod(0o555)
    before = snapshot(shared)
    result = relay("import", "m.onnx", "-o", "ro/a.relay", "--weights", "w.npz",
                   cwd=shared, prefix=as_user(NOBODY))
    assert result.returncode == 2 and "cannot write ro/a.relay" in result.stderr, result.stderr
    assert "no file was changed" in result.stderr
    assert snapshot(shared) == before
    result = relay("fmt", "-i", "a.relay", "ro/b.relay", cwd=shared, prefix=as_user(NOBODY))
    assert result.returncode == 2 and "cannot write ro/b.relay" in result.stderr, result.stderr
    assert snapshot(shared) == before
    ro.chmod(0o777)
    result = relay("fmt", "-i", "a.relay", "ro/b.relay", cwd=shared, prefix=as_user(NOBODY))
    assert result.returncode == 0, result.stderr
    assert (shared / "a.relay").read_text() == (ro / "b.relay").read_text() != MESSY


@pytest.mark.parametrize("failing", [2, 3])
def test_outputs_roll_back_a_failed_commit(tmp_path: Path, monkeypatch, failing: int) -> None:
    a, b, c = (tmp_path / n for n in "abc")
    a.write_text("old a")
    c.write_text("old c")
    real_replace = os.replace
    calls: list[str] = []

    def flaky(src: str, dst: str) -> None:
        calls.append(str(dst))
        if len(calls) == failing:  # a rename fails after the ones before it were done
            raise PermissionError(13, "Permission denied", src, None, dst)
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(PermissionError) as err, Outputs() as out:
        for path in (a, b, c):
            out.text(path, "new")
    assert err.value.filename == str((a, b, c)[failing - 1])  # as given, not the temporary
    assert a.read_text() == "old a" and c.read_text() == "old c" and not b.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "c"]  # no temp, no backup


def test_outputs_discard_on_any_failure(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "a").write_text("old")
    with pytest.raises(IsADirectoryError), Outputs() as out:
        out.text(tmp_path / "a", "new")
        out.text(tmp_path / "d", "never")
    with pytest.raises(ValueError), Outputs() as out:
        out.text(tmp_path / "a", "new")
        out.stage(tmp_path / "b", lambda f: (f.write(b"half"), int("x")))
    with pytest.raises(KeyError), Outputs() as out:
        out.text(tmp_path / "a", "new")
        raise KeyError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "d"]
    assert (tmp_path / "a").read_text() == "old"
    with Outputs() as out:  # the same target twice: the last bytes, one file
        out.text(tmp_path / "a", "first")
        out.text(tmp_path / "." / "a", "second")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "d"]
    assert (tmp_path / "a").read_text() == "second"


# -- item 7: owner, group and mode are kept ---------------------------------------------------

@AS_ROOT
def test_replaced_files_keep_owner_group_and_mode(relay, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.relay").write_text(MESSY)
    (tmp_path / "link.relay").symlink_to(real / "a.relay")
    (tmp_path / "b.relay").write_text(MESSY)
    (tmp_path / "p.relay").write_text(PROGRAM)
    np.save(tmp_path / "r.npy", np.zeros(1))
    np.save(tmp_path / "x.npy", np.array([1, 2, 3], np.float32))
    for name, mode, owner in (("real/a.relay", 0o640, NOBODY), ("b.relay", 0o604, 1),
                              ("r.npy", 0o600, NOBODY)):
        os.chown(tmp_path / name, owner, owner)
        (tmp_path / name).chmod(mode)
    result = relay("fmt", "-i", "link.relay", "b.relay", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    result = relay("run", "p.relay", "x.npy", "-o", "r.npy", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert np.load(tmp_path / "r.npy").tolist() == [2.0, 3.0, 4.0]
    assert (tmp_path / "link.relay").is_symlink()  # written through the link
    assert (real / "a.relay").read_text().startswith('#[version = "0.0.5"]')
    for name, mode, owner in (("real/a.relay", 0o640, NOBODY), ("b.relay", 0o604, 1),
                              ("r.npy", 0o600, NOBODY)):
        info = (tmp_path / name).stat()
        assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (owner, owner, mode)
    assert sorted(p.name for p in real.iterdir()) == ["a.relay"]


def test_an_owner_that_cannot_be_kept_is_a_warning(relay, shared: Path) -> None:
    path = shared / "a.relay"
    path.write_text(MESSY)
    path.chmod(0o666)  # root's file, which nobody may rewrite but not give away
    result = relay("fmt", "-i", "a.relay", cwd=shared, prefix=as_user(NOBODY))
    assert result.returncode == 0, result.stderr
    assert "relay: warning: a.relay: cannot keep its owner and group (root:root)" \
        in result.stderr, result.stderr
    assert path.stat().st_uid == NOBODY and stat.S_IMODE(path.stat().st_mode) == 0o666
    assert path.read_text() != MESSY


# -- item 4 (CLI): deep types and values ------------------------------------------------------

def test_deep_types_and_values_are_not_internal_errors(relay, tmp_path: Path) -> None:
    depth = 1000
    tuple_type, func_type, tuple_value, closure = "float32", "float32", "1f", "1f"
    for _ in range(depth):
        tuple_type, func_type = f"({tuple_type},)", f"fn () -> {func_type}"
        tuple_value, closure = f"({tuple_value},)", f"fn () {{ {closure} }}"
    (tmp_path / "types.relay").write_text(f"def @t(%x: {tuple_type}) {{ %x }}\n"
                                          f"def @f(%x: {func_type}) {{ %x }}\n")
    result = relay("check", "--types", "types.relay", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-500:]
    lines = result.stdout.splitlines()
    assert lines[0] == f"@t : fn ({tuple_type}) -> {tuple_type}"
    assert lines[1] == f"@f : fn ({func_type}) -> {func_type}"
    (tmp_path / "values.relay").write_text(f"def @t() {{ {tuple_value} }}\n"
                                           f"def @main() {{ {closure} }}\n")
    result = relay("run", "values.relay", "-o", "r.npy", cwd=tmp_path)  # the closure
    assert result.returncode == 2, result.stderr[-500:]
    assert "not a tensor: only a tensor can be saved to r.npy" in result.stderr
    assert not (tmp_path / "r.npy").exists()


def test_entry_with_an_at_sign_and_a_near_miss(relay, tmp_path: Path) -> None:
    prog = tmp_path / "p.relay"
    prog.write_text("def @twice(%x: float32) { %x * 2f }\ndef @main() { @twice(3f) }\n")
    for entry, want in [("@main", "6f"), ("main", "6f")]:
        done = relay("run", str(prog), "--entry", entry)
        assert done.returncode == 0 and done.stdout.strip() == want, done.stderr
    done = relay("run", str(prog), "--entry", "@twice", "1.5f")
    assert done.returncode == 0 and done.stdout.strip() == "3f", done.stderr
    done = relay("run", str(prog), "--entry", "twise", "1f")
    assert done.returncode == 2 and "did you mean @twice?" in done.stderr


def test_an_output_that_is_not_a_regular_file_is_written_into_never_replaced(relay,
        tmp_path: Path) -> None:
    prog = tmp_path / "p.relay"
    prog.write_text("def @main() { ones(shape=[2]) }\n")
    done = relay("run", prog, "-o", os.devnull)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # still the device
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    done = relay("run", prog, "-o", fifo)
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    saved = tmp_path / "saved.npy"
    saved.write_bytes(got[0])
    np.testing.assert_array_equal(np.load(saved), np.ones(2, "float32"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.relay", "pipe", "saved.npy"]
