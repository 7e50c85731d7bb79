"""The weights ``from_onnx`` returns: a dict keyed by ``@main``'s parameter names that
also answers to the original ONNX names.

Iteration, ``keys()`` and ``dict(params)`` give the Relay names, so
``rr.compile(mod, params=params)`` binds them as they are; ``params[onnx_name]``,
``onnx_name in params`` and ``params.get(onnx_name)`` work as well. ``relay_names`` maps
every ONNX name the module's parameters came from (graph inputs too) to its Relay name,
``onnx_names`` the other way; the two are inverse.
"""

from __future__ import annotations

from typing import Any


class Params(dict):
    """Weights by Relay parameter name; lookups also accept the ONNX names."""

    def __init__(self, values: dict[str, Any], relay_names: dict[str, str]) -> None:
        super().__init__(values)
        self.relay_names: dict[str, str] = dict(relay_names)
        self.onnx_names: dict[str, str] = {v: k for k, v in relay_names.items()}

    def _key(self, key: object) -> object:
        if isinstance(key, str) and not super().__contains__(key):
            return self.relay_names.get(key, key)
        return key

    def __getitem__(self, key: object) -> Any:
        return super().__getitem__(self._key(key))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._key(key))

    def get(self, key: object, default: Any = None) -> Any:
        return super().get(self._key(key), default)
