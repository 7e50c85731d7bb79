"""``to_onnx``: small Relay programs per operator family exported to ONNX and run by
onnxruntime equal ``rr.evaluate``; the nine ``light_*`` models imported and exported back
equal onnxruntime on the original; what cannot be exported is a located ``RelayError``."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx_case import as_list

import relay_ref as rr
from relay_ref.frontend.onnx import from_onnx, to_onnx
from relay_ref.frontend.onnx.export import ExportError
from relay_ref.passes.bind_params import bind_params
from relay_ref.testing import onnx_light

RNG = np.random.default_rng(0)


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def _ort(model: onnx.ModelProto, *args: np.ndarray) -> list[np.ndarray]:
    names = [i.name for i in model.graph.input]
    return _session(model).run(None, dict(zip(names, args, strict=True)))


def _arr(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype.startswith("int"):
        return RNG.integers(-5, 6, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def check(text: str, *args: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Export ``text``'s ``@main``, run it in onnxruntime, compare with ``rr.evaluate``."""
    mod = rr.parse(text)
    model = to_onnx(mod)
    onnx.checker.check_model(model)
    want = as_list(rr.evaluate(mod, *args))
    got = _ort(model, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def _fn(params: str, body: str) -> str:
    return f"def @main({params}) {{ {body} }}"


X = "%x: Tensor[(2, 3, 4), float32]"
Y = "%y: Tensor[(3, 1), float32]"

UNARY = ["nn.relu", "exp", "tanh", "sigmoid", "erf", "floor", "ceil", "negative", "abs",
         "copy"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op: str) -> None:
    check(_fn(X, f"{op}(%x)"), _arr((2, 3, 4)))


@pytest.mark.parametrize("op", ["log", "sqrt", "rsqrt"])
def test_unary_positive(op: str) -> None:
    check(_fn(X, f"{op}(%x)"), np.abs(_arr((2, 3, 4))) + 0.1)


@pytest.mark.parametrize("op", BINARY)
def test_binary_broadcasting(op: str) -> None:
    x = np.abs(_arr((2, 3, 4))) + 0.5
    check(_fn(f"{X}, {Y}", f"{op}(%x, %y)"), x, _arr((3, 1)))


@pytest.mark.parametrize("op", COMPARE)
def test_comparisons_and_logic(op: str) -> None:
    check(_fn(f"{X}, {Y}", f"logical_not(logical_xor({op}(%x, %y), logical_and(less(%x, "
               f"0f), logical_or(greater(%y, 0f), equal(%x, %x)))))"),
          _arr((2, 3, 4)), _arr((3, 1)))


def test_where_clip_leaky_cast() -> None:
    check(_fn(f"{X}, {Y}", "where(greater(%x, %y), clip(%x, a_min=-0.5f, a_max=0.7f), "
               "nn.leaky_relu(%y, alpha=0.1f))"), _arr((2, 3, 4)), _arr((3, 1)))
    check(_fn("%x: Tensor[(5,), float32]", "cast(%x, dtype=\"int32\")"),
          np.array([1.5, -2.5, 0.2, 7.9, -0.1], "float32"))


@pytest.mark.parametrize("dst", ["uint8", "uint16", "uint32", "int8"])
def test_float_to_integer_cast_truncates_as_the_reference(dst: str) -> None:
    """In range, a float cast to an integer truncates towards zero in both. Out of range
    the C conversion is undefined (NumPy's and onnxruntime's results depend on the CPU's
    instructions), so no such value is compared here."""
    x = np.array([1.5, 2.5, 0.5, 100.75, 126.9, 7.5], "float32")
    if not dst.startswith("u"):
        x = x - 50
    check(_fn("%x: Tensor[(6), float32]", f"cast(%x, dtype=\"{dst}\")"), x)


def test_integer_arithmetic() -> None:
    t = "Tensor[(4, 3), int32]"
    check(_fn(f"%a: {t}, %b: {t}", "add(multiply(%a, %b), subtract(%a, maximum(%a, %b)))"),
          _arr((4, 3), "int32"), _arr((4, 3), "int32"))


REDUCE = ["sum", "mean", "max", "min", "prod"]


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(REDUCE), axes=st.sets(st.integers(-3, 2), max_size=3),
       none=st.booleans(), keepdims=st.booleans(), exclude=st.booleans())
