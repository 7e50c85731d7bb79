"""ONNX's backend node tests (``relay_ref.frontend.onnx.conformance``): every plain-tensor
case through the converter and ``rr.evaluate``, a sample through ``rr.compile``.

The floors are measured (docs/onnx.md has the table by op): a change that makes a case
fail, or that loses a converter, lowers the pass count below ``PASSED_FLOOR`` and fails
here; raise the floor when ops are added. Generating the cases runs ONNX's reference code
(about 6 s, once per worker); the sweep through the interpreter takes about 5 s.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import numpy as np
import pytest

from relay_ref.frontend.onnx import conformance
from relay_ref.frontend.onnx.conformance import EXCLUSIONS, OUTCOMES, Result

PASSED_FLOOR = 1513  # measured: passed cases through rr.evaluate (of 1616 plain ones)
PLAIN_FLOOR = 1600  # plain-tensor cases the installed onnx generates (1616 with onnx 1.23)
WRONG_SHARE = 0.02  # wrong results, at most, as a share of the cases that import
COMPILE_STEP = 40  # every 40th case that imports also runs through rr.compile


@cache
def _results() -> tuple[Result, ...]:
    return tuple(conformance.sweep(conformance.select().cases, "evaluate"))


def test_selection_counts_every_case() -> None:
    selection = conformance.select()
    assert selection.total == len(conformance.collect())  # nothing dropped unseen
    assert set(selection.excluded) <= set(EXCLUSIONS)
    assert len(selection.cases) >= PLAIN_FLOOR
    assert {"sequence", "float8", "bfloat16", "string", "training"} <= set(selection.excluded)
    names = [c.name for c in selection.cases]
    assert names == sorted(names) and len(set(names)) == len(names)
    for case in selection.cases:  # plain tensors only, of NumPy dtypes
        assert all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf"
                   for a in (*case.inputs, *case.outputs)), case.name


def test_node_tests_through_the_interpreter() -> None:
    results = _results()
    assert len(results) == len(conformance.select().cases)  # one outcome per case
    counts = Counter(r.outcome for r in results)
    assert set(counts) <= set(OUTCOMES)
    bugs = [f"{r.case}: {r.detail}" for r in results if r.outcome == "bug"]
    assert not bugs, "cases raising something else than an rr.RelayError:\n" + \
        "\n".join(bugs)
    imported = len(results) - counts["unsupported"]
    wrong = [f"{r.case}: {r.detail}" for r in results if r.outcome == "wrong"]
    assert len(wrong) <= WRONG_SHARE * imported, "\n".join(wrong)
    assert counts["passed"] >= PASSED_FLOOR, (
        f"{counts['passed']} node tests pass, fewer than the floor {PASSED_FLOOR}; "
        "`python -m relay_ref.frontend.onnx.conformance --executor evaluate` shows which")
    for r in results:  # an unsupported case names what is missing (or a refused attribute)
        if r.outcome == "unsupported":
            assert r.detail


def test_a_sample_through_rr_compile() -> None:
    """The same outcome as the interpreter's, case by case (the backend's default path)."""
    cases = [c for c in conformance.select().cases
             if not conformance.missing_ops(c.model)][::COMPILE_STEP]
    assert len(cases) >= 20
    compiled = conformance.sweep(cases, "compile")
    interpreted = conformance.sweep(cases, "evaluate")
    assert [r.outcome for r in compiled] == [r.outcome for r in interpreted]
    assert sum(r.outcome == "passed" for r in compiled) >= 0.9 * len(cases)


def test_compare_finds_each_difference() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert conformance.compare([x], [x.copy()], 1e-3, 1e-7) == ""
    assert "2 outputs" in conformance.compare([x, x], [x], 1e-3, 1e-7)
    assert "shape" in conformance.compare([x.reshape(3, 2)], [x], 1e-3, 1e-7)
    assert "dtype" in conformance.compare([x.astype(np.float64)], [x], 1e-3, 1e-7)
    assert "Mismatch" in conformance.compare([x + 0.1], [x], 1e-3, 1e-7)
    nan = np.array([np.nan, 1.0])
    assert conformance.compare([nan], [nan.copy()], 1e-3, 1e-7) == ""  # NaNs equal


def test_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert conformance.main(["--op", "Relu", "--op", "Trilu", "--no-progress",
                             "--show", "unsupported"]) == 0
    out = capsys.readouterr().out
    assert "Relu" in out and "plain-tensor cases" in out
    with pytest.raises(SystemExit) as exit_:
        conformance.main(["--help"])
    assert exit_.value.code == 0
    assert "--executor" in capsys.readouterr().out
