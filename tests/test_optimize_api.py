"""``rr.optimize``: argument errors are clear, and a pass whose output is ill-typed is named."""

from __future__ import annotations

import numpy as np
import pytest

import relay_ref as rr
from relay_ref.ir.expr import Call, Constant, Op
from relay_ref.passes.fold_constant import FoldConstant
from relay_ref.passes.rewrite import map_functions, rewrite

MOD = rr.parse("def @main(%x: Tensor[(2), float32]) { add(%x, multiply(1f, 2f)) }")


def test_a_pass_whose_output_is_ill_typed_is_named():
    def to_int(mod):
        def rule(node):
            if isinstance(node, Call) and node.op == Op("multiply"):
                return Constant(np.array(1, "int32"))
            return None
        return map_functions(mod, lambda _, f: rewrite(f, rule))

    with pytest.raises(rr.RelayTypeError) as info:
        rr.optimize(MOD, [to_int])
    assert "the output of pass to_int does not type-check" in info.value.render()
    assert "dtypes differ" in info.value.render()


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"passes": None}, TypeError, "passes must be a list"),
    ({"passes": 3}, TypeError, "passes must be a list"),
    ({"passes": [FoldConstant]}, TypeError, "FoldConstant(), not the class"),
    ({"passes": [lambda m: None]}, TypeError, "returned NoneType"),
    ({"passes": ["FoldConstnt"]}, ValueError, "did you mean 'FoldConstant'"),
    ({"passes": ["FoldConstant"], "disabled": None}, TypeError, "disabled must be a list"),
    ({"passes": ["FoldConstant"], "required": ["Nope"]}, ValueError, "required names no pass"),
    ({"passes": ["FoldConstant"], "opt_level": "2"}, TypeError, "opt_level must be an int"),
    ({"passes": ["FoldConstant"], "opt_level": -1}, ValueError, "at least 0"),
])
def test_bad_arguments_are_clear_errors(kwargs, error, words):
    with pytest.raises(error) as info:
        rr.optimize(MOD, **kwargs)
    assert words in str(info.value)


def test_names_may_be_a_comma_separated_string():
    out = rr.optimize(MOD, "FoldConstant", required="FoldConstant", opt_level=0)
    assert rr.alpha_equal(out, rr.infer_types(rr.parse(
        "def @main(%x: Tensor[(2), float32]) { add(%x, 2f) }")))


CHAIN = rr.parse("def @main(%x: Tensor[(4), float32]) { exp(exp(exp(%x))) }")


def test_passes_take_options_as_specs_or_objects():
    from relay_ref.passes.fuse_ops import FuseOps, primitive_functions

    by_spec = rr.optimize(CHAIN, ["FuseOps(max_depth=1)"])
    assert len(primitive_functions(by_spec)) == 3
    assert rr.alpha_equal(by_spec, rr.optimize(CHAIN, [FuseOps(max_depth=1)]))
    assert rr.alpha_equal(by_spec, rr.optimize(CHAIN, "FuseOps(max_depth=1)"))
    with pytest.raises(ValueError, match=r"optimize: FuseOps has no option 'depth'.*max_depth"):
        rr.optimize(CHAIN, ["FuseOps(depth=1)"])
