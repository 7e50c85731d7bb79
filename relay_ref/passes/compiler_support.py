"""What each external compiler (a BYOC backend, spec/byoc.md) supports: the table the
partitioning passes read.

TVM keeps this as operator attributes (``target.<name>`` predicates on the op registry) and
pattern tables (``register_pattern_table``); here it is one frozen ``Support`` record per
compiler, in a registry at the passes' layer, so that ``MergeComposite`` and
``AnnotateTarget`` read it without importing ``relay_ref.byoc`` (which sits above the
passes and fills this table: ``relay_ref.byoc.register_backend``).

* ``Support(name, ops, patterns, min_region_size, worth)``: ``ops`` maps an operator name to
  a predicate on the call (``CallInfo``) or ``None`` (always supported); ``patterns`` are the
  backend's composites (``Composite(name, pattern, check)``, in priority order, as TVM's
  pattern tables); ``min_region_size`` (operator calls) and ``worth`` (a predicate on a
  region's ``RegionCost``) are its cost model: a region failing either goes back to the
  default target (PartitionGraph).
* ``register_support`` (names checked: ``check_backend_name``, ``check_composite_name``) /
  ``unregister_support`` / ``get_support`` (``UnknownCompiler``, a
  ``RelayError`` and a ``ValueError``, naming the known ones) / ``support_names``.
* ``op_supported(support, info)`` and ``composite_owner(name, targets)``: the two questions
  AnnotateTarget asks. A predicate that raises is the backend author's bug, reported as a
  ``RelayError`` at the call naming the backend and the operator, never a traceback.

Invariant: ``"default"`` is never a registered compiler (it names the host executor, as
in TVM's annotations).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from relay_ref.diagnostics import RelayError
from relay_ref.ir.call_info import CallInfo
from relay_ref.ir.expr import Call, Expr
from relay_ref.ir.types import TensorType, TupleType, Type
from relay_ref.ops.costs import default_cost
from relay_ref.ops.registry import get_op, has_op
from relay_ref.suggest import did_you_mean

__all__ = ["DEFAULT", "CallInfo", "Composite", "RegionCost", "Support", "UnknownCompiler",
           "call_flops", "check_backend_name", "check_composite", "check_composite_name",
           "composite_owner", "get_support", "op_supported", "register_support",
           "support_names", "unregister_support"]

#: The host executor's name in ``compiler_begin`` / ``compiler_end`` annotations.
DEFAULT = "default"


class UnknownCompiler(RelayError, ValueError):
    """A compiler (backend) name nothing registered."""


@dataclass(frozen=True, slots=True)
class Composite:
    """A named composite pattern (``"ort.conv2d_bias_relu"``) in the project's pattern
    language (``relay_ref.passes.pattern``); ``check`` may refuse a match."""

    name: str
    pattern: Any  # relay_ref.passes.pattern.DFPattern
    check: Callable[[CallInfo], bool] | None = None


@dataclass(frozen=True, slots=True)
class RegionCost:
    """What the cost model knows of a region: its operator calls (a composite counts its
    inner calls), their estimated operations (``relay_ref.ops.costs``), and the bytes that
    cross its boundary (inputs + outputs)."""

    ops: int
    flops: int
    boundary_bytes: int


def call_flops(call: Call, types: Mapping[Expr, Type]) -> int:
    """The estimated operations of the operator call ``call``: its operator's ``cost``
    formula (``relay_ref.ops.costs``), else ``default_cost``, on the static shapes in
    ``types`` (a tuple counts its first field, a dynamic shape as a scalar); at least 1,
    and 1 when neither formula applies. The cost model (``RegionCost.flops``) and the
    executor's region summaries both count with it."""
    shapes = [_static_shape(types.get(a)) for a in call.args]
    out = _static_shape(types.get(call))
    name = getattr(call.op, "name", None)
    formula = get_op(name).cost if isinstance(name, str) and has_op(name) else None
    for f in (formula, default_cost):
        if f is None:
            continue
        try:
            return max(int(f(shapes, out, call.attrs)), 1)
        except Exception:  # noqa: BLE001, S112 - an estimate: try the next formula
            continue
    return 1


def _static_shape(ty: Type | None) -> tuple[int, ...]:
    if isinstance(ty, TupleType) and ty.fields:
        return _static_shape(ty.fields[0])
    if isinstance(ty, TensorType) and all(isinstance(d, int) for d in ty.shape):
        return tuple(ty.shape)
    return ()


@dataclass(frozen=True, slots=True)
class Support:
    """One external compiler's support table (see the module docstring)."""

    name: str
    ops: Mapping[str, Callable[[CallInfo], bool] | None]
    patterns: tuple[Composite, ...] = ()
    min_region_size: int | None = None
    worth: Callable[[RegionCost], bool] | None = None


