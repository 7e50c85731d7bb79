"""Every built-in operator's aspects are where the rule in ``relay_ref/ops/__init__.py`` says:
core aspects from ``register_op`` in a family module, each table aspect from its per-aspect
table (attached once, by the package, naming registered ops and the modules the rule names).

The registry records who declared what (``registry.declared_in``); the static checks read the
sources with ``ast`` so that a stray ``set_kernel`` or ``register_op(..., op_pattern=...)``
fails here even when it happens to set the same value."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import relay_ref.ops as ops
from relay_ref.ops import costs, gradients, kernels, patterns
from relay_ref.ops.registry import (
    Examples,
    KernelRef,
    NoAttrs,
    OpPattern,
    Values,
    all_ops,
    attach,
    declared_in,
    get_op,
    register_op,
    set_op_pattern,
)

OPS_DIR = Path(ops.__file__).parent
FAMILY_NAMES = {f.__name__ for f in ops.FAMILIES}
#: the registry functions that set a table aspect: only the package (and users) call them
ATTACHERS = {"attach", "set_examples", "set_op_pattern", "set_kernel", "set_gradient"}
#: the ``OpDef`` fields the table aspects fill (no module but the registry rebuilds them)
TABLE_FIELDS = {"attr_examples", "arg_examples", "values", "op_pattern", "kernels", "gradient",
                "tangent", "differentiable", "cost"}


def _calls(path: Path) -> list[ast.Call]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _table_entries() -> dict[str, list[tuple[str, str]]]:
    """aspect -> [(op, declaring module)] over every built-in table, duplicates kept."""
    out: dict[str, list[tuple[str, str]]] = {
        "examples": [(n, f.__name__) for f in ops.FAMILIES for n in getattr(f, "EXAMPLES", {})],
        "values": [(n, f.__name__) for f in ops.FAMILIES for n in getattr(f, "VALUES", {})],
        "pattern": [(n, patterns.__name__) for names in patterns.BUILTIN_PATTERNS.values()
                    for n in names],
        "kernel:cpu": [(n, kernels.__name__) for n in kernels.BUILTIN_CPU_KERNELS],
        "kernel:cuda": [(n, kernels.__name__) for n in kernels.BUILTIN_CUDA_KERNELS],
        "gradient": [(n, f.__name__) for f in gradients.FAMILIES
                     for n in (*f.RULES, *f.NOT_DIFFERENTIABLE)],
    }
    out["cost"] = [(n, costs.__name__) for n in costs.BUILTIN_COSTS]
    classified = {n for n, _ in out["gradient"]}
    out["gradient"] += [(n, gradients.__name__)
                        for n in gradients.fallback_reasons(all_ops(), classified)]
    return out


def test_core_aspects_come_from_register_op_in_a_family_module() -> None:
    registered = all_ops()
    assert len(registered) > 150
    wrong = {n: declared_in(n).get("core") for n in registered
             if declared_in(n).get("core") not in FAMILY_NAMES}
    assert not wrong
    # and statically: register_op is called in family modules only, and never with an aspect
    # that has its own table
    for path in sorted(OPS_DIR.glob("*.py")):
        module = f"relay_ref.ops.{path.stem}"
        for call in _calls(path):
            if _callee(call) != "register_op":
                continue
            assert module in FAMILY_NAMES, f"{module}:{call.lineno} registers an op"
            keys = {k.arg for k in call.keywords}
            assert None not in keys, f"{module}:{call.lineno}: register_op(**...)"
            assert not keys & {"kernels", "op_pattern"}, f"{module}:{call.lineno}: {keys}"


def test_table_aspects_are_attached_only_by_the_package() -> None:
    for path in sorted(OPS_DIR.glob("*.py")):
        if path.stem in ("__init__", "registry"):
            continue
        bad = [f"{path.stem}:{c.lineno} {_callee(c)}" for c in _calls(path)
               if _callee(c) in ATTACHERS or _callee(c) == "replace"
               and {k.arg for k in c.keywords} & TABLE_FIELDS]
        assert not bad
    init_calls = {_callee(c) for c in _calls(OPS_DIR / "__init__.py")}
    assert "attach" in init_calls and not init_calls & (ATTACHERS - {"attach"})


@pytest.mark.parametrize("aspect", ["examples", "values", "pattern", "kernel:cpu", "cost",
                                    "kernel:cuda", "gradient"])
def test_every_table_entry_is_a_registered_op_named_once(aspect: str) -> None:
    entries = _table_entries()[aspect]
    assert entries
    names = [n for n, _ in entries]
    assert not sorted(n for n in names if n not in all_ops())
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_each_op_records_exactly_the_tables_that_name_it() -> None:
    expected: dict[str, dict[str, str]] = {n: {} for n in all_ops()}
    for aspect, entries in _table_entries().items():
        for name, module in entries:
            expected[name][aspect] = module
    for name in all_ops():
        got = declared_in(name)
        assert got.pop("core") in FAMILY_NAMES
        assert got == expected[name], name


def test_tables_reference_the_modules_the_rule_names() -> None:
    # examples: in the family module that registered the op
    for family in ops.FAMILIES:
        for name, hint in getattr(family, "EXAMPLES", {}).items():
            assert isinstance(hint, Examples)
            assert declared_in(name)["core"] == family.__name__, name
    # values that matter: likewise, data only, in the family module that registered the op
    for family in ops.FAMILIES:
        for name, values in getattr(family, "VALUES", {}).items():
            assert isinstance(values, Values)
            assert declared_in(name)["core"] == family.__name__, name
            assert get_op(name).values is values
    # kernels: CPU adapters in cpu_*.py, CUDA adapters in cuda_ops.py, each a real function
    for table, allowed in ((kernels.BUILTIN_CPU_KERNELS, "relay_ref.ops.cpu_"),
                           (kernels.BUILTIN_CUDA_KERNELS, "relay_ref.ops.cuda_ops")):
        for name, text in table.items():
            ref = KernelRef.parse(text)
            assert ref.module.startswith(allowed), (name, text)
            assert callable(ref.load()), (name, text)
    # gradients: the rules are defined in the grad_*.py module whose table names them
    for family in gradients.FAMILIES:
        assert family.__name__.startswith("relay_ref.ops.grad_")
        for name, (reverse, forward) in family.RULES.items():
            assert reverse.__module__ == forward.__module__ == family.__name__, name
            assert get_op(name).gradient is reverse and get_op(name).tangent is forward


def test_attach_refuses_unregistered_ops_a_second_attachment_and_unknown_aspects() -> None:
    from relay_ref.ops import registry

    name = "test.op_rule_identity"
    register_op(name, relation=lambda ts, attrs: ts[0], reference=lambda a, attrs: a[0],
                num_inputs=1, attrs=NoAttrs)
    try:
        assert declared_in(name) == {"core": __name__}
        attach("pattern", {name: OpPattern.ELEMWISE}, source="test.table")
        assert get_op(name).op_pattern == OpPattern.ELEMWISE
        assert declared_in(name)["pattern"] == "test.table"
        with pytest.raises(ValueError, match="already attached"):
            attach("pattern", {name: OpPattern.INJECTIVE}, source="test.other")
        with pytest.raises(ValueError, match="already attached"):
            attach("gradient", [(name, "no"), (name, "twice")], source="test.table")
        with pytest.raises(KeyError, match="not registered"):
            attach("pattern", {"test.no_such_op": OpPattern.ELEMWISE}, source="test.table")
        with pytest.raises(ValueError, match="unknown aspect"):
            attach("colour", {name: "red"}, source="test.table")
        # a user's single-op setter replaces a table's value on purpose
        set_op_pattern(name, OpPattern.OPAQUE)
        assert get_op(name).op_pattern == OpPattern.OPAQUE
        assert declared_in(name)["pattern"] == __name__
    finally:
        registry._REGISTRY.pop(name, None)


def test_the_registry_is_complete_whichever_ops_module_is_imported_first() -> None:
    code = ("from relay_ref.ops.registry import get_op\n"
            "op = get_op('nn.conv2d')\n"
            "print(sorted(op.kernels), int(op.op_pattern), op.differentiable,"
            " len(op.attr_examples) > 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["['cpu',", "'cuda']", str(int(OpPattern.OUT_ELEMWISE_FUSABLE)), "True",
                   "True"]
