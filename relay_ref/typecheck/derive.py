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

How it works: ``_DerivingChecker`` is the checker (``infer.Checker``) with the rule dispatch
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
import itertools
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
    type_children,
)
from relay_ref.ops.registry import NOT_YET, OpDef, Solved, attrs_items, get_op
from relay_ref.rules import link_rules, rule_html
from relay_ref.syntax.printer import attr_value_text
from relay_ref.syntax.short_text import graph_names, pattern_text, short_text
from relay_ref.trampoline import no_gc
from relay_ref.typecheck.casts import Site, needs_cast
from relay_ref.typecheck.infer import Checker, OpRelation, Projection, guarded
from relay_ref.typecheck.solver import Constraint, Failure, Solver
from relay_ref.typecheck.unify import SHOW_PARTS, Unifier

__all__ = ["Derivation", "HoleNote", "RelationCall", "derive", "derive_expr", "render_html",
           "render_text"]


# -- the tree ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HoleNote:
    """A hole a rule created: ``name`` (``?t3``), what it stands for when the rule says
    (``what``: ``type of %x``, ``instance of List's A``), the type it stands for after
    inference (``solution``, empty when unsolved), what it was bound to when it was bound
    (``bound_to``: another hole, ``?t3``, or a type as it was then) and the rule that bound
    it (``by``: ``T-Rel Broadcast at %x + %y``, ``T-App at @f(%x) in @main``)."""

    name: str
    solution: str
    by: str
    what: str = ""
    bound_to: str = ""

    def __str__(self) -> str:
        name = f"{self.name} ({self.what})" if self.what else self.name
        if not self.solution:
            return f"hole {name} unsolved{f' ({self.by})' if self.by else ''}"
        by = f"  by {self.by}" if self.by else ""
        if self.bound_to and self.bound_to != self.solution:
            return f"hole {name} := {self.bound_to}{by} (= {self.solution})"
        return f"hole {name} := {self.solution}{by}"


@dataclass(frozen=True, slots=True)
class RelationCall:
    """One run of an operator's type relation (T-Rel, ``R(τ1…τn, τ; attrs)``): ``inputs``
    are the argument types then the result type as the relation saw them, ``attrs`` the
    call's non-default attributes as written (``newshape=[10]``), ``answer`` what it said
    (``?t2 := Tensor[(2, 5), float32]``, ``holds``, ``not yet (waits on ?t1)``,
    ``fails ...``)."""

    relation: str
    op: str
    inputs: tuple[str, ...]
    answer: str
    attrs: str = ""

    def call_text(self) -> str:
        """``R(τ1, …, τ; attrs): answer`` (the line without its rule name)."""
        attrs = f"; {self.attrs}" if self.attrs else ""
        return f"{self.relation}({', '.join(self.inputs)}{attrs}): {self.answer}"

    def __str__(self) -> str:
        return f"T-Rel  {self.call_text()}"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Derivation:
    """One node of a typing derivation (see the module docstring).

    ``index`` numbers nodes in pre-order; a ``T-Shared`` node's ``shared_with`` is the index
    of the node where the shared expression was derived, and that node has ``shared``.
    ``size`` counts the nodes of this subtree. ``error`` (the root only) is the checker's
    ``RelayTypeError`` when the program is ill-typed; ``errors`` are the messages of the
    rules that failed at this node; ``notes`` other facts the rule used (``T := int32
    (explicit type argument)``); ``outside`` (the root only) the errors the module check
    found in other globals (``@f: ...``), which are not part of this derivation."""

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
    notes: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()

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
        names = graph_names(module.functions[global_name])
        checker = _DerivingChecker(module, target=global_name, names=names)
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
        checker = _DerivingChecker(mod, target=None, names=graph_names(expr))
        error = _run(lambda c: c.check_expr(expr, dict(var_types or {})), checker)
        return checker.rec.tree(checker, error)

    with no_gc():
        return run_deep(body)


def _run(body: Callable[[Checker], object], checker: _DerivingChecker) -> RelayTypeError | None:
    try:
        guarded(body, checker)
    except RelayTypeError as err:
        return err
    return None


