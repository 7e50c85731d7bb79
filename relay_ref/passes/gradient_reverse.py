"""Higher-order reverse-mode AD as a source-to-source transformation (spec/ad.md sections
2-4; the Relay thesis's ADTerm, TVM's ``gradient.cc`` higher-order mode; papers.md 1.5).

Every tensor ``t`` of the program becomes a pair ``(t, Ref[t])``: the value and a cell that
accumulates its adjoint (AD-Type-Tensor). An operator call computes its value on the
forward parts, allocates its adjoint cell, and *extends the backpropagator*: the cell
``bp : Ref[fn() -> ()]`` holds a closure that runs the reverse pass; each call replaces it
by ``fn() { <this call's reverse rule, += into the arguments' cells>; old() }``
(AD-App-Op), so calling ``!bp`` at the end runs the reverse rules in reverse order of
execution, whatever control flow, closures, recursion or references chose that order.
Everything else is transformed structurally (AD-Var ... AD-Write); functions keep their
shape with transformed types, global functions get ``bp`` as an extra first parameter
(AD-Global), closures capture it.

The wrapper (AD-Grad) turns ``f : fn(T1..Tn) -> O`` into ``fn(T1..Tn) -> (O, (T1..Tn))``:
pair the inputs with zero adjoints, run the transformed body, add ones into every tensor of
the result's adjoint, run ``!bp``, and read the inputs' adjoints.

Invariants.
* Deep programs: dataflow (operator calls, tuples, projections) is transformed with an
  explicit post-order stack (``_dataflow_prefix``), in the order the recursion would use;
  only nests of other nodes recurse (``gradient`` runs the transform on a big stack).
* The output is in A-normal form: every transformed expression is bound once (``Block``),
  so effects are neither duplicated nor reordered; rules may use their arguments freely.
* Types: a transformed node of type ``τ`` has type ``T(τ)`` (``TypeMap``); binders are
  annotated with transformed checked types where those are complete.
* The transform is total on the language (closure property): its output can be
  transformed again, so gradients of gradients work.
* Gradients flow only through float tensors: a call whose arguments or result hold no
  float tensor gets no reverse step (its derivative is zero or meaningless), and a call of
  an op marked not differentiable that would need one is a located error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relay_ref.diagnostics import RelayTypeError
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
from relay_ref.ir.types import (
    FuncType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    is_complete,
)
from relay_ref.ops.grad_common import op as make_call
from relay_ref.ops.registry import GradientUnsupported, get_op
from relay_ref.passes.gradient_common import (
    Block,
    TypeMap,
    ad_error,
    fresh_name,
    has_float,
    subst,
    type_text,
)
from relay_ref.passes.rewrite import rewrite

__all__ = ["ReverseAD", "BP_TYPE"]

UNIT = TupleType(())
#: the backpropagator cell's type
BP_TYPE = RefType(FuncType((), UNIT))
#: check_data visits at most this many ADT instances (a nested type such as
#: ``Nest[A] { N(A, Nest[(A, A)]) }`` has infinitely many)
_MAX_INSTANCES = 64


def _dataflow_children(e: Expr, mod: IRModule) -> tuple[Expr, ...] | None:
    """The operands the transform visits first, for a node whose transform visits nothing
    else (an operator, constructor or module-global call, a tuple, a projection); None for
    any other node."""
    match e:
        case Call(Op() | Constructor(), args):
            return args
        case Call(GlobalVar(name), args) if name in mod.functions:
            return args
        case Tuple(fields):
            return fields
        case TupleGetItem(tup):
            return (tup,)
    return None


def _rev_tensor(t: TensorType) -> Type:
    return TupleType((t, RefType(t)))


@dataclass
class ReverseAD:
    """The reverse transform of one type-checked module (``mod.checked_types`` filled).
    ``globals_out`` collects the new global functions (transformed globals ``@f_rev`` and
    the wrapper's ADT helpers); ``extend(mod)`` adds them and the transformed ADTs."""

    mod: IRModule
    suffix: str = "rev"
    globals_out: dict[str, Function] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.types = TypeMap(self.mod, _rev_tensor, self.suffix)
        self.ad_globals: dict[str, str] = {}  # original global -> its transformed name
        self.helpers: dict[tuple[str, Type], str] = {}
        self.extra_types: dict[Expr, Type] = {}  # types of the nodes rules are given

    # -- module bookkeeping ---------------------------------------------------------------
    def taken(self) -> set[str]:
        return set(self.mod.functions) | set(self.globals_out)

    def extend(self, mod: IRModule) -> IRModule:
        """``mod`` with the transformed ADTs and the new globals added."""
        for td in self.types.new_types.values():
            mod = mod.with_type(td)
        for name, fn in self.globals_out.items():
            mod = mod.with_function(name, fn)
        return mod

    def type_of(self, node: Expr) -> Type | None:
        ty = self.extra_types.get(node)
        return ty if ty is not None else self.mod.checked_types.get(node)

    def ann(self, node: Expr) -> Type | None:
        """The transformed checked type of ``node``, when it can be written down."""
        ty = self.type_of(node)
        return self.types(ty) if is_complete(ty) else None

    # -- AD-Global: a global function with the backpropagator as first parameter ----------
    def global_ad(self, name: str) -> str:
        done = self.ad_globals.get(name)
        if done is not None:
            return done
        new = fresh_name(self.taken(), f"{name}_{self.suffix}")
        self.ad_globals[name] = new
        self.globals_out[new] = Function((), Tuple(()))  # reserved while being built
        fn = self.mod.functions[name]
        bp = Var("bp", BP_TYPE)
        env: dict[Var, Expr] = {}
        params = tuple(self.param(p, env) for p in fn.params)
        body = self.term(fn.body, env, bp)
        ret = self.types(fn.ret_type) if fn.ret_type is not None and is_complete(fn.ret_type) \
            else None
        self.globals_out[new] = Function((*self.bp_args(bp), *params), body, ret,
                                         fn.type_params, span=fn.span)
        return new

    def bp_args(self, bp: Var) -> tuple[Var, ...]:
        """What a transformed global takes before its arguments (AD-Global: ``bp``)."""
        return (bp,)

    def param(self, p: Var, env: dict[Var, Expr]) -> Var:
        ty = p.type_annotation if p.type_annotation is not None else self.type_of(p)
        new = Var(p.name_hint, self.types(ty) if is_complete(ty) else None)
        env[p] = new
        return new

    # -- the term transform -----------------------------------------------------------------
    def term(self, expr: Expr, env: dict[Var, Expr], bp: Var) -> Expr:
        """AD-Term: ``expr`` transformed, as a let-chain ending in an atom."""
        blk = Block()
        return blk.finish(self.tr(expr, env, bp, blk, {}))

    def tr(self, e: Expr, env: dict[Var, Expr], bp: Var, blk: Block,
           memo: dict[int, Expr]) -> Expr:
        """``e`` transformed into ``blk``; returns an atom (variable, constructor, global).
        ``memo`` maps nodes already transformed in this scope (graph bindings, E-Shared)."""
        hit = memo.get(id(e))
        if hit is not None:
            return hit
        if _dataflow_children(e, self.mod) is not None:
            self._dataflow_prefix(e, env, bp, blk, memo)
            hit = memo.get(id(e))
            if hit is not None:
                return hit
        out = self._tr(e, env, bp, blk, memo)
        if not isinstance(e, Var | Let):
            memo[id(e)] = out
        return out

    def _dataflow_prefix(self, root: Expr, env: dict[Var, Expr], bp: Var, blk: Block,
                         memo: dict[int, Expr]) -> None:
        """Transform the nodes under ``root`` in the order the recursive transform reaches
        them (post-order, arguments left to right), iteratively, for as long as they are
        dataflow (operator, constructor and global calls, tuples, projections, constants,
        variables): a 10 000-node graph-form chain needs no deep stack. It stops at the
        first other node (a ``let``, a function, an ``if``...), leaving it and what follows
        it to the recursion, so the bindings come out in the same order either way."""
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in memo:
                continue
            if expanded:  # its children are transformed: one level of recursion
                memo[id(node)] = self._tr(node, env, bp, blk, memo)
                continue
            children = _dataflow_children(node, self.mod)
            if children is None:
                if not isinstance(node, Var | Constant):
                    return
                self.tr(node, env, bp, blk, memo)
                continue
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children))

    def _tr(self, e: Expr, env: dict[Var, Expr], bp: Var, blk: Block,
            memo: dict[int, Expr]) -> Expr:
        match e:
            case Var():  # AD-Var
                return env[e]
            case Constant():  # AD-Const: a literal with a zero adjoint
                return blk.push(self.lift(TensorType(e.data.shape, str(e.data.dtype)), e, e),
                                "c", self.ann(e))
            case Tuple(fields):  # AD-Tuple
                return blk.push(Tuple(tuple(self.tr(f, env, bp, blk, memo) for f in fields)),
                                "tup")
            case TupleGetItem(tup, index):  # AD-Proj
                return blk.push(TupleGetItem(self.tr(tup, env, bp, blk, memo), index), "p")
            case Let():
                return self._let(e, env, bp, blk, memo)
            case Function():  # AD-Fn: the closure captures bp
                return blk.push(self.function(e, env, bp), "f", self.ann(e))
            case GlobalVar(name):  # AD-Global as a value: eta-expanded over bp
                return blk.push(self.global_value(e, name, bp), name)
            case Constructor():  # AD-Ctor: the transformed ADT's constructor
                return self.types.ctor(e)
            case Op():  # an operator as a value: eta-expanded
                return blk.push(self.op_value(e, env, bp), "opfn")
            case Call(callee, args):
                return self._call(e, callee, args, env, bp, blk, memo)
            case If(cond, then, other):  # AD-If
                c = self.tr(cond, env, bp, blk, memo)
                t = self.branch(then, env, bp, memo)
                f = self.branch(other, env, bp, memo)
                return blk.push(If(TupleGetItem(c, 0), t, f), "if", self.ann(e))
            case Match(data, clauses, complete_):  # AD-Match
                d = self.tr(data, env, bp, blk, memo)
                new = []
                for cl in clauses:
                    inner = dict(env)
                    lhs = self.pattern(cl.lhs, inner)
                    new.append(Clause(lhs, self.branch(cl.rhs, inner, bp, memo)))
                return blk.push(Match(d, tuple(new), complete_), "m", self.ann(e))
            case RefCreate(value):  # AD-Ref
                return blk.push(RefCreate(self.tr(value, env, bp, blk, memo)), "r")
            case RefRead(ref):  # AD-Read
                return blk.push(RefRead(self.tr(ref, env, bp, blk, memo)), "rd")
            case RefWrite(ref, value):  # AD-Write
                r = self.tr(ref, env, bp, blk, memo)
                v = self.tr(value, env, bp, blk, memo)
                return blk.push(RefWrite(r, v), "w")
        raise ad_error(f"cannot differentiate a {type(e).__name__}", e, "AD-Term")

    def branch(self, e: Expr, env: dict[Var, Expr], bp: Var, memo: dict[int, Expr]) -> Expr:
        blk = Block()
        return blk.finish(self.tr(e, env, bp, blk, dict(memo)))

    def _let(self, e: Let, env: dict[Var, Expr], bp: Var, blk: Block,
             memo: dict[int, Expr]) -> Expr:
        """AD-Let (a chain followed in a loop); a function literal may name itself."""
        while isinstance(e, Let):
            var = Var(e.var.name_hint, self.ann(e.var) if e.var.type_annotation is None
                      else self.types(e.var.type_annotation))
            if isinstance(e.value, Function):
                env[e.var] = var
                blk.bind(var, self.function(e.value, env, bp))
            else:
                value = self.tr(e.value, env, bp, blk, memo)
                blk.bind(var, value)
                env[e.var] = var
            e = e.body
        return self.tr(e, env, bp, blk, memo)

    def function(self, fn: Function, env: dict[Var, Expr], bp: Var) -> Function:
        inner = dict(env)
        params = tuple(self.param(p, inner) for p in fn.params)
        ret = self.types(fn.ret_type) if fn.ret_type is not None and is_complete(fn.ret_type) \
            else None
        return Function(params, self.term(fn.body, inner, bp), ret, fn.type_params, fn.attrs)

    def pattern(self, p: Pattern, env: dict[Var, Expr]) -> Pattern:
        match p:
            case PatternVar(var):
                new = Var(var.name_hint, self.ann(var) if var.type_annotation is None
                          else self.types(var.type_annotation))
                env[var] = new
                return PatternVar(new)
            case PatternConstructor(ctor, pats):
                return PatternConstructor(self.types.ctor(ctor),
                                          tuple(self.pattern(q, env) for q in pats))
            case PatternTuple(pats):
                return PatternTuple(tuple(self.pattern(q, env) for q in pats))
        return PatternWildcard()

    def global_value(self, g: GlobalVar, name: str, bp: Var) -> Expr:
        if name not in self.mod.functions:  # not a function of this module
            raise ad_error(f"unknown global @{name}", g, "AD-Global")
        ty = self.type_of(g)
        new = GlobalVar(self.global_ad(name))
        if not isinstance(ty, FuncType) or not is_complete(ty) or ty.type_params:
            raise ad_error(f"@{name} used as a value needs a known monomorphic type here "
                           "(annotate or call it)", g, "AD-Global")
        params = tuple(Var(f"y{i}", self.types(t)) for i, t in enumerate(ty.arg_types))
        return Function(params, Call(new, (*self.bp_args(bp), *params)),
                        self.types(ty.ret_type))

    def op_value(self, o: Op, env: dict[Var, Expr], bp: Var) -> Expr:
        ty = self.type_of(o)
        if not isinstance(ty, FuncType) or not is_complete(ty):
            raise ad_error(f"operator {o.name} used as a value needs a known type here",
                           o, "AD-App-Op")
        # stand-ins for the operator's arguments, bound to the annotated parameters
        orig = tuple(Var(f"y{i}") for i in range(len(ty.arg_types)))
        params = tuple(Var(f"y{i}", self.types(t)) for i, t in enumerate(ty.arg_types))
        inner = dict(env)
        for y, p, t in zip(orig, params, ty.arg_types, strict=True):
            inner[y] = p
            self.extra_types[y] = t
        call = Call(o, orig, get_op(o.name).attrs())
        self.extra_types[call] = ty.ret_type
        blk = Block()
        out = self._op_call(call, o, orig, inner, bp, blk, {})
        return Function(params, blk.finish(out), self.types(ty.ret_type))

    # -- calls ---------------------------------------------------------------------------
    def _call(self, e: Call, callee: Expr, args: tuple[Expr, ...], env: dict[Var, Expr],
              bp: Var, blk: Block, memo: dict[int, Expr]) -> Expr:
        if isinstance(callee, Op):
            return self._op_call(e, callee, args, env, bp, blk, memo)
        targs = tuple(self.types(t) for t in e.type_args)
        if isinstance(callee, Constructor):  # AD-Ctor
            new = tuple(self.tr(a, env, bp, blk, memo) for a in args)
            return blk.push(Call(self.types.ctor(callee), new, e.attrs, targs), "adt",
                            self.ann(e))
        if isinstance(callee, GlobalVar) and callee.name in self.mod.functions:  # AD-Global
            new = tuple(self.tr(a, env, bp, blk, memo) for a in args)
            g = GlobalVar(self.global_ad(callee.name))
            return blk.push(Call(g, (*self.bp_args(bp), *new), e.attrs, targs), "call",
                            self.ann(e))
        f = self.tr(callee, env, bp, blk, memo)  # AD-App: a closure already has bp
        new = tuple(self.tr(a, env, bp, blk, memo) for a in args)
        return blk.push(Call(f, new, e.attrs, targs), "call", self.ann(e))

    def _op_call(self, e: Call, o: Op, args: tuple[Expr, ...], env: dict[Var, Expr],
                 bp: Var, blk: Block, memo: dict[int, Expr]) -> Expr:
        """AD-App-Op: forward on the values, a fresh adjoint, the backpropagator extended
        by this call's reverse rule (AD-App-Op-Const when no gradient can flow)."""
        opdef = get_op(o.name)
        if o.name == "gradient":
            raise ad_error("gradient(...) must be expanded before differentiating (the "
                           "AD pass does it: relay_ref.passes.gradient.expand_gradients)",
                           e, "AD-Grad")
        arg_types = [self.type_of(a) for a in args]
        out_type = self.type_of(e)
        if out_type is None or any(t is None for t in arg_types):
            raise ad_error(f"no type recorded for this call of {o.name}", e, "AD-App-Op")
        ad_args = [self.tr(a, env, bp, blk, memo) for a in args]
        xs = []
        for a, t in zip(ad_args, arg_types, strict=True):
            x = blk.push(self.primal(t, a), "x", t if is_complete(t) else None)
            self.extra_types[x] = t
            xs.append(x)
        call = Call(o, tuple(xs), e.attrs, e.type_args)
        self.extra_types[call] = out_type
        v = blk.push(call, "v", out_type if is_complete(out_type) else None)
        self.extra_types[v] = out_type
        result = blk.push(self.lift(out_type, v, e), "ad")
        flows = has_float(out_type) and any(has_float(t) for t in arg_types)
        if not flows:  # AD-App-Op-Const (a float result of a piecewise-constant op has a
            return result  # rule giving 0 instead: AD-Piecewise-Const, spec/ad.md 4)
        if opdef.differentiable is not True or opdef.gradient is None:
            why = opdef.differentiable if isinstance(opdef.differentiable, str) else \
                "it has no reverse rule yet"
            raise ad_error(f"operator {o.name} is not differentiable: {why}", e,
                           "AD-App-Op")
        back = Block()
        g = back.push(self.read_adjoint(out_type, result), "g")
        self.extra_types[g] = out_type
        try:
            grads = opdef.gradient(call, g, self.type_of)
        except GradientUnsupported as err:
            raise ad_error(str(err), e, "AD-App-Op") from None
        if len(grads) != len(args):
            raise ad_error(f"the reverse rule of {o.name} gave {len(grads)} adjoints for "
                           f"{len(args)} arguments", e, "AD-App-Op")
        for a, t, grad in zip(ad_args, arg_types, grads, strict=True):
            if grad is None or not has_float(t):
                continue
            grad = rewrite(grad, lambda n: v if n is call else None)  # reuse the value
            self.accumulate(t, a, back.push(grad, "da"), back)
        prev = blk.push(RefRead(bp), "prev")
        step = Function((), back.finish(Call(prev, ())), UNIT)
        blk.push(RefWrite(bp, step), "bpw")
        return result

    # -- values and adjoints by type -----------------------------------------------------
    def primal(self, ty: Type, a: Expr) -> Expr:
        """The forward value of ``a`` (a transformed value of an operator argument type)."""
        match ty:
            case TensorType():
                return TupleGetItem(a, 0)
            case TupleType(fields):
                return Tuple(tuple(self.primal(f, TupleGetItem(a, i))
                                   for i, f in enumerate(fields)))
        raise ad_error(f"an operator argument of type {type_text(ty)} cannot be "
                       "differentiated", a, "AD-App-Op")

    def lift(self, ty: Type, v: Expr, where: Expr) -> Expr:
        """A forward value of an operator's result type paired with zero adjoints."""
        match ty:
            case TensorType():
                return Tuple((v, RefCreate(make_call("zeros_like", v))))
            case TupleType(fields):
                return Tuple(tuple(self.lift(f, TupleGetItem(v, i), where)
                                   for i, f in enumerate(fields)))
        raise ad_error(f"an operator result of type {type_text(ty)} cannot be "
                       "differentiated", where, "AD-App-Op")

    def read_adjoint(self, ty: Type, a: Expr) -> Expr:
        match ty:
            case TensorType():
                return RefRead(TupleGetItem(a, 1))
            case TupleType(fields):
                return Tuple(tuple(self.read_adjoint(f, TupleGetItem(a, i))
                                   for i, f in enumerate(fields)))
        raise ad_error(f"no adjoint for type {type_text(ty)}", a, "AD-App-Op")

    def accumulate(self, ty: Type, a: Expr, grad: Expr, blk: Block) -> None:
        """``a``'s adjoint cells += ``grad`` (AD-Acc)."""
        match ty:
            case TensorType():
                if not has_float(ty):
                    return
                cell = TupleGetItem(a, 1)
                blk.push(RefWrite(cell, make_call("add", RefRead(cell), grad)), "acc")
            case TupleType(fields):
                for i, f in enumerate(fields):
                    part = grad.fields[i] if isinstance(grad, Tuple) else TupleGetItem(grad, i)
                    self.accumulate(f, TupleGetItem(a, i), part, blk)

    # -- AD-Grad: the wrapper -----------------------------------------------------------------
    def wrapper(self, target: GlobalVar | Function, ty: FuncType,
                where: Expr | None = None) -> Function:
        """``fn(T1..Tn) -> (O, (T1..Tn))`` computing ``target``'s value and gradient.
        ``target``: a global of the module, or a function literal whose free variables
        are in scope where the wrapper goes (they are constants for the gradient)."""
        if ty.type_params:
            raise ad_error("cannot differentiate a polymorphic function: give it concrete "
                           "types", where, "AD-Grad")
        for t in (*ty.arg_types, ty.ret_type):
            self.check_data(t, where)
        params = tuple(Var(p.name_hint if isinstance(target, Function) else f"x{i}", t)
                       for i, (p, t) in enumerate(zip(
                           target.params if isinstance(target, Function)
                           else self.mod.functions[target.name].params, ty.arg_types,
                           strict=True)))
        blk = Block()
        bp = blk.push(RefCreate(Function((), Tuple(()), UNIT)), "bp", BP_TYPE)
        lifted = [blk.push(self.boundary("lift", t, p, blk), "a") for p, t in
                  zip(params, ty.arg_types, strict=True)]
        if isinstance(target, Function):
            env: dict[Var, Expr] = {}
            from relay_ref.ir.visitor import free_vars

            for v in free_vars(target):  # captured values: constants for the gradient
                t = self.type_of(v)
                if t is None:
                    raise ad_error(f"no type known for %{v.name_hint}", where, "AD-Grad")
                env[v] = blk.push(self.boundary("lift", t, v, blk), v.name_hint)
            for p, a in zip(target.params, lifted, strict=True):
                env[p] = a
            result = self.tr(target.body, env, bp, blk, {})
        else:
            g = GlobalVar(self.global_ad(target.name))
            result = blk.push(Call(g, (bp, *lifted)), "r")
        self.boundary("seed", ty.ret_type, result, blk)
        back = blk.push(RefRead(bp), "back")
        blk.push(Call(back, ()), "run")
        out = Tuple((self.boundary("primal", ty.ret_type, result, blk),
                     Tuple(tuple(self.boundary("grad", t, a, blk)
                                 for a, t in zip(lifted, ty.arg_types, strict=True)))))
        ret = TupleType((ty.ret_type, TupleType(ty.arg_types)))
        # located where the gradient was asked for: errors in a later transform of it
        # (generated nodes have no span) fall back to this
        return Function(params, blk.finish(out), ret, span=getattr(where, "span", None))

    def check_data(self, ty: Type, where: Expr | None, inside: str = "",
                   seen: set[Type] | None = None) -> None:
        """AD-Grad's inputs and result are first-order data: tensors, tuples, ADTs of
        those, the ADTs' constructor fields included (a least fixpoint over the instances
        met, as AD-Type-ADT). A located ``RelayTypeError`` otherwise."""
        seen = set() if seen is None else seen
        match ty:
            case TensorType():
                return
            case TupleType(fields):
                for f in fields:
                    self.check_data(f, where, inside, seen)
                return
            case TypeCall(func, args) if func.name in self.mod.type_definitions:
                if ty in seen or len(seen) > _MAX_INSTANCES:
                    return
                seen.add(ty)
                for a in args:
                    self.check_data(a, where, inside, seen)
                td = self.mod.type_definitions[func.name]
                sub: dict[TypeVar, Type] = dict(zip(td.type_vars, args, strict=True))
                for c in td.constructors:
                    for t in c.inputs:
                        self.check_data(subst(t, sub), where,
                                        f" (a field of {c.name} in {type_text(ty)})", seen)
                return
        err = ad_error(f"the gradient's inputs and result must be tensors, tuples or ADTs "
                       f"of those, not {type_text(ty)}{inside}", where, "AD-Grad")
        raise RelayTypeError(err.diagnostics)

    def boundary(self, kind: str, ty: Type, e: Expr, blk: Block) -> Expr:
        """Convert at the wrapper's boundary, by ``ty`` (the original type): ``lift``
        (a value -> paired with zero adjoints), ``primal`` (-> its value), ``grad`` (-> its
        adjoint), ``seed`` (add ones into every adjoint; returns unit)."""
        match ty:
            case TensorType():
                if kind == "lift":
                    return Tuple((e, RefCreate(make_call("zeros_like", e))))
                if kind == "primal":
                    return TupleGetItem(e, 0)
                if kind == "grad":
                    return RefRead(TupleGetItem(e, 1))
                cell = blk.push(TupleGetItem(e, 1), "cell")
                blk.push(RefWrite(cell, make_call("add", RefRead(cell),
                                                  make_call("ones_like",
                                                            TupleGetItem(e, 0)))), "seed")
                return Tuple(())
            case TupleType(fields):
                parts = [self.boundary(kind, f, blk.push(TupleGetItem(e, i), "fld"), blk)
                         for i, f in enumerate(fields)]
                return Tuple(()) if kind == "seed" else Tuple(tuple(parts))
            case TypeCall():
                call = Call(GlobalVar(self.helper(kind, ty)), (e,))
                if kind == "seed":  # an effect: bound here, so it runs before the reverse pass
                    blk.push(call, "seed")
                    return Tuple(())
                return call
        raise ad_error(f"cannot differentiate with respect to a value of type "
                       f"{type_text(ty)}", e, "AD-Grad")

    def helper(self, kind: str, ty: TypeCall) -> str:
        """A global converting values of the ADT instance ``ty`` (recursive through its
        constructors' fields)."""
        key = (kind, ty)
        name = self.helpers.get(key)
        if name is not None:
            return name
        td = self.mod.type_definitions[ty.func.name]
        name = fresh_name(self.taken(), f"ad_{kind}_{td.name}")
        self.helpers[key] = name
        self.globals_out[name] = Function((), Tuple(()))  # reserved while being built
        sub: dict[TypeVar, Type] = dict(zip(td.type_vars, ty.args, strict=True))
        v = Var("v", ty if kind == "lift" else self.types(ty))
        clauses = []
        for c in td.constructors:
            fields_ty = [subst(t, sub) for t in c.inputs]
            vars_ = [Var(f"p{i}") for i in range(len(fields_ty))]
            blk = Block()
            outs = [self.boundary(kind, t, x, blk) for t, x in zip(fields_ty, vars_,
                                                                     strict=True)]
            if kind == "seed":
                res: Expr = Tuple(())
            else:
                res = Call(self.types.ctor(c) if kind == "lift" else c, tuple(outs))
            src = c if kind == "lift" else self.types.ctor(c)
            clauses.append(Clause(PatternConstructor(src, tuple(PatternVar(x) for x in vars_)),
                                  blk.finish(res)))
        ret = {"lift": self.types(ty), "seed": UNIT}.get(kind, ty)
        self.globals_out[name] = Function((v,), Match(v, tuple(clauses)), ret)
        return name
