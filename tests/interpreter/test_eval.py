"""The definitional interpreter through rr.evaluate: API, errors, depth, interrupts, traces."""

from __future__ import annotations

import _thread
import sys
import threading

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.interpreter.driver import evaluate
from relay_ref.interpreter.eval import Interpreter
from relay_ref.interpreter.trace import format_trace
from relay_ref.interpreter.values import ConstructorValue, value_to_text


def run(text: str, *args, **kwargs):
    return rr.evaluate(rr.infer_types(rr.parse(text, "test.relay")), *args, **kwargs)


def text_of(text: str, *args) -> str:
    return value_to_text(run(text, *args))


# -- API -------------------------------------------------------------------------------------

def test_arguments_take_the_annotated_dtype():
    prog = """
    def @main(%a: int64, %b: float64, %c: bool, %d: Tensor[(2), float32]) {
      (%a + 1i64, %b * 2f64, %c, %d)
    }"""
    a, b, c, d = run(prog, 3, 1.5, True, [1.0, 2.0])
    assert a.dtype == np.int64 and a == 4
    assert b.dtype == np.float64 and b == 3.0
    assert c.dtype == np.bool_ and c
    assert d.dtype == np.float32 and d.tolist() == [1.0, 2.0]


def test_wrong_arguments_are_runtime_errors():
    prog = "def @main(%x: Tensor[(2, ?), float32]) { %x }"
    assert run(prog, np.ones((2, 5), "float32")).shape == (2, 5)
    with pytest.raises(rr.RelayRuntimeError, match="shape"):
        run(prog, np.ones((3, 5), "float32"))
    with pytest.raises(rr.RelayRuntimeError, match="float64"):
        run(prog, np.ones((2, 5), "float64"))
    with pytest.raises(rr.RelayRuntimeError, match="1 argument"):
        run(prog)
    with pytest.raises(rr.RelayRuntimeError, match="@nope"):
        run(prog, np.ones((2, 5), "float32"), entry="nope")


def test_other_entry_and_adt_arguments():
    prog = """
    def @len2(%xs: List[int32]) -> int32 { @length(%xs) * 2 }
    def @main() -> int32 { 0 }"""
    mod = rr.infer_types(rr.parse(prog))
    xs = rr.evaluate(rr.parse_expr("Cons(1, Cons(2, Nil))", module=mod), module=mod)
    assert isinstance(xs, ConstructorValue) and xs.constructor.name == "Cons"
    assert rr.evaluate(mod, xs, entry="len2") == 4


def test_expression_with_module_and_env():
    mod = rr.infer_types(rr.parse("def @sq(%x: int32) -> int32 { %x * %x }"))
    expr = rr.parse_expr("@sq(3) + 1", module=mod)
    assert rr.evaluate(expr, module=mod) == 10
    from relay_ref.ir.expr import Var

    y = Var("y")
    expr = rr.parse_expr("@sq(%y)", module=mod, scope={"y": y})
    assert rr.evaluate(expr, module=mod, env={y: np.array(5, "int32")}) == 25
    fn = rr.parse_expr("fn (%a: int32) -> int32 { %a + 1 }")
    assert rr.evaluate(fn, 41) == 42  # an expression's value applied to args


def test_function_values_are_returned():
    value = run("def @main() { fn (%x: int32) -> int32 { %x } }")
    assert value_to_text(value) == "<closure fn (%x: int32) -> int32>"


# -- errors ----------------------------------------------------------------------------------

def test_runtime_error_has_location_and_relay_stack():
    prog = """def @inner(%xs: List[int32]) -> int32 {
  match? (%xs) {
    Cons(%x, _) => %x,
  }
}
def @outer(%n: int32) -> int32 { @inner(Nil) + %n }
def @main() -> int32 { @outer(1) }
"""
    with pytest.raises(rr.RelayRuntimeError) as info:
        run(prog)
    err = info.value
    assert (err.span.line, err.span.column) == (2, 3)
    assert err.relay_stack == ("main", "outer", "inner")
    text = err.render()
    assert "no match clause matched the value Nil" in text
    assert "@main -> @outer -> @inner" in text
    assert "Traceback" not in text


