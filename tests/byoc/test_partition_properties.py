"""Property tests of the whole partitioning flow (spec/byoc.md BYOC-Composite ..
BYOC-Extern) through the public API: random dataflow programs partitioned with
``rr.partition`` for a backend that supports a random subset of the operators present (and
sometimes a random two-operator composite pattern), its regions run by the interpreter.

For every program: the result type-checks with ``@main``'s type unchanged; the regions of
the annotated and merged programs are convex and the region graph acyclic; no region calls
a global; the result prints and parses back alpha-equal; its value equals the original's
under ``rr.evaluate`` and under ``rr.compile``, where every region is built by the
backend's codegen once and its callable really runs (calls counted). ``check_pass`` then
checks the whole pipeline and each of the four passes on the output of the ones before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.byoc import register_backend, unregister_backend
from relay_ref.byoc.partition import partition_passes
from relay_ref.byoc.reference import ReferenceCodegen
from relay_ref.ir.expr import Call, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import Type
from relay_ref.ir.visitor import dataflow_operands, post_order
from relay_ref.passes.pattern import DFPattern, is_op, wildcard
from relay_ref.passes.regions import region_graph_acyclic, regions_convex
from relay_ref.testing.check import check_pass
from tests.passes.byoc.regions_helpers import (
    BINARY,
    UNARY,
    arrays,
    dataflow_modules,
    same_value,
)

NAME = "tprop"


class CountingCodegen:
    """The reference codegen (regions run by the interpreter), counting builds and the
    run-time calls of the callables it returned."""

    def __init__(self) -> None:
        self.reference = ReferenceCodegen()
        self.runs = 0

    @property
    def builds(self) -> int:
        return self.reference.calls

    def __call__(self, func: Function, types: Mapping[Expr, Type]) -> Callable[..., Any]:
        inner = self.reference(func, types)

        def run(*args: Any) -> Any:
            self.runs += 1
            return inner(*args)

        return run


def _ops_in(mod: IRModule) -> list[str]:
    return sorted({n.op.name for n in post_order(mod["main"].body)
                   if type(n) is Call and type(n.op) is Op})


def _arity(op: str) -> int:
    return 1 if op in UNARY else 2


def _pattern(outer: str, inner: str, position: int) -> DFPattern:
    """``outer(..., inner(*), ...)`` with wildcards elsewhere (``inner`` at ``position``)."""
    args: list[DFPattern] = [wildcard() for _ in range(_arity(outer))]
    args[position % len(args)] = is_op(inner)(*(wildcard() for _ in range(_arity(inner))))
    return is_op(outer)(*args)


def _edges(mod: IRModule) -> list[tuple[str, str, int]]:
    """(outer op, inner op, argument position) of each call whose argument is a call."""
    out = set()
    for n in post_order(mod["main"].body):
        if type(n) is Call and type(n.op) is Op:
            for i, a in enumerate(n.args):
                if type(a) is Call and type(a.op) is Op:
                    out.add((n.op.name, a.op.name, i))
    return sorted(out)


@st.composite
def cases(draw: st.DrawFn) -> tuple[IRModule, tuple[str, ...], tuple]:
    """A program, the operators the backend supports (a random subset of those present:
    each with probability one half) and its composite patterns (none, or one over two
    operators, mostly a pair that feeds one another in the program)."""
    mod = draw(dataflow_modules(max_ops=12))
    present = _ops_in(mod)
    ops = tuple(op for op in present if draw(st.booleans()))
    patterns: tuple = ()
    if present and draw(st.booleans()):
        edges = _edges(mod)
        if edges and draw(st.integers(0, 3)):
            outer, inner, pos = draw(st.sampled_from(edges))
        else:
            outer, inner = draw(st.sampled_from(present)), draw(st.sampled_from(present))
            pos = draw(st.integers(0, 1))
        patterns = ((f"{NAME}.{inner}_{outer}", _pattern(outer, inner, pos)),)
    return mod, ops, patterns


def _register(ops: tuple[str, ...], patterns: tuple = ()) -> CountingCodegen:
    codegen = CountingCodegen()
    register_backend(NAME, supported_ops=ops, patterns=patterns, codegen=codegen,
                     replace=True)
    return codegen


@pytest.fixture
def cleanup() -> Iterator[None]:
    yield
    unregister_backend(NAME)


def _stages(mod: IRModule) -> list[IRModule]:
    """``mod`` after each pass of ``rr.partition`` (graph normal form, MergeComposite,
    AnnotateTarget, MergeCompilerRegions, PartitionGraph)."""
    out = [mod]
    for pass_ in partition_passes([NAME]):
        out.append(pass_(out[-1]))
    return out


def _live_region_calls(mod: IRModule) -> int:
    """Region calls of ``@main`` whose value is used: reached from the result, a
    projection of a literal tuple reaching only its field."""
    seen: set[int] = set()
    stack: list[Expr] = [mod["main"].body]
    count = 0
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is TupleGetItem and type(node.tuple_value) is Tuple:
            stack.append(node.tuple_value.fields[node.index])
            continue
        if type(node) is Call and type(node.op) is GlobalVar:
            count += 1
        stack.extend(dataflow_operands(node))
    return count


def _regions(mod: IRModule) -> list[str]:
    return [n for n, f in mod.functions.items() if f.attr("Compiler") is not None]


@settings(max_examples=60, deadline=None)
@given(cases(), st.integers(0, 9))
def test_partitioned_programs_type_are_convex_and_compute_the_same(case: tuple,
                                                                   seed: int) -> None:
    mod, ops, patterns = case
    codegen = _register(ops, patterns)
    try:
        part = rr.partition(mod, [NAME])
        stages = _stages(mod)
        _, _, composed, annotated, merged, staged = stages
        assert rr.alpha_equal(staged, part)  # rr.partition is the four passes
        for stage in (annotated, merged):
            assert regions_convex(stage)
            assert region_graph_acyclic(stage["main"].body)
        typed = rr.infer_types(part)
        assert typed.global_types["main"] == rr.infer_types(mod).global_types["main"]
        names = _regions(part)
        assert all(part.functions[n].attr("Compiler") == NAME for n in names)
        for n in names:
            fn = part.functions[n]
            assert fn.attr("global_symbol") == n
            assert not any(type(x) is GlobalVar for x in post_order(fn.body))
        if not ops and not patterns:
            assert not names
        main_calls = [x for x in post_order(part["main"].body)
                      if type(x) is Call and type(x.op) is GlobalVar]
        assert sorted(c.op.name for c in main_calls) == sorted(names)  # each called once
        assert rr.alpha_equal(rr.parse(rr.astext(part)), part)

        args = arrays(seed)
        want = rr.evaluate(mod, *args)
        assert same_value(rr.evaluate(part, *args), want)
        exe = rr.compile(part)
        assert codegen.builds == len(names)
        assert sorted(r.name for r in exe.plan.regions) == sorted(names)
        assert all(r.backend == NAME for r in exe.plan.regions)
        assert same_value(exe(*args), want)
        # the callables ran, once per live region (a region whose value is dead, a
        # projection of a literal tuple, is dropped by the compiler)
        assert codegen.runs == _live_region_calls(part)
        # rr.compile(targets=...) partitions the same way
        again = rr.compile(mod, targets=[NAME])
        assert same_value(again(*args), want)
        assert len(again.plan.regions) == len(names)
    finally:
        unregister_backend(NAME)


# -- check_pass: the pipeline and each pass in sequence ------------------------------------

def _any(ops: tuple[str, ...]) -> DFPattern:
    first, *rest = ops
    out: DFPattern = is_op(first)
    for op in rest:
        out = out | is_op(op)
    return out


#: one fixed backend for the check_pass runs: some operators, and two composites in
#: priority order: any unary call on any binary call (alternatives), else a unary call alone
FIXED_OPS = ("add", "abs", "maximum", "tanh")
FIXED_PATTERNS = ((f"{NAME}.unary_binary", _any(UNARY)(_any(BINARY)(wildcard(), wildcard()))),
                  (f"{NAME}.unary", _any(UNARY)(wildcard())))


def _after(k: int) -> Callable[[IRModule], IRModule]:
    """The first ``k`` passes of ``rr.partition`` composed."""
    passes = partition_passes([NAME])[:k]

    def run(mod: IRModule) -> IRModule:
        for pass_ in passes:
            mod = pass_(mod)
        return mod

    return run


def test_check_pass_on_the_whole_pipeline(cleanup: None) -> None:
    _register(FIXED_OPS, FIXED_PATTERNS)
    report = check_pass(lambda m: rr.partition(m, [NAME]), programs=dataflow_modules(),
                        examples=50, min_fired=10, edge_values=False)
    assert report.fired >= 10


def test_check_pass_on_generated_programs_with_control_flow(cleanup: None) -> None:
    """The default generator (let, if, closures, tuples, ADTs): regions never cross
    them, and the result still refines the input."""
    _register(("add", "multiply", "nn.relu", "tanh"))
    check_pass(lambda m: rr.partition(m, [NAME]), examples=50, min_fired=20,
               focus=("add", "multiply", "nn.relu", "tanh"), edge_values=False)


@pytest.mark.parametrize("k, name", [(2, "MergeComposite"), (3, "AnnotateTarget"),
                                     (4, "MergeCompilerRegions"), (5, "PartitionGraph")])
def test_check_pass_on_each_pass_in_sequence(cleanup: None, k: int, name: str) -> None:
    """Pass ``k`` of the pipeline on programs the passes before it produced."""
    _register(FIXED_OPS, FIXED_PATTERNS)
    pass_ = partition_passes([NAME])[k - 1]
    assert type(pass_).__name__ == name or getattr(pass_, "name", name) == name
    before = _after(k - 1)
    report = check_pass(pass_, programs=dataflow_modules().map(before), examples=30,
                        min_fired=10, edge_values=False)
    assert report.fired >= 10


def test_the_property_backend_runs_every_region_with_the_interpreter(cleanup: None) -> None:
    """A sanity check of the harness itself: with every operator supported, a program
    becomes one region, and its value equals NumPy's."""
    codegen = _register(UNARY + BINARY)
    mod = rr.parse("""def @main(%x: Tensor[(3, 4), float32], %y: Tensor[(3, 4), float32]) {
  %0 = add(%x, %y);
  %1 = tanh(%0);
  maximum(%1, negative(%y))
}""")
    part = rr.partition(mod, [NAME])
    assert len(_regions(part)) == 1
    x, y = arrays(1)
    exe = rr.compile(part)
    np.testing.assert_allclose(exe(x, y), np.maximum(np.tanh(x + y), -y), rtol=1e-6)
    assert (codegen.builds, codegen.runs) == (1, 1)
