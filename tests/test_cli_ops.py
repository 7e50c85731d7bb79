"""``relay ops [PREFIX]`` and ``relay doc OP...``, run as a user runs them (a subprocess).

``relay doc`` prints exactly ``repl.op_doc``, the function behind the kernel's ``:doc``;
``relay ops`` has one row per operator; unknown names and prefixes are usage errors with the
closest names suggested.
"""

from __future__ import annotations

import sys
from pathlib import Path

from relay_ref import repl

ROOT = Path(__file__).resolve().parent.parent


def _rows(stdout: str) -> dict[str, list[str]]:
    """The table's body rows by operator name: ``{name: [inputs, level, summary]}``."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 4:
            rows[cells[0]] = cells[1:]
    return rows


def test_ops_lists_every_operator_one_row_each(relay) -> None:
    done = relay("ops")
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    names = repl.op_names()
    assert sorted(rows) == names  # piped: 120 columns, no name cut or wrapped
    assert f"{len(names)} operators; 'relay doc OP' documents one" in done.stdout
    assert rows["add"] == ["2", "1", "Elementwise ``lhs + rhs`` with broadcasting."]
    assert rows["concatenate"][:2] == ["1", "1"]
    # the summary is the first sentence, which ends before a capital, not at "w.r.t. its"
    summary = repl.op_summary("nn.conv2d_transpose")
    assert summary == "Transposed 2-d convolution (the gradient of conv2d w.r.t. its input)."
    assert summary.startswith(rows["nn.conv2d_transpose"][2].rstrip("…"))


def test_ops_with_a_prefix_and_a_narrow_terminal(relay) -> None:
    done = relay("ops", "nn.conv", extra_env={"COLUMNS": "70"})
    assert done.returncode == 0, done.stderr
    assert all(len(line) <= 70 for line in done.stdout.splitlines())
    rows = _rows(done.stdout)
    assert sorted(rows) == [n for n in repl.op_names() if n.startswith("nn.conv")]
    assert rows["nn.conv2d"][:2] == ["2", "2"] and rows["nn.conv2d"][2].endswith("…")
    assert "relay_ref operators starting nn.conv" in done.stdout
    assert f"6 of {len(repl.op_names())} operators" in done.stdout


def test_ops_with_an_unknown_prefix_suggests_families(relay) -> None:
    done = relay("ops", "nnn.")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("relay: error: no operator starts with 'nnn.'; did you mean nn. or "
                           "qnn.? ('relay ops' lists them all)\n")


def test_doc_prints_what_the_kernel_shows(relay) -> None:
    done = relay("doc", "nn.conv2d", "add")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{repl.op_doc('nn.conv2d')}\n\n{repl.op_doc('add')}\n"
    first = done.stdout.splitlines()[0]
    assert first.startswith("nn.conv2d(data, weight, strides=[1, 1], padding=[0, 0], ")
    assert first.endswith('out_dtype="")  (operator, support level 2)')
    assert "nn.conv2d : fn[t1, t2, t3](t1, t2) -> t3 where nn.conv2d(t1, t2, t3)" \
        in done.stdout
    assert "add : fn[t1, t2, t3](t1, t2) -> t3 where Broadcast(t1, t2, t3)  (relation runs " \
        "both ways)" in done.stdout


def test_the_kernel_doc_is_repl_op_doc() -> None:
    sys.path.insert(0, str(ROOT / "kernel"))
    from relay_kernel.editor import describe

    for name in ("nn.conv2d", "add", "concatenate", "nn.batch_norm"):
        assert describe(name, None) == repl.op_doc(name)
    assert repl.op_doc("nn.dens") is None and repl.op_summary("nn.dens") == ""


def test_doc_of_an_unknown_operator_suggests_near_names(relay) -> None:
    done = relay("doc", "add", "nn.dens")
    assert done.returncode == 2 and done.stdout == ""  # nothing printed for `add` either
    assert done.stderr == ("relay: error: no operator nn.dens; did you mean nn.dense or "
                           "qnn.dense? ('relay ops' lists them)\n")


def test_help_lists_ops_and_doc(relay) -> None:
    done = relay("--help")
    assert "ops       list the operators" in done.stdout
    assert "doc       document an operator" in done.stdout
