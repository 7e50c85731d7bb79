"""Errors of the BYOC layer (spec/byoc.md): a backend's codegen refusing a region.

``CodegenUnsupported`` is what a codegen raises when it cannot handle a region; the
executor then runs that region on the host with a note in ``exe.plan`` (BYOC-Fallback).
"""

from __future__ import annotations

from relay_ref.diagnostics import RelayError

__all__ = ["CodegenUnsupported"]


class CodegenUnsupported(RelayError, ValueError):
    """A backend's codegen refuses a region."""
