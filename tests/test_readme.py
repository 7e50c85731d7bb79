"""The README's and the guides' commands run as written.

For each document in ``DOCS`` every ```` ```bash ```` block and every ```` ```python ````
block runs, in a fresh directory laid out like a checkout: a copy of ``examples/``, of
``tests/test_docs.py`` (the API reference's build command), ``.venv`` (a link to the
environment running the tests, so ``source .venv/bin/activate`` works as written), and the
ONNX model the README's ``model.onnx`` lines import (see ``_model``). Nothing else is set
up: the README's bash blocks run with the environment's ``bin`` taken off ``PATH``, so its
own ``source .venv/bin/activate`` line is what makes the bare ``relay`` commands work; the
guides in ``docs/`` say to work in the activated environment, and get it on ``PATH``.

How a document is run:

* all its bash blocks, in order, as one bash script (``set -e``: a command that fails fails
  the test, naming the command and the document's line);
* all its python blocks, in order, in one Python process with one namespace (a later
  snippet uses the names an earlier one made, as a reader's session would); tracebacks point
  at the document's lines. This process runs beside the bash script, so the two kinds of
  block must not depend on each other's files (both may use the files laid out first).

The documents' own files and outputs keep this cheap: one Python start-up per document for
the snippets, and about 0.6 s per ``relay`` command.

Markers (HTML comments, invisible on GitHub) on the line just before a fenced block:

* ``<!-- file: NAME -->``: the block is a file the reader saves as ``NAME``; it is written
  into the directory before anything runs;
* ``<!-- output -->`` or ``<!-- output: exit N -->``: the block is what the previous
  runnable block prints: for a bash block its last command (stdout and stderr, exit status
  ``N``, default 0), for a python block its whole standard output. Compared exactly
  (trailing spaces aside), so sample outputs in the documents cannot go stale.

Commands that are not run, and why: the explicit list ``SKIPPED`` (installing, the test
suite itself, interactive front ends, developer tools). A skipped pattern that no longer
matches any command fails ``test_skip_list_is_current``, so the list stays exact. There are
no silent placeholders: ``model.onnx`` and ``input.npy`` are real files here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "docs/concepts.md", "docs/adt-values.md", "docs/writing-a-pass.md",
        "docs/kernel.md")

# (regex on a command's first line, why it is not run). Each must match some command.
SKIPPED: tuple[tuple[str, str], ...] = (
    (r"^python3 -m venv \.venv && .*pip install",
     "the install itself: .ci/run runs it in a fresh venv"),
    (r"^(\.venv/bin/)?pip install -e '\.\[(dev|jupyter)\]'",
     "installing (minutes, network); .ci/run installs '.[dev]'"),
    (r"^\.venv/bin/python -m pytest\b", "the test suite itself"),
    (r"^jupyter (lab|console)\b", "interactive front ends (need the jupyter extra and a person)"),
    (r"^apt-get install chromium", "a developer tool's system dependency (docs/kernel.md)"),
    (r"^scripts/screenshot\.sh", "the screenshot tool: JupyterLab, npm and chromium"),
)

FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*(file|output)\s*(?::\s*(.*?))?\s*-->\s*$")
TIMEOUT = 300


@dataclass
class Block:
    lang: str
    start: int            # 1-based line of the first line of code
    lines: list[str]
    file: str | None = None                      # <!-- file: NAME -->
    expect: tuple[str, int] | None = None        # <!-- output[: exit N] -->: (text, status)
    commands: list[tuple[int, str]] = field(default_factory=list)   # bash: (line, command)


def parse_doc(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with their markers applied."""
    blocks: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i, marker = 0, None
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if not m:
            mm = MARKER.match(line.strip())
            marker = (mm.group(1), mm.group(2) or "") if mm else None
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        block = Block(m.group(1), i + 2, lines[i + 1:j])
        if marker and marker[0] == "file":
            block.file = marker[1]
        elif marker and marker[0] == "output":
            status = re.fullmatch(r"exit (\d+)", marker[1])
            if marker[1] and not status:
                raise ValueError(f"{path.name}:{i}: bad marker {marker[1]!r}")
            runnable = [b for b in blocks if b.lang in ("bash", "python") and not b.file]
            if not runnable:
                raise ValueError(f"{path.name}:{i}: an output block follows no code block")
            runnable[-1].expect = ("\n".join(block.lines), int(status.group(1)) if status else 0)
            block.lang = "output"
        if block.lang == "bash" and not block.file:
            block.commands = split_commands(block)
        blocks.append(block)
        marker = None
        i = j + 1
    return blocks


