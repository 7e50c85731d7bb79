"""AnnotateTarget (relay_ref/passes/annotate_target.py; BYOC-Annotate): TVM's classic cases
(tests/python/relay/test_pass_annotate_target.py) as Relay text with the expected
annotated program: a fully supported graph (one ``compiler_end`` per use), multiple ends
into ``"default"`` ops, tuples between supported ops, a composite call, predicates reading
argument types, two runs equal one run with both targets, the first target winning;
``if``/``let`` as region boundaries; values against ``rr.evaluate``, round trips,
``check_pass``, a deep chain, and errors (unknown target, a predicate that raises)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.diagnostics import RelayError
from relay_ref.ir.expr import Call, If, Let, Op, Tuple
from relay_ref.ir.visitor import post_order
from relay_ref.passes.annotate_target import AnnotateTarget
from relay_ref.passes.compiler_support import UnknownCompiler
from relay_ref.passes.merge_composite import MergeComposite
from relay_ref.passes.pattern import is_op, wildcard
from relay_ref.passes.registry import get_pass
from relay_ref.testing import check_pass


def begin(x, t):
    return f'annotation.compiler_begin({x}, compiler="{t}")'


def end(x, t):
    return f'annotation.compiler_end({x}, compiler="{t}")'


def annotations(mod):
    return [n for n in post_order(mod["main"]) if isinstance(n, Call)
            and isinstance(n.op, Op) and n.op.name.startswith("annotation.compiler_")]


def test_fully_supported_dnnl_shape(backend, refines):
    """TVM's test_extern_dnnl: conv2d twice and an add, all supported; the first conv2d,
    used twice, gets one compiler_end per use."""
    backend("dnnl", ("nn.conv2d", "add"))
    conv = "padding=[1, 1, 1, 1], groups=4, kernel_size=[3, 3]"
    before = rr.parse(f"""
def @main(%data: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(4, 1, 3, 3), float32]) {{
  %0 = nn.conv2d(%data, %w, {conv});
  %1 = nn.conv2d(%0, %w, {conv});
  add(%0, %1)
}}""")
    expected = rr.parse(f"""
def @main(%data: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(4, 1, 3, 3), float32]) {{
  %0 = nn.conv2d({begin("%data", "dnnl")}, {begin("%w", "dnnl")}, {conv});
  %1 = {end("%0", "dnnl")};
  %2 = {end("%0", "dnnl")};
  %3 = nn.conv2d({begin("%2", "dnnl")}, {begin("%w", "dnnl")}, {conv});
  %4 = {end("%3", "dnnl")};
  %5 = add({begin("%1", "dnnl")}, {begin("%4", "dnnl")});
  {end("%5", "dnnl")}
}}""")
    after = AnnotateTarget(["dnnl"])(before)
    assert rr.alpha_equal(after, expected), rr.astext(after)
    refines(before, after)


def test_multiple_ends(backend, refines):
    backend("test", ("nn.relu",))
    before = rr.parse("""
def @main(%x: Tensor[(10, 10), float32]) {
  %0 = nn.relu(%x);
  %1 = abs(%0);
  %2 = abs(%0);
  add(%1, %2)
}""")
    expected = rr.parse(f"""
def @main(%x: Tensor[(10, 10), float32]) {{
  %0 = nn.relu({begin("%x", "test")});
  %1 = abs({begin(end("%0", "test"), "default")});
  %2 = abs({begin(end("%0", "test"), "default")});
  %3 = add({begin(end("%1", "default"), "default")}, {begin(end("%2", "default"), "default")});
  {end("%3", "default")}
}}""")
    after = AnnotateTarget("test")(before)
    assert rr.alpha_equal(after, expected), rr.astext(after)
    refines(before, after)


def test_tuple_between_supported(test_backend, refines):
    before = rr.parse("""
def @main(%x: Tensor[(10, 5), float32], %y: Tensor[(10, 5), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%y);
  %2 = (%0, %1);
  concatenate(%2, axis=1)
}""")
    expected = rr.parse(f"""
