"""The prelude: Relay's standard library (``prelude.relay``), loaded on demand.

``load_prelude()`` parses ``prelude.relay`` once per process (with no fallback) and returns
the cached module. ``prelude_fallback()`` hands that module to the parser as its fallback
(``relay_ref.syntax.fallback.Fallback``), which gives DESIGN.md section 3's rule: a module
that uses a global, type or constructor it does not define itself gets the prelude's
definition, together with the transitive closure of what that definition uses. The parser
does not know the prelude; the public ``rr.parse(..., prelude=True)`` wires the two.
"""

from __future__ import annotations

import functools
from pathlib import Path

from relay_ref.ir import expr as E
from relay_ref.ir import types as T
from relay_ref.ir.module import IRModule, TypeData
from relay_ref.ir.visitor import post_order

__all__ = ["PRELUDE_PATH", "ModuleFallback", "load_prelude", "prelude_fallback"]

PRELUDE_PATH = Path(__file__).with_name("prelude.relay")


@functools.cache
def load_prelude() -> IRModule:
    """The parsed prelude module (shared; treat it as immutable)."""
    from relay_ref.syntax.parser import parse

    return parse(PRELUDE_PATH.read_text(), str(PRELUDE_PATH))


@functools.cache
def prelude_fallback() -> ModuleFallback:
    """The prelude as the parser's fallback (one per process, its tables computed once)."""
    return ModuleFallback(load_prelude())


class ModuleFallback:
    """A module offered as a parser fallback (implements ``Fallback``).

    ``closure`` follows the direct uses of each definition -- globals called, constructors
    and types named in annotations, type arguments and patterns -- computed once per
    instance; ``module`` must not change afterwards."""

    __slots__ = ("module", "constructors", "_deps")

    def __init__(self, module: IRModule) -> None:
        self.module = module
        self.constructors: dict[str, E.Constructor] = module.constructors
        self._deps: dict[str, set[str]] | None = None

    def closure(self, roots: frozenset[str]
                ) -> tuple[list[TypeData], list[tuple[str, E.Function]]]:
        """The definitions reachable from ``roots`` (``"@f"`` or ``"T"``), in module order."""
        deps = self._dependencies()
        seen: set[str] = set()
        work = [r for r in roots if r in deps]
        while work:
            name = work.pop()
            if name in seen:
                continue
            seen.add(name)
            work.extend(d for d in deps.get(name, ()) if d in deps and d not in seen)
        types = [td for n, td in self.module.type_definitions.items() if n in seen]
        funcs = [(n, fn) for n, fn in self.module.functions.items() if "@" + n in seen]
        return types, funcs

    def _dependencies(self) -> dict[str, set[str]]:
        """For each definition ("@f" or "T"), the names of the module it uses directly."""
        if self._deps is not None:
            return self._deps
        deps: dict[str, set[str]] = {}
        for name, td in self.module.type_definitions.items():
            used: set[str] = set()
            for ctor in td.constructors:
                for ty in ctor.inputs:
                    used |= _type_names(ty)
            deps[name] = used
        for name, fn in self.module.functions.items():
            used = set()
            for node in post_order(fn):
                match node:
                    case E.GlobalVar(gname):
                        used.add("@" + gname)
                    case E.Constructor():
                        used.add(node.belong_to.name)
                    case E.Var(_, ann) if ann is not None:
                        used |= _type_names(ann)
                    case E.Function(_, _, ret, _, _) if ret is not None:
                        used |= _type_names(ret)
                    case E.Call(_, _, _, targs):
                        for ty in targs:
                            used |= _type_names(ty)
                    case E.Match(_, clauses):
                        for clause in clauses:
                            used |= _pattern_names(clause.lhs)
            deps["@" + name] = used
        self._deps = deps
        return deps


def _type_names(ty: T.Type) -> set[str]:
    """The global type names ``ty`` mentions."""
    out: set[str] = set()
    stack = [ty]
    while stack:
        t = stack.pop()
        match t:
            case T.TypeCall(func, args):
                out.add(func.name)
                stack.extend(args)
            case T.GlobalTypeVar(name):
                out.add(name)
            case T.TupleType(fields):
                stack.extend(fields)
            case T.FuncType(args, ret):
                stack.extend(args)
                stack.append(ret)
            case T.RefType(value):
                stack.append(value)
    return out


def _pattern_names(p: E.Pattern) -> set[str]:
    """The global type names pattern ``p`` mentions (constructors' types, annotations)."""
    out: set[str] = set()
    stack = [p]
    while stack:
        q = stack.pop()
        match q:
            case E.PatternConstructor(ctor, pats):
                out.add(ctor.belong_to.name)
                stack.extend(pats)
            case E.PatternTuple(pats):
                stack.extend(pats)
            case E.PatternVar(var) if var.type_annotation is not None:
                out |= _type_names(var.type_annotation)
    return out
