"""Write the showcase notebook used by ``scripts/screenshot.sh``: highlighted Relay code, a
tensor shown as a table, an ADT value and a located type error (the last cell).

Usage: ``python scripts/screenshot_notebook.py OUT.ipynb``."""

from __future__ import annotations

import sys

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    "md:### Relay in Jupyter: definitions, values, located errors",
    """// a small layer: dense + bias + relu, shapes checked statically
def @layer(%x: Tensor[(2, 4), float32], %w: Tensor[(3, 4), float32],
           %b: Tensor[(3), float32]) -> Tensor[(2, 3), float32] {
  let %h = nn.dense(%x, %w);
  nn.relu(%h + %b)
}
let %x = reshape(arange(0f, 8f, 1f), newshape=[2, 4]);""",
    """@layer(%x, reshape(arange(0f, 12f, 1f), newshape=[3, 4]) * 0.25f,
       full(-4f, shape=[3], dtype="float32"))""",
    """@map(fn (%n: int32) { (%n, %n * %n) }, Cons(1, Cons(2, Cons(3, Nil))))""",
    """@layer(%x, ones(shape=[3, 5], dtype="float32"), zeros(shape=[3], dtype="float32"))""",
]


def main(out: str) -> None:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "relay", "display_name": "Relay", "language": "relay"}
    for source in CELLS:
        if source.startswith("md:"):
            nb.cells.append(new_markdown_cell(source[3:]))
        else:
            nb.cells.append(new_code_cell(source))
    nbformat.write(nb, out)


if __name__ == "__main__":
    main(sys.argv[1])
