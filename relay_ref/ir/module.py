"""Modules: global functions and ADT definitions (plus an optional metadata table).

Invariants:
* ``functions`` maps a global name (without ``@``) to its ``Function``; insertion order is
  definition order and is the printing order.
* ``type_definitions`` maps an ADT name to its ``TypeData``; constructor names are unique
  across the module (``constructors`` indexes them).
* A module is treated as immutable: ``with_*`` methods return a new module sharing nodes.
* ``checked_types`` is filled by ``relay_ref.infer_types``: an identity-keyed map from every
  expression of the module to its type, and ``global_types`` maps global names to types.
  ``casts`` is the checker's table of cast points (``relay_ref.typecheck.casts.CastTable``,
  spec/typing.md 5.1), or None when no ``?`` met a known dimension.
* ``comments`` is the parser's side table of the text's comments (a
  ``relay_ref.syntax.comments.CommentTable``, keyed by node identity; spec/syntax.md
  Pr-Comments), or None. Comments are trivia: no equality or hash looks at them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from relay_ref.ir.expr import Constructor, Expr, Function, GlobalVar
from relay_ref.ir.span import Span
from relay_ref.ir.types import GlobalTypeVar, Type, TypeVar


@dataclass(frozen=True, slots=True, eq=False)
class TypeData:
    """``type Name[A, ...] { Ctor(T, ...), ... }`` or ``extern type Name[A, ...]``."""

    header: GlobalTypeVar
    type_vars: tuple[TypeVar, ...]
    constructors: tuple[Constructor, ...]
    is_extern: bool = False
    span: Span | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.header.name


@dataclass(frozen=True, eq=False)
class IRModule:
    """A Relay program: ``def``s and ``type``s, plus ``metadata`` (TVM's meta table)."""

    functions: dict[str, Function] = field(default_factory=dict)
    type_definitions: dict[str, TypeData] = field(default_factory=dict)
    metadata: dict[str, list] = field(default_factory=dict)
    checked_types: dict[Expr, Type] = field(default_factory=dict, repr=False)
    global_types: dict[str, Type] = field(default_factory=dict, repr=False)
    casts: object | None = field(default=None, repr=False)
    source_name: str = "<string>"
    comments: object | None = field(default=None, repr=False)

    # -- lookups -----------------------------------------------------------------------
    def __getitem__(self, name: str | GlobalVar) -> Function:
        key = name.name if isinstance(name, GlobalVar) else name.lstrip("@")
        return self.functions[key]

    def __contains__(self, name: str | GlobalVar) -> bool:
        key = name.name if isinstance(name, GlobalVar) else name.lstrip("@")
        return key in self.functions

    @property
    def constructors(self) -> dict[str, Constructor]:
        """Every constructor of every ADT, by name."""
        return {c.name: c for td in self.type_definitions.values() for c in td.constructors}

    def type_data_of(self, ctor: Constructor) -> TypeData:
        return self.type_definitions[ctor.belong_to.name]

    def type_of(self, expr: Expr) -> Type:
        """The inferred type of ``expr`` (a node of this module); needs ``infer_types``."""
        try:
            return self.checked_types[expr]
        except KeyError:
            raise KeyError("no type recorded for this expression; run relay_ref.infer_types "
                           "on the module first") from None

    # -- functional updates -----------------------------------------------------------
    def with_function(self, name: str, fn: Function) -> IRModule:
        functions = dict(self.functions)
        functions[name] = fn
        return replace(self, functions=functions, checked_types={}, global_types={},
                       casts=None)

    def with_type(self, td: TypeData) -> IRModule:
        types = dict(self.type_definitions)
        types[td.name] = td
        return replace(self, type_definitions=types, checked_types={}, global_types={},
                       casts=None)

    def with_types(self, checked: dict[Expr, Type], global_types: dict[str, Type],
                   casts: object | None = None) -> IRModule:
        return replace(self, checked_types=checked, global_types=global_types, casts=casts)
