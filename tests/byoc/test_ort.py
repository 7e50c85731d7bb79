"""The ``ort`` backend's codegen on partitioned functions written as TVM prints them
(``Compiler="ort"``, composites inside, tuple outputs, bound constants): the session's
values equal ``rr.evaluate`` of the same function; a region the exporter refuses is
``CodegenUnsupported``; the support table and composites agree with the exporter."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.byoc.errors import CodegenUnsupported
from relay_ref.byoc.ort import MIN_FLOPS, PATTERNS, ort_codegen, supported_ops, worth
from relay_ref.ir.expr import Call, Constant, Function, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType
from relay_ref.passes.compiler_support import CallInfo, RegionCost
from relay_ref.passes.pattern import match

RNG = np.random.default_rng(1)
NAME = "tvmgen_default_ort_main_0"

REGION = f"""
def @{NAME}(%ort_0_i0: Tensor[(1, 3, 8, 8), float32], %ort_0_i1: Tensor[(4, 3, 3, 3), float32],
    %ort_0_i2: Tensor[(4,), float32], %ort_0_i3: Tensor[(10, 64), float32], Compiler="ort",
    Primitive=1, Inline=1, global_symbol="{NAME}") {{
  %2 = fn (%FunctionVar_0_0, %FunctionVar_0_1, %FunctionVar_0_2,
           PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_",
           Composite="ort.conv2d_bias_relu") {{
    %0 = nn.conv2d(%FunctionVar_0_0, %FunctionVar_0_1, padding=[1, 1, 1, 1]);
    %1 = nn.bias_add(%0, %FunctionVar_0_2);
    nn.relu(%1)
  }};
  %3 = %2(%ort_0_i0, %ort_0_i1, %ort_0_i2);
  %4 = nn.max_pool2d(%3, pool_size=[2, 2], strides=[2, 2]);
  %5 = nn.batch_flatten(%4);
  %6 = nn.dense(%5, %ort_0_i3);
  (%3, nn.softmax(%6))
}}

