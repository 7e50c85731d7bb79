"""MergeComposite (relay_ref/passes/merge_composite.py; BYOC-Composite): TVM's classic cases
(tests/python/relay/test_pass_merge_composite.py) written as Relay text with the expected
program: conv2d + bias + relu, add + relu on a branching graph, wildcards, alternatives,
optional parts, a check that refuses, a match whose intermediate is used elsewhere (not
merged), patterns in table order; values against ``rr.evaluate``, text round trips,
``check_pass``, linear work on a deep chain and a wide shared graph, and errors."""

from __future__ import annotations

import pytest

import relay_ref as rr
from relay_ref.diagnostics import RelayError
from relay_ref.ir.expr import Call, Function
from relay_ref.ir.visitor import post_order
from relay_ref.passes.compiler_support import Composite, Support, UnknownCompiler
from relay_ref.passes.merge_composite import MergeComposite, partition_composite
from relay_ref.passes.pattern import Matcher, is_constant, is_op, is_tuple, wildcard
from relay_ref.passes.registry import get_pass
from relay_ref.testing import check_pass

T = "Tensor[(1, 8, 8, 8), float32]"


def add_relu():
    return is_op("nn.relu")(is_op("add")(wildcard(), wildcard()))


def conv_bias_relu():
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    return is_op("nn.relu")(is_op("nn.bias_add")(conv, wildcard()))


def composites(mod):
    return [n for f in mod.functions.values() for n in post_order(f)
            if isinstance(n, Function) and n.attr("Composite") is not None]


def test_conv2d_bias_relu(refines):
    before = rr.parse(f"""
def @main(%x: {T}, %w: Tensor[(8, 8, 3, 3), float32], %b: Tensor[(8), float32]) {{
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, %w, padding=[1, 1, 1, 1], kernel_size=[3, 3]);
  %4 = nn.bias_add(%3, %b);
  nn.relu(%4)
}}""")
    expected = rr.parse(f"""
def @main(%x: {T}, %w: Tensor[(8, 8, 3, 3), float32], %b: Tensor[(8), float32]) {{
  %2 = fn (%FunctionVar_1_0, %FunctionVar_1_1, %FunctionVar_1_2,
           PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_",
           Composite="ort.conv2d_bias_relu") {{
    %0 = nn.conv2d(%FunctionVar_1_0, %FunctionVar_1_1, padding=[1, 1, 1, 1],
                   kernel_size=[3, 3]);
    %1 = nn.bias_add(%0, %FunctionVar_1_2);
    nn.relu(%1)
  }};
  %5 = fn (%FunctionVar_0_0, %FunctionVar_0_1, %FunctionVar_0_2,
           PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_",
           Composite="ort.conv2d_bias_relu") {{
    %3 = nn.conv2d(%FunctionVar_0_0, %FunctionVar_0_1, padding=[1, 1, 1, 1],
                   kernel_size=[3, 3]);
    %4 = nn.bias_add(%3, %FunctionVar_0_2);
    nn.relu(%4)
  }};
  %5(%2(%x, %w, %b), %w, %b)
}}""")
    after = MergeComposite(patterns=[("ort.conv2d_bias_relu", conv_bias_relu())])(before)
    assert rr.alpha_equal(after, expected), rr.astext(after)
    assert "PartitionedFromPattern=\"nn.conv2d_nn.bias_add_nn.relu_\"" in rr.astext(after)
    refines(before, after)


BRANCH = """
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %0 = add(%a, %b);
  %1 = nn.relu(%0);
  %2 = add(%1, %b);
  %3 = nn.relu(%2);
  %4 = subtract(%1, %3);
  nn.relu(%4)
}"""


def test_add_relu_branching(refines):
    """TVM's test_branch_merge shape: each add+relu merged; %1 feeds two consumers but is
    the root of its match (an output may be shared)."""
    before = rr.parse(BRANCH)
    after = MergeComposite(patterns=[("test.add_relu", add_relu())])(before)
    expected = rr.parse("""
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %1 = (fn (%p0, %p1, PartitionedFromPattern="add_nn.relu_", Composite="test.add_relu") {
    %0 = add(%p0, %p1);
    nn.relu(%0)
  })(%a, %b);
  %3 = (fn (%q0, %q1, PartitionedFromPattern="add_nn.relu_", Composite="test.add_relu") {
    %2 = add(%q0, %q1);
    nn.relu(%2)
  })(%1, %b);
  %4 = subtract(%1, %3);
  nn.relu(%4)
}""")
    assert rr.alpha_equal(after, expected), rr.astext(after)
    refines(before, after)


