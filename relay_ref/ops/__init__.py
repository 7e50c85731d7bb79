"""Operator families. Importing this package registers every built-in operator.

Where an operator lives (the rule; ``tests/ops/test_op_rule.py`` checks it)
===========================================================================

An operator has *core* aspects, declared in one ``register_op`` call, and *table* aspects,
each declared in a per-aspect table named as such. No aspect is declared anywhere else.

Core (``registry.register_op``, in the op's **family module**, one of ``FAMILIES`` below):
    name, arity and argument names, the attrs schema (a frozen dataclass), the type relation
    (and its predicate and relation name), the NumPy reference, support level and doc. A
    family module may hold helpers its ops share (``nn_blocked`` and ``nn_nd`` build on
    ``nn``); ``relations.py`` holds relation helpers and registers nothing. The built-in
    ``register_op`` calls pass neither ``kernels=`` nor ``op_pattern=``: those are table
    aspects (the parameters remain for users' own ops).

Table aspects, each a mapping from op name to the aspect's value:

    ``examples``       ``EXAMPLES`` in the op's own family module, after the ops it
                       names (``registry.Examples``: test-generation hints, data only)
    ``values``         ``VALUES`` in the op's own family module, after ``EXAMPLES``
                       (``registry.Values``: values that matter when a test focuses on
                       the op -- thresholds, ties, inf/nan, overflow; data only)
    ``pattern``        ``patterns.BUILTIN_PATTERNS`` (TVM's ``TOpPattern``, grouped by
                       pattern so the classification reads against TVM in one place)
    ``kernel:cpu``     ``kernels.BUILTIN_CPU_KERNELS``, naming functions of ``cpu_*.py``
                       (adapters over ``relay_ref.compute.cpu``)
    ``kernel:cuda``    ``kernels.BUILTIN_CUDA_KERNELS``, naming functions of
                       ``cuda_ops.py`` (adapters over ``relay_ref.compute.cuda``)
    ``gradient``       ``RULES`` and ``NOT_DIFFERENTIABLE`` of each ``grad_*.py`` module
                       (listed in ``gradients.FAMILIES``), rules defined in that module;
                       then ``gradients.fallback_reasons`` for whole namespaces
    ``cost``           ``costs.BUILTIN_COSTS`` (compute cost from argument shapes and
                       attributes, the DTR runtime's ``flops`` cost model)

When: this module imports every family (registering the core aspects), then attaches the
tables with ``registry.attach(aspect, table, source=module)`` in the fixed order above, and
nowhere else. ``attach`` is the one way a table reaches the registry; the single-op
``set_examples`` / ``set_op_pattern`` / ``set_kernel`` / ``set_gradient`` are for users (and
replace a table's value on purpose). Both rebuild the frozen ``OpDef`` through one registry
function; no other module does.

Invariants (``attach`` raises otherwise, at import):
* every op a table names is registered;
* each table aspect of an op is attached at most once (two tables naming an op for the same
  aspect are an error, not an override);
* ``registry.declared_in(op)`` says which module declared each aspect;
* after ``import relay_ref.ops`` (which importing any ``relay_ref.ops`` module does first)
  every ``OpDef`` is complete: outside this import, ``get_op`` / ``all_ops`` never see a
  partial registry; no module of this package imports the package itself.
See ``registry.py`` for the protocols each aspect follows.
"""

from relay_ref.ops import (
    algorithm,
    annotation,
    costs,
    dyn,
    einsum,
    gradient_op,
    gradients,
    grid_sample,
    image,
    kernels,
    nn,
    nn_blocked,
    nn_nd,
    nn_norm,
    patterns,
    qnn,
    reduce,
    scatter,
    symbolic,
    tensor,
    transform,
    transform_layout,
    vision,
)
from relay_ref.ops.registry import all_ops, attach

#: the family modules: each registers its ops' core aspects (and declares their examples)
FAMILIES = (algorithm, annotation, dyn, einsum, gradient_op, grid_sample, image, nn,
            nn_blocked, nn_nd, nn_norm, qnn, reduce, scatter, symbolic, tensor, transform,
            transform_layout, vision)

for _family in FAMILIES:
    attach("examples", getattr(_family, "EXAMPLES", {}), source=_family.__name__)
for _family in FAMILIES:
    attach("values", getattr(_family, "VALUES", {}), source=_family.__name__)
attach("pattern", ((name, pattern) for pattern, names in patterns.BUILTIN_PATTERNS.items()
                   for name in names), source=patterns.__name__)
attach("kernel:cpu", kernels.BUILTIN_CPU_KERNELS, source=kernels.__name__)
attach("kernel:cuda", kernels.BUILTIN_CUDA_KERNELS, source=kernels.__name__)
for _family in gradients.FAMILIES:
    attach("gradient", _family.RULES, source=_family.__name__)
    attach("gradient", _family.NOT_DIFFERENTIABLE, source=_family.__name__)
attach("gradient", gradients.fallback_reasons(
    all_ops(), {name for name, op in all_ops().items() if op.differentiable is not None}),
    source=gradients.__name__)
attach("cost", costs.BUILTIN_COSTS, source=costs.__name__)
