"""The operator registry: operators are data.

Each operator is one ``OpDef``: its name, its attributes schema (a frozen dataclass with
TVM's defaults), its type relation, its NumPy reference implementation, and optional fast
kernels. The parser, type checker, interpreter and executor look operators up here; no
operator logic lives anywhere else. Which module declares which aspect of a built-in op, and
when the tables are attached (``attach``), is the rule in ``relay_ref/ops/__init__.py``.

Relation protocol (spec/typing.md 6.2 T-Rel, the type-relation judgement):
    ``relation(arg_types: list[Type], attrs) -> Type | NOT_YET``
    * ``arg_types`` are the call's argument types after the solver's substitution; any of
      them may still be (or contain) an ``IncompleteType``.
    * return the output type when it can be determined, ``NOT_YET`` when a hole prevents it
      (the solver will retry after other constraints made progress), and raise
      ``RelationError`` with a plain-words message when the arguments can never satisfy it.
    A relation never raises anything but ``RelationError``.

Predicate protocol (spec/typing.md 3.9 T-App-Op and 6.2 T-Rel, the paper's relations):
    ``predicate(types: list[Type], attrs) -> Solved | NOT_YET``
    * ``types`` are the argument types followed by the result type, any of them holes.
    * return ``Solved(assign, done)``: unify each ``types[i]`` with the given type (in either
      direction: an output may fix an input), and say whether the relation now holds for
      good (``done``) or must run again when one of its holes is filled; ``NOT_YET`` when
      nothing can be said yet; raise ``RelationError`` when it can never hold.
    An op registered without a predicate uses its relation forward only (``OpDef.solve``):
    the result is assigned once every argument is known. A relation factory that knows how
    to run backwards attaches its predicate to the function it returns (``rel.predicate``)
    and ``register_op`` picks it up.

Reference protocol (spec/semantics.md, "E-App-Op"):
    ``reference(args: list[value], attrs) -> value`` with ``numpy.ndarray`` tensors (tuples
    of arrays for tuple-typed arguments and results); it raises ``OpRuntimeError`` for
    run-time failures (division by zero, out-of-range index) and never mutates its inputs.

Fusion pattern (``OpDef.op_pattern``, TVM's ``TOpPattern``): how the op may be fused with
its neighbours by ``relay_ref.passes.fuse_ops`` (``OpPattern``); ``OPAQUE``, never fused,
unless the op says otherwise. The built-in ops' patterns are TVM's, set in
``relay_ref/ops/patterns.py``.

Differentiation protocol (spec/ad.md; TVM's ``FPrimalGradient``), the ``gradient`` aspect:
    ``gradient(call, out_grad, type_of) -> tuple[Expr, ...]``: the reverse rule, one adjoint
    expression per argument of ``call`` (each of that argument's type; broadcasting undone
    with ``collapse_sum_like``), built from ``call.args``, ``call.attrs`` and ``out_grad``
    with ``relay_ref.ir`` constructors. ``type_of(expr) -> Type`` answers for ``call`` (its
    result type), each of ``call.args`` and ``out_grad`` (the result's type; a tuple
    expression for a tuple-valued op). The AD pass binds every argument to a variable or
    constant first, so a rule may use ``call.args`` any number of times; a rule never
    evaluates anything.
    ``tangent(call, tangents, type_of) -> Expr``: the forward rule (dual numbers), the
    tangent of the call's result from one tangent expression per argument (each of that
    argument's type; ``type_of`` answers for them too).
    ``differentiable``: ``True`` when the op has both rules, a string saying why not
    (integer result, piecewise constant, not implemented yet...), ``None`` unclassified.
    A rule raises ``GradientUnsupported`` (and nothing else) for an attribute combination
    it does not handle.
    The built-in rules live in ``relay_ref/ops/grad_*.py``, one file per op family.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import sys
import types as pytypes
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field


class _NotYet:
    """Sentinel: the relation needs more type information."""

    _instance: _NotYet | None = None

    def __new__(cls) -> _NotYet:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_YET"


NOT_YET = _NotYet()


class RelationError(Exception):
    """A type relation cannot hold for these argument types; ``message`` is user-facing."""


class OpRuntimeError(Exception):
    """A reference implementation failed on valid-typed values (user-facing message)."""


class AttrError(Exception):
    """Bad call attributes: unknown key, wrong value type, invalid value."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class GradientUnsupported(Exception):
    """A differentiation rule cannot handle this call's attribute combination (a layout
    other than NCHW, ``batch_dims != 0``...); ``message`` is user-facing and names the op.
    The AD pass reports it as a located error at the call."""