# -- recording --------------------------------------------------------------------------------

class _Frame:
    """A derivation node while the checker builds it (mutable; frozen by ``tree``)."""

    __slots__ = ("rule", "node", "text", "ty", "children", "holes", "relations", "errors",
                 "notes", "index", "shared_with", "where")

    def __init__(self, rule: str, node: object, index: int, text: str | None = None,
                 ty: Type | None = None) -> None:
        self.rule, self.node, self.index, self.text, self.ty = rule, node, index, text, ty
        self.children: list[_Frame] = []
        self.holes: list[IncompleteType] = []
        self.relations: list[RelationCall] = []
        self.errors: list[str] = []
        self.notes: list[str] = []
        self.shared_with: int | None = None
        #: an operator's type shown with its relation (T-Op): ``(name, its types)``
        self.where: tuple[str, tuple[Type, ...]] | None = None


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


def _node_text(node: object, names: dict[int, str]) -> str:
    """A node's one-line summary: shared nodes by their printed ``%N`` names, operator
    calls with their attributes."""
    if isinstance(node, Clause):
        return pattern_text(node.lhs)
    if isinstance(node, Pattern):
        return pattern_text(node)
    if isinstance(node, Expr):
        return short_text(node, names=names, attrs=True)
    return ""


class _Recorder:
    """Frames, hole names and what solved each hole, for one derivation."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names_of_nodes = names                # id(shared node) -> "%N" (graph_names)
        self.stack: list[_Frame] = []
        self.roots: list[_Frame] = []
        self.count = 0
        self.frame_of: dict[int, _Frame] = {}      # id(node) -> the frame that derived it
        self.names: dict[int, str] = {}            # hole uid -> "?tN"
        self.holes: dict[int, IncompleteType] = {}
        self.owner_of: dict[int, str | None] = {}  # hole uid -> the global it was made in
        self.loose: list[IncompleteType] = []      # holes made outside any frame
        # Holes of a function's declared type (header_of), kept for its T-Fn frame: the
        # header of a let-bound literal or a global is made before that frame opens.
        self.collect: list[IncompleteType] | None = None
        self.headers: dict[int, list[IncompleteType]] = {}
        self.labels: list[str] = []                # what the next holes made stand for
        self.what: dict[int, str] = {}             # hole uid -> what it stands for
        # uid -> (rule, node, global where it ran, what the hole was bound to then)
        self.solved_by: dict[int, tuple[str, object, str | None, str]] = {}
        self.causes: list[tuple[str, object]] = []  # innermost last
        self.error_frame: _Frame | None = None
        self.error_where: object = None
        self.loose_errors: list[str] = []          # errors of the derived code at no frame
        self.outside: list[str] = []               # errors of other globals
        # (site, frame): a rule's consistency premise (spec/typing.md 5.1), shown as a note
        self.consistency: list[tuple[Site, _Frame]] = []

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

    def new_hole(self, hole: IncompleteType, owner: str | None) -> None:
        self.name(hole.uid)
        self.holes[hole.uid] = hole
        self.owner_of[hole.uid] = owner
        if self.labels:
            self.what[hole.uid] = self.labels.pop(0)
        if self.collect is not None:
            self.collect.append(hole)
        else:
            (self.stack[-1].holes if self.stack else self.loose).append(hole)

    def bound(self, uid: int, unifier: Unifier, owner: str | None) -> None:
        """Hole ``uid`` was just bound: record by which rule, where, and to what (as it is
        now: the hole it was unified with, or the type it was given)."""
        hole = self.holes.get(uid)
        if hole is None:
            return
        if self.causes:
            rule, node = self.causes[-1]
        elif self.stack:
            rule, node = self.stack[-1].rule, self.stack[-1].node
        else:
            return
        self.solved_by[uid] = (rule, node, owner, self.text(unifier.resolve(hole)))

    # errors
    def note_error(self, diagnostic: Diagnostic, owner: str | None, recording: bool) -> None:
        """Attach an error to the frame of the rule that failed; an error of another global
        (``owner``, not the one derived) goes to ``outside``."""
        frame = self.error_frame or (self.stack[-1] if self.stack else None) \
            or self.frame_of.get(id(self.error_where))
        if frame is not None:
            frame.errors.append(diagnostic.message)
        elif recording:
            self.loose_errors.append(diagnostic.message)
        else:
            self.outside.append(f"@{owner}: {diagnostic.message}" if owner is not None
                                else diagnostic.message)

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
        children = type_children(ty)
        if not children:
            return ty
        if budget[0] <= 0:
            return GlobalTypeVar("...")
        budget[0] -= 1
        new = tuple(self._named(c, budget) for c in children)
        if all(a is b for a, b in zip(new, children, strict=True)):
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
        for site, at in self.consistency:
            note = self._consistency_note(site, unifier, checker)
            if note:
                at.notes.append(note)
        # The nodes later uses point back to (T-Shared frames' shared_with): one pass first,
        # so that each node is built once, already marked.
        shared: set[int] = set()
        scan = [root]
        while scan:
            frame = scan.pop()
            if frame.shared_with is not None:
                shared.add(frame.shared_with)
            scan.extend(frame.children)
        done: dict[int, Derivation] = {}
        stack: list[tuple[_Frame, bool]] = [(root, False)]
        while stack:
            frame, expanded = stack.pop()
            if not expanded:
                stack.append((frame, True))
                stack.extend((c, False) for c in reversed(frame.children))
                continue
            premises = tuple(done.pop(id(c)) for c in frame.children)
            ty = frame.ty if frame.ty is not None else checker.types.get(frame.node)
            if ty is not None:
                ty = unifier.resolve(ty)
            text = frame.text if frame.text is not None \
                else _node_text(frame.node, self.names_of_nodes)
            type_text = self.text(ty) if ty is not None else ""
            if frame.where is not None:  # fn[…](…) -> t where R(…) (spec/typing.md 3.10)
                name, types = frame.where
                type_text += (f" where {name}("
                              f"{', '.join(self.text(unifier.resolve(t)) for t in types)})")
            done[id(frame)] = Derivation(
                rule=frame.rule,
                expr=text,
                type_text=type_text,
                ty=ty,
                premises=premises,
                holes=tuple(self._hole_note(h, checker) for h in frame.holes),
                relations=tuple(frame.relations),
                errors=tuple(frame.errors),
                index=frame.index,
                size=1 + sum(p.size for p in premises),
                shared=frame.index in shared,
                shared_with=frame.shared_with,
                error=error if frame is root else None,
                notes=tuple(frame.notes),
                outside=tuple(self.outside) if frame is root else ())
        return done[id(root)]

    def _consistency_note(self, site: Site, unifier: Unifier, checker: Checker) -> str:
        """A rule's consistency premise ``τ ~ τ'`` where the two types differ (only by
        ``?``), and its cast point when the value's type is the less precise (spec/typing.md
        5.1); empty where they are equal (the premise is the equality of the rule)."""
        found, expected = unifier.resolve(site.found), unifier.resolve(site.expected)
        if found == expected:
            return ""
        ft, et = self.text(found), self.text(expected)
        what, _, covered = checker.cast_place(site)
        note = f"{site.rule} premise: {what} : {ft} ~ {et} (consistent, spec 5.1)"
        if needs_cast(found, expected):
            how = "the annotation check" if covered else "a cast"
            note += f"; cast point: checked against {et} at run time by {how} (Stuck-Cast)"
        return note

    def _hole_note(self, hole: IncompleteType, checker: _DerivingChecker) -> HoleNote:
        name = self.name(hole.uid)
        what = self.what.get(hole.uid, "")
        solution = checker.unifier.resolve(hole)
        if solution is hole or (isinstance(solution, IncompleteType)
                                and solution.uid == hole.uid):
            return HoleNote(name, "", "error recovery" if hole.uid in checker.poisoned
                            else "", what)
        by = bound_to = ""
        cause = self.solved_by.get(hole.uid)
        if cause is not None:
            rule, node, owner, bound_to = cause
            where = self.names_of_nodes.get(id(node)) or _node_text(node, self.names_of_nodes)
            by = f"{rule} at {where}" if where else rule
            if owner is not None and owner != self.owner_of.get(hole.uid):
                by += f" in @{owner}"  # solved while checking another global
        return HoleNote(name, self.text(solution), by, what, bound_to)


class _RecordingUnifier(Unifier):
    """Names every hole made while the target is being derived (and where)."""

    def __init__(self, checker: _DerivingChecker) -> None:
        super().__init__()
        self.checker = checker

    def fresh(self, kind: Kind = Kind.Type) -> IncompleteType:
        hole = super().fresh(kind)
        if self.checker.recording:
            self.checker.rec.new_hole(hole, self.checker.owner)
        return hole

    def instantiate(self, fn: FuncType, type_args: tuple[Type, ...] | None = None) -> FuncType:
        rec = self.checker.rec
        if fn.type_params and self.checker.recording:
            if type_args is None:
                rec.labels = [f"instance of {tp.name}" for tp in fn.type_params]
            elif rec.stack and len(type_args) == len(fn.type_params):
                # T-App with explicit type arguments: each type parameter := its argument.
                rec.stack[-1].notes.extend(
                    f"{tp.name} := {rec.text(arg)} (explicit type argument)"
                    for tp, arg in zip(fn.type_params, type_args, strict=True))
        try:
            return super().instantiate(fn, type_args)
        finally:
            self.checker.rec.labels = []


class _RecordedRelation(OpRelation):
    """T-App-Op / T-Op's relation, each run recorded as a T-Rel premise of its use."""

    rec: _Recorder
    frame: _Frame | None  # the frame of the use that queued it (T-App-Op, T-Op)

    def run(self, unifier: Unifier) -> list[IncompleteType] | None:
        self.rec.causes.append((f"T-Rel {_relation_name(self.op)}", self.at))
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
                given = self.rec.text(ty)
                if self.rec.text(now) == given:
                    continue  # assigns what is already there (Identity(?t2, ?t2)): holds
                what = (self.rec.text(now) if isinstance(now, IncompleteType)
                        else "result" if index == len(types) - 1 else f"argument {index}")
                parts.append(f"{what} := {given}")
            text = "; ".join(parts) if parts else "holds"
            self._record(types, text if answer.done else
                         f"{text} (pending: runs again when a hole is solved)")
        return answer

    def _record(self, types: list[Type], answer: str) -> None:
        frame = self.frame if self.frame is not None else self.rec.frame_of.get(id(self.expr))
        call = RelationCall(_relation_name(self.op), self.op.name,
                            tuple(self.rec.text(t) for t in types), answer,
                            _attrs_text(self.attrs))
        if frame is not None:
            frame.relations.append(call)


