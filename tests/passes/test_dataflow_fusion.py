"""DataflowToGraph (relay_ref/passes/dataflow_to_graph.py): a dataflow block's ``let``
bindings become graph sharing (T-Dataflow, Shape-Dataflow), so ``rr.compile`` fuses a block
as it fuses the graph form; values compared with ``rr.evaluate``."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.executor.compile import DEFAULT_PASSES
from relay_ref.ir.expr import Let
from relay_ref.ir.visitor import post_order
from relay_ref.passes.registry import get_pass

SIG = ("def @main(%x: Tensor[(BATCH, 64), float32], %w: Tensor[(1024, 64), float32], "
       "%b: Tensor[(1024), float32])")
DATAFLOW_MLP = SIG + """ {
  dataflow { let %a = nn.dense(%x, %w); let %c = nn.bias_add(%a, %b); let %d = nn.relu(%c); %d }
}"""
GRAPH_MLP = SIG + """ {
  %0 = nn.dense(%x, %w); %1 = nn.bias_add(%0, %b); nn.relu(%1)
}"""


def _args(batch, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch, 64)).astype("float32"),
            rng.standard_normal((1024, 64)).astype("float32"),
            rng.standard_normal(1024).astype("float32")]


def _groups(exe):
    return [(g.label, g.strategy, g.kernels, g.count) for g in exe.plan.groups]


def _lets(mod):
    return [n for f in mod.functions.values() for n in post_order(f.body) if type(n) is Let]


@pytest.mark.parametrize("batch", ["4", "n"])
def test_dataflow_mlp_fuses_as_the_graph_form(batch):
    flow = rr.parse(DATAFLOW_MLP.replace("BATCH", batch))
    graph = rr.parse(GRAPH_MLP.replace("BATCH", batch))
    exe_flow, exe_graph = rr.compile(flow), rr.compile(graph)
    assert exe_flow.plan.passes == DEFAULT_PASSES and DEFAULT_PASSES[0] == "DataflowToGraph"
    assert _groups(exe_flow) == _groups(exe_graph)
    assert [g.strategy for g in exe_flow.plan.groups] == ["anchor+fused"]
    assert exe_flow.plan.groups[0].label == "dense+bias_add+relu"
    for n in ([4] if batch == "4" else [1, 5]):
        args = _args(n)
        np.testing.assert_allclose(exe_flow(*args), rr.evaluate(flow, *args), rtol=1e-5,
                                   atol=1e-5)


def test_only_block_bindings_move_and_the_block_stays():
    mod = rr.parse("""
def @main(%x: Tensor[(n, 8), float32]) {
  let %o = nn.relu(%x);
  let %r = dataflow { let %a = exp(%o); let %u = negative(%o); let %c = add(%a, %a); %c };
  %r
}""")
    out = rr.optimize(mod, ["DataflowToGraph"])
    # the two lets outside the block stay; %a (used twice) is one shared node, %u dropped
    assert sorted(lt.var.name_hint for lt in _lets(out)) == ["o", "r"]
    text = rr.astext(out)
    assert "dataflow" in text and "negative" not in text
    x = np.random.default_rng(1).standard_normal((3, 8)).astype("float32")
    np.testing.assert_allclose(rr.evaluate(out, x), rr.evaluate(mod, x), rtol=1e-6)
    np.testing.assert_allclose(rr.evaluate(rr.parse(text), x), rr.evaluate(mod, x),
                               rtol=1e-6)
    exe = rr.compile(mod)
    np.testing.assert_allclose(exe(x), rr.evaluate(mod, x), rtol=1e-5)


def test_match_cast_bindings_stay_in_place():
    mod = rr.parse("""
def @main(%x: Tensor[(?, 8), float32]) {
  dataflow {
    let %y = match_cast(%x, Tensor[(m, 8), float32]);
    let %a = nn.relu(%y);
    let %e = exp(%a);
    %e
  }
}""")
    out = rr.optimize(mod, ["DataflowToGraph"])
    assert [lt.var.name_hint for lt in _lets(out)] == ["y"]
    x = np.random.default_rng(2).standard_normal((5, 8)).astype("float32")
    want = rr.evaluate(mod, x)
    np.testing.assert_allclose(rr.evaluate(out, x), want, rtol=1e-6)
    np.testing.assert_allclose(rr.compile(mod)(x), want, rtol=1e-5)


def test_without_dataflow_the_module_is_returned_as_is():
    mod = rr.infer_types(rr.parse("""
def @main(%x: Tensor[(n, 8), float32]) { let %a = nn.relu(%x); let %b = exp(%a); %b }"""))
    assert get_pass("DataflowToGraph")(mod) is mod
    assert len(_lets(rr.optimize(mod, ["DataflowToGraph"]))) == 2


def test_to_graph_normal_form_converts_dataflow_bodies_too():
    mod = rr.parse(DATAFLOW_MLP.replace("BATCH", "n"))
    out = rr.optimize(mod, ["ToGraphNormalForm"])
    assert not _lets(out) and "dataflow" in rr.astext(out)
    fused = rr.optimize(mod, ["ToGraphNormalForm", "FuseOps"])
    assert rr.astext(fused).count("Primitive=1") == 1
    args = _args(3)
    np.testing.assert_allclose(rr.evaluate(fused, *args), rr.evaluate(mod, *args), rtol=1e-5,
                               atol=1e-5)
