"""einsum vs onnxruntime (Einsum-12) and NumPy over explicit, implicit, ellipsis,
diagonal and reduction equations; the relation's shapes and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from opcheck import close, onnx_run, rand, run_op

from relay_ref.ir.types import TensorType, TupleType
from relay_ref.ops.registry import AttrError, RelationError, get_op, make_attrs

DIFF_TESTED = {"einsum"}

CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ij->ji", [(3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("i,i", [(4,), (4,)]),
    ("ij", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...j,...j->...", [(2, 1, 3), (2, 4, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 2), (2, 2)]),
]


@pytest.mark.parametrize("equation,shapes", CASES)
def test_einsum_vs_onnxruntime_and_numpy(equation: str, shapes: list) -> None:
    xs = [rand(s) for s in shapes]
    ours = run_op("einsum", [tuple(xs)], equation=equation)
    close(ours, np.einsum(equation, *xs), rtol=1e-5, atol=1e-5)
    (want,) = onnx_run("Einsum", xs, opset=12, equation=equation)
    close(ours, want, rtol=1e-5, atol=1e-5)


def test_einsum_relation() -> None:
    rel = get_op("einsum").relation

    def out(eq: str, *shapes: tuple) -> object:
        return rel([TupleType(tuple(TensorType(s, "int32") for s in shapes))],
                   make_attrs("einsum", {"equation": eq}))
    assert out("ij,jk", (2, 3), (3, 5)) == TensorType((2, 5), "int32")
    assert out("...ij->j...", (4, 1, 2, 3)) == TensorType((3, 4, 1), "int32")
    assert out("...j,...j", (2, 1, 3), (4, 3)) == TensorType((2, 4), "int32")  # broadcast
    assert out("ba", (2, 3)) == TensorType((3, 2), "int32")
    with pytest.raises(RelationError, match="label 'j' has extents"):
        out("ij,jk", (2, 3), (4, 5))
    with pytest.raises(RelationError, match="operand"):
        out("ij,jk", (2, 3))
    with pytest.raises(AttrError):
        make_attrs("einsum", {"equation": "ij->k"})
    with pytest.raises(AttrError):
        make_attrs("einsum", {"equation": "i.j"})
