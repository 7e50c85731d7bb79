"""Type relations on symbolic shapes (spec/typing.md 5.3, Shape-Rel).

Three layers:

* one program per operator family, checked with ``rr.infer_types``: the printed result type
  is the canonical symbolic one (``reshape(%x: Tensor[(n, 4)], (-1,))`` gives ``(n * 4)``);
  provably wrong shapes are located type errors;
* the substitution property, per family: for values of the shape variables, checking the
  static program (the values written into the parameter types) gives exactly the symbolic
  result with the same values substituted (catches wrong formulas);
* every registered relation on symbolized versions of its example types: never an
  exception other than ``RelationError``, never a refusal where the static types are
  accepted (unless ``?`` is refused too), and a result that the static one refines.
"""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_relations import ALL, example

import relay_ref as rr
from relay_ref.ir.shape import (
    ANY,
    AnyDim,
    dim_divisible,
    dim_eq,
    dim_known_or_sym,
    dim_le,
    dim_lt,
    substitute_dim,
    sym,
)
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import TensorType, TupleType
from relay_ref.ops.registry import NOT_YET, RelationError, get_op

X4 = "%x: Tensor[(n, c, h, w), float32]"
NX4 = "%x: Tensor[(n, 4), float32]"

# (parameters, body, the printed result type)
FAMILIES: list[tuple[str, str, str]] = [
    # broadcasting: equal expressions, 1, a number against a symbol
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(4), float32]", "add(%x, %y)",
     "Tensor[(n, 4), float32]"),
    ("%x: Tensor[(n * 2, 4), float32], %y: Tensor[(2 * n, 1), float32]", "multiply(%x, %y)",
     "Tensor[(n * 2, 4), float32]"),
    ("%x: Tensor[(n, 1), float32], %y: Tensor[(1, m), float32]", "subtract(%x, %y)",
     "Tensor[(n, m), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(5, 1), float32]", "add(%x, %y)",
     "Tensor[(5, 4), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(m, 4), float32]", "add(%x, %y)",
     "Tensor[(?, 4), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(n, 4), float32]", "less(%x, %y)",
     "Tensor[(n, 4), bool]"),
    ("%c: Tensor[(n, 1), bool], %x: Tensor[(n, 4), float32]", "where(%c, %x, %x)",
     "Tensor[(n, 4), float32]"),
    # dense / matmul / batch_matmul
    ("%x: Tensor[(n, 784), float32], %w: Tensor[(128, 784), float32]", "nn.dense(%x, %w)",
     "Tensor[(n, 128), float32]"),
    ("%x: Tensor[(b, n, k), float32], %w: Tensor[(m, k), float32]", "nn.dense(%x, %w)",
     "Tensor[(b, n, m), float32]"),
    ("%x: Tensor[(k, n), float32], %w: Tensor[(k, m), float32]",
     "nn.matmul(%x, %w, transpose_a=True)", "Tensor[(n, m), float32]"),
    ("%x: Tensor[(b, n, k), float32], %y: Tensor[(b, m, k), float32]",
     "nn.batch_matmul(%x, %y)", "Tensor[(b, n, m), float32]"),
    ("%x: Tensor[(1, n, k), float32], %y: Tensor[(b, k, m), float32]",
     "nn.batch_matmul(%x, %y, transpose_b=False)", "Tensor[(b, n, m), float32]"),
    # convolutions and pooling: floordiv(h + 2p - dilation * (k - 1) - 1, s) + 1
    ("%x: Tensor[(n, 3, h, w), float32], %w: Tensor[(8, 3, 3, 3), float32]",
     "nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1])",
     "Tensor[(n, 8, floordiv(h + 1, 2), floordiv(w + 1, 2)), float32]"),
    ("%x: Tensor[(n, 3, h, w), float32], %w: Tensor[(8, 3, 3, 3), float32]",
     "nn.conv2d(%x, %w, dilation=[2, 2])", "Tensor[(n, 8, h - 4, w - 4), float32]"),
    ("%x: Tensor[(n, h, w, 3), float32], %w: Tensor[(3, 3, 3, 8), float32]",
     "nn.conv2d(%x, %w, data_layout=\"NHWC\", kernel_layout=\"HWIO\")",
     "Tensor[(n, h - 2, w - 2, 8), float32]"),
    ("%x: Tensor[(n, c * 2, h, w), float32], %w: Tensor[(8, c, 3, 3), float32]",
     "nn.conv2d(%x, %w, groups=2, padding=[1, 1])", "Tensor[(n, 8, h, w), float32]"),
    ("%x: Tensor[(n, 3, l), float32], %w: Tensor[(8, 3, 5), float32]",
     "nn.conv1d(%x, %w, strides=[2])", "Tensor[(n, 8, floordiv(l + 1, 2) - 2), float32]"),
    ("%x: Tensor[(n, 3, d, h, w), float32], %w: Tensor[(8, 3, 3, 3, 3), float32]",
     "nn.conv3d(%x, %w, padding=[1, 1, 1])", "Tensor[(n, 8, d, h, w), float32]"),
    ("%x: Tensor[(n, 4, h, w), float32], %w: Tensor[(4, 3, 3, 3), float32]",
     "nn.conv2d_transpose(%x, %w, strides=[2, 2], padding=[1, 1], output_padding=[1, 1])",
     "Tensor[(n, 3, h * 2, w * 2), float32]"),
    (X4, "nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2])",
     "Tensor[(n, c, floordiv(h, 2), floordiv(w, 2)), float32]"),
    (X4, "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], ceil_mode=True)",
     "Tensor[(n, c, floordiv(h, 2) + 1, floordiv(w, 2) + 1), float32]"),
    ("%x: Tensor[(n, c, l), float32]", "nn.max_pool1d(%x, pool_size=[3], strides=[1])",
     "Tensor[(n, c, l - 2), float32]"),
    (X4, "nn.global_avg_pool2d(%x)", "Tensor[(n, c, 1, 1), float32]"),
    (X4, "nn.adaptive_max_pool2d(%x, output_size=[3, 3])", "Tensor[(n, c, 3, 3), float32]"),
    # reshape (-1, 0, -2, -3, -4), batch_flatten
    (NX4, "reshape(%x, newshape=[-1])", "Tensor[(n * 4), float32]"),
    (NX4, "reshape(%x, newshape=[-1, 2])", "Tensor[(n * 2, 2), float32]"),
    ("%x: Tensor[(n, 4, 3), float32]", "reshape(%x, newshape=[0, -1])",
     "Tensor[(n, 12), float32]"),
    (X4, "reshape(%x, newshape=[-3, -2])", "Tensor[(c * n, h, w), float32]"),
    ("%x: Tensor[(n * 2, 4), float32]", "reshape(%x, newshape=[-4, -1, 2, -2])",
     "Tensor[(n, 2, 4), float32]"),
    (X4, "nn.batch_flatten(%x)", "Tensor[(n, c * h * w), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(n * 2, 2), float32]", "reshape_like(%x, %y)",
     "Tensor[(n * 2, 2), float32]"),
    # transpose, expand_dims, squeeze, layout
    (X4, "transpose(%x, axes=[0, 2, 3, 1])", "Tensor[(n, h, w, c), float32]"),
    (NX4, "expand_dims(%x, axis=1, num_newaxis=2)", "Tensor[(n, 1, 1, 4), float32]"),
    ("%x: Tensor[(n + 2, 1, 4), float32]", "squeeze(%x)", "Tensor[(n + 2, 4), float32]"),
    ("%x: Tensor[(n, 1, 4), float32]", "squeeze(%x, axis=[0])", "Tensor[(1, 4), float32]"),
    (X4, "layout_transform(%x, src_layout=\"NCHW\", dst_layout=\"NCHW4c\")",
     "Tensor[(n, floordiv(c, 4), h, w, 4), float32]"),
    (X4, "nn.depth_to_space(%x, block_size=2)",
     "Tensor[(n, floordiv(c, 4), h * 2, w * 2), float32]"),
    # concatenate, stack, split
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(m, 4), float32]",
     "concatenate((%x, %y), axis=0)", "Tensor[(m + n, 4), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(n, 4), float32]",
     "concatenate((%x, %y, %x), axis=-1)", "Tensor[(n, 12), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(?, 4), float32]",
     "concatenate((%y, %x), axis=1)", "Tensor[(n, 8), float32]"),
    (NX4, "stack((%x, %x), axis=1)", "Tensor[(n, 2, 4), float32]"),
    (NX4, "split(%x, indices_or_sections=2)",
     "(Tensor[(floordiv(n, 2), 4), float32], Tensor[(floordiv(n, 2), 4), float32])"),
    ("%x: Tensor[(n * 3, 4), float32]", "split(%x, indices_or_sections=3)",
     "(Tensor[(n, 4), float32], Tensor[(n, 4), float32], Tensor[(n, 4), float32])"),
    (NX4, "split(%x, indices_or_sections=[2, 5])",
     "(Tensor[(2, 4), float32], Tensor[(3, 4), float32], Tensor[(n - 5, 4), float32])"),
    # strided_slice: clamps are min/max, decided where provable
    (NX4, "strided_slice(%x, begin=[1], end=[9223372036854775807])",
     "Tensor[(max(0, n - 1), 4), float32]"),
    (NX4, "strided_slice(%x, begin=[0], end=[3])", "Tensor[(min(3, n), 4), float32]"),
    (NX4, "strided_slice(%x, begin=[-3], end=[9223372036854775807])",
     "Tensor[(min(3, n), 4), float32]"),
    (NX4, "strided_slice(%x, begin=[0, 1], end=[-1, 4], strides=[2, 1])",
     "Tensor[(floordiv(n, 2), 3), float32]"),  # floordiv(max(0, n - 1) + 1, 2)
    (NX4, "strided_slice(%x, begin=[0], end=[2], axes=[1])", "Tensor[(n, 2), float32]"),
    # reductions
    (X4, "sum(%x, axis=[1])", "Tensor[(n, h, w), float32]"),
    (X4, "mean(%x, axis=[2, 3], keepdims=True)", "Tensor[(n, c, 1, 1), float32]"),
    (X4, "max(%x, axis=[1, 2], exclude=True)", "Tensor[(c, h), float32]"),
    (X4, "argmax(%x, axis=[1])", "Tensor[(n, h, w), int32]"),
    (X4, "variance(%x, mean(%x, axis=[1], keepdims=True), axis=[1])",
     "Tensor[(n, h, w), float32]"),
    # take, gather, one_hot
    ("%x: Tensor[(v, d), float32], %i: Tensor[(n, s), int32]", "take(%x, %i, axis=0)",
     "Tensor[(n, s, d), float32]"),
    ("%x: Tensor[(n, 4), float32], %i: Tensor[(m), int32]", "take(%x, %i)",
     "Tensor[(m), float32]"),
    ("%i: Tensor[(n), int32]", "one_hot(%i, 1f, 0f, depth=5, axis=-1)",
     "Tensor[(n, 5), float32]"),
    # padding
    (NX4, "nn.pad(%x, pad_width=[[1, 2], [0, 0]])", "Tensor[(n + 3, 4), float32]"),
    (X4, "nn.pad(%x, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [2, 2]], pad_mode=\"reflect\")",
     "Tensor[(n, c, h + 2, w + 4), float32]"),
    # shape-keeping nn ops, cast, init ops, shape_of
    (X4, "nn.softmax(%x, axis=1)", "Tensor[(n, c, h, w), float32]"),
    (X4, "nn.relu(%x)", "Tensor[(n, c, h, w), float32]"),
    ("%x: Tensor[(n, c), float32], %b: Tensor[(c), float32]", "nn.bias_add(%x, %b)",
     "Tensor[(n, c), float32]"),
    ("%x: Tensor[(n, c, h, w), float32], %g: Tensor[(c), float32]",
     "nn.batch_norm(%x, %g, %g, %g, %g)",
     "(Tensor[(n, c, h, w), float32], Tensor[(c), float32], Tensor[(c), float32])"),
    ("%x: Tensor[(n, d), float32], %g: Tensor[(d), float32]", "nn.layer_norm(%x, %g, %g)",
     "Tensor[(n, d), float32]"),
    (X4, "nn.dropout(%x)",
     "(Tensor[(n, c, h, w), float32], Tensor[(n, c, h, w), float32])"),
    (X4, "cast(%x, dtype=\"float16\")", "Tensor[(n, c, h, w), float16]"),
    (X4, "zeros_like(%x)", "Tensor[(n, c, h, w), float32]"),
    (X4, "shape_of(%x, dtype=\"int64\")", "Tensor[(4), int64]"),
    (NX4, "tile(%x, reps=[2, 3])", "Tensor[(n * 2, 12), float32]"),
    (NX4, "repeat(%x, repeats=3, axis=0)", "Tensor[(n * 3, 4), float32]"),
    (X4, "nn.upsampling(%x, scale_h=2f, scale_w=3f)", "Tensor[(n, c, h * 2, w * 3), float32]"),
    (X4, "nn.upsampling(%x, scale_h=1.5f, scale_w=1f)", "Tensor[(n, c, ?, w), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(4, m), float32]",
     "einsum((%x, %y), equation=\"ij,jk->ik\")", "Tensor[(n, m), float32]"),
]


