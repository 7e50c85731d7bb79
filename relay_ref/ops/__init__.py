"""Operator families. Importing this package registers every built-in operator.

Each family module registers its operators at import time (attrs schema + type relation +
NumPy reference, one place per op); see ``registry.py`` for the protocols. After them,
``patterns.py`` gives the built-in ops their fusion patterns (TVM's ``TOpPattern``) and
``kernels.py`` their fast CPU kernels (``OpDef.kernels["cpu"]``, loaded on first use), and
``gradients.py`` their differentiation rules (``grad_*.py``, one file per family).
"""

from relay_ref.ops import (  # noqa: F401  (registration side effects)
    algorithm,
    annotation,
    dyn,
    einsum,
    gradient_op,
    grid_sample,
    image,
    nn,
    nn_blocked,
    nn_nd,
    nn_norm,
    qnn,
    reduce,
    scatter,
    tensor,
    transform,
    transform_layout,
    vision,
)
from relay_ref.ops.gradients import apply_builtin_gradients
from relay_ref.ops.kernels import apply_builtin_kernels
from relay_ref.ops.patterns import apply_builtin_patterns

apply_builtin_patterns()
apply_builtin_kernels()
apply_builtin_gradients()
