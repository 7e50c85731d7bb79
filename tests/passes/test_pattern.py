"""The dataflow pattern language (relay_ref.passes.pattern): each constructor matches and
fails where it should, attribute and type constraints, alternatives, optional parts,
consistent bindings, commutative matching, sharing (a node used twice is matched and
rewritten once), linear work on a 10 000-node chain (counted matcher visits), a rule table
to a fixpoint; and the passes written in it (SimplifyExpr, SimplifyInference, FuseOps)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem, Var
from relay_ref.ir.types import TensorType
from relay_ref.ops.registry import OpPattern
from relay_ref.passes import fuse_ops, simplify_expr, simplify_inference
from relay_ref.passes.pattern import (
    Match,
    Matcher,
    RewriteStats,
    Rule,
    RuleTable,
    find_matches,
    is_constant,
    is_expr,
    is_op,
    is_op_kind,
    is_tuple,
    is_tuple_get_item,
    is_var,
    match,
    rewrite_fixpoint,
    wildcard,
)
from relay_ref.passes.pattern_utils import op_call


def body(text: str) -> tuple[Expr, dict]:
    """The body of ``@main`` in ``text`` and the module's checked types."""
    mod = rr.infer_types(rr.parse(text))
    return mod.functions["main"].body, mod.checked_types


X = Var("x")
Y = Var("y")
C1 = Constant(np.array(1.0, dtype="float32"))


# -- constructors ------------------------------------------------------------------------

def test_wildcard_matches_anything() -> None:
    for e in (X, C1, op_call("exp", X), Tuple((X, Y)), Op("add")):
        assert match(wildcard(), e) is not None


def test_is_op_and_calls() -> None:
    call = op_call("add", X, Y)
    assert match(is_op("add")(wildcard(), wildcard()), call) is not None
    assert match(is_op("subtract")(wildcard(), wildcard()), call) is None
    assert match(is_op("add")(wildcard()), call) is None  # arity
    assert match(is_op("add").call_any(), call) is not None
    assert match(is_op("add"), call) is None  # the operator, not a call of it
    assert match(is_op("add"), call.op) is not None
    assert match(is_op("zeros")(), op_call("zeros", shape=(2,), dtype="float32")) is not None


def test_is_var_is_constant_is_expr() -> None:
    assert match(is_var(), X) is not None
    assert match(is_var("x"), X) is not None
    assert match(is_var("y"), X) is None
    assert match(is_var(), C1) is None
    assert match(is_constant(), C1) is not None
    assert match(is_constant(), X) is None
    assert match(is_expr(X), X) is not None
    assert match(is_expr(X), Var("x")) is None  # identity, not the name


def test_is_tuple_and_projections() -> None:
    tup = Tuple((X, C1))
    assert match(is_tuple([is_var(), is_constant()]), tup) is not None
    assert match(is_tuple([is_constant(), is_var()]), tup) is None
    assert match(is_tuple([wildcard()]), tup) is None
    assert match(is_tuple(None), tup) is not None
    item = TupleGetItem(Tuple((X, Y)), 1)
    assert match(is_tuple_get_item(is_tuple(None), 1), item) is not None
    assert match(is_tuple_get_item(is_tuple(None), 0), item) is None
    assert match(is_tuple_get_item(wildcard()), item) is not None
    assert match(is_tuple_get_item(wildcard()), tup) is None


def test_bindings_map_pattern_nodes_to_expressions() -> None:
    x, c = wildcard(), is_constant()
    pat = is_op("multiply")(x, c)
    m = match(pat, op_call("multiply", X, C1))
    assert m is not None and m[x] is X and m[c] is C1 and m.expr is m[pat]


def test_a_pattern_node_used_twice_matches_one_expression() -> None:
    x = wildcard()
    square = is_op("multiply")(x, x)
    assert match(square, op_call("multiply", X, X)) is not None
    assert match(square, op_call("multiply", X, Y)) is None


def test_commutative_matching_of_add_and_multiply_only() -> None:
    pat = is_op("add")(is_var(), is_constant())
    assert match(pat, op_call("add", C1, X)) is not None
    assert match(is_op("subtract")(is_var(), is_constant()),
                 op_call("subtract", C1, X)) is None


