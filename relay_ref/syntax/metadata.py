"""The ``#[metadata]`` section: TVM's JSON object-graph format (S-Metadata).

TVM's printer writes a map from type key to an array of objects, serialised by
``tvm.ir.save_json``::

    {"root": 1,
     "nodes": [{"type_key": ""},
               {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
               {"type_key": "Array", "data": [3]},
               {"type_key": "relay.Constant", "attrs": {"data": "0", "span": "0", ...}}],
     "b64ndarrays": ["<base64 of TVM's NDArray binary format>"],
     "attrs": {"tvm_version": "0.8.dev0"}}

The NDArray binary format (little endian): magic ``u64 0xDD5E40F096B4A13F``, reserved ``u64``,
device ``(i32 type, i32 id)``, ``i32 ndim``, dtype ``(u8 code, u8 bits, u16 lanes)``, ``ndim``
``i64`` dims, ``i64`` byte size, then the bytes.

Only ``relay.Constant`` entries become IR (``Constant`` nodes); other entries become opaque
``MetaObject``s holding their JSON node and the graph they came from. ``dump_metadata`` writes
the same format, so TVM's ``tvm.ir.load_json`` can read our section and we read TVM's; the
graph an opaque object came from is written back unchanged, so its references stay valid.
"""

from __future__ import annotations

import base64
import json
import math
import struct
from typing import Any

import numpy as np

from relay_ref.ir.expr import Constant, MetaObject

_MAGIC = 0xDD5E40F096B4A13F
_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat"}


