"""TVM's classic partitioning cases end to end through ``rr.partition`` (spec/byoc.md).

The programs of apache/tvm v0.8 ``tests/python/relay/test_pass_partition_graph.py``,
``test_pass_merge_compiler_regions.py`` and ``test_pass_merge_composite.py``, written here
as Relay text (smaller shapes); the backend of each case supports what TVM's annotator
marked. Each case asserts TVM's region structure (how many regions, which operators and
composites in which, how many outputs and inputs, what stays on the host), that the result
computes what the original computes (``rr.evaluate``; and ``rr.compile``, the regions run by
the interpreter), and that it prints and parses back alpha-equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.byoc import unregister_backend
from relay_ref.byoc.reference import register_reference_backend
from relay_ref.ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TupleType
from relay_ref.ir.visitor import post_order
from relay_ref.passes.pattern import is_op, is_tuple_get_item, wildcard
from relay_ref.passes.registry import get_pass
from relay_ref.testing.check import values_equal

T = "ttvm"


@dataclass(frozen=True)
class Region:
    """What TVM's expected module says of one region: its operators (composite calls by
    composite name), outputs and inputs."""

    ops: tuple[str, ...]
    outputs: int
    inputs: int


@pytest.fixture
def backend() -> Iterator[Callable[..., Any]]:
    def make(ops: Any, patterns: Any = ()) -> Any:
        return register_reference_backend(T, ops, patterns)

    yield make
    unregister_backend(T)


def _calls(expr: Any) -> list[str]:
    """Operator names and composite names of the calls in ``expr`` (not inside composites)."""
    out = []
    for n in post_order(expr, enter=lambda x: () if type(x) is Function else _kids(x)):
        if type(n) is Call and type(n.op) is Op:
            out.append(n.op.name)
        elif type(n) is Call and type(n.op) is Function and n.op.attr("Composite"):
            out.append(str(n.op.attr("Composite")))
    return sorted(out)


def _kids(node: Any) -> tuple:
    from relay_ref.ir.expr import children

    return tuple(children(node))


def regions(mod: IRModule) -> list[Region]:
    """The regions of a partitioned module, in name order (post-order numbering)."""
    out = []
    for name in sorted(mod.functions):
        fn = mod.functions[name]
        if fn.attr("Compiler") is None:
            continue
        assert fn.attr("Compiler") == T and fn.attr("global_symbol") == name
        assert fn.attr("Primitive") == 1 and fn.attr("Inline") == 1
        n_out = len(fn.body.fields) if type(fn.body) is Tuple else 1
        out.append(Region(tuple(_calls(fn.body)), n_out, len(fn.params)))
    return out


def host_ops(mod: IRModule) -> list[str]:
    return [c for c in _calls(mod["main"].body)]


def _args(mod: IRModule, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        ty = p.type_annotation
        data = rng.uniform(0.5, 2.0, tuple(int(d) for d in ty.shape))  # log stays finite
        out.append(data.astype(ty.dtype))
    return out


def partitioned(src: str, params: dict | None = None) -> tuple[IRModule, IRModule]:
    """The program and ``rr.partition`` of it, checked: type of ``@main`` kept (up to bound
    parameters), the text round trip, and the value under evaluate and compile."""
    mod = rr.parse(src)
    part = rr.partition(mod, [T], params)
    assert rr.alpha_equal(rr.parse(rr.astext(part)), part), rr.astext(part)
    typed = rr.infer_types(part)
    if not params:
        assert typed.global_types["main"] == rr.infer_types(mod).global_types["main"]
    args = _args(mod)
    bound = [a for p, a in zip(mod["main"].params, args, strict=True)
             if p.name_hint not in (params or {})]
    want = rr.evaluate(mod, *[(params or {}).get(p.name_hint, a)
                              for p, a in zip(mod["main"].params, args, strict=True)])
    assert values_equal(rr.evaluate(part, *bound), want)
    assert values_equal(rr.compile(part)(*bound), want)
    return mod, part


# -- the cases ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """A TVM case: what the backend supports (operators, or a mapping to predicates; its
    composite patterns), the program, the parameters bound, and TVM's expected regions and
    host operators."""

    ops: Any
    src: str
    regions: list[Region]
    host: list[str]
    patterns: Callable[[], list] = list
    params: dict | None = None


def _not_on(*names: str) -> Callable[[Any], bool]:
    """A support predicate: the call reads none of the parameters ``names`` (TVM's
    CcompilerAnnotator leaves the third chain to TVM)."""
    def pred(info: Any) -> bool:
        return not any(getattr(a, "name_hint", None) in names for a in info.args)
    return pred


def add_sub_mul() -> Any:
    x, y = wildcard(), wildcard()
    return is_op("multiply")(is_op("add")(x, y), is_op("subtract")(x, y))


def add_add_add() -> Any:
    x, y = wildcard(), wildcard()
    inner = is_op("add")(x, y)
    return is_op("add")(is_op("add")(x, inner), inner)


def conv_bias_relu(optional: bool = False) -> Any:
    bias = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard())
    return bias.optional(lambda p: is_op("nn.relu")(p)) if optional else is_op("nn.relu")(bias)


def add_relu() -> Any:
    return is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))


def bn_relu() -> Any:
    return is_op("nn.relu")(is_tuple_get_item(
        is_op("nn.batch_norm")(*(wildcard() for _ in range(5))), 0))


W = ", ".join(f"%w{i}: Tensor[(4, 4), float32]" for i in range(8))
BN_PARAMS = ("%data: Tensor[(1, 3, 6, 6), float32], %weight: Tensor[(4, 3, 3, 3), float32], "
             "%g: Tensor[(4), float32], %b: Tensor[(4), float32], %m: Tensor[(4), float32], "
             "%v: Tensor[(4), float32]")
BN10 = ("%data: Tensor[(10, 10), float32], %g: Tensor[(10), float32], "
        "%b: Tensor[(10), float32], %m: Tensor[(10), float32], %v: Tensor[(10), float32]")
CONV = "nn.conv2d(%data, %weight, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3])"
CONV_PARAMS = ("%x: Tensor[(1, 2, 5, 5), float32], %w1: Tensor[(2, 2, 1, 1), float32], "
               "%w2: Tensor[(2, 2, 1, 1), float32], %b1: Tensor[(2), float32], "
               "%b2: Tensor[(2), float32]")
X8 = "%x: Tensor[(8, 8), float32], %y: Tensor[(8, 8), float32]"
DIAMOND = """def @main(%data: Tensor[(10, 10), float32]) {
  %0 = abs(%data);
  %1 = nn.relu(%0);
  %2 = tanh(%0);
  add(%1, %2)
}"""
MULTI_USE = f"""def @main({X8}, %z: Tensor[(8, 8), float32]) {{
  %0 = add(%x, %y);
  %1 = subtract(%0, %z);
  multiply(log(%0), %1)
}}"""
IN10 = ", ".join(f"%in_{i}: Tensor[(4, 4), float32]" for i in range(1, 11))
NO_W67 = _not_on("w6", "w7")
C = T + "."

CASES: dict[str, Case] = {
    # test_pass_partition_graph.py
    # two regions, not merged though they share %x (TVM's FIXME); x and three weights each
    "multi_node_compiler": Case(
        {"add": NO_W67, "subtract": NO_W67, "multiply": NO_W67},
        f"""def @main(%x: Tensor[(4, 4), float32], {W}) {{
  %0 = add(%x, %w0);
  %1 = subtract(%0, %w1);
  %2 = multiply(%1, %w2);
  %3 = add(%x, %w3);
  %4 = subtract(%3, %w4);
  %5 = multiply(%4, %w5);
  %6 = add(%x, %w6);
  %7 = subtract(%6, %w7);
  concatenate((%2, %5, %7))
}}""", [Region(("add", "multiply", "subtract"), 1, 4)] * 2, ["add", "concatenate", "subtract"]),
    # the region's one output feeds two host operators
    "extern_ccompiler_default_ops": Case(
        ["add", "subtract", "multiply"],
        f"def @main({X8}) {{\n  %0 = add(%x, %y);\n  concatenate((log(%0), exp(%0)))\n}}",
        [Region(("add",), 1, 2)], ["concatenate", "exp", "log"]),
    # x bound to ones: the constant is bound into the region, which takes y only
    "constant_propagation": Case(
        ["add"], f"def @main({X8}) {{\n  log(add(%x, %y))\n}}", [Region(("add",), 1, 1)],
        ["log"], params={"x": np.ones((8, 8), "float32")}),
    "multiple_outputs": Case(
        ["nn.conv2d", "nn.batch_norm", "nn.relu"],
        f"""def @main({BN_PARAMS}) {{
  %0 = nn.batch_norm({CONV}, %g, %b, %m, %v);
  (nn.relu(%0.0), abs(%0.1), abs(%0.2))
}}""", [Region(("nn.batch_norm", "nn.conv2d", "nn.relu"), 3, 6)], ["abs", "abs"]),
    # the diamond: abs and relu in one two-output region, tanh on the host, add apart
    "mixed_single_multiple_outputs": Case(
        ["abs", "nn.relu", "add"], DIAMOND,
        [Region(("abs", "nn.relu"), 2, 1), Region(("add",), 1, 2)], ["tanh"]),
    "duplicate_outputs": Case(
        ["abs"], """def @main(%data: Tensor[(10, 10), float32]) {
  %0 = abs(%data);
  (nn.relu(%0), tanh(%0), log(%0))
}""", [Region(("abs",), 1, 1)], ["log", "nn.relu", "tanh"]),
    # the projections of a supported call join its region; %0.1 is one output
    "duplicate_merge_and_tuplegetitem": Case(
        ["nn.batch_norm", "nn.relu"], f"""def @main({BN10}) {{
  %0 = nn.batch_norm(%data, %g, %b, %m, %v);
  %1 = %0.1;
  (nn.relu(%0.0), tanh(%1), log(%1))
}}""", [Region(("nn.batch_norm", "nn.relu"), 2, 5)], ["log", "tanh"]),
    # the tuple of split's projections concatenate reads (Python's TupleWrapper) is a
    # region output: flattened to (split.0, split.1, abs), the tuple rebuilt on the host
    "flatten_tuple_output": Case(
        ["split", "abs"], """def @main(%a: Tensor[(10, 10), float32]) {
  %0 = split(%a, indices_or_sections=2);
  %1 = abs(%0.0);
  (concatenate((%0.0, %0.1)), nn.relu(%1))
}""", [Region(("abs", "split"), 3, 1)], ["concatenate", "nn.relu"]),
    # add's result read twice inside the region: one input
    "multiple_use_of_an_output_same_region": Case(
        ["subtract", "log", "multiply"], MULTI_USE,
        [Region(("log", "multiply", "subtract"), 1, 2)], ["add"]),
    "multiple_use_of_an_output_different_regions": Case(
        ["subtract", "log"], MULTI_USE,
        [Region(("log",), 1, 1), Region(("subtract",), 1, 2)], ["add", "multiply"]),
    # test_pass_merge_compiler_regions.py: the RFC's example (adds supported, subtracts
    # not): adds 0, 1, 2, 5, 7 in one region (outputs 5 and 7), adds 8 and 9 in another
    "example_graph": Case(
        ["add"], f"""def @main({IN10}) {{
  %0 = add(%in_1, %in_2);
  %1 = add(%in_3, %in_4);
  %2 = add(%0, %1);
  %3 = subtract(%in_5, %in_6);
  %4 = subtract(%in_7, %3);
  %5 = add(%2, %4);
  %6 = subtract(%in_8, %5);
  %7 = add(%in_9, %5);
  %8 = add(%6, %7);
  add(%in_10, %8)
}}""", [Region(("add",) * 5, 2, 6), Region(("add", "add"), 1, 3)], ["subtract"] * 3),
    # test_pass_merge_composite.py, through the whole flow
    "branch_merge": Case(
        ["nn.relu"], """def @main(%a: Tensor[(4, 4), float32], %b: Tensor[(4, 4), float32],
    %c: Tensor[(4, 4), float32]) {
  %0 = multiply(add(%a, %b), subtract(%a, %b));
  %1 = multiply(add(%c, %0), subtract(%c, %0));
  nn.relu(%1)
}""", [Region(("nn.relu", C + "add_sub_mul", C + "add_sub_mul"), 1, 3)], [],
        lambda: [(C + "add_sub_mul", add_sub_mul())]),
    "reuse_call_merge": Case(
        ["subtract"], """def @main(%x: Tensor[(4, 4), float32], %y: Tensor[(4, 4), float32]) {
  %0 = subtract(%x, %y);
  %1 = add(%0, %y);
  %2 = add(%0, %1);
  add(%2, %1)
}""", [Region(("subtract", C + "add_add_add"), 1, 2)], [],
        lambda: [(C + "add_add_add", add_add_add())]),
    "multiple_patterns": Case(
        [], f"""def @main({CONV_PARAMS}) {{
  %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w1), %b1));
  nn.relu(add(%0, %x))
}}""", [Region((C + "add_relu", C + "conv_bias_relu"), 1, 3)], [],
        lambda: [(C + "conv_bias_relu", conv_bias_relu()), (C + "add_relu", add_relu())]),
    # one pattern with relu optional: both matches composites of the same name
    "optional_pattern": Case(
        [], f"""def @main({CONV_PARAMS}) {{
  %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w1), %b1));
  nn.bias_add(nn.conv2d(%0, %w2), %b2)
}}""", [Region((C + "conv_bias",) * 2, 1, 5)], [],
        lambda: [(C + "conv_bias", conv_bias_relu(optional=True))]),
    # two add-sub-mul units on the same inputs, multiplied: the inputs are shared
    "parallel_merge": Case(
        ["multiply"], """def @main(%i1: Tensor[(4, 4), float32], %i2: Tensor[(4, 4), float32]) {
  %0 = multiply(add(%i1, %i2), subtract(%i1, %i2));
  %1 = multiply(add(%i1, %i2), subtract(%i1, %i2));
  multiply(%0, %1)
}""", [Region(("multiply", C + "add_sub_mul", C + "add_sub_mul"), 1, 2)], [],
        lambda: [(C + "add_sub_mul", add_sub_mul())]),
    "tuple_get_item_merge": Case(
        [], """def @main(%x: Tensor[(1, 8), float32], %g: Tensor[(8), float32],
    %b: Tensor[(8), float32], %m: Tensor[(8), float32], %v: Tensor[(8), float32]) {
  %0 = nn.batch_norm(%x, %g, %b, %m, %v);
  nn.relu(%0.0)
}""", [Region((C + "bn_relu",), 1, 5)], [], lambda: [(C + "bn_relu", bn_relu())]),
}

def run_case(name: str, backend: Callable[..., Any]) -> IRModule:
    case = CASES[name]
    backend(case.ops, case.patterns())
    return partitioned(case.src, case.params)[1]


@pytest.mark.parametrize("name", CASES)
def test_tvm_case_operators_per_region(backend: Any, name: str) -> None:
    """Which operators (composites by name) each region holds and which stay on the host,
    as TVM's expected module; values and round trip in ``partitioned``."""
    case = CASES[name]
    part = run_case(name, backend)
    got = regions(part)
    assert sorted(r.ops for r in got) == sorted(tuple(sorted(r.ops)) for r in case.regions), \
        rr.astext(part)
    assert host_ops(part) == sorted(case.host)


