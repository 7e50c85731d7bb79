"""What a read-eval-print loop needs beyond the public API (DESIGN.md section 2).

The Jupyter kernel (``kernel/relay_kernel``) and ``relay run`` (``relay_ref/cli/run.py``)
sit on top of the package and import only ``relay_ref`` and this module; this module sits
beside the public API and may use any layer below. It exposes:

* cells: ``parse_program`` (definitions, ``let`` statements and an expression, parsed
  against a session module and scope, the prelude on demand), ``check_expr`` (the type of
  an expression with typed free variables), ``evaluate_checked`` (run what was checked),
  ``with_operators`` and ``op_value_type`` (top-level bindings of operators, ``let %f =
  add;``, kept polymorphic: each use instantiates the operator afresh);
* arguments: ``argument_value`` (a Relay literal for a parameter of a given type);
* rendering: ``type_text``, ``value_text``, ``format_trace``;
* the rules of ``spec/`` (``relay rule``, ``:rule``, rule links), from ``relay_ref.rules``:
  ``select_rules`` (a name or ``E-If-*``), ``shared_rules``, ``rules_starting``,
  ``rule_did_you_mean``, ``rule_text``, ``rule_block_html``, ``rule_index``, ``rule_html``,
  ``link_rules``, ``known_rules``, ``Rule``, ``RULE_NAME_RE``, ``RULE_FAMILIES``;
* typing derivations: ``derive_global``, ``derive_expr``, ``derivation_text``,
  ``derivation_html`` (``relay check --derive``, ``:derive``);
* completion and help: ``op_names``, ``op_info``, ``op_doc`` (``:doc``, ``relay doc``),
  ``op_summary`` (``relay ops``), ``prelude_text``;
* "did you mean" (``relay_ref.suggest``, the one helper every such hint comes from):
  ``did_you_mean``, ``close_names``, ``suggestion_hint``;
* passes (``relay opt``): ``pass_info``, ``pass_options``, ``check_named_pass`` (its
  ``NamedPassCheck``), ``check_focus``, pass specs
  with options (``pass_specs``, ``configured_passes``);
* running: ``run_deep`` (deep recursion on a big stack), ``warm_up``, ``compile_expr``
  (an expression with typed free variables compiled by ``rr.compile``, for ``:time
  --compile``), ``expand_gradient_calls`` (a cell's ``gradient(f)`` calls expanded by the AD
  pass, as ``relay run`` and ``relay check`` expand a file's);
* models (``relay import``, ``relay run --params``): ``import_onnx`` (an ONNX file as a
  module and its weights, ``--shape`` specs resolved against the graph's inputs),
  ``bind_params(mod, entry, params, label=)`` (weights bound by parameter name, as
  ``rr.compile(params=)`` binds them: ``relay_ref.passes.bind_params``'s, re-exported);
* the IR and diagnostic classes a REPL inspects or builds (re-exported below).

Invariants: every function raises only ``RelayError`` subclasses for mistakes in the Relay
text it is given (as the public API does); nothing here keeps state between calls except the
caches of the layers below (the prelude, the op registry).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import (
    Diagnostic,
    Note,
    ParseError,
    RelayError,
    RelayRuntimeError,
    RelayTypeError,
)
from relay_ref.ir.expr import Expr, GlobalVar, Let, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.span import Span
from relay_ref.ir.types import FuncType, GlobalTypeVar, TensorType, TupleType, Type
from relay_ref.passes.bind_params import bind_params  # the one helper (relay run, import)

# The rules of spec/ (relay rule, :rule, the rule links of errors, traces and derivations):
# the CLI and the kernel reach relay_ref.rules through these names only.
from relay_ref.rules import FAMILIES as RULE_FAMILIES
from relay_ref.rules import NAME_RE as RULE_NAME_RE
from relay_ref.rules import Rule, link_rules, rule_block_html, rule_html
from relay_ref.rules import did_you_mean as rule_did_you_mean
from relay_ref.rules import format_index as rule_index
from relay_ref.rules import format_rule as rule_text
from relay_ref.rules import known as known_rules
from relay_ref.rules import select as select_rules
from relay_ref.rules import shared as shared_rules
from relay_ref.rules import starting as rules_starting
from relay_ref.suggest import close_names, did_you_mean
from relay_ref.suggest import hint as suggestion_hint

__all__ = [
    "Diagnostic", "Expr", "FuncType", "GlobalTypeVar", "GlobalVar", "IRModule", "Let", "Note",
    "Op", "ParseError", "RelayError", "RelayRuntimeError", "RelayTypeError", "Span",
    "TensorType", "TupleType", "Type", "Var", "argument_value", "check_expr",
    "check_named_pass", "compile_expr", "evaluate_checked", "expand_gradient_calls",
    "format_trace", "op_doc", "op_info", "op_names", "op_summary",
    "close_names", "did_you_mean", "suggestion_hint",
    "OnnxImport", "backend_choices", "bind_params", "export_onnx", "import_onnx",
    "returns_tensor", "with_header",
    "op_value_type", "parse_program", "pass_info", "pass_options", "pass_specs",
    "configured_passes", "NamedPassCheck", "check_focus",
    "with_operators",
    "prelude_text", "run_deep", "trace_html", "type_text", "value_text", "warm_up",
    "derive_expr", "derive_global", "derivation_html", "derivation_text", "own_globals",
    "RULE_FAMILIES", "RULE_NAME_RE", "Rule", "known_rules", "link_rules", "rule_block_html",
    "rule_did_you_mean", "rule_html", "rule_index", "rule_text", "rules_starting",
    "select_rules", "shared_rules",
]


# ---- cells ------------------------------------------------------------------------------------

def parse_program(text: str, source_name: str = "<string>", *,
                  module: IRModule | None = None, scope: dict[str, Var] | None = None,
                  prelude: bool = True) -> Any:
    """Parse a cell: definitions, then ``let`` / ``e;`` statements, then an optional
    expression (spec/syntax.md, S-Program). Returns the parser's ``Program``
    (``module``: ``module``'s definitions plus the cell's and the prelude definitions they
    use; ``bindings``; ``expr``). ``scope`` pre-binds ``%`` names. Raises ``ParseError``."""
    from relay_ref.prelude import prelude_fallback
    from relay_ref.syntax.parser import parse_program as _parse_program

    return _parse_program(text, source_name, base_module=module, scope=scope,
                          fallback=prelude_fallback() if prelude else None)


def check_expr(expr: Expr, module: IRModule, var_types: dict[Var, Type] | None = None
               ) -> Type:
    """The type of ``expr`` in ``module`` (checked), its free variables typed by
    ``var_types``. Raises ``RelayTypeError``."""
    from relay_ref.typecheck.infer import infer_expr

    ty, _types = infer_expr(expr, module, var_types=dict(var_types or {}))
    return ty


def with_operators(expr: Expr, aliases: dict[Var, str]) -> Expr:
    """``expr`` with every use of a variable in ``aliases`` replaced by a fresh ``Op``
    node of the aliased operator, one per use (a REPL's ``let %f = add;``: each use of
    ``%f`` then instantiates the operator's type afresh, spec/typing.md 3.10 T-Op, as a
    use of ``add`` itself would)."""
    if not aliases:
        return expr
    from relay_ref.ir.expr import children
    from relay_ref.passes.rewrite import rewrite, with_children

    def fresh(node: Expr) -> Expr:
        if isinstance(node, Var) and node in aliases:
            return Op(aliases[node], span=node.span)
        return node

    def rule(node: Expr) -> Expr | None:
        kids = list(children(node))
        new = [fresh(k) for k in kids]
        if any(a is not b for a, b in zip(kids, new, strict=True)):
            return with_children(node, new)
        return None

    return fresh(rewrite(expr, rule))


def op_value_type(name: str) -> FuncType:
    """The polymorphic type of operator ``name`` used as a value, without its relation
    (``fn[t1, t2, t3](t1, t2) -> t3`` for ``add``; ``op_info(name).type_text`` has the
    ``where`` clause)."""
    from relay_ref.ir.types import TypeVar
    from relay_ref.ops.registry import get_op

    op = get_op(name)
    tvs = tuple(TypeVar(f"t{i + 1}") for i in range(max(op.num_inputs, 0) + 1))
    return FuncType(tvs[:-1], tvs[-1], tvs)


def evaluate_checked(expr: Expr, module: IRModule, env: dict[Var, Any] | None = None, *,
                     trace: bool | str = False) -> Any:
    """Evaluate ``expr`` -- which the caller has type-checked (``check_expr``) with the
    types of ``env``'s values -- in ``module`` with free variables bound by ``env``; no
    second check. With ``trace`` (``True`` or ``"values"``, as ``rr.evaluate``) returns
    ``(value, events)`` (see ``format_trace``)."""
    from relay_ref.interpreter.driver import evaluate

    if trace:
        return evaluate(expr, module=module, env=dict(env or {}), trace=trace,
                        typecheck="done")
    return evaluate(expr, module=module, env=dict(env or {}), typecheck="done")


def compile_expr(expr: Expr, module: IRModule, var_types: dict[Var, Type] | None = None, *,
                 profile: bool = False) -> tuple[Any, list[Var]]:
    """Compile ``expr`` -- checked in ``module`` with its free variables typed by
    ``var_types`` (``check_expr``) -- with ``rr.compile``: ``(exe, free)`` where ``exe(*[env[v]
    for v in free])`` evaluates ``expr`` with the free variables bound to those values.

    ``expr`` becomes the body of a fresh global ``@cell`` (``@cell_``, ... when the module
    has one) whose parameters are its free variables, annotated with their types:
    ``fn (%x: T, ...) { let %x = %x'; ...; expr }``; the module is not changed. Raises
    ``RelayTypeError`` at the variable's use when a free variable has no type in
    ``var_types`` or a polymorphic one (a parameter of ``@cell`` must have one type), and
    whatever ``rr.compile`` raises."""
    from dataclasses import replace

    import relay_ref as rr
    from relay_ref.ir.expr import Function
    from relay_ref.ir.types import TypeVar
    from relay_ref.ir.visitor import free_vars

    types = dict(var_types or {})
    free = free_vars(expr)
    params = []
    for var in free:
        ty = types.get(var)
        if ty is None:
            raise RelayTypeError(f"%{var.name_hint} has no known type, so the expression "
                                 "cannot be compiled", var.span)
        if _mentions(ty, TypeVar):
            raise RelayTypeError(f"%{var.name_hint} has a polymorphic type "
                                 f"{type_text(ty)}; a compiled expression takes each free "
                                 "variable as a parameter of one type: compile an "
                                 "expression that does not use it, or apply it first",
                                 var.span)
        params.append(Var(var.name_hint, ty, var.span))
    body = expr
    for var, param in reversed(list(zip(free, params, strict=True))):
        body = Let(var, param, body, expr.span)
    name = "cell"
    while name in module.functions:
        name += "_"
    func = Function(tuple(params), body, span=expr.span)
    # the recorded types describe ``module``'s functions, not @cell: rr.compile checks the
    # whole module again (and expands its gradient calls, which needs @cell's types)
    mod = replace(module, functions={**module.functions, name: func}, checked_types={},
                  global_types={})
    return rr.compile(mod, entry=name, profile=profile), free


def expand_gradient_calls(module: IRModule, exprs: Sequence[Expr] = (),
                          var_types: dict[Var, Type] | None = None
                          ) -> tuple[IRModule, list[Expr]]:
    """``gradient(f)`` calls expanded by the AD pass as ``relay run`` and ``relay check``
    expand a file's: in the functions of ``module`` and in ``exprs`` (a cell's bindings and
    expression, free variables typed by ``var_types``). See
    ``relay_ref.passes.gradient.expand_gradients_exprs``, which this is."""
    from relay_ref.passes.gradient import expand_gradients_exprs

    return expand_gradients_exprs(module, exprs, var_types)


def _mentions(ty: Type, kind: type) -> bool:
    """Whether the type ``ty`` contains a node of class ``kind`` (iterative walk)."""
    import dataclasses

    stack: list[Any] = [ty]
    while stack:
        node = stack.pop()
        if isinstance(node, kind):
            return True
        if isinstance(node, (tuple, list)):
            stack.extend(node)
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node)
                         if f.name != "span")
    return False


# ---- arguments --------------------------------------------------------------------------------

def argument_value(text: str, source_name: str, module: IRModule, ty: Type | None,
                   name: str = "arg", what: str = "the argument") -> Any:
    """The value of Relay literal ``text`` (``3``, ``'(1, True)'``, ``Cons(1, Nil)``) as an
    argument for a parameter ``%name: ty`` of ``module`` (``relay run FILE ARG...``).

    Parsed in ``module``'s context with the prelude; type-checked before it is evaluated
    (the interpreter assumes well-typed code), in ``module`` plus the prelude's ADTs it does
    not define (its own ``List`` wins). An unsuffixed integer literal converts to ``ty`` by
    the one argument rule (spec/semantics.md 4.1). Raises ``ParseError``,
    ``RelayTypeError`` or ``RelayRuntimeError``, located in ``source_name``; ``what``
    names the argument in a conversion error."""
    import relay_ref as rr

    expr = rr.parse_expr(text, source_name, module=module)
    ctx = _with_prelude_types(module)  # `Cons(1, Nil)` may name ADTs the program does not use
    # _typed_literal has just checked it in this context: evaluate need not check again.
    value = rr.evaluate(_typed_literal(expr, ctx, ty, name), module=ctx, typecheck="done")
    return _adapt_literal(text, value, ty, expr.span, what)


def _with_prelude_types(mod: IRModule) -> IRModule:
    """``mod`` plus the prelude's ADTs it does not define (its own ``List`` wins), keeping
    its recorded types: the context in which an argument's constructors are checked."""
    from dataclasses import replace

    from relay_ref.prelude import load_prelude

    types = {**load_prelude().type_definitions, **mod.type_definitions}
    return replace(mod, type_definitions=types)


