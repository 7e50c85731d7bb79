"""Automatic differentiation (spec/ad.md): ``gradient``, the expansion of ``gradient(@f)``
calls, and the ``ExpandGradient`` pass.

* ``gradient(fn_or_module, mode="higher_order", entry="main") -> IRModule``: the module
  whose ``@entry`` is the gradient of the given function in TVM's shape:
  ``fn(T1..Tn) -> O`` becomes ``fn(T1..Tn) -> (O, (T1..Tn))`` (AD-Grad), the value and the
  gradient of the sum of the result's tensors with respect to each input. Modes:

  - ``"higher_order"`` (``gradient_reverse``): reverse mode over the whole language
    (closures, ADTs, recursion, references, ``if``/``match``), with a backpropagator
    reference (the Relay thesis's transformation). PartialEvaluate + DeadCodeElimination
    turn its output on first-order code into straight-line dataflow.
  - ``"first_order"`` (``gradient_first_order``): reverse mode for pure dataflow functions
    (operators, ``let``, tuples, constants), straight-line output without references;
    anything else is a located error saying to use ``higher_order``.
  - ``"forward"`` (``gradient_forward``): forward mode with dual numbers over the whole
    language; the gradient takes one pass per input element (inputs: tensors and tuples
    of tensors of static shapes).

  A ``Function`` (closed, or using prelude ADTs and constructors) is differentiated as the
  ``@main`` of a module with the prelude. The input module may itself call ``gradient``
  (expanded first, so gradients of gradients work).
* ``expand_gradients(mod)``: every ``gradient(f)`` call (``f`` a global or a function
  literal) replaced by the higher-order gradient (AD-Grad-Op), innermost first;
  ``expand_gradients_expr(expr, module)`` for an expression. The public API runs this
  before ``rr.evaluate`` and ``rr.compile`` (the interpreter does not know the passes).
* ``ExpandGradient``: the expansion as a registered pass (types unchanged, values equal).
* ``drop_unreachable(mod, generated, roots)``: the globals an expansion generated that
  the program no longer reaches (``rr.optimize`` applies it after its passes).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from relay_ref.deepstack import run_deep
from relay_ref.diagnostics import ERROR, Diagnostic, Note, RelayError, RelayTypeError
from relay_ref.ir.expr import Call, Expr, Function, GlobalVar, Let, Op, Var
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import FuncType, Type
from relay_ref.ir.visitor import free_vars, post_order
from relay_ref.passes.base import Pass, register_pass
from relay_ref.passes.gradient_common import ad_error, fresh_name, located
from relay_ref.passes.rewrite import rewrite
from relay_ref.suggest import did_you_mean

__all__ = ["MODES", "ExpandGradient", "drop_unreachable", "expand_gradients",
           "expand_gradients_expr", "expand_gradients_exprs", "gradient", "has_gradient"]

MODES = ("higher_order", "first_order", "forward")


def _is_gradient_call(node: Expr) -> bool:
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name == "gradient"


#: modules already expanded (rr.evaluate in a training loop expands once): module -> result
_EXPANDED: weakref.WeakKeyDictionary[IRModule, IRModule] = weakref.WeakKeyDictionary()


def has_gradient(node: IRModule | Expr) -> bool:
    """Whether ``node`` calls the ``gradient`` operator anywhere."""
    if isinstance(node, IRModule):
        done = _EXPANDED.get(node)
        if done is not None:
            return done is not node
        roots = list(node.functions.values())
    else:
        roots = [node]
    found = any(_is_gradient_call(n) for r in roots for n in post_order(r))
    if not found and isinstance(node, IRModule):
        _EXPANDED[node] = node
    return found


def _differentiator(mod: IRModule, mode: str) -> Any:
    if mode == "higher_order":
        from relay_ref.passes.gradient_reverse import ReverseAD

        return ReverseAD(mod)
    if mode == "first_order":
        from relay_ref.passes.gradient_first_order import FirstOrderAD

        return FirstOrderAD(mod)
    if mode == "forward":
        from relay_ref.passes.gradient_forward import ForwardAD

        return ForwardAD(mod)
    raise ValueError(f"gradient: mode must be one of {', '.join(map(repr, MODES))}, not "
                     f"{mode!r}")


def _checked(mod: IRModule) -> IRModule:
    from relay_ref.typecheck.infer import infer_types

    return mod if mod.checked_types else infer_types(mod)


def gradient(fn_or_module: IRModule | Function, mode: str = "higher_order", *,
             entry: str = "main") -> IRModule:
    """The module whose ``@entry`` is the gradient of ``fn_or_module``'s (see the module
    docstring). Raises ``RelayTypeError`` for an ill-typed input, ``RelayError`` (located)
    for what the mode cannot differentiate, ``ValueError`` for an unknown mode."""
    if mode not in MODES:
        raise ValueError(f"gradient: mode must be one of {', '.join(map(repr, MODES))}, "
                         f"not {mode!r}")
    if not isinstance(entry, str):
        raise TypeError(f"gradient: entry must be a str, not {type(entry).__name__}")
    entry = entry.removeprefix("@")
    if isinstance(fn_or_module, Function):
        mod = _function_module(fn_or_module, entry)
    elif isinstance(fn_or_module, IRModule):
        mod = fn_or_module
    else:
        raise TypeError(f"gradient: fn_or_module must be an IRModule or a Function, not "
                        f"{type(fn_or_module).__name__}")
    if entry not in mod.functions:
        hint = did_you_mean(entry, mod.functions, sigil="@")
        raise RelayError(f"gradient: the module has no function @{entry}{hint}")
    # the transforms walk dataflow iteratively, but nests of lets, closures and branches
    # inside expressions recurse, and the type checker does: on a big stack
    return run_deep(lambda: _differentiate(mod, mode, entry), name="relay-ad")


def _differentiate(mod: IRModule, mode: str, entry: str) -> IRModule:
    """``gradient``'s work, on a deep stack: ``@entry`` of ``mod`` differentiated."""
    mod = _checked(expand_gradients(mod))
    ty = mod.global_types[entry]
    assert isinstance(ty, FuncType)
    ad = _differentiator(mod, mode)
    fn = mod.functions[entry]
    try:
        wrapper = ad.wrapper(fn, ty, fn)
    except RelayError as err:  # at a generated node: located at the entry function
        raise located(err, fn.span) from None
    out = ad.extend(mod)
    users = [n for n, f in out.functions.items() if n != entry and any(
        isinstance(g, GlobalVar) and g.name == entry for g in post_order(f))]
    if users:  # other globals call the original: they keep it, under another name
        keep = fresh_name(set(out.functions), f"{entry}_primal")
        out = out.with_function(keep, fn)
        for n in users:
            out = out.with_function(n, rewrite(out.functions[n], lambda e: GlobalVar(keep) if (
                isinstance(e, GlobalVar) and e.name == entry) else None))
    return _checked(out.with_function(entry, wrapper))


