"""``:time --compile``: the cell's expression through ``rr.compile``, timed per call.

In-process through ``run_command`` (fast; the timing budget shortened), and once through a
real kernel."""

from __future__ import annotations

import re

import pytest
from kernel_harness import RelayKernel
from relay_kernel import commands
from relay_kernel.commands import Context, run_command, split_command
from relay_kernel.display import CommandError
from relay_kernel.session import Session

from relay_ref import RelayRuntimeError, RelayTypeError
from relay_ref.repl import value_text


class Collect:
    """An ``Output`` keeping what a command sent."""

    def __init__(self) -> None:
        self.streamed: list[str] = []
        self.results: list[str] = []

    def stream(self, text: str, name: str = "stdout") -> None:
        self.streamed.append(text)

    def display(self, bundle: dict) -> None: ...

    def result(self, bundle: dict) -> None:
        self.results.append(bundle["text/plain"])

    def page(self, text: str) -> None: ...

    @property
    def text(self) -> str:
        return "".join(self.streamed)


@pytest.fixture(autouse=True)
def short_budget(monkeypatch):
    monkeypatch.setattr(commands, "TIME_BUDGET", 0.02)


def command(session: Session, code: str, n: int = 1) -> Collect:
    out = Collect()
    run_command(Context(session, f"In[{n}]", out), *split_command(code))
    return out


FIB = ("def @fib(%n: int32) -> int32 {\n"
       "  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }\n}\n")

TIME_LINE = re.compile(r"time: [\d.]+ m?s \(parse [\d.]+ m?s, check [\d.]+ m?s, compile "
                       r"[\d.]+ m?s(, bindings [\d.]+ m?s)?, first call [\d.]+ m?s\)\n")
PER_CALL = re.compile(r"per call: [\d.]+ (µs|ms|s) \(median of (\d+) calls after the first; "
                      r"best [\d.]+ (µs|ms|s)\)\n")


def test_compiled_cell_equals_interpreted_and_reports_compile_and_per_call_time():
    s = Session()
    out = command(s, ":time --compile " + FIB + "let %k = 12;\n(@fib(%k), @fib(%k - 1))")
    assert out.results == ["(144, 89)"]
    time_line, per_call = out.streamed
    assert TIME_LINE.fullmatch(time_line) and "bindings" in time_line
    assert int(PER_CALL.fullmatch(per_call).group(2)) >= 1
    # the definitions and the binding were kept, as by any cell
    assert s.user_globals == ["fib"] and list(s.scope) == ["k"]
    interpreted = command(s, ":time (@fib(%k), @fib(%k - 1))", 2)
    assert interpreted.results == out.results
    assert "compile" not in interpreted.text and "per call" not in interpreted.text


def test_free_variables_are_the_sessions_bindings():
    s = Session()
    s.run("let %xs = Cons(1, Cons(2, Cons(3, Nil)));\nlet %t = ones(shape=[2], "
          "dtype=\"float32\");\nlet %f = fn (%x: int32) -> int32 { %x * 10 };", "In[1]")
    code = "(@map(%f, %xs), %t * 3f, fn (%y: int32) -> int32 { %f(%y) + 1 })"
    out = command(s, ":time --compile " + code, 2)
    want = s.run(code, "In[3]")
    assert out.results[0].replace("\n", "") == value_text(want.value).replace("\n", "")
    assert out.results[0].startswith("(Cons(10, Cons(20, Cons(30, Nil))), [3f, 3f], <closure")
    closure = s.run("fn (%y: int32) -> int32 { %f(%y) + 1 }", "In[4]", compiled=True)
    assert int(closure.value(4)) == 41  # compiled, calling a closure of the interpreter


def test_operator_aliases_and_cell_bindings_compile():
    s = Session()
    s.run("let %plus = add;", "In[1]")
    out = command(s, ":time --compile let %a = 2f;\n%plus(%a, 1.5f)", 2)
    assert out.results == ["3.5f"]
    assert list(s.scope) == ["plus", "a"]


def test_what_cannot_be_compiled_changes_nothing():
    s = Session()
    s.run("let %id = fn [A](%x: A) -> A { %x };", "In[1]")
    with pytest.raises(RelayTypeError, match="%id has a polymorphic type"):
        command(s, ":time --compile def @g() -> int32 { 1 }\nlet %b = 1;\n%id(3)", 2)
    assert s.user_globals == [] and list(s.scope) == ["id"]
    with pytest.raises(CommandError, match="this cell has none"):
        command(s, ":time --compile def @h() -> int32 { 2 }\nlet %c = 1;", 3)
    assert s.user_globals == [] and list(s.scope) == ["id"]


@pytest.mark.parametrize(("code", "says"), [
    (":time --compile", "usage: :time --compile CODE"),
    (":time --compile   \n  ", "usage: :time --compile CODE"),
    (":time --fast 1", "unknown option --fast"),
])
def test_usage(code, says):
    with pytest.raises(CommandError, match=re.escape(says)):
        command(Session(), code)


def test_runtime_error_is_located_in_the_cell():
    s = Session()
    with pytest.raises(RelayRuntimeError) as caught:
        command(s, ":time --compile " + FIB + "@hd(@tl(Cons(@fib(3), Nil)))", 5)
    text = caught.value.render(False)
    assert text.startswith("In[5]:4:1: error: call of @hd failed: no match clause matched")
    assert s.user_globals == ["fib"]  # a run-time failure keeps the cell's definitions


def test_multiline_code_after_the_option():
    s = Session()
    out = command(s, ":time --compile\nlet %v = 3;\n%v * %v")
    assert out.results == ["9"]


def test_refs_of_the_session_are_updated_by_each_call():
    s = Session()
    s.run("let %r = ref(0);", "In[1]")
    out = command(s, ":time --compile ref_write(%r, ref_read(%r) + 1)", 2)
    assert "failed" not in out.text
    calls = int(PER_CALL.search(out.text).group(2)) + 1
    assert int(s.run("ref_read(%r)", "In[3]").value) == calls


def test_through_the_kernel():
    kernel = RelayKernel()
    try:
        res = kernel.execute(":time --compile " + FIB + "@fib(10)")
        assert res.ok, res.error
        assert res.value == "55"
        assert TIME_LINE.search(res.stdout) and PER_CALL.search(res.stdout)
        res = kernel.execute(":help time")
        assert res.ok and "--compile" in res.of("display_data")[0]["data"]["text/plain"]
        res = kernel.execute(":time --compile let %z = 1;")
        assert res.reply["ename"] == "CommandError"
    finally:
        kernel.shutdown()