def _typed_literal(expr: Expr, mod: IRModule, ty: Type | None, name: str) -> Expr:
    """``expr`` type-checked before it is evaluated (the interpreter assumes well-typed code).

    Checked first as ``let %x: ty = expr; %x`` (``%x`` the parameter), so that ``Nil`` or
    ``fn (%a) { %a }`` take the parameter's type (that let is what is then evaluated);
    failing that, on its own (``3`` for an ``int64`` parameter is an ``int32`` literal,
    adapted afterwards). Raises ``RelayTypeError`` when both fail: the error of ``expr``
    alone, unless that is only "cannot infer the type", then the mismatch with ``ty``."""
    from relay_ref.typecheck.infer import infer_expr

    in_context: RelayTypeError | None = None
    if ty is not None:
        var = Var(name, _outside_scope(ty), expr.span)
        wrapped = Let(var, expr, var, expr.span)
        try:
            infer_expr(wrapped, mod)
            return wrapped
        except RelayTypeError as err:
            in_context = err
    try:
        infer_expr(expr, mod)
    except RelayTypeError as err:
        if in_context is not None and err.message.startswith("cannot infer the type"):
            raise in_context from None
        raise
    return expr


def _outside_scope(ty: Type) -> Type:
    """The parameter type ``ty`` as an argument literal is checked against it: its shape
    variables made ``?``. They are the function's own (T-ShapeScope), bound by the argument
    values when the function is called (Shape-Bind), so outside it they name nothing:
    ``Nil`` for ``%l: List[Tensor[(n), float32]]`` binds no ``n`` and is accepted."""
    from relay_ref.ir.shape import ANY
    from relay_ref.typecheck.shapes import substitute_type, type_vars

    names = type_vars(ty)
    return substitute_type(ty, dict.fromkeys(names, ANY)) if names else ty


