"""Every differentiable op's rules are checked against finite differences and jax: the
ops no other rule table covers (piecewise-constant ops, constructors of constants, layout
and annotation identities) have their table here, and a test asserts that every op marked
differentiable appears in one of the rule-test tables (tests/ops/test_gradients*.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

import relay_ref as rr  # noqa: E402
from relay_ref.ir.expr import Call, Function, Op, Var  # noqa: E402
from relay_ref.ir.module import IRModule  # noqa: E402
from relay_ref.ops.registry import all_ops, get_op, make_attrs  # noqa: E402
from tests.ops.gradcheck import RNG, check_op  # noqa: E402


def _x(*shape: int) -> np.ndarray:
    return RNG.uniform(-2.0, 2.0, shape)


def _s2d(x: object) -> object:
    """nn.space_to_depth, NCHW, block 2, DCR (as TVM: block offsets outermost)."""
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * 4, h // 2, w // 2)


CASES = [
    # piecewise constant: adjoint and tangent 0 (as jax's), at points off the jumps
    ("round", [_x(2, 3)], {}, jnp.round, None),
    ("floor", [_x(2, 3)], {}, jnp.floor, None),
    ("ceil", [_x(2, 3)], {}, jnp.ceil, None),
    ("trunc", [_x(2, 3)], {}, jnp.trunc, None),
    ("sign", [_x(2, 3)], {}, jnp.sign, None),
    ("floor_divide", [_x(2, 3) * 3, RNG.uniform(0.5, 1.5, (3,))], {}, jnp.floor_divide, None),
    # constants: an input only its shape is read from (no inputs: test_constant_rules)
    ("ones_like", [_x(2, 3)], {}, jnp.ones_like, None),
    ("cast_like", [_x(2, 3), np.zeros((1,))], {}, lambda x, y: x, [0]),
    # layout
    ("layout_transform", [_x(1, 2, 3, 4)], {"src_layout": "NCHW", "dst_layout": "NHWC"},
     lambda x: x.transpose(0, 2, 3, 1), None),
    ("nn.space_to_depth", [_x(1, 2, 4, 6)], {"block_size": 2}, _s2d, None),
    # annotations: the identity
    ("annotation.checkpoint", [_x(2, 3)], {}, lambda x: x, None),
    ("annotation.stop_fusion", [_x(2, 3)], {}, lambda x: x, None),
    ("annotation.compiler_begin", [_x(2, 3)], {"compiler": "ext"}, lambda x: x, None),
    ("annotation.compiler_end", [_x(2, 3)], {"compiler": "ext"}, lambda x: x, None),
    ("on_device", [_x(2, 3)], {}, lambda x: x, None),
    ("device_copy", [_x(2, 3)], {}, lambda x: x, None),
]


@pytest.mark.parametrize(("name", "args", "attrs", "jfn", "which"), CASES,
                         ids=[c[0] for c in CASES])
def test_rules(name: str, args: list, attrs: dict, jfn: object, which: list | None) -> None:
    check_op(name, args, attrs, jfn, which)


@pytest.mark.parametrize("name", ["zeros", "ones"])
def test_constant_rules(name: str) -> None:
    """No inputs: no adjoints; the tangent is 0 (jax.jvp of a constant)."""
    call = Call(Op(name), (), make_attrs(name, {"shape": (2, 3), "dtype": "float64"}))
    ty = rr.infer_types(IRModule({"main": Function((), call)})).type_of(call)
    assert get_op(name).gradient(call, Var("g", ty), lambda e: ty) == ()
    tangent = rr.evaluate(get_op(name).tangent(call, (), lambda e: ty))
    want = jax.jvp(lambda: getattr(jnp, name)((2, 3)), (), ())[1]
    np.testing.assert_array_equal(tangent, want)
    assert tangent.shape == (2, 3)


def _tested_ops() -> set[str]:
    """Op names the rule tests name: the first string of a tuple (a table row), a dict key,
    a string in a ``parametrize`` value list, the first argument of ``check_op`` /
    ``reverse_values`` / ``forward_value``."""
    names: set[str] = set()
    for path in Path(__file__).parent.glob("test_gradients*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple) and node.elts and _str(node.elts[0]):
                names.add(node.elts[0].value)
            elif isinstance(node, ast.Dict):
                names |= {k.value for k in node.keys if k is not None and _str(k)}
            elif isinstance(node, ast.Call):
                func = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    getattr(node.func, "id", "")
                if func == "parametrize" and len(node.args) > 1:
                    names |= {n.value for n in ast.walk(node.args[1]) if _str(n)}
                elif func in ("check_op", "reverse_values", "forward_value") and \
                        node.args and _str(node.args[0]):
                    names.add(node.args[0].value)
    return names


def _str(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def test_every_differentiable_op_is_in_a_rule_table() -> None:
    tested = _tested_ops()
    missing = sorted(n for n, op in all_ops().items() if op.differentiable is True
                     and n not in tested)
    assert not missing, f"differentiable ops without a rule test: {missing}"
