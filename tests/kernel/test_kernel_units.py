"""In-process tests of the kernel's parts: lexer, display, editor helpers, commands,
session, packaging (no kernel process; fast)."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from pygments.token import Comment, Keyword, Name, Number, Operator
from relay_kernel import display, editor
from relay_kernel.commands import ast_text, help_text, split_command
from relay_kernel.lexer import RelayLexer
from relay_kernel.session import Session

REPO = Path(__file__).resolve().parents[2]


# -- lexer -----------------------------------------------------------------------------------

def tokens(code: str) -> list[tuple[object, str]]:
    return [(t, v) for t, v in RelayLexer().get_tokens(code) if v.strip()]


def test_lexer_token_classes():
    toks = dict((v, t) for t, v in tokens(
        '#[version = "0.0.5"]\ndef @f(%x: Tensor[(2, 3), float32], %0) -> int64 {\n'
        '  let %y = nn.conv2d(%x, %w, padding=[1, 1]);  // c\n'
        '  match? (%l) { Cons(%h, _) => 2i64 + 1.5f, Nil => -inff }\n}'))
    assert toks['#[version = "0.0.5"]'] is Comment.Preproc
    assert toks["def"] in Keyword and toks["let"] in Keyword and toks["match"] in Keyword
    assert toks["@f"] is Name.Function
    assert toks["%x"] is Name.Variable and toks["%0"] is Name.Variable
    assert toks["Tensor"] is Keyword.Type and toks["float32"] is Keyword.Type
    assert toks["int64"] is Keyword.Type
    assert toks["nn.conv2d"] is Name.Builtin
    assert toks["padding"] is Name.Attribute
    assert toks["Cons"] is Name.Class
    assert toks["2i64"] in Number and toks["1.5f"] is Number.Float
    assert toks["-inff"] is Number.Float
    assert toks["=>"] is Operator and toks["->"] is Operator
    assert toks["// c"] is Comment.Single


def test_lexer_nested_comments_and_commands():
    toks = tokens("/* a /* b */ still comment */ 1\n:type %x")
    assert all(t in Comment for t, v in toks[:5])
    assert (Number.Integer, "1") in toks
    assert (Keyword.Pseudo, "type") in toks


def test_lexer_has_no_error_tokens_on_the_prelude():
    from pygments.token import Error

    text = (REPO / "relay_ref" / "prelude" / "prelude.relay").read_text()
    assert not [v for t, v in RelayLexer().get_tokens(text) if t is Error]


# -- display ---------------------------------------------------------------------------------

def test_tensor_html_small_and_summarised():
    small = display.value_bundle(np.arange(6, dtype="float32").reshape(2, 3))
    assert "Tensor[(2, 3), float32]" in small["text/html"]
    assert small["text/html"].count("<tr>") == 3  # header + 2 rows
    assert "min 0 · max 5 · mean 2.5" in small["text/html"]
    big = display.value_bundle(np.ones((500, 600), dtype="int64"))
    assert "⋯" in big["text/html"] and "⋮" in big["text/html"]
    assert big["text/html"].count("<tr>") == display.TABLE_MAX + 2
    assert "..." in big["text/plain"] and len(big["text/plain"]) < 2000
    cube = display.value_bundle(np.zeros((20, 30, 40), dtype="float32"))
    assert "<pre" in cube["text/html"] and "..." in cube["text/html"]
    assert "24000 elements" in cube["text/html"]


def test_scalar_and_tuple_bundles():
    assert display.value_bundle(np.array(3, dtype="int32"))["text/plain"] == "3"
    assert display.value_bundle(np.array(True))["text/plain"] == "True"
    pair = display.value_bundle((np.ones(2, "float32"), np.zeros((2, 2), "int32")))
    assert pair["text/html"].count("relay-tensor") == 2


def test_pretty_type_breaks_long_function_types():
    from relay_ref.ir.types import FuncType, TensorType

    t = TensorType((1, 3, 224, 224), "float32")
    ft = FuncType((t, t, t, t), t)
    text = display.pretty_type(ft, width=60)
    assert text.count("\n") == 5 and text.startswith("fn (\n  Tensor[(1, 3, 224, 224)")
    from relay_ref import alpha_equal
    from relay_ref.syntax.parser import parse_type
    assert alpha_equal(parse_type(text), ft)


def test_error_content_is_rendered_diagnostic():
    import relay_ref as rr

    with pytest.raises(rr.ParseError) as info:
        rr.parse_expr("1 + * 2", "In[7]")
    content = display.error_content(info.value)
    assert content["ename"] == "ParseError"
    plain = [display_strip(line) for line in content["traceback"]]
    assert plain[0].startswith("In[7]:1:5: error:")
    assert plain[1].endswith("1 + * 2") and plain[2].strip().startswith("|")
    assert "^" in plain[2]
    internal = display.error_content(ValueError("boom"))
    assert "bug in relay_ref" in display_strip(internal["traceback"][0])


def display_strip(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# -- editor ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("code", "status"), [
    ("1 + 2", "complete"), ("", "complete"), (":type %x", "complete"),
    ("add(1,", "incomplete"), ("def @f() {", "incomplete"), ("/* open", "incomplete"),
    ('"open string', "incomplete"), ("let %x = 1 +", "incomplete"),
    ("let %x = 1", "incomplete"), ("1 + 2)", "invalid"), ("1 2", "invalid"),
    ("def @f() { ( }", "invalid"), ("// just a comment (", "complete"),
])
def test_is_complete(code, status):
    assert editor.is_complete(code, Session())["status"] == status


def test_completion_kinds():
    s = Session()
    m = editor.complete("@ma", 3, s)["matches"]
    assert {"@map", "@map_accuml", "@map_accumr"} <= set(m)
    assert editor.complete(":pre", 4, s)["matches"] == [":prelude"]
    assert "Cons" in editor.complete("Co", 2, s)["matches"]
    assert "float32" in editor.complete("floa", 4, s)["matches"]
    assert "free_var" in editor.complete("free", 4, s)["matches"]
    reply = editor.complete("fn (%value: int32) { %va", 24, s)
    assert reply["matches"] == ["%value"] and reply["cursor_start"] == 21
    # a `:` inside code is a type annotation, not a command
    assert editor.complete("%x:int", 6, s)["matches"][:2] == ["int16", "int32"]


def test_inspect_ops_keywords_prelude():
    s = Session()
    doc = editor.inspect("nn.dense(%x, %w)", 3, s)["data"]["text/plain"]
    assert doc.startswith("nn.dense(")
    assert "keyword" in editor.inspect("match", 2, s)["data"]["text/plain"]
    map_doc = editor.inspect("@map", 2, s)["data"]["text/plain"]
    assert "@map" in map_doc
    assert not editor.inspect("   ", 1, s)["found"]


def test_split_command():
    assert split_command(":t %x") == ("type", "%x")
    assert split_command("  :trace\nlet %x = 1;\n%x") == ("trace", "let %x = 1;\n%x")
    assert split_command("?nn.dense") == ("page", "nn.dense")
    assert split_command("%x") is None
    assert ":trace [--values] EXPR" in help_text()


def test_ast_text_is_a_tree():
    import relay_ref as rr

    text = ast_text(rr.parse_expr("let %x = 1; add(%x, %x)"))
    assert text.splitlines()[0] == "Let"
    assert "  var: Var(%x)" in text and "op: Op(add)" in text


def test_session_rules_in_process():
    s = Session()
    s.run("def @f(%x: int32) -> int32 { %x + 1 }\nlet %y = @f(1);", "In[1]")
    out = s.run("@f(%y)", "In[2]")
    assert out.has_value and int(out.value) == 3
    out = s.run("def @f(%x: int32) -> int32 { %x + 2 }", "In[3]")
    assert out.notes and out.notes[0].startswith("note: @f redefined")
    assert s.user_globals == ["f"] and list(s.scope) == ["y"]


# -- packaging -------------------------------------------------------------------------------

def test_shipped_kernelspec():
    spec = json.loads((REPO / "kernel" / "kernelspec" / "relay" / "kernel.json").read_text())
    assert spec["argv"] == ["python", "-m", "relay_kernel", "-f", "{connection_file}"]
    assert spec["display_name"] == "Relay" and spec["language"] == "relay"


def test_installed_package_ships_spec_and_lexer():
    try:
        dist = importlib.metadata.distribution("relay-ref")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("relay-ref is not installed in this environment")
    lexers = [ep for ep in dist.entry_points if ep.group == "pygments.lexers"]
    assert [ep.value for ep in lexers] == ["relay_kernel.lexer:RelayLexer"]
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    assert get_lexer_by_name("relay").name == "Relay"
    assert get_lexer_for_filename("model.relay").name == "Relay"
    installed = Path(sys.prefix) / "share" / "jupyter" / "kernels" / "relay" / "kernel.json"
    assert installed.exists(), "the wheel's shared-data kernelspec is missing"
    assert json.loads(installed.read_text())["language"] == "relay"


def test_command_cells_may_start_with_comments_and_bare_sigils_are_explained():
    from relay_kernel.commands import Context, run_command
    from relay_kernel.display import CommandError
    from relay_kernel.editor import is_complete

    assert split_command("// list them\n:who") == ("who", "")
    assert split_command("1 // :who") is None
    assert is_complete("// note\n:type (") == {"status": "complete"}
    class _Collect:
        def stream(self, text: str, name: str = "stdout") -> None: ...
        def display(self, bundle: dict) -> None: ...
        def result(self, bundle: dict) -> None: ...
        def page(self, text: str) -> None: ...

    ctx = Context(Session(), "In[1]", _Collect())
    with pytest.raises(CommandError, match="a command name must follow"):
        run_command(ctx, *split_command(":"))
    with pytest.raises(CommandError, match=r"usage: \?NAME"):
        run_command(ctx, *split_command("?"))