def _function_module(fn: Function, entry: str) -> IRModule:
    """A closed function as ``@entry`` of a module with the prelude: its free variables,
    and globals it calls that the prelude lacks (it was taken out of its module), are
    errors; so is an entry naming a prelude function (it would be replaced)."""
    if free_vars(fn):
        names = ", ".join(f"%{v.name_hint}" for v in free_vars(fn))
        raise RelayError(f"gradient: the function has free variables ({names}); "
                         "differentiate a closed function or a module", fn.span)
    from relay_ref.prelude import load_prelude

    base = load_prelude()
    if entry in base.functions:
        raise RelayError(f"gradient: entry={entry!r} names a prelude function (@{entry}); "
                         "choose another name", fn.span)
    missing = next((g for g in post_order(fn) if isinstance(g, GlobalVar)
                    and g.name not in base.functions and g.name != entry), None)
    if missing is not None:
        raise RelayError(f"gradient: the function uses @{missing.name}, a global of its "
                         f"module: pass the module, with the function's name as entry=...",
                         missing.span)
    return replace(base, functions={**base.functions, entry: fn}, checked_types={},
                   global_types={})


# -- AD-Grad-Op: expanding gradient(f) calls ----------------------------------------------

def expand_gradients(mod: IRModule) -> IRModule:
    """``mod`` with every ``gradient(f)`` call expanded (higher-order mode), innermost
    first: a call is expanded once nothing it differentiates calls ``gradient`` any more.
    ``mod`` itself when it has none."""
    if not has_gradient(mod):
        return mod
    done = _EXPANDED.get(mod)
    if done is not None:
        return done
    original = mod
    while True:
        mod = _checked(mod)
        pending = {name for name, fn in mod.functions.items() if has_gradient(fn)}
        if not pending:
            _EXPANDED[original] = mod
            return mod
        mod = run_deep(lambda m=mod, p=pending: _expand_round(m, p), name="relay-ad")


