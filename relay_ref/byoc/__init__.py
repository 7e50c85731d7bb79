"""Bring Your Own Codegen (spec/byoc.md; Chen et al., arXiv 2105.03215): backends declare
what they support and how they compile a region, ``partition`` cuts a program into regions
(``Compiler=<backend>`` global functions), and ``rr.compile`` hands each region to its
backend's codegen once (the executor's ``externs``).

Layering: this package sits above the passes and the executor (it fills the passes'
support table, ``relay_ref.passes.compiler_support``, and may import the executor); the
executor never imports it; the public API (``relay_ref/__init__.py``) wires them.
"""

from __future__ import annotations

from relay_ref.byoc.backend import (
    Backend,
    backend_names,
    ensure_backends,
    get_backend,
    register_backend,
    unregister_backend,
)
from relay_ref.byoc.errors import CodegenUnsupported
from relay_ref.byoc.partition import partition
from relay_ref.byoc.reference import register_reference_backend
from relay_ref.passes.compiler_support import CallInfo, Composite, RegionCost, UnknownCompiler

__all__ = ["Backend", "CallInfo", "CodegenUnsupported", "Composite", "RegionCost",
           "UnknownCompiler", "backend_names", "ensure_backends", "get_backend", "partition",
           "register_backend", "register_reference_backend", "unregister_backend"]
