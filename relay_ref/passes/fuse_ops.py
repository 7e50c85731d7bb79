"""FuseOps (TVM ``src/relay/transforms/fuse_ops.cc`` and ``analysis/graph_partitioner.cc``):
group operator calls into ``Primitive=1`` functions, the units a code generator compiles
(and the executor plans) as one kernel; and DefuseOps, its inverse.

The result, as TVM prints it::

    %0 = fn (%p0: Tensor[(10, 20), float32], Primitive=1) -> Tensor[(10, 20), float32] {
      squeeze(exp(add(%p0, 1f)))
    };
    %0(%x)

**Algorithm** (TVM's, step by step; ``OpPattern`` is the registry's ``op_pattern``). The
op-pattern rules are data: ``NODE_KINDS`` gives each dataflow node its kind by patterns of
the pattern language (``relay_ref.passes.pattern``: ``is_op_kind``, ``is_constant``, ...),
and ``FUSE_RULES`` says which producer kinds fuse into which consumers, phase by phase (step
3 below is its interpreter):

1. *Dataflow graph*: one node per call, tuple, projection, variable, constant, let, if, match
   and ref node, in post-order; an edge from each argument to its user, labelled with the
   user's pattern (a broadcast op whose argument has the result's shape labels that edge
   elementwise; a tuple's fields are injective edges, as is a projection's tuple). Nodes
   used by something that is not dataflow (a let's value and body, an if's branches, a
   function's body, a match's scrutinee and arms, ref operands, a non-tensor tuple field)
   are marked *external*: nothing fuses across them. Scalar constants of the simple dtypes
   are elementwise nodes (fused into their user); other constants are opaque (they become
   arguments).
2. *Post-dominator tree* over that DAG (LCA of a node's users, in reverse post-order), each
   node also recording the most complex edge pattern on the way to its post-dominator.
3. *Partition* (union-find over groups), three phases over the nodes in post-order, fusing a
   node into its immediate post-dominator when every node on every path between them
   satisfies a condition:
   * phase 0: an out-elemwise-fusable op (conv2d, dense, pools, softmax) takes the
     elementwise/broadcast ops after it (edge to the post-dominator elementwise, paths
     <= broadcast);
   * phases 0 and 1: an elementwise/broadcast op joins a post-dominator reached through
     injective edges or a reduction (paths injective; the post-dominator may be any
     non-opaque group);
   * phase 1: injective ops and tuples join injective successors;
   * phase 2: injective ops join an intermediate tuple already fused into injective ops.
   Groups never exceed ``max_depth`` nodes (TVM's ``relay.FuseOps.max_depth``, 256); with
   ``fuse_opt_level=0`` every operator call is its own group.
4. *Rewrite*: each group's root (its last node) becomes ``fn (%p0, ..., Primitive=1) ->
   T { body }`` called on the group's inputs (an input used twice is one parameter; a
   non-scalar constant is an argument unless ``link_params``); the other members are
   rebuilt inside the body. ``annotation.stop_fusion(x)`` stops fusion at ``x`` and is
   dropped. A group of reshape-like ops only (``reshape``, ``squeeze``, ``expand_dims``,
   ``nn.batch_flatten``, ...) also gets ``relay.reshape_only=1``, as in TVM.

**Invariants of the result** (what the executor plans from; checked by the tests):

* every call of an operator (``Call`` whose callee is an ``Op``), except the Relax
  constructs ``match_cast``, ``call_dps_packed``, ``call_tir`` and ``dataflow``
  (``relay_ref.ops.symbolic.SYMBOLIC_OPS``, left where they are), is inside exactly one
  ``Primitive=1`` function (outside ``Compiler`` functions, which are left alone), and the
  body of a ``Primitive`` function contains only operator calls, tuples, projections, its
  parameters and constants: each ``Primitive`` function is one group (one kernel). A group
  without any call (``(%a, %b).0`` only) is a ``Primitive=0`` function, as in TVM: plumbing,
  no kernel. ``primitive_functions(mod)`` lists them all (``is_group`` tells one);
* a ``Primitive`` function literal occurs only as the callee of a call (never bound by
  ``let``, passed, returned or stored), and its free variables are among its parameters;
* everything else (lets, ifs, matches, closures, ADT values, tuples of group results, calls
  of globals) is left where it was; so ``relay_ref.interpreter`` evaluates the result to the
  same value (a ``Primitive`` function is an ordinary function to it).

An operator used as a value (``let %f = add; %f(%a, %b)``) is wrapped as ``fn (%x0, %x1) {
%prim(%x0, %x1) }`` around a one-op ``Primitive`` function, so the invariants hold there
too (TVM leaves it, and its interpreter refuses it); one whose type is not concrete is left
as it is. Functions already ``Primitive`` (or with a ``Compiler`` attribute) are kept as
they are: FuseOps is idempotent (TVM re-enters ``Primitive=0`` ones).

Not implemented from TVM: ``max_function_args`` (a target limit; 0, no limit, for the
targets here) and the dynamic-shape argument counting that comes with it.

**DefuseOps**: every call of a ``Primitive`` function literal is replaced by the function's
body with its parameters replaced by the arguments (TVM inlines any function literal and
matches parameters by name; here only ``Primitive`` ones, by identity). For a module ``m``
without ``annotation.stop_fusion`` and operators used as values, ``DefuseOps(FuseOps(m))``
is alpha-equal to ``m`` (graph bindings included).

Both passes need types (inferred when absent) and keep every type. Cost: DefuseOps and
steps 1, 2 and 4 are linear in the number of distinct nodes, except the dominator tree's
LCA walks, long only where one value has users far apart (as in TVM); step 3 is
O(nodes * max_depth) (each size and path check stops past ``max_depth`` nodes). Iterative
throughout: deep graphs do not touch Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from relay_ref.ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import AnyDim, FuncType, TensorType, TupleType, Type
from relay_ref.ir.visitor import children_outside, post_order
from relay_ref.ops.registry import OpPattern, get_op, has_op
from relay_ref.ops.symbolic import SYMBOLIC_OPS
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.pattern import (
    DFPattern,
    Matcher,
    is_constant,
    is_op_kind,
    is_tuple,
    is_tuple_get_item,
    wildcard,
)
from relay_ref.passes.pattern import Match as PatternMatch
from relay_ref.passes.rewrite import map_functions, with_children
from relay_ref.typecheck.infer import infer_types

ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_ELEMWISE_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
TUPLE = OpPattern.TUPLE
OPAQUE = OpPattern.OPAQUE

#: TVM's ``relay.FuseOps.max_depth`` default (``kMaxFusedOps``).
MAX_FUSE_DEPTH = 256

#: The highest ``fuse_opt_level`` (TVM's opt levels run 0 to 4; every level from 1 fuses).
MAX_FUSE_OPT_LEVEL = 4

#: Dtypes of the scalar constants that are fused into their user (TVM's ``is_simple_const``).
_SIMPLE_CONST_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})

#: Operators with TVM's ``TReshapeOp``: a group of only these is ``relay.reshape_only``.
RESHAPE_OPS = frozenset({"reshape", "squeeze", "expand_dims", "nn.batch_flatten",
                         "contrib_reverse_reshape", "dyn.reshape", "dyn.squeeze"})

_STOP_FUSION = "annotation.stop_fusion"


def is_group(fn: Function) -> bool:
    """A function literal FuseOps made: it has the ``Primitive`` attribute (1, or 0 for a
    group without calls)."""
    return fn.attr("Primitive") is not None


def is_primitive(fn: Function) -> bool:
    """A function FuseOps does not enter: one it made, or a ``Compiler`` (BYOC) one."""
    return is_group(fn) or fn.attr("Compiler") is not None


def op_pattern(name: str) -> OpPattern:
    """The registry's fusion pattern of ``name`` (OPAQUE for an unknown op)."""
    return get_op(name).op_pattern if has_op(name) else OPAQUE