# -- constraints -------------------------------------------------------------------------

CONV = """
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  nn.relu(nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1]))
}
"""


def test_attribute_constraints() -> None:
    relu, _ = body(CONV)
    conv = relu.args[0]
    base = is_op("nn.conv2d")(wildcard(), wildcard())
    assert match(base.has_attr({"strides": [2, 2]}), conv) is not None
    assert match(base.has_attr({"strides": (2, 2), "groups": 1}), conv) is not None
    assert match(base.has_attr({"strides": [1, 1]}), conv) is None
    assert match(base.has_attr({"no_such_attr": 1}), conv) is None
    # on an operator, registry fields (TVM's TOpPattern)
    kind = is_op("nn.conv2d").has_attr({"TOpPattern": OpPattern.OUT_ELEMWISE_FUSABLE})
    assert match(kind(wildcard(), wildcard()), conv) is not None
    assert match(is_op("nn.relu").has_attr({"TOpPattern": OpPattern.INJECTIVE}),
                 relu.op) is None
    # on a function, its attributes
    fn = rr.parse_expr("fn (%a, Composite=\"x.relu\") { nn.relu(%a) }")
    assert match(wildcard().has_attr({"Composite": "x.relu"}), fn) is not None
    assert match(wildcard().has_attr({"Composite": "x.exp"}), fn) is None


def test_type_constraints() -> None:
    relu, types = body(CONV)
    ty = TensorType((1, 4, 4, 4), "float32")
    m = Matcher(types.get)
    assert m.match(wildcard().has_type(ty), relu) is not None
    assert m.match(wildcard().has_type(TensorType((1, 4, 4, 4), "int32")), relu) is None
    assert m.match(wildcard().has_dtype("float32"), relu) is not None
    assert m.match(wildcard().has_dtype("float16"), relu) is None
    assert m.match(wildcard().has_shape((1, 4, 4, 4)), relu) is not None
    assert m.match(wildcard().has_shape([1, 4, 8, 8]), relu) is None
    assert match(wildcard().has_dtype("float32"), relu) is None  # no types known: fails
    x = wildcard()
    pat = is_op("nn.relu")(is_op("nn.conv2d")(x.has_shape((1, 3, 8, 8)), wildcard()))
    assert m.match(pat, relu) is not None


def test_op_kind_patterns() -> None:
    relu, _ = body(CONV)
    assert match(is_op_kind(OpPattern.ELEMWISE)(wildcard()), relu) is not None
    assert match(is_op_kind(OpPattern.BROADCAST, OpPattern.INJECTIVE)(wildcard()),
                 relu) is None
    assert match(is_op_kind(OpPattern.OUT_ELEMWISE_FUSABLE).call_any(), relu.args[0])


# -- alternatives and optional parts ------------------------------------------------------

def test_alternatives() -> None:
    act = is_op("nn.relu")(wildcard()) | is_op("sigmoid")(wildcard())
    assert match(act, op_call("nn.relu", X)) is not None
    assert match(act, op_call("sigmoid", X)) is not None
    assert match(act, op_call("tanh", X)) is None


def test_alternatives_backtrack_into_later_constraints() -> None:
    # the first alternative matches locally, but the shared ``x`` then fails: the second
    # one is tried (TVM commits to the first)
    x = wildcard()
    pat = is_tuple([is_var() | is_op("exp")(x), x])
    tup = Tuple((op_call("exp", Y), Y))
    m = match(pat, tup)
    assert m is not None and m[x] is Y
    # and a predicate reading another binding picks the commuted argument order
    a, b = wildcard(), wildcard()
    pat2 = is_op("add")(a, b).where(lambda e, m: isinstance(m[a], Constant))
    m2 = match(pat2, op_call("add", X, C1))
    assert m2 is not None and m2[a] is C1 and m2[b] is X