@dataclass(frozen=True, slots=True)
class Solved:
    """A predicate's answer: ``assign`` pairs (position, type), position ``len(args)`` being
    the result; ``done`` says the relation holds whatever the remaining holes become."""

    assign: tuple[tuple[int, object], ...]
    done: bool = True


@dataclass(frozen=True, slots=True)
class NoAttrs:
    """Attributes of an operator that takes none."""


class OpPattern(enum.IntEnum):
    """TVM's ``OpPatternKind`` (``include/tvm/relay/op_attr_types.h``): the more complex
    pattern has the larger value, and fusion compares them by ``<=``."""

    ELEMWISE = 0  # out[i] = f(in[i]): same shape in and out
    BROADCAST = 1  # out[i, j] = f(in[i]): input axes map to output axes in order
    INJECTIVE = 2  # every output element reads some inputs at computable indices (reshape)
    COMM_REDUCE = 3  # commutative reduction (sum, max)
    OUT_ELEMWISE_FUSABLE = 4  # complex op whose output can take elementwise ops (conv2d)
    TUPLE = 7  # a tuple node (used by fusion only)
    OPAQUE = 8  # never fused


@dataclass(frozen=True, slots=True)
class OpDef:
    """Everything known about one operator."""

    name: str
    num_inputs: int  # -1: variadic
    relation: Callable[..., object]
    reference: Callable[..., object]
    attrs: type = NoAttrs
    arg_names: tuple[str, ...] = ()
    support_level: int = 10
    doc: str = ""
    kernels: dict[str, Callable[..., object]] = field(default_factory=dict)
    predicate: Callable[..., object] | None = None
    relation_name: str = ""
    op_pattern: OpPattern = OpPattern.OPAQUE
    #: test-generation hints (``relay_ref.testing.programs``, ``set_examples``): attribute
    #: dicts worth trying besides the defaults, and argument-type tuples (each a ``Type``, a
    #: shape, or a ``(shape, dtype)`` pair) besides the generator's generic ones. Data only.
    attr_examples: tuple[dict, ...] = ()
    arg_examples: tuple[tuple, ...] = ()
    #: values that matter (``Values``, the ``values`` aspect): argument values, attributes
    #: and argument types that reach where rewrites of this op go wrong. Data only.
    values: Values | None = None
    #: differentiation (see the module docstring and ``set_gradient``): the reverse rule
    #: (TVM's ``FPrimalGradient``), the forward (tangent) rule, and ``True`` / why not.
    gradient: Callable[..., tuple] | None = None
    tangent: Callable[..., object] | None = None
    differentiable: bool | str | None = None
    #: the compute cost model (``relay_ref.ops.costs``): ``cost(arg_shapes, out_shape,
    #: attrs) -> int``; None: one per output element (``costs.default_cost``)
    cost: Callable[..., int] | None = None

    @property
    def bidirectional(self) -> bool:
        """True when type information may flow from the result back to the arguments."""
        return self.predicate is not None

    @property
    def type_text(self) -> str:
        """The op's type as spec/typing.md 3.10 writes it (K-FnRel, a function type with a
        K-Relation constraint), e.g. ``fn[t1, t2, t3](t1, t2) -> t3 where Broadcast(t1, t2,
        t3)`` (``...`` for a variable number of arguments)."""
        if self.num_inputs < 0:
            return f"fn(...) -> t where {self.relation_name}(...)"
        ts = [f"t{i + 1}" for i in range(self.num_inputs + 1)]
        args, out = ts[:-1], ts[-1]
        return (f"fn[{', '.join(ts)}]({', '.join(args)}) -> {out} "
                f"where {self.relation_name}({', '.join(ts)})")

    def solve(self, types: list, attrs: object) -> object:
        """Run the relation as a predicate over ``types`` (arguments, then the result):
        ``Solved`` or ``NOT_YET`` (see the module docstring); raises ``RelationError``."""
        if self.predicate is not None:
            return self.predicate(types, attrs)
        out = self.relation(types[:-1], attrs)
        if out is NOT_YET:
            return NOT_YET
        return Solved(((len(types) - 1, out),))