_DIM_FUNCS = {"floordiv", "floormod", "min", "max"}


def _binders(text: str) -> str:
    """Parameters binding each shape variable ``text``'s tensor types mention, alone as a
    dimension (T-ShapeScope: a variable used only inside expressions such as ``n * 2``
    must be bound by some parameter)."""
    names: list[str] = []
    for dims in re.findall(r"Tensor\[\(([^\]]*)\)", text):
        for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", dims):
            if name not in _DIM_FUNCS and name not in names:
                names.append(name)
    return "".join(f"%_{n}: Tensor[({n}), float32], " for n in names)


def _infer(params: str, body: str) -> object:
    mod = rr.infer_types(rr.parse(f"def @main({_binders(params)}{params}) {{ {body} }}"))
    return mod.global_types["main"].ret_type


@pytest.mark.parametrize(("params", "body", "want"), FAMILIES,
                         ids=[f"{i}-{c[1].split('(')[0]}" for i, c in enumerate(FAMILIES)])
def test_family_result_type(params: str, body: str, want: str) -> None:
    got = _infer(params, body)
    assert type_to_text(got) == want
    # the printed type parses back to the same (canonical) type
    reparsed = rr.parse(f"def @f(%r: {want}) {{ %r }}").functions["f"].params[0].type_annotation
    assert reparsed == got