class _RecordedProjection(Projection):
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


def _attrs_text(attrs: object) -> str:
    """A call's non-default attributes as written (``newshape=[10]``), for T-Rel lines."""
    try:
        return ", ".join(f"{k}={attr_value_text(v)}" for k, v in attrs_items(attrs))
    except Exception:  # noqa: BLE001 - attributes are optional in a derivation
        return ""


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
            stack.extend(reversed(type_children(t)))
    return out


class _NotedDiagnostics(list):
    """The checker's diagnostics list; each one appended is attached to a frame too."""

    def __init__(self, checker: _DerivingChecker) -> None:
        super().__init__()
        self.checker = checker

    def append(self, diagnostic: Diagnostic) -> None:  # type: ignore[override]
        super().append(diagnostic)
        c = self.checker
        c.rec.note_error(diagnostic, c.owner, c.recording)


class _DerivingChecker(Checker):
    """The checker with its rules wrapped in frames (see the module docstring).
    ``target``: the global whose derivation is recorded, or None for an expression;
    ``names``: the printed ``%N`` names of its shared nodes (``graph_names``)."""

    def __init__(self, mod: IRModule, target: str | None, names: dict[int, str]) -> None:
        super().__init__(mod, free_vars_ok=target is None)
        self.target = target
        self.rec = _Recorder(names)
        self.unifier = _RecordingUnifier(self)
        self.solver = Solver(self.unifier, self._constraint_failed)
        wake, rec = self.unifier.on_bind, self.rec
        assert wake is not None

        unifier = self.unifier

        def on_bind(uid: int) -> None:
            rec.bound(uid, unifier, self.owner)
            wake(uid)

        self.unifier.on_bind = on_bind
        self.diagnostics = _NotedDiagnostics(self)

    @property
    def recording(self) -> bool:
        return self.target is None or self.owner == self.target

    # -- the rule dispatch, wrapped ----------------------------------------------------------
    def infer(self, expr: Expr) -> Type:
        if not self.recording:
            return super().infer(expr)
        rec = self.rec
        known = self.types.get(expr)
        op_use = known is not None and id(expr) in self.op_vars
        if op_use:  # an operator's var: a T-Op instance per use (spec/typing.md 3.6, 3.10)
            known = None
        if known is not None:  # a use of a binder, a global ... or a shared node (T-Shared)
            leaf = _LEAF_RULES.get(type(expr))
            name = None if leaf is not None else rec.names_of_nodes.get(id(expr))
            frame = rec.open(leaf or "T-Shared", expr, text=name)
            if leaf is None:
                first = rec.frame_of.get(id(expr))
                frame.shared_with = first.index if first is not frame else None
            rec.close(frame)
            return known
        frame = rec.open("T-Op" if op_use else _rule_of(expr), expr)
        try:
            ty = super().infer(expr)
            if op_use and isinstance(ty, FuncType):  # the instance, with its relation
                frame.ty = ty
                frame.where = (_relation_name(get_op(self.op_vars[id(expr)].name)),
                               (*ty.arg_types, ty.ret_type))
            return ty
        finally:
            rec.close(frame)

    def header_of(self, fn: Function) -> FuncType:
        rec = self.rec
        if not self.recording or id(fn) in self.fn_headers or rec.collect is not None:
            return super().header_of(fn)
        rec.collect = []
        try:
            header = super().header_of(fn)
        finally:
            rec.headers[id(fn)], rec.collect = rec.collect, None
        # Label the holes of the header it returned (not the holes in the order made: an
        # ill-kinded annotation makes a poisoned hole too).
        for param, ty in zip(fn.params, header.arg_types, strict=True):
            if isinstance(ty, IncompleteType) and ty.uid in rec.holes:
                rec.what.setdefault(ty.uid, f"type of %{param.name_hint}"
                                    if param.type_annotation is None
                                    else f"ill-kinded annotation of %{param.name_hint}")
        if isinstance(header.ret_type, IncompleteType) and header.ret_type.uid in rec.holes:
            rec.what.setdefault(header.ret_type.uid, "return type" if fn.ret_type is None
                                else "ill-kinded return type")
        return header

    def infer_function(self, fn: Function, header: FuncType) -> FuncType:
        rec = self.rec
        if not self.recording:
            return super().infer_function(fn, header)
        if rec.stack and rec.stack[-1].node is fn:  # opened by infer (a literal)
            rec.stack[-1].holes[:0] = rec.headers.pop(id(fn), ())
            return super().infer_function(fn, header)
        text = None
        if not rec.stack and self.target is not None:  # the global's definition: the root
            text = f"@{self.target} = {short_text(fn, 60, rec.names_of_nodes, attrs=True)}"
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
        value = let.value
        if self.recording and isinstance(value, Op) and id(let.var) in self.op_vars:
            # T-Let's premise for an operator value: T-Op, its polymorphic type σ_op
            scheme = self.types.get(value)
            frame = self.rec.open("T-Op", value, ty=scheme)
            if isinstance(scheme, FuncType):
                frame.where = (_relation_name(get_op(value.name)),
                               (*scheme.arg_types, scheme.ret_type))
            self.rec.close(frame)

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
        # (No TP-* rule applies to a node of another class: T-Match's premise fails.)
        frame = self.rec.open(_PATTERN_RULES.get(type(pattern), "T-Match"), pattern,
                              ty=expected)
        if isinstance(pattern, PatternConstructor):
            td = self.adts.get(pattern.constructor.belong_to.name)
            self.rec.labels = ([f"instance of {td.name}'s {tv.name}" for tv in td.type_vars]
                               if td else [])
        elif isinstance(pattern, PatternTuple):
            self.rec.labels = [f"field {i}" for i in range(len(pattern.patterns))]
        try:
            return super().check_pattern(pattern, expected, clause)
        finally:
            self.rec.labels = []
            self.rec.close(frame)

    def cast_site(self, node: Expr, index: int, found: Type, expected: Type,
                  rule: str) -> None:
        super().cast_site(node, index, found, expected, rule)
        if self.recording and self.rec.stack and found is not expected:
            # the frame of the rule comparing the types
            self.rec.consistency.append((self.cast_sites[-1], self.rec.stack[-1]))

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
                 out: Type) -> OpRelation:
        if not self.recording:
            return super().relation(use, op, attrs, args, out)
        constraint = _RecordedRelation(use, op, attrs, args, out, self.owner)
        constraint.rec = self.rec
        constraint.frame = self.rec.stack[-1] if self.rec.stack else None
        return constraint

    def projection(self, proj: TupleGetItem, tuple_type: Type, out: Type) -> Projection:
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
MAX_INDENT = 40
"""Depth levels shown as indentation (text) or nesting (HTML); deeper nodes are written at
that indentation with their depth as a number (``[depth 812]``), as the traces do, so the
output stays linear in the nodes shown however deep the derivation."""