def split_commands(block: Block) -> list[tuple[int, str]]:
    """Logical shell commands: ``\\`` continuations and here-documents kept together."""
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(block.lines):
        first = k
        text = block.lines[k]
        if not text.strip() or text.lstrip().startswith("#"):
            k += 1
            continue
        here = re.search(r"<<-?\s*'?(\w+)'?", text)
        while text.endswith("\\") and k + 1 < len(block.lines):
            k += 1
            text += "\n" + block.lines[k]
        if here:
            while k + 1 < len(block.lines):
                k += 1
                text += "\n" + block.lines[k]
                if block.lines[k].strip() == here.group(1):
                    break
        out.append((block.start + first, text))
        k += 1
    return out


def skip_reason(command: str) -> str | None:
    head = command.split("\n")[0]
    for pattern, why in SKIPPED:
        if re.search(pattern, head):
            return why
    return None


def _model(directory: Path) -> None:
    """``model.onnx`` (Gemm -> Relu -> Softmax; its input is named ``input.1`` as many
    exported models' are) and ``input.npy``, a float32 array of the input's shape."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((3, 4)).astype("float32"), "fc.weight")
    bias = numpy_helper.from_array(rng.standard_normal(3).astype("float32"), "fc.bias")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["input.1", "fc.weight", "fc.bias"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Softmax", ["r"], ["output"], axis=1)],
        "tiny", [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3])], [weight, bias])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, directory / "model.onnx")
    np.save(directory / "input.npy", rng.standard_normal((1, 4)).astype("float32"))


def checkout_like(directory: Path) -> Path:
    shutil.copytree(ROOT / "examples", directory / "examples")
    (directory / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "test_docs.py", directory / "tests" / "test_docs.py")
    (directory / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    _model(directory)
    return directory


def environment(doc: str) -> dict[str, str]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="80", TERM="dumb", PYTHONUNBUFFERED="1")
    env.pop("FORCE_COLOR", None)
    env.pop("VIRTUAL_ENV", None)
    venv_bin = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin]
    if doc != "README.md":  # the guides assume the activated environment
        path.insert(0, venv_bin)
    env["PATH"] = os.pathsep.join(path)
    return env


def _norm(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def run_bash(doc: str, blocks: list[Block], cwd: Path) -> list[str]:
    """Run the bash blocks as one script; returns failures and output mismatches."""
    outdir = cwd / ".doc-outputs"
    outdir.mkdir()
    script = ["set -eE", "trap 'echo \"FAILED (exit $?) at $WHERE: $BASH_COMMAND\" >&2' ERR"]
    expected = []
    for n, block in enumerate(blocks):
        cmds = [(line, c) for line, c in block.commands if skip_reason(c) is None]
        for k, (line, command) in enumerate(cmds):
            script.append(f"WHERE='{doc}:{line}'")
            if block.expect and k == len(cmds) - 1:
                out = outdir / f"{n}.out"
                # in an || list: neither the ERR trap nor set -e reacts to its status
                script += [f"rc=0; ( {command}\n) > {out} 2>&1 || rc=$?", f"echo $rc > {out}.rc"]
                expected.append((doc, line, command, block.expect, out))
            else:
                script.append(command)
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=environment(doc),
                          capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        return [f"{doc}: a command failed\n--- stderr (end) ---\n{proc.stderr[-4000:]}"
                f"\n--- stdout (end) ---\n{proc.stdout[-2000:]}"]
    problems = []
    for doc_, line, command, (text, status), out in expected:
        got, rc = out.read_text(), int((out.parent / (out.name + ".rc")).read_text())
        if _norm(got) != _norm(text) or rc != status:
            problems.append(f"{doc_}:{line}: `{command}` printed (exit {rc}):\n{got}\n"
                            f"--- the document shows (exit {status}):\n{text}")
    return problems


RUNNER = r"""
import contextlib, io, json, sys, traceback
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__doc_snippets__"}
results = []
for b in blocks:
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile("\n" * (b["start"] - 1) + b["code"], b["doc"], "exec"), namespace)
    except BaseException:
        results.append({"out": buf.getvalue(), "error": traceback.format_exc()})
        break
    results.append({"out": buf.getvalue(), "error": None})
