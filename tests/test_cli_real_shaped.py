"""Real-shaped programs and bad input through the ``relay`` command, as a user runs it (in a
subprocess): a 3 000-block residual chain runs and formats (the in-process growth tests in
``test_linear_cost.py`` count the work; here the point is that the CLI path has no
per-path cost left, e.g. in argument checking or output), an unclosed ``{`` is reported at
the end of input *and* at the ``{``, and a float literal for an int parameter is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np

RESIDUAL_BLOCKS = 3000


def residual_chain(blocks: int) -> str:
    """``%i = add(%i-1, nn.relu(%i-1))``: every node used twice, 2^blocks paths."""
    lines = ["def @main(%x: Tensor[(2), float32]) {", "  %0 = add(%x, nn.relu(%x));"]
    lines += [f"  %{i} = add(%{i - 1}, nn.relu(%{i - 1}));" for i in range(1, blocks)]
    lines += [f"  %{blocks - 1}", "}"]
    return "\n".join(lines) + "\n"


def test_residual_chain_of_3000_blocks_runs_and_formats(relay, tmp_path: Path) -> None:
    path = tmp_path / "chain.relay"
    path.write_text(residual_chain(RESIDUAL_BLOCKS))
    np.save(tmp_path / "x.npy", np.array([1.0, -1.0], dtype="float32"))
    run = relay("run", str(path), str(tmp_path / "x.npy"))
    assert run.returncode == 0, run.stderr
    # relu(x) = x for x >= 0: each block doubles 1 (overflows to inf); -1 stays -1.
    assert "".join(run.stdout.split()) == "[inff,-1f]", run.stdout
    fmt = relay("fmt", str(path))
    assert fmt.returncode == 0, fmt.stderr
    assert fmt.stdout.count("nn.relu(") == RESIDUAL_BLOCKS


def test_unclosed_brace_at_end_of_input_points_at_the_brace(relay, tmp_path: Path) -> None:
    path = tmp_path / "open.relay"
    path.write_text("def @main() {\n  let %x = 1;\n  %x\n")
    out = relay("check", str(path))
    assert out.returncode == 1
    assert "open.relay:1:13: note: this '{' is never closed" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_float_argument_for_an_int_parameter_is_refused(relay, tmp_path: Path) -> None:
    path = tmp_path / "int.relay"
    path.write_text("def @main(%n: int32) -> int32 { %n }\n")
    out = relay("run", str(path), "2.5f")
    assert out.returncode == 1, out.stdout
    assert "int32" in out.stderr and "Traceback" not in out.stderr, out.stderr
    ok = relay("run", str(path), "7")
    assert (ok.returncode, ok.stdout.strip()) == (0, "7"), ok.stderr
