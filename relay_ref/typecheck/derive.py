"""Typing derivations: the proof tree of ``Δ; Γ ⊢ e : τ`` the checker builds (for teaching).

``derive(module, "main")`` type-checks ``module`` (rule T-Module) and returns the derivation of
``@main``'s definition; ``derive_expr(expr, module, var_types)`` that of one expression (the
kernel's ``:derive``). A ``Derivation`` node holds the rule applied (as named in
spec/typing.md: ``T-Let``, ``T-App-Op``, ``TP-Ctor`` ...), a one-line summary of the
expression, its type after inference, its premises, the holes the rule created (``?t3``) and
how each was solved (``?t3 := Tensor[(2, 5), float32] by T-Rel Broadcast at %x + %y``), and
every run of a type relation it queued, with the types the relation saw and its answer,
"not yet" included (rule T-Rel, spec/typing.md 6.2). ``render_text`` and ``render_html``
draw the tree, elided past a depth and a number of nodes, with counts.

How it works: ``_DerivingChecker`` is the checker (``infer._Checker``) with the rule dispatch
wrapped, as the interpreter's tracing wraps its rules: ``infer`` (every expression rule),
``infer_function`` / ``bind_let`` (a function literal or a let binding reached without
``infer``), ``check_pattern`` (the TP-* rules) open a frame around the rule they run; the
unifier's ``fresh`` names the holes a frame creates; the unifier's bind hook and the
``unify`` wrapper record which rule solved each hole; the constraint factories
(``relation``, ``projection``) return recording constraints. The plain checker is untouched
by all this: checking without a derivation costs nothing more.

Invariants:
* Frames are opened and closed in the checker's own walk, so premises come in the order the
  checker derives them (spec 6: the rules read from conclusion to premises). A node reached
  again (a graph binding shared by several uses, spec 3.6) is derived once; later uses are
  ``T-Shared`` leaves naming the first node's ``index``. So a derivation has one node per
  use of an expression node and its size is linear in the program's (a 3 000-block residual
  chain included); each node's texts are bounded (``short_text``, ``show``'s 200 parts).
* Types are shown after inference (resolved at the fixpoint); a hole still unsolved shows by
  its name. A relation's inputs are shown as they were when it ran.
* Nothing here recurses on the tree: frames are turned into ``Derivation`` nodes and
  rendered with explicit stacks, so a 10 000-binding let chain derives and renders.
  Checking itself runs on ``run_deep``'s big stack, as ``infer_types`` does.
* Errors never stop the walk (spec 6.4): each diagnostic is attached to the node whose rule
  failed, and ``Derivation.error`` of the root carries the located ``RelayTypeError``.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import Diagnostic, RelayTypeError
from relay_ref.ir.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.type_text import type_to_text
from relay_ref.ir.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TupleType,
    Type,
    TypeCall,
)
from relay_ref.ops.registry import NOT_YET, OpDef, Solved
from relay_ref.rules import link_rules, rule_html
from relay_ref.syntax._walk import no_gc
from relay_ref.syntax.short_text import pattern_text, short_text
from relay_ref.typecheck.infer import _Checker, _guarded, _OpRelation, _Projection
from relay_ref.typecheck.solver import Constraint, Failure, Solver
from relay_ref.typecheck.unify import SHOW_PARTS, Unifier, _children, _same

__all__ = ["Derivation", "HoleNote", "RelationCall", "derive", "derive_expr", "render_html",
           "render_text"]


# -- the tree ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HoleNote:
    """A hole a rule created: ``name`` (``?t3``), what it stands for when the rule says
    (``what``: ``type of %x``, ``instance of A``), the type it stands for after inference
    (``solution``, empty when unsolved) and what solved it (``by``: ``T-Rel Broadcast at
    %x + %y``, ``T-App at @f(%x)``)."""

    name: str
    solution: str
    by: str
    what: str = ""

    def __str__(self) -> str:
        name = f"{self.name} ({self.what})" if self.what else self.name
        if not self.solution:
            return f"hole {name} unsolved{f' ({self.by})' if self.by else ''}"
        return f"hole {name} := {self.solution}" + (f"  by {self.by}" if self.by else "")


@dataclass(frozen=True, slots=True)
class RelationCall:
    """One run of an operator's type relation (T-Rel): ``inputs`` are the argument types
    then the result type as the relation saw them, ``answer`` what it said (``?t2 :=
    Tensor[(2, 5), float32]``, ``not yet (waits on ?t1)``, ``fails: ...``)."""

    relation: str
    op: str
    inputs: tuple[str, ...]
    answer: str

    def __str__(self) -> str:
        return f"T-Rel  {self.relation}({', '.join(self.inputs)}): {self.answer}"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Derivation:
    """One node of a typing derivation (see the module docstring).

    ``index`` numbers nodes in pre-order; a ``T-Shared`` node's ``shared_with`` is the index
    of the node where the shared expression was derived, and that node has ``shared``.
    ``size`` counts the nodes of this subtree. ``error`` (the root only) is the checker's
    ``RelayTypeError`` when the program is ill-typed; ``errors`` are the messages of the
    rules that failed at this node."""

    rule: str
    expr: str
    type_text: str
    ty: Type | None
    premises: tuple[Derivation, ...]
    holes: tuple[HoleNote, ...]
    relations: tuple[RelationCall, ...]
    errors: tuple[str, ...]
    index: int
    size: int
    shared: bool = False
    shared_with: int | None = None
    error: RelayTypeError | None = None

    @property
    def ok(self) -> bool:
        """Whether the judgement holds (no rule failed anywhere)."""
        return self.error is None

    def walk(self) -> Iterator[Derivation]:
        """Every node, in pre-order (iteratively)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.premises))

    def __repr__(self) -> str:
        return f"<Derivation {self.rule} {self.expr!r} : {self.type_text} ({self.size} nodes)>"

    def __str__(self) -> str:
        return render_text(self)