def _adapt_literal(text: str, value: Any, ty: Type | None, span: Span | None = None,
                   what: str = "the argument") -> Any:
    """An unsuffixed integer literal (``3``, ``-7``, ``1099511627776``) is a number written
    without a dtype: it converts to the parameter's annotated tensor type by the one
    argument rule of every entry point (spec/semantics.md 4.1,
    ``relay_ref.interpreter.args.convert_argument``) -- as the Python int would in
    ``rr.evaluate`` -- so ``3`` is an ``int64`` or a ``float32`` where the parameter says so,
    and ``1099511627776`` for an ``int32`` parameter is a ``RelayRuntimeError`` at ``span``
    (the argument's text). Suffixed literals and other values keep their dtype, which
    ``rr.evaluate`` then requires to be the parameter's."""
    import numpy as np

    from relay_ref.interpreter.args import ArgumentError, convert_argument

    if (type(ty) is TensorType and isinstance(value, np.ndarray) and value.ndim == 0
            and value.dtype.kind in "iu" and not any(c.isalpha() for c in text)):
        try:
            return convert_argument(value.item(), ty)
        except ArgumentError as err:
            raise RelayRuntimeError(f"{what}: {err.message}", span) from None
    return value


# ---- rendering --------------------------------------------------------------------------------

