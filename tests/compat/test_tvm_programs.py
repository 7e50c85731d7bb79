"""Compatibility with Relay text from TVM: its parser tests, its std library, and modules
TVM printed (tests/programs/tvm/*.relay). Networks are evaluated on random inputs and
compared with NumPy computed here, independently of relay_ref's ops; TVM's own
``/* ty=... */`` comments are checked against relay_ref's inferred types."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import relay_ref as rr

PROGRAMS = Path(__file__).parent.parent / "programs" / "tvm"


def _text(name: str) -> str:
    return (PROGRAMS / name).read_text()


# -- tests/python/relay/test_ir_parser.py, expression-level cases -----------------------------

PARSER_EXPRS = [
    "// c\n()", "/* a\n b */ ()", "/* a /* nested */ */ ()",
    "1", "10", "0", "-100", "-05", "9223372036854775807", "-42i", "-42i16", "-42i32", "-42i64",
    "2147483647", "2147483648", "1.0f", "1.56667f", "0.0f", "-10.0f", "1e-1f", "1e+1f",
    "1E-1f", "1E+1f", "1.0e-1f", "1.0e+1f", "1.0E-1f", "1.0E+1f", "3f16", "3f32", "3f", "3f64",
    "True", "False", "--10", "---10",
    "1 * 1", "1 / 1", "1 + 1", "1 - 1", "1 < 1", "1 > 1", "1 <= 1", "1 >= 1", "1 == 1",
    "1 != 1", "1 * 1 + 1 < 1 == 1", "1 == 1 < 1 + 1 * 1",
    "let %foo = (); %foo", "add", "nn.global_avg_pool2d",
    "let %x = 1; ()", "let %x = 1;\nlet %y = 2;\n()", "(); ()", "let %_ = 1; ()",
    "%0 = (); %1 = 1; (%0, %0, %1)", "%1 = (); %1",
    "()", "(0,)", "(0, 1)", "(0, 1, 2)",
    "free_var %x: float32; %x((%x,).0, %x)",
    "fn () { 0 }", "fn (%x) { %x }", "fn (%x, %y) { %x + %y }",
    "fn (%x: int32) -> int32 { %x }", "if (True) { 0 } else { 1 }",
    "let %id = fn (%x) { %x };\n10 * %id(10)", "let %constant = fn () { 0 };\n%constant()",
    "(fn (%x) { %x })(0)",
    "let %curried_mult =\n fn (%x) {\n fn (%y) {\n %x * %y\n }\n };\n %curried_mult(0);\n"
    " %curried_mult(0)(0)",
    "abs(1)", "let %_ : _ = (); ()",
    *(f"let %_ : {t} = (); ()" for t in (
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
        "float32", "float64", "bool", "int8x4", "uint1x4", "float16x4")),
    "let %_ : Tensor[(), float32] = (); ()", "let %_ : Tensor[(1), float32] = (); ()",
    "let %_ : Tensor[(1, 1), float32] = (); ()", "let %_ : Tensor[(?, 1), float32] = (); ()",
    "let %_: fn () -> int32 = fn () -> int32 { 0 }; ()",
    "let %_: fn (int32) -> int32 = fn (%x: int32) -> int32 { 0 }; ()",
    "let %_: fn (int32, int32) -> int32 = fn (%x: int32, %y: int32) -> int32 { 0 }; ()",
    "let %_: () = (); ()", "let %_: (int32,) = (0,); ()", "let %_: (int32, int32) = (0, 1); ()",
    'free_var %x: Tensor[(1, 32, 32, 3), float32];\nfree_var %y: Tensor[(1, 1, 3, 3), float32];'
    '\nnn.conv2d(%x, %y, data_layout="NHWC", kernel_layout="HWIO")',
    "fn (%x: Tensor[(2, 3), float32], Primitive=1, relay.reshape_only=1) -> Tensor[(6), float32]"
    " {\n  reshape(%x, newshape=[-1])\n}",
    "free_var %x: Tensor[(3, 4), float32]; clip(%x, a_min=-inff, a_max=inff)",
    # an expression as TVM prints it (`print(expr)`): free_var lines, graph bindings, comments
    "free_var %x: Tensor[(2, 2), float32];\nfree_var %y: Tensor[(2, 2), float32];\n"
    "%0 = add(%x, %y) /* ty=Tensor[(2, 2), float32] */;\n"
    "%1 = multiply(%0, %0) /* ty=Tensor[(2, 2), float32] */;\n"
    "(%0, %1) /* ty=(Tensor[(2, 2), float32], Tensor[(2, 2), float32]) */",
]


@pytest.mark.parametrize("text", PARSER_EXPRS)
def test_ir_parser_expressions_parse_and_round_trip(text: str) -> None:
    expr = rr.parse_expr(text)
    assert rr.alpha_equal(expr, rr.parse_expr(rr.astext(expr)))


@pytest.mark.parametrize("text", [
    "2147483648i32", "32768i16", "3.40283e+38f32", "meta[type_key][1337]", "let @x = 1; ()",
    "let x = 1; ()", "if (True) {\n let %x = ();\n ()\n} else {\n %x\n}",
])
def test_ir_parser_rejections(text: str) -> None:
    with pytest.raises(rr.ParseError):
        rr.parse_expr(text)


@pytest.mark.parametrize("text,value,dtype", [
    ("-42i", -42, "int32"), ("-42i16", -42, "int16"), ("2147483648", 2147483648, "int64"),
    ("--10", 10, "int32"), ("---10", -10, "int32"), ("3f16", 3.0, "float16"),
    ("3f64", 3.0, "float64"), ("1E+1f", 10.0, "float32"),
])
def test_ir_parser_literal_values(text: str, value: object, dtype: str) -> None:
    data = rr.parse_expr(text).data
    assert data.item() == value and str(data.dtype) == dtype


def test_ir_parser_precedence() -> None:
    same = rr.alpha_equal
    assert same(rr.parse_expr("1 * 1 + 1 < 1 == 1"), rr.parse_expr("(((1 * 1) + 1) < 1) == 1"))
    assert same(rr.parse_expr("1 == 1 < 1 + 1 * 1"), rr.parse_expr("1 == (1 < (1 + (1 * 1)))"))
    assert not same(rr.parse_expr("1 * 1 + 1"), rr.parse_expr("1 * (1 + 1)"))


def test_ir_parser_duplicates_are_errors() -> None:
    list_defn = "type List[A] { Cons(A, List[A]), Nil, }\n"
    for text in (list_defn * 2, "type Ayy { Lmao }\ntype Haha { Lmao }",
                 "def @id[A](%x: A) -> A { %x }\ndef @id[A](%x: A) -> A { %x }"):
        with pytest.raises(rr.ParseError):
            rr.parse(text, prelude=False)


# -- TVM's std library -------------------------------------------------------------------------

TVM_PRELUDE_TYPES = {
    "id": "fn [A](A) -> A",
    "compose": "fn [A, B, C](fn (B) -> C, fn (A) -> B) -> fn (A) -> C",
    "flip": "fn [A, B, C](fn (A, B) -> C) -> fn (B, A) -> C",
    "nth": "fn [A](List[A], int32) -> A",
    "foldr1": "fn [A](fn (A, A) -> A, List[A]) -> A",
    "sum": "fn (List[int32]) -> int32",
    "zip": "fn [A, B](List[A], List[B]) -> List[(A, B)]",
    "map_accuml": "fn [A, B, C](fn (A, B) -> (A, C), A, List[B]) -> (A, List[C])",
    "unfoldl": "fn [A, B](fn (A) -> Option[(A, B)], A) -> List[B]",
    "size": "fn [A](Tree[A]) -> int32",
    "iterate": "fn [A](fn (A) -> A, int32) -> fn (A) -> A",
}


def test_tvm_prelude_type_checks_as_a_user_module() -> None:
    mod = rr.infer_types(rr.parse(_text("tvm_std_prelude.relay"), prelude=False))
    assert len(mod.functions) == 24 and set(mod.type_definitions) == {"List", "Option", "Tree"}
    for name, want in TVM_PRELUDE_TYPES.items():
        assert rr.astext(mod.global_types[name]) == want, name
    again = rr.parse(rr.astext(mod), prelude=False)
    assert rr.alpha_equal(rr.parse(_text("tvm_std_prelude.relay"), prelude=False), again)


def test_tvm_prelude_runs() -> None:
    text = _text("tvm_std_prelude.relay") + """
    def @main() {
      let %l = Cons(1, Cons(2, Cons(3, Nil)));
      let %inc = fn (%x: int32) { %x + 1 };
      (@sum(@map(%inc, @rev(%l))), @foldr1(fn (%a: int32, %b: int32) { %a - %b }, %l),
       @iterate(%inc, 5)(0), @nth(@update(%l, 1, 9), 1), @length(@zip(%l, Cons(True, Nil))))
    }"""
    mod = rr.infer_types(rr.parse(text, prelude=False))
    assert [int(v) for v in rr.evaluate(mod)] == [9, 2, 5, 9, 1]


# -- TVM's `/* ty=... */` comments agree with inference ---------------------------------------

_BINDING = re.compile(r"^(\s*)%(\d+) = (.*) /\* ty=([^*]*?)(?: span=\S+)? \*/;$")


def annotate_graph_bindings(text: str) -> tuple[str, int]:
    """``%N = e /* ty=T */;`` -> ``let %vN: T = e;`` (other graph bindings -> plain lets):
    type-checking the result checks that every type TVM printed is the one relay_ref infers."""
    out, count = [], 0
    for line in text.splitlines():
        m = _BINDING.match(line)
        if m:
            indent, n, expr, ty = m.groups()
            line = f"{indent}let %v{n}: {ty} = {expr};"
            count += 1
        else:
            line = re.sub(r"^(\s*)%(\d+) = ", r"\1let %\2 = ", line)
        out.append(line)
    return re.sub(r"%(\d+)\b", r"%v\1", "\n".join(out)), count


@pytest.mark.parametrize("name", [
    "printed_resnet_block.relay", "printed_mobilenet_head.relay",
    "printed_span_comments.relay", "printed_while_loop_metadata.relay",
    "printed_tensor_array_adt.relay", "printed_strided_slice_tuple.relay",
    "printed_fused_functions.relay", "printed_quantized_dense.relay",
    "printed_nhwc_pipeline.relay", "printed_layer_norm_gelu.relay",
    "printed_dynamic_batch.relay",
])
def test_printed_types_agree_with_inference(name: str) -> None:
    text, count = annotate_graph_bindings(_text(name))
    assert count >= 1
    rr.infer_types(rr.parse(text))


def test_printed_type_disagreement_is_reported() -> None:
    text, _ = annotate_graph_bindings(
        _text("printed_resnet_block.relay").replace("/* ty=Tensor[(1, 8, 4, 4), float32] */",
                                                    "/* ty=Tensor[(1, 8, 5, 5), float32] */", 1))
    with pytest.raises(rr.RelayTypeError):
        rr.infer_types(rr.parse(text))


# -- networks against NumPy ----------------------------------------------------------------------

def np_conv2d(x, w, strides=(1, 1), padding=(0, 0, 0, 0), groups=1):
    if len(padding) == 2:
        padding = (padding[0], padding[1], padding[0], padding[1])
    t, left, b, r = padding
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = strides
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(oh):
            for j in range(ow):
                patch = xs[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw]
                out[:, g * og:(g + 1) * og, i, j] = np.einsum(
                    "nchw,ochw->no", patch, w[g * og:(g + 1) * og])
    return out


def np_batch_norm(x, gamma, beta, mean, var, eps, center=True, scale=True):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if scale:
        y = y * gamma.reshape(shape)
    if center:
        y = y + beta.reshape(shape)
    return y


def np_max_pool(x, k, s, p):
    x = np.pad(x, ((0, 0), (0, 0), (p[0], p[2]), (p[1], p[3])), constant_values=-np.inf)
    oh, ow = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    return np.array([[[[x[n, c, i * s:i * s + k, j * s:j * s + k].max() for j in range(ow)]
                       for i in range(oh)] for c in range(x.shape[1])]
                     for n in range(x.shape[0])])


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _random_args(mod, rng):
    args = {}
    for p in mod.functions["main"].params:
        shape = tuple(int(d) for d in p.type_annotation.shape)
        a = rng.standard_normal(shape).astype("float32")
        if p.name_hint.endswith("moving_var") or p.name_hint in VAR_PARAMS:
            a = np.abs(a) + 0.5
        args[p.name_hint] = a
    return args


VAR_PARAMS = {"v_param_5", "v_param_10", "v_param_15"}


def test_printed_resnet_block_matches_numpy() -> None:
    mod = rr.infer_types(rr.parse(_text("printed_resnet_block.relay")))
    a = _random_args(mod, np.random.default_rng(0))
    got = rr.evaluate(mod, *a.values())

    def bn(x, p, eps=2e-5, **kw):
        return np_batch_norm(x, a[p + "_gamma"], a[p + "_beta"], a[p + "_moving_mean"],
                             a[p + "_moving_var"], eps, **kw)

    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    x = bn(a["data"].astype(np.float64), "bn_data", scale=False)
    x = relu(bn(np_conv2d(x, a["conv0_weight"], (2, 2), (1, 1, 1, 1)), "bn0"))
    x = np_max_pool(x, 3, 2, (1, 1, 1, 1))
    act = relu(bn(x, "stage1_unit1_bn1"))
    y = relu(bn(np_conv2d(act, a["stage1_unit1_conv1_weight"], padding=(1, 1, 1, 1)),
                "stage1_unit1_bn2"))
    y = np_conv2d(y, a["stage1_unit1_conv2_weight"], padding=(1, 1, 1, 1))
    y = y + np_conv2d(act, a["stage1_unit1_sc_weight"])
    y = relu(bn(y, "bn1")).mean(axis=(2, 3))
    want = np_softmax(y @ a["fc1_weight"].T + a["fc1_bias"])
    assert got.shape == (1, 10) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def test_printed_mobilenet_head_matches_numpy() -> None:
    mod = rr.infer_types(rr.parse(_text("printed_mobilenet_head.relay")))
    a = _random_args(mod, np.random.default_rng(1))
    got = rr.evaluate(mod, *a.values())
    p = [None] + [a[f"v_param_{i}"] for i in range(1, 18)]

    def bn(x, i):
        return np.clip(np_batch_norm(x, p[i], p[i + 1], p[i + 2], p[i + 3], 1e-3), 0, 6)

    x = np.pad(a["input_1"].astype(np.float64), ((0, 0), (0, 0), (0, 1), (0, 1)))
    x = bn(np_conv2d(x, p[1], (2, 2)), 2)
    x = bn(np_conv2d(x, p[6], padding=(1, 1), groups=4), 7)
    x = bn(np_conv2d(x, p[11]), 12)
    x = x.mean(axis=(2, 3))
    want = np_softmax(x @ p[16].reshape(10, 8).T + p[17])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


# -- #[metadata] sections ------------------------------------------------------------------------

def test_real_metadata_blobs_decode() -> None:
    mod = rr.parse(_text("printed_metadata_tvm080.relay"))
    (const,) = mod.metadata["relay.Constant"]
    np.testing.assert_array_equal(const.data, np.arange(1, 7, dtype="float32").reshape(2, 3))
    out = rr.evaluate(rr.infer_types(mod), np.zeros((1, 2, 3), "float32"))
    np.testing.assert_array_equal(out, const.data)
    mod = rr.parse(_text("printed_metadata_tvm012.relay"))
    (const,) = mod.metadata["relay.Constant"]
    assert const.data.shape == (5,) and const.data.dtype == np.float32


@pytest.mark.parametrize("name", ["printed_metadata_tvm080.relay",
                                  "printed_metadata_tvm012.relay",
                                  "printed_while_loop_metadata.relay"])
def test_printer_writes_tvms_ndarray_bytes(name: str) -> None:
    """relay_ref's #[metadata] carries the same b64 NDArray bytes TVM wrote."""
    blob = re.compile(r'"b64ndarrays": \[\s*"([^"]*)"')
    text = _text(name)
    assert blob.search(rr.astext(rr.parse(text))).group(1) == blob.search(text).group(1)