json.dump(results, open(sys.argv[2], "w"))
"""


def start_python(blocks: list[Block], doc: str, cwd: Path) -> subprocess.Popen:
    """Start running the python blocks in one process (``finish_python`` collects)."""
    snippets = [{"doc": doc, "start": b.start, "code": "\n".join(b.lines) + "\n"}
                for b in blocks]
    (cwd / ".snippets.json").write_text(json.dumps(snippets))
    return subprocess.Popen([sys.executable, "-c", RUNNER, ".snippets.json", ".results.json"],
                            cwd=cwd, env=environment("docs"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish_python(proc: subprocess.Popen, blocks: list[Block], doc: str,
                  cwd: Path) -> list[str]:
    """Failures and output mismatches of the python blocks ``start_python`` ran."""
    try:
        _, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return [f"{doc}: the python blocks ran longer than {TIMEOUT} s"]
    if proc.returncode != 0:
        return [f"{doc}: the snippet runner failed\n{stderr[-4000:]}"]
    results = json.loads((cwd / ".results.json").read_text())
    problems = []
    for block, result in zip(blocks, results, strict=False):
        where = f"{doc}:{block.start}"
        if result["error"]:
            problems.append(f"{where}: the python block failed\n{result['error']}")
        elif block.expect and _norm(result["out"]) != _norm(block.expect[0]):
            problems.append(f"{where}: the python block printed:\n{result['out']}\n"
                            f"--- the document shows:\n{block.expect[0]}")
    return problems


@pytest.mark.parametrize("doc", DOCS)
def test_document_runs_as_written(doc: str, tmp_path: Path) -> None:
    if not (Path(sys.prefix) / "bin" / "activate").is_file():
        pytest.skip("the documents' commands assume a virtual environment (.venv); the tests "
                    f"run in {sys.prefix}, which is none")
    blocks = parse_doc(ROOT / doc)
    cwd = checkout_like(tmp_path)
    for block in blocks:
        if block.file:
            target = cwd / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(block.lines) + "\n")
    # the python blocks run beside the bash blocks (independent: both read only the files
    # laid out above), so a document takes the longer of the two, not their sum
    python = [b for b in blocks if b.lang == "python" and not b.file]
    runner = start_python(python, doc, cwd) if python else None
    bash = [b for b in blocks if b.lang == "bash" and not b.file]
    problems = run_bash(doc, bash, cwd) if bash else []
    if runner is not None:
        problems += finish_python(runner, python, doc, cwd)
    assert not problems, "\n\n".join(problems)


def test_documents_have_code() -> None:
    """The extraction finds the blocks (a changed fence style would silently run nothing)."""
    readme = parse_doc(ROOT / "README.md")
    commands = [c for b in readme if b.lang == "bash" for _, c in b.commands]
    assert any(c.startswith("relay run examples/list_sum.relay") for c in commands)
    assert sum(b.lang == "python" for b in readme) >= 2
    assert any(b.expect for b in readme), "the README's sample output is no longer checked"
    for doc in DOCS[1:4]:
        assert any(b.lang in ("bash", "python") for b in parse_doc(ROOT / doc)), doc


def test_skip_list_is_current() -> None:
    """Each entry of SKIPPED skips some command of the documents, and nothing else is
    skipped; the two first commands of the README are the install and the test command."""
    commands = [c for doc in DOCS for b in parse_doc(ROOT / doc) if b.lang == "bash"
                for _, c in b.commands]
    for pattern, why in SKIPPED:
        assert any(re.search(pattern, c.split("\n")[0]) for c in commands), (
            f"SKIPPED entry {pattern!r} ({why}) matches no command any more: remove it")
    first = [c for b in parse_doc(ROOT / "README.md") if b.lang == "bash"
             for _, c in b.commands][:2]
    assert first == [
        "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && "
        ".venv/bin/relay run examples/list_sum.relay",
        ".venv/bin/python -m pytest -n 2",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install --quiet -e '.[dev]'" in ci and "relay run examples/list_sum.relay" in ci
    assert "python -m pytest -n 2" in ci


def test_extraction_rules(tmp_path: Path) -> None:
    """Markers, continuations and here-documents are read as the module docstring says."""
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- file: a.relay -->\n```relay\ndef @main() { 1 }\n```\n\n"
        "```bash\ncat > b.txt <<'EOF'\nx\nEOF\nrelay run \\\n  a.relay   # comment\n```\n"
        "<!-- output: exit 1 -->\n```\nboom\n```\n"
        "```python\nprint(1)\n```\n<!-- output -->\n```text\n1\n```\n")
    blocks = parse_doc(doc)
    assert blocks[0].file == "a.relay" and blocks[0].lines == ["def @main() { 1 }"]
    assert [c for _, c in blocks[1].commands] == ["cat > b.txt <<'EOF'\nx\nEOF",
                                                  "relay run \\\n  a.relay   # comment"]
    assert blocks[1].expect == ("boom", 1)
    assert blocks[3].expect == ("1", 0)
    assert skip_reason("jupyter lab   # go") and not skip_reason("jupyter kernelspec list")