def test_reductions(op: str, axes: set[int], none: bool, keepdims: bool,
                    exclude: bool) -> None:
    if len({a % 3 for a in axes}) != len(axes):
        return
    axis = "" if none else f"axis=[{', '.join(map(str, sorted(axes)))}], "
    check(_fn(X, f"{op}(%x, {axis}keepdims={keepdims}, exclude={exclude})"),
          _arr((2, 3, 4)), rtol=1e-5, atol=1e-5)


def test_shape_ops() -> None:
    x = _arr((2, 3, 4))
    check(_fn(X, "reshape(%x, newshape=[0, -1])"), x)
    check(_fn(X, "expand_dims(%x, axis=1, num_newaxis=2)"), x)
    check(_fn(X, "transpose(%x, axes=[2, 0, 1])"), x)
    check(_fn(X, "transpose(%x)"), x)
    check(_fn(X, "nn.batch_flatten(%x)"), x)
    check(_fn("%x: Tensor[(2, 1, 4, 1), float32]", "squeeze(%x, axis=[1])"),
          _arr((2, 1, 4, 1)))
    check(_fn("%x: Tensor[(2, 1, 4, 1), float32]", "squeeze(%x)"), _arr((2, 1, 4, 1)))
    check(_fn(f"{X}, %z: Tensor[(2, 5, 4), float32]", "concatenate((%x, %z), axis=-2)"),
          x, _arr((2, 5, 4)))
    check(_fn(X, "full(1.5f, shape=[2, 3], dtype=\"float32\")"), x)
    check(_fn(X, "nn.pad(%x, 2f, pad_width=[[0, 1], [2, 0], [1, 1]])"), x)


def test_split_tuple_outputs() -> None:
    x = _arr((2, 6, 4))
    check(_fn("%x: Tensor[(2, 6, 4), float32]",
              "%0 = split(%x, indices_or_sections=[1, 4], axis=1); "
              "(%0.0, add(%0.1, 1f), %0.2)"), x)
    check(_fn("%x: Tensor[(2, 6, 4), float32]",
              "%0 = split(%x, indices_or_sections=3, axis=1); %0"), x)


@settings(max_examples=40, deadline=None)
@given(begin=st.integers(-7, 7), end=st.integers(-8, 8), stride=st.sampled_from([1, 2, 3,
                                                                                  -1, -2]))
def test_strided_slice(begin: int, end: int, stride: int) -> None:
    text = _fn("%x: Tensor[(3, 6), float32]",
               f"strided_slice(%x, begin=[0, {begin}], end=[3, {end}], "
               f"strides=[1, {stride}])")
    check(text, _arr((3, 6)))  # empty slices included


def test_take_modes() -> None:
    idx = np.array([[0, 3], [-1, 7]], "int32")
    check(_fn("%x: Tensor[(3, 4), float32], %i: Tensor[(2, 2), int32]",
              "take(%x, %i, axis=1)"), _arr((3, 4)), idx)
    check(_fn("%x: Tensor[(3, 4), float32], %i: Tensor[(2, 2), int32]", "take(%x, %i)"),
          _arr((3, 4)), idx)


@pytest.mark.parametrize("mode", ["clip", "fast", "wrap"])
@pytest.mark.parametrize("axis", [", axis=1", ""])
def test_take_negative_indices_each_mode(mode: str, axis: str) -> None:
    n = 4 if axis else 12
    idx = -np.arange(1, n + 1, dtype="int32")  # every in-range negative index of "fast"
    if mode != "fast":
        idx = np.concatenate([idx, [n, 2 * n + 1, -3 * n - 2]]).astype("int32")
    check(_fn(f"%x: Tensor[(3, 4), float32], %i: Tensor[({len(idx)}), int32]",
              f"take(%x, %i{axis}, mode=\"{mode}\")"), _arr((3, 4)), idx)


def test_take_fast_out_of_range_fails_as_the_reference() -> None:
    mod = rr.parse(_fn("%x: Tensor[(3, 4), float32], %i: Tensor[(1), int32]",
                       "take(%x, %i, axis=1, mode=\"fast\")"))
    model = to_onnx(mod)
    for bad in (4, -5):
        idx = np.array([bad], "int32")
        with pytest.raises(rr.RelayError):
            rr.evaluate(mod, _arr((3, 4)), idx)
        with pytest.raises(Exception, match="(?i)indices|out of bounds|range"):
            _ort(model, _arr((3, 4)), idx)


def test_take_wrap_over_an_empty_axis_is_not_exported() -> None:
    mod = rr.parse(_fn("%x: Tensor[(3, 0), float32], %i: Tensor[(1), int32]",
                       "take(%x, %i, axis=1, mode=\"wrap\")"))
    with pytest.raises(ExportError, match="take"):
        to_onnx(mod)


