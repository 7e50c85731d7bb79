"""``relay import`` and ``relay run --params``, run as a user runs them: in a subprocess.

Invariants checked: the text ``relay import`` writes re-parses, round-trips (alpha-equal
after print and re-parse) and type-checks; its side ``.npz`` holds exactly the weights,
keyed by ``@main``'s parameter names; ``relay run --params`` (interpreter and ``--compile``)
gives onnxruntime's outputs; ``--embed`` puts the weights in the text; the Jupyter kernel's
session loads the file; every mistake is a clean message with exit 1 or 2, never a
traceback; an interrupted write leaves no file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import relay_ref as rr
from relay_ref.testing import onnx_light

ROOT = Path(__file__).resolve().parent.parent


def ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def small_model(op: str = "Relu") -> onnx.ModelProto:
    """Gemm then ``op``; the input's name is not a Relay identifier (``input:0``)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["input:0", "fc.w", "fc.b"], ["t"], transB=1,
                              name="fc"),
             helper.make_node(op, ["t"], ["out"], name="act")]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("input:0", TensorProto.FLOAT,
                                                       ["batch", 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(w, "fc.w"), numpy_helper.from_array(b, "fc.b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def check_text(text: str) -> rr.IRModule:
    """The text parses, round-trips and type-checks; the checked module."""
    mod = rr.parse(text)
    assert rr.alpha_equal(mod, rr.parse(rr.astext(mod)))
    return rr.infer_types(mod)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("small")
    onnx.save(small_model(), folder / "small.onnx")
    np.save(folder / "x.npy", np.random.default_rng(1).standard_normal((2, 4))
            .astype(np.float32))
    return folder


def test_import_writes_text_and_weights_by_parameter_name(relay, small: Path):
    result = relay("import", "small.onnx", "-o", "small.relay", "--shape", "batch=2",
                   cwd=small)
    assert result.returncode == 0, result.stderr
    assert "wrote small.relay" in result.stderr and "small.npz" in result.stderr
    text = (small / "small.relay").read_text()
    header = text.split("#[version")[0]
    assert "// Weights: small.npz (2 arrays" in header
    assert "--params small.npz" in header
    assert "%input_0 is the ONNX input 'input:0'" in header
    mod = check_text(text)
    names = [p.name_hint for p in mod.functions["main"].params]
    assert names == ["input_0", "fc_w", "fc_b"]
    weights = np.load(small / "small.npz")
    assert sorted(weights.files) == ["fc_b", "fc_w"]
    model = small_model()
    np.testing.assert_array_equal(weights["fc_w"],
                                  numpy_helper.to_array(model.graph.initializer[0]))
    assert "Tensor[(2, 4), float32]" in text  # --shape batch=2 fixed the symbolic dim


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreter", "compile"])
def test_run_with_params_matches_onnxruntime(relay, small: Path, compiled: bool):
    assert relay("import", "small.onnx", "-o", "small.relay", cwd=small).returncode == 0
    out = f"y_{compiled}.npy"
    result = relay("run", "small.relay", "--params", "small.npz", "x.npy", "-o", out,
                   *(["--compile"] if compiled else []), cwd=small)
    assert result.returncode == 0, result.stderr
    x = np.load(small / "x.npy")
    (expected,) = ort(small_model(), {"input:0": x})
    np.testing.assert_allclose(np.load(small / out), expected, rtol=1e-5, atol=1e-6)


def test_embed_puts_the_weights_in_the_text(relay, small: Path):
    result = relay("import", "small.onnx", "-o", "embedded.relay", "--embed", cwd=small)
    assert result.returncode == 0, result.stderr
    assert not (small / "embedded.npz").exists()
    text = (small / "embedded.relay").read_text()
    assert "meta[relay.Constant][0]" in text and "#[metadata]" in text
    mod = check_text(text)
    assert [p.name_hint for p in mod.functions["main"].params] == ["input_0"]
    x = np.load(small / "x.npy")
    (expected,) = ort(small_model(), {"input:0": x})
    np.testing.assert_allclose(rr.evaluate(mod, x), expected, rtol=1e-5, atol=1e-6)
    frozen = relay("import", "small.onnx", "--freeze-params", cwd=small)
    assert frozen.returncode == 0, frozen.stderr
    assert [p.name_hint for p in check_text(frozen.stdout).functions["main"].params] == \
        ["input_0"]


def test_text_to_stdout_with_weights_beside(relay, small: Path):
    result = relay("import", "small.onnx", "--weights", "side.npz", cwd=small)
    assert result.returncode == 0, result.stderr
    assert "// Weights: side.npz (2 arrays" in result.stdout
    assert sorted(np.load(small / "side.npz").files) == ["fc_b", "fc_w"]
    check_text(result.stdout)


def test_run_without_params_names_the_weights_file(relay, small: Path):
    assert relay("import", "small.onnx", "-o", "hint.relay", cwd=small).returncode == 0
    result = relay("run", "hint.relay", "x.npy", cwd=small)
    assert result.returncode == 2
    assert "add --params hint.npz" in result.stderr


def test_params_that_do_not_fit_are_located_errors(relay, small: Path):
    assert relay("import", "small.onnx", "-o", "bad.relay", cwd=small).returncode == 0
    np.savez(small / "wrong.npz", fc_w=np.zeros((4, 4), np.float32),
             fc_b=np.zeros(3, np.float32))
    result = relay("run", "bad.relay", "--params", "wrong.npz", "x.npy", cwd=small)
    assert result.returncode == 1
    assert "wrong.npz['fc_w'] does not fit %fc_w" in result.stderr
    assert "bad.relay:" in result.stderr  # located at the parameter
    np.savez(small / "extra.npz", nope=np.zeros(3, np.float32))
    result = relay("run", "bad.relay", "--params", "extra.npz", "x.npy", cwd=small)
    assert result.returncode == 1
    assert "names no parameter of @main: 'nope'" in result.stderr
    (small / "junk.npz").write_bytes(b"not a zip")
    result = relay("run", "bad.relay", "--params", "junk.npz", "x.npy", cwd=small)
    assert result.returncode == 2
    assert "junk.npz: not a .npz file" in result.stderr


def test_import_errors_are_clean(relay, tmp_path: Path):
    missing = relay("import", tmp_path / "missing.onnx")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    (tmp_path / "text.onnx").write_text("def @main() { 1 }")
    not_onnx = relay("import", tmp_path / "text.onnx")
    assert not_onnx.returncode == 1 and "is not an ONNX model" in not_onnx.stderr
    odd = small_model("NoSuchOp")
    odd.graph.node.append(helper.make_node("AlsoMissing", ["out"], ["out2"], name="z"))
    odd.graph.output[0].name = "out2"
    onnx.save(odd, tmp_path / "odd.onnx")
    unsupported = relay("import", tmp_path / "odd.onnx", "-o", tmp_path / "odd.relay")
    assert unsupported.returncode == 1
    for word in ("NoSuchOp", "'act'", "AlsoMissing", "'z'"):
        assert word in unsupported.stderr, unsupported.stderr
    assert not (tmp_path / "odd.relay").exists() and not (tmp_path / "odd.npz").exists()
    onnx.save(small_model(), tmp_path / "ok.onnx")
    syntax = relay("import", tmp_path / "ok.onnx", "--shape", "batch:2")
    assert syntax.returncode == 2 and "NAME=DIMS" in syntax.stderr
    bad_dim = relay("import", tmp_path / "ok.onnx", "--shape", "input:0=2,x")
    assert bad_dim.returncode == 2 and "'x' is not an integer" in bad_dim.stderr
    unknown = relay("import", tmp_path / "ok.onnx", "--shape", "nothing=1")
    assert unknown.returncode == 1 and "--shape nothing=1 names neither" in unknown.stderr
    rank = relay("import", tmp_path / "ok.onnx", "--shape", "input:0=1,2,3")
    assert rank.returncode == 1 and "--shape input:0=1,2,3 has 3 dims" in rank.stderr
    assert "shapes[" not in unknown.stderr + rank.stderr  # the CLI's words, not from_onnx's
    both = relay("import", tmp_path / "ok.onnx", "--embed", "--weights", tmp_path / "w.npz")
    assert both.returncode == 2


def test_help_names_every_option(relay):
    result = relay("import", "--help")
    assert result.returncode == 0
    for option in ("-o OUT.relay", "--weights", "--embed", "--freeze-params", "--shape"):
        assert option in result.stdout


def test_writes_are_all_or_nothing(tmp_path: Path):
    from relay_ref.cli.weights import load_weights, write_files

    good = tmp_path / "w.npz"
    arrays = {"a": np.arange(3.0), "b/c": np.ones((2, 2), np.float32)}
    with pytest.raises(OSError):
        write_files({tmp_path / "no" / "x.relay": "text"}, {good: arrays})
    assert list(tmp_path.iterdir()) == []  # neither the archive nor a temporary file
    seen = []
    write_files({tmp_path / "x.relay": "text"}, {good: arrays}, advance=seen.append)
    assert seen == ["a", "b/c"]
    loaded = load_weights(str(good))
    assert loaded.keys() == arrays.keys()
    np.testing.assert_array_equal(loaded["b/c"], arrays["b/c"])
    assert sorted(np.load(good).files) == ["a", "b/c"]  # NumPy reads it as well


# -- light models (random weights by role; performance.md section 2) ----------------------

@pytest.fixture(scope="module")
def squeezenet(relay, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("squeezenet")
    model = onnx_light.random_variant(onnx.load(onnx_light.model_path("squeezenet")))
    onnx.save(model, folder / "squeezenet.onnx")
    np.save(folder / "x.npy", onnx_light.feeds(model)["data_0"])
    result = relay("import", "squeezenet.onnx", "-o", "squeezenet.relay", cwd=folder)
    assert result.returncode == 0, result.stderr
    return folder


def test_squeezenet_text_round_trips_and_type_checks(relay, squeezenet: Path):
    text = (squeezenet / "squeezenet.relay").read_text()
    mod = check_text(text)
    main = mod.functions["main"]
    weights = np.load(squeezenet / "squeezenet.npz")
    assert [p.name_hint for p in main.params] == ["data_0", *weights.files]
    assert "%0 = nn.conv2d(%data_0, %conv1_w_0" in text  # graph bindings, TVM's style
    assert relay("check", "squeezenet.relay", cwd=squeezenet).returncode == 0


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreter", "compile"])
def test_squeezenet_run_with_params_matches_onnxruntime(relay, squeezenet: Path, compiled: bool):
    out = f"y_{compiled}.npy"
    result = relay("run", "squeezenet.relay", "--params", "squeezenet.npz", "x.npy", "-o",
                   out, *(["--compile"] if compiled else []), cwd=squeezenet)
    assert result.returncode == 0, result.stderr
    model = onnx.load(squeezenet / "squeezenet.onnx")
    (expected,) = ort(model, {"data_0": np.load(squeezenet / "x.npy")})
    got = np.load(squeezenet / out)
    assert got.shape == expected.shape == (1, 1000, 1, 1)
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-6)


def test_the_kernel_loads_an_imported_model(squeezenet: Path):
    from relay_kernel.session import Session

    outcome = Session().load(str(squeezenet / "squeezenet.relay"))
    assert outcome.defined == ["@main"]


def test_resnet50_import_prints_text_that_round_trips(relay, tmp_path: Path):
    """The issue's Done-when: ``relay import`` of resnet50 (random weights) to stdout."""
    model = onnx_light.random_variant(onnx.load(onnx_light.model_path("resnet50")))
    onnx.save(model, tmp_path / "resnet50.onnx")
    result = relay("import", tmp_path / "resnet50.onnx")
    assert result.returncode == 0, result.stderr
    assert "// Weights: not saved (267 parameters" in result.stdout
    mod = check_text(result.stdout)
    assert len(mod.functions["main"].params) == 1 + 267
