"""``relay run FILE [ARG...]``: type-check a program, evaluate ``@main``, print the value.

Arguments are Relay expressions evaluated in the module's context (``3``, ``2.5f``,
``'(1, True)'``, ``'Cons(1, Cons(2, Nil))'``) or ``.npy`` files. A scalar literal written
without a suffix takes the parameter's dtype when it fits exactly (``3`` for an ``int64``
parameter). Exit codes follow ``relay_ref.cli``: 0 ok, 1 an error in the program or its
arguments (diagnostics on stderr), 2 bad usage (unreadable file, result not a tensor for
``--output``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from relay_ref.diagnostics import RelayError
from relay_ref.ir.module import IRModule
from relay_ref.ir.types import TensorType, Type

EXIT_OK, EXIT_USER, EXIT_USAGE = 0, 1, 2


def _colour(stream: Any) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def _usage(message: str) -> int:
    print(f"relay: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_file(args: argparse.Namespace) -> int:
    """Run ``args.file`` as ``relay run`` does; return the exit code."""
    import relay_ref as rr
    from relay_ref.interpreter.trace import format_trace
    from relay_ref.interpreter.values import value_to_text

    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return _usage(f"{args.file}: cannot read: {err}")
    try:
        mod = rr.infer_types(rr.parse(text, args.file, prelude=not args.no_prelude))
        entry = mod.functions.get(args.entry)
        if entry is None:
            return _usage(f"{args.file}: no function @{args.entry} to run")
        if len(args.args) != len(entry.params):
            names = " ".join(f"%{p.name_hint}" for p in entry.params) or "no arguments"
            return _usage(f"@{args.entry} takes {len(entry.params)} argument(s) ({names}), "
                          f"{len(args.args)} given")
        values = []
        for i, (arg, param) in enumerate(zip(args.args, entry.params, strict=True)):
            value = _argument(arg, i, mod, param.type_annotation)
            if isinstance(value, int):  # an exit code
                return value
            values.append(value)
        result = rr.evaluate(mod, *values, entry=args.entry, trace=args.trace)
    except RelayError as err:
        print(err.render(_colour(sys.stderr)), file=sys.stderr)
        return EXIT_USER
    if args.trace:
        result, events = result
        print(format_trace(events))
    if args.output:
        if not isinstance(result, np.ndarray):
            print(value_to_text(result))
            return _usage(f"--output: the result is not a tensor, cannot save it to "
                          f"{args.output}")
        try:
            with open(args.output, "wb") as out:  # np.save(path) would append ".npy"
                np.save(out, result)
        except OSError as err:
            return _usage(f"--output: cannot write {args.output}: {err}")
        print(f"saved {result.dtype.name} tensor of shape {tuple(result.shape)} to "
              f"{args.output}", file=sys.stderr)
        return EXIT_OK
    print(value_to_text(result))
    return EXIT_OK


def _argument(arg: str, index: int, mod: IRModule, ty: Type | None) -> Any:
    """The value of command-line argument ``arg`` (an exit code int on usage errors)."""
    import relay_ref as rr

    if arg.endswith(".npy"):
        try:
            return np.load(arg, allow_pickle=False)
        except (OSError, ValueError) as err:
            return _usage(f"argument {index + 1}: cannot load {arg}: {err}")
    expr = rr.parse_expr(arg, f"<argument {index + 1}>", module=mod)
    value = rr.evaluate(expr, module=mod)
    return _adapt_literal(arg, value, ty)


def _adapt_literal(text: str, value: Any, ty: Type | None) -> Any:
    """An unsuffixed scalar literal takes the parameter's dtype when the value is exact."""
    if (type(ty) is TensorType and isinstance(value, np.ndarray) and value.ndim == 0
            and value.dtype.name != ty.dtype and not any(c.isalpha() for c in text)):
        try:
            cast = value.astype(ty.dtype)
        except (TypeError, ValueError):
            return value
        if cast == value:
            return cast
    return value