def _nodes(fn: Function) -> Iterator[Expr]:
    """Post-order of ``fn``'s nodes (shared ones once), not entering ``Primitive`` (or
    ``Compiler``) function literals, which appear themselves."""
    return post_order(fn, enter=children_outside(is_primitive, fn))


# == 0. node kinds (the op-pattern rules, in the pattern language) ======================

def _upto(kind: OpPattern) -> frozenset[OpPattern]:
    """Every kind no more complex than ``kind``."""
    return frozenset(k for k in OpPattern if k <= kind)


_ANY_OP = is_op_kind(*OpPattern)
_TUPLE_OF_TENSORS = wildcard()


def _simple_scalar(e: Expr, m: PatternMatch) -> bool:
    return e.data.ndim == 0 and str(e.data.dtype) in _SIMPLE_CONST_DTYPES  # type: ignore


def _dynamic_dyn_op(e: Expr, m: PatternMatch) -> bool:
    return e.op.name.startswith("dyn.") and _is_dynamic(m.type_of(e))  # type: ignore


def _tensor_tuple(e: Expr, m: PatternMatch) -> bool:
    ty = m.type_of(m[_TUPLE_OF_TENSORS])
    return isinstance(ty, TupleType) and all(isinstance(t, TensorType) for t in ty.fields)