def returns_tensor(mod: IRModule, entry: str) -> bool:
    """Whether ``@entry`` of the type-checked ``mod`` returns a tensor (what ``relay run -o``
    can save), known before running it."""
    ty = mod.global_types.get(entry)
    return isinstance(ty, FuncType) and isinstance(ty.ret_type, TensorType)


def type_text(ty: Type | None) -> str:
    """One-line Relay text of a type (``_`` for a missing one)."""
    from relay_ref.ir.type_text import type_to_text

    return type_to_text(ty)


def value_text(value: Any) -> str:
    """A value in Relay syntax (``[[1f, 2f], [3f, 4f]]``, ``Cons(1, Nil)``, ``ref(3)``,
    ``<closure @f ...>``), as the interpreter writes it."""
    from relay_ref.interpreter.values import value_to_text

    return value_to_text(value)


def derive_global(mod: IRModule, name: str = "main") -> Any:
    """The typing derivation of ``@name``'s definition (``relay check --derive``): a frozen
    ``relay_ref.typecheck.derive.Derivation`` whose ``error`` is the ``RelayTypeError`` when
    the module is ill-typed. Raises ``KeyError`` (naming the globals) for an unknown name."""
    from relay_ref.typecheck.derive import derive

    return derive(mod, name)


def own_globals(mod: IRModule) -> list[str]:
    """The names of the globals ``mod`` defines itself, in definition (file) order: not those
    it picked up from the prelude (``relay check --derive`` derives each of these)."""
    from relay_ref.prelude import load_prelude

    prelude = load_prelude()
    return [name for name, fn in mod.functions.items() if prelude.functions.get(name) is not fn]


