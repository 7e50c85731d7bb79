"""``einsum`` (TVM ``src/relay/op/tensor/math.cc``): Einstein summation over a tuple of
tensors, ``equation`` in NumPy's notation.

``equation`` is ``"in_0,in_1,...->out"`` or, without ``->``, implicit: the output then
lists the labels that appear once, in alphabetical order, after the ellipsis axes. Each
input term names its axes with letters; ``...`` stands for the remaining axes, which
broadcast across the operands (NumPy's rule) and lead the output in implicit mode. A
label's extents must agree wherever it appears; labels repeated in one term take the
diagonal; labels absent from the output are summed. Invariant: the relation's output shape
is the shape ``numpy.einsum`` computes for the same equation and operand shapes. Injective
to fusion, as TVM registers it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from relay_ref.ir.shape import dims_compatible, is_any, shape_text
from relay_ref.ir.types import Dim, TensorType, Type
from relay_ref.ops.registry import NOT_YET, AttrError, RelationError, register_op
from relay_ref.ops.relations import broadcast_shapes, same_dtype, tuple_of_tensors

Array = np.ndarray

_TERM = re.compile(r"^([A-Za-z]*)(\.\.\.)?([A-Za-z]*)$")


@dataclass(frozen=True, slots=True)
class EinsumAttrs:
    equation: str

    def __post_init__(self) -> None:
        parse(self.equation)  # raises AttrError when malformed


def parse(equation: str) -> tuple[list[tuple[str, str, bool]], tuple[str, str, bool] | None]:
    """The input terms and the output term (None when implicit), each as (labels before
    the ellipsis, labels after it, whether it has one); raises ``AttrError``."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if not lhs and not arrow:
        raise AttrError("equation must not be empty", "equation")

    def term(text: str) -> tuple[str, str, bool]:
        m = _TERM.match(text)
        if m is None:
            raise AttrError(f"equation term {text!r} is not letters with at most one "
                            "'...'", "equation")
        return m.group(1), m.group(3), m.group(2) is not None

    ins = [term(t) for t in lhs.split(",")]
    out = term(rhs) if arrow else None
    if out is not None:
        labels = out[0] + out[1]
        if len(set(labels)) != len(labels):
            raise AttrError(f"output term {rhs!r} repeats a label", "equation")
        known = set("".join(a + b for a, b, _ in ins))
        if set(labels) - known:
            raise AttrError(f"output labels {sorted(set(labels) - known)} appear in no "
                            "input", "equation")
        if out[2] and not any(e for _, _, e in ins):
            raise AttrError("the output has '...' but no input does", "equation")
    return ins, out


def _einsum_rel(arg_types: list[Type], attrs: EinsumAttrs) -> object:
    op = "einsum"
    if len(arg_types) != 1:
        raise RelationError(f"{op}: expected 1 argument (a tuple of tensors), found "
                            f"{len(arg_types)}")
    tensors = tuple_of_tensors(op, arg_types[0], "data")
    if tensors is NOT_YET:
        return NOT_YET
    ins, out = parse(attrs.equation)
    if len(ins) != len(tensors):
        raise RelationError(f"{op}: equation {attrs.equation!r} has {len(ins)} operand(s), "
                            f"found {len(tensors)} tensor(s)")
    if not tensors:
        raise RelationError(f"{op}: needs at least one tensor")
    dtype = same_dtype(op, tensors, [f"operand {i}" for i in range(len(tensors))])
    extent: dict[str, Dim] = {}
    ellipsis: tuple[Dim, ...] = ()
    counts: dict[str, int] = {}
    for k, ((pre, post, has), t) in enumerate(zip(ins, tensors, strict=True)):
        named = len(pre) + len(post)
        if (t.ndim < named) if has else (t.ndim != named):
            raise RelationError(f"{op}: operand {k} {shape_text(t.shape)} does not fit term "
                                f"{pre + ('...' if has else '') + post!r}")
        dims = list(t.shape)
        middle = dims[len(pre):len(dims) - len(post)]
        for label, d in zip(pre + post, dims[:len(pre)] + dims[len(dims) - len(post):],
                            strict=True):
            counts[label] = counts.get(label, 0) + 1
            seen = extent.get(label)
            if seen is not None and not dims_compatible(seen, d):
                raise RelationError(f"{op}: label {label!r} has extents {seen} and {d}")
            if seen is None or is_any(seen):
                extent[label] = d
        if has:
            ellipsis = broadcast_shapes(op, ellipsis, tuple(middle))
    if out is None:
        labels = "".join(sorted(a for a, c in counts.items() if c == 1))
        shape = tuple(ellipsis) + tuple(extent[a] for a in labels)
    else:
        pre, post, has = out
        shape = (tuple(extent[a] for a in pre) + (tuple(ellipsis) if has else ())
                 + tuple(extent[a] for a in post))
    return TensorType(shape, dtype)


def _einsum_ref(args: list, attrs: EinsumAttrs) -> Array:
    operands = [np.asarray(a) for a in args[0]]
    out = np.einsum(attrs.equation.replace(" ", ""), *operands)
    return np.array(out, dtype=operands[0].dtype)


register_op("einsum", attrs=EinsumAttrs, num_inputs=1, arg_names=("data",),
            support_level=10, relation=_einsum_rel, reference=_einsum_ref,
            doc="Einstein summation of the tuple ``data`` by ``equation`` (NumPy's "
                "notation, ``...`` and implicit output included).")


# -- test-generation hints (relay_ref.testing.programs; the op's relation decides) ----------
from relay_ref.ops.registry import Examples  # noqa: E402

#: this family's ``examples`` aspect (attached by ``relay_ref.ops``)
EXAMPLES: dict[str, Examples] = {}

EXAMPLES["einsum"] = Examples(attrs=({"equation": "ij,jk->ik"}, {"equation": "ij->ji"},
                                     {"equation": "ii"}, {"equation": "...j,...j->..."},
                                     {"equation": "bij,bjk"}),
                              args=(([(2, 3), (3, 2)],), ([(3, 3)],), ([(2, 2, 3), (2, 3, 2)],)))
