"""The project's own passes, each checked by ``check_pass`` under a focus that makes it fire
(issue 25 item 5): every checkable registered pass reaches ``min_fired`` programs changed
and compared, and holds. A new registered pass must be added to one of the tables."""

from __future__ import annotations

import pytest

import relay_ref as rr
from relay_ref.ir.expr import Call
from relay_ref.ir.visitor import post_order
from relay_ref.passes.registry import get_pass, pass_names
from relay_ref.testing import check_pass
from relay_ref.testing.programs import programs, resolve_focus
from relay_ref.testing.symbolic_programs import symbolic_programs

#: pass (as ``get_pass`` builds it) -> (focus, programs): what the pass rewrites
FOCUSED = {
    "BackwardFoldScaleAxis": ("nn.conv2d,multiply", 600),  # conv -> multiply by a scale
    "DeadCodeElimination": ("let", 60),
    "EliminateCommonSubexpr": ("duplicate", 150),  # a call written twice
    "FoldConstant": ("add,multiply,subtract", 60),
    "FoldScaleAxis": ("nn.conv2d,multiply", 60),
    "ForwardFoldScaleAxis": ("nn.conv2d,multiply", 400),  # multiply by a scale -> conv
    "FuseOps": ("add,nn.relu,exp", 40),
    "LambdaLift": ("closure", 60),
    "PartialEvaluate": ("closure,ref", 60),
    "SimplifyExpr": ("reshape,add,multiply,subtract,cast,transpose", 160),
    "SimplifyInference": ("nn.batch_norm,nn.dropout,nn.layer_norm", 140),
    "ToANormalForm": ("add", 40),
    "ToGraphNormalForm": ("let", 60),
}
#: passes checked here on programs built for them (``_special``)
SPECIAL = ("DataflowToGraph", "DefuseOps", "Inline")
#: passes ``check_pass`` cannot check, and why (their own test files cover them)
NOT_CHECKED = {
    "BindParams": "binding parameters changes @main's type by design (tests/passes/"
                  "test_bind_params.py); without params it is the identity",
    "ExpandGradient": "programs calling gradient(...) do not run before the expansion, so "
                      "nothing is ever compared (tests/passes/test_gradient*.py)",
    # BYOC: without a backend named they change nothing; check_pass runs each with a
    # registered test backend (tests/passes/byoc/test_*.py) and the whole pipeline on
    # generated programs (tests/byoc/test_partition_properties.py)
    **dict.fromkeys(("MergeComposite", "AnnotateTarget", "MergeCompilerRegions",
                     "PartitionGraph"),
                    "partitioning needs a registered backend and annotated input; checked "
                    "with check_pass in tests/passes/byoc and tests/byoc"),
}


def test_every_registered_pass_is_in_one_table():
    tables = set(FOCUSED) | set(SPECIAL) | set(NOT_CHECKED)
    assert sorted(pass_names()) == sorted(tables)


#: passes that reassociate float products: equal up to rounding, which near the ends of the
#: range includes overflowing in one order and not the other (FoldScaleAxis folds
#: ``conv(x, w) * 0.5`` into ``conv(x, w * 0.5)``: inf where x . w overflows becomes finite;
#: its guarantee excludes only finite -> inf/NaN, tests/passes/test_fold_scale_axis_overflow.py)
REASSOCIATING = {"BackwardFoldScaleAxis", "FoldScaleAxis", "ForwardFoldScaleAxis"}


@pytest.mark.parametrize("name", sorted(FOCUSED))
def test_each_registered_pass_fires_under_its_focus_and_holds(name):
    focus, examples = FOCUSED[name]
    report = check_pass(get_pass(name), focus=focus, examples=examples,
                        edge_values=name not in REASSOCIATING)
    assert report.fired >= 20 and report.verdict == "ok", report.text()


def _has_dataflow(mod):
    return any(isinstance(n, Call) and getattr(n.op, "name", None) == "dataflow"
               for f in mod.functions.values() for n in post_order(f.body))


def _special(name):
    if name == "DataflowToGraph":  # on symbolic programs holding dataflow blocks
        return get_pass(name), symbolic_programs().filter(_has_dataflow)
    if name == "DefuseOps":  # on fused programs
        fuse = get_pass("FuseOps")
        return get_pass(name), programs(edge=True, focus=resolve_focus("add,nn.relu,exp")).map(
            lambda m: fuse(rr.infer_types(m)))
    # Inline: globals of at most 40 nodes inlined (none is marked Inline=1 in generated code)
    return get_pass(name, max_size=40), programs(edge=True, focus=resolve_focus("global"))


@pytest.mark.parametrize("name", SPECIAL)
def test_passes_over_built_programs_fire_and_hold(name):
    pass_, source = _special(name)
    report = check_pass(pass_, programs=source, examples=60)
    assert report.fired >= 20 and report.verdict == "ok", report.text()
