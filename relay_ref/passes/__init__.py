"""Program-to-program rewrites (DESIGN.md section 2: above the interpreter, below the
executor). Each pass is a class in its own module with ``name``, ``opt_level`` and
``__call__(mod) -> mod``:

* ``relay_ref.passes.base``: the ``Pass`` base class (options: its constructor's keyword
  parameters) and ``register_pass``; the only infrastructure module pass modules import;
* ``relay_ref.passes.registry``: every pass module imported, lookup by name (``get_pass``,
  ``pass_names``);
* ``relay_ref.passes.spec``: pass specs as text (``"FuseOps(max_depth=8),FoldConstant"``);
* ``relay_ref.passes.manager``: the one pipeline (``Pipeline``, ``run_passes``,
  ``make_pass``) of ``rr.optimize``, ``relay opt`` and ``rr.compile``;
* ``relay_ref.passes.rewrite``: the linear-time traversal every pass is written with.
"""

from relay_ref.passes.base import Pass, register_pass, unregister_pass
from relay_ref.passes.manager import (
    Pipeline,
    Sequential,
    make_pass,
    resolve_passes,
    run_passes,
)
from relay_ref.passes.registry import get_pass, pass_class, pass_names
from relay_ref.passes.spec import PassSpecError, parse_specs, split_specs

__all__ = ["Pass", "PassSpecError", "Pipeline", "Sequential", "get_pass", "make_pass",
           "parse_specs", "pass_class", "pass_names", "register_pass", "resolve_passes",
           "run_passes", "split_specs", "unregister_pass"]
