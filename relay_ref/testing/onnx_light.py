"""The nine ``light_*`` models shipped in the ``onnx`` wheel, with random weights.

The shipped models make every large weight with a ``ConstantOfShape`` node filling 0.02,
so every channel is identical and their stored outputs are a useless oracle
(performance.md section 2). ``random_variant`` replaces each such node by a seeded random
initializer, and redraws the float initializers the models keep (trained BN statistics,
whose tiny variances would blow random activations up), each drawn by the role of the
input it feeds: He-scaled normal for conv and dense
weights, BN variance and scales in [0.5, 1.5], small normals for biases and means. The
same variant goes to onnxruntime and to relay_ref; ``with_logits`` also exposes the final
``Softmax``'s input as a graph output, so the pre-softmax logits are compared too.

Invariant: a variant is a function of (model, seed); it has no ``ConstantOfShape`` node
and no unused ``*_SHAPE`` initializer; its graph outputs are the model's, then the logits.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import numpy as np

NAMES = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
         "shufflenet", "squeezenet", "vgg19", "zfnet512")


def model_path(name: str) -> Path:
    """Where the wheel keeps ``light_<name>.onnx``."""
    import onnx

    return Path(onnx.__file__).parent / "backend/test/data/light" / f"light_{name}.onnx"


def random_variant(model: Any, seed: int = 0) -> Any:
    """A copy of ``model`` with every ``ConstantOfShape`` weight replaced by a random
    initializer (float32) drawn by role; see the module docstring."""
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    rng = np.random.default_rng(seed)
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    users: dict[str, list[tuple[Any, int]]] = {}
    for node in g.node:
        for k, name in enumerate(node.input):
            users.setdefault(name, []).append((node, k))

    keep, drop_inputs = [], set()
    for node in g.node:
        if node.op_type != "ConstantOfShape":
            keep.append(node)
            continue
        shape = tuple(int(d) for d in inits[node.input[0]])
        value = _draw(rng, shape, _role(node.output[0], users))
        g.initializer.append(numpy_helper.from_array(value, node.output[0]))
        g.input.append(helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT,
                                                     shape))
        drop_inputs.add(node.input[0])
    del g.node[:]
    g.node.extend(keep)
    # The trained statistics some models keep as initializers (BN variances down to 1e-14)
    # would blow random activations up: every float weight is redrawn by its role.
    for i, init in enumerate(g.initializer):
        if init.name in inits and init.name in users and init.data_type == onnx.TensorProto.FLOAT:
            value = _draw(rng, tuple(init.dims), _role(init.name, users))
            g.initializer[i].CopyFrom(numpy_helper.from_array(value, init.name))
    still_used = {n for node in g.node for n in node.input}
    for name in drop_inputs - still_used:
        _remove(g.initializer, name)
        _remove(g.input, name)
    return m


def with_logits(model: Any) -> Any:
    """``model`` with the input of its last ``Softmax`` added as a graph output (a copy;
    the model itself when it has no Softmax)."""
    import onnx
    from onnx import helper

    softmax = [n for n in model.graph.node if n.op_type == "Softmax"]
    if not softmax:
        return model
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.output.append(helper.make_empty_tensor_value_info(softmax[-1].input[0]))
    return m


def feeds(model: Any, seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal float32 values for the graph's inputs that are not initializers."""
    rng = np.random.default_rng(seed + 1)
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        out[inp.name] = rng.standard_normal(shape).astype(np.float32)
    return out


#: |relay_ref - onnxruntime| <= LOGIT_RTOL * max|onnxruntime| on the logits of a random
#: variant (measured: <= 6e-7 on every model; convolution summation orders differ)
LOGIT_RTOL = 2e-5


@functools.cache
def case(name: str, threads: int = 2) -> tuple[Any, dict[str, np.ndarray], list[np.ndarray]]:
    """The random variant of ``light_<name>`` with its logits as an extra output
    (``with_logits(random_variant(...))``), its inputs (``feeds``) and onnxruntime's
    outputs on them (CPU execution provider, ``threads`` intra-op threads): the oracle of
    the tests that run these models. Cached per process (nothing mutates it)."""
    import onnx
    import onnxruntime as ort

    model = with_logits(random_variant(onnx.load(model_path(name))))
    inputs = feeds(model)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3  # the models' unused Caffe2 blobs make ORT warn
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return model, inputs, sess.run(None, inputs)


def assert_matches_onnxruntime(name: str, got: list[np.ndarray],
                               want: list[np.ndarray]) -> None:
    """``got`` (the outputs then the logits; densenet121 has its logits only) equals
    onnxruntime's ``want``: same shapes and dtypes, finite, logits within ``LOGIT_RTOL`` of
    their scale (which random weights make varied: > 0.1), outputs within rtol 1e-3."""
    assert len(got) == len(want) == (1 if name == "densenet121" else 2)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert np.all(np.isfinite(g))
    scale = float(np.abs(want[-1]).max())
    assert scale > 0.1  # random weights give varied logits, not the shipped constant
    assert float(np.abs(got[-1] - want[-1]).max()) <= LOGIT_RTOL * scale
    np.testing.assert_allclose(got[0], want[0], rtol=1e-3, atol=1e-6)


def _role(name: str, users: dict[str, list[tuple[Any, int]]]) -> tuple[str, int, Any]:
    """(op type, input position, node) of the first real consumer of ``name``; an
    ``Unsqueeze`` (densenet's and inception_v2's BN scale and bias) is looked through."""
    node, k = users[name][0]
    while node.op_type == "Unsqueeze":
        node, k = users[node.output[0]][0]
    return node.op_type, k, node


def _draw(rng: np.random.Generator, shape: tuple[int, ...],
          role: tuple[str, int, Any]) -> np.ndarray:
    op, k, node = role
    if op == "Conv" and k == 1:  # weight (O, I/g, kh, kw): He normal over its fan-in
        std = math.sqrt(2.0 / max(1, math.prod(shape[1:])))
    elif op == "Gemm" and k == 1:  # weight: (N, K) with transB, else (K, N)
        trans_b = any(a.name == "transB" and a.i for a in node.attribute)
        std = math.sqrt(2.0 / max(1, shape[1] if trans_b else shape[0]))
    elif (op == "BatchNormalization" and k in (1, 4)) or (op == "Mul"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)  # scale / variance
    else:  # biases, BN means and offsets
        std = 0.1
    return (rng.standard_normal(shape) * std).astype(np.float32)


def _remove(container: Any, name: str) -> None:
    for i, item in enumerate(container):
        if item.name == name:
            del container[i]
            return
