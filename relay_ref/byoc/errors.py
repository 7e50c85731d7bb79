"""Errors of the BYOC layer (spec/byoc.md): a backend's codegen refusing a region.

``CodegenUnsupported`` is what a codegen raises when it cannot handle a region; the
executor then runs that region on the host with a note in ``exe.plan`` (BYOC-Fallback).
It is defined beside the executor's region step (``relay_ref.executor.externs``, which
catches it; the executor never imports this layer) and re-exported here for backends.
"""

from __future__ import annotations

from relay_ref.executor.externs import CodegenUnsupported

__all__ = ["CodegenUnsupported"]
