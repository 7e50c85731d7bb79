"""relay_ref.syntax.short_text: the one-line summaries traces and derivations share.

Exact text for small cases: leaves in full at any depth, nullary constructors as the
printer writes them, elisions that never garble (``...(..., ...)``, ``......``), type
arguments and (on request) attributes, shared nodes by their printed ``%N`` names; and
the cost bound (a summary of a huge expression is short and never raises)."""

from __future__ import annotations

import relay_ref as rr
from relay_ref.ir.expr import Call, Op, Tuple, Var
from relay_ref.syntax.short_text import graph_names, pattern_text, short_text
from relay_ref.testing.growth import residual_chain

TREE = """
type Tree[A] { Leaf, Node(Tree[A], A, Tree[A]), }
def @main() {
  let %t = Node(Node(Leaf, 1, Leaf), 2, Node(Leaf, 3, Node(Leaf, 4, Leaf)));
  %t
}
"""


def test_nullary_constructors_and_leaves_at_depth() -> None:
    fn = rr.parse(TREE).functions["main"]
    assert short_text(fn.body.value, 200) == \
        "Node(Node(Leaf, 1, Leaf), 2, Node(Leaf, 3, Node(Leaf, 4, Leaf)))"
    assert short_text(fn, 60) == "fn () { let %t = Node(Node(Leaf, 1, Leaf), 2, Node(Leaf, ..."


def test_elisions_do_not_garble() -> None:
    e = rr.parse_expr("add(add(add(add(add(add(1, 2), 3), 4), 5), 6), 7)")
    assert short_text(e) == "((((... + 3) + 4) + 5) + 6) + 7"
    cut = short_text(e, 9)
    assert cut == "((((..." and "...." not in cut
    assert short_text(e, 8, cut="…") == "((((…"


def test_type_arguments_and_attributes() -> None:
    mod = rr.parse("def @id[T](%x: T) -> T { %x }\ndef @main() { @id[int32](3) }")
    assert short_text(mod.functions["main"].body) == "@id[int32](3)"
    e = rr.parse_expr("fn (%x: Tensor[(2, 5), float32]) { reshape(%x, newshape=[10]) }").body
    assert short_text(e) == "reshape(%x, newshape=[10])"  # attributes are shown ...
    assert short_text(e, attrs=False) == "reshape(%x)"  # ... unless asked not to
    ones = rr.parse_expr('ones(shape=[3], dtype="float32")')
    assert short_text(ones, attrs=True) == 'ones(shape=[3], dtype="float32")'


def test_shared_nodes_by_their_printed_names() -> None:
    mod = rr.parse(residual_chain(3))
    fn = mod.functions["main"]
    names = graph_names(mod)
    printed = rr.astext(mod)
    assert names and all(f"{n} = " in printed for n in names.values())
    text = short_text(fn.body, names=names)
    assert text.startswith("%") and " + nn.relu(%" in text and "..." not in text
    shared = next(e for e in _nodes(fn.body) if id(e) in names)
    assert short_text(shared, names=names).startswith(f"{names[id(shared)]} = ")


def _nodes(e):
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Call):
            stack.extend(node.args)


def test_patterns_and_none() -> None:
    fn = rr.parse("def @main(%l: List[int32]) { match (%l) { Cons(%h, Nil) => %h, "
                  "_ => 0 } }").functions["main"]
    assert [pattern_text(c.lhs) for c in fn.body.clauses] == ["Cons(%h, Nil)", "_"]
    assert short_text(fn.body.clauses[0].lhs) == "Cons(%h, Nil)"
    assert short_text(None) == "(host call)"


def test_bounded_and_never_raises() -> None:
    wide = Tuple(tuple(Var(f"v{i}") for i in range(100_000)))
    assert len(short_text(wide)) == 70

    class Bad:
        def __format__(self, spec: str) -> str:
            raise ValueError("no text")

    assert short_text(Call(Op("f"), (Var(Bad()),))) == "Call"  # type: ignore[arg-type]