@dataclass(frozen=True, slots=True)
class KindRule:
    """A dataflow node matching ``pattern`` has fusion kind ``kind(node)``."""

    doc: str
    pattern: DFPattern
    kind: Callable[[Expr], OpPattern]


#: How a dataflow node gets its kind (TVM's ``IndexedForwardGraph`` creator); the first
#: matching entry wins, a node matching none is OPAQUE.
NODE_KINDS: tuple[KindRule, ...] = (
    KindRule("scalar constants of the simple dtypes fuse into their user",
             is_constant().where(_simple_scalar), lambda e: ELEMWISE),
    KindRule("a dyn.* operator with a dynamic result shape is opaque (data-dependent)",
             _ANY_OP.call_any().where(_dynamic_dyn_op), lambda e: OPAQUE),
    KindRule("an operator call has its operator's registry kind",
             _ANY_OP.call_any(), lambda e: op_pattern(e.op.name)),  # type: ignore
    KindRule("a tuple is a TUPLE node", is_tuple(None), lambda e: TUPLE),
    KindRule("a projection of a tuple of tensors is injective",
             is_tuple_get_item(_TUPLE_OF_TENSORS).where(_tensor_tuple), lambda e: INJECTIVE),
)


def node_kind(expr: Expr, matcher: Matcher) -> OpPattern:
    """The fusion kind of a dataflow node, by ``NODE_KINDS``."""
    for rule in NODE_KINDS:
        if matcher.match(rule.pattern, expr) is not None:
            return rule.kind(expr)
    return OPAQUE


@dataclass(frozen=True, slots=True)
class FuseRule:
    """When a node fuses into its immediate post-dominator (TVM ``GraphPartitioner``):
    in one of ``phases``, when the node's group has a ``producer`` kind, the most complex
    edge kind on the way to the post-dominator is in ``edge``, the post-dominator's own
    group has a ``consumer`` kind and its root group a ``consumer_root`` kind, and every
    node between them has a ``path`` kind (the post-dominator itself a ``sink`` kind).
    ``unfused_only``: not when the two are already in one group. These conditions are on
    *group* kinds, which change as groups merge (a relu that took a conv2d is
    OUT_ELEMWISE_FUSABLE), so they are kind sets, not expression patterns."""

    doc: str
    phases: frozenset[int]
    producer: frozenset[OpPattern]
    edge: frozenset[OpPattern]
    consumer: frozenset[OpPattern]
    consumer_root: frozenset[OpPattern]
    path: frozenset[OpPattern]
    sink: frozenset[OpPattern]
    unfused_only: bool = True


_ALL = frozenset(OpPattern)
_NOT_TUPLE = _ALL - {TUPLE}

#: Which producer kinds fuse into which consumers; at most one rule per (phase, producer).
FUSE_RULES: tuple[FuseRule, ...] = (
    # conv2d and friends take the elementwise ops after them
    FuseRule("out-elemwise-fusable -> elementwise/broadcast successors", frozenset({0}),
             frozenset({OUT_ELEMWISE_FUSABLE}), frozenset({ELEMWISE}), _NOT_TUPLE, _ALL,
             _upto(BROADCAST), _upto(BROADCAST)),
    # elementwise/broadcast into an injective or reduction post-dominator
    FuseRule("elementwise/broadcast -> injective or reduction", frozenset({0, 1}),
             _upto(BROADCAST), _upto(INJECTIVE) | {COMM_REDUCE}, _NOT_TUPLE, _ALL,
             _upto(INJECTIVE),
             _upto(BROADCAST) | {COMM_REDUCE, INJECTIVE, OUT_ELEMWISE_FUSABLE}),
    # injective chains, after phase 0 so that conv2d finishes fusing first
    FuseRule("injective/tuple -> injective successors", frozenset({1}),
             frozenset({INJECTIVE, TUPLE}), _ALL, _NOT_TUPLE, _ALL,
             _upto(INJECTIVE), _upto(INJECTIVE)),
    # injective ops into an intermediate tuple already fused into injective ops
    FuseRule("injective -> a tuple fused into injective ops", frozenset({2}),
             _upto(INJECTIVE), _ALL, frozenset({TUPLE}), _upto(INJECTIVE),
             _upto(INJECTIVE), _upto(INJECTIVE), unfused_only=False),
    # COMM_REDUCE and OPAQUE: nothing fuses after them
)