_SUPPORT: dict[str, Support] = {}


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def check_backend_name(name: str, who: str = "register_support") -> None:
    """A backend name is an identifier (``[A-Za-z_][A-Za-z0-9_]*``), so the outlined
    ``@tvmgen_default_<name>_main_<k>`` parses back; ``ValueError`` naming the bad
    character otherwise (``who`` starts the message)."""
    for i, ch in enumerate(name):
        if not (ch == "_" or ch in _ALNUM and (i > 0 or not ch.isdigit())):
            where = "start with" if i == 0 and ch in _ALNUM else "contain"
            raise ValueError(f"{who}: a backend name must be an identifier "
                             f"([A-Za-z_][A-Za-z0-9_]*, so the outlined functions' names "
                             f"parse); {name!r} cannot {where} {ch!r}")


def check_composite_name(name: str, who: str = "register_support") -> None:
    """A composite name is printable in a string attribute (``Composite="..."``): no
    quote, backslash or control character; ``ValueError`` naming the bad character."""
    for ch in name:
        if ch in '"\\' or not ch.isprintable():
            raise ValueError(f"{who}: composite name {name!r} cannot contain {ch!r} (it is "
                             "printed in a string attribute; use [A-Za-z0-9_.])")


def register_support(support: Support, *, replace: bool = False) -> Support:
    """Register ``support`` under its name (``ValueError`` when taken, unless ``replace``;
    ``"default"`` is reserved; a name that is no identifier, or a composite name that does
    not print in a string attribute, is refused: ``check_backend_name``,
    ``check_composite_name``)."""
    check_backend_name(support.name)
    for comp in support.patterns:
        check_composite_name(comp.name)
    if support.name == DEFAULT:
        raise ValueError(f"{DEFAULT!r} names the host executor; a backend needs another name")
    if support.name in _SUPPORT and not replace:
        raise ValueError(f"backend {support.name!r} is already registered")
    _SUPPORT[support.name] = support
    return support


def unregister_support(name: str) -> None:
    """Forget a backend's table (tests, notebooks re-registering)."""
    _SUPPORT.pop(name, None)


def support_names() -> tuple[str, ...]:
    """The registered backends, in registration order."""
    return tuple(_SUPPORT)


def get_support(name: str) -> Support:
    """The table of backend ``name``; ``UnknownCompiler`` naming the known ones."""
    try:
        return _SUPPORT[name]
    except KeyError:
        known = ", ".join(_SUPPORT) or "none registered"
        raise UnknownCompiler(f"unknown backend {name!r}"
                              f"{did_you_mean(name, _SUPPORT, quote=True)} (backends: "
                              f"{known})") from None


def op_supported(support: Support, info: CallInfo) -> bool:
    """Whether ``support`` takes the call ``info`` describes (its operator listed, and its
    predicate, if any, true). A predicate that raises is a ``RelayError`` at the call."""
    if info.op not in support.ops:
        return False
    pred = support.ops[info.op]
    if pred is None:
        return True
    return _ask(pred, info, f"backend {support.name!r}: the support predicate for "
                            f"{info.op!r}")


def check_composite(support: Support, composite: Composite, info: CallInfo) -> bool:
    """Whether ``composite.check`` accepts the match ``info`` describes (True without one);
    a check that raises is a ``RelayError`` at the matched call."""
    if composite.check is None:
        return True
    return _ask(composite.check, info, f"backend {support.name!r}: the check of composite "
                                      f"{composite.name!r}")


def composite_owner(name: str, targets: Sequence[str] | None = None) -> str | None:
    """The backend owning the composite ``name`` among ``targets`` (all registered
    backends, in registration order, when None): the first of them, in order, whose
    pattern table has ``name``, else the one of them its prefix names (``"ort.conv2d_relu"``
    -> ``"ort"``, TVM's convention for hand-written composites), else None. So a backend
    re-using another's composite name owns its composites when it is partitioned for."""
    names = tuple(_SUPPORT) if targets is None else tuple(targets)
    for target in names:
        support = _SUPPORT.get(target)
        if support is not None and any(c.name == name for c in support.patterns):
            return target
    prefix = name.split(".", 1)[0]
    return prefix if prefix in names and prefix in _SUPPORT else None


def _ask(pred: Callable[[CallInfo], bool], info: CallInfo, what: str) -> bool:
    try:
        return bool(pred(info))
    except RelayError:
        raise
    except Exception as err:  # noqa: BLE001 - a user's predicate: reported, located
        raise RelayError(f"{what} raised {type(err).__name__}: {err}",
                         info.expr.span) from err