class MetadataError(Exception):
    """A malformed ``#[metadata]`` section (message in plain words).

    ``offset``, when known, is the position in the section's text where the problem is (the
    parser turns it into a located ``ParseError``); otherwise the error is about the whole
    section."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


# NumPy's limit on the number of dimensions (NPY_MAXDIMS); TVM arrays are never deeper.
_MAX_NDIM = 64
_HEADER = struct.Struct("<QQiiiBBH")  # magic, reserved, device type, device id, ndim, dtype


def _decode_ndarray(blob: bytes, where: str) -> np.ndarray:
    """Decode one NDArray blob; ``where`` names it in messages (``b64ndarrays[0]``).

    Every field is checked against the blob's length before anything is allocated, so a
    corrupt header can never make us reserve more memory than the blob holds."""
    if len(blob) < _HEADER.size:
        raise MetadataError(f"{where} is truncated: {len(blob)} bytes, shorter than the "
                            f"{_HEADER.size}-byte array header")
    magic, _reserved, _dev_type, _dev_id, ndim, code, bits, lanes = _HEADER.unpack_from(blob)
    if magic != _MAGIC:
        raise MetadataError(f"{where} is not a TVM array (bad magic number {magic:#x})")
    if not 0 <= ndim <= _MAX_NDIM:
        raise MetadataError(f"{where} has {ndim} dimensions (at most {_MAX_NDIM} are "
                            "supported)")
    if lanes != 1:
        raise MetadataError(f"{where} is a vector (multi-lane) array, which is not supported")
    if (code == 1 and bits == 1) or code == 6:
        dtype = np.dtype("bool")
    elif code in (0, 1, 2) and bits in (8, 16, 32, 64) and not (code == 2 and bits == 8):
        dtype = np.dtype(f"{_CODES[code]}{bits}")
    else:
        raise MetadataError(f"{where} has an unsupported element type (type code {code}, "
                            f"{bits} bits)")
    offset = _HEADER.size
    if len(blob) < offset + 8 * ndim + 8:
        raise MetadataError(f"{where} is truncated inside its shape ({ndim} dimensions "
                            "announced)")
    shape = struct.unpack_from(f"<{ndim}q", blob, offset)
    offset += 8 * ndim
    (size,) = struct.unpack_from("<q", blob, offset)
    offset += 8
    if any(d < 0 for d in shape):
        raise MetadataError(f"{where} has a negative dimension in its shape {shape}")
    count = math.prod(shape)  # exact: Python integers do not overflow
    if size != count * dtype.itemsize:
        raise MetadataError(f"{where}: its byte size {size} does not match its shape {shape} "
                            f"of {dtype.name} ({count * dtype.itemsize} bytes)")
    if len(blob) - offset < size:
        raise MetadataError(f"{where} is truncated: {size} data bytes announced, "
                            f"{len(blob) - offset} present")
    if math.prod(max(d, 1) for d in shape) * dtype.itemsize >= 2 ** 63:
        # NumPy refuses such shapes even with a zero dimension (its extent overflows).
        raise MetadataError(f"{where} has a shape {shape} too large for any array")
    data = blob[offset: offset + size]
    try:
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    except ValueError as err:  # any shape NumPy still refuses
        raise MetadataError(f"{where} has a shape {shape} NumPy cannot build ({err})") \
            from None


def _encode_ndarray(array: np.ndarray) -> str:
    array = np.ascontiguousarray(array)
    if array.dtype == np.bool_:
        code, bits = 1, 1
    elif array.dtype.kind in "iuf":
        code, bits = {"i": 0, "u": 1, "f": 2}[array.dtype.kind], array.dtype.itemsize * 8
    else:
        raise ValueError(f"cannot serialise arrays of dtype {array.dtype}")
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    head = struct.pack("<QQiii", _MAGIC, 0, 1, 0, array.ndim)
    head += struct.pack("<BBH", code, bits, 1)
    head += struct.pack(f"<{array.ndim}q", *array.shape)
    head += struct.pack("<q", len(data))
    return base64.b64encode(head + data).decode("ascii")


def load_metadata(text: str) -> dict[str, list]:
    """Parse the JSON after ``#[metadata]`` into {type key: [objects]}.

    Raises ``MetadataError`` (never anything else) on any malformed input: bad JSON (also
    nested too deeply for Python's parser), values of the wrong JSON type, node or array
    indices out of range, undecodable or inconsistent arrays. Nothing is allocated beyond
    what the text itself holds."""
    try:
        graph = json.loads(text)
    except json.JSONDecodeError as err:
        raise MetadataError(f"invalid JSON: {err.msg}", err.pos) from None
    except RecursionError:
        raise MetadataError("the JSON is nested too deeply to read") from None
    except ValueError:  # an integer with more digits than Python converts (4300)
        raise MetadataError("invalid JSON: a number has too many digits to read") from None
    if not isinstance(graph, dict):
        raise MetadataError(f"expected a JSON object (TVM's graph format), found "
                            f"{_kind(graph)}")
    if "nodes" not in graph:
        raise MetadataError("the JSON object has no 'nodes' list (TVM's graph format)")
    nodes = graph["nodes"]
    arrays = graph.get("b64ndarrays", [])
    if not isinstance(nodes, list):
        raise MetadataError(f"'nodes' must be a list, found {_kind(nodes)}")
    if not isinstance(arrays, list):
        raise MetadataError(f"'b64ndarrays' must be a list, found {_kind(arrays)}")
    if not isinstance(graph.get("attrs", {}), dict):
        raise MetadataError(f"'attrs' must be an object, found {_kind(graph['attrs'])}")
    decoded: dict[int, np.ndarray] = {}
    built: dict[int, object] = {}

    def index(value: object, what: str, limit: int, noun: str = "nodes") -> int:
        """``value`` as an index below ``limit`` (TVM writes some indices as strings)."""
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 20:
            value = int(value)
        if type(value) is not int:
            raise MetadataError(f"{what} must be an integer index, found {_kind(value)}")
        if not 0 <= value < limit:
            raise MetadataError(f"{what} is {value}, out of range (there are {limit} {noun})")
        return value

    def node(i: object, what: str) -> dict:
        k = index(i, what, len(nodes))
        if not isinstance(nodes[k], dict):
            raise MetadataError(f"node {k} must be an object, found {_kind(nodes[k])}")
        return nodes[k]

    def field(n: dict, key: str, kind: type, default: object, k: int) -> Any:
        value = n.get(key, default)
        if not isinstance(value, kind):
            raise MetadataError(f"node {k}: '{key}' must be {_KIND_NAMES[kind]}, found "
                                f"{_kind(value)}")
        return value

    def build(i: object, what: str) -> object:
        n = node(i, what)
        k = index(i, what, len(nodes))  # the same checks again: cannot fail now
        if k in built:
            return built[k]
        obj: object = n
        if n.get("type_key") == "relay.Constant":
            attrs = field(n, "attrs", dict, {}, k)
            if "data" not in attrs:
                raise MetadataError(f"node {k} (a relay.Constant) has no 'data' array")
            j = index(attrs["data"], f"the 'data' of node {k} (a relay.Constant)",
                      len(arrays), "b64ndarrays")
            if j not in decoded:
                decoded[j] = _decode_ndarray(_b64(arrays[j], j), f"b64ndarrays[{j}]")
            obj = Constant(decoded[j])
        else:  # kept opaque, with its graph for printing it back (MetaObject)
            key = n.get("type_key")
            obj = MetaObject(key if isinstance(key, str) else "", json.dumps(n, sort_keys=True),
                             (nodes, arrays, k, root_k))
        built[k] = obj
        return obj

    root_index = graph.get("root", 1)
    root = node(root_index, "'root'")
    if root.get("type_key") not in ("Map", "StrMap"):
        raise MetadataError(f"the root node must be a Map, found {_type_key(root)}")
    k = index(root_index, "'root'", len(nodes))
    root_k = k  # the root map's index, kept with opaque objects (MetaObject.source)
    keys, data = field(root, "keys", list, [], k), field(root, "data", list, [], k)
    if len(keys) != len(data):
        raise MetadataError(f"the root map has {len(keys)} keys but {len(data)} values")
    table: dict[str, list] = {}
    for key, value in zip(keys, data, strict=True):
        if not isinstance(key, str):
            raise MetadataError(f"the root map's keys must be strings, found {_kind(key)}")
        where = f"the value of metadata entry {key!r}"
        arr = node(value, where)
        if arr.get("type_key") != "Array":
            raise MetadataError(f"{where} must be an Array node, found {_type_key(arr)}")
        items = field(arr, "data", list, [], index(value, where, len(nodes)))
        table[key] = [build(j, f"element {m} of metadata entry {key!r}")
                      for m, j in enumerate(items)]
    return table


def _b64(value: object, j: int) -> bytes:
    if not isinstance(value, str):
        raise MetadataError(f"b64ndarrays[{j}] must be a base64 string, found {_kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:  # binascii.Error, or non-ASCII text
        raise MetadataError(f"b64ndarrays[{j}] is not valid base64") from None


_KIND_NAMES = {dict: "an object", list: "a list", str: "a string"}


def _kind(value: object) -> str:
    """A JSON value's kind in plain words: 'a string', 'the number 3', 'null'..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{'true' if value else 'false'}"
    if isinstance(value, int | float):
        text = repr(value)
        return f"the number {text if len(text) <= 24 else text[:20] + '...'}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 24 else "a string"
    return _KIND_NAMES.get(type(value), type(value).__name__)


def _type_key(n: dict) -> str:
    key = n.get("type_key")
    return f"a {key} node" if isinstance(key, str) and key else "a node without a type_key"


def dump_metadata(constants: list[np.ndarray],
                  objects: dict[str, list[MetaObject]] | None = None) -> str:
    """TVM-format JSON for the table ``relay.Constant`` -> ``constants`` plus ``objects``
    (type key -> opaque objects, in table order).

    The graph the first opaque object was read from is copied verbatim at the start (its
    nodes keep their indices, so references inside them stay valid); the new nodes and the
    root map follow. An object from any other graph (or given from Python) is written as its
    node alone."""
    table: dict[str, list[Any]] = {"relay.Constant": list(constants)} if constants else {}
    table.update((k, v) for k, v in (objects or {}).items() if v)
    nodes: list[Any] = [{"type_key": ""}]
    free: list[int] = []  # slots of the base graph's own table nodes, reused in order
    base = next((o.source for k, objs in table.items() if k != "relay.Constant"
                 for o in objs if isinstance(o.source, tuple)), None)
    if base is not None:
        nodes = list(base[0])
        free = _table_slots(nodes, base[3])
        for i in free:
            nodes[i] = {"type_key": ""}
    arrays: list[str] = []

    def alloc(node: dict) -> int:
        if free:
            i = free.pop(0)
            nodes[i] = node
            return i
        nodes.append(node)
        return len(nodes) - 1

    root_node: dict[str, Any] = {"type_key": "Map", "keys": list(table), "data": []}
    root = alloc(root_node)
    lists = []
    for _ in table:
        lists.append({"type_key": "Array", "data": []})
        root_node["data"].append(alloc(lists[-1]))
    for refs, (key, items) in zip((n["data"] for n in lists), table.items(), strict=True):
        for item in items:
            src = getattr(item, "source", None)
            if key == "relay.Constant":
                refs.append(alloc({"type_key": "relay.Constant",
                                   "attrs": {"_checked_type_": "0", "data": str(len(arrays)),
                                             "span": "0", "virtual_device_": "0"}}))
                arrays.append(_encode_ndarray(item))
            elif base is not None and isinstance(src, tuple) and src[0] is base[0]:
                refs.append(src[2])
            else:
                refs.append(alloc(json.loads(item.node)))
    graph = {"root": root, "nodes": nodes, "b64ndarrays": arrays,
             "attrs": {"tvm_version": "0.8.dev0"}}
    return json.dumps(graph, indent=2)


def _table_slots(nodes: list[Any], root: int) -> list[int]:
    """Indices of a graph's own table nodes: its root map, the arrays under it and the
    constants in those (``dump_metadata`` rewrites them in place, so printing the same table
    again gives the same text; the objects stay where they are)."""
    def is_node(i: object, type_key: str) -> bool:
        return type(i) is int and 0 < i < len(nodes) and isinstance(nodes[i], dict) \
            and nodes[i].get("type_key") == type_key

    slots = [root]
    for j in nodes[root].get("data", []):
        if is_node(j, "Array"):
            slots.append(j)
            slots += [k for k in nodes[j].get("data", []) if is_node(k, "relay.Constant")]
    return sorted(set(slots))


def meta_object(key: str, value: object) -> MetaObject:
    """An opaque metadata object given from Python (``parse(..., metadata=...)``): a
    ``MetaObject`` as is; a dict becomes a node with those attributes (values as text);
    anything else a node whose attribute ``value`` is its text."""
    if isinstance(value, MetaObject):
        return value
    attrs = {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) \
        else {"value": str(value)}
    return MetaObject(key, json.dumps({"attrs": attrs, "type_key": key}, sort_keys=True))
