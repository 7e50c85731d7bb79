"""Typing derivations (relay_ref.typecheck.derive; issue 14 item 1).

Golden trees: each ``derivations/NAME.relay`` derives (``@main``) to exactly the text in
``derivations/NAME.txt`` (regenerate by hand and read the diff: the text is the teaching
output). Then: "not yet" relation runs, T-Shared with the printer's %N names, what each
hole was bound to and where, explicit type arguments, attributes in T-Rel runs, errors of
other globals kept apart, elision past a depth and a node count, node counts and text
linear in the program on a 3 000-block residual chain, a doubling chain and a deep let chain
(no timing, no RecursionError), HTML (anchors per render), colour, and that deriving finds
the same types and errors as the checker.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref.testing.growth import doubling_chain, let_residual_chain, residual_chain
from relay_ref.typecheck.derive import (
    MAX_INDENT,
    HoleNote,
    derive,
    derive_expr,
    render_html,
    render_text,
)

HERE = Path(__file__).parent / "derivations"
GOLDEN = sorted(p.stem for p in HERE.glob("*.relay"))


def _derive(text: str, name: str = "main"):
    return derive(rr.parse(text), name)


def test_golden_programs_exist() -> None:
    assert {"broadcast", "let_fn_call", "match", "poly", "ill_typed", "attrs", "graph_form",
            "explicit_type_arg", "other_global_error", "ill_kinded",
            "identity_holds"} <= set(GOLDEN)


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_derivation(name: str) -> None:
    tree = _derive((HERE / f"{name}.relay").read_text())
    expected = (HERE / f"{name}.txt").read_text().rstrip("\n")
    assert render_text(tree) == expected


def test_broadcast_relation_answer() -> None:
    tree = _derive((HERE / "broadcast.relay").read_text())
    (call,) = [n for n in tree.walk() if n.rule == "T-App-Op"]
    (run,) = call.relations
    assert run.relation == "Broadcast" and run.op == "add"
    assert run.inputs == ("Tensor[(2, 1), float32]", "Tensor[(1, 5), float32]", "?t2")
    assert run.answer == "?t2 := Tensor[(2, 5), float32]"
    assert call.type_text == "Tensor[(2, 5), float32]" and tree.ok


def test_not_yet_then_answer() -> None:
    tree = _derive((HERE / "let_fn_call.relay").read_text())
    answers = [r.answer for n in tree.walk() for r in n.relations]
    assert answers[0].startswith("not yet (waits on ?t2")
    assert answers[-1] == "?t3 := float32"


def test_ill_typed_keeps_the_tree_and_the_error() -> None:
    tree = _derive((HERE / "ill_typed.relay").read_text())
    assert not tree.ok
    assert isinstance(tree.error, rr.RelayTypeError)
    failed = [n for n in tree.walk() if n.errors]
    assert [n.rule for n in failed] == ["T-App-Op"]
    assert failed[0].errors == tuple(d.message for d in tree.error.diagnostics)


def test_unknown_global() -> None:
    with pytest.raises(KeyError, match=r"no global @nope \(its globals: @main\)"):
        _derive("def @main() { 1 }", "nope")


def test_deriving_agrees_with_the_checker() -> None:
    mod = rr.parse((HERE / "let_fn_call.relay").read_text())
    before = rr.infer_types(mod)
    tree = derive(mod, "main")
    after = rr.infer_types(mod)  # the same module object, derived in between
    assert tree.ty == before.global_types["main"] == after.global_types["main"]
    pairs_before = list(before.checked_types.pairs())
    pairs_after = list(after.checked_types.pairs())
    assert len(pairs_before) == len(pairs_after)
    for (e1, t1), (e2, t2) in zip(pairs_before, pairs_after, strict=True):
        assert e1 is e2 and t1 == t2
    # every type the derivation shows is one the checker gave some node
    shown = {n.type_text for n in tree.walk() if n.type_text}
    assert shown <= {rr.astext(t) for _, t in pairs_after} | {"(float32, float32)"}


def test_derive_expr_with_free_variables() -> None:
    fn = rr.parse_expr("fn (%x: Tensor[(2, 1), float32]) { add(%x, 1f) }")
    tree = derive_expr(fn.body, var_types={fn.params[0]: fn.params[0].type_annotation})
    assert render_text(tree).splitlines()[0] == "T-App-Op  %x + 1f : Tensor[(2, 1), float32]"


def test_shared_nodes_are_derived_once() -> None:
    tree = _derive(residual_chain(3))
    shared = [n for n in tree.walk() if n.rule == "T-Shared"]
    assert len(shared) == 2
    targets = {n.index: n for n in tree.walk() if n.shared}
    assert {n.shared_with for n in shared} == set(targets)
    # a shared node is named by the printer's %N, at its derivation and at each later use
    printed = rr.astext(rr.parse(residual_chain(3)))
    for n in shared:
        assert n.expr.startswith("%") and f"  {n.expr} = " in printed
        assert targets[n.shared_with].expr.startswith(f"{n.expr} = ")
    assert "(typed once, see #" in render_text(tree)


def test_elision_past_a_depth_and_a_node_count() -> None:
    tree = _derive((HERE / "let_fn_call.relay").read_text())
    lines = render_text(tree, max_depth=1).splitlines()
    assert lines[-1] == f"    ... {tree.premises[0].size - 1} premise nodes elided " \
                        "(deeper than 1 level)"
    assert render_text(tree, max_nodes=3).splitlines()[-1] == \
        f"... {tree.size - 3} more nodes not shown (at most 3)"


def test_residual_chain_of_3000_blocks_is_linear() -> None:
    n = 3000
    tree = _derive(residual_chain(n))
    assert tree.ok
    # per block: add, nn.relu, the use of the previous block (T-Shared, or %x first)
    assert tree.size == 3 * n + 2
    assert sum(node.rule == "T-Shared" for node in tree.walk()) == n - 1
    full = render_text(tree, max_depth=10 * n, max_nodes=10 * n)
    assert len(full.splitlines()) <= 8 * n
    assert len(full) <= 600 * tree.size  # characters: indentation capped (MAX_INDENT)
    assert len(render_text(tree).splitlines()) < 500  # elided by default
    assert "premise nodes elided" in render_html(tree)


def test_doubling_chain_is_linear_not_exponential() -> None:
    tree = _derive(doubling_chain(60))  # 2**60 paths
    assert tree.size < 60 * 4


def test_deep_let_chain() -> None:
    tree = _derive(let_residual_chain(2000))
    assert tree.ok and tree.size > 2000 * 4
    text = render_text(tree)
    assert "premise nodes elided (deeper than 40 levels)" in text
    assert len(text.splitlines()) < 400
    # in full, 2 000 levels deep: indentation stops at MAX_INDENT, so characters stay
    # linear in the nodes (not quadratic), in text and in HTML
    full = render_text(tree, max_depth=10**6, max_nodes=10**6)
    assert f"[depth {MAX_INDENT + 1}] " in full and "[depth 2000] " in full
    assert len(full) <= 600 * tree.size
    page = render_html(tree, max_depth=10**6, max_nodes=10**6)
    assert len(page) <= 5000 * tree.size  # (each rule link carries its rule's text)
    assert page.count("<details") == page.count("</details>") <= (MAX_INDENT + 1) * 3


def test_html_tree() -> None:
    tree = _derive((HERE / "broadcast.relay").read_text())
    page = render_html(tree)
    assert page.count("<details") == page.count("</details>") == 2
    assert 'data-rule="T-App-Op"' in page  # rule names link to spec/ (relay_ref.rules)
    assert "?t2 := Tensor[(2, 5), float32]" in page


def test_holes_say_what_they_were_bound_to_and_where() -> None:
    tree = _derive((HERE / "let_fn_call.relay").read_text())
    (call,) = [n for n in tree.walk() if n.rule == "T-App-Op"]
    (hole,) = call.holes
    # bound to the literal's return hole by T-Fn; float32 only once the call fixed %x
    assert (hole.bound_to, hole.solution, hole.by) == ("?t3", "float32", "T-Fn at %x * 2f")
    assert str(hole) == "hole ?t4 := ?t3  by T-Fn at %x * 2f (= float32)"
    assert str(HoleNote("?t1", "int32", "T-App at 1", "", "int32")) == \
        "hole ?t1 := int32  by T-App at 1"


def test_a_hole_solved_from_another_global_says_where() -> None:
    tree = _derive("def @g(%x) { %x }\ndef @main() { @g(1) }", "g")
    holes = [h for n in tree.walk() for h in n.holes]
    assert [h.by for h in holes] == ["T-Fn at %x", "T-App at 1 in @main"]


def test_errors_of_other_globals_stay_outside() -> None:
    tree = _derive((HERE / "other_global_error.relay").read_text())
    assert not tree.ok and all(not n.errors for n in tree.walk())
    (line,) = tree.outside
    assert line.startswith("@f: the body does not have the declared return type")
    assert "errors outside this derivation" in render_html(tree)


def test_explicit_type_arguments_and_attributes() -> None:
    tree = _derive((HERE / "explicit_type_arg.relay").read_text())
    (app,) = [n for n in tree.walk() if n.rule == "T-App"]
    assert app.expr == "@id[int32](3)"
    assert app.notes == ("T := int32 (explicit type argument)",) and not app.holes
    tree = _derive((HERE / "attrs.relay").read_text())
    ((run,),) = [n.relations for n in tree.walk() if n.relations]
    assert run.attrs == "newshape=[10]"
    assert run.call_text() == \
        "reshape(Tensor[(2, 5), float32], ?t2; newshape=[10]): ?t2 := Tensor[(10), float32]"


def test_html_anchors_are_per_render_and_link_only_shown_nodes() -> None:
    tree = _derive(residual_chain(3))
    first, second = render_html(tree), render_html(tree)
    ids = re.findall(r"id='(relay-d[0-9]+-)1'", first)
    assert len(ids) == 1 and ids[0] not in second
    assert f"href='#{ids[0]}" in first
    assert "href=" not in render_html(tree, max_depth=1)  # the shared nodes were elided


def test_colour() -> None:
    tree = _derive("def @main() { 1 }")
    assert render_text(tree, colour=True).splitlines()[0].startswith(
        "\x1b[1;35mT-Fn\x1b[0m  @main = fn () { 1 }")
    assert "\x1b" not in render_text(tree)
