"""Helpers of the MergeCompilerRegions / PartitionGraph tests: a hand annotator (what
AnnotateTarget does, for a chosen set of operator calls), a strategy of random dataflow
programs, and the checks every partitioned program must pass."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType
from relay_ref.ir.visitor import post_order
from relay_ref.ops.registry import make_attrs
from relay_ref.passes.regions import is_annotation, regions_convex

SHAPE = (3, 4)
UNARY = ("abs", "tanh", "negative", "sigmoid")
BINARY = ("add", "multiply", "subtract", "maximum")


def annotation(kind: str, arg: Expr, compiler: str) -> Call:
    name = f"annotation.compiler_{kind}"
    return Call(Op(name), (arg,), make_attrs(name, {"compiler": compiler}))


def annotate(mod: IRModule, target_of: Callable[[Call], str]) -> IRModule:
    """``@main`` with each operator call annotated for ``target_of(call)`` (``"default"``
    for the host) and each tuple and projection for ``"default"``, as AnnotateTarget does:
    a begin on each argument, one end on the result (shared by the users)."""
    fn = mod["main"]
    new: dict[int, Expr] = {}
    for node in post_order(fn.body):
        if type(node) is Call and type(node.op) is Op:
            tgt = target_of(node)
            args = tuple(annotation("begin", new[id(a)], tgt) for a in node.args)
            new[id(node)] = annotation("end", Call(node.op, args, node.attrs), tgt)
        elif type(node) is Tuple:
            fields = tuple(annotation("begin", new[id(f)], "default") for f in node.fields)
            new[id(node)] = annotation("end", Tuple(fields), "default")
        elif type(node) is TupleGetItem:
            tup = annotation("begin", new[id(node.tuple_value)], "default")
            new[id(node)] = annotation("end", TupleGetItem(tup, node.index), "default")
        else:
            new[id(node)] = node
    body = new[id(fn.body)]
    return IRModule({"main": Function(fn.params, body, fn.ret_type)})


def op_call(name: str, *args: Expr) -> Call:
    return Call(Op(name), args, make_attrs(name, {}))


@st.composite
def dataflow_modules(draw: st.DrawFn, max_ops: int = 14) -> IRModule:
    """``@main(%x, %y)`` over ``float32`` tensors of ``SHAPE``: a random DAG of unary and
    binary elementwise calls, tuples and projections, constants, with sharing; it returns
    a tuple of a few of its nodes (or one)."""
    ty = TensorType(SHAPE, "float32")
    params = (Var("x", ty), Var("y", ty))
    nodes: list[Expr] = list(params)
    for _ in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from(("unary", "binary", "binary", "tuple", "const")))
        pick = st.integers(0, len(nodes) - 1)
        if kind == "unary":
            nodes.append(op_call(draw(st.sampled_from(UNARY)), nodes[draw(pick)]))
        elif kind == "binary":
            nodes.append(op_call(draw(st.sampled_from(BINARY)), nodes[draw(pick)],
                                 nodes[draw(pick)]))
        elif kind == "tuple":
            tup = Tuple((nodes[draw(pick)], nodes[draw(pick)]))
            nodes.append(TupleGetItem(tup, draw(st.integers(0, 1))))
        else:
            seed = draw(st.integers(0, 99))
            data = np.random.default_rng(seed).standard_normal(SHAPE).astype("float32")
            nodes.append(op_call("add", nodes[draw(pick)], Constant(data)))
    outs = draw(st.lists(st.integers(len(params), len(nodes) - 1), min_size=1, max_size=3,
                         unique=True))
    body = nodes[outs[0]] if len(outs) == 1 else Tuple(tuple(nodes[i] for i in outs))
    return IRModule({"main": Function(params, body)})


def arrays(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(SHAPE).astype("float32"),
            rng.standard_normal(SHAPE).astype("float32"))


def same_value(a: object, b: object) -> bool:
    if isinstance(a, tuple | list):
        return (isinstance(b, tuple | list) and len(a) == len(b)
                and all(same_value(x, y) for x, y in zip(a, b, strict=True)))
    return np.allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def no_annotations(mod: IRModule) -> bool:
    return not any(is_annotation(n) for f in mod.functions.values()
                   for n in post_order(f.body))


def check_partitioned(original: IRModule, annotated: IRModule, merged: IRModule,
                      part: IRModule, args: tuple) -> None:
    """The guarantees of MergeCompilerRegions and PartitionGraph on one program."""
    assert regions_convex(annotated) and regions_convex(merged)
    typed = rr.infer_types(part)
    before = rr.infer_types(original)
    assert typed.global_types["main"] == before.global_types["main"]
    assert no_annotations(part)
    for name, fn in part.functions.items():
        if fn.attr("Compiler") is not None:
            assert fn.attr("global_symbol") == name
            assert all(p.type_annotation is not None for p in fn.params)
            assert fn.ret_type is not None
            assert not any(type(n) is GlobalVar for n in post_order(fn.body))
    assert rr.alpha_equal(rr.parse(rr.astext(part)), part)
    expected = rr.evaluate(original, *args)
    assert same_value(rr.evaluate(merged, *args), expected)
    assert same_value(rr.evaluate(part, *args), expected)