@pytest.mark.parametrize("name", CASES)
def test_tvm_case_region_boundaries(backend: Any, name: str) -> None:
    """Each region's number of outputs and inputs, as TVM's expected module: one parameter
    per distinct input, one output per distinct output node, tuple literals flattened."""
    part = run_case(name, backend)
    got = sorted((r.ops, r.outputs, r.inputs) for r in regions(part))
    want = sorted((tuple(sorted(r.ops)), r.outputs, r.inputs) for r in CASES[name].regions)
    assert got == want, rr.astext(part)


def test_constant_propagation_binds_the_constant(backend: Any) -> None:
    part = run_case("constant_propagation", backend)
    assert [p.name_hint for p in part["main"].params] == ["y"]
    (name,) = [n for n, f in part.functions.items() if f.attr("Compiler")]
    consts = [c for c in post_order(part[name].body) if type(c) is Constant]
    assert len(consts) == 1 and np.array_equal(consts[0].data, np.ones((8, 8), "float32"))


CONST_TUPLES = """def @main(%a: Tensor[(4, 4), uint8], %b: Tensor[(4, 4), uint8]) {
  %0 = abs(%a);
  qnn.concatenate((%0, %b), (0f, 0f), (1, 1), 0f, 1, axis=1)
}"""


def test_constant_tuples_region(backend: Any) -> None:
    backend(["qnn.concatenate"])
    _, part = partitioned(CONST_TUPLES)
    assert [r.ops for r in regions(part)] == [("qnn.concatenate",)]
    assert host_ops(part) == ["abs"]