def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
          %b: Tensor[(4,), float32], %d: Tensor[(10, 64), float32]) {{
  %0 = @{NAME}(%x, %w, %b, %d);
  %0.1
}}
"""


def _args() -> list[np.ndarray]:
    return [RNG.standard_normal(s).astype("float32")
            for s in [(1, 3, 8, 8), (4, 3, 3, 3), (4,), (10, 64)]]


def _compare(got: object, want: object) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _compare(g, w)
        return
    assert isinstance(got, np.ndarray)
    w = np.asarray(want)
    assert got.shape == w.shape and got.dtype == w.dtype
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_region_with_composite_and_tuple_output() -> None:
    mod = rr.infer_types(rr.parse(REGION))
    func = mod[NAME]
    assert func.attr("Compiler", None) == "ort"
    call = ort_codegen(func, mod.checked_types)
    args = _args()
    want = rr.evaluate(mod, *args, entry=NAME)
    _compare(call(*args), want)
    # built once, callable many times; non-contiguous (Fortran-order) inputs are accepted
    again = [np.asfortranarray(a) for a in args]
    _compare(call(*again), want)


def test_bound_constants_and_shared_nodes() -> None:
    x = Var("ort_0_i0", TensorType((2, 3), "float32"))
    c = Constant(RNG.standard_normal((2, 3)).astype("float32"))
    shared = Call(Op("add"), (x, c))
    body = Call(Op("multiply"), (shared, Call(Op("exp"), (shared,))))
    func = Function((x,), body, attrs=(("Compiler", "ort"), ("Primitive", 1),
                                       ("Inline", 1), ("global_symbol", "f")))
    mod = rr.infer_types(IRModule({"f": func}))
    arg = RNG.standard_normal((2, 3)).astype("float32")
    call = ort_codegen(mod["f"], mod.checked_types)
    _compare(call(arg), rr.evaluate(mod, arg, entry="f"))


def test_single_output_region() -> None:
    text = (f'def @{NAME}(%i: Tensor[(3, 4), float32], Compiler="ort", Primitive=1, '
            f'Inline=1, global_symbol="{NAME}") {{ sum(tanh(%i), axis=[1]) }}')
    mod = rr.infer_types(rr.parse(text))
    arg = RNG.standard_normal((3, 4)).astype("float32")
    got = ort_codegen(mod[NAME], mod.checked_types)(arg)
    _compare(got, rr.evaluate(mod, arg, entry=NAME))


@pytest.mark.parametrize("body", [
    "argsort(%i)",
    "nn.conv2d(%i, %i, data_layout=\"NHWC\", kernel_layout=\"HWIO\")",
])
def test_unsupported_region_is_codegen_unsupported(body: str) -> None:
    text = (f'def @{NAME}(%i: Tensor[(3, 3, 3, 3), float32], Compiler="ort", Primitive=1, '
            f'Inline=1, global_symbol="{NAME}") {{ {body} }}')
    mod = rr.infer_types(rr.parse(text))
    with pytest.raises(CodegenUnsupported) as info:
        ort_codegen(mod[NAME], mod.checked_types)
    assert isinstance(info.value, rr.RelayError)
    assert "ort:" in str(info.value)


def test_support_table_follows_the_exporter() -> None:
    mod = rr.infer_types(rr.parse(
        "def @main(%x: Tensor[(1, 4, 5, 5), float32], %w: Tensor[(2, 4, 1, 1), float32]) {"
        " (nn.conv2d(%x, %w), nn.conv2d(%x, %w, data_layout=\"NCHW\", kernel_layout=\"OIHW\","
        " out_dtype=\"float64\")) }"))
    ops = supported_ops()
    assert {"nn.conv2d", "nn.dense", "add", "nn.lrn", "full", "concatenate"} <= set(ops)
    assert "argsort" not in ops
    calls = mod["main"].body.fields
    infos = [CallInfo(c, "nn.conv2d", c.attrs, c.args,
                      tuple(mod.checked_types[a] for a in c.args), mod.checked_types[c])
             for c in calls]
    assert ops["nn.conv2d"](infos[0]) is True
    assert ops["nn.conv2d"](infos[1]) is False  # out_dtype differs: not exported


def test_composite_patterns_match_and_check() -> None:
    mod = rr.infer_types(rr.parse(
        "def @main(%x: Tensor[(1, 4, 5, 5), float32], %w: Tensor[(2, 4, 1, 1), float32],"
        " %b: Tensor[(2,), float32], %v: Tensor[(3, 8), float32], %u: Tensor[(6, 8), float32],"
        " %c: Tensor[(6,), float32]) {"
        " (nn.relu(nn.bias_add(nn.conv2d(%x, %w), %b)), nn.relu(nn.conv2d(%x, %w)),"
        " nn.bias_add(nn.dense(%v, %u), %c, axis=-1)) }"))
    types = mod.checked_types
    names = [name for name, _, _ in PATTERNS]
    assert names == ["ort.conv2d_bias_relu", "ort.conv2d_relu", "ort.dense_bias"]
    for (name, pattern, check), expr in zip(PATTERNS, mod["main"].body.fields, strict=True):
        m = match(pattern, expr, types.get)
        assert m is not None, name
        info = CallInfo(expr, expr.op.name, expr.attrs, expr.args,
                        tuple(types[a] for a in expr.args), types[expr], m)
        assert check(info) is True


def test_cost_model() -> None:
    assert not worth(RegionCost(ops=1, flops=8, boundary_bytes=64))
    assert worth(RegionCost(ops=1, flops=MIN_FLOPS, boundary_bytes=64))


def test_import_is_cheap() -> None:
    code = ("import sys, relay_ref.byoc.ort; "
            "assert 'onnxruntime' not in sys.modules and 'onnx' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
