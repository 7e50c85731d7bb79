"""Ill-typed nodes reached with ``typecheck=False`` are located ``RelayRuntimeError``s
(spec/semantics.md 4, Stuck-*), never Python exceptions; checked by default they are
``RelayTypeError``s. Endless recursion is Stuck-Depth at the recursive call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.visitor import free_vars

ROOT = Path(__file__).resolve().parents[2]

# (program, (line, column) of the stuck node, words of the message, the stuck rule its tag names)
ILL_TYPED = [
    ("def @main() { (1, 2).5 }", (1, 16), "cannot take field 5", "Stuck-Proj"),
    ("def @main() { let %x = ref(1); %x.0 }", (1, 32), "not a tuple", "Stuck-Proj"),
    ("def @main() { ref_read(1) }", (1, 15), "ref_read needs a reference", "Stuck-Ref"),
    ("def @main() { ref_write(1, 2) }", (1, 15), "ref_write needs a reference", "Stuck-Ref"),
    ("def @main() { match (1) { Cons(%x, _) => 1, Nil => 0 } }", (1, 27),
     "the pattern expects List, got 1", "Stuck-Match"),
    ("def @main() { match (Some(1)) { Cons(%x, _) => 1, _ => 0 } }", (1, 33),
     "the pattern expects List, got Some(1)", "Stuck-Match"),
    ("def @main() { match ((1, 2)) { (%a, %b, %c) => %a } }", (1, 32),
     "expects a 3-tuple", "Stuck-Match"),
    ("def @main() { match (1) { (%a, %b) => %a } }", (1, 27), "expects a 2-tuple",
     "Stuck-Match"),
    ("def @main() { let %f = 1; %f(2) }", (1, 27), "cannot call 1: not a function",
     "Stuck-App"),
    ("def @main() { (1, 2)(3) }", (1, 16), "not a function", "Stuck-App"),
    ("def @g(%x: int32) { %x }\ndef @main() { @g(1, 2) }", (2, 15),
     "expects 1 arguments, got 2", "Stuck-Arity"),
    ("def @main() { (fn (%x: int32) { %x })(1, 2) }", (1, 16), "expects 1 arguments",
     "Stuck-Arity"),
    ("def @main() { let %c = Cons; %c(1) }", (1, 30), "Cons takes 2 argument(s), got 1",
     "Stuck-Arity"),
    ("def @main() { if ((1, 2)) { 1 } else { 2 } }", (1, 20), "bool scalar", "Stuck-If"),
    ("def @main() { add((1, 2), 3) }", (1, 15), "must be a tensor", "Stuck-Op"),
    ("def @main() { add(1, 2f) }", (1, 15), "dtypes differ", "Stuck-Op"),
    ("def @main() { nn.relu(Nil) }", (1, 15), "cannot take Nil", "Stuck-Op"),
]


@pytest.mark.parametrize("text,where,words,rule", ILL_TYPED, ids=[c[0] for c in ILL_TYPED])
def test_ill_typed_node_is_stuck_at_its_location(text, where, words, rule):
    mod = rr.parse(text, "bad.relay")
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.evaluate(mod, typecheck=False)
    first = info.value.diagnostics[0]
    assert words in first.message
    assert first.message.endswith(f" [{rule}]")  # the stuck rule's tag (spec 4)
    assert first.span is not None and first.span.source.name == "bad.relay"
    assert (first.span.line, first.span.column) == where
    with pytest.raises(rr.RelayTypeError):
        rr.evaluate(mod)  # the default checks the module first


def test_typecheck_runs_once_per_module_and_never_on_checked_modules(monkeypatch):
    import relay_ref.typecheck.infer as infer

    calls = []
    real = infer.infer_types
    monkeypatch.setattr(infer, "infer_types", lambda m: calls.append(m) or real(m))
    mod = rr.parse("def @main(%x: int32) -> int32 { add(%x, 1) }")
    assert rr.evaluate(mod, 1) == 2 and rr.evaluate(mod, 2) == 3
    assert len(calls) == 1  # cached on the module
    checked = real(rr.parse("def @main() -> int32 { 1 }"))
    assert rr.evaluate(checked) == 1 and len(calls) == 1  # from infer_types: not again
    assert rr.evaluate(rr.parse("def @main() { 5 }"), typecheck=False) == 5
    assert len(calls) == 1


def test_unchecked_expression_is_checked_by_default():
    expr = rr.parse_expr("(1, 2).3")
    with pytest.raises(rr.RelayTypeError):
        rr.evaluate(expr)
    with pytest.raises(rr.RelayRuntimeError):
        rr.evaluate(expr, typecheck=False)


@pytest.mark.parametrize("text, expected", [
    ("Nil", "Nil"),                                    # prelude constructors in context
    ("Cons(1, Nil)", "Cons(1, Nil)"),
    ("fn (%x) { %x }", "<closure fn (%x)>"),           # unknown types are not errors
    ("let %f = fn (%x) { %x }; %f(4)", "4"),
])
def test_checked_expressions_need_no_annotations(text, expected):
    from relay_ref.interpreter.values import value_to_text

    assert value_to_text(rr.evaluate(rr.parse_expr(text))) == expected


def test_free_variables_take_their_values_types_when_checked():
    expr = rr.parse_expr("free_var %a; add(%a, 1f)")
    (var,) = free_vars(expr)
    assert float(rr.evaluate(expr, env={var: np.array(2, "float32")})) == 3.0
    with pytest.raises(rr.RelayTypeError, match="dtypes differ"):
        rr.evaluate(expr, env={var: np.array(2, "int32")})


LOOP = "def @f(%x: int32) -> int32 { @f(%x) }\ndef @main() { @f(1) }\n"


def test_endless_recursion_is_reported_at_the_recursive_call_with_a_relay_stack():
    mod = rr.parse(LOOP, "loop.relay")
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.evaluate(mod, max_depth=1000)
    err = info.value
    first = err.diagnostics[0]
    assert first.message == "recursion deeper than 1000 calls [Stuck-Depth]"
    assert (first.span.line, first.span.column, first.span.end_column) == (1, 30, 35)
    notes = [n.message for n in first.notes]
    assert any("Relay call stack" in n and "@main -> @f (x999)" in n for n in notes), notes
    assert err.relay_stack == ("main",) + ("f",) * 999
    assert "Python" not in str(err)
    # a depth that suffices is not an error
    ok = rr.parse("def @down(%n: int32) -> int32 { if (%n == 0) { 0 } else { @down(%n - 1) } }"
                  "\ndef @main() { @down(998) }")  # 1000 nested calls, @main's included
    assert rr.evaluate(ok, max_depth=1000) == 0
    with pytest.raises(rr.RelayRuntimeError, match="deeper than 999 calls"):
        rr.evaluate(ok, max_depth=999)


def test_mutual_recursion_stack_is_one_short_line():
    mod = rr.parse("def @g(%x: int32) -> int32 { @h(%x) }\n"
                   "def @h(%x: int32) -> int32 { @g(%x) }\n"
                   "def @main() -> int32 { @g(1) }\n", "mut.relay")
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.evaluate(mod, max_depth=2000)
    stack = [n.message for n in info.value.diagnostics[0].notes if "call stack" in n.message]
    assert stack == ["Relay call stack (innermost last): @main -> (@g -> @h) (x999) -> @g"]
    assert len(str(info.value)) < 2000


@pytest.mark.parametrize("names, text", [
    (("main", "a", "b", "c") * 3, "(@main -> @a -> @b -> @c) (x3)"),
    (("main", "f", "g", "f", "g", "k"), "@main -> (@f -> @g) (x2) -> @k"),
    (tuple(f"f{i}" for i in range(30)), "@f0 -> @f1 -> @f2 -> @f3 -> @f4 -> @f5 -> @f6 -> "
     "@f7 -> @f8 -> @f9 -> @f10 -> @f11 -> ... (6 more) ... -> @f18 -> @f19 -> @f20 -> "
     "@f21 -> @f22 -> @f23 -> @f24 -> @f25 -> @f26 -> @f27 -> @f28 -> @f29"),
])
def test_call_stacks_collapse_cycles_and_elide_the_middle(names, text):
    from relay_ref.interpreter.stuck import _compress

    assert _compress(names) == text


def test_traces_of_deep_derivations_stay_linear():
    from relay_ref.interpreter.trace import MAX_INDENT, format_trace
    from relay_ref.testing.growth import residual_chain

    mod = rr.infer_types(rr.parse(residual_chain(300)))
    _, events = rr.evaluate(mod, np.ones(8, "float32"), trace=True)
    lines = format_trace(events).splitlines()
    assert len(lines) == len(events)
    assert max(e.depth for e in events) > MAX_INDENT  # deep enough to be numbered
    assert max(len(line) for line in lines) < 2 * MAX_INDENT + 120
    assert any("[depth " in line for line in lines)


def test_default_depth_limit_is_at_least_a_million():
    from relay_ref.interpreter.eval import MAX_DEPTH, Interpreter

    assert MAX_DEPTH >= 10**6 and Interpreter().max_depth == MAX_DEPTH


def test_relay_run_reports_endless_recursion(tmp_path):
    prog = tmp_path / "loop.relay"
    prog.write_text(LOOP)
    out = subprocess.run([sys.executable, "-m", "relay_ref", "run", str(prog),
                          "--max-depth", "500"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin",
                                        "PYTHONPATH": str(ROOT)})
    assert out.returncode == 1, out.stderr
    assert "loop.relay:1:30: error: recursion deeper than 500 calls" in out.stderr
    assert "@main -> @f (x499)" in out.stderr and "Traceback" not in out.stderr


def test_typecheck_done_skips_the_check_and_the_run_time_guards():
    from relay_ref.testing.growth import residual_chain, step_count

    mod = rr.parse(residual_chain(50))
    checked = rr.infer_types(mod)
    x = np.full(8, 0.5, "float32")
    expected = rr.evaluate(checked, x)
    np.testing.assert_array_equal(rr.evaluate(checked, x, typecheck="done"), expected)
    guarded = step_count(lambda: rr.evaluate(checked, x, typecheck=False))
    trusted = step_count(lambda: rr.evaluate(checked, x, typecheck="done"))
    assert trusted < 0.8 * guarded  # no relation run per operator call
    with pytest.raises(TypeError, match="typecheck must be"):
        rr.evaluate(checked, x, typecheck="yes")
