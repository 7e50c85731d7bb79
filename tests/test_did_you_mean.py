""""Did you mean": every unknown name relay reports comes with the closest known one, from
one helper (``relay_ref.suggest``).

Each misspelling class has its own test with several inputs: in the parser (operators,
locals, constructors, globals, types and data types, attributes; checked in-process on the
located diagnostic), on the command line (subcommands, options; in a subprocess) and in the
kernel (commands, options, ``:doc``, and the parser's suggestions in a cell; through a real
kernel). Names with nothing close keep their message unchanged.
"""

from __future__ import annotations

import ast
import os
import sys
import tempfile
from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref import suggest

ROOT = Path(__file__).resolve().parent.parent


# -- the helper --------------------------------------------------------------------------------

def test_helper_matches_case_insensitively_and_never_offers_the_name() -> None:
    assert suggest.close_names("nn.dens", ["add", "nn.dense", "nn.pad"]) == ["nn.dense"]
    assert suggest.close_names("foldconstant", ["FoldConstant", "FuseOps"]) == ["FoldConstant"]
    assert suggest.close_names("x", ["x", "xx"]) == ["xx"]  # never the name itself
    assert suggest.close_names("zzz", ["add", "nn.dense"]) == []
    assert suggest.close_names("T-Ap", ["T-App", "T-App-Op", "E-App", "T-Let"], limit=3) \
        == ["T-App", "T-App-Op", "E-App"]


def test_helper_words_the_hint_one_way() -> None:
    assert suggest.did_you_mean("foldll", ["foldl", "foldr", "map"], sigil="@") \
        == "; did you mean @foldl?"
    assert suggest.did_you_mean("FoldConstnt", ["FoldConstant"], quote=True) \
        == "; did you mean 'FoldConstant'?"
    assert suggest.did_you_mean("zzz", ["foldl"]) == ""
    assert suggest.hint(["A", "B", "C"]) == "; did you mean A, B or C?"
    assert suggest.hint(["A", "B"], conjunction="and") == "; did you mean A and B?"
    assert suggest.hint([]) == ""


def test_difflib_is_used_by_the_helper_only() -> None:
    """Pass names, rule names, gradient entries, `relay opt`, `--entry` all go through the
    helper."""
    users = set()
    for path in [*ROOT.joinpath("relay_ref").rglob("*.py"),
                 *ROOT.joinpath("kernel", "relay_kernel").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        if "difflib" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if "difflib" in names:
                users.add(path.relative_to(ROOT).as_posix())
    assert users == {"relay_ref/suggest.py"}


# -- the parser: located diagnostics ------------------------------------------------------------

def _diagnostic(text: str, *, expr: bool = False) -> tuple[str, int, int]:
    """(message, line, column) of the one error parsing ``text`` gives."""
    with pytest.raises(rr.ParseError) as info:
        rr.parse_expr(text) if expr else rr.parse(text, "prog.relay")
    d = info.value.diagnostics[0]
    assert d.span is not None
    return d.message, d.span.line, d.span.column


OPERATORS = [
    ("def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {\n"
     "  nn.dens(%x, %w)\n}", "unknown operator 'nn.dens'; did you mean nn.dense?", 2, 3),
    ("def @main(%x: Tensor[(2, 3), float32]) { nn.batch_flaten(%x) }",
     "unknown operator 'nn.batch_flaten'; did you mean nn.batch_flatten?", 1, 42),
    ("def @main(%x: float32) { sofmax(%x) }",
     "unknown operator 'sofmax'; did you mean nn.softmax?", 1, 26),
    ("def @main(%x: float32) { sigmod(%x) }",
     "unknown operator 'sigmod'; did you mean sigmoid?", 1, 26),
    ("def @main(%x: int32) { add(x, 1) }",  # a local missing its %
     "unknown operator 'x'; did you mean %x?", 1, 28),
    ("def @main(%x: int32) { zzz(%x) }",  # nothing close: the old hint stays
     "unknown operator 'zzz' (maybe a local variable missing its '%'?)", 1, 24),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), OPERATORS)
def test_misspelt_operator(text: str, message: str, line: int, column: int) -> None:
    assert _diagnostic(text) == (message, line, column)


LOCALS = [
    ("fn (%y: int32) { %yy }", "unbound local variable %yy; did you mean %y?", 1, 18),
    ("def @main(%count: int32) {\n  let %total = %count;\n  %totl + %cont\n}",
     "unbound local variable %totl; did you mean %total?", 3, 3),
    ("def @main(%xs: List[int32]) {\n  match (%xs) { Cons(%head, _) => %haed, Nil => 0 }\n}",
     "unbound local variable %haed; did you mean %head?", 2, 35),
    ("def @main(%x: int32) { %q }", "unbound local variable %q", 1, 24),  # nothing close
]