def _head(node: Derivation, rule: str | None = None) -> str:
    typ = f" : {node.type_text}" if node.type_text else ""
    rule = node.rule if rule is None else rule
    if node.shared_with is not None:
        return f"{rule}  {node.expr}{typ}  (typed once, see #{node.shared_with} above)"
    return f"{rule}  {node.expr}{typ}" + (f"  [#{node.index}]" if node.shared else "")


def _details(node: Derivation) -> tuple[list[str], list[str], list[str]]:
    """The lines under a node's head other than its premises': its holes and notes (before
    the premises), then its relation runs and errors (after them)."""
    return ([str(h) for h in node.holes] + list(node.notes),
            [str(r) for r in node.relations], [f"error: {e}" for e in node.errors])


def _pad(depth: int) -> str:
    if depth <= MAX_INDENT:
        return "  " * depth
    return "  " * MAX_INDENT + f"[depth {depth}] "


def _elided(n: int, max_depth: int) -> str:
    return (f"... {n} premise node{'s' if n != 1 else ''} elided "
            f"(deeper than {max_depth} level{'s' if max_depth != 1 else ''})")


def _not_shown(rest: int, max_nodes: int) -> str:
    return f"... {rest} more node{'s' if rest != 1 else ''} not shown (at most {max_nodes})"


