"""The prelude: Relay's standard library (``prelude.relay``), loaded on demand.

``load_prelude()`` parses ``prelude.relay`` once per process (with ``prelude=False``) and
returns the cached module. The parser uses it for the fallback of DESIGN.md section 3: a
module that uses a global, type or constructor it does not define itself gets the prelude's
definition, together with the transitive closure of what that definition uses.
"""

from __future__ import annotations

import functools
from pathlib import Path

from relay_ref.ir.module import IRModule

PRELUDE_PATH = Path(__file__).with_name("prelude.relay")


@functools.cache
def load_prelude() -> IRModule:
    """The parsed prelude module (shared; treat it as immutable)."""
    from relay_ref.syntax.parser import parse

    return parse(PRELUDE_PATH.read_text(), str(PRELUDE_PATH), prelude=False)
