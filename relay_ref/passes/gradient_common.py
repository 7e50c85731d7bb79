"""What the three AD modes share (spec/ad.md): the let-list builder, the type transform with
its transformed ADTs, and located errors.

* ``Block``: residual bindings of one scope in evaluation order (A-normal form, as
  PartialEvaluate's let-list): every transformed expression is bound once, so nothing with
  an effect is duplicated and rules may use their arguments any number of times.
* ``TypeMap``: a mode's type transform (AD-Type-Tensor ... AD-Type-ADT): ``tensor(t)`` says
  what a tensor becomes (reverse: ``(t, Ref[t])``, forward: ``(t, t)``); tuples, functions
  and references map componentwise; an ADT whose constructors mention tensors (directly or
  through other such ADTs or function types) gets a transformed copy in the module
  (``Tree`` -> ``Tree_rev`` with constructors ``Leaf_rev``...), other ADTs are kept and
  their type arguments transformed (``List[Tensor]`` -> ``List[(Tensor, Ref[Tensor])]``).
* ``ad_error``: a ``RelayError`` at a node's span citing the rule that does not apply;
  ``located`` gives an error without a location (at a generated node) the span of what is
  being differentiated (the entry function, the ``gradient(...)`` call); ``type_text``
  writes types in messages as Relay text.

Invariant: a type variable maps to itself (AD-Type-Var), so the transform commutes with
instantiation: ``T(τ[σ/a]) = T(τ)[T(σ)/a]``, which makes polymorphic code (the prelude's
``map``, ``foldl``) transform once for all its instances.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace as dc_replace

from relay_ref.diagnostics import Note, RelayError
from relay_ref.ir.expr import Constructor, Expr, Let, Var
from relay_ref.ir.module import IRModule, TypeData
from relay_ref.ir.span import Span
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
)

# The one type substitution (binder-respecting); the gradient modules call it ``subst``.
from relay_ref.ir.types import substitute as subst

__all__ = ["Block", "TypeMap", "ad_error", "fresh_name", "has_float", "is_float",
           "located", "subst", "type_text"]


class Block:
    """Bindings of one scope, in evaluation order (``push``), closed by ``finish``."""

    __slots__ = ("bindings",)

    def __init__(self) -> None:
        self.bindings: list[tuple[Var, Expr]] = []

    def push(self, value: Expr, hint: str = "t", ty: Type | None = None) -> Var:
        """Bind ``value`` to a fresh variable (annotated with ``ty`` when given)."""
        if isinstance(value, Var):
            return value
        var = Var(hint, ty)
        self.bindings.append((var, value))
        return var

    def bind(self, var: Var, value: Expr) -> None:
        self.bindings.append((var, value))

    def finish(self, result: Expr) -> Expr:
        body = result
        for var, value in reversed(self.bindings):
            body = Let(var, value, body)
        return body


def ad_error(message: str, node: Expr | None, rule: str) -> RelayError:
    """A located error (the node's span, when it has one) citing ``rule``."""
    span = getattr(node, "span", None) if node is not None else None
    return RelayError(f"{message} [{rule}]", span)


def located(err: RelayError, span: Span | None, note: str | None = None) -> RelayError:
    """``err`` placed at ``span`` when it has no location (a node the transform generated,
    or an earlier transform's output); with ``note`` at ``span`` when it has one elsewhere
    (and ``note`` is given). ``err`` itself when ``span`` is None or already its location."""
    if span is None or not err.diagnostics or err.span == span:
        return err
    first, *rest = err.diagnostics
    if first.span is None:
        first = dc_replace(first, span=span)
    elif note is None:
        return err
    else:
        first = dc_replace(first, notes=(*first.notes, Note(note, span)))
    return type(err)([first, *rest])


def type_text(ty: Type | None) -> str:
    """``ty`` as Relay text, for messages."""
    return type_to_text(ty)


def fresh_name(taken: set[str] | dict, stem: str) -> str:
    """``stem`` or ``stem_2``, ``stem_3``... whichever is not in ``taken``."""
    if stem not in taken:
        return stem
    i = 2
    while f"{stem}_{i}" in taken:
        i += 1
    return f"{stem}_{i}"


def is_float(ty: Type) -> bool:
    return isinstance(ty, TensorType) and ty.dtype.startswith(("float", "bfloat"))


def has_float(ty: Type) -> bool:
    """Whether a value of ``ty`` holds a float tensor (where gradients flow)."""
    match ty:
        case TensorType():
            return is_float(ty)
        case TupleType(fields):
            return any(has_float(f) for f in fields)
    return False




@dataclass
class TypeMap:
    """A mode's type transform over one module (see the module docstring). ``new_types``
    collects the transformed ADTs the transform needed; ``ctor`` maps constructors."""

    mod: IRModule
    tensor: Callable[[TensorType], Type]
    suffix: str

    def __post_init__(self) -> None:
        self.changed = self._changed_adts()
        self.new_types: dict[str, TypeData] = {}
        self.ctors: dict[Constructor, Constructor] = {}
        self._made: dict[str, TypeData] = {}  # original ADT name -> its transformed copy

    # AD-Type-ADT: which ADTs change (a least fixpoint: an ADT changes when a constructor's
    # field type changes, assuming nothing changes to start with)
    def _changed_adts(self) -> set[str]:
        changed: set[str] = set()
        grew = True
        while grew:
            grew = False
            for name, td in self.mod.type_definitions.items():
                if name in changed:
                    continue
                if any(self._changes(t, changed) for c in td.constructors for t in c.inputs):
                    changed.add(name)
                    grew = True
        return changed

    def _changes(self, ty: Type, changed: set[str]) -> bool:
        match ty:
            case TensorType():
                return True
            case TupleType(fields):
                return any(self._changes(f, changed) for f in fields)
            case FuncType(args, ret):
                return any(self._changes(a, changed) for a in args) or self._changes(ret,
                                                                                    changed)
            case RefType(v):
                return self._changes(v, changed)
            case TypeCall(func, args):
                return func.name in changed or any(self._changes(a, changed) for a in args)
        return False

    def __call__(self, ty: Type) -> Type:
        match ty:
            case TensorType():  # AD-Type-Tensor
                return self.tensor(ty)
            case TupleType(fields):  # AD-Type-Tuple
                return TupleType(tuple(self(f) for f in fields))
            case FuncType(args, ret, tps):  # AD-Type-Fn
                return FuncType(tuple(self(a) for a in args), self(ret), tps)
            case RefType(v):  # AD-Type-Ref
                return RefType(self(v))
            case TypeCall(func, args):  # AD-Type-ADT
                return TypeCall(self.adt_header(func), tuple(self(a) for a in args))
            case GlobalTypeVar():
                return self.adt_header(ty)
        return ty  # AD-Type-Var: type variables (and holes) are kept

    def adt_header(self, header: GlobalTypeVar) -> GlobalTypeVar:
        """The transformed ADT's name (the ADT itself when it does not change)."""
        if header.name not in self.changed:
            return header
        return self._transformed(self.mod.type_definitions[header.name]).header

    def ctor(self, c: Constructor) -> Constructor:
        """A constructor of the transformed ADT (the constructor itself if unchanged)."""
        if c.belong_to.name not in self.changed:
            return c
        self._transformed(self.mod.type_definitions[c.belong_to.name])
        return self.ctors[c]

    def _transformed(self, td: TypeData) -> TypeData:
        """``td``'s transformed copy, made on first use: same type variables, constructors
        ``C_<suffix>`` with transformed field types (recursive fields name the copy)."""
        made = self._made.get(td.name)
        if made is not None:
            return made
        taken = set(self.mod.type_definitions) | set(self.new_types)
        header = GlobalTypeVar(fresh_name(taken, f"{td.name}_{self.suffix}"))
        taken_ctors = set(self.mod.constructors)
        ctors = []
        for c in td.constructors:
            name = fresh_name(taken_ctors, f"{c.name}_{self.suffix}")
            taken_ctors.add(name)
            ctors.append(Constructor(name, (), header, c.tag))
            self.ctors[c] = ctors[-1]
        # the copy is known before its field types are transformed: they may name it
        made = self._made[td.name] = TypeData(header, td.type_vars, tuple(ctors))
        self.new_types[header.name] = made
        for c, new_c in zip(td.constructors, ctors, strict=True):
            # Constructor is frozen; its inputs are filled in once, here, before any use
            object.__setattr__(new_c, "inputs", tuple(self(t) for t in c.inputs))
        return made
