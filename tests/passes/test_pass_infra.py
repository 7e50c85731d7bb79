"""The pass infrastructure: linear rebuilds on shared graphs, fresh copies, the manager."""

from __future__ import annotations

import pytest

import relay_ref as rr
from relay_ref.ir.expr import Call, Constant, Op, Var
from relay_ref.ir.visitor import post_order
from relay_ref.passes import Sequential, get_pass
from relay_ref.passes.base import Pass
from relay_ref.passes.rewrite import fresh_copy, rewrite
from relay_ref.testing.growth import doubling_chain


def test_rewrite_visits_each_shared_node_once_and_keeps_sharing():
    mod = rr.parse(doubling_chain(48))  # 2**48 paths, ~100 nodes
    body = mod["main"].body
    calls = []

    def rule(node):
        calls.append(node)
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "add":
            return Call(Op("multiply"), node.args, node.attrs)
        return None

    out = rewrite(body, rule)
    assert len(calls) == sum(1 for _ in post_order(body))
    names = {n.op.name for n in post_order(out) if isinstance(n, Call)}
    assert names == {"multiply"}
    assert sum(1 for _ in post_order(out)) == len(calls)  # still shared


def test_rewrite_returns_the_same_node_when_nothing_changes():
    mod = rr.parse("def @main(%x: int32) { let %y = add(%x, 1); (%y, %y) }")
    assert rewrite(mod["main"], lambda n: None) is mod["main"]


def test_fresh_copy_renames_every_binder_consistently():
    mod = rr.parse("def @main(%x: int32) { let %y = add(%x, 1); let %f = fn (%z: int32) "
                   "{ %z }; match (Cons(%f(%y), Nil)) { Cons(%a, _) => %a, Nil => %y } }")
    fn = mod["main"]
    copy = fresh_copy(fn)
    assert rr.alpha_equal(fn, copy)
    old = {id(v) for v in post_order(fn) if isinstance(v, Var)}
    new = {id(v) for v in post_order(copy) if isinstance(v, Var)}
    assert not old & new
    assert rr.evaluate(mod.with_function("main", copy), 2) == rr.evaluate(mod, 2) == 3


def test_fresh_copy_keeps_free_variables():
    x = Var("x")
    expr = Call(Op("add"), (x, Constant(__import__("numpy").array(1, "int32"))))
    copy = fresh_copy(expr)
    assert copy.args[0] is x


class _Tag(Pass):
    def __init__(self, name, level, log):
        self.name, self.opt_level, self.log = name, level, log

    def __call__(self, mod):
        self.log.append(self.name)
        return mod


def test_sequential_follows_opt_level_required_and_disabled():
    log: list[str] = []
    passes = [_Tag("A", 0, log), _Tag("B", 3, log), _Tag("C", 1, log)]
    mod = rr.parse("def @main() { 1 }")
    Sequential(passes, opt_level=2)(mod)
    assert log == ["A", "C"]
    log.clear()
    Sequential(passes, opt_level=2, required=["B"], disabled=["A"])(mod)
    assert log == ["B", "C"]
    log.clear()
    Sequential([lambda m: log.append("user") or m])(mod)  # any callable is a pass
    assert log == ["user"]


def test_unknown_pass_names_list_the_known_ones():
    with pytest.raises(KeyError, match="unknown pass 'NoSuchPass'"):
        get_pass("NoSuchPass")
    with pytest.raises(KeyError, match="did you mean 'FoldConstant'"):
        get_pass("foldconstant")