def derive_expr(expr: Expr, module: IRModule, var_types: dict[Var, Type] | None = None
                ) -> Any:
    """The typing derivation of ``expr`` in ``module``, its free variables typed by
    ``var_types`` (the kernel's ``:derive``), as ``check_expr`` checks it."""
    from relay_ref.typecheck.derive import derive_expr as _derive_expr

    return _derive_expr(expr, module, var_types)


def derivation_text(tree: Any, max_depth: int | None = None,
                    max_nodes: int | None = None, colour: bool = False) -> str:
    """A derivation as indented text (elided past ``max_depth`` levels / ``max_nodes``
    nodes; the defaults of ``relay_ref.typecheck.derive``); ``colour``: rule names in bold
    (ANSI, for a terminal)."""
    from relay_ref.typecheck import derive

    return derive.render_text(tree, max_depth if max_depth is not None else derive.MAX_DEPTH,
                              max_nodes if max_nodes is not None else derive.MAX_NODES,
                              colour=colour)


def derivation_html(tree: Any) -> str:
    """A derivation as a collapsible HTML tree, for Jupyter."""
    from relay_ref.typecheck.derive import render_html

    return render_html(tree)


def format_trace(events: list[Any], limit: int | None = None, colour: bool = False) -> str:
    """The evaluation trace ``evaluate_checked(..., trace=True)`` returned, one rule per
    line (at most ``limit`` lines, then how many were left out); for ``trace="values"``
    each line also shows the judgement's value and what the rule bound or stored.
    ``colour``: rule names in bold, for a terminal."""
    from relay_ref.interpreter.trace import format_trace as _format_trace

    return _format_trace(events, limit=limit, colour=colour)


def trace_html(events: list[Any], limit: int | None = None) -> str:
    """``format_trace``'s text as HTML for Jupyter, rule names linked to the spec's text."""
    from relay_ref.interpreter.trace import trace_html as _trace_html

    return _trace_html(events, limit=limit)


# ---- completion and help ----------------------------------------------------------------------

def op_names() -> list[str]:
    """Every registered operator name, sorted."""
    from relay_ref.ops.registry import all_ops

    return sorted(all_ops())


def op_info(name: str) -> Any:
    """The registry entry of operator ``name`` (``name``, ``arg_names``, ``num_inputs``,
    ``attrs`` -- a dataclass whose fields are the attribute names and defaults --, ``doc``,
    ``support_level``), or ``None`` when there is no such operator."""
    from relay_ref.ops.registry import get_op, has_op

    return get_op(name) if has_op(name) else None