def test_optional() -> None:
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    pat = conv.optional(lambda p: is_op("nn.relu")(p))
    relu, _ = body(CONV)
    assert match(pat, relu) is not None  # conv2d followed by relu
    assert match(pat, relu.args[0]) is not None  # conv2d alone
    assert match(pat, op_call("nn.relu", X)) is None  # relu of something else
    # chained options: conv2d, then optionally bias_add, then optionally relu
    chain = conv.optional(lambda p: is_op("nn.bias_add")(p, wildcard())).optional(
        lambda p: is_op("nn.relu")(p))
    text = """
    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
              %b: Tensor[(4), float32]) {
      nn.relu(nn.bias_add(nn.conv2d(%x, %w), %b))
    }
    """
    e, _ = body(text)
    assert match(chain, e) is not None and match(chain, e.args[0]) is not None
    assert match(chain, op_call("nn.relu", op_call("nn.relu", X))) is None


def test_find_matches_visits_each_node_once() -> None:
    e, _ = body("""
    def @main(%x: Tensor[(4), float32]) {
      %0 = nn.relu(%x);
      %1 = nn.relu(%0);
      add(%1, %1)
    }
    """)
    found = find_matches(is_op("nn.relu")(wildcard()), e)
    assert len(found) == 2


# -- rule tables and the driver -------------------------------------------------------------

_A = wildcard()
_ADD_ZERO = Rule("x + 0 -> x", is_op("add")(_A, is_constant().where(
    lambda e, m: bool(np.all(e.data == 0)))), lambda m: m[_A])
_N = wildcard()
_NEG_NEG = Rule("-(-x) -> x", is_op("negative")(is_op("negative")(_N)), lambda m: m[_N])
_P, _Q = wildcard(), wildcard()
_NEG_ADD = Rule("-(p + q) -> -p + -q", is_op("negative")(is_op("add")(_P, _Q)),
                lambda m: op_call("add", op_call("negative", m[_P]),
                                  op_call("negative", m[_Q])))


def test_a_shared_node_is_matched_and_rewritten_once() -> None:
    e, _ = body("""
    def @main(%x: Tensor[(4), float32]) {
      %0 = add(%x, 0f);
      multiply(%0, %0)
    }
    """)
    stats = RewriteStats()
    out = rewrite_fixpoint(e, [_ADD_ZERO], stats=stats)
    assert stats.fired == {"x + 0 -> x": 1}
    assert isinstance(out, Call) and out.args[0] is out.args[1] and isinstance(out.args[0], Var)
    assert stats.nodes == 5 + 4  # two sweeps: 5 distinct nodes, then 4 (the second: no change)


def _chain(n: int) -> Expr:
    e: Expr = X
    for _ in range(n):
        e = op_call("negative", e)
    return e


@pytest.mark.parametrize("n", [5_000, 10_000])
def test_a_long_chain_is_rewritten_in_linear_work(n: int) -> None:
    stats = RewriteStats()
    out = rewrite_fixpoint(_chain(n), RuleTable((_ADD_ZERO, _NEG_NEG)), stats=stats)
    assert out is X  # an even number of negations
    # one rule is a candidate at each call (the table is indexed by root op); each try
    # visits at most the pattern's 3 nodes; at most two sweeps over n + 1 nodes
    assert stats.sweeps == 2
    assert stats.nodes <= 2 * (n + 1)
    assert stats.visits <= 4 * (n + 1)
    assert stats.fired["-(-x) -> x"] == n // 2


def test_a_long_shared_graph_is_linear() -> None:
    # every node used twice: the number of paths is 2^n, the work stays linear
    e: Expr = X
    n = 10_000
    for _ in range(n):
        e = op_call("add", op_call("negative", op_call("negative", e)), e)
    stats = RewriteStats()
    out = rewrite_fixpoint(e, [_NEG_NEG, _ADD_ZERO], stats=stats)
    assert stats.fired["-(-x) -> x"] == n
    # sweep 1: 3n calls + their 3n operators + x; sweep 2: n adds + n operators + x
    assert stats.nodes == 8 * n + 2
    assert stats.visits <= 4 * stats.nodes
    assert isinstance(out, Call) and out.args[0] is out.args[1]


