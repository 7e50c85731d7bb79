"""Scalars in compiled code (relay_ref/executor/scalars.py, values.py, gcpause.py): 0-d int32
as Python ints with exact wrap-around, bools as Python bools, other widths as NumPy scalars;
every result equal to ``rr.evaluate``'s exactly (dtype, value, failure), the outputs' types
unchanged, and the garbage collector's state restored after every call."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.executor import scalars
from relay_ref.interpreter.values import ConstructorValue, RefValue

DTYPES = ("int8", "int16", "int32", "int64", "uint8")
SUFFIX = {"int8": "i8", "int16": "i16", "int32": "", "int64": "i64", "uint8": "u8"}
BINARY = ("add", "subtract", "multiply", "divide", "mod", "floor_divide", "floor_mod",
          "left_shift", "right_shift", "bitwise_and", "bitwise_or", "bitwise_xor",
          "maximum", "minimum")
UNARY = ("negative", "abs", "bitwise_not")
COMPARE = ("less", "greater", "less_equal", "greater_equal", "equal", "not_equal")
LOGICAL = ("logical_and", "logical_or", "logical_xor")


def _values(dtype: str) -> st.SearchStrategy[int]:
    info = np.iinfo(dtype)
    edges = [int(info.min), int(info.max), 0, 1, -1, 2, 7, 31, 32, int(info.max) - 1]
    return st.one_of(st.sampled_from([v for v in edges if info.min <= v <= info.max]),
                     st.integers(int(info.min), int(info.max)))


def _literal(dtype: str, v: int) -> str:
    if dtype == "int32" and v == -(2**31):
        return "(-2147483647 - 1)"
    return f"{v}{SUFFIX[dtype]}" if v >= 0 else f"({v}{SUFFIX[dtype]})"


@st.composite
def int_programs(draw: st.DrawFn) -> tuple[str, str, list]:
    """(dtype, program text, arguments): a let-chain of random scalar operations on three
    ``dtype`` parameters and a bool, returning the last integer and the last bool."""
    dtype = draw(st.sampled_from(DTYPES))
    ints, bools = ["%a", "%b", "%c"], ["%p"]
    lines = []
    value = _values(dtype)
    for k in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["binary", "binary", "binary", "const", "unary",
                                     "compare", "where", "cast", "logical", "if"]))
        x, y = draw(st.sampled_from(ints)), draw(st.sampled_from(ints))
        name = f"%v{k}"
        if kind == "binary":
            lines.append(f"let {name} = {draw(st.sampled_from(BINARY))}({x}, {y});")
            ints.append(name)
        elif kind == "const":
            c = _literal(dtype, draw(value))
            op = draw(st.sampled_from(BINARY))
            args = (x, c) if draw(st.booleans()) else (c, x)
            lines.append(f"let {name} = {op}({args[0]}, {args[1]});")
            ints.append(name)
        elif kind == "unary":
            lines.append(f"let {name} = {draw(st.sampled_from(UNARY))}({x});")
            ints.append(name)
        elif kind == "compare":
            rhs = y if draw(st.booleans()) else _literal(dtype, draw(value))
            lines.append(f"let {name} = {draw(st.sampled_from(COMPARE))}({x}, {rhs});")
            bools.append(name)
        elif kind == "where":
            lines.append(f"let {name} = where({draw(st.sampled_from(bools))}, {x}, {y});")
            ints.append(name)
        elif kind == "cast":
            if draw(st.booleans()):
                lines.append(f'let {name} = cast({draw(st.sampled_from(bools))}, '
                             f'dtype="{dtype}");')
                ints.append(name)
            elif draw(st.booleans()):
                lines.append(f'let {name} = cast({x}, dtype="bool");')
                bools.append(name)
            else:  # through int32 and back (a kernel for other widths)
                lines.append(f'let {name} = cast(cast({x}, dtype="int32"), dtype="{dtype}");')
                ints.append(name)
        elif kind == "logical":
            op = draw(st.sampled_from(LOGICAL + ("logical_not",)))
            p, q = draw(st.sampled_from(bools)), draw(st.sampled_from(bools))
            lines.append(f"let {name} = {op}({p}{'' if op == 'logical_not' else ', ' + q});")
            bools.append(name)
        else:  # an if on a comparison with a constant: the branches' intervals
            c = _literal(dtype, draw(value))
            cmp = draw(st.sampled_from(COMPARE))
            op1, op2 = draw(st.sampled_from(BINARY[:3])), draw(st.sampled_from(BINARY[:3]))
            d = _literal(dtype, draw(value))
            lines.append(f"let {name} = if ({cmp}({x}, {c})) {{ {op1}({x}, {d}) }} "
                         f"else {{ {op2}({x}, {d}) }};")
            ints.append(name)
    body = "\n  ".join(lines)
    text = (f"def @main(%a: {dtype}, %b: {dtype}, %c: {dtype}, %p: bool) {{\n  {body}\n"
            f"  ({ints[-1]}, {bools[-1]})\n}}\n")
    args = [np.array(draw(value), dtype) for _ in range(3)] + [np.array(draw(st.booleans()))]
    return dtype, text, args


def _run(fn) -> tuple[object, str | None]:
    try:
        return fn(), None
    except rr.RelayError as err:
        return None, str(err).splitlines()[0]


def _same(got: object, want: object) -> None:
    assert type(got) is type(want)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w)
        return
    assert isinstance(got, np.ndarray) and isinstance(want, np.ndarray)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)


@settings(max_examples=200)
@given(int_programs(), st.booleans())
def test_random_int_programs_equal_the_interpreter(program, fuse: bool) -> None:
    dtype, text, args = program
    mod = rr.parse(text)
    # other widths without fusion: one kernel per op (no fused numba kernel to compile)
    passes = None if fuse and dtype == "int32" else ()
    exe = rr.compile(mod, passes=passes)
    want, want_err = _run(lambda: rr.evaluate(mod, *args))
    got, got_err = _run(lambda: exe(*args))
    assert (got_err is None) == (want_err is None), (text, got_err, want_err)
    if want_err is not None:
        assert "division by zero" in got_err and "division by zero" in want_err
        return
    _same(got, want)


@pytest.mark.parametrize("op", BINARY + COMPARE)
def test_each_binary_int32_fast_path_on_edges_equals_the_reference(op: str) -> None:
    from relay_ref.ops.registry import OpRuntimeError, get_op

    edges = [-(2**31), -(2**31) + 1, -(2**30), -33, -32, -31, -7, -2, -1, 0, 1, 2, 7, 31, 32,
             33, 2**30 - 1, 2**30, 2**31 - 2, 2**31 - 1]
    ty = rr.parse("def @main(%x: int32) { %x }").functions["main"].params[0].type_annotation
    fast = scalars.fast_path(op, None, [ty, ty])
    assert fast is not None
    ns = dict(scalars.HELPERS)
    ref = get_op(op).reference
    for a in edges:
        for b in edges:
            try:
                want = ref([np.array(a, np.int32), np.array(b, np.int32)], None)
            except OpRuntimeError:
                with pytest.raises(OpRuntimeError):
                    eval(fast.template.format(a, b), ns)
                continue
            got = eval(f"({fast.template.format(f'({a})', f'({b})')})", ns)
            if fast.interval is not None:
                got = scalars.wrap32(got)
            assert type(got) is (bool if want.dtype == np.bool_ else int)
            assert got == want.item(), (op, a, b)


FIB = """def @fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }
}
def @main(%n: int32) -> int32 { @fib(%n) }"""

#: a loop whose accumulator overflows int32 many times (wraps as np.int32 does)
POLY = """def @loop(%i: int32, %acc: int32) -> int32 {
  if (%i == 0) { %acc } else { @loop(%i - 1, %acc * 31 + %i * %i * %i - 7) }
}
def @main(%n: int32) -> int32 { @loop(%n, 1) }"""

REFS = """def @count(%r: ref(int32), %i: int32) -> () {
  if (%i == 0) { () } else {
    ref_write(%r, ref_read(%r) + %i * 1000003);
    @count(%r, %i - 1)
  }
}
def @main(%n: int32) -> (int32, ref(int32)) {
  let %r = ref(0);
  let %u = @count(%r, %n);
  (ref_read(%r), %r)
}"""

LIST = """def @build(%i: int32, %acc: List[int32]) -> List[int32] {
  if (%i == 0) { %acc } else { @build(%i - 1, Cons(%i * 65537, %acc)) }
}
def @main(%n: int32) -> (int32, List[int32], bool) {
  let %xs = @build(%n, Nil);
  let %ys = @map(fn (%x: int32) -> int32 { %x * 40000 }, %xs);
  (@foldl(fn (%acc: int32, %y: int32) -> int32 { %acc + %y }, 0, %ys), %ys, %n > 3)
}"""

EDGE = """def @main(%n: int32) -> (int32, int32, int32) {
  let %a = if (%n == 0) { 0 } else { %n - 1 };
  let %b = if (%n > 5) { %n + 2147483647 } else { %n - 2147483647 };
  let %c = if (%n < -5) { negative(%n) } else { abs(%n) * 2 };
  (%a, %b, %c)
}"""


@pytest.mark.parametrize(("text", "args"), [
    (FIB, [15]), (FIB, [0]), (POLY, [3000]), (POLY, [1]), (REFS, [2000]), (LIST, [500]),
    (LIST, [0]), (EDGE, [-(2**31)]), (EDGE, [2**31 - 1]), (EDGE, [6]), (EDGE, [-6]),
    (EDGE, [0]), (EDGE, [5])])
def test_control_flow_programs_equal_the_interpreter(text: str, args: list) -> None:
    mod = rr.parse(text)
    got = rr.compile(mod)(*args)
    want = rr.evaluate(mod, *args)
    assert_same_value(got, want)


def assert_same_value(got: object, want: object) -> None:
    """Equal values of the same representation (0-d arrays of the same dtype inside ADT
    values, refs and tuples), as the interpreter gives them."""
    work = [(got, want)]
    while work:
        g, w = work.pop()
        assert type(g) is type(w)
        if isinstance(w, np.ndarray):
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
        elif isinstance(w, tuple):
            work.extend(zip(g, w, strict=True))
        elif isinstance(w, ConstructorValue):
            assert g.constructor.tag == w.constructor.tag
            work.extend(zip(g.fields, w.fields, strict=True))
        elif isinstance(w, RefValue):
            work.append((g.value, w.value))
        else:
            assert g == w


def test_outputs_keep_their_types() -> None:
    mod = rr.parse("""def @main(%n: int32, %p: bool) {
      let %f = fn (%x: int32) -> int32 { %x + %n };
      (%n + 1, %p, %n > 2, ref(%n), Cons(%n, Nil), %f, 7i64 + 1i64, 1.5f + 1f)
    }""")
    out = rr.compile(mod)(np.int32(4), True)
    assert [type(v) for v in out[:3]] == [np.ndarray] * 3
    assert (out[0].dtype, out[1].dtype, out[2].dtype) == (np.int32, np.bool_, np.bool_)
    assert out[0].shape == () and int(out[0]) == 5 and bool(out[2])
    assert type(out[3].value) is np.ndarray and out[3].value.dtype == np.int32
    assert type(out[4].fields[0]) is np.ndarray and out[4].fields[0].dtype == np.int32
    called = out[5](np.array(2147483647, np.int32))  # a returned closure, called from Python
    assert type(called) is np.ndarray and called.dtype == np.int32
    assert int(called) == -(2**31) + 3
    assert out[6].dtype == np.int64 and int(out[6]) == 8
    assert out[7].dtype == np.float32 and float(out[7]) == 2.5
    # the interpreter accepts the compiled values back: the closure's environment converted
    assert int(rr.evaluate(rr.parse("def @main(%f: fn (int32) -> int32) { %f(1) }"),
                           out[5])) == 5


def test_values_passed_back_in_are_converted_in_place() -> None:
    mod = rr.parse("""def @main(%r: ref(int32), %xs: List[int32]) -> int32 {
      ref_write(%r, ref_read(%r) * 2);
      match (%xs) { Cons(%x, _) => %x + ref_read(%r), Nil => 0 }
    }""")
    exe = rr.compile(mod)
    r = rr.evaluate(rr.parse("def @main() { ref(20) }"))
    xs = rr.evaluate(rr.parse("def @main() { Cons(1, Nil) }"))
    assert int(exe(r, xs)) == 41
    assert type(r.value) is np.ndarray and r.value.dtype == np.int32 and int(r.value) == 40
    assert type(xs.fields[0]) is np.ndarray and xs.fields[0].dtype == np.int32


def test_division_by_zero_fails_as_the_interpreter_does() -> None:
    mod = rr.parse("def @main(%a: int32, %b: int32) -> int32 { divide(%a, %b) + 1 }")
    with pytest.raises(rr.RelayError) as compiled:
        rr.compile(mod)(1, 0)
    with pytest.raises(rr.RelayError) as interpreted:
        rr.evaluate(mod, 1, 0)
    assert str(compiled.value).splitlines()[0] == str(interpreted.value).splitlines()[0]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_state_is_restored_after_a_call_that_raises(enabled: bool) -> None:
    from relay_ref.executor import gcpause

    mod = rr.parse("def @a(%x: int32) -> int32 { %x }\n"
                   "def @main(%a: int32, %b: int32) -> int32 { @a(floor_mod(%a, %b)) }")
    exe = rr.compile(mod)
    was, thresholds = gc.isenabled(), gc.get_threshold()
    try:
        (gc.enable if enabled else gc.disable)()
        gc.set_threshold(900, 11, 12)
        with pytest.raises(rr.RelayError):
            exe(1, 0)
        assert gc.isenabled() is enabled and gc.get_threshold() == (900, 11, 12)
        assert int(exe(7, 3)) == 1
        assert gc.isenabled() is enabled and gc.get_threshold() == (900, 11, 12)
        with gcpause.paused():  # raised, a higher setting of the user's kept
            assert gc.get_threshold() == (10_000, 11, 1_000)
    finally:
        (gc.enable if was else gc.disable)()
        gc.set_threshold(*thresholds)


def test_the_collector_state_is_restored_after_nested_and_threaded_calls() -> None:
    from relay_ref.executor import gcpause

    before = gc.get_threshold()
    gcpause.enter()  # nested: the outermost call restores
    gcpause.enter()
    assert gc.get_threshold() == gcpause.CALL_THRESHOLDS
    gcpause.leave()
    assert gc.get_threshold() == gcpause.CALL_THRESHOLDS
    gcpause.leave()
    assert gc.get_threshold() == before
    exe = rr.compile(rr.parse(POLY))
    want = int(exe(3000))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                assert int(exe(3000)) == want
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert gc.get_threshold() == before


def test_deep_first_order_runs_stay_on_the_callers_thread() -> None:
    import sys

    from relay_ref import deepstack

    limit = sys.getrecursionlimit()
    seen = deepstack.run_raised(lambda: (threading.current_thread(), sys.getrecursionlimit()),
                                recursion_limit=50_000)
    assert seen[0] is threading.current_thread() and seen[1] >= 50_000
    assert sys.getrecursionlimit() == limit
    with pytest.raises(ZeroDivisionError):
        deepstack.run_raised(lambda: 1 // 0, recursion_limit=50_000)
    assert sys.getrecursionlimit() == limit
    # a deep first-order program runs on the caller's thread, 100 000 calls deep
    mod = rr.parse("def @f(%n: int32) -> int32 { if (%n == 0) { 0 } else { @f(%n - 1) + 1 } }"
                   "\ndef @main(%n: int32) -> int32 { @f(%n) }")
    exe = rr.compile(mod)
    assert exe._python_deep
    assert int(exe(100_000)) == 100_000
    assert sys.getrecursionlimit() == limit
    with pytest.raises(rr.RelayError, match="deeper than 1000"):
        rr.compile(mod, max_depth=1000)(5000)
    # a function value from outside may run the interpreter: the big-stack thread
    hosted = rr.compile(rr.parse(
        "def @main(%f: fn (int32) -> int32, %n: int32) -> int32 {\n"
        "  if (%n == 0) { 0 } else { %f(%n) + @main(%f, %n - 1) }\n}"))
    assert hosted._deep and not hosted._python_deep


MAX = np.int32(2**31 - 1)


@pytest.mark.parametrize("src, args", [
    ("def @main(%t: (int32, int32)) { add(%t.1, %t.0) }", ((MAX, np.int32(1)),)),
    ("def @main(%t: (int32, Tensor[(2,), int32])) { add(%t.0, %t.1) }",
     ((MAX, np.array([1, 2], "int32")),)),
    ("def @main(%t: (int32, int32)) { reshape(%t.0, newshape=[1]) }",
     ((np.int32(5), np.int32(1)),)),
    ("def @main(%t: ((int32, bool), int32)) { where(%t.0.1, add(%t.0.0, %t.1), %t.1) }",
     (((MAX, np.bool_(True)), np.int32(1)),)),
    ("def @main(%a: int32, %b: int32) { let %t = (%a, %b); add(%t.1, %a) }",
     (MAX, np.int32(1))),
    ("def @f(%t: (int32, int32), %n: int32) -> int32 {\n"
     "  if (%n == 0) { %t.0 } else { @f((add(%t.1, %t.0), %t.0), %n - 1) }\n}\n"
     "def @main(%n: int32) -> int32 { @f((1, 1), %n) }", (np.int32(60),)),
])
def test_int32_fields_of_tuples_reach_kernels_as_int32(src: str, args: tuple) -> None:
    """A fused group that projects a tuple parameter's int32 field hands it to its kernels:
    as a 0-d int32 array, never a Python int (NumPy would compute in int64: no wrap)."""
    mod = rr.parse(src)
    got, want = rr.compile(mod)(*args), rr.evaluate(mod, *args)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(got, want)