def test_intermediate_used_elsewhere_not_merged(refines):
    before = rr.parse("""
def @main(%a: Tensor[(10, 10), float32], %b: Tensor[(10, 10), float32]) {
  %0 = add(%a, %b);
  %1 = nn.relu(%0);
  subtract(%1, %0)
}""")
    after = MergeComposite(patterns=[("test.add_relu", add_relu())])(before)
    assert after is before
    refines(before, after)


def test_alternatives_and_wildcard_callee_args(refines):
    pat = (is_op("nn.relu") | is_op("tanh"))(is_op("add")(wildcard(), wildcard()))
    before = rr.parse("""
def @main(%a: Tensor[(4), float32], %b: Tensor[(4), float32]) {
  %0 = add(%a, %b);
  %1 = tanh(%0);
  %2 = add(%1, %a);
  nn.relu(%2)
}""")
    after = MergeComposite(patterns=[("test.add_act", pat)])(before)
    names = sorted(str(f.attr("PartitionedFromPattern")) for f in composites(after))
    assert names == ["add_nn.relu_", "add_tanh_"]
    refines(before, after)


def test_optional_relu(refines):
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    pat = conv.optional(lambda x: is_op("nn.relu")(x))
    before = rr.parse(f"""
def @main(%x: {T}, %w: Tensor[(8, 8, 3, 3), float32]) {{
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], kernel_size=[3, 3]);
  %1 = nn.relu(%0);
  nn.conv2d(%1, %w, padding=[1, 1, 1, 1], kernel_size=[3, 3])
}}""")
    after = MergeComposite(patterns=[("test.conv_relu", pat)])(before)
    names = sorted(str(f.attr("PartitionedFromPattern")) for f in composites(after))
    assert names == ["nn.conv2d_", "nn.conv2d_nn.relu_"]
    refines(before, after)


def test_tuple_names_and_wildcard_inputs(refines):
    def relu():
        return is_op("nn.relu")(wildcard())

    pat = is_op("concatenate")(is_tuple([relu(), relu()]))
    before = rr.parse("""
def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) {
  %0 = nn.relu(%a);
  %1 = nn.relu(%b);
  %2 = (%0, %1);
  %3 = concatenate(%2, axis=1);
  %4 = split(%3, indices_or_sections=2, axis=1);
  add(%4.0, %4.1)
}""")
    after = MergeComposite(patterns=[("test.cat", pat)])(before)
    (fn,) = composites(after)
    assert fn.attr("PartitionedFromPattern") == "nn.relu_nn.relu_Tuple_concatenate_"
    assert len(fn.params) == 2
    refines(before, after)


def test_constant_embedded(refines):
    pat = is_op("add")(wildcard(), is_constant())
    before = rr.parse("""
def @main(%a: Tensor[(3), float32]) {
  %0 = add(%a, meta[relay.Constant][0]);
  nn.relu(%0)
}""".replace("meta[relay.Constant][0]", "1f"))
    after = MergeComposite(patterns=[("test.add_const", pat)])(before)
    (fn,) = composites(after)
    assert len(fn.params) == 1
    refines(before, after)


def test_check_refuses(refines):
    before = rr.parse(BRANCH)

    def only_first(info):
        # refuses the add+relu whose add reads a parameter twice-removed (%1 + %b)
        inner = info.match[inner_add]
        return not isinstance(inner.args[0], Call)

    inner_add = is_op("add")(wildcard(), wildcard())
    pat = is_op("nn.relu")(inner_add)
    after = MergeComposite(patterns=[("test.add_relu", pat, only_first)])(before)
    assert len(composites(after)) == 1
    refines(before, after)


def test_patterns_in_table_order(refines):
    """The first pattern takes add+relu; the second (relu alone) only the rest."""
    before = rr.parse(BRANCH)
    after = MergeComposite(patterns=[("test.add_relu", add_relu()),
                                     ("test.relu", is_op("nn.relu")(wildcard()))])(before)
    names = [str(f.attr("Composite")) for f in composites(after)]
    assert sorted(names) == ["test.add_relu", "test.add_relu", "test.relu"]
    refines(before, after)


