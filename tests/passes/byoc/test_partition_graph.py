"""PartitionGraph (spec/byoc.md BYOC-Partition, BYOC-Cost, BYOC-Convex): TVM's cases
(tests/python/relay/test_pass_partition_graph.py) as Relay text with TVM's printed forms;
values against the interpreter; the cost model; long and wide graphs; random programs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
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
from relay_ref.passes.compiler_support import (
    RegionCost,
    Support,
    register_support,
    unregister_support,
)
from relay_ref.passes.regions import RegionError, is_annotation, regions_convex
from relay_ref.passes.registry import get_pass
from relay_ref.passes.rewrite import rewrite
from relay_ref.testing.check import check_pass
from tests.passes.byoc.regions_helpers import (
    annotate,
    annotation,
    arrays,
    check_partitioned,
    dataflow_modules,
    no_annotations,
    op_call,
    same_value,
)
from tests.passes.byoc.test_merge_compiler_regions import DIAMOND, HEAD

# The diamond after MergeCompilerRegions and PartitionGraph: a two-output region (TVM's
# multiple outputs: a tuple, read by projections), tanh on the host, a second region.
DIAMOND_PARTITIONED = HEAD + """def @main(%data: Tensor[(10, 10), float32]) {
  %0 = @tvmgen_default_t_main_0(%data);
  %1 = tanh(%0.1);
  add(@tvmgen_default_t_main_1(%0.0, %1), %1)
}

def @tvmgen_default_t_main_0(%t_0_i0: Tensor[(10, 10), float32], Compiler="t", Primitive=1,
    Inline=1, global_symbol="tvmgen_default_t_main_0")
    -> (Tensor[(10, 10), float32], Tensor[(10, 10), float32]) {
  %0 = abs(%t_0_i0);
  (nn.relu(%0), %0)
}

def @tvmgen_default_t_main_1(%t_1_i0: Tensor[(10, 10), float32],
    %t_1_i1: Tensor[(10, 10), float32], Compiler="t", Primitive=1, Inline=1,
    global_symbol="tvmgen_default_t_main_1") -> Tensor[(10, 10), float32] {
  add(%t_1_i0, %t_1_i1)
}
"""

# TVM's test_constant_propagation shape (%c stands for a constant, bound by _bind_c): a
# constant operand of a region is bound into the
# function (no parameter for it); the region's output feeds two consumers on the host.
CONSTANT = HEAD + """def @main(%x: Tensor[(2, 2), float32], %c: Tensor[(2, 2), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="t");
  %1 = annotation.compiler_begin(%c, compiler="t");
  %2 = add(%0, %1);
  %3 = multiply(%2, %2);
  %4 = annotation.compiler_end(%3, compiler="t");
  %5 = annotation.compiler_begin(%4, compiler="default");
  %6 = tanh(%5);
  %7 = annotation.compiler_end(%6, compiler="default");
  %8 = annotation.compiler_begin(%4, compiler="default");
  %9 = abs(%8);
  %10 = annotation.compiler_end(%9, compiler="default");
  (%7, %10)
}
"""

CONSTANT_PARTITIONED = HEAD + """def @main(%x: Tensor[(2, 2), float32],
    %c: Tensor[(2, 2), float32]) {
  %0 = @tvmgen_default_t_main_0(%x);
  (tanh(%0), abs(%0))
}

