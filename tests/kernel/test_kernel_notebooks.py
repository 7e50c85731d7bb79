"""Every tutorial in ``notebooks/`` runs clean (nbclient) on the kernel its metadata names:
the Relay kernel, or ``python3`` for tutorials of the Python API (05-testing-a-pass).

Cells tagged ``raises-exception`` demonstrate errors: they must fail (with a located Relay
diagnostic, not a Python traceback); every other cell must succeed."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from kernel_harness import strip_ansi
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))


def test_the_tutorials_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert {"01-tour", "02-adts-and-the-prelude", "03-how-type-inference-works"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_clean(path: Path):
    nb = nbformat.read(path, as_version=4)
    kernel = nb.metadata["kernelspec"]["name"]
    assert kernel in ("relay", "python3")
    NotebookClient(nb, kernel_name=kernel, timeout=120, allow_errors=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
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