# == 1. the dataflow graph =============================================================

@dataclass(eq=False, slots=True)
class _Node:
    ref: Expr
    index: int = -1
    extern_ref: bool = False
    pattern: OpPattern = OPAQUE
    outputs: list[tuple[_Node, OpPattern]] = field(default_factory=list)


class _Graph:
    """TVM's ``IndexedForwardGraph`` of one function."""

    def __init__(self, fn: Function, types: dict[Expr, Type]) -> None:
        self.types = types
        self.matcher = Matcher(types.get)
        self.node_map: dict[int, _Node] = {}
        self.post_dfs_order: list[_Node] = []
        for expr in _nodes(fn):
            self._visit(expr)

    def node(self, expr: Expr) -> _Node:
        n = self.node_map.get(id(expr))
        if n is None:
            n = self.node_map[id(expr)] = _Node(expr)
        return n

    def _update(self, expr: Expr, parent: _Node | None, pattern: OpPattern) -> None:
        if isinstance(expr, Op):
            return  # operators are not graph nodes
        n = self.node(expr)
        if parent is None:
            n.extern_ref = True
        else:
            n.outputs.append((parent, pattern))

    def _add(self, n: _Node) -> None:
        n.index = len(self.post_dfs_order)
        self.post_dfs_order.append(n)

    def _is_tensor(self, expr: Expr) -> bool:
        return isinstance(self.types.get(expr), TensorType)

    def _visit(self, expr: Expr) -> None:
        match expr:
            case Function():
                for p in expr.params:
                    self._update(p, None, OPAQUE)
                self._update(expr.body, None, OPAQUE)
                return  # functions are not graph nodes (TVM)
            case Op() | GlobalVar() | Constructor():
                return  # not graph nodes either
            case Var():
                self._add(self.node(expr))
            case Constant():
                n = self.node(expr)
                n.pattern = node_kind(expr, self.matcher)
                self._add(n)
            case Call(op, args):
                n = self.node(expr)
                pattern = node_kind(expr, self.matcher)
                if not isinstance(op, Op):
                    self._update(op, n, OPAQUE)
                n.pattern = pattern
                self._update(op, None, OPAQUE)
                rtype = self.types.get(expr)
                for arg in args:
                    edge = pattern
                    atype = self.types.get(arg)
                    if (edge == BROADCAST and isinstance(atype, TensorType)
                            and isinstance(rtype, TensorType) and atype.shape == rtype.shape):
                        edge = ELEMWISE
                    self._update(arg, n, edge)
                self._add(n)
            case Tuple(fields):
                n = self.node(expr)
                n.pattern = node_kind(expr, self.matcher)
                for f in fields:
                    if self._is_tensor(f):
                        self._update(f, n, INJECTIVE)
                    else:
                        self._update(f, None, OPAQUE)
                self._add(n)
            case TupleGetItem(tup, _):
                n = self.node(expr)
                n.pattern = node_kind(expr, self.matcher)
                if n.pattern == INJECTIVE:
                    self._update(tup, n, INJECTIVE)
                else:
                    self._update(tup, None, OPAQUE)
                self._add(n)
            case Let() | If() | Match() | RefCreate() | RefRead() | RefWrite():
                for kid in children(expr):  # nothing fuses across these
                    self._update(kid, None, OPAQUE)
                if isinstance(expr, Let):
                    self._update(expr.var, None, OPAQUE)
                self._add(self.node(expr))


