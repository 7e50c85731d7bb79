"""A malformed ``#[metadata]`` section is a located ``rr.ParseError``, never another exception.

Named cases first (each checks the message and where it points), then hypothesis mutations of
a valid printed section: JSON values replaced by other JSON types, keys deleted, numbers
changed, base64 blobs corrupted or truncated, and blobs crafted with random header fields."""

from __future__ import annotations

import base64
import copy
import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relay_ref as rr
from relay_ref.ir.expr import Constant
from relay_ref.syntax.metadata import MetadataError, load_metadata

_MAGIC = 0xDD5E40F096B4A13F
PROG = "def @main() -> Tensor[(2, 3), float32] {\n  meta[relay.Constant][0]\n}\n"


def _printed() -> tuple[str, dict]:
    """The text of a module with a (2, 3) constant as rr.astext prints it, and its JSON."""
    constant = np.arange(6.0, dtype="f4").reshape(2, 3)
    mod = rr.parse(PROG + "#[metadata]\n" + json.dumps(_graph_for(constant)))
    text = rr.astext(mod)
    head, _, meta = text.partition("#[metadata]")
    assert meta, "the printer writes a #[metadata] section for a non-scalar constant"
    return head, json.loads(meta)


def _graph_for(array: np.ndarray) -> dict:
    from relay_ref.syntax.metadata import dump_metadata

    return json.loads(dump_metadata([array]))


HEAD, GRAPH = _printed()
META_LINE = HEAD.count("\n") + 1  # the line of `#[metadata]`
REF_LINE = HEAD[: HEAD.index("meta[")].count("\n") + 1  # the line of `meta[...][0]`


def _blob(ndim: int = 2, shape: tuple[int, ...] = (2, 3), size: int | None = None,
          code: int = 2, bits: int = 32, lanes: int = 1, data: bytes = b"\0" * 24,
          magic: int = _MAGIC) -> str:
    head = struct.pack("<QQiii", magic, 0, 1, 0, ndim) + struct.pack("<BBH", code, bits, lanes)
    head += b"".join(struct.pack("<q", d) for d in shape)
    head += struct.pack("<q", len(data) if size is None else size)
    return base64.b64encode(head + data).decode()


def _text(graph: object) -> str:
    return HEAD + "#[metadata]\n" + json.dumps(graph, indent=2)


def _mutated(change) -> str:
    graph = copy.deepcopy(GRAPH)
    change(graph)
    return _text(graph)


def _parse_error(text: str) -> rr.ParseError:
    with pytest.raises(rr.ParseError) as info:
        rr.parse(text, "m.relay")
    err = info.value
    assert err.span is not None and err.span.name == "m.relay"
    assert "Traceback" not in err.render()
    return err


def test_printed_section_parses_back():
    mod = rr.parse(_text(GRAPH), "m.relay")
    value = rr.evaluate(mod)
    assert value.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


NAMED = {
    "attrs is a string": (lambda g: g.update(attrs="0.8"), "'attrs' must be an object"),
    "nodes is an object": (lambda g: g.update(nodes={}), "'nodes' must be a list"),
    "a node is a list": (lambda g: g["nodes"].__setitem__(3, []), "node 3 must be an object"),
    "root is a string": (lambda g: g.update(root="one"), "'root' must be an integer index"),
    "strings for indices": (lambda g: g["nodes"][2].update(data=["x"]),
                            "must be an integer index, found the string 'x'"),
    "node index out of range": (lambda g: g["nodes"][2].update(data=[99]),
                                "is 99, out of range (there are 4 nodes)"),
    "array index negative": (lambda g: g["nodes"][3]["attrs"].update(data="-1"),
                             "must be an integer index"),
    "array index out of range": (lambda g: g["nodes"][3]["attrs"].update(data="7"),
                                 "out of range (there are 1 b64ndarrays)"),
    "map refers to itself": (lambda g: g["nodes"][1].update(data=[1]),
                             "must be an Array node, found a Map node"),
    "keys not strings": (lambda g: g["nodes"][1].update(keys=[3]),
                         "keys must be strings"),
    "not base64": (lambda g: g["b64ndarrays"].__setitem__(0, "!!not base64"),
                   "b64ndarrays[0] is not valid base64"),
    "blob not a string": (lambda g: g["b64ndarrays"].__setitem__(0, 5),
                          "must be a base64 string, found the number 5"),
    "shape overflows int64": (
        lambda g: g["b64ndarrays"].__setitem__(0, _blob(shape=(2**32, 2**32), data=b"")),
        "does not match its shape (4294967296, 4294967296)"),
    "byte size overflows": (
        lambda g: g["b64ndarrays"].__setitem__(0, _blob(shape=(2**61, 2), size=0, data=b"")),
        "does not match its shape"),
    "zero dim, huge extent": (
        lambda g: g["b64ndarrays"].__setitem__(0, _blob(ndim=3, shape=(0, 2**62, 2**62),
                                                         data=b"")),
        "too large for any array"),
    "negative dims": (
        lambda g: g["b64ndarrays"].__setitem__(0, _blob(shape=(-1, -1), data=b"\0" * 4)),
        "negative dimension"),
    "huge ndim": (lambda g: g["b64ndarrays"].__setitem__(0, _blob(ndim=2**31 - 1, shape=())),
                  "2147483647 dimensions (at most 64"),
    "truncated data": (lambda g: g["b64ndarrays"].__setitem__(0, _blob(size=24, data=b"\0")),
                       "is truncated: 24 data bytes announced, 1 present"),
    "bad magic": (lambda g: g["b64ndarrays"].__setitem__(0, _blob(magic=1)),
                  "is not a TVM array"),
}