def test_constant_tuples(backend: Any) -> None:
    """TVM's assertion: qnn.concatenate's scale and zero-point tuples and scalars are in
    the region, not parameters."""
    backend(["qnn.concatenate"])
    _, part = partitioned(CONST_TUPLES)
    (name,) = [n for n, f in part.functions.items() if f.attr("Compiler")]
    concat = part[name].body
    assert [type(a) for a in concat.args[1:]] == [Tuple, Tuple, Constant, Constant]
    assert all(type(f) is Constant for a in concat.args[1:3] for f in a.fields)
    # the data tuple (abs(%a), %b) joins its only consumer's region (AnnotateTarget: a tuple
    # of tensors used once takes its consumer's target), so its two fields are parameters
    assert len(part[name].params) == 2


def test_function_lifting(backend: Any) -> None:
    """conv2d then batch_norm, both supported, the tuple returned. TVM annotates each op
    and partitions without merging: two regions; rr.partition merges them into one."""
    backend(["nn.conv2d", "nn.batch_norm"])
    src = f"def @main({BN_PARAMS}) {{\n  nn.batch_norm({CONV}, %g, %b, %m, %v)\n}}"
    mod, part = partitioned(src)
    assert regions(part) == [Region(("nn.batch_norm", "nn.conv2d"), 1, 6)]
    assert host_ops(part) == []
    # TVM's flow (AnnotateTarget, PartitionGraph): one region per operator, the
    # batch_norm one (numbered after the conv) returning its tuple
    split = get_pass("PartitionGraph")(get_pass("AnnotateTarget", targets=(T,))(mod))
    assert regions(split) == [Region(("nn.conv2d",), 1, 2), Region(("nn.batch_norm",), 1, 5)]
    bn = next(n for n, f in split.functions.items() if f.attr("Compiler") and
              _calls(f.body) == ["nn.batch_norm"])
    assert isinstance(rr.infer_types(split).global_types[bn].ret_type, TupleType)
    args = _args(mod)
    assert values_equal(rr.evaluate(split, *args), rr.evaluate(mod, *args))