def _reaches(mod: IRModule, name: str, pending: set[str]) -> bool:
    """Whether ``@name`` calls (directly or not) a global that still calls ``gradient``."""
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen or n not in mod.functions:
            continue
        seen.add(n)
        if n in pending:
            return True
        todo.extend(g.name for g in post_order(mod.functions[n]) if isinstance(g, GlobalVar))
    return False


def _ready(mod: IRModule, call: Call, pending: set[str]) -> bool:
    target = call.args[0] if call.args else None
    if isinstance(target, GlobalVar):
        return not _reaches(mod, target.name, pending)
    if isinstance(target, Function):
        return not has_gradient(target) and not any(
            _reaches(mod, g.name, pending) for g in post_order(target)
            if isinstance(g, GlobalVar))
    raise ad_error("gradient(...) takes a global function (@f) or a function literal",
                   call, "AD-Grad-Op")


def _expand_round(mod: IRModule, pending: set[str]) -> IRModule:
    """Expand the calls that are ready (their target reaches no other gradient call)."""
    from relay_ref.passes.gradient_reverse import ReverseAD

    ad = ReverseAD(mod)
    made: dict[str, str] = {}  # target global -> its gradient global
    new_functions: dict[str, Function] = {}
    progress = False
    for name in pending:
        fn = mod.functions[name]
        # gradient calls are rewritten from the original nodes (their types are recorded)
        originals = {id(n): n for n in post_order(fn) if _is_gradient_call(n)}

        def expand(node: Expr, originals: dict[int, Call] = originals) -> Expr | None:
            nonlocal progress
            if not _is_gradient_call(node):
                return None
            orig = originals.get(id(node))
            if orig is None or not _ready(mod, orig, pending):
                return None
            progress = True
            target = orig.args[0]
            ty = mod.checked_types.get(target)
            if not isinstance(ty, FuncType):
                raise ad_error("no function type known for gradient's argument", orig,
                               "AD-Grad-Op")
            try:
                if isinstance(target, GlobalVar):
                    gname = made.get(target.name)
                    if gname is None:
                        gname = fresh_name(set(mod.functions) | set(ad.globals_out)
                                           | set(made.values()), f"{target.name}_grad")
                        made[target.name] = gname
                        ad.globals_out[gname] = ad.wrapper(target, ty, orig)
                    return GlobalVar(gname)
                return ad.wrapper(target, ty, orig)
            except RelayError as err:  # located at (or with a note at) the call
                raise located(err, orig.span, "in the gradient taken here") from None

        new_fn = rewrite(fn, expand)
        if new_fn is not fn:
            new_functions[name] = new_fn
    if not progress:
        call = next(n for name in pending for n in post_order(mod.functions[name])
                    if _is_gradient_call(n))
        raise ad_error("gradient(...) of a function that itself takes this gradient "
                       "(a cycle)", call, "AD-Grad-Op")
    out = ad.extend(mod)
    for name, fn in new_functions.items():
        out = out.with_function(name, fn)
    return out


def drop_unreachable(mod: IRModule, generated: set[str], roots: set[str]) -> IRModule:
    """``mod`` without the globals of ``generated`` (the expansion's ``@f_grad``,
    ``@f_rev``, ADT helpers) that no global of ``roots`` reaches any more: after
    PartialEvaluate has unfolded a gradient into its caller they are dead. Other globals
    are the program's own and kept. ``mod`` itself when nothing is dropped."""
    seen: set[str] = set()
    todo = [n for n in roots if n in mod.functions]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(g.name for g in post_order(mod.functions[n])
                    if isinstance(g, GlobalVar) and g.name in mod.functions)
    dead = {n for n in generated if n in mod.functions and n not in seen}
    if not dead:
        return mod
    return replace(mod, functions={k: v for k, v in mod.functions.items() if k not in dead},
                   global_types={k: v for k, v in mod.global_types.items() if k not in dead})