@pytest.mark.parametrize(("text", "message", "line", "column"), LOCALS)
def test_misspelt_local(text: str, message: str, line: int, column: int) -> None:
    assert _diagnostic(text, expr=text.startswith("fn")) == (message, line, column)


CONSTRUCTORS = [
    ("def @main() { Nill }", "unknown constructor 'Nill'; did you mean Nil?", 1, 15),
    ("def @main() { Cosn(1, Nil) }", "unknown constructor 'Cosn'; did you mean Cons?", 1, 15),
    ("type Colour { Red, Green }\ndef @main() { Gren }",
     "unknown constructor 'Gren'; did you mean Green?", 2, 15),
    ("def @main(%x: List[int32]) {\n  match (%x) { Cons(%h, _) => %h, Nill => 0 }\n}",
     "unknown constructor 'Nill' in pattern; did you mean Nil?", 2, 35),
    ("def @main() { Xyzzy }", "unknown constructor 'Xyzzy'", 1, 15),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), CONSTRUCTORS)
def test_misspelt_constructor(text: str, message: str, line: int, column: int) -> None:
    assert _diagnostic(text) == (message, line, column)


GLOBALS = [
    ("def @main() { @foldll }", "undefined global function @foldll; did you mean @foldl?",
     1, 15),
    ("def @main() { @mapp }", "undefined global function @mapp; did you mean @map?", 1, 15),
    ("def @double(%x: int32) { %x * 2 }\ndef @main() { @doubel(2) }",
     "undefined global function @doubel; did you mean @double?", 2, 15),
    ("def @main() { @xyzzy }", "undefined global function @xyzzy", 1, 15),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), GLOBALS)
def test_misspelt_global(text: str, message: str, line: int, column: int) -> None:
    assert _diagnostic(text) == (message, line, column)


TYPES = [
    ("def @main(%x: Lst[int32]) { %x }", "unknown type 'Lst'; did you mean List?", 1, 15),
    ("def @main(%x: Optoin[int32]) { %x }", "unknown type 'Optoin'; did you mean Option?",
     1, 15),
    ("def @id[Alpha](%x: Alpa) { %x }", "unknown type 'Alpa'; did you mean Alpha?", 1, 20),
    ("def @main(%x: flaot32) { %x }", "unknown type 'flaot32'; did you mean float32?", 1, 15),
    ("def @main(%x: Tensor[(2), flaot32]) { %x }",
     "unknown data type 'flaot32'; did you mean float32?", 1, 27),
    ("def @main(%x: Tensor[(2), it32]) { %x }",
     "unknown data type 'it32'; did you mean int32?", 1, 27),
    ("def @main(%x: Qqq) { %x }", "unknown type 'Qqq'", 1, 15),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), TYPES)
def test_misspelt_type_name(text: str, message: str, line: int, column: int) -> None:
    assert _diagnostic(text) == (message, line, column)


ATTRIBUTES = [
    ("def @main(%x: Tensor[(1, 1, 4, 4), float32]) { nn.max_pool2d(%x, pool_sise=[2, 2]) }",
     "operator nn.max_pool2d has no attribute 'pool_sise'; did you mean pool_size? (its "
     "attributes: pool_size, strides, dilation, padding, layout, out_layout, ceil_mode)",
     1, 66),
    ("def @main(%x: Tensor[(2, 3), float32]) { nn.softmax(%x, axs=0) }",
     "operator nn.softmax has no attribute 'axs'; did you mean axis? (its attributes: axis)",
     1, 57),
    ("def @main(%x: Tensor[(2, 3), float32]) { reshape(%x, new_shape=[6]) }",
     "operator reshape has no attribute 'new_shape'; did you mean newshape? (its "
     "attributes: newshape, allowzero)", 1, 54),
    ("def @main(%x: float32) { nn.relu(%x, alpha=1f) }",  # nothing close
     "operator nn.relu has no attribute 'alpha' (its attributes: none)", 1, 38),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), ATTRIBUTES)
def test_misspelt_attribute(text: str, message: str, line: int, column: int) -> None:
    assert _diagnostic(text) == (message, line, column)


