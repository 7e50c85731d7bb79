"""A conservative effect analysis, shared by the passes that drop or move code.

Relay's only side effects are on references. For an expression ``e`` (evaluated, not
applied: a function literal's body is *not* part of its evaluation) the analysis answers:

* ``writes(e)``: evaluating ``e`` may write a reference (``ref_write``), possibly through
  a call. Dropping an unused ``let`` whose value does not write is safe
  (DeadCodeElimination): nothing else can observe its evaluation except failure or
  non-termination, and removing those only *refines* the program.
* ``stateful(e)``: evaluating ``e`` may create, read or write a reference. A value that is
  not stateful may be moved, shared or dropped freely (ToGraphNormalForm, CSE): its value
  does not depend on when, or how often, it is computed.

Calls are where the analysis is conservative. A call of an ``Op`` or a ``Constructor`` has
no effect of its own (no registered operator is stateful; ``STATEFUL_OPS`` lists names that
would be). A call of a global uses the global's summary, computed as a least fixpoint over
the module's call graph (mutual recursion included). A call of a let-bound function literal
(``let %f = fn ...; %f(x)``) or of a literal in call position uses the summary of that
function's body; a recursive reference to a function whose summary is being computed
counts as *may write, stateful* (safe, never wrong). A call of anything else (a parameter,
a pattern variable, the result of another call, a projection) may do anything.
"""

from __future__ import annotations

from relay_ref.deepstack import run_deep
from relay_ref.ir.expr import (
    Call,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Var,
    children,
)
from relay_ref.ir.module import IRModule

#: Operators whose calls have effects (TVM's ``TOpIsStateful``). None is registered today.
STATEFUL_OPS: frozenset[str] = frozenset()

_PURE = (False, False)  # (writes, stateful)
_ANY = (True, True)


class Effects:
    """Effect summaries of the expressions of one module (see the module docstring).
    Memoised by node identity: linear in the size of the graph for all queries together."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.globals: dict[str, tuple[bool, bool]] = {}
        self.local_fns: dict[Var, Function] = {}   # let-bound function literals
        self.memo: dict[int, tuple[bool, bool]] = {}
        self._body: dict[int, tuple[bool, bool]] = {}  # Function id -> body summary
        self._busy: set[int] = set()
        self._keep: list[Expr] = []
        run_deep(self._global_fixpoint)

    # -- queries -------------------------------------------------------------------------
    def writes(self, expr: Expr) -> bool:
        """May evaluating ``expr`` write a reference?"""
        return self.summary(expr)[0]

    def stateful(self, expr: Expr) -> bool:
        """May evaluating ``expr`` create, read or write a reference?"""
        return self.summary(expr)[1]

    def summary(self, expr: Expr) -> tuple[bool, bool]:
        return run_deep(lambda: self._eval(expr))

    # -- the analysis ----------------------------------------------------------------------
    def _global_fixpoint(self) -> None:
        names = list(self.mod.functions)
        self.globals = {n: _PURE for n in names}
        changed = True
        while changed:  # monotone: each round only turns flags on
            changed = False
            self.memo.clear()
            self._body.clear()
            for n in names:
                new = self._eval(self.mod.functions[n].body)
                if new != self.globals[n]:
                    self.globals[n] = new
                    changed = True
        self.memo.clear()
        self._body.clear()

    def _eval(self, expr: Expr) -> tuple[bool, bool]:
        key = id(expr)
        got = self.memo.get(key)
        if got is not None:
            return got
        match expr:
            case Function():
                out = _PURE  # a closure is made; its body does not run
            case Let(var, value, body):
                if isinstance(value, Function):
                    self.local_fns[var] = value
                out = _join(self._eval(value), self._eval(body))
            case RefWrite(ref, value):
                out = _join(_ANY, self._eval(ref), self._eval(value))
            case RefCreate() | RefRead():
                out = _join((False, True), *map(self._eval, children(expr)))
            case Call(op, args):
                out = _join(self._callee(op), *map(self._eval, args))
                if not isinstance(op, Function):
                    out = _join(out, self._eval(op))
            case _:
                out = _join(_PURE, *map(self._eval, children(expr)))
        self.memo[key] = out
        self._keep.append(expr)
        return out

    def _callee(self, op: Expr) -> tuple[bool, bool]:
        """The effects of applying ``op`` (beyond evaluating it)."""
        match op:
            case Op(name):
                return _ANY if name in STATEFUL_OPS else _PURE
            case Constructor():
                return _PURE
            case GlobalVar(name):
                return self.globals.get(name, _ANY)
            case Function():
                return self._fn_body(op)
            case Var() if op in self.local_fns:
                return self._fn_body(self.local_fns[op])
        return _ANY

    def _fn_body(self, fn: Function) -> tuple[bool, bool]:
        key = id(fn)
        got = self._body.get(key)
        if got is not None:
            return got
        if key in self._busy:
            return _ANY  # recursion: conservative (see the module docstring)
        self._busy.add(key)
        try:
            out = self._eval(fn.body)
        finally:
            self._busy.discard(key)
        self._body[key] = out
        return out


def _join(*parts: tuple[bool, bool]) -> tuple[bool, bool]:
    return (any(p[0] for p in parts), any(p[1] for p in parts))
