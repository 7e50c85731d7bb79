"""Typing derivations (relay_ref.typecheck.derive; issue 14 item 1).

Golden trees: each ``derivations/NAME.relay`` derives (``@main``) to exactly the text in
``derivations/NAME.txt`` (regenerate by hand and read the diff: the text is the teaching
output). Then: "not yet" relation runs, T-Shared, elision past a depth and a node count,
node counts linear in the program on a 3 000-block residual chain and a doubling chain (no
timing), a deep let chain without RecursionError, HTML, and that deriving finds the same
types and errors as the checker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import relay_ref as rr
from relay_ref.testing.growth import doubling_chain, let_residual_chain, residual_chain
from relay_ref.typecheck.derive import derive, derive_expr, render_html, render_text

HERE = Path(__file__).parent / "derivations"
GOLDEN = sorted(p.stem for p in HERE.glob("*.relay"))


def _derive(text: str, name: str = "main"):
    return derive(rr.parse(text), name)


def test_golden_programs_exist() -> None:
    assert {"broadcast", "let_fn_call", "match", "poly", "ill_typed"} <= set(GOLDEN)


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
    text = (HERE / "let_fn_call.relay").read_text()
    mod = rr.infer_types(rr.parse(text))
    tree = _derive(text)
    assert tree.ty == mod.global_types["main"]
    # the plain checker is unchanged by a derivation made before it
    assert rr.infer_types(rr.parse(text)).global_types == mod.global_types


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
    assert all(targets[n.shared_with].expr == n.expr for n in shared)
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


def test_html_tree() -> None:
    tree = _derive((HERE / "broadcast.relay").read_text())
    page = render_html(tree)
    assert page.count("<details") == page.count("</details>") == 2
    assert 'data-rule="T-App-Op"' in page  # rule names link to spec/ (relay_ref.rules)
    assert "?t2 := Tensor[(2, 5), float32]" in page