def @main(%x: Tensor[(10, 5), float32], %y: Tensor[(10, 5), float32]) {{
  %0 = nn.relu({begin("%x", "test")});
  %1 = nn.relu({begin("%y", "test")});
  %2 = ({begin(end("%0", "test"), "test")}, {begin(end("%1", "test"), "test")});
  %3 = concatenate({begin(end("%2", "test"), "test")}, axis=1);
  {end("%3", "test")}
}}""")
    after = AnnotateTarget(["test"])(before)
    assert rr.alpha_equal(after, expected), rr.astext(after)
    refines(before, after)


def test_tuple_of_mixed_targets_is_default(test_backend, refines):
    before = rr.parse("""
def @main(%x: Tensor[(4), float32]) {
  %0 = nn.relu(%x);
  %1 = abs(%x);
  %2 = (%0, %1);
  %2.1
}""")
    expected = rr.parse(f"""
def @main(%x: Tensor[(4), float32]) {{
  %0 = nn.relu({begin("%x", "test")});
  %1 = abs({begin("%x", "default")});
  %2 = ({begin(end("%0", "test"), "default")}, {begin(end("%1", "default"), "default")});
  %3 = {begin(end("%2", "default"), "default")}.1;
  {end("%3", "default")}
}}""")
    after = AnnotateTarget(["test"])(before)
    assert rr.alpha_equal(after, expected), rr.astext(after)
    refines(before, after)


def test_tuple_joins_its_supported_consumer(test_backend, refines):
    """A tuple of tensors whose one use is a supported call takes that call's target (its
    fields, from different targets, become the region's inputs, not a tuple parameter);
    a rerun on the annotated program changes nothing."""
    before = rr.parse("""
def @main(%x: Tensor[(4), float32]) {
  %0 = abs(%x);
  %1 = nn.relu(%0);
  %2 = (%0, %1);
  concatenate(%2)
}""")
    expected = rr.parse(f"""
