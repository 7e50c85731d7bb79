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

Only ``relay.Constant`` entries become IR (``Constant`` nodes); other entries are kept as
their raw JSON node dicts. ``dump_metadata`` writes the same format, so TVM's
``tvm.ir.load_json`` can read our section and we read TVM's.
"""

from __future__ import annotations

import base64
import json
import struct

import numpy as np

from relay_ref.ir.expr import Constant

_MAGIC = 0xDD5E40F096B4A13F
_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat"}


class MetadataError(Exception):
    """A malformed ``#[metadata]`` section (message in plain words)."""


def _decode_ndarray(blob: bytes) -> np.ndarray:
    try:
        magic, _reserved, _dev_type, _dev_id, ndim = struct.unpack_from("<QQiii", blob, 0)
        if magic != _MAGIC:
            raise MetadataError("an array has a bad magic number")
        code, bits, lanes = struct.unpack_from("<BBH", blob, 28)
        offset = 32
        shape = struct.unpack_from(f"<{ndim}q", blob, offset)
        offset += 8 * ndim
        (size,) = struct.unpack_from("<q", blob, offset)
        offset += 8
        data = blob[offset: offset + size]
    except struct.error:
        raise MetadataError("an array is truncated") from None
    if lanes != 1:
        raise MetadataError("vector (multi-lane) arrays are not supported")
    if (code == 1 and bits == 1) or code == 6:
        dtype = np.dtype("bool")
    elif code in (0, 1, 2) and bits in (8, 16, 32, 64) and not (code == 2 and bits == 8):
        dtype = np.dtype(f"{_CODES[code]}{bits}")
    else:
        raise MetadataError(f"unsupported array element type (code {code}, {bits} bits)")
    count = int(np.prod(shape)) if shape else 1
    if len(data) != count * dtype.itemsize or size != len(data):
        raise MetadataError("an array's byte size does not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


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
    """Parse the JSON after ``#[metadata]`` into {type key: [objects]}."""
    try:
        graph = json.loads(text)
    except json.JSONDecodeError as err:
        raise MetadataError(f"invalid JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(graph, dict) or "nodes" not in graph:
        raise MetadataError("expected TVM's JSON graph format with a 'nodes' list")
    nodes = graph["nodes"]
    arrays = graph.get("b64ndarrays", [])
    if not isinstance(nodes, list) or not isinstance(arrays, list):
        raise MetadataError("'nodes' and 'b64ndarrays' must be lists")
    decoded: dict[int, np.ndarray] = {}
    built: dict[int, object] = {}

    def node(i: object) -> dict:
        if not isinstance(i, int) or not 0 <= i < len(nodes) or not isinstance(nodes[i], dict):
            raise MetadataError(f"bad node reference {i!r}")
        return nodes[i]

    def build(i: int) -> object:
        if i in built:
            return built[i]
        n = node(i)
        if n.get("type_key") == "relay.Constant":
            try:
                k = int(n.get("attrs", {}).get("data"))
                blob = base64.b64decode(arrays[k], validate=True)
            except (TypeError, ValueError, IndexError):
                raise MetadataError("a relay.Constant has no valid 'data' array") from None
            if k not in decoded:
                decoded[k] = _decode_ndarray(blob)
            obj: object = Constant(decoded[k])
        else:
            obj = n
        built[i] = obj
        return obj

    root = node(graph.get("root", 1))
    if root.get("type_key") not in ("Map", "StrMap"):
        raise MetadataError("the root of the metadata must be a map")
    keys, data = root.get("keys", []), root.get("data", [])
    if not isinstance(keys, list) or not isinstance(data, list) or len(keys) != len(data):
        raise MetadataError("the metadata map is malformed")
    table: dict[str, list] = {}
    for key, index in zip(keys, data, strict=True):
        arr = node(index)
        items = arr.get("data", [])
        if arr.get("type_key") != "Array" or not isinstance(items, list):
            raise MetadataError(f"metadata entry {key!r} is not an array")
        table[str(key)] = [build(j) for j in items]
    return table


def dump_metadata(constants: list[np.ndarray]) -> str:
    """TVM-format JSON for a table whose only entry is ``relay.Constant`` -> ``constants``."""
    nodes: list[dict] = [
        {"type_key": ""},
        {"type_key": "Map", "keys": ["relay.Constant"], "data": [2]},
        {"type_key": "Array", "data": list(range(3, 3 + len(constants)))},
    ]
    for i in range(len(constants)):
        nodes.append({"type_key": "relay.Constant",
                      "attrs": {"_checked_type_": "0", "data": str(i), "span": "0",
                                "virtual_device_": "0"}})
    graph = {"root": 1, "nodes": nodes,
             "b64ndarrays": [_encode_ndarray(c) for c in constants],
             "attrs": {"tvm_version": "0.8.dev0"}}
    return json.dumps(graph, indent=2)