@settings(max_examples=40, deadline=None)
@given(stride=st.integers(1, 2), pad=st.lists(st.integers(0, 2), min_size=4, max_size=4),
       dil=st.integers(1, 2), groups=st.sampled_from([1, 2]), k=st.integers(1, 3))
def test_conv2d(stride: int, pad: list[int], dil: int, groups: int, k: int) -> None:
    w = f"Tensor[(4, {4 // groups}, {k}, {k}), float32]"
    check(_fn(f"%x: Tensor[(1, 4, 7, 6), float32], %w: {w}, %b: Tensor[(4,), float32]",
              f"nn.relu(nn.bias_add(nn.conv2d(%x, %w, strides=[{stride}, {stride}], "
              f"padding={pad}, dilation=[{dil}, {dil}], groups={groups}), %b))"),
          _arr((1, 4, 7, 6)), _arr((4, 4 // groups, k, k)), _arr((4,)), rtol=1e-4,
          atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(["max", "avg"]), k=st.integers(1, 3), stride=st.integers(1, 2),
       pad=st.lists(st.integers(0, 1), min_size=2, max_size=4).filter(lambda p: len(p) != 3),
       include=st.booleans())
def test_pool2d(kind: str, k: int, stride: int, pad: list[int], include: bool) -> None:
    extra = f", count_include_pad={include}" if kind == "avg" else ""
    if max(pad) >= k:  # ONNX requires pads smaller than the window
        return
    check(_fn("%x: Tensor[(1, 2, 6, 5), float32]",
              f"nn.{kind}_pool2d(%x, pool_size=[{k}, {k}], strides=[{stride}, {stride}], "
              f"padding={pad}{extra})"), _arr((1, 2, 6, 5)))


def test_nn_misc() -> None:
    x4 = _arr((2, 3, 4, 5))
    c = "Tensor[(3,), float32]"
    check(_fn(f"%x: Tensor[(2, 3, 4, 5), float32], %g: {c}, %b: {c}, %m: {c}, %v: {c}",
              "%0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-3f); %0.0"),
          x4, _arr((3,)), _arr((3,)), _arr((3,)), np.abs(_arr((3,))) + 0.5)
    check(_fn(f"%x: Tensor[(2, 3, 4, 5), float32], %g: {c}, %b: {c}, %m: {c}, %v: {c}",
              "nn.batch_norm(%x, %g, %b, %m, %v, center=False, scale=False)"),
          x4, _arr((3,)), _arr((3,)), _arr((3,)), np.abs(_arr((3,))) + 0.5)
    check(_fn("%x: Tensor[(2, 3, 4, 5), float32]",
              "(nn.global_avg_pool2d(%x), nn.global_max_pool2d(%x))"), x4)
    check(_fn("%x: Tensor[(2, 7, 4, 5), float32]",
              "nn.lrn(%x, size=3, alpha=0.01f, beta=0.75f, bias=1f)"), _arr((2, 7, 4, 5)))
    check(_fn("%x: Tensor[(2, 3, 4, 5), float32]",
              "(nn.softmax(%x, axis=1), nn.log_softmax(%x))"), x4)
    check(_fn("%x: Tensor[(2, 3, 4, 5), float32]",
              "%0 = nn.dropout(%x, rate=0.3f); %0.0"), x4)


def test_dense_matmul() -> None:
    check(_fn("%x: Tensor[(2, 5), float32], %w: Tensor[(3, 5), float32], "
              "%b: Tensor[(3,), float32]", "nn.bias_add(nn.dense(%x, %w), %b, axis=-1)"),
          _arr((2, 5)), _arr((3, 5)), _arr((3,)), rtol=1e-5, atol=1e-5)
    check(_fn("%x: Tensor[(4, 2, 5), float32], %w: Tensor[(3, 5), float32]",
              "nn.dense(%x, %w)"), _arr((4, 2, 5)), _arr((3, 5)), atol=1e-5)
    check(_fn("%x: Tensor[(5, 2), float32], %w: Tensor[(3, 5), float32]",
              "nn.matmul(%x, %w, transpose_a=True, transpose_b=True)"),
          _arr((5, 2)), _arr((3, 5)), atol=1e-5)
    check(_fn("%x: Tensor[(2, 4, 5), float32], %w: Tensor[(2, 3, 5), float32]",
              "nn.batch_matmul(%x, %w)"), _arr((2, 4, 5)), _arr((2, 3, 5)), atol=1e-5)


def test_constants_params_lets_and_composites() -> None:
    text = ("def @main(%x: Tensor[(1, 2, 5, 5), float32], %w: Tensor[(3, 2, 3, 3), float32])"
            " { let %c = nn.conv2d(%x, %w, padding=[1, 1]); "
            "%0 = fn (%a, %b, Composite=\"ort.conv2d_relu\") { nn.relu(nn.conv2d(%a, %b)) };"
            " (add(%c, ones(shape=[3, 1, 1], dtype=\"float32\")), %0(%x, %w), %c) }")
    x, w = _arr((1, 2, 5, 5)), _arr((3, 2, 3, 3))
    check(text, x, w, rtol=1e-5, atol=1e-5)
    mod = rr.parse(text)
    model = to_onnx(mod, {"w": w})
    assert [i.name for i in model.graph.input] == ["x"]
    assert "w" in {i.name for i in model.graph.initializer}
    want = as_list(rr.evaluate(mod, x, w))
    for g, v in zip(_ort(model, x), want, strict=True):
        np.testing.assert_allclose(g, v, rtol=1e-5, atol=1e-5)


def test_names_never_collide() -> None:
    """Parameters named like the exporter's fresh names (and like the outputs) stay
    distinct; a bare function exports too."""
    names = ["const_1", "add_2", "relu_3", "output"]
    params = ", ".join(f"%{n}: Tensor[(2,), float32]" for n in names)
    mod = rr.parse(_fn(params, "(nn.relu(add(%const_1, 1f)), multiply(%add_2, %relu_3), "
                               "%output)"))
    check(rr.astext(mod), *(_arr((2,)) for _ in names))
    model = to_onnx(mod["main"])
    assert [i.name for i in model.graph.input] == names


def test_long_chain_is_iterative() -> None:
    body = "%x"
    lines = []
    for i in range(2000):
        lines.append(f"%{i} = add({body}, 1f);")
        body = f"%{i}"
    check(_fn("%x: Tensor[(2,), float32]", " ".join(lines) + f" {body}"), _arr((2,)),
          rtol=1e-4)


# -- errors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("body, words", [
    ("nn.conv2d(%x, %w, data_layout=\"NHWC\", kernel_layout=\"HWIO\")", "nn.conv2d"),
    ("argsort(%x)", "argsort has no ONNX export"),
    ("nn.max_pool2d(%x, pool_size=[2, 2], ceil_mode=True)", "nn.max_pool2d"),
    ("if (less(sum(%x), 0f)) { %x } else { negative(%x) }", "if expression"),
    ("%0 = fn (%a) { %a }; %0(%x)", "not dataflow"),
    ("let %r = ref(%x); ref_read(%r)", "reference"),
])
def test_unsupported_is_located(body: str, words: str) -> None:
    text = _fn("%x: Tensor[(1, 4, 4, 4), float32], %w: Tensor[(3, 3, 4, 4), float32]",
               body)
    mod = rr.parse(text)
    with pytest.raises(rr.RelayError) as info:
        to_onnx(mod)
    err = info.value
    assert isinstance(err, ExportError)
    assert words in str(err)
    assert err.diagnostics[0].span is not None