def test_diamond_graph_fanouts(backend: Any) -> None:
    """test_pass_merge_compiler_regions.py's diamond, after MergeCompilerRegions: the
    bottom add must not join the top region (it would depend on itself through tanh)."""
    from relay_ref.passes.regions import find_regions, regions_convex

    backend(["abs", "nn.relu", "add"])
    annotated = get_pass("AnnotateTarget", targets=(T,))(rr.parse(DIAMOND))
    merged = get_pass("MergeCompilerRegions")(annotated)
    assert regions_convex(merged)
    found = [r for r in find_regions(merged["main"].body).regions if r.target == T]
    assert sorted(sorted(_op_names(r.nodes)) for r in found) == [["abs", "nn.relu"], ["add"]]


def _op_names(nodes: Any) -> list[str]:
    return [n.op.name for n in nodes if type(n) is Call and type(n.op) is Op
            and not n.op.name.startswith("annotation.")]


def test_optional_pattern_names_what_matched(backend: Any) -> None:
    part = run_case("optional_pattern", backend)
    (name,) = [n for n, f in part.functions.items() if f.attr("Compiler")]
    names = sorted(str(n.op.attr("PartitionedFromPattern")) for n in post_order(part[name].body)
                   if type(n) is Call and type(n.op) is Function)
    assert names == ["nn.conv2d_nn.bias_add_", "nn.conv2d_nn.bias_add_nn.relu_"]


