"""Program-to-program rewrites (DESIGN.md section 2: above the interpreter, below the
executor). Each pass is a class in its own module with ``name``, ``opt_level`` and
``__call__(mod) -> mod``; ``relay_ref.passes.base`` has the pass manager (``Sequential``)
and the registry (``get_pass``); ``relay_ref.passes.rewrite`` the linear-time traversal
every pass is written with.
"""

# The passes register themselves by name (``get_pass``, ``relay opt --passes``).
from relay_ref.passes import (  # noqa: E402, F401, I001
    dead_code,
    eliminate_common_subexpr,
    fold_constant,
    fold_scale_axis,
    fuse_ops,
    gradient,
    inline,
    lambda_lift,
    partial_eval,
    simplify_expr,
    simplify_inference,
    to_a_normal_form,
    to_graph_normal_form,
)
from relay_ref.passes.base import Pass, Sequential, get_pass, pass_names, register_pass

__all__ = ["Pass", "Sequential", "get_pass", "pass_names", "register_pass"]