@pytest.mark.parametrize("name", NAMED)
def test_named_cases_are_located_parse_errors(name):
    change, expected = NAMED[name]
    err = _parse_error(_mutated(change))
    assert "bad #[metadata] section" in err.message and expected in err.message, err.message
    assert err.span.line == META_LINE  # the `#[metadata]` line


def test_json_syntax_error_points_into_the_section():
    text = HEAD + '#[metadata]\n{"root": 1,\n "nodes": [}'
    err = _parse_error(text)
    assert "invalid JSON" in err.message
    assert (err.span.line, err.span.column) == (META_LINE + 2, 12)


@pytest.mark.parametrize("body", ["[" * 200_000 + "]" * 200_000,
                                  '{"nodes": ' + "[" * 200_000 + "]" * 200_000 + "}"])
def test_deeply_nested_json(body):
    err = _parse_error(HEAD + "#[metadata]\n" + body)
    assert "nested too deeply" in err.message


def test_number_with_too_many_digits():
    err = _parse_error(HEAD + '#[metadata]\n{"nodes": [' + "9" * 5000 + "]}")
    assert "too many digits" in err.message


def test_dangling_reference_points_at_it():
    # An Array whose element is the Array itself: the entry is not a constant.
    err = _parse_error(_mutated(lambda g: g["nodes"][2].update(data=[2])))
    assert err.span.line == REF_LINE and "meta[relay.Constant][0]" in err.message


def test_load_metadata_raises_only_metadata_error():
    for text in ["", "null", "[]", '{"nodes": 1}', '{"nodes": [], "root": true}',
                 '{"nodes": [], "b64ndarrays": {}}']:
        with pytest.raises(MetadataError):
            load_metadata(text)


# ---- hypothesis ------------------------------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=6) | st.sampled_from(["0", "1", "3", "-1", "Map", "Array",
                                             "relay.Constant", GRAPH["b64ndarrays"][0]]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                  max_size=3),
    max_leaves=6)


def _paths(value: object, path: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys/indices) to a value inside ``value``."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, path + (i,))
    return out


def _check(text: str) -> None:
    try:
        mod = rr.parse(text, "fuzz.relay")
    except rr.ParseError as err:
        assert err.span is not None and err.span.name == "fuzz.relay"
        assert err.render().startswith("fuzz.relay:")
    else:
        for table in mod.metadata.values():
            for item in table:
                assert not isinstance(item, Constant) or isinstance(item.data, np.ndarray)


@settings(max_examples=120)
@given(st.data())
def test_json_mutations(data: st.DataObject) -> None:
    graph = copy.deepcopy(GRAPH)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(graph)))
        if not path:
            graph = data.draw(_JSON)
            continue
        parent = graph
        for key in path[:-1]:
            parent = parent[key]
        op = data.draw(st.sampled_from(["replace", "delete", "number"]))
        if op == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif op == "number":
            parent[path[-1]] = data.draw(st.integers(-3, 6) | st.integers(-(2**64), 2**64))
        else:
            parent[path[-1]] = data.draw(_JSON)
    _check(_text(graph))


@settings(max_examples=80)
@given(st.data())
def test_blob_corruptions(data: st.DataObject) -> None:
    raw = bytearray(base64.b64decode(GRAPH["b64ndarrays"][0]))
    op = data.draw(st.sampled_from(["truncate", "flip", "text"]))
    if op == "truncate":
        text = base64.b64encode(raw[: data.draw(st.integers(0, len(raw)))]).decode()
        text = text[: data.draw(st.integers(0, len(text)))]
    elif op == "flip":
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        text = base64.b64encode(raw).decode()
    else:
        text = data.draw(st.text(max_size=40))
    _check(_mutated(lambda g: g["b64ndarrays"].__setitem__(0, text)))


_DIMS = st.integers(-2, 4) | st.sampled_from([2**31, 2**32, 2**62, 2**63 - 1, -(2**63)])
_DTYPES = st.sampled_from([(2, 32), (2, 64), (0, 8), (1, 1), (6, 8), (4, 16), (2, 8)]) | st.tuples(
    st.integers(0, 255), st.integers(0, 255))


@settings(max_examples=100)
@given(data=st.data(), shape=st.lists(_DIMS, max_size=4), dtype=_DTYPES)
def test_crafted_blob_headers(data: st.DataObject, shape: list[int], dtype) -> None:
    """Random header fields; the data length is often what a wrapping int64 product of the
    shape promises, to catch overflowing size checks."""
    ndim = data.draw(st.just(len(shape)) | st.integers(-(2**31), 2**31 - 1))
    itemsize = max(dtype[1] // 8, 1)
    wrapped = (int(np.prod(np.array(shape, dtype=np.int64))) * itemsize) % 2**64
    length = data.draw(st.just(wrapped) | st.integers(0, 64)) if wrapped < 256 else \
        data.draw(st.integers(0, 64))
    size = data.draw(st.none() | st.just(wrapped - 2**64 if wrapped >= 2**63 else wrapped)
                     | st.integers(-(2**63), 2**63 - 1))
    lanes = data.draw(st.just(1) | st.integers(0, 3))
    blob = _blob(ndim=ndim, shape=tuple(shape), size=size, code=dtype[0], bits=dtype[1],
                 lanes=lanes, data=b"\1" * length)
    _check(_mutated(lambda g: g["b64ndarrays"].__setitem__(0, blob)))