MERGE_ORDER = """def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  nn.relu(abs(add(%x, %y)))
}"""


@pytest.mark.parametrize("order, composite", [("ABC", "A"), ("BCA", "B"), ("CAB", "C")])
def test_merge_order(backend: Any, order: str, composite: str) -> None:
    """The first pattern in the table wins (A: add-abs-relu, B: add-abs, C: abs-relu);
    TVM's expected composite for each order."""
    table = {"A": is_op("nn.relu")(is_op("abs")(is_op("add")(wildcard(), wildcard()))),
             "B": is_op("abs")(is_op("add")(wildcard(), wildcard())),
             "C": is_op("nn.relu")(is_op("abs")(wildcard()))}
    backend(["add", "abs", "nn.relu"], [(C + k, table[k]) for k in order])
    _, part = partitioned(MERGE_ORDER)
    (region,) = regions(part)
    assert [op for op in region.ops if op.startswith(C)] == [C + composite]


def test_diamond_not_merge(backend: Any) -> None:
    """relu -> (clip, mul) does not match relu -> add -> clip -> mul: no composite."""
    r = is_op("nn.relu")(wildcard())
    backend([], [(C + "relu_clip_mul", is_op("multiply")(r, is_op("clip")(r)))])
    mod = rr.parse("""def @main(%x: Tensor[(4), float32]) {
  %0 = nn.relu(%x);
  multiply(%0, clip(add(%0, %0), a_min=0f, a_max=1f))
}""")
    part = rr.partition(mod, [T])
    assert regions(part) == [] and rr.alpha_equal(part, rr.parse(rr.astext(mod)))


