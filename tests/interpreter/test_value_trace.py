"""Value traces (``rr.evaluate(..., trace="values")``, ``relay run --trace=values``): the
judgement ρ; σ ⊢ e ⇒ v; σ' at each step, golden text for small programs; the output's
size bounds; the HTML form; and that the plain trace is unchanged by it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import relay_ref as rr
from relay_ref.interpreter.trace import format_trace, short_value, trace_html

ROOT = Path(__file__).resolve().parents[2]


def values_trace(program: str | rr.IRModule, *args: object, limit: int | None = None) -> str:
    prog = rr.parse_expr(program) if isinstance(program, str) else program
    _, events = rr.evaluate(prog, *args, trace="values")
    return format_trace(events, limit=limit)


def test_let():
    assert values_trace("let %x = 2; %x * 10") == """\
E-Let  let %x = 2; %x * 10 ⇒ 20   ρ[%x ↦ 2]
  E-Const  2 ⇒ 2
  E-App-Op  %x * 10 ⇒ 20
    E-Var  %x ⇒ 2
    E-Const  10 ⇒ 10"""


def test_closure_captures_its_free_variables():
    assert values_trace("let %y = 3; (fn (%x: int32) { %x + %y })(4)") == """\
E-Let  let %y = 3; fn (%x) { ... }(4) ⇒ 7   ρ[%y ↦ 3]
  E-Const  3 ⇒ 3
  E-App-Closure  fn (%x) { %x + %y }(4) ⇒ 7   ρ'[%x ↦ 4]
    E-Fn  fn (%x) { %x + %y } ⇒ <closure fn (%x)>   captured {%y ↦ 3}
    E-Const  4 ⇒ 4
    E-App-Op  %x + %y ⇒ 7
      E-Var  %x ⇒ 4
      E-Var  %y ⇒ 3"""


def test_recursive_closure():
    text = values_trace("let %k = 1; let %f = fn (%n: int32) -> int32 { "
                        "if (%n < %k) { 0 } else { %f(%n - 1) } }; %f(1)")
    lines = text.splitlines()
    assert lines[2] == ("  E-Let-Rec  let %f = fn (%n) { if (%n < %k) { 0 } else { ... … ⇒ 0"
                        "   ρ[%f ↦ <closure %f = fn (%n)>]   captured {%k ↦ 1}")
    # E-App-Rec binds the recursive variable to the closure itself, then the parameters
    assert lines[3] == "    E-App-Rec  %f(1) ⇒ 0   ρ'[%f ↦ <closure %f = fn (%n)>, %n ↦ 1]"
    assert "E-If-False" in text and "E-If-True" in text


REF_COUNTER = """#[version = "0.0.5"]
def @main(%n: int32) -> int32 {
  let %c = ref(%n);
  ref_write(%c, ref_read(%c) + 1);
  ref_read(%c)
}
"""


def test_ref_counter_shows_the_store():
    assert values_trace(rr.parse(REF_COUNTER), 4) == """\
E-App-Closure  (host call) ⇒ 5   ρ'[%n ↦ 4]
  E-Let  let %c = ref(%n); let %_ = ref_write(%c, ... + 1)… ⇒ 5   ρ[%c ↦ ℓ0]
    E-Ref  ref(%n) ⇒ ℓ0   σ[ℓ0 ↦ 4]
      E-Var  %n ⇒ 4
    E-Let  let %_ = ref_write(%c, ref_read(%c) + 1); ref_rea… ⇒ 5   ρ[%_ ↦ ()]
      E-Write  ref_write(%c, ref_read(%c) + 1) ⇒ ()   σ[ℓ0 ↦ 5]
        E-Var  %c ⇒ ℓ0
        E-App-Op  ref_read(%c) + 1 ⇒ 5
          E-Read  ref_read(%c) ⇒ 4   σ(ℓ0) = 4
            E-Var  %c ⇒ ℓ0
          E-Const  1 ⇒ 1
      E-Read  ref_read(%c) ⇒ 5   σ(ℓ0) = 5
        E-Var  %c ⇒ ℓ0"""


def test_match_shows_the_failed_clauses_the_clause_taken_and_the_pattern_rules():
    text = values_trace("match ((1, Cons(2, Nil))) { (_, Nil) => 0, (%a, Cons(%b, _)) => %a + %b }")
    assert text == """\
E-Match  match ((1, Cons(2, Nil))) { ... } ⇒ 3   clause 2 of 2
  E-Tuple  (1, Cons(2, Nil)) ⇒ (1, Cons(2, Nil))
    E-Const  1 ⇒ 1
    E-App-Ctor  Cons(2, Nil) ⇒ Cons(2, Nil)
      E-Ctor  Cons ⇒ <constructor Cons>
      E-Const  2 ⇒ 2
      E-App-Ctor  Nil ⇒ Nil
        E-Ctor  Nil ⇒ <constructor Nil>
  P-Ctor  Cons(2, Nil) ▷ Nil   fails: Cons is not Nil (clause 1 of 2)
  P-Tuple  (1, Cons(2, Nil)) ▷ (%a, Cons(%b, _))
    P-Var  1 ▷ %a ⊣ {%a ↦ 1}
    P-Ctor  Cons(2, Nil) ▷ Cons(%b, _)
      P-Var  2 ▷ %b ⊣ {%b ↦ 2}
      P-Wild  Nil ▷ _
  E-App-Op  %a + %b ⇒ 3
    E-Var  %a ⇒ 1
    E-Var  %b ⇒ 2"""


SHARED = """#[version = "0.0.5"]
def @main(%x: int32) -> int32 {
  %0 = add(%x, 1);
  multiply(%0, %0)
}
"""


def test_shared_node_is_evaluated_once_then_reused():
    # a shared node is written by the printer's name for it (%0), as `relay fmt` prints it
    assert values_trace(rr.parse(SHARED), 5) == """\