def op_doc(name: str) -> str | None:
    """The documentation of operator ``name`` (the kernel's ``:doc``, Shift-Tab and ``?name``,
    and ``relay doc``), or ``None`` when there is no such operator: its signature with the
    attributes and their defaults, its support level, its type as a value with the relation
    that constrains it (spec/typing.md 3.10; whether the relation runs both ways), then the
    registry's doc text::

        add(lhs, rhs)  (operator, support level 1)
        add : fn[t1, t2, t3](t1, t2) -> t3 where Broadcast(t1, t2, t3)  (relation runs ...)

        Elementwise ``lhs + rhs`` with broadcasting. ..."""
    import dataclasses

    op = op_info(name)
    if op is None:
        return None
    args = list(op.arg_names) if op.num_inputs != -1 else ["*args"]
    attrs = []
    if dataclasses.is_dataclass(op.attrs):
        for f in dataclasses.fields(op.attrs):
            if f.default is not dataclasses.MISSING:
                attrs.append(f"{f.name}={_attr_text(f.default)}")
            else:
                attrs.append(f.name)
    sig = f"{op.name}({', '.join(args + attrs)})"
    doc = (op.doc or "").strip()
    # the op's type as a value (spec/typing.md 3.10), e.g. `fn[t1, t2, t3](t1, t2) -> t3
    # where Broadcast(t1, t2, t3)`; backwards-running relations say so
    ty = getattr(op, "type_text", "")
    if ty:
        ty = f"\n{op.name} : {ty}" + ("  (relation runs both ways)" if op.bidirectional
                                      else "")
    return (f"{sig}  (operator, support level {op.support_level}){ty}"
            + (f"\n\n{doc}" if doc else ""))


def _attr_text(value: object) -> str:
    """An attribute's default as Relay text writes it (``[1, 1]``, ``"NCHW"``, ``None``)."""
    if isinstance(value, tuple):
        return "[" + ", ".join(_attr_text(v) for v in value) + "]"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def op_summary(name: str) -> str:
    """The first sentence of the first paragraph of operator ``name``'s doc text, on one line
    (``relay ops``); ``""`` for an unknown operator or one without documentation."""
    import re

    op = op_info(name)
    text = " ".join((op.doc if op is not None else "").split("\n\n")[0].split())
    # a sentence ends at a full stop before a capital ("w.r.t. the", "e.g. 2" go on)
    return re.split(r"(?<=\.) (?=[A-Z])", text, maxsplit=1)[0]


def pass_info() -> list[tuple[str, int, str]]:
    """``(name, opt_level, first paragraph of its docstring)`` for every registered pass
    (read from the classes: a pass whose options have no defaults is listed too)."""
    from relay_ref.passes.registry import pass_class, pass_names

    out = []
    for name in pass_names():
        cls = pass_class(name)
        first = (cls.__doc__ or "").strip().split("\n\n")[0]
        out.append((name, getattr(cls, "opt_level", 0), " ".join(first.split())))
    return out


def pass_options(name: str) -> str:
    """The options of the registered pass ``name`` as ``relay opt --passes`` takes them,
    with their defaults (``"fuse_opt_level=2, max_depth=256, link_params=False"``; ``""``
    for a pass without options; an option without a default shows its name alone)."""
    from relay_ref.passes.base import REQUIRED
    from relay_ref.passes.registry import pass_class

    return ", ".join(key if default is REQUIRED else f"{key}={default!r}"
                     for key, default in pass_class(name).option_defaults().items())


def pass_specs(text: str, source_name: str = "--passes") -> list[tuple[str, str]]:
    """``(name, spec)`` for each pass spec of a comma-separated list (``relay opt --passes
    'FuseOps(max_depth=8),FoldConstant'``: commas inside brackets do not split), names not
    yet checked. A malformed list is a ``RelayError`` located in ``text`` (a one-line source
    called ``source_name``)."""
    from relay_ref.passes.spec import PassSpecError, parse_specs

    try:
        return [(spec.name, spec.text) for spec in parse_specs(text)]
    except PassSpecError as err:
        raise _located(err, source_name) from None


def configured_passes(text: str, source_name: str = "--passes") -> list[Any]:
    """The passes ``text`` lists, each built with its options through the pass manager
    (``relay_ref.passes.manager.make_pass``). A malformed spec, an unknown pass or option
    (the message names the pass's valid options) or a value of the wrong kind is a
    ``RelayError`` located in ``text``, as ``pass_specs``."""
    from relay_ref.passes.manager import make_pass
    from relay_ref.passes.spec import PassSpecError, parse_specs

    try:
        return [make_pass(spec, label=source_name) for spec in parse_specs(text)]
    except PassSpecError as err:
        raise _located(err, source_name) from None


