"""The session rules, commands, rich output and robustness of the Relay kernel, through
jupyter_client (one kernel for the module; tests that need a clean state run ``:reset``)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from kernel_harness import RelayKernel, Result, strip_ansi


@pytest.fixture(scope="module")
def k():
    kernel = RelayKernel()
    yield kernel
    kernel.shutdown()


def run_ok(k: RelayKernel, code: str) -> Result:
    res = k.execute(code)
    assert res.ok, f"cell failed:\n{code}\n{res.error}"
    assert not res.of("error")
    return res


def run_err(k: RelayKernel, code: str, ename: str) -> Result:
    res = k.execute(code)
    assert res.reply["status"] == "error", res.outputs
    assert res.reply["ename"] == ename, res.error
    (err,) = res.of("error")
    assert err["ename"] == ename
    assert "Traceback (most recent call last)" not in res.error
    return res


# -- session rules ---------------------------------------------------------------------------

def test_definitions_accumulate_and_expressions_evaluate(k):
    res = run_ok(k, "def @double(%x: int32) -> int32 {\n  %x * 2\n}")
    assert res.value is None  # a definition has no Out[n]
    assert run_ok(k, "@double(21)").value == "42"
    res = run_ok(k, "def @inc(%x: int32) -> int32 { %x + 1 }\n@inc(@double(20))")
    assert res.value == "41"


def test_redefinition_replaces_with_a_note(k):
    run_ok(k, "def @twice(%x: int32) -> int32 { %x * 2 }")
    res = run_ok(k, "def @twice(%x: float32) -> float32 { %x + %x }")
    assert "note: @twice redefined" in res.stdout
    assert "fn (int32) -> int32" in res.stdout and "fn (float32) -> float32" in res.stdout
    assert run_ok(k, "@twice(1.5f)").value == "3f"


def test_top_level_let_binds_for_later_cells(k):
    res = run_ok(k, "let %a = 40;")
    assert res.value is None
    assert run_ok(k, "%a + 2").value == "42"
    run_ok(k, "let %b = %a + 1;\nlet %c = (%b, Cons(%b, Nil));")
    assert run_ok(k, "%c.1").value == "Cons(41, Nil)"
    run_ok(k, "let %a = 1f;")  # rebinding replaces
    assert run_ok(k, "%a * 2f").value == "2f"


def test_prelude_is_available_and_can_be_turned_off(k):
    assert run_ok(k, "@sum(Cons(1, Cons(2, Cons(3, Nil))))").value == "6"
    assert run_ok(k, "@map(fn (%x: int32) { %x * 10 }, Cons(1, Cons(2, Nil)))").value \
        == "Cons(10, Cons(20, Nil))"
    try:
        assert "prelude: off" in run_ok(k, ":prelude off").stdout
        run_err(k, "@foldr1(fn (%x: int32, %y: int32) { %x }, Nil)", "ParseError")
    finally:
        assert "prelude: on" in run_ok(k, ":prelude on").stdout


def test_own_definition_wins_over_prelude(k):
    run_ok(k, "type Option[A] { Yes(A), No }\ndef @get(%o: Option[int32]) -> int32 {\n"
              "  match (%o) { Yes(%v) => %v, No => 0 }\n}")
    assert run_ok(k, "@get(Yes(7))").value == "7"


# -- errors ----------------------------------------------------------------------------------

def test_parse_error_is_located_in_the_cell(k):
    res = run_err(k, "let %x = 1;\n%x + * 2", "ParseError")
    n = res.reply["execution_count"]
    assert re.search(rf"In\[{n}\]:2:\d+: error", res.error), res.error
    assert "^" in res.error and "%x + * 2" in res.error
    raw = "".join(res.of("error")[0]["traceback"])
    assert "\x1b[" in raw  # coloured


def test_type_error_is_located_and_changes_nothing(k):
    res = run_err(k, "def @good(%x: int32) -> int32 { %x }\n"
                     "def @bad(%x: int32) -> float32 { %x }", "RelayTypeError")
    n = res.reply["execution_count"]
    assert f"In[{n}]:2:" in res.error
    run_err(k, "@good(1)", "ParseError")  # the cell was rejected as a whole


def test_runtime_error_keeps_definitions(k):
    res = run_err(k, "def @kept() -> int32 { 5 }\n@hd(@tl(Cons(1, Nil)))",
                  "RelayRuntimeError")
    assert "match" in res.error.lower() or "clause" in res.error.lower()
    assert run_ok(k, "@kept()").value == "5"


def test_unknown_command_is_an_error(k):
    res = run_err(k, ":frobnicate", "CommandError")
    assert ":help" in res.error


def test_deep_recursion_survives(k):
    run_ok(k, "def @count(%n: int32) -> int32 {\n"
              "  if (%n == 0) { 0 } else { 1 + @count(%n - 1) }\n}")
    assert run_ok(k, "@count(100000)").value == "100000"
    assert run_ok(k, "1 + 1").value == "2"


# -- commands --------------------------------------------------------------------------------

def test_type_command(k):
    res = run_ok(k, ":type fn (%x: int32) { (%x, %x) }")
    assert res.value.endswith("fn (int32) -> (int32, int32)")
    assert "text/html" in res.of("execute_result")[0]["data"]
    assert run_ok(k, ":t @length").value.startswith("@length : fn [")
    run_err(k, ":type 1 + True", "RelayTypeError")


def test_ast_fmt_check_who(k):
    ast = run_ok(k, ":ast let %x = 1; add(%x, 2)").value
    assert "Let" in ast and "Op(add)" in ast and "Var(%x)" in ast
    run_ok(k, ":reset")
    run_ok(k, "type Pair { MkPair(int32, int32) }\ndef @fst(%p: Pair) -> int32 {\n"
              "  match (%p) { MkPair(%a, _) => %a }\n}\nlet %p = MkPair(1, 2);")
    fmt = run_ok(k, ":fmt").value
    assert "type Pair" in fmt and "def @fst" in fmt and "@length" not in fmt
    assert "def @f" in run_ok(k, ":fmt def @f(%x:int32){%x}").value
    check = run_ok(k, ":check").value
    assert "@fst : fn (Pair) -> int32" in check
    who = run_ok(k, ":who").value
    assert "type Pair { MkPair }" in who and "@fst" in who and "%p : Pair = MkPair(1, 2)" in who
    run_err(k, ":check def @oops(%x: int32) -> bool { %x }", "RelayTypeError")
    assert "@oops" not in run_ok(k, ":who").value


def test_reset_forgets_everything(k):
    run_ok(k, "def @gone() -> int32 { 1 }\nlet %gone = 2;")
    assert "session reset" in run_ok(k, ":reset").stdout
    run_err(k, "@gone()", "ParseError")
    run_err(k, "%gone", "ParseError")
    assert "(nothing defined yet)" in run_ok(k, ":who").value


def test_time_and_trace(k):
    res = run_ok(k, ":time @sum(Cons(1, Cons(2, Nil)))")
    assert res.value == "3"
    assert re.search(r"time: [\d.]+ m?s \(parse", res.stdout)
    res = run_ok(k, ":trace let %x = 1; if (%x == 1) { 10 } else { 20 }")
    assert res.value == "10"
    (shown,) = res.of("display_data")
    trace = shown["data"]["text/plain"]
    assert "E-Let" in trace and "E-If-True" in trace


def test_load_file(k, tmp_path: Path):
    path = tmp_path / "lib.relay"
    path.write_text('#[version = "0.0.5"]\ndef @square(%x: int32) -> int32 { %x * %x }\n')
    res = run_ok(k, f":load {path}")
    assert "@square" in res.stdout
    assert run_ok(k, "@square(7)").value == "49"
    bad = tmp_path / "bad.relay"
    bad.write_text("def @broken() {\n  1 +\n}\n")
    res = run_err(k, f":load {bad}", "ParseError")
    assert f"{bad}:3:" in res.error or f"{bad}:2:" in res.error
    run_err(k, f":load {tmp_path / 'missing.relay'}", "CommandError")


def test_help_and_doc(k):
    res = run_ok(k, ":help")
    (shown,) = res.of("display_data")
    text = shown["data"]["text/plain"]
    for cmd in (":type", ":ast", ":fmt", ":check", ":trace", ":time", ":who", ":reset",
                ":prelude", ":load", ":help"):
        assert cmd in text
    assert "let %x = e;" in text
    res = run_ok(k, "?nn.dense")
    (page,) = res.reply["payload"]
    assert page["data"]["text/plain"].startswith("nn.dense(")


# -- rich output -----------------------------------------------------------------------------

def test_tensor_is_shown_as_html_table(k):
    res = run_ok(k, "ones(shape=[2, 3], dtype=\"float32\") * 2f")
    data = res.of("execute_result")[0]["data"]
    assert data["text/plain"] == "[[2f, 2f, 2f],\n [2f, 2f, 2f]]"
    html = data["text/html"]
    assert "Tensor[(2, 3), float32]" in html and "<table" in html and "6 elements" in html


def test_large_tensor_is_summarised(k):
    res = run_ok(k, "zeros(shape=[300, 400], dtype=\"float32\")")
    data = res.of("execute_result")[0]["data"]
    assert "..." in data["text/plain"] and len(data["text/plain"]) < 2000
    assert data["text/plain"].startswith("Tensor[(300, 400), float32]\n[[0f, 0f, 0f, ...")
    assert "⋯" in data["text/html"] and len(data["text/html"]) < 30000
    assert "120000 elements" in data["text/html"]


def test_adt_and_closure_values_are_relay_text(k):
    res = run_ok(k, "Some((1, 2f))")
    data = res.of("execute_result")[0]["data"]
    assert data["text/plain"] == "Some((1, 2f))"
    assert "<span" in data["text/html"] and "Option[(int32, float32)]" in data["text/html"]
    closure = run_ok(k, "fn (%x: int32) -> int32 { %x }").value
    assert closure.startswith("<closure fn (%x: int32) -> int32")


# -- editor support with session state ---------------------------------------------------

def test_completion_sees_session_names(k):
    run_ok(k, "def @my_function(%x: int32) -> int32 { %x }\n"
              "type Shape { Circle(float32), Square(float32) }\nlet %my_binding = 3;")
    reply = k.request("complete", "@my_f", 5)
    assert reply["matches"] == ["@my_function"] and reply["cursor_start"] == 0
    assert "%my_binding" in k.request("complete", "1 + %my", 7)["matches"]
    assert set(k.request("complete", "Ci", 2)["matches"]) == {"Circle"}
    assert "ref_write" in k.request("complete", "ref_w", 5)["matches"]


def test_inspect_shows_types_and_docs(k):
    run_ok(k, "def @my_id(%x: int32) -> int32 { %x }\nlet %seven = 7;")
    reply = k.request("inspect", "@my_id(1)", 2)
    assert reply["found"] and "@my_id : fn (int32) -> int32" in reply["data"]["text/plain"]
    reply = k.request("inspect", "%seven", 3)
    assert reply["found"] and "%seven : int32" in reply["data"]["text/plain"]
    reply = k.request("inspect", "nn.conv2d(%x, %w)", 4)
    text = reply["data"]["text/plain"]
    assert text.startswith("nn.conv2d(") and "strides=" in text
    text = k.request("inspect", "add", 1)["data"]["text/plain"]
    assert "add : fn[t1, t2, t3](t1, t2) -> t3 where Broadcast(t1, t2, t3)" in text
    # an operator used as a value runs (spec/typing.md 3.10 T-Op)
    assert run_ok(k, "@map(negative, Cons(1, Cons(-2, Nil)))").value == "Cons(-1, Cons(2, Nil))"
    assert "constructor of List" in k.request("inspect", "Cons", 1)["data"]["text/plain"]
    assert not k.request("inspect", "%nothing_here", 3)["found"]


def test_is_complete_uses_the_parser(k):
    assert k.request("is_complete", "let %x = 1 +")["status"] == "incomplete"
    assert k.request("is_complete", "1 2")["status"] == "invalid"
    assert k.request("is_complete", "def @f() { 1 }\n@f()")["status"] == "complete"


def test_kernel_info_has_no_debugger(k):
    k.kc.kernel_info()
    reply = k.kc.get_shell_msg(timeout=10)
    while reply["msg_type"] != "kernel_info_reply":
        reply = k.kc.get_shell_msg(timeout=10)
    content = reply["content"]
    assert "debugger" not in content.get("supported_features", [])
    assert not content.get("debugger", False)
    info = content["language_info"]
    assert (info["name"], info["file_extension"], info["mimetype"], info["pygments_lexer"]) \
        == ("relay", ".relay", "text/x-relay", "relay")


# -- interrupt -------------------------------------------------------------------------------

#: fib that counts its calls in a reference: the work an evaluation has done, readable later
FIB_COUNTING = ("def @fibr(%r: ref(int32), %n: int32) -> int32 {\n"
                "  let %u = ref_write(%r, ref_read(%r) + 1);\n"
                "  if (%n < 2) { %n } else { @fibr(%r, %n - 1) + @fibr(%r, %n - 2) }\n}\n")


def test_interrupt_stops_evaluation_and_keeps_the_session(k):
    run_ok(k, FIB_COUNTING + "let %kept = 5;\nlet %steps = ref(0);")
    msg_id = k.kc.execute("@fibr(%steps, 40)")  # 330 million calls: only an interrupt ends it
    time.sleep(1.5)  # let it run a while (when the interrupt lands does not matter)
    k.km.interrupt_kernel()
    res = k.collect(msg_id, timeout=30)
    assert res.reply["status"] == "error" and res.reply["ename"] == "KeyboardInterrupt"
    assert "Traceback" not in strip_ansi("\n".join(res.reply["traceback"]))
    # Work, not time: the interrupted evaluation counted its calls in %steps. It did some,
    # and it stopped: a worker left computing @fibr(40) behind the session would keep
    # counting while the next cells run.
    done = int(run_ok(k, "ref_read(%steps)").value)
    assert 0 < done < 331_160_281  # fib(40)'s 331 160 281 calls were not all made
    assert run_ok(k, "%kept + @fibr(ref(0), 10)").value == "60"
    assert int(run_ok(k, "ref_read(%steps)").value) == done


def test_silent_execution_publishes_nothing_and_keeps_no_history(k):
    res = k.execute("def @quiet() -> int32 { 9 }\n@quiet()", silent=True, store_history=False)
    assert res.ok and not res.outputs
    assert run_ok(k, "@quiet()").value == "9"
    tail = k.request("history", hist_access_type="tail", n=1, output=False, raw=True)
    assert "@quiet()" == tail["history"][-1][2]  # the visible cell, not the silent one


# -- definitions meeting the session's state ------------------------------------------------

def test_redefining_a_type_used_by_globals_is_refused(k):
    run_ok(k, "type Hue { Ruby, Jade }\ndef @mkhue() -> Hue { Ruby }\n"
              "def @isruby(%c: Hue) -> bool { match (%c) { Ruby => True, _ => False } }")
    res = run_err(k, "type Hue { Jade, Ruby }", "RelayTypeError")
    assert "cannot redefine type Hue: @mkhue, @isruby still use its old constructors" \
        in res.error
    assert "define @mkhue, @isruby again in this cell" in res.error
    assert run_ok(k, "@isruby(Ruby)").value == "True"  # nothing changed
    assert run_ok(k, "@isruby(@mkhue())").value == "True"


def test_redefining_a_type_forgets_bindings_of_the_old_type(k):
    run_ok(k, "type Tint { Pale, Dark }\nlet %t = Pale;")
    run_ok(k, "let %tf = fn (%x: Tint) { match (%x) { Pale => 1, Dark => 2 } };\n"
              "let %tn = 7;")
    res = run_ok(k, "type Tint { Dusk(int32) }")
    assert "note: forgot %t, %tf: made with a definition this cell replaces" in res.stdout
    run_err(k, "%t", "ParseError")
    assert run_ok(k, "%tn").value == "7"
    assert run_ok(k, "match (Dusk(3)) { Dusk(%n) => %n }").value == "3"


def test_redefinition_that_breaks_a_caller_says_why(k):
    run_ok(k, "def @inc1(%x: int32) -> int32 { %x + 1 }\n"
              "def @twice1(%x: int32) -> int32 { @inc1(%x) * 2 }")
    res = run_err(k, "def @inc1(%x: float32) -> float32 { %x + 1f }", "RelayTypeError")
    assert "this error is in an earlier definition" in res.error
    assert "uses @inc1, which this cell (re)defines" in res.error
    assert run_ok(k, "@twice1(3)").value == "8"


def test_a_def_cannot_use_a_session_binding(k):
    run_ok(k, "let %offset = 5;")
    res = run_err(k, "def @shift(%y: int32) -> int32 { %y + %offset }", "ParseError")
    lines = res.error.splitlines()
    assert re.match(r"In\[\d+\]:1:39: error: unbound local variable %offset", lines[0])
    assert "%offset is a session binding" in res.error
    assert "pass %offset as a parameter" in res.error


def test_endless_recursion_is_an_error_not_a_dead_kernel(k):
    run_ok(k, "def @forever(%n: int32) -> int32 { @forever(%n + 1) }")
    res = run_err(k, "@forever(0)", "RelayRuntimeError")
    assert "recursion deeper than 1000000 calls" in res.error  # Stuck-Depth, in Relay words
    assert "Python" not in res.error
    assert run_ok(k, "1 + 1").value == "2"


def test_completion_of_attributes_inside_an_op_call(k):
    code = "nn.conv2d(%x, %w, pad"
    reply = k.request("complete", code, len(code))
    assert reply["matches"] == ["padding="]
    assert reply["cursor_start"] == len(code) - 3
    code = 'ones(shape=[2], dt'
    assert k.request("complete", code, len(code))["matches"] == ["dtype="]
    code = "nn.conv2d(%x, %w, strides=[1, 1], "
    matches = k.request("complete", code, len(code))["matches"]
    assert "padding=" in matches and "strides=" not in matches


def test_inspect_of_a_type_has_no_version_header(k):
    run_ok(k, "type Fruit { Apple, Pear(int32) }")
    reply = k.request("inspect", "Fruit", 2)
    assert reply["found"]
    assert reply["data"]["text/plain"].startswith("type Fruit {")


def test_interrupting_the_type_checker_of_a_huge_program_keeps_the_kernel(k):
    # Interrupts landing in parsing or deep in the checker used to abort the kernel
    # process ("Cannot recover from stack overflow").
    # The cell never finishes by itself (its evaluation is fib(40) with every call counted),
    # so whatever the interrupt lands in (parsing, checking or evaluating), the one right
    # outcome is the cell stopped with KeyboardInterrupt and the kernel alive.
    body = " + ".join(["%x"] * 20000)
    code = ("def @huge(%x: int32) -> int32 { " + body + " }\n" + FIB_COUNTING
            + "@huge(@fibr(ref(0), 40))")
    for delay in (0.7, 1.2):
        msg_id = k.kc.execute(code)
        # Interrupt only once the kernel has started the cell: an interrupt that lands in
        # ipykernel's dispatch before ``do_execute`` is logged and the request gets no
        # reply (ipykernel's behaviour, not ours), which made this test flaky under load.
        while True:
            msg = k.kc.get_iopub_msg(timeout=30)
            if (msg["parent_header"].get("msg_id") == msg_id
                    and msg["msg_type"] == "execute_input"):
                break
        time.sleep(delay)
        k.km.interrupt_kernel()
        res = k.collect(msg_id, timeout=30)
        assert res.reply["status"] == "error" and res.reply["ename"] == "KeyboardInterrupt"
        assert k.km.is_alive()
    assert run_ok(k, "1 + 2").value == "3"


def test_huge_outputs_are_cut(k):
    res = run_ok(k, "let %long = " + "Cons(1, " * 5000 + "Nil" + ")" * 5000 + ";\n%long")
    assert len(res.value) < 21_000 and "more characters" in res.value
    res = run_ok(k, ":ast " + "1 + " * 3000 + "1")
    assert len(res.value) < 110_000 and res.value.endswith("characters)")
    res = run_err(k, "1 + " * 2000 + "1f", "RelayTypeError")
    source_line = res.error.splitlines()[1]
    assert len(source_line) < 200 and source_line.endswith("…")


def test_a_definition_after_an_expression_gets_a_hint(k):
    res = run_err(k, "1 + 2\ndef @late() -> int32 { 1 }", "ParseError")
    assert "definitions (def, type) come first in a cell" in res.error
    res = run_err(k, "def @open() -> int32 {\n  1\n\ndef @next() -> int32 { 2 }", "ParseError")
    assert "come first" not in res.error


def test_shadowing_a_prelude_type_explains_prelude_errors():
    kernel = RelayKernel()  # its own session: it shadows List and Option
    try:
        run_ok(kernel, "type Option[A] { Nope, Yep(A) }")
        res = run_err(kernel, "Some(1)", "RelayTypeError")
        assert "your type Option shadows the prelude's" in res.error
        run_ok(kernel, "type List[A] { MyNil, MyCons(A, List[A]) }")
        res = run_err(kernel, "@map", "RelayTypeError")
        assert "shadow the prelude's" in res.error and "not shown" in res.error
        assert res.error.count("error:") == 1
        assert run_ok(kernel, "MyCons(1, MyNil)").value == "MyCons(1, MyNil)"
    finally:
        kernel.shutdown()


def test_fmt_of_code_with_bindings_has_no_free_vars(k):
    res = run_ok(k, ":fmt let %fz = 1; %fz + 1")
    assert res.value == "let %fz = 1;\nadd(%fz, 1)"


def test_changing_a_globals_type_forgets_closures_that_call_it(k):
    run_ok(k, "def @scale(%x: float32) -> float32 { %x * 2f }")
    run_ok(k, "let %sc = fn (%x: float32) { @scale(%x) };\nlet %plain = fn (%x: float32) { %x };")
    run_ok(k, "def @scale(%x: float32) -> float32 { %x * 3f }")  # same type: late binding
    assert run_ok(k, "%sc(1f)").value == "3f"
    res = run_ok(k, "def @scale(%x: int32) -> int32 { %x }")
    assert "note: forgot %sc: made with a definition this cell replaces" in res.stdout
    res = run_err(k, "%sc(2f)", "ParseError")
    assert re.search(r"%sc was forgotten by In\[\d+\]", res.error)
    assert run_ok(k, "%plain(2f)").value == "2f"


def test_a_recursive_top_level_let_works_in_later_cells(k):
    res = run_ok(k, "let %down = fn (%n: int32) -> int32 {\n"
                    "  if (%n == 0) { 0 } else { 1 + %down(%n - 1) }\n};\n%down(10)")
    assert res.value == "10"
    assert run_ok(k, "%down(7)").value == "7"


def test_operators_bound_at_top_level_stay_polymorphic(k):
    # spec/typing.md 3.10: `let %f = add;` in a cell types as the same text in a file
    assert run_ok(k, "let %f = add;\n%f(1f, 2f)").value == "3f"
    assert run_ok(k, "(%f(1, 2), %f(1f, 2f))").value == "(3, 3f)"
    run_ok(k, "let %r = nn.relu;")
    assert run_ok(k, "@map(%r, Cons(-1f, Cons(2f, Nil)))").value == "Cons(0f, Cons(2f, Nil))"
    res = run_ok(k, ":type add")
    assert res.value == "add : fn[t1, t2, t3](t1, t2) -> t3 where Broadcast(t1, t2, t3)"
    assert "where Identity(t1, t2)" in run_ok(k, ":type %r").value
    res = run_err(k, "%f(1)", "RelayTypeError")
    assert "takes 2 arguments" in res.error


def test_rule_command_and_error_rule_links_through_the_kernel(k):
    res = run_ok(k, ":rule T-App")
    (shown,) = res.of("display_data")
    assert shown["data"]["text/plain"].startswith("T-App  (spec/typing.md 3.8 T-App)\n")
    assert "relay-rule-block" in shown["data"]["text/html"]
    res = run_err(k, "add(1, True)", "RelayTypeError")
    kinds = [t for t, _ in res.outputs if t in ("display_data", "error")]
    assert kinds == ["error"]  # one output: the error, ending with how to read its rule
    assert "[T-App-Op]" in res.error
    assert res.error.rstrip().endswith("(:rule T-App-Op prints the rule this error cites)")
