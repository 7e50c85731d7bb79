"""Regions stay inside one scope and never reorder effects (spec/byoc.md BYOC-Merge,
BYOC-Convex): a node an ``if`` guards is not computed outside its branch, a closure's node
not outside the closure, and in a function whose evaluation order is observable (reference
operations) each region is one call. Each program is partitioned for an interpreter-backed
backend, and its value compared with the original's, under ``rr.evaluate`` and
``rr.compile``."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.byoc import register_reference_backend, unregister_backend
from relay_ref.ir.expr import Call, Function, GlobalVar, If
from relay_ref.ir.visitor import post_order
from relay_ref.passes.regions import effect_count, node_scopes

OPS = ["add", "multiply", "exp", "tanh", "divide", "subtract"]


@pytest.fixture(autouse=True)
def ta() -> Iterator[None]:
    register_reference_backend("ta", OPS)
    yield
    unregister_backend("ta")


def region_ops(part: rr.IRModule) -> dict[str, list[str]]:
    """Each outlined function's operator calls."""
    return {name: sorted(n.op.name for n in post_order(f.body)
                         if type(n) is Call and hasattr(n.op, "name")
                         and type(n.op) is not GlobalVar)
            for name, f in part.functions.items() if f.attr("Compiler") == "ta"}


def same(a: object, b: object) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore
    return np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def check(text: str, *args: np.ndarray) -> rr.IRModule:
    mod = rr.parse(text)
    want = rr.evaluate(mod, *args)
    part = rr.partition(mod, ["ta"])
    assert same(rr.evaluate(part, *args), want)
    assert same(rr.compile(mod, targets=["ta"])(*args), want)
    assert rr.alpha_equal(rr.parse(rr.astext(part)), part)
    return part


def test_a_ref_write_is_not_reordered_with_a_region() -> None:
    part = check("""
def @main(%x: Tensor[(2), float32]) {
  let %r = ref(%x);
  let %a = add(%x, 1f);
  let %u = ref_write(%r, exp(%a));
  multiply(ref_read(%r), %a)
}""", np.array([0.5, 1.0], "float32"))
    assert all(len(ops) == 1 for ops in region_ops(part).values())
    assert len(region_ops(part)) == 3


def test_a_guarded_division_stays_in_its_branch() -> None:
    text = """
def @main(%a: Tensor[(3), int32], %b: int32) {
  %0 = add(%a, %a);
  if (not_equal(%b, 0)) { divide(%0, %b) } else { %0 }
}"""
    part = check(text, np.arange(3, dtype="int32"), np.array(0, "int32"))
    assert sorted(region_ops(part).values()) == [["add"], ["divide"]]
    check(text, np.arange(3, dtype="int32"), np.array(2, "int32"))


def test_branches_merge_within_themselves_not_with_the_condition_side() -> None:
    part = check("""
def @main(%x: Tensor[(2, 3), float32], %c: bool) {
  %0 = add(%x, %x);
  if (%c) { exp(%0) } else { multiply(%0, tanh(%0)) }
}""", np.ones((2, 3), "float32"), np.array(False))
    assert sorted(region_ops(part).values()) == [["add"], ["exp"], ["multiply", "tanh"]]


def test_a_closure_body_region_is_called_inside_the_closure() -> None:
    part = check("""
def @main(%x: Tensor[(2, 3), float32]) {
  %0 = subtract(%x, 1f);
  let %f = fn (%y: Tensor[(2, 3), float32]) { multiply(exp(%y), %0) };
  add(%f(%x), %0)
}""", np.ones((2, 3), "float32"))
    main = part.functions["main"]
    closures = [n for n in post_order(main.body) if type(n) is Function]
    inner = [n for c in closures for n in post_order(c.body)
             if type(n) is Call and type(n.op) is GlobalVar]
    ops = region_ops(part)
    called_inside = {op for call in inner for op in ops[call.op.name]}
    assert {"exp", "multiply"} <= called_inside  # the closure's regions run in it
    # merging the closure's region with the subtract the closure captures and the add
    # after its call would be a cycle through the closure: no region holds two scopes
    assert all(not ({"exp", "multiply"} & set(o) and {"subtract", "add"} & set(o))
               for o in ops.values())


def test_a_hand_written_region_across_a_branch_runs_on_the_host() -> None:
    """Annotations the passes never make (a region holding a node computed before an
    ``if`` and one of its branch) are dropped by PartitionGraph, not outlined."""
    mod = rr.parse("""
def @main(%a: Tensor[(3), float32], %c: bool) {
  %0 = annotation.compiler_begin(%a, compiler="ta");
  %1 = exp(%0);
  %2 = if (%c) { annotation.compiler_end(tanh(%1), compiler="ta") } else { %a };
  (%2, annotation.compiler_end(%1, compiler="ta"))
}""")
    part = rr.optimize(mod, ["PartitionGraph"])
    assert not region_ops(part)
    a = np.arange(3, dtype="float32")
    for c in (True, False):
        assert same(rr.evaluate(part, a, np.array(c)), rr.evaluate(mod, a, np.array(c)))
    # the same region inside the branch only is one scope: outlined
    inside = rr.parse("""
def @main(%a: Tensor[(3), float32], %c: bool) {
  %0 = annotation.compiler_begin(%a, compiler="ta");
  %1 = exp(%0);
  if (%c) { annotation.compiler_end(tanh(%1), compiler="ta") } else { %a }
}""")
    assert list(region_ops(rr.optimize(inside, ["PartitionGraph"])).values()) == [
        ["exp", "tanh"]]


def test_node_scopes_place_shared_nodes_at_the_lowest_common_scope() -> None:
    fn = rr.parse_expr("""
fn (%x: Tensor[(2), float32], %c: bool) {
  %0 = add(%x, %x);
  %1 = exp(%x);
  if (%c) { multiply(%0, %1) } else { tanh(%1) }
}""")
    order = tuple(post_order(fn.body))
    scopes = node_scopes(order)
    node_if = fn.body
    assert type(node_if) is If
    mul, th = node_if.true_branch, node_if.false_branch
    shared_exp, only_true_add = mul.args[1], mul.args[0]
    assert scopes[id(shared_exp)] == scopes[id(node_if)]  # used by both branches
    assert scopes[id(only_true_add)] == scopes[id(mul)] != scopes[id(th)]
    assert effect_count(order) == 0


def test_a_deep_nest_of_branches_is_linear() -> None:
    """2 000 nested ifs: the scope walk is iterative."""
    depth = 2000
    body = "exp(%x)"
    for _ in range(depth):
        body = f"if (%c) {{ add({body}, %x) }} else {{ %x }}"
    mod = rr.parse(f"def @main(%x: Tensor[(2), float32], %c: bool) {{ {body} }}")
    order = tuple(post_order(mod.functions["main"].body))
    scopes = node_scopes(order)
    assert len(set(scopes.values())) == depth + 1  # each then-branch; %x is shared: scope 0