# -- entry points -----------------------------------------------------------------------------

def derive(module: IRModule, global_name: str = "main") -> Derivation:
    """The derivation of global ``@global_name``'s definition in ``module`` (the whole
    module is checked, T-Module; only that global's rules are recorded). Never raises a
    ``RelayTypeError``: an ill-typed program gives the tree up to and including the failed
    rules, with ``error`` set. Raises ``KeyError`` when ``module`` has no such global."""
    if global_name not in module.functions:
        names = ", ".join(f"@{n}" for n in module.functions) or "none"
        raise KeyError(f"the module has no global @{global_name} (its globals: {names})")

    def body() -> Derivation:
        checker = _DerivingChecker(module, target=global_name)
        error = _run(lambda c: c.check_module(module), checker)
        return checker.rec.tree(checker, error)

    with no_gc():
        return run_deep(body)


def derive_expr(expr: Expr, module: IRModule | None = None,
                var_types: dict[Var, Type] | None = None) -> Derivation:
    """The derivation of ``expr`` in the context of ``module`` (its globals and ADTs), its
    free variables typed by ``var_types`` (else their annotation, else inferred), as
    ``infer_expr`` checks it. Never raises a ``RelayTypeError`` (see ``derive``)."""
    mod = module if module is not None else IRModule()

    def body() -> Derivation:
        checker = _DerivingChecker(mod, target=None)
        error = _run(lambda c: c.check_expr(expr, dict(var_types or {})), checker)
        return checker.rec.tree(checker, error)

    with no_gc():
        return run_deep(body)


def _run(body: Callable[[_Checker], object], checker: _DerivingChecker) -> RelayTypeError | None:
    try:
        _guarded(body, checker)
    except RelayTypeError as err:
        return err
    return None


# -- recording --------------------------------------------------------------------------------