def test_bad_entry_and_opset() -> None:
    mod = rr.parse(_fn(X, "%x"))
    with pytest.raises(ExportError, match="no function @nope"):
        to_onnx(mod, entry="nope")
    with pytest.raises(ExportError, match="opset 9"):
        to_onnx(mod, opset=9)
    model = to_onnx(mod, opset=18)
    assert model.opset_import[0].version == 18
    for bad in ("x", "13", 13.5, True):
        with pytest.raises(TypeError, match="opset must be an integer"):
            to_onnx(mod, opset=bad)  # type: ignore[arg-type]
    assert to_onnx(mod, opset=np.int64(14)).opset_import[0].version == 14


W = "%x: Tensor[(2, 3), float32], %w: Tensor[(3), float32], %k: (Tensor[(3), float32],)"


@pytest.mark.parametrize("params, says, at", [
    ({"w": "abc"}, "params['w'] does not fit %w: expected a tensor of type "
     "Tensor[(3), float32], got a Python str", "%w"),
    ({"w": np.zeros(4, "float32")}, "got a tensor of shape (4) and dtype float32", "%w"),
    ({"w": np.zeros(3, "float64")}, "got a tensor of shape (3) and dtype float64", "%w"),
    ({"w": np.float32(2)}, "got a tensor of shape () and dtype float32", "%w"),
    ({"w": [1.0, 2.0]}, "got a list of shape (2)", "%w"),
    ({"w": None}, "got a Python NoneType", "%w"),
    ({"w": True}, "got the scalar the bool True", "%w"),
    ({"w": 1.5}, "got the scalar the float 1.5", "%w"),
    ({"v": np.zeros(3, "float32")}, "params names no parameter of @main: 'v' "
     "(its parameters: %x, %w, %k)", "def"),
    ({"k": (np.zeros(3, "float32"),)}, "params['k']: only tensor parameters", "%k"),
])
def test_params_are_checked_as_bind_params_checks_them(params: dict, says: str,
                                                       at: str) -> None:
    text = _fn(W, "add(%x, add(%w, %k.0))")
    mod = rr.parse(text)
    with pytest.raises(ExportError) as info:
        to_onnx(mod, params)
    assert says in info.value.diagnostics[0].message
    span = info.value.diagnostics[0].span
    assert span is not None and text[span.column - 1:].startswith(at)  # one line
    with pytest.raises(rr.RelayError, match=re.escape(says.split(": expected")[0])):
        bind_params(mod, "main", params)