@dataclass(frozen=True, slots=True)
class KernelRef:
    """A fast kernel named by module and function (``OpDef.kernels[target]``), imported on
    first use: the op library stays cheap to import, numba loads only when a kernel runs.

    The kernel protocol (the executor's, ``relay_ref.executor``): ``kernel(args, attrs,
    out=None) -> value`` computes what ``reference(args, attrs)`` computes; ``out``, when
    given, is a C-contiguous array of the result's shape and dtype overlapping no argument,
    written and returned. Without ``out`` the result is a fresh array, unless the function
    has ``returns_view = True`` (it may return a view of an argument, and is never given
    ``out``)."""

    module: str
    name: str

    def load(self) -> Callable[..., object]:
        """The kernel function (``ImportError``/``AttributeError`` if the table is wrong)."""
        return getattr(importlib.import_module(self.module), self.name)

    @classmethod
    def parse(cls, text: str) -> KernelRef:
        """``"package.module:function"`` as a ``KernelRef``."""
        module, _, name = text.partition(":")
        if not module or not name:
            raise ValueError(f"a kernel is named 'module:function', not {text!r}")
        return cls(module, name)


@dataclass(frozen=True, slots=True)
class Examples:
    """The value of the ``examples`` aspect: test-generation hints for one op
    (``OpDef.attr_examples``, ``OpDef.arg_examples``; see ``set_examples``)."""

    attrs: tuple[dict, ...] = ()
    args: tuple[tuple, ...] = ()


@dataclass(frozen=True, slots=True)
class Values:
    """The value of the ``values`` aspect: *values that matter* for one op, drawn when a test
    focuses on it (``relay_ref.testing.check_pass(..., focus=...)``): the regions of its
    arguments where rewrites commonly go wrong (thresholds, ties, zeros, inf/nan, integer
    overflow, division by zero). Data only; the generator reads it, no op code does.

    ``floats`` / ``ints``: element values for the op's floating-point / integer arguments
    (added to the ordinary pool); ``attrs``: attribute dicts (as ``Examples.attrs``) and
    ``args``: argument-type specs (as ``Examples.args``; zero extents allowed: empty axes)
    tried, besides the op's ordinary signatures, for focused calls."""

    floats: tuple[float, ...] = ()
    ints: tuple[int, ...] = ()
    attrs: tuple[dict, ...] = ()
    args: tuple[tuple, ...] = ()


#: the aspects a table may attach (``attach``); ``kernel:<target>`` for any target name.
TABLE_ASPECTS = ("examples", "values", "pattern", "kernel:<target>", "gradient", "cost")

_REGISTRY: dict[str, OpDef] = {}
_LOADED_KERNELS: dict[tuple[str, str], Callable[..., object]] = {}
#: (op, aspect) -> the module that declared it: ``"core"`` by ``register_op``'s caller, the
#: table aspects by ``attach``'s ``source`` (or a ``set_*`` caller, for a later override).
_DECLARED: dict[tuple[str, str], str] = {}
#: (op, aspect) pairs set by ``attach``: a table sets each aspect of each op at most once.
_ATTACHED: set[tuple[str, str]] = set()


