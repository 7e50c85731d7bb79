"""Linear cost on shared sub-graphs (DESIGN.md section 2, "Traversals are linear").

Real networks are DAGs: a chain of ``n`` residual blocks has ``2**n`` paths through ``n``
nodes. Every phase (parse, check, evaluate, print, alpha-equality, hashing, free variables)
must cost work proportional to the nodes, not the paths. Work is measured as the number of
Python lines executed (``relay_ref.testing.growth.step_count``), which is deterministic: the tests
assert that doubling the program size at most doubles it (plus a small constant), never
on time. Timings are in ``benchmarks/growth.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.interpreter.eval import _RULES, Interpreter
from relay_ref.ir import expr as E
from relay_ref.ir.visitor import free_vars, post_order
from relay_ref.testing.growth import SHAPES, doubling_chain, residual_chain, step_count

_ARG = np.full(8, 1e-3, "float32")


def _argument(shape: str) -> np.ndarray:
    return np.float32(1e-30) if shape == "doubling" else _ARG


def _phase_costs(text: str, arg: np.ndarray) -> dict[str, int]:
    """Python lines executed by each phase on ``text``."""
    box: dict[str, object] = {}
    costs = {"parse": step_count(lambda: box.__setitem__("mod", rr.parse(text)))}
    mod = box["mod"]
    costs["check"] = step_count(lambda: box.__setitem__("mod", rr.infer_types(mod)))
    mod = box["mod"]
    costs["evaluate"] = step_count(lambda: rr.evaluate(mod, arg))
    costs["print"] = step_count(lambda: box.__setitem__("text", rr.astext(mod)))
    again = rr.parse(box["text"])
    costs["alpha_equal"] = step_count(lambda: box.__setitem__("eq", rr.alpha_equal(mod, again)))
    assert box["eq"] is True
    costs["hash"] = step_count(lambda: rr.structural_hash(mod))
    costs["free_vars"] = step_count(lambda: free_vars(mod.functions["main"]))
    return costs


# A path-walking regression would not fail these tests, it would hang them: bound them.
pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_work_doubles_at_most_when_the_program_doubles(shape: str) -> None:
    gen = SHAPES[shape]
    small = _phase_costs(gen(150), _argument(shape))
    large = _phase_costs(gen(300), _argument(shape))
    for phase, calls in small.items():
        # Linear: cost(2n) <= 2 cost(n) + a constant; an exponential or quadratic phase
        # would be 4x (quadratic) or astronomically more (paths).
        assert large[phase] <= 2.1 * calls + 2000, (shape, phase, calls, large[phase])


def test_doubling_chain_of_48_steps_runs_every_phase() -> None:
    # 2**48 paths: any phase that walks paths instead of nodes would never finish.
    mod = rr.infer_types(rr.parse(doubling_chain(48)))
    x = np.float32(2.0 ** -40)
    assert float(rr.evaluate(mod, x)) == pytest.approx(2.0 ** 8)
    text = rr.astext(mod)
    assert text.count("add(") == 48
    assert rr.alpha_equal(mod, rr.parse(text))
    assert rr.structural_hash(mod) == rr.structural_hash(rr.parse(text))
    assert [v.name_hint for v in free_vars(mod.functions["main"].body)] == ["x"]


def test_residual_chain_of_3000_blocks_runs_every_phase() -> None:
    mod = rr.infer_types(rr.parse(residual_chain(3000)))
    x = np.array([-2, -1e-3, 0, 1e-38, 1e-30, 1e-3, 1, 3], "float32")
    expected = x.copy()
    with np.errstate(over="ignore"):
        for _ in range(3000):
            expected = expected + np.maximum(expected, 0)
    np.testing.assert_array_equal(rr.evaluate(mod, x), expected)
    text = rr.astext(mod)
    assert text.count("nn.relu(") == 3000
    assert rr.alpha_equal(mod, rr.parse(text))


@contextlib.contextmanager
def _applications() -> Iterator[list[E.Call]]:
    """The ``Call`` nodes the interpreter applies (E-App-*) while the block runs."""
    applied: list[E.Call] = []
    original = _RULES[E.Call]

    def counting(interp: Interpreter, expr: E.Call, env: dict) -> object:
        applied.append(expr)
        return original(interp, expr, env)

    _RULES[E.Call] = counting
    try:
        yield applied
    finally:
        _RULES[E.Call] = original


def test_shared_node_is_evaluated_once_per_activation() -> None:
    # Each operator call node is applied exactly once per evaluation of its scope.
    mod = rr.infer_types(rr.parse(doubling_chain(30)))
    with _applications() as applied:
        rr.evaluate(mod, np.float32(1.0))
    assert [call.op.name for call in applied] == ["add"] * 30


# -- random DAGs: every node is visited once, whatever the sharing ---------------------------

@st.composite
def _dags(draw: st.DrawFn) -> tuple[str, int]:
    """A dataflow program whose bindings use random earlier bindings (heavy sharing)."""
    n = draw(st.integers(1, 40))
    lines = ["def @main(%x: Tensor[(4), float32]) {"]
    names = ["%x"]
    for i in range(n):
        a = draw(st.sampled_from(names))
        b = draw(st.sampled_from(names))
        op = draw(st.sampled_from(["add", "multiply", "maximum", "subtract"]))
        if draw(st.booleans()):
            lines.append(f"  %{i} = {op}({a}, nn.relu({b}));")
        else:
            lines.append(f"  %{i} = {op}({a}, {b});")
        names.append(f"%{i}")
    lines += [f"  ({', '.join(names[-3:])})", "}"]
    return "\n".join(lines), n


@settings(max_examples=40)
@given(_dags())
def test_random_dag_traversals_visit_each_node_once(case: tuple[str, int]) -> None:
    text, n = case
    mod = rr.infer_types(rr.parse(text))
    body = mod.functions["main"].body
    nodes = list(post_order(body))
    assert len(nodes) == len({id(node) for node in nodes})  # each distinct node once
    op_nodes = [node for node in nodes if isinstance(node, E.Call)]
    with _applications() as applied:
        value = rr.evaluate(mod, np.linspace(-1, 1, 4, dtype="float32"))
    assert sorted(map(id, applied)) == sorted(map(id, op_nodes))  # each call node once
    assert isinstance(value, tuple) and len(value) == min(3, n + 1)
    printed = rr.astext(mod)
    # Every operator call is printed exactly once (a shared one as one graph binding).
    assert sum(printed.count(f"{op}(") for op in ("add", "multiply", "maximum", "subtract",
                                                    "nn.relu")) == len(op_nodes)
    assert rr.alpha_equal(mod, rr.parse(printed))



def _graph_add_chain(n: int) -> str:
    lines = ["def @main(%x: float32) {", "  %0 = add(%x, 1f);"]
    lines += [f"  %{i} = add(%{i - 1}, 1f);" for i in range(1, n)]
    return "\n".join([*lines, f"  %{n - 1}", "}"])


COMPILE_SHAPES = {"residual": SHAPES["residual"], "nested_tuple": SHAPES["nested_tuple"],
                  "graph_add_chain": _graph_add_chain}


@pytest.mark.parametrize("shape", sorted(COMPILE_SHAPES))
def test_compile_work_doubles_at_most_when_the_program_doubles(shape: str) -> None:
    # rr.compile: the pass pipeline, its type checks, fusion, the memory plan and code
    # generation (was quadratic in the depth of nested tuples)
    gen = COMPILE_SHAPES[shape]
    rr.compile(rr.parse(gen(20)))  # kernels compiled and cached: not counted below

    def compile_cost(n: int) -> int:
        mod = rr.infer_types(rr.parse(gen(n)))
        return step_count(lambda: rr.compile(mod))

    small, large = compile_cost(150), compile_cost(300)
    assert large <= 2.1 * small + 2000, (shape, small, large)