def test_type_check(backend: Any) -> None:
    """A composite check that reads the matched conv's layout: NHWC matches, NCHW not."""
    def layout_is(want: str) -> Callable[[Any], bool]:
        def check(info: Any) -> bool:
            conv = [e for e in info.match.bindings.values()
                    if type(e) is Call and getattr(e.op, "name", "") == "nn.conv2d"]
            return bool(conv) and conv[0].attrs.data_layout == want
        return check

    src = """def @main(%x: Tensor[(1, 6, 6, 4), float32], %w: Tensor[(4, 4, 3, 3), float32],
    %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(nn.relu(add(%x, %x)), %w, kernel_size=[3, 3], data_layout="NHWC",
                 kernel_layout="OIHW");
  nn.relu(nn.bias_add(%0, %b, axis=3))
}"""
    backend([], [(C + "conv_bias_relu", conv_bias_relu(), layout_is("NHWC"))])
    _, part = partitioned(src)
    assert regions(part) == [Region((C + "conv_bias_relu",), 1, 3)]
    backend([], [(C + "conv_bias_relu", conv_bias_relu(), layout_is("NCHW"))])
    assert regions(rr.partition(rr.parse(src), [T])) == []


def test_partitioned_programs_have_no_calls_between_regions(backend: Any) -> None:
    backend(["abs", "nn.relu", "add"])
    _, part = partitioned(DIAMOND)
    for fn in part.functions.values():
        if fn.attr("Compiler"):
            assert not any(type(n) is GlobalVar for n in post_order(fn.body))


# -- TVM's printed partitioned programs ---------------------------------------------------------

PRINTED = Path(__file__).resolve().parents[1] / "programs/tvm/printed_byoc_partitioned.relay"


PRINTED_V08 = PRINTED.with_name("printed_byoc_partitioned_v08.relay")