def _is_dynamic(ty: Type | None) -> bool:
    return isinstance(ty, TensorType) and any(isinstance(d, AnyDim) for d in ty.shape)


# == 2. the post-dominator tree ========================================================

@dataclass(eq=False, slots=True)
class _DomNode:
    gnode: _Node
    parent: _DomNode | None = None
    depth: int = 1
    pattern: OpPattern = OPAQUE


def _post_dominators(graph: _Graph) -> list[_DomNode]:
    """TVM's ``DominatorTree::PostDom`` (single pass over the DAG via LCA)."""
    nodes: list[_DomNode | None] = [None] * len(graph.post_dfs_order)

    def lca(lhs: _DomNode | None, rhs: _DomNode | None,
            pattern: OpPattern) -> tuple[_DomNode | None, OpPattern]:
        while lhs is not rhs:
            if lhs is None or rhs is None:
                return None, pattern
            if lhs.depth < rhs.depth:
                pattern = max(pattern, rhs.pattern)
                rhs = rhs.parent
            elif rhs.depth < lhs.depth:
                pattern = max(pattern, lhs.pattern)
                lhs = lhs.parent
            else:
                pattern = max(pattern, lhs.pattern, rhs.pattern)
                lhs, rhs = lhs.parent, rhs.parent
        return lhs, pattern

    for gnode in reversed(graph.post_dfs_order):
        tnode = _DomNode(gnode)
        if not gnode.extern_ref:
            pattern = ELEMWISE
            parent: _DomNode | None = None
            for i, (out, edge) in enumerate(gnode.outputs):
                onode = nodes[out.index]
                if i == 0:
                    parent = onode
                else:
                    parent, pattern = lca(parent, onode, pattern)
                pattern = max(pattern, edge)
            tnode.parent = parent
            tnode.depth = parent.depth + 1 if parent else 1
            tnode.pattern = pattern
        nodes[gnode.index] = tnode
    return nodes  # type: ignore[return-value]


# == 3. the partition ==================================================================

@dataclass(eq=False, slots=True)
class Group:
    """A union-find set of graph nodes; the root's ``root_ref`` is the group's last node."""

    pattern: OpPattern
    root_ref: Expr
    parent: Group | None = None
    anchor_ref: Expr | None = None
    num_nodes: int = 1

    def find_root(self) -> Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node is not root:  # path compression
            nxt = node.parent
            node.parent = root
            node = nxt  # type: ignore[assignment]
        return root


class _Partitioner:
    """TVM's ``GraphPartitioner`` (without ``max_function_args``)."""

    def __init__(self, opt_level: int, max_depth: int) -> None:
        self.opt_level = opt_level
        self.max_depth = max_depth
        self.groups: list[Group] = []

    def partition(self, graph: _Graph) -> list[Group]:
        for n in graph.post_dfs_order:
            g = Group(n.pattern, n.ref)
            if n.pattern == OUT_ELEMWISE_FUSABLE:
                g.anchor_ref = n.ref
            self.groups.append(g)
        if self.opt_level == 0:
            return self.groups
        dom = _post_dominators(graph)
        for phase in range(3):
            self._run_fuse(graph, dom, phase)
        return self.groups

    def _between(self, src: _Node, sink: _Node) -> Iterator[_Node]:
        """Every node on a path from ``src`` (excluded) to ``sink`` (included, not passed)."""
        seen: set[int] = set()
        stack = [out for out, _ in src.outputs]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            yield n
            if n is not sink:
                stack.extend(out for out, _ in n.outputs)

    def _check_path(self, src: _Node, sink: _Node, path: frozenset[OpPattern],
                    at_sink: frozenset[OpPattern]) -> bool:
        """Every node between has a ``path`` kind, ``sink`` an ``at_sink`` kind."""
        return all(self.groups[n.index].find_root().pattern in (at_sink if n is sink else path)
                   for n in self._between(src, sink))

    def _merge(self, child: Group, parent: Group) -> None:
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor_ref is not None:
            assert parent.anchor_ref is None, "cannot merge two complex groups"
            parent.anchor_ref = child.anchor_ref
            parent.pattern = max(child.pattern, parent.pattern)

    def _commit_fuse(self, src: _Node, sink: _Node) -> None:
        target = self.groups[sink.index]
        self._merge(self.groups[src.index], target)
        for n in self._between(src, sink):
            if n is not sink:
                self._merge(self.groups[n.index], target)

    def _too_many_nodes(self, child: _Node, dom_parent: _Node) -> bool:
        """TVM's ``CountFusedNodesWithNewChild(child, dom_parent) > max_depth``; stops
        counting past the limit, so each call costs O(max_depth) (the path checks that
        follow then see at most that many nodes): the partition is linear in the graph."""
        total = self.groups[dom_parent.index].find_root().num_nodes
        total += self.groups[child.index].num_nodes  # TVM reads the node's own group
        if total > self.max_depth:
            return True
        for n in self._between(child, dom_parent):
            if n is not dom_parent:
                total += self.groups[n.index].num_nodes
                if total > self.max_depth:
                    return True
        return False

    def _run_fuse(self, graph: _Graph, dom: list[_DomNode], phase: int) -> None:
        for nid, gnode in enumerate(graph.post_dfs_order):
            dom_node = dom[nid]
            group = self.groups[nid]
            if group.pattern == OPAQUE or dom_node.parent is None:
                continue
            parent_gnode = dom_node.parent.gnode
            parent_group = self.groups[parent_gnode.index]
            if self._too_many_nodes(gnode, parent_gnode):
                continue
            rule = _fuse_rule(phase, group.pattern)
            if rule is None:
                continue
            root = parent_group.find_root()
            if rule.unfused_only and group.find_root() is root:
                continue  # already fused
            if (parent_group.pattern in rule.consumer and root.pattern in rule.consumer_root
                    and dom_node.pattern in rule.edge):
                if self._check_path(gnode, parent_gnode, rule.path, rule.sink):
                    self._commit_fuse(gnode, parent_gnode)


