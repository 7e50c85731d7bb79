"""FuseOps and DefuseOps: TVM's test_pass_fuse_ops.py (alpha-equal to the programs TVM
expects), the invariants the executor plans from (every operator call in exactly one
Primitive function, Primitive functions only called), values kept on generated programs,
DefuseOps(FuseOps(m)) alpha-equal to m, and the operators' fusion patterns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import relay_ref as rr
from relay_ref.ir.expr import (
    Call,
    Constant,
    Function,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.visitor import free_vars, post_order
from relay_ref.ops.registry import OpPattern, get_op, register_op
from relay_ref.passes import get_pass
from relay_ref.passes.fuse_ops import DefuseOps, FuseOps, is_group, primitive_functions
from relay_ref.testing.check import check_pass
from relay_ref.testing.growth import residual_chain
from relay_ref.testing.programs import programs
from relay_ref.testing.typed_strategies import resnet_like_module

T = "Tensor[(10, 20), float32]"
IMG = "Tensor[(1, 16, 8, 8), float32]"
HALF = "Tensor[(1, 16, 4, 4), float32]"
W3 = "Tensor[(16, 16, 3, 3), float32]"


def fuse(text: str, level: int = 2, **kw: object) -> tuple[rr.IRModule, rr.IRModule]:
    mod = rr.infer_types(rr.parse(text))
    out = rr.infer_types(FuseOps(level, **kw)(mod))
    check_invariants(out)
    return mod, out


def assert_fuses_to(text: str, expected: str, level: int = 2, **kw: object) -> rr.IRModule:
    mod, out = fuse(text, level, **kw)
    want = rr.infer_types(rr.parse(expected))
    assert rr.alpha_equal(out, want), f"got\n{rr.astext(out)}\nwant\n{rr.astext(want)}"
    assert rr.alpha_equal(rr.infer_types(DefuseOps()(out)), mod)
    return out


def check_invariants(mod: rr.IRModule) -> None:
    """The invariants the module docstring of fuse_ops promises."""
    callee_of: dict[int, int] = {}  # id(function literal) -> number of calls of it
    inside: dict[int, int] = {}  # id(op call) -> number of Primitive functions holding it
    for fn in mod.functions.values():
        nodes = list(post_order(fn))
        for node in nodes:
            if isinstance(node, Call) and isinstance(node.op, Function):
                callee_of[id(node.op)] = callee_of.get(id(node.op), 0) + 1
        for node in nodes:
            if isinstance(node, Function) and is_group(node):
                assert callee_of.get(id(node)) == 1, "a Primitive function not only called"
                params = set(map(id, node.params))
                assert {id(v) for v in free_vars(node.body)} <= params
                assert [id(v) for v in free_vars(node)] == []
                for n in post_order(node.body):
                    assert isinstance(n, Call | Tuple | TupleGetItem | Var | Constant | Op), n
                    if isinstance(n, Call):
                        assert isinstance(n.op, Op), "a Primitive body calls only operators"
                        inside[id(n)] = inside.get(id(n), 0) + 1
        # every operator call is inside a Primitive function
        for node in nodes:
            if isinstance(node, Call) and isinstance(node.op, Op):
                assert inside.get(id(node)) == 1, f"{node.op.name} outside the groups"
        # a Primitive function is never a value: only the callee of a call
        for node in nodes:
            kids = list(children(node))
            for i, kid in enumerate(kids):
                if isinstance(kid, Function) and is_group(kid):
                    assert isinstance(node, Call) and i == 0


# -- TVM's test_pass_fuse_ops.py -------------------------------------------------------

def test_fuse_simple() -> None:
    assert_fuses_to(f"def @main(%x: {T}) {{ squeeze(exp(add(%x, 1f))) }}", f"""