class _Frame:
    """A derivation node while the checker builds it (mutable; frozen by ``tree``)."""

    __slots__ = ("rule", "node", "text", "ty", "children", "holes", "relations", "errors",
                 "index", "shared_with")

    def __init__(self, rule: str, node: object, index: int, text: str | None = None,
                 ty: Type | None = None) -> None:
        self.rule, self.node, self.index, self.text, self.ty = rule, node, index, text, ty
        self.children: list[_Frame] = []
        self.holes: list[IncompleteType] = []
        self.relations: list[RelationCall] = []
        self.errors: list[str] = []
        self.shared_with: int | None = None


# Leaves re-derived at every use (their rule is cheap and says more than T-Shared).
_LEAF_RULES = {Var: "T-Var", GlobalVar: "T-Global", Constant: "T-Const",
               Constructor: "T-Constructor", Op: "T-Op"}
_RULES = {**_LEAF_RULES, Tuple: "T-Tuple", TupleGetItem: "T-Proj", Let: "T-Let",
          Function: "T-Fn", If: "T-If", Match: "T-Match", RefCreate: "T-Ref",
          RefRead: "T-ReadRef", RefWrite: "T-WriteRef"}
# Pattern typing Δ ⊢ p : τ ⇒ Γ' (spec/typing.md 3.13).
_PATTERN_RULES = {PatternWildcard: "TP-Wild", PatternVar: "TP-Var",
                  PatternConstructor: "TP-Ctor", PatternTuple: "TP-Tuple"}


def _rule_of(expr: Expr) -> str:
    if isinstance(expr, Call):
        return "T-App-Op" if isinstance(expr.op, Op) else "T-App"
    return _RULES.get(type(expr), type(expr).__name__)


def _node_text(node: object) -> str:
    if isinstance(node, Clause):
        return pattern_text(node.lhs)
    if isinstance(node, Pattern):
        return pattern_text(node)
    if isinstance(node, Expr):
        return short_text(node)
    return ""