def _fuse_rule(phase: int, producer: OpPattern) -> FuseRule | None:
    """The rule of ``FUSE_RULES`` for a producer kind in a phase (at most one)."""
    for rule in FUSE_RULES:
        if phase in rule.phases and producer in rule.producer:
            return rule
    return None


# == 4. the rewrite ====================================================================

@dataclass(slots=True)
class _GroupInfo:
    """The parameters of a group's function and the arguments it is called with."""

    params: list[Var] = field(default_factory=list)
    arguments: list[Expr] = field(default_factory=list)
    index: dict[int, int] = field(default_factory=dict)  # id(argument) -> position

    def param_for(self, arg: Expr, ty: Type | None) -> Var:
        """The parameter standing for ``arg`` (one per distinct argument node)."""
        i = self.index.get(id(arg))
        if i is None:
            i = self.index[id(arg)] = len(self.params)
            self.params.append(Var(f"p{i}", ty))
            self.arguments.append(arg)
        return self.params[i]


class _Fuser:
    def __init__(self, types: dict[Expr, Type], opt_level: int, max_depth: int,
                 link_params: bool) -> None:
        self.types = types
        self.opt_level = opt_level
        self.max_depth = max_depth
        self.link_params = link_params

    def run(self, fn: Function) -> Function:
        graph = _Graph(fn, self.types)
        groups = _Partitioner(self.opt_level, self.max_depth).partition(graph)
        gmap = {id(n.ref): groups[n.index] for n in graph.post_dfs_order}
        info: dict[int, _GroupInfo] = {}
        done: dict[int, Expr] = {}

        def root_of(expr: Expr) -> Group | None:
            g = gmap.get(id(expr))
            return g.find_root() if g is not None else None

        def value(expr: Expr) -> Expr:
            if isinstance(expr, Op):
                return self._eta_expand(expr)
            return done[id(expr)]

        def arguments(args: tuple[Expr, ...], group: Group) -> list[Expr]:
            out = []
            for arg in args:
                new = value(arg)
                if root_of(arg) is not group and not (
                        self.link_params and isinstance(new, Constant)):
                    new = info.setdefault(id(group), _GroupInfo()).param_for(
                        new, self.types.get(arg))
                out.append(new)
            return out

        def function(group: Group, ret: Type | None, body: Expr) -> Expr:
            gi = info.setdefault(id(group), _GroupInfo())
            attrs: tuple[tuple[str, object], ...] = (("Primitive", int(_has_call(body))),)
            if _reshape_only(body):
                attrs += (("relay.reshape_only", 1),)
            prim = Function(tuple(gi.params), body, ret, (), attrs)
            return Call(prim, tuple(gi.arguments))

        for node in _nodes(fn):
            match node:
                case Function() if node is not fn and is_primitive(node):
                    done[id(node)] = node
                case Call(Op(name) as op, args, attrs, type_args) if name in SYMBOLIC_OPS:
                    # Relax's constructs stay outside groups: match_cast binds shape
                    # variables in the enclosing function (T-MatchCast), which a Primitive
                    # function's return type could not mention; they are opaque, alone.
                    done[id(node)] = Call(op, tuple(value(a) for a in args), attrs,
                                          type_args, node.span)
                case Call(Op(name) as op, args, attrs, type_args) if id(node) in gmap:
                    if name == _STOP_FUSION:
                        done[id(node)] = value(args[0])
                        continue
                    group = root_of(node)
                    assert group is not None
                    call = Call(op, tuple(arguments(args, group)), attrs, type_args, node.span)
                    done[id(node)] = (function(group, self.types.get(node), call)
                                      if group.root_ref is node else call)
                case Tuple(fields) if id(node) in gmap:
                    group = root_of(node)
                    assert group is not None
                    if group.root_ref is node:
                        done[id(node)] = with_children(node, (value(f) for f in fields))
                    else:
                        done[id(node)] = with_children(node, arguments(fields, group))
                case TupleGetItem(tup, index) if id(node) in gmap:
                    group = root_of(node)
                    assert group is not None
                    if group.root_ref is node and root_of(tup) is not group:
                        done[id(node)] = with_children(node, (value(tup),))  # isolated
                        continue
                    new = TupleGetItem(arguments((tup,), group)[0], index, node.span)
                    done[id(node)] = (function(group, self.types.get(node), new)
                                      if group.root_ref is node else new)
                case Op():
                    done[id(node)] = node
                case _:
                    kids = list(children(node))
                    if isinstance(node, Call):  # keep an operator callee, expand values
                        new = [done[id(kids[0])], *(value(k) for k in kids[1:])]
                    else:
                        new = [value(k) for k in kids]
                    done[id(node)] = with_children(node, new)
        out = done[id(fn)]
        assert isinstance(out, Function)
        return out

    def _eta_expand(self, op: Op) -> Expr:
        """``fn (%x0, ...) { %prim(%x0, ...) }`` for an operator used as a value."""
        ty = self.types.get(op)
        if not (isinstance(ty, FuncType) and not ty.type_params
                and all(_concrete(t) for t in (*ty.arg_types, ty.ret_type))):
            return op
        try:
            attrs = get_op(op.name).attrs()
        except Exception:  # noqa: BLE001 - attrs without defaults: built without
            attrs = None
        params = tuple(Var(f"p{i}", t) for i, t in enumerate(ty.arg_types))
        prim = Function(params, Call(op, params, attrs), ty.ret_type, (),
                        (("Primitive", 1),))
        outer = tuple(Var(f"x{i}", t) for i, t in enumerate(ty.arg_types))
        return Function(outer, Call(prim, outer), ty.ret_type)


