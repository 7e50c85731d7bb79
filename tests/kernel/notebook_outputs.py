"""Running the tutorials in ``notebooks/`` and comparing their saved outputs with a fresh run.

Used by ``test_kernel_notebooks.py`` (the saved-output check) and by ``notebooks/refresh.py``
(re-execute every notebook and save it). A notebook runs on the kernel its metadata names
(``relay`` or ``python3``); ``checkout_kernelspec()`` makes ``relay`` mean the kernel of this
working tree, as ``conftest.py`` does for the tests.

What legitimately varies between two runs is normalised away by ``normalise_outputs`` (see
its docstring for the exact rules); everything else must be equal, so a notebook whose saved
outputs are stale fails the check until it is refreshed.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO / "notebooks"

IMAGE_MIMES = re.compile(r"^image/")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# a duration as the kernel and the notebooks print one: "12.3 ms", "0.8 s", "45 µs", "2e-05 s"
DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\s?(?:ns|µs|us|ms|s|sec|min)\b")
MEDIAN_OF = re.compile(r"\bmedian of \d+\b")
# a decimal number with a fraction or an exponent (an integer literal is never rounded; a
# dotted version or list number like "0.0.5" or "1." is not a float)
FLOAT = re.compile(
    r"(?<![\w.])[-+]?(?:\d*\.\d+|\d+(?=[eE][-+]?\d))(?:[eE][-+]?\d+)?(?![.\d])")
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
TEMP_PATH = re.compile(
    "(?:" + "|".join(re.escape(p) for p in sorted(
        {tempfile.gettempdir(), "/tmp", "/var/folders", "/private/var/folders"},
        key=len, reverse=True)) + r")/[^\s'\"<>:,)\]]*")
CELL_NAME = re.compile(r"\bIn\[\d+\]")
# the thread policy's line of an exe.plan (relay_ref.executor.threads.ThreadPolicy.describe):
# its counts come from the machine's CPUs or the environment
THREADS = re.compile(r"\bthreads: \d+ \([^)\n]*\)")
# a rule tag's tooltip (relay_ref.rules.rule_html): the rule's whole spec text, escaped
RULE_TITLE = re.compile(r'(<abbr class="relay-rule" data-rule="[^"]*") title="[^"]*"')


def normalise_text(text: str, round_floats: bool = True) -> str:
    """``text`` with what varies between runs replaced by placeholders (rules 1-6 of
    ``normalise_outputs``; rule 2 only when ``round_floats``)."""
    text = ANSI.sub("", text)
    text = DURATION.sub("<time>", text)
    text = MEDIAN_OF.sub("median of <n>", text)
    text = ADDRESS.sub("0x<address>", text)
    text = TEMP_PATH.sub("<tmp>", text)
    text = CELL_NAME.sub("In[<n>]", text)
    text = THREADS.sub("threads: <policy>", text)
    return FLOAT.sub(_six_digits, text) if round_floats else text


def _six_digits(m: re.Match[str]) -> str:
    """A float rounded to 6 significant digits (``3.14159265`` -> ``3.14159``)."""
    try:
        return f"{float(m.group()):.6g}"
    except ValueError:  # pragma: no cover - the pattern only matches numbers
        return m.group()


def normalise_outputs(outputs: list[dict[str, Any]], round_floats: bool = True
                      ) -> list[dict[str, Any]]:
    """The outputs of one code cell, reduced to what must be the same on every run.

    1. **Timings**: a duration (``12.3 ms``, ``45 µs``, ``0.8 s``) becomes ``<time>``, and
       the call count of ``median of N`` becomes ``<n>``.
    2. **Floats** are rounded to 6 significant digits (integers are left alone);
       ``outputs_equal`` also takes two floats within ``FLOAT_RTOL`` as equal, so that a
       value on a rounding boundary (``1.2345650`` / ``1.2345649``) is not stale.
    3. **Memory addresses** (``0x7f3a...``) become ``0x<address>``.
    4. **Temporary paths** (under ``/tmp`` or the platform's temp dir) become ``<tmp>``.
    5. **Execution counts**: the ``execution_count`` of a result is dropped and the cell name
       ``In[12]`` in a diagnostic becomes ``In[<n>]``.
    6. **Terminal colours** (ANSI escapes, as in error tracebacks) are removed, and an
       ``exe.plan``'s thread-policy line (``threads: 2 (work pool 2, ...; from 2 CPUs
       available)``) becomes ``threads: <policy>``: its counts depend on the machine.
    7. **Images** (``image/*``) are compared by presence and MIME type only: the data becomes
       ``<image>``.
    8. **Stream chunks**: consecutive ``stdout`` (or ``stderr``) outputs are joined into one,
       since how a stream is cut into messages depends on timing.
    9. **Rule tooltips**: a rule tag's ``title="…"`` (the rule's text in spec/, in errors',
       traces' and derivations' HTML) becomes ``title="<rule>"``: the tag is compared by the
       rule it names (``data-rule``), so a wording edit in spec/ leaves those outputs fresh.

    Output ``metadata`` and ``transient`` fields are dropped; ``text/*`` data, stream text and
    error name, value and traceback are compared after rules 1-6 (rule 2 only when
    ``round_floats``)."""
    result: list[dict[str, Any]] = []
    for out in outputs:
        kind = out["output_type"]
        if kind == "stream":
            if result and result[-1]["output_type"] == "stream" \
                    and result[-1]["name"] == out["name"]:
                result[-1]["text"] += out["text"]  # rule 8
            else:
                result.append({"output_type": "stream", "name": out["name"], "text": out["text"]})
        elif kind in ("execute_result", "display_data", "update_display_data"):
            data = {mime: "<image>" if IMAGE_MIMES.match(mime)
                    else _data_text(value, round_floats)
                    for mime, value in out.get("data", {}).items()}
            result.append({"output_type": kind, "data": data})
        elif kind == "error":
            result.append({"output_type": "error", "ename": out["ename"],
                           "evalue": normalise_text(out["evalue"], round_floats),
                           "traceback": [normalise_text(line, round_floats)
                                         for line in out["traceback"]]})
        else:
            result.append(dict(out))
    for out in result:
        if out["output_type"] == "stream":
            out["text"] = normalise_text(out["text"], round_floats)
    return result


def _data_text(value: Any, round_floats: bool = True) -> str:
    """A MIME bundle's value as normalised text (JSON values as canonical JSON)."""
    if isinstance(value, list):  # nbformat may store text as a list of lines
        value = "".join(value)
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True)
    return normalise_text(RULE_TITLE.sub(r'\1 title="<rule>"', value), round_floats)  # rule 9


def checkout_kernelspec() -> None:
    """Make the ``relay`` kernelspec run this working tree's kernel (as ``conftest.py``):
    a spec naming this interpreter in a temporary Jupyter data dir first on
    ``JUPYTER_PATH``, and the checkout on ``PYTHONPATH``."""
    sys.path.insert(0, str(REPO / "kernel"))
    from relay_kernel.install import write_spec

    data = Path(tempfile.mkdtemp(prefix="relay-notebooks-"))
    write_spec(data / "kernels" / "relay", sys.executable)
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(data), *filter(None, [os.environ.get("JUPYTER_PATH")])])
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "kernel"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"


def execute(path: Path, timeout: int = 120) -> Any:
    """A fresh run of the notebook at ``path`` (not saved) on the kernel its metadata names.

    Cells that fail do not stop the run (``raises-exception`` cells are meant to fail; the
    caller checks the others)."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name=nb.metadata["kernelspec"]["name"], timeout=timeout,
                   allow_errors=True, record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


# Two floats whose 6-digit roundings differ only because they lie on either side of a
# rounding boundary (1.2345650 and 1.2345649) are the same number to this relative tolerance.
FLOAT_RTOL = 1e-6


def outputs_equal(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """The outputs of one code cell are the same after ``normalise_outputs``, or differ only
    in floats each of which agrees to 6 significant digits or to ``FLOAT_RTOL`` (relative):
    the text around the floats, and their number and order, must be identical."""
    if normalise_outputs(a) == normalise_outputs(b):
        return True
    texts, floats = [], []
    for outputs in (a, b):
        found: list[float] = []
        text = "\n".join(_lines(normalise_outputs(outputs, round_floats=False)))
        texts.append(FLOAT.sub(lambda m, found=found: found.append(float(m.group())) or "<f>",
                               text))
        floats.append(found)
    if texts[0] != texts[1] or len(floats[0]) != len(floats[1]):
        return False
    return all(f"{x:.6g}" == f"{y:.6g}" or abs(x - y) <= FLOAT_RTOL * max(abs(x), abs(y))
               for x, y in zip(*floats, strict=True))


def output_differences(saved: Any, fresh: Any) -> list[str]:
    """One report per code cell whose outputs differ between the notebooks ``saved`` and
    ``fresh`` (the same cells, in the same order; ``outputs_equal``): the cell's number, the
    start of its source and a unified diff of the normalised outputs."""
    reports = []
    code = [(i, a, b) for i, (a, b) in enumerate(zip(saved.cells, fresh.cells, strict=True))
            if a.cell_type == "code"]
    for i, a, b in code:
        if not outputs_equal(a.outputs, b.outputs):
            want, got = normalise_outputs(a.outputs), normalise_outputs(b.outputs)
            diff = difflib.unified_diff(_lines(want), _lines(got), "saved", "fresh run",
                                        lineterm="", n=2)
            head = a.source.splitlines()[0] if a.source else ""
            reports.append(f"cell {i} ({head[:60]!r}):\n" + "\n".join(diff))
    return reports


def _lines(outputs: list[dict[str, Any]]) -> list[str]:
    return json.dumps(outputs, indent=1, ensure_ascii=False, sort_keys=True).splitlines()


def refresh(path: Path) -> list[str]:
    """Re-execute the notebook at ``path`` and save it with the fresh outputs; returns the
    sources of code cells that failed without a ``raises-exception`` tag (nothing is saved
    then). A cell whose outputs are unchanged after normalisation keeps its saved outputs,
    so a refresh does not rewrite timings (the diff shows only real changes)."""
    saved = nbformat.read(path, as_version=4)
    nb = execute(path)
    bad = [c.source for c in nb.cells if c.cell_type == "code"
           and any(o.output_type == "error" for o in c.outputs)
           and "raises-exception" not in c.metadata.get("tags", [])]
    if bad:
        return bad
    for old, new in zip(saved.cells, nb.cells, strict=True):
        if new.cell_type == "code" and old.get("execution_count") == new.execution_count \
                and outputs_equal(old.outputs, new.outputs):
            new.outputs = old.outputs
    nbformat.write(nb, path)
    return []
