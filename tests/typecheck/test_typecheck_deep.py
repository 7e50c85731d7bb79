"""Depth and size (spec/typing.md 6.5): no RecursionError on long let chains, deep dataflow
graphs and a ResNet-50-sized model; the caller's recursion limit is left as it was."""

from __future__ import annotations

import sys

import relay_ref as rr
from relay_ref.ir.types import TensorType
from relay_ref.ir.visitor import post_order
from relay_ref.testing.typed_strategies import (
    graph_chain_module,
    let_chain_module,
    resnet_like_module,
)


def test_let_chain_of_10000_bindings() -> None:
    limit = sys.getrecursionlimit()
    mod = rr.infer_types(let_chain_module(10_000))
    assert mod.global_types["main"].ret_type == TensorType((4,), "float32")
    assert len(mod.checked_types) > 30_000
    assert sys.getrecursionlimit() == limit


def test_let_chain_from_text_of_10000_bindings() -> None:
    lines = ["def @main(%x: float32) {"]
    lines += [f"  let %v{i} = %{'x' if i == 0 else f'v{i - 1}'} * 2f;" for i in range(10_000)]
    lines += ["  %v9999", "}"]
    mod = rr.infer_types(rr.parse("\n".join(lines)))
    assert rr.astext(mod.global_types["main"]) == "fn (float32) -> float32"


def test_graph_nested_20000_calls_deep() -> None:
    mod = rr.infer_types(graph_chain_module(20_000))
    assert mod.global_types["main"].ret_type == TensorType((4,), "float32")


def test_resnet50_sized_graph() -> None:
    mod = resnet_like_module()
    calls = sum(1 for n in post_order(mod["main"]) if type(n).__name__ == "Call")
    assert calls > 150  # ~180 operator calls plus ~50 projections, like TVM's resnet50
    out = rr.infer_types(mod)
    assert out.global_types["main"].ret_type == TensorType((1, 1000), "float32")


def test_shared_nodes_are_checked_once() -> None:
    # %i = add(%(i-1), %(i-1)): a DAG with 2**1000 paths; memoisation keeps it linear.
    from relay_ref.ir.expr import Call, Function, Op, Var
    from relay_ref.ir.module import IRModule
    from relay_ref.ops.registry import make_attrs

    x = Var("x", TensorType((2,), "float32"))
    node = x
    for _ in range(1000):
        node = Call(Op("add"), (node, node), make_attrs("add", {}))
    mod = rr.infer_types(IRModule({"main": Function((x,), node)}))
    assert len(mod.checked_types) < 3000


def test_deep_error_is_reported_not_crashed() -> None:
    mod = let_chain_module(10_000, shape=(4,))
    body = mod["main"]
    # Break the chain at the very end: the final body is a projection of a tensor.
    from relay_ref.ir.expr import Function, Let, TupleGetItem

    node = body.body
    lets = []
    while isinstance(node, Let):
        lets.append(node)
        node = node.body
    new_body = TupleGetItem(node, 0)
    for let in reversed(lets):
        new_body = Let(let.var, let.value, new_body)
    broken = mod.with_function("main", Function(body.params, new_body))
    try:
        rr.infer_types(broken)
    except rr.RelayTypeError as err:
        assert "[T-Proj]" in err.message
    else:
        raise AssertionError("expected a type error")
