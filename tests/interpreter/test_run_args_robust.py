"""``relay run`` never fails internally on malformed arguments or metadata (issue 9).

* ``.npy`` arguments go through ``load_npy``: a file that cannot be read is a usage error
  (exit 2, ``relay: error: FILE: cannot load argument N: ...``), and nothing larger than the
  file is ever allocated;
* literal arguments are Relay text: parse, type and run-time errors are located
  ``RelayError``s (exit 1);
* a malformed ``#[metadata]`` section is a located ``ParseError`` (exit 1).

Named cases run through the CLI in subprocesses (started together, to keep this quick);
hypothesis fuzzes the two readers in-process, and a few fuzzed files go through the CLI too.
"""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import numpy.lib.format as npy_format
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.cli.run import parse_argument
from relay_ref.cli.weights import NpyError, load_npy

ROOT = Path(__file__).resolve().parents[2]
PROG = """def @main(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
  add(%x, %x)
}
"""


def _good_npy() -> bytes:
    out = io.BytesIO()
    np.save(out, np.arange(4, dtype="float32").reshape(2, 2))
    return out.getvalue()


GOOD = _good_npy()


def _header_only(shape: tuple[int, ...], descr: str = "<f4", version: int = 1) -> bytes:
    out = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    if version == 1:
        npy_format.write_array_header_1_0(out, header)
    else:
        npy_format.write_array_header_2_0(out, header)
    return out.getvalue()


def _pickled() -> bytes:
    out = io.BytesIO()
    np.save(out, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    return out.getvalue()


def _start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "relay_ref", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                                 "PYTHONPATH": str(ROOT)})


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


# name -> (file contents, or "dir" / None for a directory / a missing file; expected words)
NPY_CASES = {
    "empty": (b"", "the file is empty"),
    "huge": (_header_only((100_000_000_000, 100_000_000_000)),
             "the header promises a float32 array of shape (100000000000, 100000000000)"),
    "truncated": (GOOD[:-5], "it is truncated"),
    "pickled": (_pickled(), "it holds Python objects (a pickled array)"),
    "magic": (b"XXXXXX" + GOOD[6:], "not a .npy file"),
    "zero_extent": (_header_only((0, 2**62, 2**62)), "too large for any array"),
    "ndim100": (_header_only((1,) * 100), "100 dimensions"),
    "bool_shape": (_header_only((True,)), "is not a tuple of integers"),
    "directory": ("dir", "is a directory"),
    "missing": (None, "no such file"),
}


def _make(tmp: Path, name: str, content: bytes | str | None) -> Path:
    path = tmp / f"{name}.npy"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    return path


def test_named_npy_cases_via_cli(tmp_path):
    (tmp_path / "p.relay").write_text(PROG)
    procs = {}
    for name, (content, _) in NPY_CASES.items():
        _make(tmp_path, name, content)
        procs[name] = _start("run", "p.relay", f"{name}.npy", cwd=tmp_path)
    (tmp_path / "ok.npy").write_bytes(GOOD)
    procs["ok"] = _start("run", "p.relay", "ok.npy", cwd=tmp_path)
    results = {name: _finish(p) for name, p in procs.items()}
    assert results["ok"][0] == 0 and "[[0f, 2f]" in results["ok"][1], results["ok"]
    for name, (_, words) in NPY_CASES.items():
        code, _, err = results[name]
        assert code == 2, (name, err)
        assert err.startswith(f"relay: error: {name}.npy: cannot load argument 1: "), err
        assert words in err and "Traceback" not in err, (name, err)
        assert len(err.splitlines()) == 1, err


@pytest.mark.parametrize("name", NPY_CASES)
def test_named_npy_cases_in_process(tmp_path, name):
    content, words = NPY_CASES[name]
    with pytest.raises(NpyError, match=".") as info:
        load_npy(str(_make(tmp_path, name, content)))
    assert words in str(info.value)


def test_header_checked_before_allocating(tmp_path):
    # 1e11 x 1e11 float32 overflows int64 (NumPy's own size wraps); nothing is allocated.
    path = tmp_path / "big.npy"
    path.write_bytes(_header_only((100_000_000_000, 100_000_000_000)) + b"\0" * 64)
    with pytest.raises(NpyError, match=r"40000000000000000000000 bytes\) but the file holds 64"):
        load_npy(str(path))


