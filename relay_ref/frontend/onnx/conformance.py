"""ONNX's backend node tests run through relay_ref: ``python -m
relay_ref.frontend.onnx.conformance`` prints a table by op (``--help`` lists the options).

The installed ``onnx`` wheel generates the cases (``onnx.backend.test.case.node.
collect_testcases()``: a one-node model, or a function's expansion, with inputs and the
outputs of ONNX's reference code). ``select`` keeps the *plain-tensor* cases -- every graph
input, output and initializer a tensor of a NumPy dtype -- and counts each left-out case
under one reason (``EXCLUSIONS``, checked in that order). ``run_case`` runs one plain case
through the ONNX backend (``backend.py``; ``rr.compile`` by default, ``rr.evaluate`` with
``executor="evaluate"``) and compares with the case's own ``rtol``/``atol``, as onnx's
runner does (``BackendTest.assert_similar_outputs``: same count, shape, dtype, values).

Outcomes (``OUTCOMES``): ``passed``; ``wrong`` (a result that differs); ``unsupported``
(the up-front check refused the model: an operator without converter, an attribute value
or an opset the frontend does not cover); ``error`` (an ``rr.RelayError`` later: the
conversion or the run failed); ``bug`` (anything raised that is not an ``rr.RelayError``:
always a defect). No plain case is dropped: each gets exactly one outcome.
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from relay_ref.diagnostics import FrontendError, RelayError
from relay_ref.frontend.onnx.backend import EXECUTORS, RelayBackend
from relay_ref.frontend.onnx.load import default_opset, load_model
from relay_ref.frontend.onnx.lookup import lookup
from relay_ref.frontend.onnx.registry import DOMAINS
from relay_ref.frontend.onnx.survey import survey

OUTCOMES = ("passed", "wrong", "unsupported", "error", "bug")

# Why a case is not a plain-tensor case; the first that applies is counted.
EXCLUSIONS = ("training", "ai.onnx.ml", "other domain", "sequence", "optional", "map",
              "sparse", "string", "bfloat16", "float8", "int4/uint4", "float4", "int2/uint2",
              "complex", "other dtype")

_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


@dataclass(frozen=True, slots=True)
class Case:
    """One plain-tensor node test: ``op`` is the ONNX op it tests (an expanded function's
    cases count under the function's op), ``expanded`` whether it is such an expansion."""

    name: str
    op: str
    expanded: bool
    model: Any  # onnx.ModelProto
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    rtol: float
    atol: float


@dataclass(frozen=True, slots=True)
class Result:
    """The outcome of one case; ``detail`` says why it is not ``passed`` (for
    ``unsupported``, ``missing`` lists the operators without a converter, as
    ``Op-version``)."""

    case: str
    op: str
    outcome: str
    detail: str = ""
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Selection:
    """The plain-tensor cases, sorted by name, and the left-out ones counted by reason."""

    cases: tuple[Case, ...]
    excluded: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return len(self.cases) + sum(self.excluded.values())


# -- collecting and selecting ---------------------------------------------------------------

@cache
def collect() -> tuple[Any, ...]:
    """Every node test case of the installed onnx (``onnx.backend.test.case.TestCase``),
    sorted by name. Generating them runs ONNX's reference code (seconds); done once."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # the generators overflow casts on purpose
        cases = collect_testcases()
    return tuple(sorted(cases, key=lambda c: c.name))


@cache
def select() -> Selection:
    """The plain-tensor cases of ``collect()`` and the others counted by reason."""
    raw = collect()
    op_of = {c.name: _single_op(c.model) for c in raw}
    cases, excluded = [], Counter()
    for c in raw:
        reason = exclusion(c)
        if reason is not None:
            excluded[reason] += 1
            continue
        base = _EXPANDED.sub("", c.name)
        op = op_of.get(base) or op_of[c.name] or base.removeprefix("test_")
        inputs, outputs = c.data_sets[0]
        cases.append(Case(c.name, op, base != c.name, c.model,
                          tuple(_array(a) for a in inputs),
                          tuple(_array(a) for a in outputs), float(c.rtol), float(c.atol)))
    return Selection(tuple(cases), excluded)


def _single_op(model: Any) -> str | None:
    nodes = model.graph.node
    return nodes[0].op_type if len(nodes) == 1 else None


def exclusion(case: Any) -> str | None:
    """Why ``case`` is not a plain-tensor case (one of ``EXCLUSIONS``), None when it is."""
    from onnx import TensorProto as T

    graph = case.model.graph
    domains = {n.domain for n in _all_nodes(graph)}
    if any("training" in d for d in domains):
        return "training"
    if "ai.onnx.ml" in domains:
        return "ai.onnx.ml"
    if domains - set(DOMAINS):
        return "other domain"
    elem_types = []
    for value in (*graph.input, *graph.output):
        kind = value.type.WhichOneof("value")
        if kind != "tensor_type":
            return {"sequence_type": "sequence", "optional_type": "optional",
                    "map_type": "map", "sparse_tensor_type": "sparse"}.get(kind, "other dtype")
        elem_types.append(value.type.tensor_type.elem_type)
    elem_types.extend(i.data_type for i in graph.initializer)
    by_type = {T.STRING: "string", T.BFLOAT16: "bfloat16", T.COMPLEX64: "complex",
               T.COMPLEX128: "complex"}
    for t in elem_types:
        name = T.DataType.Name(t) if t in T.DataType.values() else "?"
        if t in by_type:
            return by_type[t]
        if name.startswith("FLOAT8"):
            return "float8"
        if name in ("INT4", "UINT4"):
            return "int4/uint4"
        if name.startswith("FLOAT4"):
            return "float4"
        if name in ("INT2", "UINT2"):
            return "int2/uint2"
        if t not in _PLAIN:
            return "other dtype"
    for arrays in case.data_sets[0]:
        for a in arrays:
            if isinstance(a, T):
                if a.data_type not in _PLAIN:
                    return "other dtype"
            elif not isinstance(a, np.ndarray | np.generic) or a.dtype not in _PLAIN_NP:
                return "other dtype"
    return None


def _array(value: Any) -> np.ndarray:
    """A case's input or output as an array (onnx gives some as ``TensorProto``s or NumPy
    scalars)."""
    from onnx import TensorProto, numpy_helper

    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def _all_nodes(graph: Any) -> Iterable[Any]:
    """The graph's nodes and those of its subgraphs (If branches, Loop bodies)."""
    for node in graph.node:
        yield node
        for a in node.attribute:
            if a.g.node:
                yield from _all_nodes(a.g)
            for g in a.graphs:
                yield from _all_nodes(g)


