"""Run-time failures of compiled code as located ``RelayRuntimeError`` s.

The generated code carries no bookkeeping for errors (no "current node" variable, no
try/except per call: both would cost on every call). When something raises, the traceback
is read instead: each frame of generated code has a line number, ``line_spans`` maps it to
the Relay expression that line computes, and the frames of generated global functions give
the Relay call stack, as the interpreter reports it (``relay_ref.interpreter.stuck.
runtime_error``; frames of self tail calls turned into loops are not repeated).

Stuck-Depth (``TooDeep`` from the generated code, or a ``RecursionError`` where Python's
recursion limit is the bound) is rebuilt from the frames as the interpreter's: the
activations are the generated frames, each repeated for the self tail calls its loop made
(``codegen.tail_calls``); the error is at the call that made activation ``max_depth + 1``
(or at the self tail call a loop was refused), with the first ``max_depth`` activations
as the Relay call stack. A ``RecursionError`` with no more than
``max_depth`` activations (Python's frames spent elsewhere) keeps its own message.
"""

from __future__ import annotations

from typing import Any

from relay_ref.diagnostics import RelayRuntimeError
from relay_ref.executor.codegen import MatchFailure, ShapeMismatch, TooDeep, tail_calls
from relay_ref.interpreter.stuck import Stuck, runtime_error
from relay_ref.interpreter.values import value_to_text
from relay_ref.ir.span import Span
from relay_ref.ops.registry import OpRuntimeError

__all__ = ["runtime_failure"]


#: The rule tag of a failure of a symbolic operator's step (spec/semantics.md Shape-MatchCast,
#: Shape-DPS), as the interpreter's ``shape_op`` tags its stuck states.
_SYMBOLIC_RULES = {"match_cast": "Shape-MatchCast", "call_dps_packed": "Shape-DPS",
                   "call_tir": "Shape-DPS"}


def runtime_failure(err: BaseException, exe: Any) -> RelayRuntimeError:
    """The user-facing error for ``err`` raised inside ``exe``'s generated code."""
    gen = exe.generated
    frames: list[tuple[str, int]] = []  # (generated function, line), outermost first
    loops: list[int] = []  # the self tail calls made by the activation of each frame
    tb = err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == gen.filename:
            frames.append((code.co_name, tb.tb_lineno))
            loops.append(tail_calls(tb.tb_frame) if code.co_name in gen.loops else 0)
        tb = tb.tb_next
    if isinstance(err, TooDeep | RecursionError):
        stuck = _too_deep(err, gen, frames, loops)
        if stuck is not None:
            return runtime_error(stuck, exe.module.source_name)
    span: Span | None = None
    if isinstance(err, ShapeMismatch) and err.at_call and len(frames) > 1:
        frames.pop()  # a parameter's annotation: the call that passed the value failed
    elif isinstance(err, ShapeMismatch) and err.at_call and err.span is not None:
        span = err.span  # the entry's parameter (Shape-Bind), as the interpreter locates it
    if frames and span is None:
        span = gen.line_spans.get(frames[-1][1])
        if isinstance(err, OpRuntimeError):  # inside a fused kernel: the op it names
            span = _fused_op_span(gen, frames[-1][1], str(err)) or span
    if span is None:
        span = exe.module.functions[exe.entry].span
    op = gen.line_ops.get(frames[-1][1], "") if frames else ""
    message = _message(err, exe, op)
    # The stuck state's rule tag, as the interpreter names it (spec/semantics.md 4).
    rule = err.rule if isinstance(err, Stuck) else (
        "E-Match-Fail" if isinstance(err, MatchFailure) else
        err.rule if isinstance(err, ShapeMismatch) else
        _SYMBOLIC_RULES.get(op) if isinstance(err, OpRuntimeError | ValueError | TypeError
                                              | IndexError | MemoryError) else None)
    # A Stuck raised by a cast (Stuck-Cast) keeps its notes: the same text as the interpreter's.
    stuck = Stuck(message, span, err.notes if isinstance(err, Stuck) else (), rule=rule)
    # The interpreter's frames: (called global, call site), innermost first.
    for k in range(len(frames) - 1, -1, -1):
        info = gen.functions.get(frames[k][0])
        if info is None or info.global_name is None:
            continue
        site = gen.line_spans.get(frames[k - 1][1]) if k > 0 else None
        stuck.frames.append((info.global_name, site))
    return runtime_error(stuck, exe.module.source_name)


def _too_deep(err: BaseException, gen: Any, frames: list[tuple[str, int]],
              loops: list[int]) -> Stuck | None:
    """Stuck-Depth as the interpreter reports it (see the module docstring), or None for a
    ``RecursionError`` that is no such state."""
    limit = gen.max_depth
    if isinstance(err, TooDeep) and err.at_call and frames:
        frames, loops = frames[:-1], loops[:-1]  # raised on entry: that call was refused
    # (global name or None, the call that made it) of each activation, outermost first
    acts: list[tuple[str | None, Span | None]] = []
    site: Span | None = None  # the call that makes the next activation
    for (name, line), k in zip(frames, loops, strict=True):
        info = gen.functions.get(name)
        if info is None:  # a closure's factory: no activation
            continue
        acts.append((info.global_name, site))
        tail = gen.loops[name][0] if k else None  # (which self tail call: unknown)
        acts.extend([(info.global_name, tail)] * min(k, limit + 1 - len(acts)))
        if len(acts) > limit:
            break
        site = gen.line_spans.get(line)
    if isinstance(err, TooDeep) and not err.at_call:
        site = err.site
    if len(acts) > limit:  # past the limit: the call that made activation ``limit + 1``
        site = acts[limit][1]
        del acts[limit:]
    elif isinstance(err, RecursionError):
        return None
    stuck = Stuck(f"recursion deeper than {limit} calls", site, rule="Stuck-Depth")
    acts = [act for act in acts if act[0] is not None]  # globals only, as the interpreter
    acts.reverse()  # innermost first
    stuck.frames.extend(acts)
    return stuck


def _fused_op_span(gen: Any, line: int, message: str) -> Span | None:
    """The span of the operator a fused kernel's error names (``"divide: ..."``)."""
    text = gen.source.splitlines()[line - 1] if 0 < line <= gen.source.count("\n") else ""
    for site, spans in gen.op_spans.items():  # keyed by the step's site (``S3``)
        if f"_run({site}," in text:
            return spans.get(message.split(":", 1)[0])
    return None


def _message(err: BaseException, exe: Any, op: str) -> str:
    """What went wrong, in the interpreter's words: an operator's failure (its
    ``OpRuntimeError``, or NumPy refusing arguments whose ``?`` dimensions do not fit) is
    prefixed with the operator's name, as E-App-Op's stuck state says it."""
    if isinstance(err, Stuck):
        return err.message
    if op and isinstance(err, OpRuntimeError | ValueError | TypeError | IndexError):
        message = str(err)
        return message if message.startswith(op) else f"{op}: {message}"
    if isinstance(err, MatchFailure):
        text = value_to_text(exe.converter.to_relay(err.value))
        if len(text) > 80:
            text = text[:77] + "..."
        return f"no match clause matched the value {text}"
    if isinstance(err, OpRuntimeError | ShapeMismatch):
        return str(err)
    if isinstance(err, RecursionError):
        return "recursion nested too deeply for Python's stack"
    if isinstance(err, MemoryError):
        return "ran out of memory"
    return f"internal error in compiled code ({type(err).__name__}: {err}); this is a bug " \
           "in relay_ref"