def @main(%x: {T}) {{
  %0 = fn (%p: {T}, Primitive=1) -> {T} {{ squeeze(exp(add(%p, 1f))) }};
  %0(%x)
}}""")


def test_conv2d_fuse() -> None:
    before = f"""def @main(%x: {IMG}, %w1: {W3}, %w2: Tensor[(16, 16, 1, 1), float32],
                            %w3: {W3}) {{
  %0 = nn.conv2d(add(%x, 1f), %w1, padding=[1, 1], channels=16, kernel_size=[3, 3]);
  %1 = add(%0, add(1f, %0));
  add(nn.conv2d(%1, %w2, channels=16, kernel_size=[1, 1]),
      nn.conv2d(%1, %w3, padding=[1, 1], channels=16, kernel_size=[3, 3]))
}}"""
    expected = f"""def @main(%x: {IMG}, %w1: {W3}, %w2: Tensor[(16, 16, 1, 1), float32],
                              %w3: {W3}) {{
  %0 = fn (%p0: {IMG}, Primitive=1) -> {IMG} {{ add(%p0, 1f) }};
  %1 = fn (%p01: {IMG}, %p1: {W3}, Primitive=1) -> {IMG} {{
    %2 = nn.conv2d(%p01, %p1, padding=[1, 1], channels=16, kernel_size=[3, 3]);
    add(%2, add(1f, %2))
  }};
  %3 = %1(%0(%x), %w1);
  %4 = fn (%p02: {IMG}, %p11: {W3}, Primitive=1) -> {IMG} {{
    nn.conv2d(%p02, %p11, padding=[1, 1], channels=16, kernel_size=[3, 3])
  }};
  %5 = fn (%p03: {IMG}, %p12: Tensor[(16, 16, 1, 1), float32], %p2: {IMG},
           Primitive=1) -> {IMG} {{
    add(nn.conv2d(%p03, %p12, channels=16, kernel_size=[1, 1]), %p2)
  }};
  %5(%3, %w2, %4(%3, %w3))
}}"""
    assert_fuses_to(before, expected)


CONCAT = f"""def @main(%x: {IMG}) {{
  %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2], padding=[0, 0]);
  %1 = nn.upsampling(%0, scale_h=2f, scale_w=2f);
  BODY
}}"""


def test_concatenate() -> None:
    before = CONCAT.replace("BODY", "add(concatenate((%1, %x), axis=1), 1f)")
    fuse(before, level=0)
    assert_fuses_to(before, f"""def @main(%x: {IMG}) {{
  %0 = fn (%p0: {IMG}, Primitive=1) -> {HALF} {{
    nn.max_pool2d(%p0, pool_size=[2, 2], strides=[2, 2], padding=[0, 0])
  }};
  %1 = fn (%p01: {HALF}, %p1: {IMG}, Primitive=1) -> Tensor[(1, 32, 8, 8), float32] {{
    add(concatenate((nn.upsampling(%p01, scale_h=2f, scale_w=2f), %p1), axis=1), 1f)
  }};
  %1(%0(%x), %x)
}}""")


def test_tuple_root() -> None:
    before = CONCAT.replace("BODY", "(%1, %x)")
    fuse(before, level=0)
    assert_fuses_to(before, f"""def @main(%x: {IMG}) {{
  %0 = fn (%p0: {IMG}, Primitive=1) -> {HALF} {{
    nn.max_pool2d(%p0, pool_size=[2, 2], strides=[2, 2], padding=[0, 0])
  }};
  %1 = fn (%p01: {HALF}, Primitive=1) -> {IMG} {{
    nn.upsampling(%p01, scale_h=2f, scale_w=2f)
  }};
  (%1(%0(%x)), %x)
}}""")


def test_stop_fusion() -> None:
    # stop_fusion is dropped, so DefuseOps gives the program without it
    mod, out = fuse(f"def @main(%x: {T}) {{ exp(annotation.stop_fusion(add(%x, 1f))) }}")
    want = rr.parse(f"""def @main(%x: {T}) {{
  %0 = fn (%p0: {T}, Primitive=1) -> {T} {{ add(%p0, 1f) }};
  %1 = fn (%p01: {T}, Primitive=1) -> {T} {{ exp(%p01) }};
  %1(%0(%x))
}}""")
    assert rr.alpha_equal(out, rr.infer_types(want))


def test_fuse_myia_regression() -> None:
    assert_fuses_to("""def @main(%x: int64, %y: int64) {
  %0 = if (greater(%x, %y)) { fn () { %x } } else { fn () { %y } };
  %0()
}""", """def @main(%x: int64, %y: int64) {
  %0 = fn (%p1: int64, %p2: int64, Primitive=1) -> bool { greater(%p1, %p2) };
  %1 = if (%0(%x, %y)) { fn () { %x } } else { fn () { %y } };
  %1()
}""")


def test_fuse_tuple_get_elemwise() -> None:
    head = "def @main(%X: Tensor[(1, 10), float32], %W: Tensor[(30, 10), float32]) {"
    before = head + """
  %0 = split(nn.dense(%X, %W), indices_or_sections=3, axis=1);
  add(sigmoid(%0.0), multiply(tanh(%0.1), exp(%0.2)))
}"""
    fuse(before, level=0)
    assert_fuses_to(before, head + """
  %0 = fn (%p0: Tensor[(1, 10), float32], %p1: Tensor[(30, 10), float32],
           Primitive=1) -> Tensor[(1, 30), float32] { nn.dense(%p0, %p1) };
  %1 = fn (%p01: Tensor[(1, 30), float32], Primitive=1) -> Tensor[(1, 10), float32] {
    %2 = split(%p01, indices_or_sections=3, axis=1);
    add(sigmoid(%2.0), multiply(tanh(%2.1), exp(%2.2)))
  };
  %1(%0(%X, %W))
}""")


def test_tuple_get_root() -> None:
    head = "def @main(%X: Tensor[(1, 30), float32], %W: Tensor[(10, 10), float32]) {"
    assert_fuses_to(head + "nn.dense(split(%X, indices_or_sections=3, axis=1).0, %W) }",
                    head + """
  %0 = fn (%p0: Tensor[(1, 30), float32], Primitive=1) -> Tensor[(1, 10), float32] {
    split(%p0, indices_or_sections=3, axis=1).0
  };
  %1 = fn (%p01: Tensor[(1, 10), float32], %p1: Tensor[(10, 10), float32],
           Primitive=1) -> Tensor[(1, 10), float32] { nn.dense(%p01, %p1) };
  %1(%0(%X), %W)
}""")


def test_tuple_intermediate() -> None:
    body = """
  %0 = squeeze(%x);
  %1 = add(%0, 1f);
  %2 = add(add(squeeze(%0), 1f), 1f);
  %3 = add(%0, 1f);
  add(squeeze(concatenate((%1, %2, %3), axis=1)), 1f)"""
    head = "def @main(%x: Tensor[(1, 16, 8, 8), float32]) {"
    out_t = "Tensor[(16, 24, 8), float32]"
    assert_fuses_to(head + body + "}", head + f"""
  %9 = fn (%x: Tensor[(1, 16, 8, 8), float32], Primitive=1) -> {out_t} {{ {body} }};
  %9(%x)
}}""")


def _consecutive_tuples(x: str) -> tuple[list[str], str]:
    """TVM's gen_consecutive_tuple: three (add x3 -> concatenate -> add) blocks of ``x``
    concatenated; graph bindings %10.. and the final expression."""
    lines, outs, n = [], [], 10
    for _ in range(3):
        a, b, c, d = n, n + 1, n + 2, n + 3
        n += 4
        lines += [f"%{a} = add({x}, 1f);", f"%{b} = add({x}, 1f);", f"%{c} = add({x}, 1f);",
                  f"%{d} = add(concatenate((%{a}, %{b}, %{c}), axis=1), 1f);"]
        outs.append(f"%{d}")
    return lines, f"concatenate(({', '.join(outs)}), axis=1)"


def test_tuple_consecutive() -> None:
    """Three intermediate tuples feeding a fourth concatenate fuse into one group with
    everything before them; max_pool2d takes the add after it."""
    big, small = "Tensor[(1, 144, 8, 8), float32]", "Tensor[(1, 144, 4, 4), float32]"
    pool = "nn.max_pool2d({}, pool_size=[2, 2], strides=[2, 2], padding=[0, 0])"
    lines, concat = _consecutive_tuples("%x")
    before = "\n".join([f"def @main(%x: {IMG}) {{", *lines, f"%0 = {concat};",
                         f"%1 = add({pool.format('%0')}, 1f);", "(%1, add(%1, 1f))", "}"])
    lines, concat = _consecutive_tuples("%p")
    expected = "\n".join([
        f"def @main(%x: {IMG}) {{",
        f"%0 = fn (%p: {IMG}, Primitive=1) -> {big} {{", *lines, concat, "};",
        f"%1 = fn (%p01: {big}, Primitive=1) -> {small} {{ add({pool.format('%p01')}, 1f) }};",
        f"%2 = fn (%p02: {small}, Primitive=1) -> {small} {{ add(%p02, 1f) }};",
        "%3 = %1(%0(%x));", "(%3, %2(%3))", "}"])
    fuse(before, level=0)
    assert_fuses_to(before, expected)


def _conv_relu(x: str, w: str) -> str:
    return f"nn.relu(nn.conv2d({x}, {w}, padding=[1, 1], channels=16, kernel_size=[3, 3]))"


def test_inception_like() -> None:
    big = "Tensor[(1, 32, 8, 8), float32]"
    w_big = "Tensor[(16, 32, 3, 3), float32]"
    before = f"""def @main(%x: {IMG}, %w1: {W3}, %w2: {W3}, %w3: {w_big}, %w4: {w_big}) {{
  %0 = concatenate(({_conv_relu('%x', '%w1')}, {_conv_relu('%x', '%w2')}), axis=1);
  concatenate(({_conv_relu('%0', '%w3')}, {_conv_relu('%0', '%w4')}), axis=1)
}}"""

    def conv_fn(n: int, t: str, w: str) -> str:
        return (f"%{n} = fn (%a{n}: {t}, %b{n}: {w}, Primitive=1) -> {IMG} "
                f"{{ {_conv_relu(f'%a{n}', f'%b{n}')} }};")

    def concat_fn(n: int) -> str:
        return (f"%{n} = fn (%a{n}: {IMG}, %b{n}: {IMG}, Primitive=1) -> {big} "
                f"{{ concatenate((%a{n}, %b{n}), axis=1) }};")

    expected = f"""def @main(%x: {IMG}, %w1: {W3}, %w2: {W3}, %w3: {w_big}, %w4: {w_big}) {{
  {conv_fn(0, IMG, W3)} {conv_fn(1, IMG, W3)} {concat_fn(2)}
  {conv_fn(3, big, w_big)} {conv_fn(4, big, w_big)} {concat_fn(5)}
  %6 = %2(%0(%x, %w1), %1(%x, %w2));
  %5(%3(%6, %w3), %4(%6, %w4))
}}"""
    fuse(before, level=0)
    assert_fuses_to(before, expected)


def test_fuse_parallel_injective() -> None:
    assert_fuses_to(f"""def @main(%x: {T}) {{
  %0 = add(%x, 1f);
  left_shift(squeeze(%0), transpose(%0, axes=[0, 1]))
}}""".replace(T, "Tensor[(10, 20), int32]").replace("1f", "1"), """
def @main(%x: Tensor[(10, 20), int32]) {
  %0 = fn (%p: Tensor[(10, 20), int32], Primitive=1) -> Tensor[(10, 20), int32] {
    %1 = add(%p, 1);
    left_shift(squeeze(%1), transpose(%1, axes=[0, 1]))
  };
  %0(%x)
}""")


def test_immutable() -> None:
    mod = rr.infer_types(rr.parse(f"def @main(%x: {T}) {{ squeeze(exp(add(%x, 1f))) }}"))
    text = rr.astext(mod)
    FuseOps()(mod)
    assert rr.astext(mod) == text


def test_split_with_refs_is_well_formed() -> None:
    mod, out = fuse("""def @main(%x: Tensor[(6, 9), float32]) {
  %0 = split(%x, indices_or_sections=3);
  add(add(%0.0, ref_read(ref(%0.1))), %0.2)
}""")
    x = np.arange(54, dtype="float32").reshape(6, 9)
    np.testing.assert_array_equal(rr.evaluate(out, x), rr.evaluate(mod, x))


def _chain(n: int) -> str:
    body = "%x"
    for _ in range(n):
        body = f"exp({body})"
    return body


@pytest.mark.parametrize(("n", "depth"), [(300, 256), (20, 10)])
def test_fuse_max(n: int, depth: int) -> None:
    kw = {} if depth == 256 else {"max_depth": depth}
    mod, out = fuse(f"def @main(%x: {T}) {{ {_chain(n)} }}", **kw)
    expected = f"""def @main(%x: {T}) {{
  %0 = fn (%p: {T}, Primitive=1) -> {T} {{ {_chain(depth).replace('%x', '%p')} }};
  %1 = fn (%pp: {T}, Primitive=1) -> {T} {{ {_chain(n - depth).replace('%x', '%pp')} }};
  %1(%0(%x))
}}"""
    assert rr.alpha_equal(out, rr.infer_types(rr.parse(expected)))


@pytest.mark.parametrize("link_params", [False, True])
def test_fuse_take(link_params: bool) -> None:
    t = "Tensor[(10, 1), float32]"
    before = f"def @main(%x: {t}) {{ take(concatenate((%x, %x), axis=-1), %i) }}"
    indices = Constant(np.array([0], "int64"))

    def with_indices(text: str) -> rr.IRModule:
        mod = rr.parse(text.replace("def @main(", "def @main(%i: Tensor[(1,), int64], "))
        fn = mod["main"]
        from relay_ref.passes.rewrite import rewrite

        body = rewrite(fn.body, lambda n: indices if n is fn.params[0] else None)
        return rr.infer_types(mod.with_function("main", Function(fn.params[1:], body)))

    mod = with_indices(before)
    out = rr.infer_types(FuseOps(link_params=link_params)(mod))
    check_invariants(out)
    if link_params:
        expected = f"""def @main(%x: {t}) {{
  %0 = fn (%p0: {t}, Primitive=1) -> Tensor[(1), float32] {{
    take(concatenate((%p0, %p0), axis=-1), %i)
  }};
  %0(%x)
}}"""
    else:
        expected = f"""def @main(%x: {t}) {{
  %0 = fn (%p0: {t}, %p1: Tensor[(1), int64], Primitive=1) -> Tensor[(1), float32] {{
    take(concatenate((%p0, %p0), axis=-1), %p1)
  }};
  %0(%x, %i)
}}"""
    assert rr.alpha_equal(out, with_indices(expected)), rr.astext(out)
    x = np.arange(10, dtype="float32").reshape(10, 1)
    np.testing.assert_array_equal(rr.evaluate(out, x), rr.evaluate(mod, x))


def test_fuse_bcast_reduce_scalar() -> None:
    assert_fuses_to("def @main(%x: int32) { min(less(%x, 10)) }", """def @main(%x: int32) {
  %0 = fn (%p0: int32, Primitive=1) -> bool { min(less(%p0, 10)) };
  %0(%x)
}""")


def _diamond(x: str, n: int) -> str:
    return f"add({_chain(n).replace('%x', x)}, {_chain(n).replace('%x', x)})"


def test_fuse_max_diamond() -> None:
    """Diamonds of 2 * 5 + 1 ops with max_depth 11: one group per diamond."""
    src = f"def @main(%x: {T}) {{\n  %0 = {_diamond('%x', 5)};\n"
    src += f"  %1 = {_diamond('%0', 5)};\n  {_diamond('%1', 5)}\n}}"
    fn = f"fn (%p: {T}, Primitive=1) -> {T} {{ {_diamond('%p', 5)} }}"
    expected = f"def @main(%x: {T}) {{\n  %0 = {fn};\n  %1 = {fn};\n  %2 = {fn};\n"
    expected += "  %2(%1(%0(%x)))\n}"
    assert_fuses_to(src, expected, max_depth=11)


def test_fuse_softmax() -> None:
    t = "Tensor[(16, 16), float32]"
    assert_fuses_to(f'def @main(%x: {t}) {{ cast(nn.softmax(%x), dtype="float16") }}', f"""