def _caller_module() -> str:
    """The ``__name__`` of the module that called the registry function calling this."""
    return sys._getframe(2).f_globals.get("__name__", "?")


def register_op(name: str, *, relation: Callable[..., object], reference: Callable[..., object],
                num_inputs: int, attrs: type = NoAttrs, arg_names: tuple[str, ...] = (),
                support_level: int = 10, doc: str = "",
                kernels: dict[str, Callable[..., object]] | None = None,
                override: bool = False,
                predicate: Callable[..., object] | None = None,
                relation_name: str | None = None,
                op_pattern: OpPattern = OpPattern.OPAQUE) -> OpDef:
    """Register (or, with ``override=True``, replace) an operator. Usable by end users.
    ``predicate`` (default: the relation's own ``predicate`` attribute, if any) makes the
    relation bidirectional; ``relation_name`` names it in types (``where Broadcast(...)``;
    default: the relation's ``relation_name`` attribute, else the op's name); ``op_pattern``
    is its fusion pattern (see ``OpPattern``). ``kernels`` and ``op_pattern`` are for user
    ops: the built-in ops get theirs from the per-aspect tables (``relay_ref.ops``)."""
    if name in _REGISTRY and not override:
        raise ValueError(f"operator {name!r} is already registered")
    if not dataclasses.is_dataclass(attrs):
        raise TypeError("attrs must be a dataclass type")
    if not arg_names and num_inputs > 0:
        arg_names = tuple("data" if num_inputs == 1 else f"x{i}" for i in range(num_inputs))
    if predicate is None:
        predicate = getattr(relation, "predicate", None)
    if relation_name is None:
        relation_name = getattr(relation, "relation_name", None) or name
    op = OpDef(name, num_inputs, relation, reference, attrs, arg_names, support_level, doc,
               dict(kernels or {}), predicate, relation_name, OpPattern(op_pattern))
    _REGISTRY[name] = op
    for key in [k for k in _DECLARED if k[0] == name]:
        del _DECLARED[key]
    _ATTACHED.difference_update({k for k in _ATTACHED if k[0] == name})
    for key in [k for k in _LOADED_KERNELS if k[0] == name]:  # the old definition's too
        del _LOADED_KERNELS[key]
    _DECLARED[(name, "core")] = _caller_module()
    return op


def _set_aspect(name: str, aspect: str, value: object, source: str) -> OpDef:
    """Replace the registered op ``name`` by a copy with ``aspect`` set to ``value`` (the one
    place an ``OpDef`` is rebuilt); ``KeyError`` naming the op when it is not registered."""
    if name not in _REGISTRY:
        raise KeyError(f"{source}: operator {name!r} is not registered")
    op = _REGISTRY[name]
    if aspect == "examples":
        assert isinstance(value, Examples)
        op = dataclasses.replace(op, attr_examples=tuple(value.attrs),
                                 arg_examples=tuple(value.args))
    elif aspect == "values":
        if not isinstance(value, Values):
            raise TypeError(f"{source}: the values of {name!r} must be a registry.Values")
        op = dataclasses.replace(op, values=value)
    elif aspect == "pattern":
        op = dataclasses.replace(op, op_pattern=OpPattern(value))  # type: ignore[arg-type]
    elif aspect.startswith("kernel:"):
        target = aspect.removeprefix("kernel:")
        kernel = KernelRef.parse(value) if isinstance(value, str) else value
        op = dataclasses.replace(op, kernels={**op.kernels, target: kernel})
        _LOADED_KERNELS.pop((name, target), None)
    elif aspect == "gradient":
        if isinstance(value, str):
            if not value.strip():
                raise ValueError(f"{name}: the reason must say something")
            op = dataclasses.replace(op, gradient=None, tangent=None, differentiable=value)
        else:
            reverse, forward = value  # type: ignore[misc]
            if reverse is None or forward is None:
                raise ValueError(f"{name}: a differentiable op needs both a reverse and a "
                                 "forward rule")
            op = dataclasses.replace(op, gradient=reverse, tangent=forward,
                                     differentiable=True)
    elif aspect == "cost":
        if not callable(value):
            raise TypeError(f"{source}: the cost of {name!r} must be a function")
        op = dataclasses.replace(op, cost=value)
    else:
        raise ValueError(f"unknown aspect {aspect!r} (one of {', '.join(TABLE_ASPECTS)})")
    _REGISTRY[name] = op
    _DECLARED[(name, aspect)] = source
    return op