def test_equal_expressions_are_one_type() -> None:
    """``4 * n`` and ``n * 4`` (and ``2 * (n + 1)`` and ``2 * n + 2``) are one type: the
    broadcast keeps it, and the checker's equality of the two results holds."""
    a = _infer("%x: Tensor[(4 * n, 2 * (m + 1)), float32], "
               "%y: Tensor[(n * 4, 2 * m + 2), float32]", "add(%x, %y)")
    b = _infer("%x: Tensor[(n, m + 1), float32]", "reshape(%x, newshape=[-4, -1, 1, 0])")
    assert type_to_text(a) == "Tensor[(n * 4, m * 2 + 2), float32]"
    assert a.shape[0] == sym("n") * 4 and a.shape[1] == (sym("m") + 1) * 2
    assert type_to_text(b) == "Tensor[(n, 1, m + 1), float32]"


ERRORS: list[tuple[str, str, str]] = [
    ("%x: Tensor[(n + 2, 4), float32], %y: Tensor[(n + 3, 4), float32]", "add(%x, %y)",
     r"add: shapes \(n \+ 2, 4\) and \(n \+ 3, 4\) cannot be broadcast together"),
    ("%x: Tensor[(n, k + 1), float32], %w: Tensor[(8, k), float32]", "nn.dense(%x, %w)",
     "reduction dimensions differ: data has k \\+ 1, weight has k"),
    ("%x: Tensor[(n, c * 2 + 1, h, w), float32], %w: Tensor[(8, c, 3, 3), float32]",
     "nn.conv2d(%x, %w, groups=2)", r"input channels c \* 2 \+ 1 are not divisible"),
    ("%x: Tensor[(n * 3 + 1, 1), float32]", "reshape(%x, newshape=[-1, 3])",
     "cannot reshape"),
    ("%x: Tensor[(n * 2 + 1, 4), float32]", "split(%x, indices_or_sections=2)",
     "not divisible into 2 sections"),
    ("%x: Tensor[(n + 2, 4), float32]", "squeeze(%x, axis=[0])",
     r"cannot squeeze axis 0 of size n \+ 2"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(n, 5), float32]",
     "concatenate((%x, %y), axis=0)", "incompatible"),
    ("%x: Tensor[(n, c, h, w), float32], %w: Tensor[(8, c + 1, 3, 3), float32]",
     "nn.conv2d(%x, %w)", "input has c channels but weight expects c \\+ 1"),
    ("%x: Tensor[(n, 1, 4), float32]", "squeeze(%x)",
     r"squeeze: axis must be given: dimension 0 \(n\) may be 1"),
]