def test_division_by_zero_and_deep_stack_is_compressed():
    prog = """def @count(%n: int32) -> int32 {
  if (%n == 0) { 1 / %n } else { @count(%n - 1) }
}
def @main() -> int32 { @count(50) }
"""
    with pytest.raises(rr.RelayRuntimeError) as info:
        run(prog)
    assert "division by zero" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (2, 18)
    assert len(info.value.relay_stack) == 52
    assert "@count (x51)" in info.value.render()


def test_shape_mismatch_through_any_dimension():
    prog = """def @f(%x: Tensor[(?), float32]) -> Tensor[(?), float32] { %x }
def @g(%x: Tensor[(3), float32]) -> Tensor[(3), float32] { %x }
def @main(%x: Tensor[(?), float32]) -> Tensor[(3), float32] { @g(@f(%x)) }
"""
    assert run(prog, np.ones(3, "float32")).shape == (3,)
    with pytest.raises(rr.RelayRuntimeError, match=r"annotated Tensor\[\(3\), float32\]"):
        run(prog, np.ones(4, "float32"))


# -- semantics details -----------------------------------------------------------------------

def test_closures_capture_values_not_cells():
    prog = """def @main() -> (int32, int32) {
  let %r = ref(1);
  let %x = ref_read(%r);
  let %get_x = fn () -> int32 { %x };
  let %get_r = fn () -> int32 { ref_read(%r) };
  ref_write(%r, 2);
  (%get_x(), %get_r())
}"""
    assert text_of(prog) == "(1, 2)"


def test_left_to_right_evaluation_order():
    prog = """def @main() {
  let %log = ref(Nil);
  let %note = fn (%i: int32) -> int32 {
    ref_write(%log, Cons(%i, ref_read(%log)));
    %i
  };
  let %t = (%note(1), %note(2) + %note(3), Some(%note(4)));
  @rev(ref_read(%log))
}"""
    assert text_of(prog) == "Cons(1, Cons(2, Cons(3, Cons(4, Nil))))"


def test_long_let_chain_does_not_recurse():
    lets = "\n".join(f"  let %x{i} = %x{i - 1} + 1;" for i in range(1, 3_001))
    prog = f"def @main() -> int32 {{\n  let %x0 = 0;\n{lets}\n  %x3000\n}}"
    assert run(prog) == 3_000


DEEP = """
def @build(%n: int32) -> List[int32] {
  if (%n == 0) { Nil } else { Cons(%n, @build(%n - 1)) }
}
def @main(%n: int32) -> int32 { @sum(@build(%n)) }
"""


