"""``relay export FILE -o MODEL.onnx``: the written model runs in onnxruntime with the values
``rr.evaluate`` gives (weights from ``--weights`` or from the header ``relay import``
writes), unsupported programs are located errors (exit 1), usage mistakes exit 2 and
write nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import relay_ref as rr
from relay_ref.testing import onnx_light

PROGRAM = """def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32],
          %b: Tensor[(4,), float32]) {
  nn.softmax(nn.relu(nn.bias_add(nn.dense(%x, %w), %b, axis=-1)))
}
"""


def _run(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def test_export_with_weights_matches_evaluate(relay, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype("float32") for s in [(2, 3), (4, 3), (4,)])
    (tmp_path / "p.relay").write_text(PROGRAM)
    np.savez(tmp_path / "w.npz", w=w, b=b)
    done = relay("export", "p.relay", "-o", "m.onnx", "--params", "w.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote m.onnx" in done.stderr
    model = onnx.load(tmp_path / "m.onnx")
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["x"]
    want = rr.evaluate(rr.parse(PROGRAM), x, w, b)
    np.testing.assert_allclose(_run(tmp_path / "m.onnx", {"x": x})[0], want, rtol=1e-5,
                               atol=1e-6)


def test_imported_model_exported_back(relay, tmp_path: Path) -> None:
    """``relay import`` then ``relay export`` (weights found through the header) runs as
    the original file does."""
    src = onnx_light.model_path("squeezenet")
    done = relay("import", src, "-o", "s.relay", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = relay("export", "s.relay", "-o", "back.onnx", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    original = onnx.load(src)
    feeds = onnx_light.feeds(original)
    want = _run(Path(src), feeds)
    got = _run(tmp_path / "back.onnx", feeds)
    assert len(got) == len(want)
    for g, v in zip(got, want, strict=True):
        np.testing.assert_allclose(g, v, rtol=1e-4, atol=1e-6)


def test_unsupported_program_is_located(relay, tmp_path: Path) -> None:
    (tmp_path / "p.relay").write_text(
        "def @main(%x: Tensor[(3,), float32]) {\n  if (less(sum(%x), 0f)) { %x } else "
        "{ negative(%x) }\n}\n")
    done = relay("export", "p.relay", "-o", "m.onnx", cwd=tmp_path)
    assert done.returncode == 1
    assert "p.relay:2:" in done.stderr and "if expression" in done.stderr
    assert not (tmp_path / "m.onnx").exists()


def test_usage_errors_write_nothing(relay, tmp_path: Path) -> None:
    (tmp_path / "p.relay").write_text(PROGRAM)
    np.savez(tmp_path / "w.npz", nope=np.zeros(3, "float32"))
    cases = [
        (["missing.relay", "-o", "m.onnx"], "no such file"),
        (["p.relay", "-o", "p.relay"], "p.relay"),
        (["p.relay", "-o", "m.onnx", "--weights", "w.npz"], "nope"),
        (["p.relay", "-o", "m.onnx", "--opset", "7"], "--opset 7"),
        (["p.relay", "-o", "m.onnx", "--entry", "f"], "no function @f"),
    ]
    for argv, words in cases:
        done = relay("export", *argv, cwd=tmp_path)
        assert done.returncode == 2, (argv, done.stderr)
        assert words in done.stderr, (argv, done.stderr)
    assert not (tmp_path / "m.onnx").exists()
    assert (tmp_path / "p.relay").read_text() == PROGRAM