def attach(aspect: str, table: Mapping[str, object] | Iterable[tuple[str, object]], *,
           source: str) -> None:
    """Attach one per-aspect table: set ``aspect`` (one of ``TABLE_ASPECTS``) of every op the
    table names to its value. ``source`` is the module that declares the table (recorded,
    see ``declared_in``). Values: ``Examples`` for ``examples``; ``Values`` for ``values``;
    an ``OpPattern`` for ``pattern``; a ``KernelRef``, ``"module:function"`` or callable for
    ``kernel:<target>``; a ``(reverse, forward)`` pair or a reason string for ``gradient``.

    Invariants (``KeyError`` / ``ValueError`` otherwise, naming ``source``): every op a table
    names is registered, and no table sets an aspect of an op that a table already set (two
    tables, or one naming an op twice, are a conflict, never an override)."""
    items = table.items() if isinstance(table, Mapping) else table
    for name, value in items:
        if (name, aspect) in _ATTACHED:
            raise ValueError(f"{source}: the {aspect} of {name!r} is already attached (by "
                             f"{_DECLARED.get((name, aspect), '?')})")
        _set_aspect(name, aspect, value, source)
        _ATTACHED.add((name, aspect))


def declared_in(name: str) -> dict[str, str]:
    """Where each aspect of operator ``name`` was declared: aspect (``"core"`` for the
    ``register_op`` call, else one of ``TABLE_ASPECTS`` with the target spelt out) -> the
    module's ``__name__``."""
    if name not in _REGISTRY:
        raise KeyError(name)
    return {aspect: module for (op, aspect), module in _DECLARED.items() if op == name}


def set_op_pattern(name: str, pattern: OpPattern) -> OpDef:
    """Give the registered operator ``name`` the fusion pattern ``pattern`` (one op, e.g. a
    user's; the built-in ops' come from a table, ``attach``)."""
    return _set_aspect(name, "pattern", pattern, _caller_module())


def set_examples(name: str, attrs: typing.Iterable[dict] = (),
                 args: typing.Iterable[tuple] = ()) -> OpDef:
    """Give the registered operator ``name`` test-generation hints (``OpDef.attr_examples``,
    ``OpDef.arg_examples``): the program generator tries them, asks the op's relation
    which combinations type-check, and generates calls of those."""
    return _set_aspect(name, "examples", Examples(tuple(attrs), tuple(args)),
                       _caller_module())


def set_gradient(name: str, *, reverse: Callable[..., tuple] | None = None,
                 forward: Callable[..., object] | None = None,
                 why_not: str | None = None) -> OpDef:
    """Give the registered operator ``name`` its differentiation rules (see the module
    docstring): ``reverse`` and ``forward`` together make it differentiable; ``why_not``
    (alone) records why it is not. Rules given without ``why_not`` must come in pairs."""
    if why_not is not None:
        if reverse is not None or forward is not None:
            raise ValueError(f"{name}: give rules or a reason it has none, not both")
        return _set_aspect(name, "gradient", why_not, _caller_module())
    return _set_aspect(name, "gradient", (reverse, forward), _caller_module())


def set_kernel(name: str, target: str, kernel: KernelRef | Callable[..., object] | str) -> OpDef:
    """Give the registered operator ``name`` a fast kernel for ``target`` (``"cpu"``, ...):
    a ``KernelRef``, a ``"module:function"`` string, or a callable (see ``KernelRef`` for
    the protocol). A user's kernel replaces a built-in one."""
    return _set_aspect(name, f"kernel:{target}", kernel, _caller_module())


