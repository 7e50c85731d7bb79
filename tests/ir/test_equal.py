"""alpha_equal and structural_hash: properties and graph sharing."""

from __future__ import annotations

import numpy as np
from hypothesis import given

import relay_ref as rr
from relay_ref import parse_expr
from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.prelude import prelude_fallback
from relay_ref.syntax import parser
from relay_ref.testing import strategies


def parse_type(text: str, **kwargs) -> T.Type:
    """A type as the public API resolves it: prelude names (``List``) included."""
    return parser.parse_type(text, fallback=prelude_fallback(), **kwargs)


def test_bound_names_do_not_matter() -> None:
    assert rr.alpha_equal(parse_expr("fn (%x) { %x }"), parse_expr("fn (%y) { %y }"))
    assert rr.alpha_equal(parse_expr("let %a = 1; %a"), parse_expr("let %b = 1; %b"))
    assert rr.alpha_equal(parse_type("fn [A](A) -> A"), parse_type("fn [B](B) -> B"))


def test_structure_matters() -> None:
    assert not rr.alpha_equal(parse_expr("fn (%x, %y) { %x }"), parse_expr("fn (%x, %y) { %y }"))
    assert not rr.alpha_equal(parse_expr("1"), parse_expr("1i64"))
    assert not rr.alpha_equal(parse_expr("1f"), parse_expr("2f"))
    assert not rr.alpha_equal(parse_expr("(1, 2)"), parse_expr("(1, 2, 3)"))
    assert not rr.alpha_equal(parse_type("fn [A, B](A) -> B"), parse_type("fn [A, B](A) -> A"))
    assert not rr.alpha_equal(parse_expr("fn (%x: int32) { %x }"), parse_expr("fn (%x) { %x }"))


def test_free_variables_correspond_one_to_one() -> None:
    x, y = E.Var("x"), E.Var("y")
    assert rr.alpha_equal(E.Tuple((x, x)), E.Tuple((y, y)))
    assert not rr.alpha_equal(E.Tuple((x, y)), E.Tuple((x, x)))


def test_sharing_is_not_observable_and_dags_are_linear() -> None:
    leaf = parse_expr("free_var %x: int32; %x + 1")
    x = leaf.args[0]
    dag = leaf
    for _ in range(200):  # 2**200 paths when unfolded
        dag = E.Tuple((dag, dag))
    tree_side = E.Tuple((E.Tuple((leaf, leaf)), E.Tuple((leaf, leaf))))
    same = E.Tuple((E.Tuple((leaf, leaf)), E.Tuple((leaf, leaf))))
    assert rr.alpha_equal(tree_side, same)
    assert rr.alpha_equal(dag, dag)
    assert rr.structural_hash(dag) == rr.structural_hash(dag)
    unshared = parse_expr("free_var %y: int32; ((%y + 1, %y + 1), (%y + 1, %y + 1))")
    assert rr.alpha_equal(same, unshared) and x is not unshared.fields[0].fields[0].args[0]
    assert rr.structural_hash(same) == rr.structural_hash(unshared)


def test_constants_nan_and_negative_zero() -> None:
    nan1 = E.Constant(np.array(np.nan, "float32"))
    nan2 = E.Constant(np.array(-np.nan, "float32"))
    assert rr.alpha_equal(nan1, nan2)
    assert rr.structural_hash(nan1) == rr.structural_hash(nan2)


def test_function_attributes_are_a_map() -> None:
    """TVM's function attributes are a DictAttrs (printed in hash order): the same items in
    another order are equal (and hash equal); another value, a missing or an extra item,
    are not."""
    a = parse_expr('fn (%x: int32, Compiler="t", Primitive=1, Inline=1) { %x }')
    b = parse_expr('fn (%y: int32, Inline=1, Compiler="t", Primitive=1) { %y }')
    assert a.attrs != b.attrs
    assert rr.alpha_equal(a, b) and rr.alpha_equal(b, a)
    assert rr.structural_hash(a) == rr.structural_hash(b)
    for other in ('fn (%y: int32, Inline=1, Compiler="u", Primitive=1) { %y }',
                  'fn (%y: int32, Inline=1, Compiler="t") { %y }',
                  'fn (%y: int32, Inline=1, Compiler="t", Primitive=1, Extra=2) { %y }',
                  'fn (%y: int32, Inline=1, Compiler="t", Primitive=1, Inline=2) { %y }'):
        assert not rr.alpha_equal(a, parse_expr(other)), other


@given(strategies.modules())
def test_reflexive_and_hash_consistent(mod) -> None:
    assert rr.alpha_equal(mod, mod)
    assert rr.structural_hash(mod) == rr.structural_hash(mod)


@given(strategies.exprs(), strategies.exprs())
def test_equal_implies_equal_hash(a, b) -> None:
    assert rr.alpha_equal(a, b) == rr.alpha_equal(b, a)
    if rr.alpha_equal(a, b):
        assert rr.structural_hash(a) == rr.structural_hash(b)


def test_types_and_modules() -> None:
    assert rr.alpha_equal(T.TensorType((1, T.ANY), "int8"), T.TensorType((1, T.ANY), "int8"))
    assert not rr.alpha_equal(T.TensorType((1,), "int8"), T.TensorType((2,), "int8"))
    m1 = rr.parse("def @f(%x: int32) { %x }")
    m2 = rr.parse("def @f(%y: int32) { %y }")
    m3 = rr.parse("def @g(%y: int32) { %y }")
    assert rr.alpha_equal(m1, m2) and not rr.alpha_equal(m1, m3)
    assert rr.structural_hash(m1) == rr.structural_hash(m2)
