"""ToANormalForm on the reviewer's reproducers: primitive functions, and graph-shared nodes
whose first use is inside a branch or a function (spec/semantics.md 2.3: a shared node is
evaluated once per activation of the lowest scope common to its uses, where TVM's
ToANormalForm binds it). Each case checks the values before and
after (type-checked) and the A-normal shape of the result."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.visitor import post_order

ATOMS = (Var, GlobalVar, Op, Constructor, Constant)


def _operands(node: object) -> list:
    match node:
        case Call(op, args):
            return [op, *args]
        case Tuple(fields):
            return list(fields)
        case TupleGetItem(tup):
            return [tup]
        case If(cond):
            return [cond]
        case Match(data):
            return [data]
        case RefCreate(value) | RefRead(value):
            return [value]
        case RefWrite(ref, value):
            return [ref, value]
    return []


def _outside_primitives(root: object) -> list:
    """The nodes reachable from ``root`` without entering a ``Primitive=1`` function."""
    seen: set[int] = set()
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        if not (isinstance(node, Function) and node.attr("Primitive", 0)):
            stack.extend(children(node))
    return out


def assert_anf(mod: rr.IRModule) -> None:
    """Every operand is an atom (or a primitive function), every binder bound once."""
    binders: set[int] = set()
    for fn in mod.functions.values():
        for node in _outside_primitives(fn.body):
            for kid in _operands(node):
                ok = isinstance(kid, ATOMS) or (isinstance(kid, Function)
                                                and kid.attr("Primitive", 0))
                assert ok, (type(node).__name__, rr.astext(kid))
            if isinstance(node, Let):
                assert id(node.var) not in binders, node.var.name_hint
                binders.add(id(node.var))


def run(text: str, *argsets: tuple) -> rr.IRModule:
    """ANF of ``text``; for each argument tuple, the same value (or both fail)."""
    mod = rr.infer_types(rr.parse(text))
    out = rr.optimize(mod, ["ToANormalForm"])  # type-checks the result
    assert rr.alpha_equal(out.global_types["main"], mod.global_types["main"])
    assert_anf(out)
    for args in argsets:
        before = rr.evaluate(mod, *args)
        after = rr.evaluate(out, *args)
        assert np.array_equal(np.asarray(before), np.asarray(after)), (args, before, after,
                                                                       rr.astext(out))
    return out


def test_primitive_function_is_left_alone() -> None:
    out = run("""def @main(%x: float32) {
      %0 = fn (%p0: float32, Primitive=1) -> float32 { add(%p0, 1f) };
      %0(%x)
    }""", (np.float32(2),))
    assert float(rr.evaluate(out, np.float32(2))) == 3.0
    prim = [n for n in post_order(out.functions["main"].body) if isinstance(n, Function)]
    assert len(prim) == 1 and isinstance(prim[0].body, Call)  # body kept in graph form


def test_after_fuse_ops() -> None:
    mod = rr.parse("""def @main(%x: Tensor[(2, 3), float32]) {
      %0 = add(%x, 1f); %1 = exp(%0); %2 = multiply(%1, %0); sum(%2)
    }""")
    x = np.arange(6, dtype="float32").reshape(2, 3) / 10
    out = rr.optimize(mod, ["FuseOps", "ToANormalForm"])
    assert_anf(out)
    assert any(isinstance(n, Function) and n.attr("Primitive", 0)
               for n in post_order(out.functions["main"].body))
    np.testing.assert_allclose(rr.evaluate(out, x), rr.evaluate(mod, x), rtol=1e-6)


def test_a_read_shared_by_both_branches_is_bound_before_the_if() -> None:
    # TVM: %0's uses are in both branches, so its scope is the if's; Fill reaches it first
    # in the then-branch and binds it before the if: the read sees 0 on both paths.
    out = run("""def @main(%c: bool) -> int32 {
      let %r = ref(0);
      %0 = ref_read(%r);
      if (%c) { ref_write(%r, 1); %0 } else { ref_write(%r, 2); %0 }
    }""", (np.bool_(True),), (np.bool_(False),))
    assert int(rr.evaluate(out, np.bool_(True))) == 0
    assert int(rr.evaluate(out, np.bool_(False))) == 0
    body = out.functions["main"].body
    assert isinstance(body, Let) and isinstance(body.body, Let)
    assert isinstance(body.body.value, RefRead)
    assert isinstance(body.body.body, Let) and isinstance(body.body.body.value, If)


SHARED_DIVIDE = """def @main(%c: bool, %x: int32) -> int32 {
  %0 = divide(1, %x);
  %1 = if (%c) { add(%0, 1) } else { 5 };
  %2 = if (%c) { add(%0, 2) } else { 6 };
  add(%1, %2)
}"""


def test_a_failing_node_shared_by_two_branches_is_hoisted_as_tvm_does() -> None:
    # Its scope is the body's (uses in two ifs), bound before the first if: the division
    # runs on every path, in the input (E-Shared) and the output alike.
    out = run(SHARED_DIVIDE, (np.bool_(False), np.int32(1)), (np.bool_(True), np.int32(1)))
    assert int(rr.evaluate(out, np.bool_(False), np.int32(1))) == 11
    assert int(rr.evaluate(out, np.bool_(True), np.int32(1))) == 5
    for mod in (rr.parse(SHARED_DIVIDE), out):
        with pytest.raises(rr.RelayRuntimeError, match="division by zero"):
            rr.evaluate(mod, np.bool_(False), np.int32(0))


def test_conditional_first_use_then_unconditional_use_keeps_one_evaluation() -> None:
    out = run("""def @main(%c: bool) -> int32 {
      let %r = ref(0);
      %0 = ref_read(%r);
      %1 = if (%c) { ref_write(%r, 1); %0 } else { 7 };
      ref_write(%r, 5);
      add(%1, %0)
    }""", (np.bool_(True),), (np.bool_(False),))
    # %1 is first used by the add, after the write of 5; %0 (used in %1's branch and by
    # the add) is bound after %1's condition, before the branch: it reads 5 on both paths
    assert int(rr.evaluate(out, np.bool_(True))) == 10
    assert int(rr.evaluate(out, np.bool_(False))) == 12
    assert rr.alpha_equal(rr.parse(rr.astext(out)), out)  # the graph form prints and parses


def test_shared_effect_in_exclusive_match_clauses_is_bound_once_before_them() -> None:
    out = run("""def @main(%x: int32) -> int32 {
      let %r = ref(%x);
      %0 = ref_write(%r, add(ref_read(%r), 1));
      %1 = (%0, ref_read(%r));
      match (Some(%x)) {
        Some(%y) => { ref_write(%r, %y); %1.1 },
        None => { %1.1 },
      }
    }""", (np.int32(3),))
    # %1 (used in both clauses) is bound after the scrutinee, before the clauses: %0
    # writes 3 + 1, %1.1 reads 4; the clause's write comes after
    assert int(rr.evaluate(out, np.int32(3))) == 4
    writes = [n for n in post_order(out.functions["main"].body) if isinstance(n, RefWrite)]
    assert len(writes) == 2  # the clause's own write and %0, once


def test_shared_ref_used_inside_a_function_and_outside() -> None:
    # TVM's scope for %0 is @main's body (uses inside the fn and outside): one cell, made
    # before the closure, which captures it (spec 2.3): 1 + 2 + 10.
    text = """def @main() -> int32 {
      %0 = ref(0);
      let %f = fn () -> int32 { ref_write(%0, add(ref_read(%0), 1)); ref_read(%0) };
      let %a = %f();
      let %b = %f();
      ref_write(%0, 10);
      add(add(%a, %b), ref_read(%0))
    }"""
    assert int(rr.evaluate(rr.parse(text))) == 13
    out = run(text, ())
    assert int(rr.evaluate(out)) == 13


def test_safe_node_is_still_hoisted_to_the_common_scope() -> None:
    out = run("""def @main(%c: bool, %x: Tensor[(3), float32]) {
      %0 = add(%x, 1f);
      %1 = if (%c) { multiply(%0, 2f) } else { %x };
      add(%1, %0)
    }""", (np.bool_(True), np.ones(3, "float32")), (np.bool_(False), np.ones(3, "float32")))
    body = out.functions["main"].body
    assert isinstance(body, Let) and isinstance(body.value, Call)  # add(%x, 1f) first
    assert body.value.op.name == "add"
