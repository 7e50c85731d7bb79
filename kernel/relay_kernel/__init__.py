"""A Jupyter kernel for the Relay IR (cells of ``.relay`` text).

Layers, top to bottom (the protocol never holds Relay semantics, the session never touches
ZMQ):

* ``kernel``   -- ``RelayKernel``, the ipykernel ``Kernel`` subclass (messages only);
* ``commands`` -- the ``:``-commands (``:type``, ``:ast``, ``:help`` ...);
* ``session``  -- ``Session``: the accumulated module, top-level bindings and cell rules;
* ``display``  -- values, types and errors as MIME bundles / ANSI traceback lines;
* ``editor``   -- ``is_complete``, completion and inspection helpers;
* ``lexer``    -- ``RelayLexer`` for Pygments (registered as the ``relay`` lexer).
"""

from __future__ import annotations

__version__ = "0.1.0"
