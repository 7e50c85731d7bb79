"""Corner cases of the code generator and the executor's boundary, each compared with the
interpreter: sharing across branches, names, closures' environments, nesting limits,
argument checks of returned closures, byte order, error locations inside fused kernels."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.executor import groups

SHARED_EFFECT = """
def @main(%c: bool) -> int32 {
  let %r = ref(0);
  %0 = ref_write(%r, add(ref_read(%r), 1));
  let %a = if (%c) { %0 } else { () };
  let %b = %0;
  let %d = match (Some(1)) { Some(%v) => %0, None => () };
  ref_read(%r)
}
"""


@pytest.mark.parametrize("c", [True, False])
@pytest.mark.parametrize("passes", [None, ()])
def test_a_shared_node_runs_once_per_activation_across_branches(c: bool, passes) -> None:
    mod = rr.parse(SHARED_EFFECT)
    assert int(rr.compile(mod, passes=passes)(c)) == int(rr.evaluate(mod, c)) == 1


def test_local_names_never_collide_with_globals() -> None:
    mod = rr.parse("def @main(%g_foo: int32) -> int32 { @foo(%g_foo) }\n"
                   "def @foo(%x: int32) -> int32 { add(%x, 1) }")
    assert int(rr.compile(mod)(3)) == 4


def test_a_closure_keeps_captured_values_its_code_never_reads() -> None:
    mod = rr.parse("def @main(%x: int32) { fn () { match (%x) { _ => 1 } } }")
    closure = rr.compile(mod)(3)
    call = rr.parse("def @main(%f: fn () -> int32) { %f() }")
    assert int(rr.evaluate(call, closure)) == 1


def test_nesting_beyond_python_is_a_relay_error() -> None:
    depth = 120
    body = "".join(f"if (%x == {i}) {{ {i} }} else {{\n" for i in range(depth))
    mod = rr.parse(f"def @main(%x: int32) -> int32 {{\n{body}0{'}' * depth}\n}}")
    with pytest.raises(rr.RelayError, match="deeper than generated Python"):
        rr.compile(mod)


def test_returned_closures_check_arguments_against_their_inferred_type() -> None:
    mod = rr.parse("def @main() { fn (%y) { add(%y, 1) } }\n"
                   "def @use() -> int32 { @main()(2) }")
    closure = rr.compile(mod)()
    assert int(closure(np.int32(3))) == 4
    with pytest.raises(rr.RelayRuntimeError, match="argument %y"):
        closure(np.ones(3, "float32"))
    with pytest.raises(rr.RelayRuntimeError, match="argument %y"):
        closure("x")


def test_pass_lists_are_checked() -> None:
    mod = rr.parse("def @main(%x: int32) -> int32 { add(%x, 1) }")
    with pytest.raises(ValueError, match="names no pass: 'Nope'"):
        rr.compile(mod, passes=["Nope"])
    assert rr.compile(mod, passes="FuseOps,DeadCodeElimination").plan.passes == (
        "FuseOps", "DeadCodeElimination")


def test_non_native_byte_order_arguments() -> None:
    mod = rr.parse("def @main(%x: Tensor[(2048), float32]) { nn.relu(add(%x, %x)) }")
    x = np.linspace(-1, 1, 2048).astype(">f4")
    np.testing.assert_array_equal(rr.compile(mod)(x), rr.evaluate(mod, x.astype("<f4")))


def test_failures_inside_fused_kernels_are_located_at_the_operator() -> None:
    mod = rr.parse("def @main(%x: Tensor[(64, 64), int32], %y: Tensor[(64, 64), int32]) {\n"
                   "  %0 = divide(%x, %y);\n  add(%0, 1)\n}")
    x, y = np.ones((64, 64), "int32"), np.ones((64, 64), "int32")
    y[3, 3] = 0
    with pytest.raises(rr.RelayRuntimeError) as want:
        rr.evaluate(mod, x, y)
    exe = rr.compile(mod)
    assert any(g.strategy == "fused" for g in exe.plan.groups)
    with pytest.raises(rr.RelayRuntimeError) as got:
        exe(x, y)
    assert got.value.diagnostics[0].span == want.value.diagnostics[0].span
    assert got.value.diagnostics[0].message == want.value.diagnostics[0].message


def test_fused_casts_to_unsigned_wrap_as_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groups, "MIN_FUSED_ELEMENTS", 1)
    x = np.array([-129.0, 3.5, 1e9, -1.0], "float32")
    for dtype in ("uint8", "uint32"):
        mod = rr.parse(f'def @main(%x: Tensor[(4), float32]) {{ cast(%x, dtype="{dtype}") }}')
        exe = rr.compile(mod)
        assert exe.plan.groups[0].strategy == "fused"
        np.testing.assert_array_equal(exe(x), rr.evaluate(mod, x))


def test_only_recursive_programs_use_the_big_stack_thread() -> None:
    flat = rr.compile(rr.parse("def @f(%x: int32) -> int32 { add(%x, 1) }\n"
                               "def @main(%x: int32) -> int32 { @f(@f(%x)) }"))
    assert not flat._deep and int(flat(1)) == 3
    rec = rr.compile(rr.parse("def @f(%x: int32) -> int32 { if (%x == 0) { 0 } else "
                              "{ @f(%x - 1) } }\ndef @main(%x: int32) -> int32 { @f(%x) }"))
    assert rec._deep and int(rec(5)) == 0