def @main(%x: Tensor[(4), float32]) {{
  %0 = abs({begin("%x", "default")});
  %1 = nn.relu({begin(end("%0", "default"), "test")});
  %2 = ({begin(end("%0", "default"), "test")}, {begin(end("%1", "test"), "test")});
  %3 = concatenate({begin(end("%2", "test"), "test")});
  {end("%3", "test")}
}}""")
    after = AnnotateTarget(["test"])(before)
    assert rr.alpha_equal(after, expected), rr.astext(after)
    refines(before, after)
    assert rr.alpha_equal(AnnotateTarget(["test"])(after), expected)


def test_tuple_used_twice_keeps_its_fields_target(test_backend, refines):
    """Two uses: the tuple is not moved into either consumer (TVM's rule: ``"default"``
    when its fields' targets differ)."""
    before = rr.parse("""
def @main(%x: Tensor[(4), float32]) {
  %0 = (abs(%x), nn.relu(%x));
  add(sum(concatenate(%0)), sum(%0.0))
}""")
    after = AnnotateTarget(["test"])(before)
    [concat] = [n for n in post_order(after["main"]) if isinstance(n, Call)
                and getattr(n.op, "name", "") == "concatenate"]
    arg_begin = concat.args[0]
    arg_end = arg_begin.args[0]
    tup = arg_end.args[0]
    assert (arg_begin.attrs.compiler, arg_end.attrs.compiler) == ("test", "default")
    assert isinstance(tup, Tuple) and [f.attrs.compiler for f in tup.fields] == ["default"] * 2
    refines(before, after)


COMPOSITE = """
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %1 = fn (%in_1: Tensor[(10, 10), float32], %in_2: Tensor[(10, 10), float32],
           Composite="test.add_relu") {
    %0 = add(%in_1, %in_2);
    nn.relu(%0)
  };
  BODY
}"""


def test_composite_function(test_backend, refines):
    before = rr.parse(COMPOSITE.replace("BODY", "%1(%a, %b)"))
    expected = rr.parse(COMPOSITE.replace(
        "BODY", end(f'%1({begin("%a", "test")}, {begin("%b", "test")})', "test")))
    after = AnnotateTarget(["test"])(before)
    assert rr.alpha_equal(after, expected), rr.astext(after)
    refines(before, after)


def test_type_predicate_and_first_target_wins(backend, refines):
    before = rr.parse("""
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), int32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%y);
  %2 = add(%0, %0);
  (%2, %1)
}""")
    backend("A", {"nn.relu": lambda info: info.arg_types[0].dtype == "float32"})
    backend("B", ("nn.relu", "add"))
    after = AnnotateTarget(("A", "B"))(before)
    targets = {}
    for n in post_order(after["main"]):
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in ("nn.relu", "add"):
            arg = n.args[0]
            inner = arg.args[0]
            while isinstance(inner, Call) and isinstance(inner.op, Op) \
                    and inner.op.name.startswith("annotation."):
                inner = inner.args[0]
            targets[(n.op.name, getattr(inner, "name_hint", "call"))] = arg.attrs.compiler
    assert targets == {("nn.relu", "x"): "A", ("nn.relu", "y"): "B", ("add", "call"): "B"}
    refines(before, after)
    both = AnnotateTarget(("A", "B"))(before)
    twice = AnnotateTarget("B")(AnnotateTarget("A")(before))
    assert rr.alpha_equal(twice, both), rr.astext(twice)


def test_if_and_let_are_boundaries(test_backend):
    before = rr.parse("""
def @main(%x: Tensor[(4), float32], %c: bool) {
  let %v = nn.relu(%x);
  %0 = if (%c) { nn.relu(%v) } else { abs(%v) };
  add(%0, %v)
}""")
    after = AnnotateTarget(["test"])(before)
    for flag in (True, False):  # a bool parameter: values compared by hand
        x = np.linspace(-2, 2, 4).astype("float32")
        want = rr.evaluate(before, x, np.bool_(flag))
        got = rr.evaluate(after, x, np.bool_(flag))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want))
    assert rr.alpha_equal(rr.parse(rr.astext(after)), after)
    rr.infer_types(after)
    (node,) = [n for n in post_order(after["main"]) if isinstance(n, If)]
    for branch in (node.true_branch, node.false_branch):
        assert isinstance(branch, Call) and branch.op.name == "annotation.compiler_end"
    # the let's value is ended and begun as "default": no region crosses the let
    (let,) = [n for n in post_order(after["main"]) if isinstance(n, Let)]
    assert let.value.op.name == "annotation.compiler_begin"
    assert let.value.attrs.compiler == "default"
    assert let.value.args[0].attrs.compiler == "test"


def test_no_backend_unchanged_and_errors(backend):
    before = rr.parse("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }")
    assert get_pass("AnnotateTarget")(before) is before
    with pytest.raises(UnknownCompiler, match="nosuch"):
        AnnotateTarget(["nosuch"])(before)

    def boom(info):
        raise KeyError("no layout")

    backend("bad", {"nn.relu": boom})
    with pytest.raises(RelayError, match="no layout") as err:
        AnnotateTarget(["bad"])(before)
    assert err.value.span is not None


def test_check_pass(backend):
    backend("test", ("nn.relu", "add", "multiply", "concatenate"))
    check_pass(AnnotateTarget(["test"]), examples=25, focus=("add", "nn.relu", "tuple"))


def test_check_pass_after_composites(backend):
    add_relu = is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))
    backend("test", ("multiply",), patterns=[("test.add_relu", add_relu)])
    check_pass(lambda m: AnnotateTarget(["test"])(MergeComposite(["test"])(m)), examples=20,
               focus=("add", "nn.relu", "multiply"))


def test_deep_chain():
    lines = ["def @main(%x: Tensor[(2), float32]) {", "  %0 = add(%x, %x);"]
    for i in range(1, 2000):
        lines.append(f"  %{i} = {'nn.relu' if i % 2 else 'abs'}(%{i - 1});")
    lines.append("  %1999\n}")
    before = rr.parse("\n".join(lines))
    from relay_ref.passes.compiler_support import Support, register_support, unregister_support

    register_support(Support("deep", {"nn.relu": None}), replace=True)
    try:
        after = AnnotateTarget(["deep"])(before)
    finally:
        unregister_support("deep")
    assert len(annotations(after)) == 2 * 2000 + 1