E-App-Closure  (host call) ⇒ 36   ρ'[%x ↦ 5]
  E-App-Op  %0 * %0 ⇒ 36
    E-Shared  %0 = %x + 1 ⇒ 6   first use: evaluated, remembered
      E-App-Op  %0 = %x + 1 ⇒ 6
        E-Var  %x ⇒ 5
        E-Const  1 ⇒ 1
    E-Shared  %0 = %x + 1 ⇒ 6   reused"""


def test_plain_trace_is_unchanged_by_the_value_trace():
    mod = rr.parse(SHARED)
    _, plain = rr.evaluate(mod, 5, trace=True)
    assert format_trace(plain) == """\
E-App-Closure  (host call)
  E-App-Op  %0 * %0
      E-App-Op  %0 = %x + 1
        E-Var  %x
        E-Const  1"""
    assert all(e.value is None and e.detail == () for e in plain)
    _, with_values = rr.evaluate(mod, 5, trace="values")
    # the same rules in the same order, once E-Shared is left out
    assert [(e.rule, e.expr) for e in plain] == \
        [(e.rule, e.expr) for e in with_values if e.rule != "E-Shared"]


def test_limit_and_bounded_lines():
    # a long list, a big tensor, a function of many parameters
    mod = rr.parse('#[version = "0.0.5"]\n'
                   "def @six(%a: int32, %b: int32, %c: int32, %d: int32, %e: int32, "
                   "%g: int32) -> int32 { %a }\n"
                   "def @main(%t: Tensor[(100, 100), float32], %xs: List[int32]) -> int32 {\n"
                   "  let %big = %t;\n  @six(1, 2, 3, 4, 5, @sum(%xs))\n}\n")
    args = (np.zeros((100, 100), "float32"), _relay_list(list(range(300)), mod))
    value, events = rr.evaluate(mod, *args, trace="values")
    assert int(value) == 1
    text = format_trace(events)
    lines = text.splitlines()
    assert len(lines) == len(events) > 300 * 5          # one line per step
    assert max(len(line) for line in lines) < 300        # each bounded
    assert "ρ[%big ↦ <Tensor[(100, 100), float32]>]" in text
    assert "%d ↦ 4, … (2 more)]" in text                 # six parameters: four shown
    assert "ρ'[%t ↦ <Tensor[(100, 100), float32]>, %xs ↦ Cons(0, Cons(1, Cons(2, Cons(3,…]" in text
    limited = format_trace(events, limit=10).splitlines()
    assert len(limited) == 11 and limited[-1] == f"... {len(events) - 10} more steps"


def _relay_list(items: list[int], mod: rr.IRModule) -> object:
    from relay_ref.interpreter.values import ConstructorValue

    checked = rr.infer_types(mod)
    cons, nil = checked.type_definitions["List"].constructors
    out = ConstructorValue(nil, ())
    for item in reversed(items):
        out = ConstructorValue(cons, (np.array(item, "int32"), out))
    return out


def test_short_value_is_bounded_and_names_locations():
    from relay_ref.interpreter.values import RefValue

    cell = RefValue(np.array(1, "int32"))
    assert short_value((cell, cell, RefValue(cell))) == "(ℓ0, ℓ0, ℓ1)"
    assert short_value(np.arange(6, dtype="int32")) == "[0, 1, 2, 3, 4, 5]"
    assert short_value(np.zeros((7,), "float32")) == "<Tensor[(7), float32]>"
    deep = ()
    for _ in range(100_000):
        deep = (deep,)
    text = short_value(deep, width=20)
    assert len(text) == 20 and text.endswith("…")


def test_html_names_rules_with_their_spec_text():
    _, events = rr.evaluate(rr.parse_expr("let %x = 2; %x * 10"), trace="values")
    page = trace_html(events)
    assert page.startswith("<pre") and page.count('class="relay-rule"') == len(events)
    assert 'data-rule="E-Let"' in page and "ρ[%x ↦ 2]" in page
    assert "3.6" in page  # the tooltip: the rule as spec/semantics.md writes it


def test_cli_trace_values(tmp_path):
    prog = tmp_path / "counter.relay"
    prog.write_text(REF_COUNTER)

    def relay_run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "relay_ref", "run", *args],
                              capture_output=True, text=True, timeout=120,
                              env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                                   "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"})

    out = relay_run("--trace=values", str(prog), "4")
    assert out.returncode == 0, out.stderr
    assert out.stdout == values_trace(rr.parse(REF_COUNTER), 4) + "\n5\n"
    plain = relay_run(str(prog), "4", "--trace")
    assert plain.returncode == 0 and "⇒" not in plain.stdout
    assert plain.stdout.splitlines()[:2] == [
        "E-App-Closure  (host call)",
        "  E-Let  let %c = ref(%n); let %_ = ref_write(%c, ... + 1); ref_read(%c)"]
    bad = relay_run("--trace=everything", str(prog), "4")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