@pytest.mark.parametrize(("params", "body", "message"), ERRORS,
                         ids=[c[1].split("(")[0] for c in ERRORS])
def test_provably_wrong_shapes_are_located_errors(params: str, body: str,
                                                   message: str) -> None:
    with pytest.raises(rr.RelayTypeError, match=r"<string>:1:\d+: error: .*" + message):
        _infer(params, body)


UNDECIDED = [
    # accepted statically (checked at run time), the result as exact as it can be
    ("%x: Tensor[(n, 4), float32]", "reshape(%x, newshape=[-1, 3])",
     "Tensor[(n + floordiv(n, 3), 3), float32]"),
    ("%x: Tensor[(n, c, h, w), float32], %w: Tensor[(8, k, 3, 3), float32]",
     "nn.conv2d(%x, %w)", "Tensor[(n, 8, h - 2, w - 2), float32]"),
    ("%x: Tensor[(n, 4), float32]", "squeeze(%x, axis=[0])", "Tensor[(4), float32]"),
    ("%x: Tensor[(n, 4), float32], %y: Tensor[(m, 4), float32]",
     "concatenate((%x, %y), axis=1)", "Tensor[(n, 8), float32]"),
]


@pytest.mark.parametrize(("params", "body", "want"), UNDECIDED,
                         ids=[c[1].split("(")[0] for c in UNDECIDED])