def test_backend_tables(backend, refines):
    before = rr.parse(BRANCH)
    assert MergeComposite()(before) is before  # no backend named: nothing to merge
    backend("test", ("add",), patterns=[("test.add_relu", add_relu())])
    assert MergeComposite()(before) is before  # registered, still not named
    after = get_pass("MergeComposite", targets=("test",))(before)
    assert len(composites(after)) == 2
    assert MergeComposite(targets=("test",))(before) is not before
    refines(before, after)


def test_not_inside_composites():
    before = rr.parse(BRANCH)
    once = MergeComposite(patterns=[("test.add_relu", add_relu())])(before)
    twice = MergeComposite(patterns=[("test.relu", is_op("nn.relu")(wildcard()))])(once)
    inner = [f for f in composites(twice) if f.attr("Composite") == "test.add_relu"]
    assert len(inner) == 2
    assert all(f.attr("Composite") != "test.relu" for f in composites(once))


def test_errors():
    before = rr.parse(BRANCH)
    with pytest.raises(UnknownCompiler, match="nosuch"):
        MergeComposite(targets=("nosuch",))(before)

    def boom(info):
        raise ZeroDivisionError("bad check")

    with pytest.raises(RelayError, match="bad check") as err:
        MergeComposite(patterns=[("test.add_relu", add_relu(), boom)])(before)
    assert err.value.span is not None
    with pytest.raises(TypeError):
        MergeComposite(patterns=["nope"])(before)

    def bad_pred(expr, match):
        raise ValueError("bad predicate")

    pat = is_op("nn.relu")(wildcard()).where(bad_pred)
    with pytest.raises(RelayError, match="bad predicate") as err:
        MergeComposite(patterns=[("test.relu", pat)])(before)
    assert err.value.span is not None


def test_check_pass(backend):
    backend("test", ("add",), patterns=[("test.add_relu", add_relu()),
                                        ("test.relu", is_op("nn.relu")(wildcard()))])
    check_pass(MergeComposite(["test"]), examples=25, focus=("add", "nn.relu"))


def _chain(n):
    lines = ["def @main(%x: Tensor[(2), float32]) {", "  %0 = add(%x, %x);"]
    for i in range(1, n):
        op = "nn.relu" if i % 2 else "add"
        args = f"%{i - 1}" if op == "nn.relu" else f"%{i - 1}, %x"
        lines.append(f"  %{i} = {op}({args});")
    lines.append(f"  %{n - 1}\n}}")
    return rr.parse("\n".join(lines))


def test_linear_deep_chain():
    mod = rr.infer_types(_chain(2000))
    matcher = Matcher(mod.checked_types.get)
    body = partition_composite(mod["main"].body, Support("test", {}),
                               Composite("test.add_relu", add_relu()),
                               dict(mod.checked_types), matcher)
    nodes = sum(1 for _ in post_order(mod["main"].body))
    assert matcher.visits <= 8 * nodes
    assert sum(1 for n in post_order(body) if isinstance(n, Function)) == 1000


def test_linear_wide_shared():
    """500 ResNet-like blocks: y = relu(add(x, relu(add(x, x)))) with x used three times."""
    lines = ["def @main(%x: Tensor[(2), float32]) {"]
    prev = "%x"
    for i in range(0, 2000, 4):
        lines += [f"  %{i} = add({prev}, {prev});", f"  %{i + 1} = nn.relu(%{i});",
                  f"  %{i + 2} = add({prev}, %{i + 1});", f"  %{i + 3} = nn.relu(%{i + 2});"]
        prev = f"%{i + 3}"
    lines.append(f"  {prev}\n}}")
    mod = rr.infer_types(rr.parse("\n".join(lines)))
    matcher = Matcher()
    body = partition_composite(mod["main"].body, Support("test", {}),
                               Composite("test.add_relu", add_relu()), {}, matcher)
    assert matcher.visits <= 8 * 2000
    assert sum(1 for n in post_order(body) if isinstance(n, Function)) == 1000
    after = MergeComposite(patterns=[("test.add_relu", add_relu())])(mod)
    assert rr.alpha_equal(rr.parse(rr.astext(after)), after)