def _concrete(ty: Type) -> bool:
    if isinstance(ty, TensorType):
        return True
    if isinstance(ty, TupleType):
        return all(_concrete(t) for t in ty.fields)
    return False


def _body_nodes(body: Expr) -> Iterator[Expr]:
    """Every node of ``body``, each once (function bodies included; order unspecified)."""
    return post_order(body)


def _has_call(body: Expr) -> bool:
    return any(isinstance(n, Call) for n in _body_nodes(body))


def _reshape_only(body: Expr) -> bool:
    """TVM's ``CheckReshapeOnly``: some call, all calls reshape-like, all vars tensors."""
    has_call = False
    for n in _body_nodes(body):
        if isinstance(n, Call):
            has_call = True
            if not (isinstance(n.op, Op) and n.op.name in RESHAPE_OPS):
                return False
        elif isinstance(n, Var) and not isinstance(n.type_annotation, TensorType):
            return False
    return has_call


# == DefuseOps =========================================================================

def _fused(fn: Expr) -> bool:
    """A function literal DefuseOps inlines: FuseOps's kind (not a ``Compiler`` one)."""
    return isinstance(fn, Function) and is_group(fn) and fn.attr("Compiler") is None


def defuse(fn: Function) -> Function:
    """Inline every call of a ``Primitive`` function literal (see the module docstring)."""
    done: dict[int, Expr] = {}
    for node in _nodes(fn):
        if isinstance(node, Function) and node is not fn and is_primitive(node):
            done[id(node)] = node  # called (and inlined below) or left alone
            continue
        kids = [done[id(k)] for k in children(node)]
        if isinstance(node, Call) and _fused(node.op):
            assert isinstance(node.op, Function)
            done[id(node)] = _inline(node.op, kids[1:])
        else:
            done[id(node)] = with_children(node, kids)
    out = done[id(fn)]
    assert isinstance(out, Function)
    return out


