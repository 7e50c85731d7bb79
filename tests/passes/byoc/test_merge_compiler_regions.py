"""MergeCompilerRegions (spec/byoc.md BYOC-Merge, BYOC-Convex): TVM's cases
(tests/python/relay/test_pass_merge_compiler_regions.py) as Relay text, with TVM's
expected region structure; values against the interpreter; convexity; long chains."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.expr import Function, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType
from relay_ref.passes.regions import (
    RegionError,
    find_regions,
    region_graph_acyclic,
    regions_convex,
)
from relay_ref.passes.registry import get_pass
from tests.passes.byoc.regions_helpers import annotate, op_call, same_value

HEAD = '#[version = "0.0.5"]\n'

# TVM's test_diamond_graph_fanouts: O = supported (target t), X = not.
#      O            O
#     / \          / \
#    O   X   ->   O   X     (the bottom O may not join the top two: the result would
#     \ /              \   depend on itself through X)
#      O                O
DIAMOND = HEAD + """def @main(%data: Tensor[(10, 10), float32]) {
  %0 = annotation.compiler_begin(%data, compiler="t");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="t");
  %3 = annotation.compiler_begin(%2, compiler="t");
  %4 = nn.relu(%3);
  %5 = annotation.compiler_end(%4, compiler="t");
  %6 = annotation.compiler_begin(%2, compiler="default");
  %7 = tanh(%6);
  %8 = annotation.compiler_end(%7, compiler="default");
  %9 = annotation.compiler_begin(%5, compiler="t");
  %10 = annotation.compiler_begin(%8, compiler="t");
  %11 = add(%9, %10);
  %12 = annotation.compiler_end(%11, compiler="t");
  %13 = annotation.compiler_begin(%12, compiler="default");
  %14 = annotation.compiler_begin(%8, compiler="default");
  %15 = add(%13, %14);
  annotation.compiler_end(%15, compiler="default")
}
"""

DIAMOND_MERGED = HEAD + """def @main(%data: Tensor[(10, 10), float32]) {
  %0 = annotation.compiler_begin(%data, compiler="t");
  %1 = abs(%0);
  %2 = nn.relu(%1);
  %3 = annotation.compiler_end(%2, compiler="t");
  %4 = annotation.compiler_end(%1, compiler="t");
  %5 = annotation.compiler_begin(%4, compiler="default");
  %6 = tanh(%5);
  %7 = annotation.compiler_end(%6, compiler="default");
  %8 = annotation.compiler_begin(%3, compiler="t");
  %9 = annotation.compiler_begin(%7, compiler="t");
  %10 = add(%8, %9);
  %11 = annotation.compiler_end(%10, compiler="t");
  %12 = annotation.compiler_begin(%11, compiler="default");
  %13 = annotation.compiler_begin(%7, compiler="default");
  %14 = add(%12, %13);
  annotation.compiler_end(%14, compiler="default")
}
"""

# TVM's test_example_graph shape, small: two supported chains meeting in a supported add,
# one default op on the side: everything of target t merges into one region.
CHAIN = HEAD + """def @main(%a: Tensor[(4), float32], %b: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%a, compiler="t");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="t");
  %3 = annotation.compiler_begin(%b, compiler="t");
  %4 = negative(%3);
  %5 = annotation.compiler_end(%4, compiler="t");
  %6 = annotation.compiler_begin(%2, compiler="t");
  %7 = annotation.compiler_begin(%5, compiler="t");
  %8 = add(%6, %7);
  %9 = annotation.compiler_end(%8, compiler="t");
  %10 = annotation.compiler_begin(%9, compiler="default");
  %11 = tanh(%10);
  annotation.compiler_end(%11, compiler="default")
}
"""

CHAIN_MERGED = HEAD + """def @main(%a: Tensor[(4), float32], %b: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%a, compiler="t");
  %1 = annotation.compiler_begin(%b, compiler="t");
  %2 = abs(%0);
  %3 = negative(%1);
  %4 = add(%2, %3);
  %5 = annotation.compiler_end(%4, compiler="t");
  %6 = annotation.compiler_begin(%5, compiler="default");
  %7 = tanh(%6);
  annotation.compiler_end(%7, compiler="default")
}
"""

# Two targets alternate: t -> u -> t never merges across u (different targets), and the
# two t regions stay apart (the path between them goes through u).
ALTERNATE = HEAD + """def @main(%a: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%a, compiler="t");
  %1 = abs(%0);
  %2 = annotation.compiler_end(%1, compiler="t");
  %3 = annotation.compiler_begin(%2, compiler="u");
  %4 = tanh(%3);
  %5 = annotation.compiler_end(%4, compiler="u");
  %6 = annotation.compiler_begin(%5, compiler="t");
  %7 = annotation.compiler_begin(%2, compiler="t");
  %8 = add(%6, %7);
  annotation.compiler_end(%8, compiler="t")
}
"""


def merge(mod: IRModule) -> IRModule:
    return get_pass("MergeCompilerRegions")(mod)


def _value(mod: IRModule, *shapes: tuple[int, ...]) -> object:
    rng = np.random.default_rng(3)
    return rr.evaluate(mod, *(rng.standard_normal(s).astype("float32") for s in shapes))


@pytest.mark.parametrize(("src", "expected", "shapes", "n_regions"), [
    (DIAMOND, DIAMOND_MERGED, [(10, 10)], 4),
    (CHAIN, CHAIN_MERGED, [(4,), (4,)], 2),
])
def test_tvm_cases_merge_to_tvms_structure(src: str, expected: str, shapes: list,
                                          n_regions: int) -> None:
    mod = rr.parse(src)
    out = merge(mod)
    assert rr.alpha_equal(out, rr.parse(expected)), rr.astext(out)
    assert len(find_regions(out["main"].body).regions) == n_regions
    assert regions_convex(out)
    assert rr.alpha_equal(rr.parse(rr.astext(out)), out)
    assert same_value(_value(out, *shapes), _value(mod, *shapes))
    # Idempotent: merging again changes nothing.
    assert rr.alpha_equal(merge(out), out)


def test_the_diamond_unmerged_would_be_cyclic() -> None:
    """Merging all three supported ops of the diamond (what a naive merge does) gives a
    region that depends on itself through tanh: region_graph_acyclic says so."""
    naive = rr.parse(DIAMOND.replace(
        '%9 = annotation.compiler_begin(%5, compiler="t")', "%9 = %4").replace(
        '%3 = annotation.compiler_begin(%2, compiler="t")', "%3 = %1"))
    assert not regions_convex(naive)
    assert regions_convex(merge(rr.parse(DIAMOND)))


def test_targets_never_merge_across_another_target() -> None:
    mod = rr.parse(ALTERNATE)
    out = merge(mod)
    regions = find_regions(out["main"].body).regions
    assert sorted(r.target for r in regions) == ["t", "t", "u"]
    assert regions_convex(out)
    assert same_value(_value(out, (4,)), _value(mod, (4,)))


def test_no_annotations_is_unchanged() -> None:
    mod = rr.parse(HEAD + "def @main(%a: Tensor[(4), float32]) { abs(%a) }")
    assert merge(mod) is mod


def test_malformed_annotations_are_region_errors_or_left_alone() -> None:
    """find_regions (strict) says what is wrong; the passes leave such regions alone and
    PartitionGraph removes their annotations (identities): same values, no annotation."""
    lonely_begin = rr.parse(HEAD + """def @main(%a: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%a, compiler="t");
  abs(%0)
}""")
    var_member = rr.parse(HEAD + """def @main(%a: Tensor[(4), float32]) {
  annotation.compiler_end(abs(%a), compiler="t")
}""")
    unnamed = rr.parse(HEAD + """def @main(%a: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%a);
  annotation.compiler_end(abs(%0))
}""")
    for mod, message in ((lonely_begin, "not under a compiler_end"), (var_member, "Var"),
                         (unnamed, "without a compiler name")):
        with pytest.raises(RegionError, match=message):
            find_regions(mod["main"].body)
        assert not any(r.valid for r in find_regions(mod["main"].body, strict=False).regions)
        merged = merge(mod)
        part = get_pass("PartitionGraph")(merged)
        assert set(part.functions) == {"main"}
        assert rr.alpha_equal(part, rr.parse(
            HEAD + "def @main(%a: Tensor[(4), float32]) { abs(%a) }"))
        assert same_value(_value(part, (4,)), _value(mod, (4,)))


def test_deep_chain_merges_into_one_region_without_recursion() -> None:
    """2 000 chained supported calls, each its own region: one region after merging (the
    walk is iterative; a recursive one would hit Python's limit)."""
    ty = TensorType((4,), "float32")
    x = Var("x", ty)
    node = x
    for i in range(2000):
        node = op_call("negative" if i % 2 else "abs", node)
    mod = annotate(IRModule({"main": Function((x,), node)}), lambda call: "t")
    assert len(find_regions(mod["main"].body).regions) == 2000
    out = merge(mod)
    rs = find_regions(out["main"].body)
    assert len(rs.regions) == 1 and len(rs.regions[0].ins) == 1
    assert region_graph_acyclic(out["main"].body, rs)
    arg = np.arange(4, dtype="float32") - 2
    assert same_value(rr.evaluate(out, arg), -np.abs(arg))  # abs, then negative pairs
