"""Generic traversals (relay_ref.ir.visitor): post_order with its hooks, shared_nodes."""

from __future__ import annotations

import numpy as np

from relay_ref.ir.expr import Call, Constant, Function, Let, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.visitor import (
    children_in_activation,
    children_outside,
    post_order,
    shared_nodes,
)
from relay_ref.syntax.parser import parse

ADD = Op("add")
TANH = Op("tanh")


def _residual_graph(n: int) -> tuple[Var, list[Call]]:
    """``%i = add(%i-1, %i-2)``: every node has two parents (heavy sharing, 2**n paths)."""
    x = Var("x")
    nodes: list = [x, Call(TANH, (x,))]
    for _ in range(n):
        nodes.append(Call(ADD, (nodes[-1], nodes[-2])))
    return x, nodes[1:]


def test_post_order_visits_each_node_of_a_shared_10000_node_graph_once() -> None:
    x, calls = _residual_graph(10_000)
    order = list(post_order(calls[-1]))
    # each distinct node once: the calls, the variable, the two operators
    assert len(order) == len({id(n) for n in order}) == len(calls) + 3
    position = {id(n): i for i, n in enumerate(order)}
    for node in order:       # dependencies first
        for kid in getattr(node, "args", ()):
            assert position[id(kid)] < position[id(node)]
    assert order[-1] is calls[-1]


def test_post_order_siblings_left_to_right() -> None:
    a, b, c = Var("a"), Var("b"), Var("c")
    tup = Tuple((a, b, c))
    assert list(post_order(tup)) == [a, b, c, tup]


def test_post_order_enter_hook_stops_at_function_literals() -> None:
    x, y = Var("x"), Var("y")
    inner = Function((y,), Call(TANH, (y,)))
    body = Call(inner, (x,))
    full = list(post_order(body))
    region = list(post_order(body, enter=children_in_activation))
    assert y in full and y not in region
    assert inner in region and region[-1] is body
    assert children_in_activation(inner) == ()


def test_post_order_children_outside_keeps_the_root_and_stops_at_matching_functions() -> None:
    x, y = Var("x"), Var("y")
    prim = Function((y,), Call(TANH, (y,)), attrs=(("Primitive", 1),))
    root = Function((x,), Call(prim, (x,)))
    order = list(post_order(root, enter=children_outside(lambda f: bool(f.attr("Primitive")),
                                                         root)))
    assert prim in order and y not in order and order[-1] is root
    # a matching root is entered (the hook's ``root`` exception)
    inside = list(post_order(prim, enter=children_outside(lambda f: True, prim)))
    assert y in inside


def test_post_order_seen_is_shared_between_roots() -> None:
    x, calls = _residual_graph(50)
    seen: set[int] = set()
    first = list(post_order(calls[20], seen=seen))
    second = list(post_order(calls[-1], seen=seen))
    assert not {id(n) for n in first} & {id(n) for n in second}
    assert len(first) + len(second) == len(calls) + 3
    assert list(post_order(calls[-1], seen=seen)) == []


def test_shared_nodes_on_a_residual_dag() -> None:
    x, calls = _residual_graph(1_000)
    fn = Function((x,), calls[-1])
    mod = IRModule({"main": fn})
    shared = shared_nodes(mod)
    # every call but the last two has two parents; the variable and ops are atoms
    assert shared == frozenset(calls[:-2])
    assert shared_nodes(mod) is shared                     # cached per module
    # an extra root adds its own edges
    extra = Tuple((calls[-1], calls[-1]))
    assert calls[-1] in shared_nodes(mod, (extra,))
    assert calls[-1] not in shared


def test_shared_nodes_counts_each_edge_and_skips_atoms() -> None:
    mod = parse("""
    def @main(%a: float32) -> float32 {
      %0 = tanh(%a);
      %1 = add(%0, %0);
      let %b = (%1, 1f);
      %b.0
    }
    """)
    shared = shared_nodes(mod)
    assert [type(n).__name__ for n in shared] == ["Call"]
    (node,) = shared
    assert node.op.name == "tanh"
    assert not any(isinstance(n, Var | Constant | Op | Let | TupleGetItem) for n in shared)


def test_constants_are_atoms_not_shared() -> None:
    c = Constant(np.float32(1.0))
    x = Var("x")
    body = Call(ADD, (Call(ADD, (x, c)), c))
    assert shared_nodes(IRModule({"main": Function((x,), body)})) == frozenset()