def test_undecidable_facts_are_left_to_run_time(params: str, body: str, want: str) -> None:
    assert type_to_text(_infer(params, body)) == want


# -- the substitution property ---------------------------------------------------------

_VAR = re.compile(r"\b([a-z])\b")


def _vars(params: str) -> list[str]:
    shapes = " ".join(re.findall(r"Tensor\[\(([^)]*(?:\([^)]*\)[^)]*)*)\)", params))
    return sorted(set(_VAR.findall(shapes)))


def _substitute_text(params: str, env: dict[str, int]) -> str:
    def dims(m: re.Match) -> str:
        return _VAR.sub(lambda v: str(env.get(v.group(1), v.group(1))), m.group(0))
    return re.sub(r"Tensor\[\(.*?\), ", dims, params)


def _subst_type(ty: object, env: dict[str, int]) -> object:
    if isinstance(ty, TupleType):
        return TupleType(tuple(_subst_type(f, env) for f in ty.fields))
    assert isinstance(ty, TensorType)
    return TensorType(tuple(substitute_dim(d, env) for d in ty.shape), ty.dtype)


def _refines(static: object, general: object) -> bool:
    """``static`` is ``general`` with every ``?`` of ``general`` filled in."""
    if isinstance(general, TupleType):
        return (isinstance(static, TupleType) and len(static.fields) == len(general.fields)
                and all(_refines(s, g) for s, g in zip(static.fields, general.fields,
                                                         strict=True)))
    return (isinstance(static, TensorType) and isinstance(general, TensorType)
            and static.dtype == general.dtype and len(static.shape) == len(general.shape)
            and all(isinstance(g, AnyDim) or g == s
                    for s, g in zip(static.shape, general.shape, strict=True)))


@pytest.mark.parametrize(("params", "body", "want"), FAMILIES + UNDECIDED,
                         ids=[f"{i}-{c[1].split('(')[0]}"
                              for i, c in enumerate(FAMILIES + UNDECIDED)])
def test_substituting_values_commutes_with_inference(params: str, body: str,
                                                     want: str) -> None:
    """For values of the variables, the static program's type is the symbolic result with
    the values substituted (``?`` there matches anything). A fixed sample of assignments per
    case: every variable equal (0, 1, 2, 3, 5, 8: the edges, and the equalities some
    programs need), then seeded random values."""
    general = _infer(params, body)
    names = _vars(params)
    assert names, params
    rng = random.Random(len(body) * 1000 + len(params))
    checked = 0
    for trial in range(16):
        same = (0, 1, 2, 3, 5, 8)
        env = {v: same[trial] if trial < len(same) else rng.randint(0, 17) for v in names}
        try:
            static = _infer(_substitute_text(params, env), body)
        except rr.RelayTypeError:
            continue  # these values make the program ill-typed (e.g. a window too large)
        checked += 1
        assert _refines(static, _subst_type(general, env)), (env, static, general)
    assert checked >= 1, "no assignment type-checked"