def test_generated_metadata_round_trips_and_evaluates() -> None:
    """A module whose weights are constants prints them as meta[relay.Constant][i] with a
    #[metadata] section; the text reads back to the same module and computes the same."""
    from relay_ref.ir import expr as E
    from relay_ref.ir.module import IRModule
    from relay_ref.ir.types import TensorType
    from relay_ref.ops.registry import make_attrs

    rng = np.random.default_rng(2)
    w1 = rng.standard_normal((6, 4)).astype("float32")
    b1 = rng.standard_normal(6).astype("float32")
    w2 = rng.standard_normal((3, 6)).astype("float16")

    def call(op, *args, **attrs):
        return E.Call(E.Op(op), args, make_attrs(op, attrs))

    x = E.Var("x", TensorType((2, 4), "float32"))
    h = call("nn.relu", call("nn.bias_add", call("nn.dense", x, E.Constant(w1)), E.Constant(b1)))
    body = call("nn.dense", call("cast", h, dtype="float16"), E.Constant(w2), units=3)
    mod = IRModule(functions={"main": E.Function((x,), body)})
    printed = rr.astext(mod)
    assert printed.count("meta[relay.Constant]") == 3 and "#[metadata]" in printed
    again = rr.parse(printed)
    assert rr.alpha_equal(mod, again) and rr.astext(again) == printed
    for c, want in zip(again.metadata["relay.Constant"], (w1, b1, w2), strict=True):
        assert c.data.dtype == want.dtype
        np.testing.assert_array_equal(c.data, want)
    xv = rng.standard_normal((2, 4)).astype("float32")
    got = rr.evaluate(rr.infer_types(again), xv)
    hv = np.maximum(xv @ w1.T + b1, 0).astype("float16").astype(np.float32)
    assert got.dtype == np.float16 and got.shape == (2, 3)
    np.testing.assert_allclose(got.astype(np.float32), hv @ w2.astype(np.float32).T,
                               rtol=2e-2, atol=2e-2)


def test_parse_expr_of_an_unbound_global_is_a_free_global() -> None:
    """As TVM's parse_expr("@foo") (test_ir_parser.py::test_vars): a GlobalVar no module
    defines (spec/syntax.md S-FreeGlobal); tests/syntax/test_tvm_text_forms.py checks that
    type checking reports it."""
    assert rr.parse_expr("@foo") == rr.parse_expr("@foo") and rr.astext(
        rr.parse_expr("@foo")) == "@foo"