@pytest.mark.parametrize("descr,words", [("<c8", "complex64"), ("<U3", "<U3"),
                                         ("|V8", "|V8")])
def test_dtypes_relay_has_no_tensor_for(tmp_path, descr, words):
    path = tmp_path / "c.npy"
    path.write_bytes(_header_only((1,), descr) + b"\0" * 16)
    with pytest.raises(NpyError, match="not one a Relay tensor can have") as info:
        load_npy(str(path))
    assert words in str(info.value)


def test_loads_what_numpy_saves(tmp_path):
    arrays = [np.arange(6, dtype=">i4").reshape(2, 3), np.asfortranarray(np.eye(3)),
              np.zeros((0, 4), "uint8"), np.array(True), np.ones((2, 2), "float16")]
    for i, array in enumerate(arrays):
        path = tmp_path / f"a{i}.npy"
        np.save(path, array)
        loaded = load_npy(str(path))
        assert loaded.dtype.name == array.dtype.name and loaded.dtype.isnative
        np.testing.assert_array_equal(loaded, array)
    path = tmp_path / "v2.npy"
    path.write_bytes(_header_only((2,), "<i8", version=2) + np.arange(2).tobytes())
    assert load_npy(str(path)).tolist() == [0, 1]


def test_bad_metadata_via_cli(tmp_path):
    text = PROG.replace("add(%x, %x)", "meta[relay.Constant][0]")
    (tmp_path / "attrs.relay").write_text(
        text + '#[metadata]\n{"root": 1, "nodes": [], "attrs": "0.8"}\n')
    (tmp_path / "deep.relay").write_text(text + "#[metadata]\n" + "[" * 200_000)
    procs = [_start("check", "attrs.relay", cwd=tmp_path),
             _start("run", "deep.relay", "ok.npy", cwd=tmp_path)]
    (code1, _, err1), (code2, _, err2) = (_finish(p) for p in procs)
    assert code1 == 1 and err1.startswith("attrs.relay:4:1: error: bad #[metadata] section: "
                                          "'attrs' must be an object, found the string '0.8'")
    assert code2 == 1 and "deep.relay:4:1: error: bad #[metadata] section: the JSON is " \
        "nested too deeply" in err2
    assert "Traceback" not in err1 + err2


# ---- fuzzing the .npy reader --------------------------------------------------------------

def _check_npy(tmp: Path, data: bytes) -> None:
    path = tmp / "fuzz.npy"
    path.write_bytes(data)
    try:
        array = load_npy(str(path))
    except NpyError as err:
        assert str(err) and "\n" not in str(err)
    else:
        assert isinstance(array, np.ndarray) and array.nbytes <= len(data)


_HEADER_FIELDS = st.fixed_dictionaries({
    "descr": st.sampled_from(["<f4", ">f8", "|b1", "<i8", "|u1", "|O", "<c16", "<U2", "f4",
                              "[('a', '<i4')]", "'<f4'", "None", "(1, 2)", "{}"]),
    "fortran_order": st.sampled_from(["False", "True", "0", "'no'"]),
    "shape": st.lists(st.integers(-3, 5) | st.sampled_from([2**31, 2**62, 2**64, 10**30]),
                      max_size=4).map(lambda s: repr(tuple(s)))
    | st.sampled_from(["(2, 2)", "[2, 2]", "(2.0,)", "()", "('a',)", "(" * 300 + ")" * 300]),
})