def op_kernel(name: str, target: str = "cpu") -> Callable[..., object] | None:
    """The loaded ``target`` kernel of operator ``name``, or None when it has none."""
    key = (name, target)
    fn = _LOADED_KERNELS.get(key)
    if fn is None:
        kernel = get_op(name).kernels.get(target)
        if kernel is None:
            return None
        fn = _LOADED_KERNELS[key] = kernel.load() if isinstance(kernel, KernelRef) else kernel
    return fn


# Importing this module imports the package ``relay_ref.ops`` first, which registers every
# built-in operator and attaches its tables: the lookups below see the complete registry.

def get_op(name: str) -> OpDef:
    """The operator called ``name``; ``KeyError`` if none is registered."""
    return _REGISTRY[name]


def has_op(name: str) -> bool:
    return name in _REGISTRY


def all_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


# -- attributes -------------------------------------------------------------------------

def make_attrs(op_name: str, items: dict[str, object]) -> object:
    """Build the attrs object of ``op_name`` from keyword values as parsed from text.

    Parsed values are int, float, str, bool, None or (nested) tuples. Unknown keys and
    values of the wrong type raise ``AttrError`` naming the key. Missing keys take the
    schema's defaults. Validation beyond types lives in the attrs class's ``__post_init__``
    (raising ``AttrError`` or ``ValueError``)."""
    cls = get_op(op_name).attrs
    known = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in items.items():
        if key not in known:
            valid = ", ".join(known) or "none"
            raise AttrError(f"operator {op_name} has no attribute '{key}' "
                            f"(its attributes: {valid})", key)
        hint = _field_type(cls, key)
        try:
            kwargs[key] = _coerce(value, hint)
        except (TypeError, ValueError) as err:
            raise AttrError(f"attribute '{key}' of {op_name}: {err}", key) from None
    try:
        return cls(**kwargs)
    except AttrError:
        raise
    except (TypeError, ValueError) as err:
        raise AttrError(f"invalid attributes for {op_name}: {err}") from None


def attrs_items(attrs: object, *, include_defaults: bool = False) -> list[tuple[str, object]]:
    """(key, value) pairs of an attrs object in schema order; non-default ones only unless
    ``include_defaults``. This is the printing order."""
    if attrs is None or not dataclasses.is_dataclass(attrs):
        return []
    out = []
    for f in dataclasses.fields(attrs):
        value = getattr(attrs, f.name)
        if not include_defaults:
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            if (f.default_factory is not dataclasses.MISSING  # type: ignore[misc]
                    and value == f.default_factory()):  # type: ignore[misc]
                continue
        out.append((f.name, value))
    return out


def _field_type(cls: type, name: str) -> object:
    hints = typing.get_type_hints(cls)
    return hints.get(name, object)


def _coerce(value: object, hint: object) -> object:
    """Convert a parsed attribute value to the field's annotated type (best effort)."""
    if hint is object or hint is typing.Any:
        return value
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, pytypes.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg)
            except (TypeError, ValueError) as err:
                errors.append(str(err))
        raise ValueError(errors[0] if errors else f"unexpected value {value!r}")
    if origin is tuple:
        if not isinstance(value, tuple | list):
            if len(args) == 2 and args[1] is Ellipsis:
                # TVM accepts a scalar where a list is expected in a few places
                # (e.g. ``padding=1``): treat as a 1-element list.
                value = (value,)
            else:
                raise ValueError(f"expected a list, found {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0]) for v in value)
        if len(args) != len(value):
            raise ValueError(f"expected a list of {len(args)} values, found {len(value)}")
        return tuple(_coerce(v, a) for v, a in zip(value, args, strict=True))
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise ValueError(f"expected a boolean, found {value!r}")
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer, found {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"expected a number, found {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, found {value!r}")
        return value
    return value