# -- every relation, on symbolized example types ---------------------------------------

_SKIP = {"match_cast", "call_dps_packed", "call_tir", "dataflow"}  # their own tests
# stricter with an expression than with ``?`` on purpose: squeeze without axes refuses a
# dimension that may be 1 (TVM's SqueezeRel refuses every non-constant one)
_STRICTER = {"squeeze"}


def _symbolize(ty: object, mode: str, env: dict[str, int], counter: list[int]) -> object:
    """``ty`` with dimensions made symbolic: ``all`` a fresh variable each, ``plus`` a fresh
    ``v + 1``, ``odd`` every other one, ``value`` one variable per distinct size (equal
    sizes are the same variable, as in real programs); ``env`` records the values."""
    if isinstance(ty, TupleType):
        return TupleType(tuple(_symbolize(f, mode, env, counter) for f in ty.fields))
    assert isinstance(ty, TensorType)
    shape = []
    for d in ty.shape:
        k = counter[0]
        counter[0] += 1
        name = f"v{k}"
        if mode == "value":
            shape.append(sym(f"d{d}"))
            env[f"d{d}"] = d
        elif mode == "all" or (mode == "odd" and k % 2 == 0):
            shape.append(sym(name))
            env[name] = d
        elif mode == "plus" and d >= 1:
            shape.append(sym(name) + 1)
            env[name] = d - 1
        else:
            shape.append(d)
    return TensorType(tuple(shape), ty.dtype)


def _anyfy(ty: object) -> object:
    if isinstance(ty, TupleType):
        return TupleType(tuple(_anyfy(f) for f in ty.fields))
    return TensorType(tuple(ANY for _ in ty.shape), ty.dtype)


@pytest.mark.parametrize("name", [n for n in ALL if n not in _SKIP])
def test_every_relation_on_symbolic_shapes(name: str) -> None:
    op = get_op(name)
    args, attrs = example(name)
    static = op.relation(args, attrs)
    trials = []
    for mode in ("all", "plus", "odd"):
        for i in range(len(args)):
            env: dict[str, int] = {}
            trial = list(args)
            trial[i] = _symbolize(args[i], mode, env, [0])
            anyfied = list(args)
            anyfied[i] = _anyfy(args[i])
            trials.append((trial, env, anyfied))
    env = {}
    counter = [0]
    trials.append(([_symbolize(a, "value", env, counter) for a in args], env,
                   [_anyfy(a) for a in args]))
    for trial, env, anyfied in trials:
        try:
            out = op.relation(trial, attrs)
        except RelationError:
            # refusing is right only where the values are not determined by the types
            # (a rank from a dimension): the same relation refuses ``?`` there too
            if name not in _STRICTER:
                with pytest.raises(RelationError):
                    op.relation(anyfied, attrs)
            continue
        assert out is not NOT_YET, (name, trial)
        assert _refines(static, _subst_type(out, env)), (name, trial, out, static)


# -- the three-valued helpers ----------------------------------------------------------

def test_three_valued_dimension_helpers() -> None:
    n, m = sym("n"), sym("m")
    assert dim_eq(n * 4, 4 * n) is True and dim_eq(n + 2, n + 3) is False
    assert dim_eq(n, m) is None and dim_eq(n, ANY) is None and dim_eq(3, 3) is True
    assert dim_le(n, n + 1) is True and dim_le(n + 1, n) is False and dim_le(n, 3) is None
    assert dim_lt(n, n) is False and dim_lt(2, 3) is True and dim_lt(ANY, 1) is None
    assert dim_divisible(n * 4, 2) is True and dim_divisible(n * 2 + 1, 2) is False
    assert dim_divisible(n, 2) is None and dim_divisible(6, 4) is False
    assert dim_divisible(ANY, 2) is None
    assert dim_known_or_sym(ANY, n) == n and dim_known_or_sym(n, 4) == 4
    assert dim_known_or_sym(n, ANY) == n and dim_known_or_sym(m, n) == m


# -- relation-level grids: attributes x values of one variable -------------------------