def test_rule_table_rewrites_to_a_fixpoint() -> None:
    # -(-x + y): the first sweep pushes the negation in, building -(-x), which only the
    # next sweep sees
    e = op_call("negative", op_call("add", op_call("negative", X), Y))
    stats = RewriteStats()
    out = rewrite_fixpoint(e, [_NEG_NEG, _NEG_ADD], stats=stats)
    want = op_call("add", X, op_call("negative", Y))
    assert rr.alpha_equal(out, want)
    assert stats.sweeps == 3  # two that change, one that finds nothing left
    again = RewriteStats()
    assert rewrite_fixpoint(out, [_NEG_NEG, _NEG_ADD], stats=again) is out
    assert again.fired == {}


def test_rewrite_result_evaluates_like_the_original() -> None:
    text = """
    def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
      negative(add(negative(add(%x, 0f)), negative(negative(%y))))
    }
    """
    mod = rr.infer_types(rr.parse(text))
    fn = mod.functions["main"]
    new_body = rewrite_fixpoint(fn.body, [_ADD_ZERO, _NEG_NEG, _NEG_ADD])
    new_mod = rr.parse(text)
    new_mod.functions["main"] = type(fn)(fn.params, new_body, fn.ret_type)
    x = np.array([1.0, -2.0, 3.5], dtype="float32")
    y = np.array([0.5, 4.0, -1.0], dtype="float32")
    np.testing.assert_allclose(rr.evaluate(new_mod, x, y), rr.evaluate(mod, x, y))
    np.testing.assert_allclose(rr.evaluate(new_mod, x, y), -(-x + y))


# -- the passes written in the language ---------------------------------------------------

@pytest.mark.parametrize("table", [simplify_expr.RULES, simplify_inference.RULES])
def test_pass_rule_tables_are_rule_tables(table: RuleTable) -> None:
    assert isinstance(table, RuleTable) and table.rules
    assert all(isinstance(r, Rule) and r.doc and "->" in r.doc for r in table.rules)


def test_simplify_expr_commutative_identity_checks_types() -> None:
    # 0 + x where 0 is the larger operand: only the x of the call's type may be kept
    text = """
    def @main(%x: Tensor[(2, 2), float32]) {
      add(zeros(shape=[2, 2], dtype="float32"), 0f)
    }
    """
    out = rr.optimize(rr.parse(text), ["SimplifyExpr"])
    assert "add" not in rr.astext(out) and "zeros" in rr.astext(out)
    text2 = """
    def @main(%x: float32) -> Tensor[(2, 2), float32] {
      add(0f, zeros(shape=[2, 2], dtype="float32"))
    }
    """
    out2 = rr.optimize(rr.parse(text2), ["SimplifyExpr"])
    assert "add" not in rr.astext(out2)
    assert rr.infer_types(out2).functions["main"].ret_type == TensorType((2, 2), "float32")


def test_fuse_rules_table_is_unambiguous() -> None:
    for phase in range(3):
        for kind in OpPattern:
            rules = [r for r in fuse_ops.FUSE_RULES
                     if phase in r.phases and kind in r.producer]
            assert len(rules) <= 1, (phase, kind)
    assert all(r.doc for r in fuse_ops.FUSE_RULES + fuse_ops.NODE_KINDS)


def test_fuse_node_kinds() -> None:
    e, types = body("""
    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = (exp(%x), reshape(%x, newshape=[3, 2]));
      (%0.0, add(%0.1, 1f), sum(%x))
    }
    """)
    m = Matcher(types.get)
    assert fuse_ops.node_kind(e, m) == OpPattern.TUPLE
    proj, add, total = e.fields
    assert fuse_ops.node_kind(proj, m) == OpPattern.INJECTIVE
    assert fuse_ops.node_kind(add, m) == OpPattern.BROADCAST
    assert fuse_ops.node_kind(add.args[1], m) == OpPattern.ELEMWISE  # a scalar constant
    assert fuse_ops.node_kind(total, m) == OpPattern.COMM_REDUCE
    assert fuse_ops.node_kind(X, m) == OpPattern.OPAQUE
    big = Constant(np.zeros((2, 2), dtype="float32"))
    assert fuse_ops.node_kind(big, m) == OpPattern.OPAQUE