class _Recorder:
    """Frames, hole names and what solved each hole, for one derivation."""

    def __init__(self) -> None:
        self.stack: list[_Frame] = []
        self.roots: list[_Frame] = []
        self.count = 0
        self.frame_of: dict[int, _Frame] = {}      # id(node) -> the frame that derived it
        self.names: dict[int, str] = {}            # hole uid -> "?tN"
        self.holes: dict[int, IncompleteType] = {}
        self.loose: list[IncompleteType] = []      # holes made outside any frame
        # Holes of a function's declared type (header_of), kept for its T-Fn frame: the
        # header of a let-bound literal or a global is made before that frame opens.
        self.collect: list[IncompleteType] | None = None
        self.headers: dict[int, list[IncompleteType]] = {}
        self.labels: list[str] = []                # what the next holes made stand for
        self.what: dict[int, str] = {}             # hole uid -> what it stands for
        self.solved_by: dict[int, tuple[str, object]] = {}  # uid -> (rule, node)
        self.causes: list[tuple[str, object]] = []  # innermost last
        self.error_frame: _Frame | None = None
        self.error_where: object = None
        self.loose_errors: list[str] = []

    # frames
    def open(self, rule: str, node: object, text: str | None = None,
             ty: Type | None = None) -> _Frame:
        self.count += 1
        frame = _Frame(rule, node, self.count, text, ty)
        (self.stack[-1].children if self.stack else self.roots).append(frame)
        self.stack.append(frame)
        self.frame_of.setdefault(id(node), frame)
        return frame

    def close(self, frame: _Frame) -> None:
        while self.stack and self.stack.pop() is not frame:
            pass

    def close_to(self, depth: int) -> None:
        del self.stack[depth:]

    # holes
    def name(self, uid: int) -> str:
        name = self.names.get(uid)
        if name is None:
            name = self.names[uid] = f"?t{len(self.names) + 1}"
        return name

    def new_hole(self, hole: IncompleteType) -> None:
        self.name(hole.uid)
        self.holes[hole.uid] = hole
        if self.labels:
            self.what[hole.uid] = self.labels.pop(0)
        if self.collect is not None:
            self.collect.append(hole)
        else:
            (self.stack[-1].holes if self.stack else self.loose).append(hole)

    def bound(self, uid: int) -> None:
        if uid in self.holes:
            if self.causes:
                self.solved_by[uid] = self.causes[-1]
            elif self.stack:
                self.solved_by[uid] = (self.stack[-1].rule, self.stack[-1].node)

    # errors
    def note_error(self, diagnostic: Diagnostic) -> None:
        frame = self.error_frame or (self.stack[-1] if self.stack else None) \
            or self.frame_of.get(id(self.error_where))
        (frame.errors if frame is not None else self.loose_errors).append(diagnostic.message)

    # type text
    def text(self, ty: Type | None) -> str:
        """Relay text of ``ty`` with holes by name (``?t3``), at most ``SHOW_PARTS``
        composite types shown (as ``unify.show``)."""
        if ty is None:
            return "_"
        try:
            return type_to_text(self._named(ty, [SHOW_PARTS]))
        except Exception:  # noqa: BLE001 - a derivation must never fail to show a type
            return repr(ty)

    def _named(self, ty: Type, budget: list[int]) -> Type:
        if isinstance(ty, IncompleteType):
            return GlobalTypeVar(self.name(ty.uid))
        children = _children(ty)
        if not children:
            return ty
        if budget[0] <= 0:
            return GlobalTypeVar("...")
        budget[0] -= 1
        new = tuple(self._named(c, budget) for c in children)
        if _same(new, children):
            return ty
        match ty:
            case TupleType():
                return TupleType(new)
            case FuncType(_, _, params):
                return FuncType(new[:-1], new[-1], params)
            case TypeCall(func):
                return TypeCall(func, new)
            case RefType():
                return RefType(new[0])
        return ty

    # the frozen tree
    def tree(self, checker: _DerivingChecker, error: RelayTypeError | None) -> Derivation:
        """Freeze the frames (post-order, iteratively) into ``Derivation`` nodes."""
        unifier = checker.unifier
        if not self.roots:
            root = _Frame("T-Module", None, 0, text="(nothing derived)")
        else:
            root = self.roots[0]
        root.holes[:0] = self.loose
        root.errors.extend(self.loose_errors)
        shared = {f.shared_with for f in self.frame_of.values() if f.shared_with is not None}
        # shared_with is set on T-Shared frames, which frame_of may not hold: scan them.
        done: dict[int, Derivation] = {}
        stack: list[tuple[_Frame, bool]] = [(root, False)]
        while stack:
            frame, expanded = stack.pop()
            if not expanded:
                stack.append((frame, True))
                stack.extend((c, False) for c in reversed(frame.children))
                if frame.shared_with is not None:
                    shared.add(frame.shared_with)
                continue
            premises = tuple(done.pop(id(c)) for c in frame.children)
            ty = frame.ty if frame.ty is not None else checker.types.get(frame.node)
            if ty is not None:
                ty = unifier.resolve(ty)
            done[id(frame)] = Derivation(
                rule=frame.rule,
                expr=frame.text if frame.text is not None else _node_text(frame.node),
                type_text=self.text(ty) if ty is not None else "",
                ty=ty,
                premises=premises,
                holes=tuple(self._hole_note(h, checker) for h in frame.holes),
                relations=tuple(frame.relations),
                errors=tuple(frame.errors),
                index=frame.index,
                size=1 + sum(p.size for p in premises),
                shared_with=frame.shared_with,
                error=error if frame is root else None)
        tree = done[id(root)]
        if shared:
            tree = _mark_shared(tree, shared)
        return tree

    def _hole_note(self, hole: IncompleteType, checker: _DerivingChecker) -> HoleNote:
        name = self.name(hole.uid)
        solution = checker.unifier.resolve(hole)
        if solution is hole or (isinstance(solution, IncompleteType)
                                and solution.uid == hole.uid):
            return HoleNote(name, "", "error recovery" if hole.uid in checker.poisoned
                            else "", self.what.get(hole.uid, ""))
        by = ""
        cause = self.solved_by.get(hole.uid)
        if cause is not None:
            rule, node = cause
            where = _node_text(node)
            by = f"{rule} at {where}" if where else rule
        return HoleNote(name, self.text(solution), by, self.what.get(hole.uid, ""))


