"""Run-time values of the definitional interpreter (spec/semantics.md section 1).

A value is one of:

* a tensor: ``numpy.ndarray`` (0-d for scalars); never mutated once produced;
* a tuple: a Python ``tuple`` of values (``()`` is unit);
* an ADT value: ``ConstructorValue(constructor, fields)``;
* a function: ``Closure(env, func)``, ``RecClosure(closure, var)``, a ``Constructor`` (an
  ADT constructor used as a function, e.g. ``@foldr(Cons, ...)``) or an ``Op`` (an operator
  used as a function);
* a reference: ``RefValue(value)``, a mutable cell; its identity is the store location.

``value_to_text`` prints a value in Relay syntax (``Cons(1, Cons(2, Nil))``, ``2.5f``,
``(1, True)``); it and ``values_equal`` are iterative, so a 100 000-element list prints and
compares without deep recursion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay_ref.ir.expr import Constructor, Function, Op, Var
from relay_ref.ir.type_text import shape_to_text, type_to_text
from relay_ref.syntax.printer import scalar_text

Value = Any  # np.ndarray | tuple | ConstructorValue | Closure | RecClosure | RefValue | ...


class ConstructorValue:
    """An ADT value: ``constructor`` applied to ``fields`` (a tuple of values).

    Two ADT values are equal (``==``) when they come from the same constructor (same ADT,
    same tag) and their fields are equal (``values_equal``); tensors compare by dtype, shape
    and contents."""

    __slots__ = ("constructor", "fields")

    def __init__(self, constructor: Constructor, fields: tuple[Value, ...] | list = ()) -> None:
        self.constructor = constructor
        self.fields = tuple(fields)

    @property
    def tag(self) -> int:
        return self.constructor.tag

    @property
    def name(self) -> str:
        return self.constructor.name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConstructorValue):
            return NotImplemented
        return values_equal(self, other)

    __hash__ = None  # type: ignore[assignment]  # mutable fields may hold refs

    def __repr__(self) -> str:
        return f"ConstructorValue({value_to_text(self)})"


@dataclass(frozen=True, slots=True, eq=False)
class Closure:
    """A function value: ``func`` with the values of its free variables (``env``).

    Invariant: ``env`` maps exactly the free variables of ``func`` (minus the recursive
    variable, for a ``RecClosure``) to values, captured when the closure was made (E-Fn).
    ``global_name`` is set for the closure of a module global (E-Global), which has an empty
    ``env``; it names the frame in Relay-level call stacks."""

    env: dict[Var, Value]
    func: Function
    global_name: str | None = field(default=None)

    def __repr__(self) -> str:
        return value_to_text(self)


@dataclass(frozen=True, slots=True, eq=False)
class RecClosure:
    """A closure bound by ``let %var = fn ...``: applying it binds ``var`` to the RecClosure
    itself before running the body, which is how the function refers to itself (E-App-Rec).
    """

    closure: Closure
    var: Var

    def __repr__(self) -> str:
        return value_to_text(self)


class RefValue:
    """A mutable reference cell (``ref(v)``). The object is the store location; ``value`` is
    what the store holds there. Equality is identity, as for locations."""

    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"RefValue({value_to_text(self.value)})"


# -- equality ----------------------------------------------------------------------------

def values_equal(a: Value, b: Value) -> bool:
    """Structural equality of values: tensors by dtype, shape and contents (NaN != NaN);
    tuples and ADT values field by field; functions and references by identity."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y):
                return False
        elif isinstance(x, tuple):
            if not isinstance(y, tuple) or len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, ConstructorValue):
            if not isinstance(y, ConstructorValue):
                return False
            cx, cy = x.constructor, y.constructor
            if cx is not cy and (cx.tag != cy.tag or cx.belong_to.name != cy.belong_to.name):
                return False
            if len(x.fields) != len(y.fields):
                return False
            stack.extend(zip(x.fields, y.fields, strict=True))
        elif x is not y:
            return False
    return True