@settings(max_examples=80)
@given(data=st.data())
def test_fuzz_npy_bytes(tmp_path_factory, data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("npy")
    op = data.draw(st.sampled_from(["random", "truncate", "flip", "header"]))
    if op == "random":
        blob = data.draw(st.binary(max_size=200))
    elif op == "truncate":
        blob = GOOD[: data.draw(st.integers(0, len(GOOD)))]
    elif op == "flip":
        raw = bytearray(GOOD)
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        blob = bytes(raw)
    else:
        fields = data.draw(_HEADER_FIELDS)
        keys = data.draw(st.lists(st.sampled_from(sorted(fields)), unique=True, min_size=2,
                                  max_size=3))
        header = "{" + ", ".join(f"'{k}': {fields[k]}" for k in keys) + "}"
        header = header.encode("latin1")
        header += b" " * (-(len(header) + 11) % 64) + b"\n"
        blob = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
        blob += data.draw(st.binary(max_size=48))
    _check_npy(tmp, blob)


def test_fuzzed_npy_files_via_cli(tmp_path):
    (tmp_path / "p.relay").write_text(PROG)
    rng = random.Random(9)
    procs = []
    for i in range(3):
        raw = bytearray(GOOD)
        for _ in range(3):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        (tmp_path / f"f{i}.npy").write_bytes(bytes(raw[: rng.randrange(len(raw) + 1)]))
        procs.append(_start("run", "p.relay", f"f{i}.npy", cwd=tmp_path))
    for proc in procs:
        code, _, err = _finish(proc)
        assert code in (0, 1, 2) and "Traceback" not in err and "internal error" not in err


# ---- fuzzing the literal-argument reader --------------------------------------------------

LITERAL_MODULE = rr.infer_types(rr.parse("""
def @main(%x: int64, %xs: List[int32], %p: (int32, bool), %f: fn (int32) -> int32) {
  (%x, %xs, %p, %f(1))
}
def @id(%y: int32) -> int32 { %y }
"""))
PARAMS = LITERAL_MODULE.functions["main"].params
TOKENS = ["3", "2.5f", "-1", "1i64", "300i8", "1e400f", "True", "False", "(", ")", ",", ".0",
          ".5", "Cons", "Nil", "Some", "None", "fn", "(%a)", "(%a: int32)", "{", "}", "%a",
          "%x", "@id", "@main", "@map", "let", "=", ";", "add", "ref", "match", "_", "=>",
          "if", "else", "[", "]", "meta[relay.Constant][0]", "#[metadata]", '{"nodes": 1}',
          "zeros(shape=[2], dtype=\"int32\")", "-", "/", "1 / 0", "x.npy", "\x00", "é", " "]


def _check_literal(text: str, index: int) -> None:
    param = PARAMS[index]
    try:
        value = parse_argument(text, index, LITERAL_MODULE, param.type_annotation,
                               param.name_hint)
    except rr.RelayError as err:
        assert err.diagnostics and err.render()
        assert err.span is None or err.span.name.startswith(("<argument", "/"))
    else:
        assert value is not None  # a value, or an exit code for an unreadable .npy file
        if isinstance(value, int):
            assert value == 2


@settings(max_examples=120)
@given(index=st.integers(0, len(PARAMS) - 1),
       tokens=st.lists(st.sampled_from(TOKENS), min_size=0, max_size=8))
def test_fuzz_literal_tokens(index: int, tokens: list[str]) -> None:
    _check_literal(" ".join(tokens), index)


@settings(max_examples=60)
@given(index=st.integers(0, len(PARAMS) - 1), text=st.text(max_size=12))
def test_fuzz_literal_text(index: int, text: str) -> None:
    _check_literal(text, index)


@pytest.mark.parametrize("text,index,words", [
    ("(1, 2).5", 2, "index 5 is out of range"),
    ("Cons(1, 2)", 1, "constructor Cons"),
    ("Nil", 2, "cannot unify"),
    ("add(1, True)", 0, "dtypes differ"),
    ("1 / 0", 0, "division by zero"),
])
def test_ill_typed_or_failing_literals_are_located(text, index, words):
    param = PARAMS[index]
    with pytest.raises(rr.RelayError) as info:
        parse_argument(text, index, LITERAL_MODULE, param.type_annotation, param.name_hint)
    assert words in info.value.message
    assert info.value.span is not None and info.value.span.name == f"<argument {index + 1}>"


def test_literals_still_take_the_parameter_type():
    """The type check uses the parameter's type: `Nil` and an unannotated `fn` are fine."""
    assert parse_argument("Nil", 1, LITERAL_MODULE, PARAMS[1].type_annotation, "xs").fields == ()
    func = parse_argument("fn (%a) { %a }", 3, LITERAL_MODULE, PARAMS[3].type_annotation, "f")
    assert isinstance(func, (rr.Closure, rr.RecClosure))
    three = parse_argument("3", 0, LITERAL_MODULE, PARAMS[0].type_annotation, "x")
    assert int(three) == 3