def _located(err: Any, source_name: str) -> RelayError:
    """A ``PassSpecError`` as a ``RelayError`` pointing at its range of the text read."""
    from relay_ref.ir.span import Source

    message = err.message.removeprefix(f"{source_name}: ")
    if not err.text or "\n" in err.text:
        return RelayError(f"{source_name}: {message}")
    span = Span(Source(source_name, err.text), 1, err.start + 1, 1, err.end + 1)
    return RelayError(message, span)


#: The most tensor elements ``check_named_pass`` draws for one parameter of a given program.
MAX_DRAWN_ELEMENTS = 10_000_000


def _elements(ty: Any) -> int:
    """The tensor elements a value of type ``ty`` holds (tensors, tuples of them)."""
    from relay_ref.ir.types import TensorType, subterms

    return sum(math.prod(t.shape) for t in subterms(ty)
               if type(t) is TensorType and all(type(d) is int for d in t.shape))


@dataclass(frozen=True)
class NamedPassCheck:
    """What ``check_named_pass`` found. ``report``: the run's
    ``relay_ref.testing.CheckReport`` (None only if the check stopped before it had one);
    ``problem``: None when the check held, else the message: the shrunk counterexample
    (before and after the pass, arguments, both results), or, when ``vacuous``, why the
    check proved nothing and how to focus it."""

    report: Any
    problem: str | None = None
    vacuous: bool = False


def check_focus(focus: str) -> tuple[str, ...]:
    """The names of a ``check_pass`` focus text (``"maximum,reduce"``: operators, op
    families, expression forms). Raises ``ValueError`` (with a did-you-mean) for an
    unknown name."""
    from relay_ref.testing.programs import resolve_focus

    return resolve_focus(focus).names


def check_named_pass(name: str, examples: int, program: IRModule | None = None, *,
                     focus: str | None = None, min_fired: int | None = None,
                     allow_vacuous: bool = False) -> NamedPassCheck:
    """Run ``relay_ref.testing.check_pass`` on the registered pass ``name`` (a pass spec:
    ``FuseOps(max_depth=8)`` checks the configured pass) with ``examples`` generated
    programs (``focus``, ``min_fired``, ``allow_vacuous``: ``check_pass``'s; a vacuous run
    is a ``NamedPassCheck`` with ``vacuous`` and the hint as ``problem`` unless
    ``allow_vacuous``), or, given ``program``, on that module alone with ``examples``
    argument tuples drawn for its ``@main``'s parameter types
    (``relay_ref.testing.arguments``): then ``focus`` does not apply and vacuity is the
    caller's to judge from the report (the program is fixed: did the pass change it, were
    its results compared). Raises ``RelayError`` for a ``program`` that does not
    type-check, has no ``@main``, or has a parameter no arguments are drawn for (they are
    for tensors of static shape and tuples of them), and ``ValueError`` for an unknown
    ``focus`` name."""
    from relay_ref.passes.manager import make_pass
    from relay_ref.testing.check import DEFAULT_MIN_FIRED, PassCheckError, VacuousCheck, check_pass

    programs = None
    if program is not None:
        from relay_ref.syntax.printer import astext
        from relay_ref.testing.programs import arguments
        from relay_ref.typecheck.infer import infer_types

        if "main" not in program.functions:
            raise RelayError("the program has no @main to draw arguments for")
        checked = infer_types(program)
        types = checked.global_types["main"].arg_types
        for param, ty in zip(checked["main"].params, types, strict=True):
            try:
                arguments([ty])
            except TypeError:
                raise RelayError(f"no arguments can be drawn for @main's parameter "
                                 f"%{param.name_hint}: {astext(ty)} (only for tensors of "
                                 "static shape and tuples of them)", param.span) from None
            size = _elements(ty)
            if size > MAX_DRAWN_ELEMENTS:
                raise RelayError(f"@main's parameter %{param.name_hint}: {astext(ty)} has "
                                 f"{size:,} elements, too many to draw arguments for (at most "
                                 f"{MAX_DRAWN_ELEMENTS:,}): check the pass on a smaller "
                                 "shape", param.span)
        programs = [checked]
        focus, allow_vacuous = None, True  # the caller judges a fixed program's vacuity
    try:
        report = check_pass(make_pass(name), programs=programs, examples=examples,
                            focus=focus, allow_vacuous=allow_vacuous,
                            min_fired=DEFAULT_MIN_FIRED if min_fired is None else min_fired)
    except VacuousCheck as err:
        return NamedPassCheck(err.report, str(err), vacuous=True)
    except PassCheckError as err:
        return NamedPassCheck(err.report, str(err))
    return NamedPassCheck(report)