def _inline(prim: Function, args: list[Expr]) -> Expr:
    """``prim``'s body with its parameters replaced by ``args`` (it binds nothing)."""
    subst = {id(p): a for p, a in zip(prim.params, args, strict=True)}
    done: dict[int, Expr] = {}
    for node in post_order(prim.body):
        if isinstance(node, Var) and id(node) in subst:
            done[id(node)] = subst[id(node)]
        else:
            done[id(node)] = with_children(node, (done[id(k)] for k in children(node)))
    return done[id(prim.body)]


# == the passes ========================================================================

def _typed(mod: IRModule) -> IRModule:
    return mod if mod.checked_types else infer_types(mod)


@register_pass
class FuseOps(Pass):
    """Group operator calls into ``Primitive=1`` functions (see the module docstring).

    ``fuse_opt_level``: 0 puts every operator call in its own group; 1 to
    ``MAX_FUSE_OPT_LEVEL`` fuse (TVM's default follows the pass context, 2).
    ``max_depth``: the most nodes in one group, at least 1. ``link_params``: keep
    non-scalar constants inside the groups instead of passing them. An option of the wrong
    kind is a ``TypeError``, one out of range a ``ValueError``, each naming the option."""

    name = "FuseOps"
    idempotent = True
    opt_level = 0

    def __init__(self, fuse_opt_level: int = 2, max_depth: int = MAX_FUSE_DEPTH,
                 link_params: bool = False) -> None:
        for key, value in (("fuse_opt_level", fuse_opt_level), ("max_depth", max_depth)):
            if type(value) is not int:
                raise TypeError(f"FuseOps: {key} must be an int, not {value!r}")
        if type(link_params) is not bool:
            raise TypeError(f"FuseOps: link_params must be True or False, not "
                            f"{link_params!r}")
        if not 0 <= fuse_opt_level <= MAX_FUSE_OPT_LEVEL:
            raise ValueError(f"FuseOps: fuse_opt_level must be 0 (no fusion) to "
                             f"{MAX_FUSE_OPT_LEVEL}, not {fuse_opt_level}")
        if max_depth < 1:
            raise ValueError(f"FuseOps: max_depth must be at least 1 (the most nodes in "
                             f"one group), not {max_depth}")
        self.fuse_opt_level = fuse_opt_level
        self.max_depth = max_depth
        self.link_params = link_params

    def __call__(self, mod: IRModule) -> IRModule:
        mod = _typed(mod)
        fuser = _Fuser(mod.checked_types, self.fuse_opt_level, self.max_depth,
                       self.link_params)
        # a ``Compiler`` global (a BYOC region, spec/byoc.md BYOC-Extern) is its backend's to
        # compile, as TVM's FuseOps leaves it: kept as it is
        return map_functions(mod, lambda name, fn: fn if fn.attr("Compiler") is not None
                             else fuser.run(fn))


@register_pass
class DefuseOps(Pass):
    """Inline the ``Primitive`` functions FuseOps made (see the module docstring)."""

    name = "DefuseOps"
    idempotent = True
    opt_level = 3

    def __call__(self, mod: IRModule) -> IRModule:
        return map_functions(mod, lambda name, fn: defuse(fn))


def primitive_functions(mod: IRModule) -> list[Function]:
    """The ``Primitive`` function literals of ``mod`` (the groups of a fused module), in
    post-order of each global in definition order."""
    out = []
    for fn in mod.functions.values():
        out.extend(n for n in _nodes(fn)
                   if isinstance(n, Function) and n is not fn and is_group(n))
    return out