def _plain() -> tuple[set[int], set[np.dtype]]:
    from onnx import TensorProto as T

    names = ("FLOAT", "DOUBLE", "FLOAT16", "INT8", "INT16", "INT32", "INT64", "UINT8",
             "UINT16", "UINT32", "UINT64", "BOOL")
    types = {getattr(T, n) for n in names}
    dtypes = {np.dtype(d) for d in ("float32", "float64", "float16", "int8", "int16",
                                    "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                    "bool")}
    return types, dtypes


_PLAIN, _PLAIN_NP = _plain()


# -- running --------------------------------------------------------------------------------

def missing_ops(model: Any) -> tuple[str, ...]:
    """The ``Op-version`` pairs of ``model``'s nodes that have no converter (sorted)."""
    import onnx

    try:
        opset = default_opset(model)
    except FrontendError:
        return ()
    out = set()
    for node in model.graph.node:
        if node.domain not in DOMAINS:
            out.add(f"{node.domain}.{node.op_type}")
            continue
        try:
            version = onnx.defs.get_schema(node.op_type, opset, "").since_version
        except Exception:  # onnx.defs.SchemaError: not an op at this opset
            out.add(f"{node.op_type}@{opset}")
            continue
        if lookup(node.op_type, version) is None:
            out.add(f"{node.op_type}-{version}")
    return tuple(sorted(out))


def run_case(case: Case, executor: str = "compile") -> Result:
    """Run ``case`` through the backend; never raises (a non-``RelayError`` is a ``bug``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _run(case, executor)
        except Exception as err:  # a defect: report it with where it was raised
            frame = traceback.extract_tb(err.__traceback__)[-1]
            where = f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno}"
            return Result(case.name, case.op, "bug", f"{type(err).__name__}: {err} ({where})")


def _run(case: Case, executor: str) -> Result:
    try:
        proto = load_model(case.model)
        survey(proto, default_opset(proto))
    except FrontendError as err:
        return Result(case.name, case.op, "unsupported", _first_problem(err),
                      missing_ops(case.model))
    try:
        got = RelayBackend.run_model(case.model, list(case.inputs), executor=executor)
    except RelayError as err:
        return Result(case.name, case.op, "error", _one_line(err.message))
    problem = compare(got, case.outputs, case.rtol, case.atol)
    if problem:
        return Result(case.name, case.op, "wrong", problem)
    return Result(case.name, case.op, "passed")


def compare(got: Sequence[np.ndarray], want: Sequence[np.ndarray], rtol: float,
            atol: float) -> str:
    """What differs between ``got`` and ``want`` ("" when nothing): onnx's runner's checks
    (output count, then per output shape, dtype, values with ``rtol``/``atol``; NaNs equal)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, expected {w.shape}"
        if g.dtype != w.dtype:
            return f"output {i}: dtype {g.dtype}, expected {w.dtype}"
        try:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
        except AssertionError as err:
            lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
            mismatch = next((ln for ln in lines if ln.startswith("Mismatch")), "values differ")
            return f"output {i}: {mismatch}"
    return ""


def _first_problem(err: FrontendError) -> str:
    msgs = [d.message for d in err.diagnostics]
    return _one_line(msgs[1] if len(msgs) > 1 else msgs[0])


def _one_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."


def sweep(cases: Sequence[Case], executor: str = "compile",
          progress: Callable[[Result], None] | None = None) -> list[Result]:
    """``run_case`` on every case, in order; ``progress`` is told of each result."""
    out = []
    for case in cases:
        out.append(run_case(case, executor))
        if progress is not None:
            progress(out[-1])
    return out


# -- reporting ------------------------------------------------------------------------------

def by_op(results: Iterable[Result]) -> dict[str, Counter]:
    """Outcome counts per op (sorted by op name)."""
    table: dict[str, Counter] = {}
    for r in results:
        table.setdefault(r.op, Counter())[r.outcome] += 1
    return dict(sorted(table.items()))


def unsupported_ops(results: Iterable[Result]) -> Counter:
    """How many ``unsupported`` cases each missing ``Op-version`` takes part in."""
    out: Counter = Counter()
    for r in results:
        if r.outcome == "unsupported":
            out.update(r.missing or ("(attribute or opset)",))
    return out


def markdown(selection: Selection, results: Sequence[Result], executor: str) -> str:
    """The sweep as Markdown: totals, exclusions, the table by op, the missing operators,
    and every wrong / error / bug case with its reason."""
    totals = Counter(r.outcome for r in results)
    n = len(results)
    imported = n - totals["unsupported"]
    lines = [
        f"Plain-tensor cases: {n} of {selection.total} node tests "
        f"(executor: `{executor}`).",
        "",
        "| outcome | cases | share |",
        "|---|---:|---:|",
        *(f"| {o} | {totals[o]} | {100 * totals[o] / max(n, 1):.1f} % |" for o in OUTCOMES),
        "",
        f"Wrong results: {totals['wrong']} of the {imported} cases that import "
        f"({100 * totals['wrong'] / max(imported, 1):.1f} %).",
        "",
        "Left out (not plain-tensor cases), by reason: "
        + ", ".join(f"{k} {v}" for k, v in selection.excluded.most_common()) + ".",
        "",
        "### By op",
        "",
        "| op | cases | " + " | ".join(OUTCOMES) + " |",
        "|---|---:|" + "---:|" * len(OUTCOMES),
    ]
    for op, counts in by_op(results).items():
        lines.append(f"| {op} | {sum(counts.values())} | "
                     + " | ".join(str(counts[o] or "") for o in OUTCOMES) + " |")
    missing = unsupported_ops(results)
    if missing:
        lines += ["", "### Unsupported operators (cases needing each)", "",
                  "| operator | cases |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in missing.most_common()]
    for outcome in ("wrong", "error", "bug"):
        bad = [r for r in results if r.outcome == outcome]
        if bad:
            lines += ["", f"### {outcome.capitalize()} ({len(bad)})", ""]
            lines += [f"- `{r.case}` ({r.op}): {r.detail}" for r in bad]
    return "\n".join(lines) + "\n"


# -- command line ---------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m relay_ref.frontend.onnx.conformance",
        description="Run ONNX's backend node tests (the plain-tensor cases) through "
                    "relay_ref's ONNX backend and print the outcomes by op.")
    p.add_argument("--executor", choices=EXECUTORS, default="compile",
                   help="rr.compile (the backend's default) or rr.evaluate (the "
                        "definitional interpreter); default: %(default)s")
    p.add_argument("-k", "--filter", metavar="REGEX",
                   help="only the cases whose name matches REGEX (re.search)")
    p.add_argument("--op", action="append", default=[], metavar="OP",
                   help="only the cases of this ONNX op (repeatable)")
    p.add_argument("--no-expanded", action="store_true",
                   help="leave out the function-expansion cases (*_expanded)")
    p.add_argument("--show", action="append", default=[], choices=OUTCOMES,
                   help="list the cases with this outcome and why (repeatable; wrong, error "
                        "and bug are always listed)")
    p.add_argument("--markdown", metavar="FILE",
                   help="also write the results as Markdown to FILE")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def filtered(cases: Iterable[Case], pattern: str | None = None, ops: Sequence[str] = (),
             expanded: bool = True) -> list[Case]:
    rx = re.compile(pattern) if pattern else None
    return [c for c in cases if (rx is None or rx.search(c.name))
            and (not ops or c.op in ops) and (expanded or not c.expanded)]


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0 when no case is a ``bug``, 1 otherwise."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    args = _parser().parse_args(argv)
    console = Console()
    with console.status("generating ONNX's node test cases ..."):
        selection = select()
    cases = filtered(selection.cases, args.filter, args.op, not args.no_expanded)
    with Progress(TextColumn("{task.description:<48}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True,
                  disable=args.no_progress) as bar:
        task = bar.add_task("", total=len(cases))
        results = sweep(cases, args.executor,
                        lambda r: bar.update(task, advance=1, description=r.case[:48]))
    _print(console, selection, results, args.show)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(markdown(selection, results, args.executor))
    return 1 if any(r.outcome == "bug" for r in results) else 0


def _print(console: Any, selection: Selection, results: Sequence[Result],
           show: Sequence[str]) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table("op", "cases", *OUTCOMES, title="ONNX node tests by op")
    for op, counts in by_op(results).items():
        table.add_row(op, str(sum(counts.values())), *(str(counts[o] or "") for o in OUTCOMES))
    console.print(table)
    for outcome in OUTCOMES:
        if outcome in ("wrong", "error", "bug") or outcome in show:
            for r in results:
                if r.outcome == outcome:
                    console.print(f"[bold]{outcome}[/] {escape(f'{r.case} ({r.op}): {r.detail}')}",
                                  highlight=False)
    totals = Counter(r.outcome for r in results)
    n = len(results)
    console.print(f"{n} plain-tensor cases of {selection.total} "
                  f"(left out: {', '.join(f'{k} {v}' for k, v in selection.excluded.items())})")
    console.print("  ".join(f"{o} {totals[o]} ({100 * totals[o] / max(n, 1):.1f} %)"
                            for o in OUTCOMES))


if __name__ == "__main__":
    sys.exit(main())