def _mark_shared(tree: Derivation, shared: set[int]) -> Derivation:
    """``tree`` with ``shared`` set on the nodes whose index is in ``shared`` (rebuilt
    bottom-up, iteratively; untouched subtrees are kept)."""
    from dataclasses import replace

    done: dict[int, Derivation] = {}
    stack: list[tuple[Derivation, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if not expanded:
            stack.append((node, True))
            stack.extend((p, False) for p in node.premises)
            continue
        premises = tuple(done.pop(id(p)) for p in node.premises)
        changed = node.index in shared or any(a is not b for a, b in
                                              zip(premises, node.premises, strict=True))
        done[id(node)] = replace(node, premises=premises, shared=node.index in shared) \
            if changed else node
    return done[id(tree)]


class _RecordingUnifier(Unifier):
    """Names every hole made while the target is being derived (and where)."""

    def __init__(self, checker: _DerivingChecker) -> None:
        super().__init__()
        self.checker = checker

    def fresh(self, kind: Kind = Kind.Type) -> IncompleteType:
        hole = super().fresh(kind)
        if self.checker.recording:
            self.checker.rec.new_hole(hole)
        return hole

    def instantiate(self, fn: FuncType, type_args: tuple[Type, ...] | None = None) -> FuncType:
        if type_args is None and fn.type_params and self.checker.recording:
            self.checker.rec.labels = [f"instance of {tp.name}" for tp in fn.type_params]
        try:
            return super().instantiate(fn, type_args)
        finally:
            self.checker.rec.labels = []


class _RecordedRelation(_OpRelation):
    """T-App-Op / T-Op's relation, each run recorded as a T-Rel premise of its use."""

    rec: _Recorder

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        self.rec.causes.append((f"T-Rel {_relation_name(self.op)}", self.expr))
        try:
            return super().run(unifier)
        finally:
            self.rec.causes.pop()

    def _ask(self, types: list[Type]) -> Solved | object:
        try:
            answer = super()._ask(types)
        except Failure:
            self._record(types, "fails (the error below)")
            raise
        if answer is NOT_YET:
            waits = [self.rec.text(h) for t in types for h in _holes(t)]
            self._record(types, "not yet" + (f" (waits on {', '.join(dict.fromkeys(waits))})"
                                             if waits else ""))
        else:
            assert isinstance(answer, Solved)
            parts = []
            for index, ty in answer.assign:
                now = types[index]
                what = (self.rec.text(now) if isinstance(now, IncompleteType)
                        else "result" if index == len(types) - 1 else f"argument {index}")
                parts.append(f"{what} := {self.rec.text(ty)}")
            text = "; ".join(parts) if parts else "holds"
            self._record(types, text if answer.done else
                         f"{text} (pending: runs again when a hole is solved)")
        return answer

    def _record(self, types: list[Type], answer: str) -> None:
        frame = self.rec.frame_of.get(id(self.expr))
        call = RelationCall(_relation_name(self.op), self.op.name,
                            tuple(self.rec.text(t) for t in types), answer)
        if frame is not None:
            frame.relations.append(call)


class _RecordedProjection(_Projection):
    """A deferred T-Proj: what it binds is solved "by T-Proj"."""

    rec: _Recorder

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        self.rec.causes.append(("T-Proj", self.expr))
        try:
            return super().run(unifier)
        finally:
            self.rec.causes.pop()


def _relation_name(op: OpDef) -> str:
    return op.relation_name or op.name


def _holes(ty: Type) -> list[IncompleteType]:
    """The holes in a resolved type (each composite object walked once)."""
    out: list[IncompleteType] = []
    seen: set[int] = set()
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, IncompleteType):
            out.append(t)
        elif id(t) not in seen:
            seen.add(id(t))
            stack.extend(reversed(_children(t)))
    return out


class _NotedDiagnostics(list):
    """The checker's diagnostics list; each one appended is attached to a frame too."""

    def __init__(self, rec: _Recorder) -> None:
        super().__init__()
        self.rec = rec

    def append(self, diagnostic: Diagnostic) -> None:  # type: ignore[override]
        super().append(diagnostic)
        self.rec.note_error(diagnostic)


class _DerivingChecker(_Checker):
    """The checker with its rules wrapped in frames (see the module docstring).
    ``target``: the global whose derivation is recorded, or None for an expression."""

    def __init__(self, mod: IRModule, target: str | None) -> None:
        super().__init__(mod, free_vars_ok=target is None)
        self.target = target
        self.rec = _Recorder()
        self.unifier = _RecordingUnifier(self)
        self.solver = Solver(self.unifier, self._constraint_failed)
        wake, rec = self.unifier.on_bind, self.rec
        assert wake is not None

        def on_bind(uid: int) -> None:
            rec.bound(uid)
            wake(uid)

        self.unifier.on_bind = on_bind
        self.diagnostics = _NotedDiagnostics(self.rec)

    @property
    def recording(self) -> bool:
        return self.target is None or self.owner == self.target

    # -- the rule dispatch, wrapped ----------------------------------------------------------
    def infer(self, expr: Expr) -> Type:
        if not self.recording:
            return super().infer(expr)
        rec = self.rec
        known = self.types._items.get(id(expr))
        if known is not None:  # a use of a binder, a global ... or a shared node (T-Shared)
            leaf = _LEAF_RULES.get(type(expr))
            frame = rec.open(leaf or "T-Shared", expr)
            if leaf is None:
                first = rec.frame_of.get(id(expr))
                frame.shared_with = first.index if first is not frame else None
            rec.close(frame)
            return known[1]
        frame = rec.open(_rule_of(expr), expr)
        try:
            return super().infer(expr)
        finally:
            rec.close(frame)

    def header_of(self, fn: Function) -> FuncType:
        rec = self.rec
        if not self.recording or id(fn) in self.fn_headers or rec.collect is not None:
            return super().header_of(fn)
        rec.collect = []
        rec.labels = [f"type of %{p.name_hint}" for p in fn.params if p.type_annotation is None]
        if fn.ret_type is None:
            rec.labels.append("return type")
        try:
            return super().header_of(fn)
        finally:
            rec.headers[id(fn)], rec.collect, rec.labels = rec.collect, None, []

    def infer_function(self, fn: Function, header: FuncType) -> FuncType:
        rec = self.rec
        if not self.recording:
            return super().infer_function(fn, header)
        if rec.stack and rec.stack[-1].node is fn:  # opened by infer (a literal)
            rec.stack[-1].holes[:0] = rec.headers.pop(id(fn), ())
            return super().infer_function(fn, header)
        text = None
        if not rec.stack and self.target is not None:  # the global's definition: the root
            text = f"@{self.target} = {short_text(fn, 60)}"
        frame = rec.open("T-Fn", fn, text=text)
        frame.holes[:0] = rec.headers.pop(id(fn), ())
        try:
            return super().infer_function(fn, header)
        finally:
            rec.close(frame)

    def bind_let(self, let: Let) -> None:
        # The second and later lets of a chain (infer_let walks it iteratively): each opens
        # a T-Let frame that stays open for the rest of the chain (closed by infer_let).
        if self.recording and not (self.rec.stack and self.rec.stack[-1].node is let):
            self.rec.open("T-Let", let)
        super().bind_let(let)

    def infer_let(self, expr: Let) -> Type:
        depth = len(self.rec.stack)
        try:
            return super().infer_let(expr)
        finally:
            if self.recording:
                self.rec.close_to(depth)

    def check_pattern(self, pattern: Pattern, expected: Type, clause: Clause) -> bool:
        if not self.recording:
            return super().check_pattern(pattern, expected, clause)
        frame = self.rec.open(_PATTERN_RULES.get(type(pattern), "TP-Wild"), pattern,
                              ty=expected)
        if isinstance(pattern, PatternConstructor):
            td = self.adts.get(pattern.constructor.belong_to.name)
            self.rec.labels = [f"instance of {tv.name}" for tv in td.type_vars] if td else []
        elif isinstance(pattern, PatternTuple):
            self.rec.labels = [f"field {i}" for i in range(len(pattern.patterns))]
        try:
            return super().check_pattern(pattern, expected, clause)
        finally:
            self.rec.labels = []
            self.rec.close(frame)

    # -- what solved each hole, and where errors go -------------------------------------------
    def unify(self, found: Type, expected: Type, where: object, rule: str, what: str = "",
              notes: tuple = (), parent: object | None = None) -> bool:
        self.rec.causes.append((rule, where))
        try:
            return super().unify(found, expected, where, rule, what, notes, parent)
        finally:
            self.rec.causes.pop()

    def error(self, where: object, message: str, rule: str, notes: tuple = (),
              parent: object | None = None) -> None:
        self.rec.error_where = where
        try:
            super().error(where, message, rule, notes, parent)
        finally:
            self.rec.error_where = None

    def _constraint_failed(self, constraint: Constraint, diagnostic: Diagnostic) -> None:
        self.rec.error_frame = self.rec.frame_of.get(id(constraint.expr))
        try:
            super()._constraint_failed(constraint, diagnostic)
        finally:
            self.rec.error_frame = None

    # -- recording constraints ----------------------------------------------------------------
    def relation(self, use: Expr, op: OpDef, attrs: object, args: list[Type],
                 out: Type) -> _OpRelation:
        if not self.recording:
            return super().relation(use, op, attrs, args, out)
        constraint = _RecordedRelation(use, op, attrs, args, out, self.owner)
        constraint.rec = self.rec
        return constraint

    def projection(self, proj: TupleGetItem, tuple_type: Type, out: Type) -> _Projection:
        if not self.recording:
            return super().projection(proj, tuple_type, out)
        constraint = _RecordedProjection(proj, tuple_type, out, self.owner)
        constraint.rec = self.rec
        return constraint


# -- rendering --------------------------------------------------------------------------------

MAX_DEPTH = 40
"""Default depth past which ``render_text`` / ``render_html`` elide premises."""
MAX_NODES = 2000
"""Default number of nodes ``render_text`` / ``render_html`` show."""


def _head(node: Derivation) -> str:
    typ = f" : {node.type_text}" if node.type_text else ""
    if node.shared_with is not None:
        return f"{node.rule}  {node.expr}{typ}  (typed once, see #{node.shared_with} above)"
    return f"{node.rule}  {node.expr}{typ}" + (f"  [#{node.index}]" if node.shared else "")


def _details(node: Derivation) -> tuple[list[str], list[str], list[str]]:
    """The lines under a node's head other than its premises' (holes, relations, errors)."""
    return ([str(h) for h in node.holes], [str(r) for r in node.relations],
            [f"error: {e}" for e in node.errors])


def render_text(tree: Derivation, max_depth: int = MAX_DEPTH,
                max_nodes: int = MAX_NODES) -> str:
    """The derivation as indented text, one node per line (``RULE  expr : type``): below
    it the holes it created, then its premises, then its relation runs and errors.
    Premises deeper than ``max_depth`` levels are replaced by a line counting them, and at
    most ``max_nodes`` nodes are shown (then a count of the rest); the output is linear in
    the nodes shown."""
    lines: list[str] = []
    shown = elided = 0
    # Work list, last first: a node (with its depth) or the lines to write after the
    # premises of a node already written.
    stack: list[tuple[Derivation, int] | list[str]] = [(tree, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            lines.extend(item)
            continue
        node, depth = item
        if shown >= max_nodes:
            rest = tree.size - shown - elided
            lines.append(f"... {rest} more node{'s' if rest != 1 else ''} not shown "
                         f"(at most {max_nodes})")
            stack = [s for s in stack if isinstance(s, list)]
            continue
        shown += 1
        pad = "  " * depth
        lines.append(pad + _head(node))
        holes, relations, errors = _details(node)
        lines.extend(f"{pad}  {h}" for h in holes)
        after = [f"{pad}  {line}" for line in (*relations, *errors)]
        if node.premises and depth >= max_depth:
            n = node.size - 1
            elided += n
            lines.append(f"{pad}  ... {n} premise node{'s' if n != 1 else ''} elided "
                         f"(deeper than {max_depth} level{'s' if max_depth != 1 else ''})")
            lines.extend(after)
            continue
        if after:
            stack.append(after)
        stack.extend((p, depth + 1) for p in reversed(node.premises))
    return "\n".join(lines)


def render_html(tree: Derivation, max_depth: int = MAX_DEPTH,
                max_nodes: int = MAX_NODES) -> str:
    """The derivation as a collapsible HTML tree (``<details>``/``<summary>`` per node with
    premises; the first two levels open), for Jupyter. Rule names link to their text in
    spec/ (``relay_ref.rules.rule_html``). Elided as ``render_text``."""
    esc = html.escape
    out: list[str] = ["<div class='relay-derivation' style='font-family:monospace'>"]
    shown = elided = 0
    stack: list[tuple[Derivation | str, int]] = [(tree, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node = item
        if shown >= max_nodes:
            rest = tree.size - shown - elided
            out.append(f"<div>... {rest} more node{'s' if rest != 1 else ''} not shown "
                       f"(at most {max_nodes})</div>")
            stack = [s for s in stack if isinstance(s[0], str)]  # close open tags
            continue
        shown += 1
        typ = f" : {esc(node.type_text)}" if node.type_text else ""
        if node.shared_with is not None:
            tail = (f" <i>(typed once, see <a href='#relay-d{node.shared_with}'>"
                    f"#{node.shared_with}</a> above)</i>")
        else:
            tail = f" <small>[#{node.index}]</small>" if node.shared else ""
        head = (f"<span id='relay-d{node.index}'>{rule_html(node.rule)}</span>&nbsp; "
                f"<code>{esc(node.expr)}</code>{typ}{tail}")
        holes, relations, errors = _details(node)
        body = [f"<div style='color:#555'>{link_rules(esc(h))}</div>" for h in holes]
        after = [f"<div style='color:#555'>{rule_html('T-Rel')}&nbsp; {esc(r[7:])}</div>"
                 for r in relations]
        after += [f"<div style='color:#b00'>{link_rules(esc(e))}</div>" for e in errors]
        if not node.premises and not holes and not after:
            out.append(f"<div style='margin-left:1.2em'>{head}</div>")
            continue
        opened = " open" if depth < 2 else ""
        out.append(f"<details{opened} style='margin-left:1.2em'><summary>{head}</summary>")
        out.extend(body)
        if node.premises and depth >= max_depth:
            n = node.size - 1
            elided += n
            out.append(f"<div>... {n} premise node{'s' if n != 1 else ''} elided "
                       f"(deeper than {max_depth} level{'s' if max_depth != 1 else ''})</div>")
            out.extend(after)
            out.append("</details>")
            continue
        stack.append(("".join(after) + "</details>", depth))
        stack.extend((p, depth + 1) for p in reversed(node.premises))
    out.append("</div>")
    return "".join(out)