def test_printed_v08_partitioned_program_runs_its_regions() -> None:
    """tests/programs/tvm/printed_byoc_partitioned_v08.relay (a two-output region with a
    composite, read by projections, and a region fed by it and by the host): with a
    backend named ``test_target`` both regions are built and run by it, and the value is
    the interpreter's."""
    mod = rr.parse(PRINTED_V08.read_text(), str(PRINTED_V08))
    assert rr.alpha_equal(rr.parse(rr.astext(mod)), mod)
    be = register_reference_backend("test_target", ["nn.relu", "add"])
    try:
        exe = rr.compile(mod)
        assert be.codegen.calls == 2
        assert sorted((r.name, r.backend, r.ops) for r in exe.plan.regions) == [
            ("tvmgen_default_test_target_main_0", "test_target", 3),
            ("tvmgen_default_test_target_main_2", "test_target", 1)]
        args = _args(mod)
        x, w = args
        np.testing.assert_allclose(exe(*args), rr.evaluate(mod, *args), rtol=1e-6)
        dense = np.abs(x @ w.T)
        np.testing.assert_allclose(exe(*args), np.maximum(dense, 0) + np.tanh(dense),
                                   rtol=1e-5)
    finally:
        unregister_backend("test_target")


def test_printed_partitioned_program_parses_and_runs_its_region() -> None:
    """tests/programs/tvm/printed_byoc_partitioned.relay (TVM's print after
    PartitionGraph, ``Compiler="dnnl"``): it parses, prints back alpha-equal, and with a
    backend named ``dnnl`` registered its region is built and run by that backend."""
    mod = rr.parse(PRINTED.read_text(), str(PRINTED))
    assert rr.alpha_equal(rr.parse(rr.astext(mod)), mod)
    be = register_reference_backend("dnnl", ["nn.relu"])
    try:
        exe = rr.compile(mod)
        assert be.codegen.calls == 1
        assert [(r.name, r.backend) for r in exe.plan.regions] == [
            ("tvmgen_default_dnnl_main_0", "dnnl")]
        x = np.array([[-1.0, 2.0], [3.0, -4.0]], "float32")
        np.testing.assert_array_equal(exe(x), np.maximum(x, 0))
        np.testing.assert_array_equal(rr.evaluate(mod, x), np.maximum(x, 0))
    finally:
        unregister_backend("dnnl")


def test_rr_partition_output_equals_tvms_printed_form(backend: Any) -> None:
    """rr.partition of the diamond is alpha-equal to the program as TVM prints it after
    MergeCompilerRegions and PartitionGraph (test_mixed_single_multiple_outputs' expected
    module, in TVM's printed syntax: attributes after the parameters, type comments)."""
    backend(["abs", "nn.relu", "add"])
    part = rr.partition(rr.parse(DIAMOND), [T])
    ty = "Tensor[(10, 10), float32]"
    attrs = 'Inline=1, Compiler="{t}", global_symbol="tvmgen_default_{t}_main_{k}", Primitive=1'
    tvm_printed = rr.parse(f"""#[version = "0.0.5"]
def @main(%data: {ty} /* ty={ty} */) {{
  %0 = @tvmgen_default_{T}_main_0(%data) /* ty=({ty}, {ty}) */;
  %1 = %0.1;
  %2 = %0.0;
  %3 = tanh(%1) /* ty={ty} */;
  @tvmgen_default_{T}_main_1(%2, %3) /* ty={ty} */
}}

def @tvmgen_default_{T}_main_0(%{T}_0_i0: {ty} /* ty={ty} */,
    {attrs.format(t=T, k=0)}) -> ({ty}, {ty}) {{
  %4 = abs(%{T}_0_i0) /* ty={ty} */;
  %5 = nn.relu(%4) /* ty={ty} */;
  (%5, %4)
}}

def @tvmgen_default_{T}_main_1(%{T}_1_i0: {ty} /* ty={ty} */, %{T}_1_i1: {ty} /* ty={ty} */,
    {attrs.format(t=T, k=1)}) -> {ty} {{
  add(%{T}_1_i0, %{T}_1_i1) /* ty={ty} */
}}
""")
    # TVM's function attributes are a map printed in hash order: alpha_equal compares
    # them as one
    assert rr.alpha_equal(rr.infer_types(part), rr.infer_types(tvm_printed)), rr.astext(part)