def test_the_hint_is_in_the_rendered_diagnostic() -> None:
    with pytest.raises(rr.ParseError) as info:
        rr.parse("def @main() {\n  @foldll\n}", "prog.relay")
    lines = info.value.render().splitlines()
    assert lines[0] == ("prog.relay:2:3: error: undefined global function @foldll; "
                        "did you mean @foldl?")
    assert lines[-1].endswith("^^^^^^^")


def test_pass_and_entry_names_use_the_same_wording() -> None:
    with pytest.raises(ValueError, match=r"did you mean 'FoldConstant'\?"):
        rr.optimize(rr.parse("def @main() { 1 }"), ["foldconstnt"])
    mod = rr.parse("def @f(%x: float32) { %x * %x }")
    with pytest.raises(rr.RelayError, match=r"no function @F; did you mean @f\?"):
        rr.gradient(mod, entry="F")


# -- the command line (a subprocess, as a user runs it) ------------------------------------------

@pytest.mark.parametrize(("typed", "meant"), [("chek", "check"), ("fmtt", "fmt"),
                                             ("imprt", "import"), ("dco", "doc")])
def test_misspelt_subcommand(relay, typed: str, meant: str) -> None:
    done = relay(typed, "examples/list_sum.relay")
    assert done.returncode == 2
    assert f"invalid choice: '{typed}'; did you mean {meant}? (choose from check, run" \
        in done.stderr


@pytest.mark.parametrize(("args", "hint"), [
    (("run", "examples/list_sum.relay", "--trce"), "--trce; did you mean --trace?"),
    (("run", "examples/list_sum.relay", "--trce=values"),
     "--trce=values; did you mean --trace?"),
    (("check", "--typs", "--quite", "examples/list_sum.relay"),
     "--typs --quite; did you mean --types and --quiet?"),
    (("fmt", "--chek", "examples/list_sum.relay"), "--chek; did you mean --check?"),
    (("opt", "--pases=FoldConstant", "examples/list_sum.relay"),
     "--pases=FoldConstant; did you mean --passes?"),
])
def test_misspelt_flag(relay, args: tuple[str, ...], hint: str) -> None:
    done = relay(*args)
    assert done.returncode == 2
    assert f"relay: error: unrecognized arguments: {hint}\n" in done.stderr


# -- the kernel (a real one) --------------------------------------------------------------------

@pytest.fixture(scope="module")
def kernel():
    """A Relay kernel of this checkout (the kernelspec as tests/kernel/conftest.py writes
    it; the environment is restored afterwards)."""
    sys.path.insert(0, str(ROOT / "kernel"))
    sys.path.insert(0, str(ROOT / "tests" / "kernel"))
    from kernel_harness import RelayKernel
    from relay_kernel.install import write_spec

    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "PYTHONPATH")}
    data = Path(tempfile.mkdtemp(prefix="relay-kernel-dym-"))
    write_spec(data / "kernels" / "relay", sys.executable)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(data), *filter(None, [saved["JUPYTER_PATH"]])])
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "kernel"), str(ROOT), *filter(None, [saved["PYTHONPATH"]])])
    k = RelayKernel()
    yield k
    k.shutdown()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _error(kernel, code: str) -> str:
    res = kernel.execute(code)
    assert res.reply["status"] == "error", res.outputs
    return res.error


@pytest.mark.parametrize(("typed", "hint"), [
    (":derivee 1", "unknown command :derivee; did you mean :derive? (commands: :help"),
    (":tpye 1", "unknown command :tpye; did you mean :type? ("),
    (":preldue off", "unknown command :preldue; did you mean :prelude? ("),
    (":help derivee", "no command :derivee; did you mean :derive?"),
    (":trace --valeus 1", ":trace: unknown option --valeus; did you mean --values? ("),
    (":time --compil 1", "unknown option --compil; did you mean --compile? ("),
    (":doc nn.dens", "nothing known about 'nn.dens'; did you mean nn.dense"),
    (":doc @foldll", "nothing known about '@foldll'; did you mean @foldl"),
])
def test_misspelt_kernel_command(kernel, typed: str, hint: str) -> None:
    assert hint in _error(kernel, typed)


def test_kernel_cells_get_the_parser_hints(kernel) -> None:
    assert kernel.execute("let %y = 1;").ok
    res = kernel.execute("%yy + 1")
    n = res.reply["execution_count"]
    assert f"In[{n}]:1:1: error: unbound local variable %yy; did you mean %y?" in res.error
    assert "unknown constructor 'Nill'; did you mean Nil?" in _error(kernel, "Cons(1, Nill)")
    assert "undefined global function @foldll; did you mean @foldl?" \
        in _error(kernel, "@foldll")
