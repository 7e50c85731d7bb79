"""Text forms TVM's parser accepts (issue 10, part 3): dtype shorthands, free globals in
``parse_expr``, attributes on calls of non-operators, ``meta[...]`` attributes objects and
shape dimensions, ``virtual_device=``, a metadata table given from Python, and TVM's number
literals. Each form: parse, round trip (``parse(astext(x))`` alpha-equal, canonical text) and,
where a type is involved, type checking. TVM sources cited at apache/tvm fb43fc85774b (C++)
and ccaa534b2c^ (Python tests, deleted by that commit)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import relay_ref as rr
from relay_ref import parse_expr
from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.prelude import prelude_fallback
from relay_ref.syntax import parser
from relay_ref.syntax.metadata import dump_metadata, meta_object
from relay_ref.typecheck.infer import infer_expr


def parse_type(text: str, **kwargs) -> T.Type:
    """A type as the public API resolves it: prelude names (``List``) included."""
    return parser.parse_type(text, fallback=prelude_fallback(), **kwargs)


def _round_trip(mod: rr.IRModule) -> str:
    text = rr.astext(mod)
    again = rr.parse(text)
    assert rr.alpha_equal(mod, again), text
    assert rr.astext(again) == text
    return text


# -- dtype shorthands (include/tvm/runtime/data_type.h String2DLDataType, DLDataType2String;
#    src/relay/parser/parser.cc ParseType) ---------------------------------------------------

@pytest.mark.parametrize("text,dtype", [
    ("int", "int32"), ("uint", "uint32"), ("float", "float32"), ("bool", "bool"),
    ("int64", "int64"), ("float16", "float16"), ("int0", "int32"), ("uint1", "bool"),
    ("float32x1", "float32"), ("floatx4", "float32x4"), ("int8x4", "int8x4"),
    ("uint1x4", "uint1x4"), ("bfloat16", "bfloat16"),
])
def test_dtype_shorthands_read_as_tvm(text: str, dtype: str) -> None:
    assert parse_type(text) == T.TensorType((), dtype)
    assert parse_type(f"Tensor[(2, ?), {text}]") == T.TensorType((2, T.ANY), dtype)


@pytest.mark.parametrize("text,message", [
    ("Tensor[(2), handle]", "'handle' (an opaque handle) is not supported"),
    ("int4", "'int4' is not supported"), ("Tensor[(1), float8]", "'float8' is not supported"),
    ("boolx4", "unknown data type 'boolx4'"), ("integer", "unknown data type 'integer'"),
    ("Tensor[(1), floaty]", "unknown data type 'floaty'"), ("float32x0", "not supported"),
])
def test_unrepresentable_dtypes_are_located_errors(text: str, message: str) -> None:
    with pytest.raises(rr.ParseError, match=re.escape(message)) as info:
        parse_expr(f"let %v: {text} = 0; %v", "d.relay")
    assert info.value.span.line == 1 and info.value.span.column >= 9


def test_dtype_shorthands_in_types_and_attributes_print_canonically_and_check() -> None:
    # dtype="float" in a call as python/tvm/relay/op/contrib/dnnl.py writes it
    mod = rr.parse('def @main(%x: Tensor[(2), float], %n: int) -> Tensor[(2), int] {\n'
                   '  %0 = cast(%x, dtype="int");\n'
                   '  %1 = zeros(shape=[2], dtype="int");\n'
                   '  %2 = cast(%n, dtype="uint1");\n'
                   '  if (%2) { add(%0, %1) } else { %0 }\n}')
    text = _round_trip(mod)
    assert 'dtype="int32"' in text and 'dtype="bool"' in text and "float32" in text
    assert '"int"' not in text and "%n: int32" in text
    typed = rr.infer_types(mod)
    assert rr.astext(typed.global_types["main"]) == \
        "fn (Tensor[(2), float32], int32) -> Tensor[(2), int32]"
    assert rr.evaluate(typed, np.array([1.5, -2.5], "float32"), np.array(1, "int32")) \
        .tolist() == [1, -2]


def test_unknown_dtype_attribute_is_left_to_the_operator() -> None:
    with pytest.raises(rr.ParseError, match="unsupported dtype 'handle'"):
        parse_expr('free_var %x: float32; cast(%x, dtype="handle")')


# -- free globals (tests/python/relay/test_ir_parser.py::test_vars; parser.cc AddOrGet) ------

def test_parse_expr_keeps_an_unknown_global_free_and_checking_reports_it() -> None:
    e = rr.parse_expr("@foo")
    assert e == E.GlobalVar("foo") and rr.astext(e) == "@foo"
    call = rr.parse_expr("free_var %x: int32;\n@foo(%x)", "e.relay")
    assert rr.alpha_equal(call, rr.parse_expr(rr.astext(call)))
    with pytest.raises(rr.RelayTypeError, match="no global function @foo") as info:
        infer_expr(call)
    span = info.value.diagnostics[0].span
    assert (span.name, span.line, span.column) == ("e.relay", 2, 1)
    with pytest.raises(rr.ParseError, match="undefined global function @foo"):
        rr.parse("def @main() { @foo() }")  # a module must define what it uses


# -- attributes of non-operator calls (test_ir_parser.py::test_call_attrs;
#    parser.cc ParseCallArgs, relay_text_printer.cc AppendGenericAttrs) -----------------------

CALL_ATTRS = """
def @main(%p0: Tensor[(2, 4), float32], %p1: Tensor[(2, 4), float32]) {
  %2 = fn (%data: Tensor[(2, 4), float32], %weight: Tensor[(2, 4), float32]) {
    %0 = nn.dense(%data, %weight, units=None);
    %1 = nn.relu(%0);
    add(%1, 1f)
  };
  %2(%p0, %p1, name="func_call_attrs", attrs_type_key="attrs.TestAttrs")
}
"""


def test_attributes_of_a_function_call_are_kept_and_printed_back() -> None:
    mod = rr.parse(CALL_ATTRS)
    call = mod["main"].body
    assert call.attrs == E.CallAttrs("attrs.TestAttrs", (("name", "func_call_attrs"),))
    text = _round_trip(mod)
    assert '(%p0, %p1, name="func_call_attrs", attrs_type_key="attrs.TestAttrs")' in text
    other = rr.parse(CALL_ATTRS.replace('"func_call_attrs"', '"other"'))
    assert not rr.alpha_equal(mod, other)
    typed = rr.infer_types(mod)
    assert rr.astext(typed.global_types["main"]).endswith("-> Tensor[(2, 2), float32]")


def test_call_attributes_without_a_type_key() -> None:
    with pytest.raises(rr.ParseError, match="need attrs_type_key") as info:
        parse_expr('free_var %f: fn (int32) -> int32; %f(1, name="n")')
    assert info.value.span.column == 41
    # an empty key: TVM drops the attributes
    e = parse_expr('free_var %f: fn (int32) -> int32; %f(1, name="n", attrs_type_key="")')
    assert e.attrs is None


# -- meta[...] attributes objects and dimensions (parser.cc ParseCallArgs, ParseShape,
#    ParseMetaRef; relay_text_printer.cc PrintCallAttrs) --------------------------------------

CONV = ("def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
        "  nn.conv2d(%x, %w, meta[relay.attrs.Conv2DAttrs][0])\n}")


def test_meta_attrs_object_given_from_python() -> None:
    from relay_ref.ops.registry import make_attrs

    for given in ({"strides": [2, 2], "padding": [1, 1], "channels": 4},
                  make_attrs("nn.conv2d", {"strides": (2, 2), "padding": (1, 1),
                                           "channels": 4})):
        mod = rr.parse(CONV, metadata={"relay.attrs.Conv2DAttrs": [given]})
        attrs = mod["main"].body.attrs
        assert attrs.strides == (2, 2) and attrs.padding == (1, 1) and attrs.channels == 4
        text = _round_trip(mod)
        assert "nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1], channels=4)" in text
        typed = rr.infer_types(mod)
        assert rr.astext(typed.global_types["main"]).endswith("-> Tensor[(1, 4, 4, 4), float32]")


def test_meta_attrs_errors() -> None:
    with pytest.raises(rr.ParseError, match="has no attribute 'stride'"):
        rr.parse(CONV, metadata={"relay.attrs.Conv2DAttrs": [{"stride": [2, 2]}]})
    with pytest.raises(rr.ParseError, match="either key=value pairs or one meta"):
        rr.parse(CONV.replace("%w, meta", "%w, groups=1, meta"),
                 metadata={"relay.attrs.Conv2DAttrs": [{}]})
    section = dump_metadata([], {"relay.attrs.Conv2DAttrs": [
        meta_object("relay.attrs.Conv2DAttrs", {"groups": 1})]})
    with pytest.raises(rr.ParseError, match="cannot be the attributes") as info:
        rr.parse(CONV + "\n#[metadata]\n" + section)
    assert (info.value.span.line, info.value.span.column) == (2, 21)
    assert "key=value" in info.value.render()


def test_meta_shape_dimensions() -> None:
    text = ("def @main(%x: Tensor[(meta[tir.Var][0], meta[IntImm][0]), float]) {\n"
            "  nn.relu(%x)\n}")
    mod = rr.parse(text, metadata={"tir.Var": ["n"], "IntImm": [3]})
    assert mod["main"].params[0].type_annotation == T.TensorType((T.ANY, 3), "float32")
    assert "Tensor[(?, 3), float32]" in _round_trip(mod)
    typed = rr.infer_types(mod)
    assert rr.astext(typed.global_types["main"]) == \
        "fn (Tensor[(?, 3), float32]) -> Tensor[(?, 3), float32]"
    with pytest.raises(rr.ParseError, match="negative dimension"):
        rr.parse(text, metadata={"tir.Var": ["n"], "IntImm": [-1]})


# -- virtual_device (tests/python/relay/backend/test_pass_remove_standalone_reshapes.py,
#    test_backend_graph_executor.py; parser.cc ParseFunctionDef) ------------------------------

DEVICES = """
def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(2, 2), float32],
          virtual_device=meta[VirtualDevice][0]) {
  %0 = fn (%a {virtual_device=meta[VirtualDevice][0]}, %b, Primitive=1,
           virtual_device=meta[VirtualDevice][1]) {
    add(%a, %b)
  };
  %0(%x, %x)
}
"""


def test_virtual_device_given_from_python_is_kept_and_printed_back() -> None:
    cpu = {"device_type_int": 1, "virtual_device_id": 0}
    mod = rr.parse(DEVICES, metadata={"VirtualDevice": [cpu, "cuda:0"]})
    main = mod["main"]
    vd = main.attr("virtual_device")
    assert isinstance(vd, E.MetaObject) and vd.type_key == "VirtualDevice"
    inner = main.body.op
    assert inner.attrs[0] == ("Primitive", 1) and inner.attr("virtual_device") != vd
    text = _round_trip(mod)
    assert "virtual_device=meta[VirtualDevice][0]) {" in text
    assert "Primitive=1, virtual_device=meta[VirtualDevice][1]) {" in text
    table = json.loads(text.split("#[metadata]")[1])
    nodes = table["nodes"]
    root = nodes[table["root"]]
    vds = nodes[root["data"][root["keys"].index("VirtualDevice")]]["data"]
    assert nodes[vds[0]]["attrs"] == {"device_type_int": "1", "virtual_device_id": "0"}
    assert nodes[vds[1]]["attrs"] == {"value": "cuda:0"}
    typed = rr.infer_types(mod)
    out = rr.evaluate(typed, np.ones((2, 2), "float32"))
    assert out.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_virtual_device_from_a_metadata_section_keeps_its_graph() -> None:
    section = {
        "root": 1, "b64ndarrays": [], "attrs": {"tvm_version": "0.12.dev0"},
        "nodes": [{"type_key": ""},
                  {"type_key": "Map", "keys": ["VirtualDevice"], "data": [2]},
                  {"type_key": "Array", "data": [3]},
                  {"type_key": "VirtualDevice",
                   "attrs": {"device_type_int": "2", "memory_scope": "4", "target": "0",
                             "virtual_device_id": "0"}},
                  {"type_key": "runtime.String", "repr_str": "global"}]}
    text = ("def @main(%x: float32, virtual_device=meta[VirtualDevice][0]) { %x }\n"
            "#[metadata]\n" + json.dumps(section))
    mod = rr.parse(text)
    printed = _round_trip(mod)
    out = json.loads(printed.split("#[metadata]")[1])
    vd_index = out["nodes"][out["nodes"][out["root"]]["data"][0]]["data"][0]
    vd = out["nodes"][vd_index]
    assert vd["attrs"]["memory_scope"] == "4"  # the reference still names the string
    assert out["nodes"][4] == {"type_key": "runtime.String", "repr_str": "global"}


@pytest.mark.parametrize("text,message", [
    ("fn (%x, virtual_device=meta[VirtualDevice][0]) { %x }", "cannot resolve"),
    ("fn (%x, virtual_device=meta[relay.Constant][0]) { %x }", "cannot be an attribute value"),
])
def test_virtual_device_errors(text: str, message: str) -> None:
    const = {"relay.Constant": [np.zeros(2, "float32")]}
    with pytest.raises(rr.ParseError, match=message):
        parse_expr(text, metadata=const)


# -- the metadata table from Python (test_ir_parser.py::test_init_module_and_metatable;
#    parser.cc InitParser, python/tvm/relay/parser.py parse(init_meta_table=...)) ------------

def test_init_module_and_metadata_table() -> None:
    data = np.random.default_rng(0).random((2, 3)).astype("float32")
    init = rr.parse("def @f(%y: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {\n"
                    "  negative(%y)\n}")
    mod = rr.parse("def @main(%x: Tensor[(2, 3), float32]) {\n"
                   "  add(@f(%x), meta[relay.Constant][0])\n}", "from_string", base_module=init,
                   metadata={"relay.Constant": [data]})
    _round_trip(mod)
    x = np.ones((2, 3), "float32")
    np.testing.assert_array_equal(rr.evaluate(rr.infer_types(mod), x), data - 1)


def test_python_metadata_follows_the_section() -> None:
    first = np.arange(3, dtype="int64")
    text = ("def @main() { (meta[relay.Constant][0], meta[relay.Constant][1]) }\n"
            "#[metadata]\n" + dump_metadata([first]))
    mod = rr.parse(text, metadata={"relay.Constant": [[True, False]]})
    a, b = mod["main"].body.fields
    assert a.data.dtype == np.int64 and b.data.tolist() == [True, False]
    with pytest.raises(TypeError, match="metadata must be a mapping"):
        rr.parse(text, metadata=[first])
    with pytest.raises(TypeError, match="must be a list"):
        rr.parse(text, metadata={"relay.Constant": "abc"})


# -- number literals (src/relay/parser/tokenizer.h ParseNumber, IsNumeric;
#    src/support/scalars.cc ValueToIntImm, ValueToFloatImm) ---------------------------------

@pytest.mark.parametrize("text,value,dtype", [
    ("5.f", 5.0, "float32"),        # stod("5.") reads all of it
    ("1.e2f", 100.0, "float32"), ("007", 7, "int32"), ("-05", -5, "int32"),
    ("1e-3f", np.float32(1e-3), "float32"), ("2i", 2, "int32"), ("3f64", 3.0, "float64"),
    ("-42i16", -42, "int16"), ("9223372036854775807", 2**63 - 1, "int64"),
])
def test_number_literals_tvm_accepts(text: str, value: object, dtype: str) -> None:
    data = parse_expr(text).data
    assert data.item() == value and str(data.dtype) == dtype


@pytest.mark.parametrize("text", [
    ".5f", ".5",        # a '.' starts no number: TVM lexes a period token
    "5.", "1.5", "1e5",  # no suffix: an integer, and stoll stops early
    "1e", "1ef", "1e+f", "1.5i32", "1e3i64",  # incomplete exponents, fractions on integers
    "1f.0", "1i64.0",   # the suffix swallows '.0' in TVM (invalid numeric suffix)
    "0x1F", "1_000", "1E5F", "1I64",  # hex, separators, upper-case suffixes
    "1f8", "1i1", "32768i16", "2147483648i32", "65505f16", "3.40283e+38f32",  # widths, range
])
def test_number_literals_tvm_rejects(text: str) -> None:
    with pytest.raises(rr.ParseError) as info:
        parse_expr(text, "n.relay")
    assert info.value.span.name == "n.relay" and info.value.span.line == 1