def test_match_object_gives_context() -> None:
    seen: list[object] = []
    pat = wildcard().where(lambda e, m: seen.append(m.ctx) or True)
    m = Matcher().match(pat, X, ctx="context")
    assert isinstance(m, Match) and seen == ["context"] and m.ctx == "context"


def test_composite_patterns_for_partitioning() -> None:
    # a BYOC-style composite: conv2d, optional bias_add, then relu or clip (TVM's
    # MergeComposite tables are written this way)
    conv = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"groups": 1})
    biased = conv.optional(lambda p: is_op("nn.bias_add")(p, wildcard()))
    act = is_op("nn.relu")(biased) | is_op("clip")(biased)
    composite = act.has_dtype("float32")
    e, types = body("""
    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
              %b: Tensor[(4), float32], %v: Tensor[(4, 4, 3, 3), float32]) {
      %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w), %b));
      %1 = clip(nn.conv2d(%0, %v), a_min=0f, a_max=6f);
      add(%1, 1f)
    }
    """)
    found = find_matches(composite, e, types.get)
    assert [m.expr.op.name for m in found] == ["nn.relu", "clip"]
    first, second = found
    names = [getattr(v, "name_hint", None) for v in first.inputs()]
    assert names == ["x", "w", "b"]
    assert second.inputs()[0] is first.expr and second.inputs()[1].name_hint == "v"
    assert find_matches(composite, e) == []  # the dtype constraint needs types


def test_inputs_embed_constants_matched_by_is_constant() -> None:
    x, c = wildcard(), is_constant()
    m = match(is_op("add")(x, c), op_call("add", X, C1))
    assert m is not None and m.inputs() == [X]
    m2 = match(is_op("add").call_any(), op_call("add", X, C1))
    assert m2 is not None and m2.inputs() == [X, C1]


def test_misuse_is_a_clear_error_at_once():
    """An unknown operator, a plain tuple where a Rule belongs and a rewrite returning
    something else than an expression are each refused where they are written."""
    with pytest.raises(ValueError, match="unknown operator 'addd'.*did you mean 'add'"):
        is_op("addd")
    with pytest.raises(TypeError, match="must be a Rule"):
        RuleTable((is_op("add")(wildcard(), wildcard()), lambda m: None))
    table = RuleTable((Rule("to five", is_op("negative")(wildcard()), lambda m: 5),))
    x = Var("x", TensorType((2,), "float32"))
    with pytest.raises(TypeError, match="'to five': its rewrite returned int"):
        rewrite_fixpoint(Call(Op("negative"), (x,)), table)


def test_an_operator_pattern_used_twice_matches_two_parsed_occurrences() -> None:
    """The parser makes one ``Op`` per occurrence; an operator pattern bound twice is
    consistent when the names agree (TVM interns operators)."""
    from relay_ref.passes.pattern import is_op, match, wildcard

    relu = is_op("nn.relu")
    pat = is_op("add")(relu(wildcard()), relu(wildcard()))
    fn = rr.parse_expr("fn (%a: Tensor[(2), float32], %b: Tensor[(2), float32]) "
                       "{ add(nn.relu(%a), nn.relu(%b)) }")
    assert match(pat, fn.body) is not None
    other = rr.parse_expr("fn (%a: Tensor[(2), float32], %b: Tensor[(2), float32]) "
                          "{ add(nn.relu(%a), tanh(%b)) }")
    assert match(pat, other.body) is None


def test_a_constant_matched_by_is_expr_is_embedded_not_an_input() -> None:
    from relay_ref.ir.expr import Constant
    from relay_ref.passes.pattern import is_expr, is_op, match, wildcard

    fn = rr.parse_expr("fn (%a: Tensor[(2), float32]) { add(%a, 1f) }")
    const = fn.body.args[1]
    assert isinstance(const, Constant)
    x = wildcard()
    m = match(is_op("add")(x, is_expr(const)), fn.body)
    assert m is not None and m.inputs() == [fn.params[0]]
