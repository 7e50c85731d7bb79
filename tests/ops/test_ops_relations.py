"""Type relations: output types on examples, ``?`` dimensions, NOT_YET on holes, and
RelationError (never another exception) on anything ill-typed, for every registered op."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opcheck import assert_matches_type, run_op
from relation_examples import EXTRA_EXAMPLES

from relay_ref.ir.types import (
    ANY,
    AnyDim,
    FuncType,
    IncompleteType,
    TensorType,
    TupleType,
    TypeVar,
)
from relay_ref.ops.gradient_op import FUNCTION_OPS
from relay_ref.ops.registry import (
    NOT_YET,
    OpRuntimeError,
    RelationError,
    all_ops,
    get_op,
    make_attrs,
)

F = "float32"


def T(*shape: object, dtype: str = F) -> TensorType:  # noqa: N802 - reads like the type
    return TensorType(tuple(shape), dtype)


DATA = T(2, 4, 6, 6)

# op -> (argument types, attrs); every other op: num_inputs copies of DATA, no attrs
EXAMPLES: dict[str, tuple[list, dict]] = {
    "clip": ([DATA], {"a_min": 0.0, "a_max": 1.0}),
    "nn.conv2d": ([DATA, T(8, 4, 3, 3)], {}),
    "nn.conv2d_transpose": ([DATA, T(4, 2, 3, 3)], {}),
    "nn.dense": ([T(2, 6), T(3, 6)], {}),
    "nn.matmul": ([T(2, 6), T(6, 3)], {}),
    "nn.batch_matmul": ([T(2, 3, 6), T(2, 4, 6)], {}),
    "nn.bias_add": ([DATA, T(4)], {}),
    "nn.prelu": ([DATA, T(4)], {}),
    "nn.max_pool2d": ([DATA], {"pool_size": (2, 2)}),
    "nn.avg_pool2d": ([DATA], {"pool_size": (2, 2)}),
    "nn.batch_norm": ([DATA, T(4), T(4), T(4), T(4)], {}),
    "nn.layer_norm": ([DATA, T(6), T(6)], {}),
    "nn.pad": ([DATA, T()], {"pad_width": ((0, 0), (0, 0), (1, 1), (1, 1))}),
    "reshape": ([DATA], {"newshape": (-1,)}),
    "expand_dims": ([DATA], {"axis": 0}),
    "concatenate": ([TupleType((DATA, DATA))], {}),
    "stack": ([TupleType((DATA, DATA))], {}),
    "split": ([DATA], {"indices_or_sections": 2}),
    "take": ([DATA, T(3, dtype="int32")], {}),
    "gather": ([DATA, T(2, 4, 6, 6, dtype="int32")], {"axis": 1}),
    "strided_slice": ([DATA], {"begin": (0,), "end": (1,)}),
    "broadcast_to": ([T(1, 6)], {"shape": (2, 6)}),
    "tile": ([DATA], {"reps": (2,)}),
    "repeat": ([DATA], {"repeats": 2, "axis": 0}),
    "reverse": ([DATA], {"axis": 0}),
    "cast": ([DATA], {"dtype": "int32"}),
    "reinterpret": ([DATA], {"dtype": "int32"}),
    "zeros": ([], {"shape": (2,)}),
    "ones": ([], {"shape": (2,)}),
    "full": ([T()], {"shape": (2,)}),
    "full_like": ([DATA, T()], {}),
    "arange": ([T(), T(), T()], {}),
    "one_hot": ([T(3, dtype="int32"), T(), T()], {"depth": 3}),
}
for _op in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"):
    EXAMPLES[_op] = ([T(2, 3, dtype="int32")] * 2, {})
EXAMPLES["bitwise_not"] = ([T(2, 3, dtype="int32")], {})
EXAMPLES.update(EXTRA_EXAMPLES)


def example(name: str) -> tuple[list, object]:
    op = get_op(name)
    args, attrs = EXAMPLES.get(name, ([DATA] * op.num_inputs, {}))
    return list(args), make_attrs(name, attrs)


ALL = sorted(set(all_ops()) - FUNCTION_OPS)  # gradient's relation is over functions


@pytest.mark.parametrize("name", ALL)
def test_example_types_and_holes(name: str) -> None:
    op = get_op(name)
    args, attrs = example(name)
    out = op.relation(args, attrs)
    assert isinstance(out, TensorType | TupleType), f"{name}: {out!r}"
    for i in range(len(args)):
        holed = list(args)
        holed[i] = IncompleteType()
        assert op.relation(holed, attrs) is NOT_YET, f"{name}: hole in argument {i}"
        if isinstance(args[i], TupleType):
            inner = TupleType((args[i].fields[0], IncompleteType()))
            holed[i] = inner
            assert op.relation(holed, attrs) is NOT_YET, f"{name}: hole inside a tuple"


NONSENSE = [
    FuncType((DATA,), DATA), TypeVar("A"), TupleType(()), T(), T(7), T(ANY, 3),
    T(1, 2, 3, 4, 5, 6), T(2, 4, 6, 6, dtype="bool"), T(0, 3), TupleType((T(1), FuncType((),
                                                                                         T()))),
]


@pytest.mark.parametrize("name", ALL)
def test_only_relation_errors_on_nonsense(name: str) -> None:
    op = get_op(name)
    args, attrs = example(name)
    trials = [args + [DATA], args[:-1]] if args else [[DATA]]
    for i in range(len(args)):
        for bad in NONSENSE:
            trials.append(args[:i] + [bad] + args[i + 1:])
    for trial in trials:
        try:
            out = op.relation(trial, attrs)
        except RelationError as err:
            assert str(err).startswith(name.split(".")[-1]) or name in str(err), str(err)
            continue
        assert out is NOT_YET or isinstance(out, TensorType | TupleType), (name, trial)


# -- specific relations ------------------------------------------------------------------

def rel(name: str, args: list, **attrs: object) -> object:
    return get_op(name).relation(args, make_attrs(name, attrs))


def test_broadcast_relation() -> None:
    assert rel("add", [T(2, 1, 4), T(3, 1)]) == T(2, 3, 4)
    assert rel("add", [T(ANY, 1), T(1, 5)]) == T(ANY, 5)
    assert rel("add", [T(ANY), T(1)]) == T(ANY)
    assert rel("add", [T(ANY), T(4)]) == T(4)
    assert rel("add", [T(ANY), T(ANY)]) == T(ANY)
    assert rel("less", [T(2), T(2)]) == T(2, dtype="bool")
    with pytest.raises(RelationError, match="add: dtypes differ: int32 vs float32"):
        rel("add", [T(2, dtype="int32"), T(2)])
    with pytest.raises(RelationError, match="cannot be broadcast"):
        rel("multiply", [T(2, 3), T(4)])
    with pytest.raises(RelationError, match="integer"):
        rel("left_shift", [T(2), T(2)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), max_size=4), st.lists(st.integers(1, 4), max_size=4))
def test_broadcast_matches_numpy(sa: list[int], sb: list[int]) -> None:
    sa2 = [d if d % 2 else 1 for d in sa]  # plenty of ones, so that many pairs broadcast
    try:
        want = np.broadcast_shapes(tuple(sa2), tuple(sb))
    except ValueError:
        with pytest.raises(RelationError):
            rel("add", [T(*sa2), T(*sb)])
        return
    assert rel("add", [T(*sa2), T(*sb)]) == T(*want)


def test_reduce_relation() -> None:
    assert rel("sum", [DATA]) == T()
    assert rel("sum", [DATA], axis=(1, -1), keepdims=True) == T(2, 1, 6, 1)
    assert rel("mean", [DATA], axis=(1,), exclude=True) == T(4)
    assert rel("argmax", [DATA], axis=(1,)) == T(2, 6, 6, dtype="int32")
    with pytest.raises(RelationError, match="out of range"):
        rel("max", [DATA], axis=(4,))
    with pytest.raises(RelationError, match="repeated"):
        rel("max", [DATA], axis=(1, -3))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data())
def test_reduce_relation_matches_reference(shape: list[int], data: st.DataObject) -> None:
    nd = len(shape)
    axes = data.draw(st.none() | st.lists(st.integers(-nd, nd - 1), unique_by=lambda a: a % nd,
                                          max_size=nd).map(tuple))
    keep, excl = data.draw(st.booleans()), data.draw(st.booleans())
    x = np.arange(int(np.prod(shape)), dtype="float32").reshape(shape)
    for name in ("sum", "max", "argmin"):
        run_op(name, [x], axis=axes, keepdims=keep, exclude=excl)  # asserts the type


def test_reshape_relation() -> None:
    assert rel("reshape", [DATA], newshape=(0, -1)) == T(2, 144)
    assert rel("reshape", [T(ANY, 3, 4)], newshape=(0, -1)) == T(ANY, 12)
    assert rel("reshape", [T(ANY, 3, 4)], newshape=(-1, 4)) == T(ANY, 4)
    assert rel("reshape", [T(2, 3, 4)], newshape=(-4, -1, 2, -2)) == T(1, 2, 3, 4)
    with pytest.raises(RelationError, match="cannot reshape"):
        rel("reshape", [T(2, 3)], newshape=(4, 2))
    with pytest.raises(RelationError, match="more than one -1"):
        rel("reshape", [T(2, 3)], newshape=(-1, -1))
    with pytest.raises(RelationError, match="cannot reshape"):
        rel("reshape", [T(2, 3)], newshape=(-1, 4))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_reshape_relation_matches_numpy(shape: list[int], data: st.DataObject) -> None:
    total = int(np.prod(shape))
    perm = data.draw(st.permutations([d for d in shape]))
    new = list(perm)
    k = data.draw(st.integers(0, len(new) - 1))
    new[k] = -1
    x = np.zeros(shape, "float32")
    out = run_op("reshape", [x], newshape=tuple(new))
    assert out.size == total and out.shape == np.reshape(x, new).shape


def test_conv2d_relation() -> None:
    w = T(8, 2, 3, 3)
    assert rel("nn.conv2d", [DATA, w], groups=2, padding=(1, 1)) == T(2, 8, 6, 6)
    assert rel("nn.conv2d", [DATA, T(8, 4, 3, 3)], strides=(2, 2)) == T(2, 8, 2, 2)
    assert rel("nn.conv2d", [T(ANY, 4, ANY, 6), T(8, 4, 3, 3)]) == T(ANY, 8, ANY, 4)
    with pytest.raises(RelationError,
                       match=r"nn.conv2d: input has 3 channels but weight expects 4 \(groups=1\)"):
        rel("nn.conv2d", [T(1, 3, 5, 5), T(2, 4, 3, 3)])
    with pytest.raises(RelationError, match="channels=5"):
        rel("nn.conv2d", [DATA, T(8, 4, 3, 3)], channels=5)
    with pytest.raises(RelationError, match="larger than the padded input"):
        rel("nn.conv2d", [T(1, 4, 2, 2), T(8, 4, 3, 3)])
    assert rel("nn.conv2d", [T(1, 5, 5, 3), T(3, 3, 3, 8)], data_layout="NHWC",
               kernel_layout="HWIO") == T(1, 3, 3, 8)


def test_nn_relations() -> None:
    assert rel("nn.dense", [T(5, 2, 6), T(3, 6)]) == T(5, 2, 3)
    with pytest.raises(RelationError, match="reduction"):
        rel("nn.dense", [T(2, 5), T(3, 6)])
    assert rel("nn.batch_matmul", [T(1, 3, 6), T(4, 5, 6)]) == T(4, 3, 5)
    assert rel("nn.batch_matmul", [T(2, 3, 6), T(2, 6, 5)], transpose_b=False) == T(2, 3, 5)
    bn = rel("nn.batch_norm", [DATA, T(4), T(4), T(4), T(4)])
    assert bn == TupleType((DATA, T(4), T(4)))
    with pytest.raises(RelationError, match="gamma"):
        rel("nn.batch_norm", [DATA, T(3), T(4), T(4), T(4)])
    assert rel("nn.dropout", [DATA]) == TupleType((DATA, DATA))
    assert rel("nn.max_pool2d", [T(1, 1, 9, 9)], pool_size=(3, 3), strides=(2, 2),
               ceil_mode=True) == T(1, 1, 4, 4)
    assert rel("nn.max_pool2d", [T(1, 1, 8, 8)], pool_size=(3, 3), strides=(2, 2),
               ceil_mode=True) == T(1, 1, 4, 4)
    assert rel("nn.max_pool2d", [T(1, 1, 8, 8)], pool_size=(3, 3), strides=(2, 2)) == \
        T(1, 1, 3, 3)
    assert rel("nn.global_avg_pool2d", [DATA]) == T(2, 4, 1, 1)
    assert rel("nn.adaptive_avg_pool2d", [DATA], output_size=(3,)) == T(2, 4, 3, 3)
    assert rel("nn.batch_flatten", [T(ANY, 2, 3)]) == T(ANY, 6)
    assert rel("nn.pad", [T(2, ANY), T()], pad_width=((1, 0), (2, 2))) == T(3, ANY)
    with pytest.raises(RelationError, match="reflect"):
        rel("nn.pad", [T(2, 3), T()], pad_width=((2, 0), (0, 0)), pad_mode="reflect")
    assert rel("nn.conv2d_transpose", [T(1, 4, 5, 5), T(4, 3, 3, 3)], strides=(2, 2),
               padding=(1, 1), output_padding=(1, 1)) == T(1, 3, 10, 10)


def test_transform_relations() -> None:
    assert rel("transpose", [T(2, 3, 4)]) == T(4, 3, 2)
    with pytest.raises(RelationError, match="permutation"):
        rel("transpose", [T(2, 3, 4)], axes=(0, 0, 1))
    assert rel("squeeze", [T(1, ANY, 1)]) == T(ANY)
    with pytest.raises(RelationError, match="squeeze"):
        rel("squeeze", [T(1, 2)], axis=(1,))
    assert rel("expand_dims", [T(2, 3)], axis=-1, num_newaxis=2) == T(2, 3, 1, 1)
    cat = rel("concatenate", [TupleType((T(2, ANY), T(3, 4)))])
    assert cat == T(5, 4)
    with pytest.raises(RelationError, match="dtypes differ"):
        rel("concatenate", [TupleType((T(2), T(2, dtype="int32")))])
    with pytest.raises(RelationError, match="tuple"):
        rel("concatenate", [T(2, 3)])
    assert rel("split", [T(6, 4)], indices_or_sections=(1, 4)) == \
        TupleType((T(1, 4), T(3, 4), T(2, 4)))
    with pytest.raises(RelationError, match="divisible"):
        rel("split", [T(5, 4)], indices_or_sections=2)
    assert rel("take", [T(3, 4, 5), T(2, 6, dtype="int32")], axis=1) == T(3, 2, 6, 5)
    assert rel("take", [T(3, 4, 5), T(2, 6, dtype="int32")]) == T(2, 6)
    with pytest.raises(RelationError, match="integer"):
        rel("take", [T(3), T(2)])
    assert rel("strided_slice", [T(10, ANY)], begin=(1, 0), end=(8, 3),
               strides=(3, 1)) == T(3, ANY)
    assert rel("where", [T(2, 1, dtype="bool"), T(1, 3), T(3)]) == T(2, 3)
    assert rel("cast", [T(2)], dtype="int8") == T(2, dtype="int8")
    assert rel("shape_of", [DATA]) == T(4, dtype="int32")
    assert rel("arange", [T(), T(), T()]) == T(ANY)
    assert rel("one_hot", [T(2, dtype="int32"), T(), T()], depth=5, axis=0) == T(5, 2)
    with pytest.raises(RelationError, match="broadcast"):
        rel("broadcast_to", [T(3, 2)], shape=(3, 3))


def _random_value(hint: object, rng: np.random.Generator) -> object:
    """A random attribute value roughly of the annotated type (often invalid)."""
    text = str(hint)
    ints = lambda: int(rng.integers(-5, 6))  # noqa: E731
    if "tuple[tuple" in text:
        return tuple((ints(), ints()) for _ in range(int(rng.integers(0, 5))))
    if "tuple" in text and rng.random() < 0.8:
        return tuple(ints() for _ in range(int(rng.integers(0, 5))))
    if "str" in text:
        return str(rng.choice(["", "NCHW", "NHWC", "OIHW", "HWIO", "int32", "float32",
                               "clip", "wrap", "edge", "size", "end", "bogus"]))
    if "bool" in text:
        return bool(rng.integers(0, 2))
    if "float" in text:
        return float(rng.uniform(-2, 2))
    if "None" in text and rng.random() < 0.3:
        return None
    return ints()


@pytest.mark.parametrize("name", ALL)
def test_random_attrs_never_crash_relations(name: str) -> None:
    import dataclasses
    import typing

    from relay_ref.ops.registry import AttrError

    op = get_op(name)
    args, _ = example(name)
    hints = typing.get_type_hints(op.attrs)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    values = [_value_of(t, rng) for t in args]
    for _ in range(40):
        items = {f.name: _random_value(hints[f.name], rng)
                 for f in dataclasses.fields(op.attrs) if rng.random() < 0.7
                 or f.default is dataclasses.MISSING}
        try:
            attrs = make_attrs(name, items)
        except AttrError:
            continue
        try:
            out = op.relation(args, attrs)
        except RelationError:
            continue
        assert isinstance(out, TensorType | TupleType), (name, items, out)
        try:
            result = op.reference(list(values), attrs)
        except OpRuntimeError:
            continue
        assert_matches_type(result, out, f"{name} {items}")


def _value_of(ty: object, rng: np.random.Generator) -> object:
    if isinstance(ty, TupleType):
        return tuple(_value_of(f, rng) for f in ty.fields)
    assert isinstance(ty, TensorType)
    shape = tuple(int(d) for d in ty.shape)
    if ty.dtype.startswith("float"):
        return rng.uniform(0.5, 2, shape).astype(ty.dtype)
    return rng.integers(0, 3, shape).astype(ty.dtype)


def _perturb(ty: object, rng: np.random.Generator) -> object:
    """A random tensor type near ``ty``: same dtype, random rank <= 4 and small dims."""
    if isinstance(ty, TupleType):
        base = _perturb(ty.fields[0], rng)
        return TupleType(tuple(base if rng.random() < 0.7 else _perturb(f, rng)
                               for f in ty.fields))
    assert isinstance(ty, TensorType)
    if rng.random() < 0.3:
        return ty
    rank = int(rng.integers(0, 5)) if rng.random() < 0.5 else ty.ndim
    return TensorType(tuple(int(rng.integers(0, 5)) for _ in range(rank)), ty.dtype)


@pytest.mark.parametrize("name", ALL)
def test_random_shapes_relation_agrees_with_reference(name: str) -> None:
    op = get_op(name)
    args, attrs = example(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()) + 1)
    for _ in range(40):
        types = [_perturb(t, rng) for t in args]
        try:
            out = op.relation(types, attrs)
        except RelationError:
            continue
        assert isinstance(out, TensorType | TupleType), (name, types, out)
        values = [_value_of(t, rng) for t in types]
        try:
            result = op.reference(list(values), attrs)
        except OpRuntimeError:
            continue
        assert_matches_type(result, out, f"{name} {types}")


def _anyfy(ty: object, mask: int) -> object:
    if isinstance(ty, TupleType):
        return TupleType(tuple(_anyfy(f, mask) for f in ty.fields))
    assert isinstance(ty, TensorType)
    return TensorType(tuple(ANY if (mask >> i) & 1 else d for i, d in enumerate(ty.shape)),
                      ty.dtype)


@pytest.mark.parametrize("name", ALL)
def test_any_dims_never_crash_and_refine_to_static(name: str) -> None:
    """With ``?`` dims a relation gives a type (or a RelationError); the static result,
    where there is one, must be an instance of it (``?`` matches any dim)."""
    op = get_op(name)
    args, attrs = example(name)
    static = op.relation(args, attrs)
    for mask in (1, 2, 5, 15):
        for i in range(len(args)):
            trial = list(args)
            trial[i] = _anyfy(args[i], mask)
            try:
                out = op.relation(trial, attrs)
            except RelationError:
                continue
            assert isinstance(out, TensorType | TupleType), (name, trial)
            _assert_instance(static, out, name)


def _assert_instance(static: object, general: object, where: str) -> None:
    if isinstance(general, TupleType):
        assert isinstance(static, TupleType) and len(static.fields) == len(general.fields)
        for s, g in zip(static.fields, general.fields, strict=True):
            _assert_instance(s, g, where)
        return
    assert isinstance(static, TensorType) and isinstance(general, TensorType), where
    assert static.dtype == general.dtype and static.ndim == general.ndim, where
    pairs = zip(static.shape, general.shape, strict=True)
    assert all(isinstance(g, AnyDim) or g == s for s, g in pairs), (where, static, general)


def test_a_function_argument_with_a_hole_waits_then_is_no_tensor():
    """``tensor_args`` (every elementwise op's relation) waits (``NOT_YET``) on an argument
    with a hole anywhere, a function type's included: the hole may still be filled. Once
    the function type is complete, the op reports that it is no tensor. A program passing
    a function to ``add`` is never left unchecked: either error is located."""
    import relay_ref as rr
    from relay_ref.ir.types import FuncType, IncompleteType, TensorType
    from relay_ref.ops.registry import NOT_YET, RelationError
    from relay_ref.ops.relations import tensor_args

    f32 = TensorType((), "float32")
    holey = FuncType((IncompleteType(),), IncompleteType())
    assert tensor_args("add", [holey, f32], 2, ["lhs", "rhs"]) is NOT_YET
    with pytest.raises(RelationError, match="add: lhs must be a tensor, found fn"):
        tensor_args("add", [FuncType((f32,), f32), f32], 2, ["lhs", "rhs"])
    programs = {
        # the hole is filled later (%f(1f)): the relation then runs and rejects fn
        "def @main(%x: float32) { let %f = fn (%y) { %y }; let %r = add(%f, %x); %f(1f) }":
            (r"<string>:1:60: error: add: lhs must be a tensor, found fn \(float32\) -> "
             r"float32"),
        # never filled: the call is reported as one the checker cannot type
        "def @main(%x: float32) { let %f = fn (%y) { %y }; add(%f, %x) }":
            r"<string>:1:51: error: cannot infer the type of this call to add",
    }
    for src, message in programs.items():
        with pytest.raises(rr.RelayTypeError, match=message):
            rr.infer_types(rr.parse(src))
