"""The project's own passes, each checked by ``check_pass`` under a focus that makes it fire
(issue 25 item 5): every one reaches ``min_fired`` programs changed and compared."""

from __future__ import annotations

import pytest

from relay_ref.passes.registry import get_pass
from relay_ref.testing import check_pass

#: pass -> (focus, programs): what the pass rewrites
FOCUSED = {
    "DeadCodeElimination": ("let", 60),
    "FoldConstant": ("add,multiply,subtract", 60),
    "FoldScaleAxis": ("nn.conv2d,multiply", 60),
    "FuseOps": ("add,nn.relu,exp", 40),
    "LambdaLift": ("closure", 60),
    "PartialEvaluate": ("closure,ref", 60),
    "SimplifyExpr": ("reshape,add,multiply,subtract,cast,transpose", 160),
    "SimplifyInference": ("nn.batch_norm,nn.dropout,nn.layer_norm", 140),
    "ToANormalForm": ("add", 40),
    "ToGraphNormalForm": ("let", 60),
}


@pytest.mark.parametrize("name", sorted(FOCUSED))
def test_each_registered_pass_fires_under_its_focus_and_holds(name):
    focus, examples = FOCUSED[name]
    report = check_pass(get_pass(name), focus=focus, examples=examples)
    assert report.fired >= 20 and report.verdict == "ok", report.text()