def _grid_cases() -> list[tuple[str, list, dict]]:
    n = sym("n")
    cases: list[tuple[str, list, dict]] = []
    for b, e in itertools.product((-7, -3, -1, 0, 1, 2, 5), (-7, -3, -1, 0, 1, 5, 2**63 - 1)):
        for s in (1, 2, -1, -3):
            cases.append(("strided_slice", [T(n + 2, 3)], {"begin": (b,), "end": (e,),
                                                           "strides": (s,)}))
        cases.append(("strided_slice", [T(n, 3)], {"begin": (b,), "end": (e,),
                                                   "slice_mode": "size"}))
    for k, s, p, d, ceil in itertools.product((1, 2, 3), (1, 2, 3), (0, 1, 2), (1, 2),
                                              (False, True)):
        cases.append(("nn.max_pool2d", [T(1, 2, n, n + 5)],
                      {"pool_size": (k, k), "strides": (s, s), "padding": (p, p),
                       "dilation": (d, d), "ceil_mode": ceil}))
        if not ceil:
            cases.append(("nn.conv2d", [T(1, 2, n, n * 2 + 1), T(4, 2, k, k)],
                          {"strides": (s, s), "padding": (p, p), "dilation": (d, d)}))
            cases.append(("nn.conv2d_transpose", [T(1, 2, n, n + 1), T(2, 3, k, k)],
                          {"strides": (s, s), "padding": (p, p), "dilation": (d, d)}))
    for code in ((-1,), (-1, 2), (0, -1), (2, -1), (-3,), (-4, 2, -1, -2), (-4, -1, 2, 0),
                 (-2,), (0, 0, -1)):
        cases.append(("reshape", [T(n * 2, 6, 1)], {"newshape": code}))
        cases.append(("reshape", [T(n, 6, 1)], {"newshape": code}))
    for ios in (1, 2, 3, (1,), (2, 4)):
        cases.append(("split", [T(n * 6, 2)], {"indices_or_sections": ios}))
    return cases


def T(*shape: object, dtype: str = "float32") -> TensorType:  # noqa: N802 - reads like the type
    return TensorType(tuple(shape), dtype)


def test_relation_grids_commute_with_substitution() -> None:
    """For each op and attributes of a grid, and each value of ``n`` in 0..10 for which the
    static relation succeeds, the symbolic result with ``n`` substituted is the static one
    (``?`` matching anything). The symbolic relation never raises anything else than
    ``RelationError``, and refuses only what no value of ``n`` makes valid."""
    from relay_ref.ops.registry import make_attrs
    checked = 0
    for name, args, items in _grid_cases():
        op = get_op(name)
        attrs = make_attrs(name, items)
        try:
            general = op.relation(args, attrs)
        except RelationError:
            general = None
        for value in range(11):
            env = {"n": value}
            try:
                static = op.relation([_subst_type(a, env) for a in args], attrs)
            except RelationError:
                continue
            assert general is not None, (name, items, value)
            assert _refines(static, _subst_type(general, env)), (name, items, value, general)
            checked += 1
    assert checked > 2000


_DIMS = [1, 2, 3, sym("n"), sym("n") + 1, sym("n") * 2, sym("m"), sym("n") + 2]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(range(len(_DIMS))), max_size=3),
       st.lists(st.sampled_from(range(len(_DIMS))), max_size=3))
def test_symbolic_broadcast_is_sound(a: list[int], b: list[int]) -> None:
    """Shape-Broadcast against NumPy at values of ``n`` and ``m``: a refusal means no values
    broadcast; an answer, substituted, is NumPy's shape wherever NumPy broadcasts."""
    sa, sb = tuple(_DIMS[i] for i in a), tuple(_DIMS[i] for i in b)
    try:
        general = get_op("add").relation([T(*sa), T(*sb)], None)
    except RelationError:
        general = None
    for n, m in itertools.product(range(5), range(4)):
        env = {"n": n, "m": m}
        ca = tuple(substitute_dim(d, env) for d in sa)
        cb = tuple(substitute_dim(d, env) for d in sb)
        try:
            want = np.broadcast_shapes(ca, cb)
        except ValueError:
            continue
        assert general is not None, (sa, sb, env)
        assert _refines(T(*want), _subst_type(general, env)), (sa, sb, env, general)
