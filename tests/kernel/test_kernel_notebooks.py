"""Every tutorial in ``notebooks/`` runs clean (nbclient) on the kernel its metadata names:
the Relay kernel, or ``python3`` for tutorials of the Python API (05-testing-a-pass).

Cells tagged ``raises-exception`` demonstrate errors: they must fail (with a located Relay
diagnostic, not a Python traceback); every other cell must succeed. The outputs saved in the
notebook must equal those of the fresh run, normalised by ``notebook_outputs.normalise_outputs``
(timings, images, floats past 6 significant digits, addresses, temp paths, execution counts);
``python notebooks/refresh.py`` re-executes and saves them.

Each notebook is executed once, for both checks, so that the suite's time grows by one run
per notebook."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from kernel_harness import strip_ansi
from notebook_outputs import execute, normalise_outputs, output_differences, outputs_equal

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_the_tutorials_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert {"01-tour", "02-adts-and-the-prelude", "03-how-type-inference-works"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_clean(path: Path):
    saved = nbformat.read(path, as_version=4)
    kernel = saved.metadata["kernelspec"]["name"]
    assert kernel in ("relay", "python3")
    nb = execute(path)
    lexer = "relay" if kernel == "relay" else "ipython3"
    assert nb.metadata["language_info"]["pygments_lexer"] == lexer
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "raises-exception" in cell.metadata.get("tags", []):
            assert errors, f"cell was expected to fail:\n{cell.source}"
            text = strip_ansi("\n".join(errors[0].traceback))
            assert "Traceback (most recent call last)" not in text
            assert f"In[{cell.execution_count}]:" in text, text
        else:
            assert not errors, f"unexpected error in:\n{cell.source}"
    stale = output_differences(saved, nb)
    assert not stale, (
        f"{path.name}: saved outputs differ from a fresh run (normalised); if the new ones are "
        "right, run `python notebooks/refresh.py " + path.name + "`\n\n" + "\n\n".join(stale))


def _stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def test_normalise_outputs_hides_what_varies_between_runs():
    one = [_stream("time: 11.6 ms (parse 0.461 ms, check 6.53 ms, eval 4.6 ms)\n"),
           _stream("per call: 12.3 µs (median of 40 calls after the first; best 9 µs)\n")]
    two = [_stream("time: 9 ms (parse 1.2 ms, check 3 ms, eval 2e-05 s)\n"
                   "per call: 8 µs (median of 7 calls after the first; best 2.01 ms)\n")]
    assert normalise_outputs(one) == normalise_outputs(two)  # timings; stream chunks joined
    assert normalise_outputs([_stream("pi = 3.14159265f; x = 3.1415926535\n")]) \
        == normalise_outputs([_stream("pi = 3.14159271f; x = 3.14159\n")])  # 6 digits
    assert normalise_outputs([_stream("<Foo object at 0x7f3a12bc4d90> in /tmp/abc123/x.py\n")]) \
        == normalise_outputs([_stream("<Foo object at 0x55d0aa01ff00> in /tmp/q9/x.py\n")])
    err = {"output_type": "error", "ename": "RelayTypeError", "evalue": "bad",
           "traceback": ["\x1b[31mIn[3]:1:5: error: bad\x1b[0m"]}
    assert normalise_outputs([err]) == normalise_outputs([{**err, "traceback": [
        "In[12]:1:5: error: bad"]}])
    png = {"output_type": "display_data", "metadata": {"image/png": {"width": 10}},
           "data": {"image/png": "iVBORw0KG...", "text/plain": "<Figure>"}}
    assert normalise_outputs([png]) == normalise_outputs([{**png, "metadata": {},
                                                           "data": {**png["data"],
                                                                    "image/png": "AAAA"}}])
    result = {"output_type": "execute_result", "execution_count": 4, "metadata": {},
              "data": {"text/plain": "[1.5f, 2f]"}}
    assert normalise_outputs([result]) == normalise_outputs([{**result, "execution_count": 9}])
    assert normalise_outputs([_stream(  # the plan's thread policy depends on the machine
        "  threads: 2 (work pool 2, BLAS 1 per call, numba 2; from 2 CPUs available)\n")]) \
        == normalise_outputs([_stream(
            "  threads: 8 (work pool 8, BLAS 1 per call, numba 8; from $OMP_NUM_THREADS)\n")])


def test_normalise_outputs_keeps_what_must_not_vary():
    def same(a: str, b: str) -> bool:
        return normalise_outputs([_stream(a)]) == normalise_outputs([_stream(b)])

    assert not same("Cons(1, Nil)\n", "Cons(2, Nil)\n")  # values
    assert not same("3.14159f\n", "3.14158f\n")  # floats within 6 significant digits
    assert not same("1307674368000i64\n", "1307674368001i64\n")  # integers are exact
    assert not same("E-Let\n  E-Const\n", "E-Const\nE-Let\n")  # order of lines
    assert not same("threads: 2 (x)\nbuffers: 4\n", "threads: 2 (x)\nbuffers: 5\n")
    assert not same('#[version = "0.0.5"]', '#[version = "0.0.6"]')  # not a float
    assert not same("3 ms", "3 ms extra")
    png = {"output_type": "display_data", "data": {"image/png": "AAAA"}}
    svg = {"output_type": "display_data", "data": {"image/svg+xml": "AAAA"}}
    assert normalise_outputs([png]) != normalise_outputs([svg])  # the MIME type counts
    assert normalise_outputs([png]) != normalise_outputs([])  # and so does its presence
    assert normalise_outputs([_stream("x\n")]) != normalise_outputs([_stream("x\n", "stderr")])
    assert not same("  1. definitions", "  1 definitions")  # a list number is no float


def test_floats_on_a_rounding_boundary_are_equal_but_real_changes_are_not():
    def equal(a: str, b: str) -> bool:
        return outputs_equal([_stream(a)], [_stream(b)])

    # the last-bit differences of another CPU or BLAS build, across a 6-digit boundary
    assert equal("x = 1.2345650\n", "x = 1.2345649\n")
    assert equal("[14.778115f, 2.5e-03]\n", "[14.778114f, 2.5e-03]\n")
    assert equal("pi = 3.14159265f, e = 2.7182818\n", "pi = 3.14159f, e = 2.7182817\n")
    assert not equal("x = 1.23456\n", "x = 1.23457\n")  # a change in the 6th digit
    assert not equal("x = 5.66e-07\n", "x = 8.57e-08\n")  # a machine-dependent error size
    assert not equal("x = 1.2345650\n", "y = 1.2345649\n")  # the text around them counts
    assert not equal("1.0 2.0\n", "1.0\n")  # so do their number