# -- printing ----------------------------------------------------------------------------

def scalar_to_text(x: np.generic | np.ndarray) -> str:
    """A scalar exactly as the printer writes the literal: ``1``, ``3i64``, ``2.5f``,
    ``True`` (``relay_ref.syntax.printer.scalar_text``)."""
    text = scalar_text(np.asarray(x))
    return text if text is not None else repr(np.asarray(x)[()])


def tensor_to_text(arr: np.ndarray, threshold: int = 1000) -> str:
    """A tensor: a scalar literal for 0-d arrays; otherwise nested brackets of scalar
    literals (``[[1, 2], [3, 4]]``, ``[0.5f, 1f]``), summarised with ``...`` beyond
    ``threshold`` elements. Empty tensors show their type: ``Tensor[(0, 3), float32]([])``."""
    if arr.ndim == 0:
        return scalar_to_text(arr)
    if arr.size == 0:
        return f"Tensor[{shape_to_text(arr.shape)}, {arr.dtype.name}]([])"
    return np.array2string(arr, separator=", ", threshold=threshold, max_line_width=100,
                           formatter={"all": scalar_to_text})


def _function_signature(func: Function) -> str:
    params = ", ".join(
        f"%{p.name_hint}: {type_to_text(p.type_annotation)}" if p.type_annotation is not None
        else f"%{p.name_hint}"
        for p in func.params)
    tps = ""
    if func.type_params:
        tps = "[" + ", ".join(t.name for t in func.type_params) + "]"
    ret = f" -> {type_to_text(func.ret_type)}" if func.ret_type is not None else ""
    return f"fn {tps}({params}){ret}"


def value_to_text(value: Value) -> str:
    """``value`` in Relay syntax. Functions print as ``<closure fn (%x: int32) -> int32>``
    (``<closure @name ...>`` for a global), references as ``ref(v)``; a reference reached
    again while printing itself prints as ``ref(...)``."""
    out: list[str] = []
    # Work list of values to print and literal strings to emit, processed last-in first-out.
    stack: list[Any] = [value]
    open_refs: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, _Text):
            out.append(item.text)
            if item.closes_ref is not None:
                open_refs.discard(item.closes_ref)
        elif isinstance(item, np.ndarray):
            out.append(tensor_to_text(item))
        elif isinstance(item, np.generic | bool | int | float):
            out.append(scalar_to_text(np.asarray(item)))
        elif isinstance(item, tuple):
            if not item:
                out.append("()")
                continue
            out.append("(")
            parts: list[Any] = []
            for i, f in enumerate(item):
                if i:
                    parts.append(_Text(", "))
                parts.append(f)
            parts.append(_Text(",)" if len(item) == 1 else ")"))
            stack.extend(reversed(parts))
        elif isinstance(item, ConstructorValue):
            out.append(item.constructor.name)
            if item.fields:
                parts = [_Text("(")]
                for i, f in enumerate(item.fields):
                    if i:
                        parts.append(_Text(", "))
                    parts.append(f)
                parts.append(_Text(")"))
                stack.extend(reversed(parts))
        elif isinstance(item, RefValue):
            if id(item) in open_refs:
                out.append("ref(...)")
                continue
            open_refs.add(id(item))
            out.append("ref(")
            stack.append(_Text(")", closes_ref=id(item)))
            stack.append(item.value)
        elif isinstance(item, RecClosure):
            out.append(f"<closure %{item.var.name_hint} = "
                       f"{_function_signature(item.closure.func)}>")
        elif isinstance(item, Closure):
            name = f"@{item.global_name} " if item.global_name else ""
            out.append(f"<closure {name}{_function_signature(item.func)}>")
        elif isinstance(item, Constructor):
            out.append(f"<constructor {item.name}>")
        elif isinstance(item, Op):
            out.append(f"<operator {item.name}>")
        else:
            out.append(f"<{type(item).__name__}>")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Text:
    """A literal piece of output on ``value_to_text``'s work list."""

    text: str
    closes_ref: int | None = None