@pytest.mark.slow
def test_recursion_100000_deep():
    """Building (non-tail recursion) and summing (@foldl) a 100 000-element list."""
    total = run(DEEP, 100_000)
    assert total == np.int64(100_000 * 100_001 // 2).astype(np.int32)


# -- interrupts ------------------------------------------------------------------------------

LOOP = """
def @spin(%n: int32) -> int32 { if (%n < 0) { %n } else { @spin(%n + 1) } }
def @fib(%n: int32) -> int32 { if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) } }
def @fibr(%r: ref(int32), %n: int32) -> int32 {
  let %u = ref_write(%r, ref_read(%r) + 1);
  if (%n < 2) { %n } else { @fibr(%r, %n - 1) + @fibr(%r, %n - 2) }
}
def @main() -> int32 { @fib(40) }
"""
FIB40_CALLS = 331_160_281  # calls fib(40) makes: 2 fib(41) - 1


def test_keyboard_interrupt_stops_evaluation_promptly():
    mod = rr.infer_types(rr.parse(LOOP))
    steps = rr.RefValue(np.array(0, "int32"))  # @fibr counts its calls here: the work done so far
    limit = sys.getrecursionlimit()
    timer = threading.Timer(0.3, _thread.interrupt_main)  # when it lands does not matter
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            rr.evaluate(mod, steps, np.array(40, "int32"), entry="fibr")
    finally:
        timer.cancel()
    # Work, not time. The evaluation did some calls and stopped before fib(40)'s last;
    # and it stopped for good: its big-stack worker ended (run_deep restores the recursion
    # limit only then), and it makes no more calls while another evaluation runs.
    done = int(steps.value)
    assert 0 < done < FIB40_CALLS
    assert sys.getrecursionlimit() == limit
    # still usable afterwards
    assert rr.evaluate(rr.parse_expr("@fib(10)", module=mod), module=mod) == 55
    assert int(steps.value) == done


def test_a_stop_request_ends_the_evaluation_at_its_next_call():
    """The interpreter checks the stop flag at every closure application: after the request
    it enters none (counted, with no timer)."""
    from relay_ref.interpreter.eval import Interrupted

    class Counting(Interpreter):
        entered = 0

        def e_app_closure(self, fn, args, call, frame=None):  # noqa: ANN001, ANN202
            self.entered += 1
            if self.entered == 1000:
                self.request_stop()
            return super().e_app_closure(fn, args, call, frame)

    interp = Counting(rr.infer_types(rr.parse(LOOP)))
    with pytest.raises(Interrupted):
        interp.apply(interp.global_closure("main", None), [], None)
    assert interp.entered == 1000


def test_stop_flag_interrupts_the_worker():
    mod = rr.infer_types(rr.parse(LOOP))
    interp = Interpreter(mod)
    threading.Timer(0.2, interp.request_stop).start()
    from relay_ref.interpreter.eval import Interrupted

    with pytest.raises(Interrupted):
        interp.apply(interp.global_closure("main", None), [], None)


# -- traces ----------------------------------------------------------------------------------

def test_trace_records_rules_in_order():
    mod = rr.infer_types(rr.parse("""def @main() -> int32 {
  let %x = 1;
  if (%x == 1) { (%x, 2).1 } else { 0 }
}"""))
    value, events = evaluate(mod, trace=True)
    assert value == 2
    # Derivation order: each conclusion, then its premises one level deeper.
    tree = [(e.depth - events[0].depth, e.rule) for e in events]
    assert tree == [(0, "E-App-Closure"), (1, "E-Let"), (2, "E-Const"), (2, "E-If-True"),
                    (3, "E-App-Op"), (4, "E-Var"), (4, "E-Const"), (3, "E-Proj"),
                    (4, "E-Tuple"), (5, "E-Var"), (5, "E-Const")]
    text = format_trace(events)
    assert "E-If-True  if (%x == 1) { (%x, 2).1 } else { 0 }" in text
    assert format_trace(events, limit=3).endswith("... 8 more steps")


def test_trace_of_recursion_and_matching():
    mod = rr.infer_types(rr.parse("def @main() -> int32 { @length(Cons(1, Nil)) }"))
    _, events = evaluate(mod, trace=True)
    rules = [e.rule for e in events]
    assert rules.count("E-Match") == 2 and "E-App-Ctor" in rules and "E-Global" in rules


def test_host_arguments_of_non_tensor_type_are_checked():
    # A Python list passed for List[int32] ran as a tensor; (1,) for a pair was an IndexError.
    mod = rr.infer_types(rr.parse(
        "def @g(%l: List[int32]) { %l } def @t(%p: (int32, bool)) { %p.1 }\n"
        "def @r(%x: ref(int32)) { ref_read(%x) } def @id[A](%x: A) -> A { %x }\n"
        "def @main() { Cons(1, Nil) }"))
    for entry, arg in [("g", [1, 2]), ("g", 1), ("t", (1,)), ("r", 1)]:
        with pytest.raises(rr.RelayRuntimeError) as info:
            rr.evaluate(mod, arg, entry=entry)
        first = info.value.diagnostics[0]
        assert first.span is not None and "argument %" in first.message
    lst = rr.evaluate(mod)
    assert rr.evaluate(mod, lst, entry="g") is lst and rr.evaluate(mod, lst, entry="id") is lst


def test_endless_recursion_is_located_at_the_recursive_call():
    mod = rr.infer_types(rr.parse(
        "def @f(%n: int32) -> int32 { add(1, @f(%n)) }\ndef @main() { @f(1) }", "loop.relay"))
    with pytest.raises(rr.RelayRuntimeError) as info:
        rr.evaluate(mod, max_depth=2000)
    first = info.value.diagnostics[0]
    assert "recursion deeper than 2000 calls" in first.message
    assert (first.span.line, first.span.column) == (1, 37)