def prelude_text() -> str:
    """The prelude's source text (``prelude.relay``), read without parsing it."""
    from relay_ref.prelude import PRELUDE_PATH

    return PRELUDE_PATH.read_text(encoding="utf-8")


def warm_up() -> None:
    """Import the parser, the checker, the interpreter and the op library now (a kernel
    does this at start, so the first cell does not pay for it)."""
    import relay_ref.interpreter.driver  # noqa: F401
    import relay_ref.ops.registry  # noqa: F401
    import relay_ref.syntax.parser  # noqa: F401
    import relay_ref.typecheck.infer  # noqa: F401


# ---- models -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OnnxImport:
    """An imported ONNX model: ``module``'s ``@main`` takes the graph inputs (``inputs``:
    ``(onnx name, relay name)`` pairs, in order), then the weights in ``params`` (keyed by
    parameter name; empty with ``freeze_params``)."""

    module: IRModule
    params: dict[str, Any]
    inputs: tuple[tuple[str, str], ...]
    opset: int
    nodes: int


def backend_choices() -> list[str]:
    """The BYOC backends a command may name: the built-in ones (``ort``, ``xla``, loaded
    on first use) and any registered in this process, sorted (``relay partition``)."""
    from relay_ref.byoc.backend import BUILTIN, backend_names

    return sorted({*BUILTIN, *backend_names()})


def with_header(mod: IRModule, line: str) -> IRModule:
    """``mod`` with its header comments (the lines before its first definition, as
    ``relay import`` writes them) replaced by the one comment ``line``."""
    import dataclasses

    from relay_ref.syntax.comments import Attached, CommentTable

    table = mod.comments if isinstance(mod.comments, CommentTable) else CommentTable()
    attached = dict(table.attached)
    header = Attached()
    header.lead.append(line)
    attached[("header",)] = header
    return dataclasses.replace(mod, comments=CommentTable(attached, dict(table.by_def)))


def export_onnx(mod: IRModule, params: Mapping[str, Any] | None = None, *,
                entry: str = "main", opset: int | None = None) -> Any:
    """``relay_ref.frontend.onnx.to_onnx`` (``relay export``): ``@entry`` of ``mod`` as an
    ONNX ``ModelProto``, ``params`` as initializers; a located ``ExportError`` for what
    ONNX cannot express."""
    from relay_ref.frontend.onnx import to_onnx

    return to_onnx(mod, params, entry=entry, opset=opset)


def import_onnx(path: str, shapes: Sequence[tuple[str, tuple[int | None, ...]]] = (), *,
                freeze_params: bool = False) -> OnnxImport:
    """``relay_ref.frontend.onnx.from_onnx`` on the file ``path``, with ``relay import``'s
    ``--shape NAME=DIMS`` specs: a NAME that is a graph input (its ONNX name or its Relay
    name) gets DIMS as its shape (None keeps a dim as declared); any other NAME with one
    dim is a symbolic dimension (``batch=1``). Raises ``FrontendError`` for a file that is
    not a model, unsupported operators, or a spec naming neither."""
    from relay_ref.frontend.onnx import from_onnx
    from relay_ref.frontend.onnx.load import default_opset, load_model
    from relay_ref.frontend.onnx.names import sanitise

    proto = load_model(path)
    inits = {i.name for i in proto.graph.initializer}
    graph_inputs = [i.name for i in proto.graph.input if i.name not in inits]
    by_name = {n: n for n in graph_inputs} | {sanitise(n): n for n in graph_inputs
                                              if sanitise(n) not in graph_inputs}
    given: dict[str, Any] = {}
    for name, dims in shapes:
        if name in by_name:
            given[by_name[name]] = dims
        elif len(dims) == 1 and dims[0] is not None:
            given[name] = dims[0]
        else:
            given[name] = dims  # from_onnx names the mistake
    mod, params = from_onnx(proto, given, freeze_params=freeze_params)
    relay = getattr(params, "relay_names", {})
    return OnnxImport(mod, params, tuple((n, relay.get(n, n)) for n in graph_inputs),
                      default_opset(proto), len(proto.graph.node))