def @tvmgen_default_t_main_0(%t_0_i0: Tensor[(2, 2), float32], %c: Tensor[(2, 2), float32],
    Compiler="t", Primitive=1, Inline=1, global_symbol="tvmgen_default_t_main_0")
    -> Tensor[(2, 2), float32] {
  %0 = add(%t_0_i0, %c);
  multiply(%0, %0)
}
"""

DEFAULT_ONLY = HEAD + """def @main(%x: Tensor[(2), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="default");
  %1 = tanh(%0);
  %2 = annotation.compiler_end(%1, compiler="default");
  %3 = annotation.compiler_begin(%2, compiler="default");
  %4 = annotation.compiler_begin(%x, compiler="default");
  %5 = (%3, %4);
  annotation.compiler_end(%5, compiler="default")
}
"""


def partition(mod: IRModule, **options: object) -> IRModule:
    merged = get_pass("MergeCompilerRegions")(mod)
    return get_pass("PartitionGraph", **options)(merged)


def _args(*shapes: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(5)
    return tuple(rng.standard_normal(s).astype("float32") for s in shapes)


def test_diamond_partitions_as_tvm_prints_it() -> None:
    mod = rr.parse(DIAMOND)
    merged = get_pass("MergeCompilerRegions")(mod)
    out = get_pass("PartitionGraph")(merged)
    assert rr.alpha_equal(out, rr.parse(DIAMOND_PARTITIONED)), rr.astext(out)
    check_partitioned(mod, mod, merged, out, _args((10, 10)))
    fn = out["tvmgen_default_t_main_0"]
    assert fn.attrs == (("Compiler", "t"), ("Primitive", 1), ("Inline", 1),
                        ("global_symbol", "tvmgen_default_t_main_0"))


def _bind_c(text: str, const: Constant) -> IRModule:
    """``text`` (where ``%c`` is a constant, declared as each function's last parameter)
    with every ``%c`` replaced by the Constant ``const`` and dropped from the parameters."""
    mod = rr.parse(text)
    fns = {}
    for name, fn in mod.functions.items():
        if fn.params and fn.params[-1].name_hint == "c":
            c = fn.params[-1]
            body = rewrite(fn.body, lambda e, c=c: const if e is c else None)
            fn = Function(fn.params[:-1], body, fn.ret_type, fn.type_params, fn.attrs)
        fns[name] = fn
    return IRModule(fns)


def test_constants_are_bound_into_the_region_and_an_output_feeds_two_consumers() -> None:
    const = Constant(np.array([[1.0, -2.0], [0.5, 3.0]], dtype="float32"))
    mod = _bind_c(CONSTANT, const)
    out = partition(mod)
    fn = out["tvmgen_default_t_main_0"]
    assert [p.name_hint for p in fn.params] == ["t_0_i0"]
    assert [n for n in post_order(fn.body) if type(n) is Constant] == [const]
    assert rr.alpha_equal(out, _bind_c(CONSTANT_PARTITIONED, const)), rr.astext(out)
    check_partitioned(mod, mod, get_pass("MergeCompilerRegions")(mod), out, _args((2, 2)))
    # The host calls the region once and uses its value twice.
    calls = [n for n in post_order(out["main"].body)
             if type(n) is Call and type(n.op) is GlobalVar]
    assert len(calls) == 1


def test_default_regions_leave_no_function_and_no_annotation() -> None:
    mod = rr.parse(DEFAULT_ONLY)
    out = partition(mod)
    assert set(out.functions) == {"main"}
    assert no_annotations(out)
    assert rr.alpha_equal(out, rr.parse(
        HEAD + "def @main(%x: Tensor[(2), float32]) { (tanh(%x), %x) }"))


def test_no_annotations_is_unchanged() -> None:
    mod = rr.parse(HEAD + "def @main(%a: Tensor[(4), float32]) { abs(%a) }")
    assert get_pass("PartitionGraph")(mod) is mod


def _chain_module(n: int, target: str = "t") -> IRModule:
    ty = TensorType((4,), "float32")
    x = Var("x", ty)
    node = x
    for i in range(n):
        node = op_call("negative" if i % 2 else "abs", node)
    return annotate(IRModule({"main": Function((x,), node)}), lambda call: target)


def test_cost_model_min_region_size_and_worth() -> None:
    """A region below min_region_size (the option, else the backend's), or one the
    backend's worth() refuses, is not outlined: it runs on the host, unannotated."""
    mod = _chain_module(3)
    assert "tvmgen_default_t_main_0" in partition(mod)
    kept_on_host = partition(mod, min_region_size=4)
    assert set(kept_on_host.functions) == {"main"} and no_annotations(kept_on_host)
    assert "tvmgen_default_t_main_0" in partition(mod, min_region_size=3)
    seen: list[RegionCost] = []
    register_support(Support("t", {"abs": None, "negative": None}, min_region_size=None,
                             worth=lambda c: seen.append(c) or c.flops > 100),
                     replace=True)
    try:
        out = partition(mod)
        assert set(out.functions) == {"main"}
        assert seen == [RegionCost(3, 12, 32)]  # 3 ops of 4 elements; 16 bytes in and out
        register_support(Support("t", {"abs": None}, min_region_size=5), replace=True)
        assert set(partition(mod).functions) == {"main"}
        assert "tvmgen_default_t_main_0" in partition(mod, min_region_size=2)
    finally:
        unregister_support("t")
    arg = _args((4,))
    assert same_value(rr.evaluate(kept_on_host, *arg), rr.evaluate(mod, *arg))


def test_composite_calls_count_their_inner_calls() -> None:
    src = HEAD + """def @main(%x: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="t");
  %1 = fn (%FunctionVar_0_0: Tensor[(4), float32], PartitionedFromPattern="abs_negative_",
           Composite="t.abs_neg") -> Tensor[(4), float32] {
    negative(abs(%FunctionVar_0_0))
  };
  %2 = %1(%0);
  annotation.compiler_end(%2, compiler="t")
}"""
    mod = rr.parse(src)
    assert set(partition(mod, min_region_size=3).functions) == {"main"}
    out = partition(mod, min_region_size=2)
    fn = out["tvmgen_default_t_main_0"]
    assert isinstance(fn.body, Call) and fn.body.op.attr("Composite") == "t.abs_neg"
    check_partitioned(mod, mod, mod, out, _args((4,)))


def test_non_convex_annotations_are_refused() -> None:
    naive = rr.parse(DIAMOND.replace(
        '%9 = annotation.compiler_begin(%5, compiler="t")', "%9 = %4").replace(
        '%3 = annotation.compiler_begin(%2, compiler="t")', "%3 = %1"))
    assert not regions_convex(naive)
    with pytest.raises(RegionError, match="not convex"):
        get_pass("PartitionGraph")(naive)


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="min_region_size"):
        get_pass("PartitionGraph", min_region_size=-1)
    with pytest.raises(ValueError, match="mod_name"):
        get_pass("PartitionGraph", mod_name="a b")
    out = partition(_chain_module(2), mod_name="mine")
    assert "tvmgen_mine_t_main_0" in out


def test_deep_chain_and_wide_shared_graph_run_linearly() -> None:
    """A 2 000-op chain becomes one function; a wide graph (200 branches sharing one
    input, alternately supported, summed on the host) partitions without recursion."""
    mod = _chain_module(2000)
    out = partition(mod)
    assert set(out.functions) == {"main", "tvmgen_default_t_main_0"}
    arg = np.arange(4, dtype="float32") - 2
    assert same_value(rr.evaluate(out, arg), -np.abs(arg))
    ty = TensorType((4,), "float32")
    x = Var("x", ty)
    shared = op_call("abs", x)
    branches = [op_call("tanh" if i % 2 else "negative", shared) for i in range(200)]
    total = branches[0]
    for b in branches[1:]:
        total = op_call("add", total, b)
    wide = annotate(IRModule({"main": Function((x,), total)}),
                    lambda call: "default" if call.op.name in ("add", "tanh") else "t")
    merged = get_pass("MergeCompilerRegions")(wide)
    part = get_pass("PartitionGraph")(merged)
    check_partitioned(IRModule({"main": Function((x,), total)}), wide, merged, part,
                      (arg,))


@settings(max_examples=40, deadline=None)
@given(dataflow_modules(), st.data())
def test_random_dataflow_programs_partition_soundly(mod: IRModule, data: st.DataObject
                                                    ) -> None:
    """Random DAGs, a random subset of operator calls annotated for "t" (the rest
    default): MergeCompilerRegions then PartitionGraph type-check, keep @main's type,
    leave convex acyclic regions and no annotation, and compute the same values."""
    calls = [n for n in post_order(mod["main"].body) if type(n) is Call and type(n.op) is Op]
    chosen = {id(c) for c in calls if data.draw(st.booleans())}
    annotated = annotate(mod, lambda call: "t" if id(call) in chosen else "default")
    merged = get_pass("MergeCompilerRegions")(annotated)
    part = get_pass("PartitionGraph")(merged)
    check_partitioned(mod, annotated, merged, part, arrays(data.draw(st.integers(0, 9))))
    n_funcs = len(part.functions) - 1
    assert (n_funcs == 0) == (not chosen)


@st.composite
def _annotated_modules(draw: st.DrawFn) -> IRModule:
    mod = draw(dataflow_modules(max_ops=10))
    calls = [n for n in post_order(mod["main"].body) if type(n) is Call and type(n.op) is Op]
    chosen = {id(c) for c in calls if draw(st.booleans())}
    return annotate(mod, lambda call: "t" if id(call) in chosen else "default")


@pytest.mark.parametrize("name", ["MergeCompilerRegions", "PartitionGraph"])
def test_check_pass_on_annotated_programs(name: str) -> None:
    """check_pass (types kept, values refined) on annotated programs; PartitionGraph after
    MergeCompilerRegions as the pipeline runs it."""
    merge_ = get_pass("MergeCompilerRegions")
    pass_ = merge_ if name == "MergeCompilerRegions" else (
        lambda m: get_pass("PartitionGraph")(merge_(m)))
    report = check_pass(pass_, programs=_annotated_modules(), examples=30, min_fired=10,
                        edge_values=False)
    assert report.fired >= 10


def test_regions_under_let_and_if_partition_in_place() -> None:
    """Regions inside a let-bound value and inside an if branch are outlined where they
    are; the let and the if stay on the host."""
    src = HEAD + """def @main(%x: Tensor[(4), float32], %c: bool) {
  let %v = annotation.compiler_end(abs(annotation.compiler_begin(%x, compiler="t")),
                                   compiler="t");
  if (%c) {
    annotation.compiler_end(negative(annotation.compiler_begin(%v, compiler="t")),
                            compiler="t")
  } else {
    %v
  }
}"""
    mod = rr.parse(src)
    out = partition(mod)
    expected = rr.parse(HEAD + """def @main(%x: Tensor[(4), float32], %c: bool) {
  let %v = @tvmgen_default_t_main_0(%x);
  if (%c) { @tvmgen_default_t_main_1(%v) } else { %v }
}
def @tvmgen_default_t_main_0(%t_0_i0: Tensor[(4), float32], Compiler="t", Primitive=1,
    Inline=1, global_symbol="tvmgen_default_t_main_0") -> Tensor[(4), float32] {
  abs(%t_0_i0)
}
def @tvmgen_default_t_main_1(%t_1_i0: Tensor[(4), float32], Compiler="t", Primitive=1,
    Inline=1, global_symbol="tvmgen_default_t_main_1") -> Tensor[(4), float32] {
  negative(%t_1_i0)
}""")
    assert rr.alpha_equal(out, expected), rr.astext(out)
    x = _args((4,))[0]
    for c in (True, False):
        assert same_value(rr.evaluate(out, x, c), rr.evaluate(mod, x, c))


# TVM's region boundaries (partition_graph.cc): %x read by two begins is one parameter; %0
# ended twice (two host users) is one output, and its host projection is shared; the
# tuple literal (%1, %0) ended once is flattened into its fields (%0 once more: no new
# output) and rebuilt on the host; the tuple of constants entering is bound.
BOUNDARIES = HEAD + """def @main(%x: Tensor[(4), float32], %z: Tensor[(4), float32]) {
  %0 = annotation.compiler_begin(%x, compiler="t");
  %1 = annotation.compiler_begin(%x, compiler="t");
  %2 = annotation.compiler_begin(%z, compiler="t");
  %3 = log(%0);
  %4 = multiply(%3, subtract(%1, %2));
  %5 = annotation.compiler_begin((1f, 2f), compiler="t");
  %6 = add(%4, %5.1);
  %7 = annotation.compiler_end(%6, compiler="t");
  %8 = annotation.compiler_end(%6, compiler="t");
  %9 = annotation.compiler_end((abs(%6), %6), compiler="t");
  (tanh(%7), negative(%8), %9)
}
"""

BOUNDARIES_PARTITIONED = HEAD + """def @main(%x: Tensor[(4), float32],
    %z: Tensor[(4), float32]) {
  %0 = @tvmgen_default_t_main_0(%x, %z);
  %1 = %0.0;
  (tanh(%1), negative(%1), (%0.1, %1))
}

def @tvmgen_default_t_main_0(%t_0_i0: Tensor[(4), float32], %t_0_i1: Tensor[(4), float32],
    Compiler="t", Primitive=1, Inline=1, global_symbol="tvmgen_default_t_main_0")
    -> (Tensor[(4), float32], Tensor[(4), float32]) {
  %0 = add(multiply(log(%t_0_i0), subtract(%t_0_i0, %t_0_i1)), (1f, 2f).1);
  (%0, abs(%0))
}
"""


def test_one_parameter_per_distinct_input_one_output_per_distinct_node() -> None:
    """TVM's PartitionGraph: ``region_func_in`` (one parameter per input expression),
    ``out_expr_to_idx`` (one output per output expression), FlattenTupleOutputs and the
    binding of constant tuples (``IsConstant``)."""
    mod = rr.parse(BOUNDARIES)
    out = get_pass("PartitionGraph")(mod)
    assert rr.alpha_equal(out, rr.parse(BOUNDARIES_PARTITIONED)), rr.astext(out)
    x, z = (np.abs(a) + 0.5 for a in _args((4,), (4,)))  # log stays finite
    assert same_value(rr.evaluate(out, x, z), rr.evaluate(no_annot(mod), x, z))
    assert same_value(rr.compile(out)(x, z), rr.evaluate(no_annot(mod), x, z))
    # the host reads output 0 through one shared projection (its three users)
    reads = [n for n in post_order(out["main"].body) if type(n) is TupleGetItem]
    assert sorted(n.index for n in reads) == [0, 1]


def no_annot(mod: IRModule) -> IRModule:
    """``mod`` with its annotations removed (what the annotated program computes)."""
    fn = mod["main"]
    body = rewrite(fn.body, lambda e: None if not is_annotation(e) else e.args[0])
    return IRModule({"main": Function(fn.params, body, fn.ret_type)})


def test_a_tuple_of_constants_from_an_outlined_region_stays_a_parameter() -> None:
    """A constant tuple is bound only where its value is the constants: one an outlined
    region returns (here flattened: two outputs) is that region's call on the host."""
    mod = rr.parse(HEAD + """def @main(%x: Tensor[(2), float32]) {
  %0 = annotation.compiler_end((1f, 2f), compiler="u");
  %1 = annotation.compiler_begin(%0, compiler="t");
  %2 = annotation.compiler_begin(%x, compiler="t");
  annotation.compiler_end(add(%2, %1.0), compiler="t")
}""")
    out = get_pass("PartitionGraph")(mod)
    t_fn = next(f for f in out.functions.values() if f.attr("Compiler") == "t")
    u_fn = next(f for f in out.functions.values() if f.attr("Compiler") == "u")
    assert len(t_fn.params) == 2 and type(u_fn.body) is Tuple and not u_fn.params
    x = _args((2,))[0]
    assert same_value(rr.evaluate(out, x), x + 1)


def test_many_shared_outputs_and_inputs_stay_linear() -> None:
    """500 blocks, each node ended twice and read twice: 500 outputs, one parameter."""
    ty = TensorType((4,), "float32")
    x = Var("x", ty)
    nodes: list[Expr] = []
    node: Expr = annotation("begin", x, "t")
    users: list[Expr] = []
    for i in range(500):
        node = op_call("abs" if i % 2 else "negative", node)
        nodes.append(node)
        users += [op_call("tanh", annotation("end", node, "t")),
                  op_call("exp", annotation("end", node, "t"))]
    total = users[0]
    for u in users[1:]:
        total = op_call("add", total, u)
    mod = IRModule({"main": Function((x,), total)})
    out = get_pass("PartitionGraph")(mod)
    fn = out["tvmgen_default_t_main_0"]
    assert len(fn.params) == 1 and len(fn.body.fields) == 500
    arg = _args((4,))[0]
    assert same_value(rr.evaluate(out, arg), rr.evaluate(no_annot(mod), arg))
