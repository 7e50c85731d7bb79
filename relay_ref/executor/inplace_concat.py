"""Concatenation in place: the parts of a ``concatenate`` written straight into its result.

A network that concatenates feature maps (squeezenet's fire modules, inception's branches,
densenet's growing blocks) computes each part into an array of its own and then copies
every part into the concatenation's result. When the memory plan
(``relay_ref.executor.memory``) gives the concatenation's result a buffer, the part
producers can write into their slices of that buffer instead; the concatenation's kernel
(``relay_ref.ops.cpu_tensor.concatenate``) then finds each such part already in place and
copies only the others.

``inplace_concats`` picks, in the entry's dataflow graph, each fused-group call ``C`` and the
fields ``F`` of its tuple argument that may be placed, when all of these hold:

* ``C`` gets a static planned buffer (``candidates``), its group's writing step
  (``memory.writer_step``) is the ``concatenate`` step itself, reading either a group
  parameter whose argument is a ``Tuple`` node read by ``C`` only, or a tuple the group
  builds from distinct parameters that no other step of the group reads;
* every axis before the concatenation axis has extent 1, so that each part's slice of the
  result is one C-contiguous run of elements (what kernels' ``out=`` requires);
* a placed field ``F`` is a fused-group call read only by that tuple node (or by ``C``
  when the group builds the tuple; so its value is never seen anywhere but in the
  concatenation), appearing once in the tuple, of a static type with the result's dtype,
  not the function's result, whose group's writing step takes ``out=``
  (``memory.writer_step``), and not itself a concatenation with placed parts (those are
  in its own buffer; nesting buffers is not planned).

A concatenation is placed only when *every* field qualifies: the kernel then copies
nothing. (With some fields copied anyway the saving is the placed parts' copy, against the
kernel's check of which parts are in place, about 5 us: measured a loss on densenet121,
whose growing concatenations place only the new 32-channel map and copy the previous
concatenation, which the next layer reads too. Placing that one as well, the previous
concatenation a prefix of the next one's buffer, is the memory-efficient DenseNet layout;
it needs nested buffers and live ranges extended to every reader of a part.)

Invariant the memory plan keeps: ``C``'s buffer is held from the first placed part's step
to ``C``'s last reader, so nothing else is written into it while a part waits there; a
placed part's bytes are inside ``C``'s and are read by ``C`` only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from relay_ref.ir.expr import Call, Expr, Function, Tuple
from relay_ref.ir.types import TensorType, Type

__all__ = ["ConcatParts", "inplace_concats"]


@dataclass(frozen=True, slots=True, eq=False)
class ConcatParts:
    """``parts[k]`` (a group call) is written into ``starts[k]:`` (its extent) on ``axis`` of
    the result of ``concat`` (a group call): ``part_view`` gives that slice."""

    concat: Call
    parts: tuple[Call, ...]
    axis: int
    starts: tuple[int, ...]

    def part_view(self, whole: object, k: int, extent: int) -> object:
        """Part ``k`` 's slice (of ``extent`` on the axis) of the concatenation's array
        ``whole``: C-contiguous (every axis before ``axis`` has extent 1), with the very
        strides the concatenate kernel's own slice of its ``out`` has."""
        start = self.starts[k]
        return whole[(slice(None),) * self.axis + (slice(start, start + extent),)]  # type: ignore[index]


def _static(ty: Type | None) -> TensorType | None:
    if type(ty) is TensorType and all(type(d) is int for d in ty.shape):
        return ty
    return None


def _fields(call: Call, gp: object, src: int, users: Mapping[Expr, list[Expr]]
            ) -> tuple[tuple[Expr, ...] | None, Expr | None]:
    """The graph nodes concatenated by the group ``call`` (plan ``gp``) whose concatenate
    step reads group value ``src``, and the node that reads them (their only allowed
    reader): a ``Tuple`` argument read by ``call`` only (``src`` a parameter), or ``call``
    itself when the group builds the tuple from parameters that nothing else in the group
    reads (``src`` a tuple step). ``(None, None)`` otherwise."""
    n = gp.n_params  # type: ignore[attr-defined]
    steps = gp.steps  # type: ignore[attr-defined]
    if src < n:
        tup = call.args[src]
        if type(tup) is Tuple and users.get(tup) == [call]:
            return tup.fields, tup
        return None, None
    built = steps[src - n]
    if built.kind != "tuple" or not all(j < n for j in built.inputs) or \
            len(set(built.inputs)) != len(built.inputs):
        return None, None
    others = [j for s in steps if s is not built for j in s.inputs]
    if any(j in others for j in built.inputs):
        return None, None
    return tuple(call.args[j] for j in built.inputs), call


def inplace_concats(nodes: list[Expr], users: Mapping[Expr, list[Expr]], result: Expr,
                    plans: Mapping[Expr, object], types: Mapping[Expr, Type],
                    candidates: Mapping[Expr, int], writer_step: object
                    ) -> list[ConcatParts]:
    """The concatenations whose parts may be written in place (see the module docstring),
    from the entry's dataflow (``nodes`` in run order, ``users``, ``result``), the group
    plans of its group calls, the checked ``types``, the memory plan's ``candidates`` and
    its ``writer_step(plan)``."""
    found: list[ConcatParts] = []
    concats: set[Expr] = set()  # concatenations with placed parts (never parts themselves)
    for node in nodes:
        gp = plans.get(node)
        if gp is None or node not in candidates:
            continue
        ty = _static(types.get(node))
        w = writer_step(gp)  # type: ignore[operator]
        if ty is None or w is None:
            continue
        step = gp.steps[w]  # type: ignore[attr-defined]
        if step.kind != "op" or step.label != "concatenate" or len(step.inputs) != 1:
            continue
        fields, holder = _fields(node, gp, step.inputs[0], users)
        if fields is None:
            continue
        ndim = len(ty.shape)
        axis = step.attrs.axis % ndim if ndim else 0
        if ndim == 0 or math.prod(ty.shape[:axis]) != 1:
            continue
        parts: list[Call] = []
        starts: list[int] = []
        start = 0
        for f in fields:
            fty = _static(types.get(f))
            if fty is None or len(fty.shape) != ndim:
                break  # not a tensor of the concatenation's rank: leave the group alone
            extent = fty.shape[axis]
            fp = plans.get(f)
            if (fp is not None and type(f) is Call and type(f.op) is Function
                    and fty.dtype == ty.dtype and f is not result
                    and users.get(f) == [holder] and sum(g is f for g in fields) == 1
                    and writer_step(fp) is not None  # type: ignore[operator]
                    and f not in concats):  # its own parts are in its buffer already
                parts.append(f)
                starts.append(start)
            start += extent
        else:
            if len(parts) == len(fields) and start == ty.shape[axis]:
                found.append(ConcatParts(node, tuple(parts), axis, tuple(starts)))
                concats.add(node)
    return found