def @main(%x: {t}) {{
  %0 = fn (%p0: {t}, Primitive=1) -> Tensor[(16, 16), float16] {{
    cast(nn.softmax(%p0), dtype="float16")
  }};
  %0(%x)
}}""")


# -- invariants, levels, the report -----------------------------------------------------

def test_level_0_puts_every_operator_call_in_its_own_group() -> None:
    mod, out = fuse(f"def @main(%x: {T}) {{ squeeze(exp(add(%x, 1f))) }}", level=0)
    groups = primitive_functions(out)
    assert len(groups) == 3
    assert all(sum(isinstance(n, Call) for n in post_order(g.body)) == 1 for g in groups)


def test_groups_of_a_resnet_are_reported_and_evaluate() -> None:
    mod = rr.infer_types(resnet_like_module(blocks=(1, 1), image=16))
    pipeline = [get_pass(n) for n in ("SimplifyInference", "FoldScaleAxis")]
    for p in pipeline:
        mod = rr.infer_types(p(mod))
    out = rr.infer_types(FuseOps()(mod))
    check_invariants(out)
    groups = primitive_functions(out)
    convs = [g for g in groups if any(isinstance(n, Call) and n.op.name == "nn.conv2d"
                                      for n in post_order(g.body))]
    n_convs = sum(1 for n in post_order(mod["main"])
                  if isinstance(n, Call) and n.op.name == "nn.conv2d")
    assert len(convs) == n_convs == 9  # one group per convolution, with its shift and relu
    assert all(any(isinstance(n, Call) and n.op.name == "nn.relu" for n in post_order(g.body))
               for g in convs[:2])
    total_ops = sum(1 for n in post_order(mod["main"]) if isinstance(n, Call))
    fused_ops = sum(sum(isinstance(n, Call) for n in post_order(g.body)) for g in groups)
    assert total_ops == fused_ops  # every operator call is in exactly one group
    rng = np.random.default_rng(0)
    args = [rng.uniform(0.5, 1, p.type_annotation.shape).astype("float32")
            for p in mod["main"].params]
    np.testing.assert_allclose(rr.evaluate(out, *args), rr.evaluate(mod, *args), rtol=1e-5)
    assert rr.alpha_equal(rr.infer_types(DefuseOps()(out)), mod)


def test_operator_values_and_lets_keep_the_invariants() -> None:
    mod, out = fuse("""def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) {
  let %f = add;
  let %z = reshape(%x, newshape=[3, 2]);
  (%f(%x, %y), %z)
}""")
    text = rr.astext(out)
    assert "relay.reshape_only=1" in text
    x, y = np.ones((2, 3), "float32"), np.arange(3, dtype="float32")
    want, got = rr.evaluate(mod, x, y), rr.evaluate(out, x, y)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g, w)


def test_fuse_ops_is_idempotent_and_infers_types() -> None:
    mod = rr.parse(f"def @main(%x: {T}) {{ squeeze(exp(add(%x, 1f))) }}")
    once = rr.infer_types(FuseOps()(mod))  # not checked: the pass checks it
    twice = rr.infer_types(FuseOps()(once))
    assert rr.alpha_equal(once, twice)
    assert get_pass("FuseOps").opt_level == 0


@settings(max_examples=40, deadline=None)
@given(mod=programs())
def test_generated_programs_fuse_with_the_invariants_and_defuse_back(mod) -> None:
    mod = rr.infer_types(mod)
    out = rr.infer_types(FuseOps()(mod))
    check_invariants(out)
    text = rr.astext(mod)
    if "annotation.stop_fusion" not in text and not _has_operator_value(mod):
        assert rr.alpha_equal(rr.infer_types(DefuseOps()(out)), mod), rr.astext(out)


def _has_operator_value(mod: rr.IRModule) -> bool:
    callees = set()
    ops = []
    for fn in mod.functions.values():
        for n in post_order(fn):
            if isinstance(n, Call):
                callees.add(id(n.op))
            if isinstance(n, Op):
                ops.append(n)
    return any(id(op) not in callees for op in ops)


@pytest.mark.parametrize("level", [0, 2])
def test_generated_programs_keep_their_values(level: int) -> None:
    check_pass(FuseOps(level), examples=60)
    check_pass(lambda m: DefuseOps()(FuseOps(level)(m)), examples=30)


def test_residual_chain_fuses_each_block() -> None:
    mod, out = fuse(residual_chain(20))
    x = np.linspace(-1, 1, 8, dtype="float32")
    np.testing.assert_allclose(rr.evaluate(out, x), rr.evaluate(mod, x), rtol=1e-6)
    assert rr.alpha_equal(rr.infer_types(DefuseOps()(out)), mod)


# -- operator patterns ------------------------------------------------------------------

@pytest.mark.parametrize(("name", "pattern"), [
    ("add", OpPattern.BROADCAST), ("exp", OpPattern.ELEMWISE), ("nn.relu", OpPattern.ELEMWISE),
    ("reshape", OpPattern.INJECTIVE), ("concatenate", OpPattern.INJECTIVE),
    ("expand_dims", OpPattern.BROADCAST), ("sum", OpPattern.COMM_REDUCE),
    ("nn.conv2d", OpPattern.OUT_ELEMWISE_FUSABLE), ("nn.dense", OpPattern.OUT_ELEMWISE_FUSABLE),
    ("nn.softmax", OpPattern.OUT_ELEMWISE_FUSABLE),
    ("nn.batch_norm", OpPattern.OUT_ELEMWISE_FUSABLE),
    ("nn.layer_norm", OpPattern.OPAQUE), ("argsort", OpPattern.OPAQUE),
    ("annotation.stop_fusion", OpPattern.OPAQUE), ("take", OpPattern.INJECTIVE),
    ("zeros", OpPattern.ELEMWISE), ("layout_transform", OpPattern.INJECTIVE),
])
def test_builtin_patterns_are_tvms(name: str, pattern: OpPattern) -> None:
    assert get_op(name).op_pattern == pattern


def test_a_user_op_declares_its_pattern_or_is_opaque() -> None:
    from relay_ref.ops import registry
    from relay_ref.ops.relations import identity_rel

    names = ("test.fuse_ewise", "test.fuse_opaque")
    try:
        for name, pattern in zip(names, (OpPattern.ELEMWISE, None), strict=True):
            extra = {} if pattern is None else {"op_pattern": pattern}
            register_op(name, num_inputs=1, relation=identity_rel(name),
                        reference=lambda args, attrs: np.negative(args[0]), override=True,
                        **extra)
        assert get_op("test.fuse_opaque").op_pattern == OpPattern.OPAQUE
        _, out = fuse(f"def @main(%x: {T}) {{ test.fuse_opaque(exp(test.fuse_ewise(%x))) }}")
        assert sorted(len([n for n in post_order(g.body) if isinstance(n, Call)])
                      for g in primitive_functions(out)) == [1, 2]
    finally:  # other tests enumerate the registry (the program generator's op table)
        for name in names:
            registry._REGISTRY.pop(name, None)


@pytest.mark.parametrize(("options", "error", "words"), [
    ({"max_depth": 0}, ValueError, "max_depth must be at least 1"),
    ({"max_depth": -1}, ValueError, "max_depth must be at least 1"),
    ({"fuse_opt_level": -7}, ValueError, "fuse_opt_level must be 0"),
    ({"fuse_opt_level": 5}, ValueError, "fuse_opt_level must be 0"),
    ({"max_depth": 2.5}, TypeError, "max_depth must be an int"),
    ({"fuse_opt_level": True}, TypeError, "fuse_opt_level must be an int"),
    ({"link_params": 1}, TypeError, "link_params must be True or False"),
])
def test_fuse_ops_options_are_range_checked(options, error, words):
    with pytest.raises(error, match=words):
        FuseOps(**options)
    spec = f"FuseOps({', '.join(f'{k}={v!r}' for k, v in options.items())})"
    if error is TypeError:
        return  # through a spec, the manager's kind check speaks first
    with pytest.raises(ValueError, match=words) as info:  # PassSpecError: located
        rr.optimize(rr.parse("def @main(%x: float32) { %x }"), spec)
    key = next(iter(options))
    assert spec[info.value.start:info.value.end].startswith(key)


def test_fuse_ops_option_bounds_are_accepted():
    for level in range(5):
        assert FuseOps(fuse_opt_level=level, max_depth=1).max_depth == 1