def render_text(tree: Derivation, max_depth: int = MAX_DEPTH,
                max_nodes: int = MAX_NODES, colour: bool = False) -> str:
    """The derivation as indented text, one node per line (``RULE  expr : type``): below
    it the holes it created (and notes), then its premises, then its relation runs and
    errors. Premises deeper than ``max_depth`` levels are replaced by a line counting them,
    and at most ``max_nodes`` nodes are shown (then a count of the rest); indentation stops
    growing at ``MAX_INDENT`` levels (``[depth N]``), so the output is linear in the nodes
    shown. Errors the module check found in other globals follow, under "errors outside
    this derivation". ``colour``: rule names in bold (ANSI, as the traces write them)."""
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
            lines.append(_not_shown(tree.size - shown - elided, max_nodes))
            stack = [s for s in stack if isinstance(s, list)]
            continue
        shown += 1
        pad = _pad(depth)
        lines.append(pad + _head(node, f"\x1b[1;35m{node.rule}\x1b[0m" if colour else None))
        before, relations, errors = _details(node)
        inner = _pad(depth + 1)
        lines.extend(inner + line for line in before)
        after = [inner + line for line in (*relations, *errors)]
        if node.premises and depth >= max_depth:
            n = node.size - 1
            elided += n
            lines.append(inner + _elided(n, max_depth))
            lines.extend(after)
            continue
        if after:
            stack.append(after)
        stack.extend((p, depth + 1) for p in reversed(node.premises))
    if tree.outside:
        lines.append("errors outside this derivation:")
        lines.extend(f"  {e}" for e in tree.outside)
    return "\n".join(lines)


