"""The table of built-in CPU kernels (``relay_ref/ops/kernels.py``): every entry names a
registered op, is installed as that op's ``kernels["cpu"]`` (a ``KernelRef``), loads through
``op_kernel`` and follows the kernel protocol's signature ``fn(args, attrs, out=None)``;
``returns_view`` is set exactly on the layout kernels that return views."""

from __future__ import annotations

import inspect

import pytest

from relay_ref.ops.kernels import BUILTIN_CPU_KERNELS
from relay_ref.ops.registry import KernelRef, get_op, has_op, op_kernel

VIEW_KERNELS = {"reshape", "transpose", "squeeze", "expand_dims", "nn.batch_flatten"}


@pytest.mark.parametrize("name", sorted(BUILTIN_CPU_KERNELS))
def test_entry_loads_and_has_the_protocol_signature(name: str) -> None:
    assert has_op(name), f"{name} is not a registered op"
    ref = get_op(name).kernels.get("cpu")
    # a user's set_kernel may replace the built-in; by default the table's entry is there
    assert ref == KernelRef.parse(BUILTIN_CPU_KERNELS[name])
    fn = op_kernel(name)
    assert callable(fn)
    params = list(inspect.signature(fn).parameters.values())
    assert len(params) == 3, f"{name}: {params}"
    assert params[2].name == "out" and params[2].default is None, name
    assert op_kernel(name) is fn  # loaded once
    assert bool(getattr(fn, "returns_view", False)) == (name in VIEW_KERNELS), name