def expand_gradients_expr(expr: Expr, module: IRModule | None) -> tuple[Expr, IRModule]:
    """An expression with its ``gradient`` calls expanded, and the module (``module``, or
    the prelude) with the globals the expansion added. The expression must be closed."""
    from relay_ref.prelude import load_prelude

    base = module if module is not None else load_prelude()
    free = free_vars(expr)
    if free:
        call = next((n for n in post_order(expr) if type(n) is Call and type(n.op) is Op
                     and n.op.name == "gradient"), None)
        names = ", ".join(f"%{v.name_hint}" for v in free)
        notes = tuple(Note(f"%{v.name_hint} is free here", v.span) for v in free if v.span)
        raise RelayError([Diagnostic(
            ERROR, f"gradient(...) in an expression with free variables ({names}): make them "
            "parameters of a module function and differentiate that (gradient(@f)) "
            "[AD-Grad-Op]",
            getattr(call, "span", None), notes[:3])])
    mod, (body,) = expand_gradients_exprs(base, [expr], stem="gradient_expr")
    return body, replace(mod, checked_types={}, global_types={})


def expand_gradients_exprs(module: IRModule, exprs: Sequence[Expr] = (),
                           var_types: dict[Var, Type] | None = None, *,
                           stem: str = "cell_gradient") -> tuple[IRModule, list[Expr]]:
    """``gradient(f)`` calls expanded (AD-Grad-Op), in the functions of ``module`` and in
    ``exprs``, expressions checked in ``module`` whose free variables are typed by
    ``var_types`` (or their annotations). Returns ``(mod, expanded)``: ``mod`` is ``module``
    with its gradient calls expanded and the globals and ADTs the expansion made added,
    type-checked; ``expanded[i]`` is ``exprs[i]`` without gradient calls, with the same free
    variables, to be evaluated in ``mod``. When nothing calls ``gradient``, ``module`` and
    the expressions are returned unchanged.

    Each expression with a gradient call is expanded as the body of a fresh global (named
    from ``stem``) whose parameters are its free variables, rebound by ``let`` to their
    original binders, so ``gradient(fn (%x: float32) { %x * %y })`` may capture ``%y`` as it
    may capture a parameter in a file; that global is not in ``mod``. Raises what the
    expansion raises, and ``RelayTypeError`` at a free variable without a known type."""
    out = list(exprs)
    todo = [i for i, expr in enumerate(out) if has_gradient(expr)]
    if not todo and not has_gradient(module):
        return module, out
    types = dict(var_types or {})
    functions = dict(module.functions)
    wrappers: dict[int, tuple[str, list[Var]]] = {}
    for i in todo:
        expr = out[i]
        free = free_vars(expr)
        params = []
        for var in free:
            ty = types.get(var, var.type_annotation)
            if ty is None:
                raise RelayTypeError(f"%{var.name_hint} has no known type, so the gradient "
                                     "calls of this expression cannot be expanded", var.span)
            params.append(Var(var.name_hint, ty, var.span))
        body = expr
        for var, param in reversed(list(zip(free, params, strict=True))):
            body = Let(var, param, body, expr.span)
        name = fresh_name(functions, stem)
        functions[name] = Function(tuple(params), body, span=expr.span)
        wrappers[i] = (name, free)
    if wrappers:  # the wrappers have no recorded types yet: the expansion checks it all
        module = replace(module, functions=functions, checked_types={}, global_types={})
    mod = expand_gradients(module)
    kept = dict(mod.functions)
    global_types = dict(mod.global_types)
    for i, (name, free) in wrappers.items():
        body = kept.pop(name).body
        global_types.pop(name, None)
        for var in free:  # the expansion keeps binders (passes/rewrite.py): peel the lets
            assert isinstance(body, Let) and body.var is var, "wrapper lets were rewritten"
            body = body.body
        out[i] = body
    if wrappers:
        mod = replace(mod, functions=kept, global_types=global_types)
    return mod, out


@register_pass
class ExpandGradient(Pass):
    """Expand every ``gradient(f)`` call by higher-order reverse-mode AD (AD-Grad-Op,
    spec/ad.md). Guarantee: ``@main``'s type is unchanged (the expansion has the type the
    ``Gradient`` relation gives the call) and values are equal; a module without
    ``gradient`` calls is returned as it is."""

    name = "ExpandGradient"
    idempotent = True
    opt_level = 0

    def __call__(self, mod: IRModule) -> IRModule:
        out = expand_gradients(mod)
        return out if out is mod else replace(out, checked_types={}, global_types={})