def test_params_lists_are_converted_to_the_parameter_dtype() -> None:
    mod = rr.parse(_fn("%x: Tensor[(2, 3), float32], %w: Tensor[(3), float32]",
                       "add(%x, %w)"))
    model = to_onnx(mod, {"w": [1, 2, 3]})
    x = _arr((2, 3))
    np.testing.assert_allclose(_ort(model, x)[0],
                               rr.evaluate(mod, x, np.array([1, 2, 3], "float32")))
    with pytest.raises(TypeError, match="params must be a dict"):
        to_onnx(mod, [("w", [1, 2, 3])])  # type: ignore[arg-type]


# -- the light_* models ----------------------------------------------------------------------

SMALL = ("bvlc_alexnet", "inception_v1", "shufflenet", "squeezenet", "zfnet512")
LARGE = ("densenet121", "inception_v2", "resnet50", "vgg19")
assert sorted(SMALL + LARGE) == sorted(onnx_light.NAMES)
# bvlc_alexnet and zfnet512 carry ~240 MB of weights: drawing their variant takes ~8 s and
# exporting + loading them back ~4 s (measured), so here they are slow too (CI runs them)
HEAVY = LARGE + ("bvlc_alexnet", "zfnet512")


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in HEAVY
                                               else [], id=n) for n in onnx_light.NAMES])
def test_light_model_exported_back_matches_onnxruntime(name: str) -> None:
    model, feeds, want = onnx_light.case(name)
    mod, params = from_onnx(model)
    exported = to_onnx(mod, params)
    onnx.checker.check_model(exported)
    assert [i.name for i in exported.graph.input] == list(feeds)
    onnx_light.assert_matches_onnxruntime(name, _session(exported).run(None, feeds), want)


def test_partitioned_program_exports_with_its_regions_inlined() -> None:
    """``relay partition`` then ``relay export``: the calls of ``Compiler=`` globals (with
    composites inside, one region called twice) are inlined; the one graph equals
    ``rr.evaluate`` of the original; a call of any other global is still refused."""
    text = ("def @main(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(4, 3, 3, 3), float32],"
            " %b: Tensor[(4), float32]) {"
            " %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1, 1, 1]), %b));"
            " %1 = tanh(%0); (exp(%1), %0) }")
    mod = rr.parse(text)
    args = (_arr((1, 3, 6, 6)), _arr((4, 3, 3, 3)), _arr((4,)))
    part = rr.partition(mod, targets=["ort"])
    assert any(f.attr("Compiler") == "ort" for f in part.functions.values())
    model = to_onnx(part)
    for got, want in zip(_ort(model, *args), as_list(rr.evaluate(mod, *args)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    twice = rr.parse('''
def @r(%a: Tensor[(3), float32], Compiler="ort", Primitive=1, Inline=1, global_symbol="r")
    -> Tensor[(3), float32] { exp(%a) }
def @main(%x: Tensor[(3), float32]) { add(@r(%x), @r(negative(%x))) }''')
    x = _arr((3,))
    np.testing.assert_allclose(_ort(to_onnx(twice), x)[0], rr.evaluate(twice, x),
                               rtol=1e-6)
    plain = rr.parse('def @g(%a: Tensor[(3), float32]) { exp(%a) }\n'
                     'def @main(%x: Tensor[(3), float32]) { @g(%x) }')
    with pytest.raises(ExportError, match="global reference"):
        to_onnx(plain)