_renders = itertools.count(1)


def render_html(tree: Derivation, max_depth: int = MAX_DEPTH,
                max_nodes: int = MAX_NODES) -> str:
    """The derivation as a collapsible HTML tree (``<details>``/``<summary>`` per node with
    premises; the first two levels open), for Jupyter. Rule names link to their text in
    spec/ (``relay_ref.rules.rule_html``). Elided as ``render_text``; nesting stops at
    ``MAX_INDENT`` levels (deeper nodes follow one another, numbered ``[depth N]``). Each
    render's anchors have their own prefix (several derivations in one notebook do not
    collide), and a T-Shared node links to its first derivation only when that was shown."""
    esc = html.escape
    prefix = f"relay-d{next(_renders)}-"
    out: list[str] = ["<div class='relay-derivation' style='font-family:monospace'>"]
    shown = elided = 0
    anchors: set[int] = set()
    stack: list[tuple[Derivation | str, int]] = [(tree, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node = item
        if shown >= max_nodes:
            out.append(f"<div>{_not_shown(tree.size - shown - elided, max_nodes)}</div>")
            stack = [s for s in stack if isinstance(s[0], str)]  # close open tags
            continue
        shown += 1
        anchors.add(node.index)
        typ = f" : {esc(node.type_text)}" if node.type_text else ""
        if node.shared_with is not None:
            see = (f"<a href='#{prefix}{node.shared_with}'>#{node.shared_with}</a>"
                   if node.shared_with in anchors else f"#{node.shared_with}")
            tail = f" <i>(typed once, see {see} above)</i>"
        else:
            tail = f" <small>[#{node.index}]</small>" if node.shared else ""
        flat = depth > MAX_INDENT
        level = f"<small>[depth {depth}]</small> " if flat else ""
        head = (f"{level}<span id='{prefix}{node.index}'>{rule_html(node.rule)}</span>&nbsp; "
                f"<code>{esc(node.expr)}</code>{typ}{tail}")
        before, relations, errors = _details(node)
        body = [f"<div style='color:#555'>{link_rules(esc(h))}</div>" for h in before]
        after = [f"<div style='color:#555'>{rule_html('T-Rel')}&nbsp; {esc(r.call_text())}"
                 "</div>" for r in node.relations]
        after += [f"<div style='color:#b00'>{link_rules(esc(e))}</div>" for e in errors]
        if flat:  # past MAX_INDENT: no further nesting
            out.append(f"<div>{head}{''.join(body)}</div>")
            if node.premises and depth >= max_depth:
                elided += node.size - 1
                out.append(f"<div>{esc(_elided(node.size - 1, max_depth))}</div>")
                out.extend(after)
                continue
            stack.append(("".join(after), depth))
            stack.extend((p, depth + 1) for p in reversed(node.premises))
            continue
        if not node.premises and not body and not after:
            out.append(f"<div style='margin-left:1.2em'>{head}</div>")
            continue
        opened = " open" if depth < 2 else ""
        out.append(f"<details{opened} style='margin-left:1.2em'><summary>{head}</summary>")
        out.extend(body)
        if node.premises and depth >= max_depth:
            n = node.size - 1
            elided += n
            out.append(f"<div>{esc(_elided(n, max_depth))}</div>")
            out.extend(after)
            out.append("</details>")
            continue
        stack.append(("".join(after) + "</details>", depth))
        stack.extend((p, depth + 1) for p in reversed(node.premises))
    if tree.outside:
        out.append("<div style='color:#b00'>errors outside this derivation:</div>")
        out.extend(f"<div style='color:#b00;margin-left:1.2em'>{link_rules(esc(e))}</div>"
                   for e in tree.outside)
    out.append("</div>")
    return "".join(out)
