"""apache-tvm (Relax, TVM >= 0.27) as a live oracle for symbolic shapes (issue 29, item 9).

The differential tests (``tests/relax/test_tvm_differential.py``) write each program twice,
in this project's text and in TVMScript, and compare what the two systems say:

* **Shapes.** TVM's inferred struct info and ``rr.infer_types``' types must have the same
  dtype and rank, and wherever TVM knows a dimension (a ``PrimExpr``), this project's
  dimension, converted to a ``PrimExpr`` over variables *of the same names*, must be provably
  equal to it by TVM's analyzer (``DimProver``). A ``?`` here where TVM knows the
  dimension is a disagreement; where TVM does not know it (``R.Tensor(ndim=2)``) anything
  is accepted.
* **Values.** ``rr.evaluate`` and the Relax VM (``tvm.compile`` for ``llvm``, run on CPU) give
  the same numbers on the same NumPy inputs.
* **Refusals.** What TVM refuses (when parsing or checking, or at run time) this project
  refuses as an ``rr.RelayError`` (``ParseError``/``RelayTypeError`` or ``RelayRuntimeError``).

``to_tvmscript`` translates the symbolic program generator's modules
(``relay_ref.testing.symbolic_programs``) to TVMScript, so generated programs get the same
comparisons.

TVM is imported on first use only (about 1 s), so importing this module costs nothing and it
can be imported where apache-tvm is absent; the functions that need TVM raise ``ImportError``
there (the tests skip only where ``importlib.util.find_spec("tvm")`` finds nothing).

TVM 0.27 names used here (they changed from earlier releases): ``tvm.script.parser.parse``
(the TVMScript parser, from source text; 0.27.0.post1 has no ``tvm.script.from_source``),
``Function.ret_ty`` / ``Var.ty`` (struct info), ``tvm.relax.TensorType`` /
``ShapeExpr.values``, ``tvm.tirx`` (TIR expressions), ``tvm.sym.Analyzer`` (the arithmetic
analyzer), ``tvm.compile`` and ``tvm.relax.VirtualMachine``, ``tvm.runtime.tensor`` (NumPy
-> device tensor), ``out_ty=`` of ``R.call_dps_packed`` / ``R.call_tir``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay_ref.ir.shape import is_any
from relay_ref.ir.symdim import Atom, SymDim
from relay_ref.ir.types import TensorType, TupleType, Type


def _tvm() -> Any:
    import tvm  # noqa: PLC0415 - optional dependency, imported on first use

    return tvm


# ---- TVM's side -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TvmTensor:
    """A tensor's struct info as TVM inferred it: ``shape`` is a tuple of ``PrimExpr`` or
    ``None`` when TVM knows only the rank (``R.Tensor(ndim=k)``); ``ndim`` is ``-1`` when
    TVM does not know the rank either."""

    dtype: str
    ndim: int
    shape: tuple | None


#: A struct info flattened to the nested-tuple form used here: a ``TvmTensor`` or a tuple.
TvmShape = Any


def parse_tvmscript(source: str) -> Any:
    """The ``IRModule`` TVMScript ``source`` denotes (an ``@I.ir_module class``), checked
    well-formed. Raises what TVM raises for a program it refuses (a ``DiagnosticError`` for
    malformed or ill-typed programs)."""
    from tvm.script import parser  # noqa: PLC0415

    return parser.parse(source)


def struct_info(ty: Any) -> TvmShape:
    """TVM's ``TensorType`` / ``TupleType`` struct info as ``TvmTensor`` / nested tuples;
    other struct info (shapes, primitive values, objects) as ``None``."""
    relax = _tvm().relax
    if isinstance(ty, relax.TensorType):
        shape = None
        if ty.shape is not None and isinstance(ty.shape, relax.ShapeExpr):
            shape = tuple(ty.shape.values)
        return TvmTensor(str(ty.dtype), int(ty.ndim), shape)
    if isinstance(ty, relax.TupleType):
        return tuple(struct_info(f) for f in ty.fields)
    return None


def output_of(mod: Any, entry: str = "main") -> TvmShape:
    """The struct info TVM inferred for the result of ``mod[entry]``: its body's, which is
    TVM's deduction (a return annotation, when written, may be coarser)."""
    return struct_info(mod[entry].body.body.ty)


def _var_name(var: Any) -> str:
    return str(var.name)


def bindings_of(mod: Any, entry: str = "main") -> dict[str, TvmShape]:
    """Each variable bound in ``mod[entry]``'s body (dataflow blocks included), by name, with
    the struct info TVM inferred for it (a name bound twice keeps its last binding)."""
    out: dict[str, TvmShape] = {}
    for block in mod[entry].body.blocks:
        for binding in block.bindings:
            out[_var_name(binding.var)] = struct_info(binding.var.ty)
    return out


def compile_module(mod: Any) -> Any:
    """A Relax VM running ``mod`` on the CPU (``llvm``); one compile serves every shape.
    Local functions (closures) are lifted first: TVM 0.27's default pipeline expects it."""
    tvm = _tvm()
    executable = tvm.compile(tvm.relax.transform.LambdaLift()(mod), target="llvm")
    return tvm.relax.VirtualMachine(executable, tvm.cpu())


def _to_numpy(value: Any) -> Any:
    if isinstance(value, (list, tuple)) or type(value).__name__ in ("Array", "Tuple"):
        return tuple(_to_numpy(v) for v in value)
    return value.numpy()


def run_vm(vm: Any, args: Sequence[np.ndarray], entry: str = "main") -> Any:
    """``vm[entry]`` applied to NumPy ``args``: a NumPy array or a tuple of them."""
    tvm = _tvm()
    return _to_numpy(vm[entry](*(tvm.runtime.tensor(np.ascontiguousarray(a)) for a in args)))


def register_tvm_packed(name: str, fn: Callable[..., None]) -> None:
    """Make ``fn(*inputs, *outputs)`` (NumPy arrays; it writes the outputs in place) callable
    from TVMScript's ``R.call_dps_packed(name, ...)``: the VM passes device tensors, which
    are converted to NumPy and copied back. (No symbolic integers are passed: the
    ``sym_args`` of ``rr.register_packed`` have no counterpart here.)"""
    tvm = _tvm()

    def packed(*tensors: Any) -> None:
        arrays = [t.numpy() for t in tensors]
        fn(*arrays)
        for t, a in zip(tensors, arrays, strict=True):
            t.copyfrom(a)

    tvm.register_global_func(name, packed, override=True)


# ---- this project's side ------------------------------------------------------------------


def relay_output_type(checked: Any, entry: str = "main") -> Type:
    """The type ``rr.infer_types`` gave the result expression of ``checked[entry]``'s body
    (the end of its let-chain), as ``output_of`` takes TVM's: inside the function, where
    its match_cast variables are in scope (its signature forgets them, T-ShapeScope, as
    TVM's does)."""
    from relay_ref.ir.expr import Let  # noqa: PLC0415

    body = checked[entry].body
    while isinstance(body, Let):
        body = body.body
    return checked.type_of(body)


def relay_bindings(checked: Any, entry: str = "main") -> dict[str, Type]:
    """Each let-bound variable of ``checked[entry]``'s let-chains, including those inside
    dataflow blocks and in let values (where both versions of a program name their
    bindings; not inside nested functions or branches), by name, with its checked type.
    Iterative: let-chains are long."""
    from relay_ref.ir.expr import Call, Let, Op  # noqa: PLC0415

    out: dict[str, Type] = {}
    stack = [checked[entry].body]
    while stack:
        expr = stack.pop()
        if isinstance(expr, Let):
            out[expr.var.name_hint] = checked.type_of(expr.var)
            stack.append(expr.body)
            stack.append(expr.value)
        elif isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "dataflow":
            stack.extend(expr.args)
    return out


# ---- comparing dimensions -----------------------------------------------------------------


def to_primexpr(dim: Any, variables: dict[str, Any]) -> Any:
    """``dim`` (an ``int`` or a ``SymDim``) as a TVM ``PrimExpr`` of dtype ``int64`` whose
    variables are ``variables[name]`` (created and added when absent), so that the result
    and TVM's own expressions share variables by name. ``?`` has no ``PrimExpr``:
    ``ValueError``. Dimensions are small expressions; recursion follows their nesting."""
    tvm = _tvm()
    tirx = tvm.tirx
    if isinstance(dim, int):
        return tirx.const(dim, "int64")
    if not isinstance(dim, SymDim):
        raise ValueError(f"no PrimExpr for the dimension {dim}")
    total = tirx.const(0, "int64")
    for monomial, coeff in dim.terms:
        term = tirx.const(coeff, "int64")
        for atom, power in monomial:
            factor = _atom_expr(atom, variables)
            for _ in range(power):
                term = term * factor
        total = total + term
    return total


def _atom_expr(atom: Atom, variables: dict[str, Any]) -> Any:
    tirx = _tvm().tirx
    if atom.op == "var":
        name = atom.args[0]
        if name not in variables:
            variables[name] = tirx.Var(name, "int64")
        return variables[name]
    a, b = (to_primexpr(x, variables) for x in atom.args)
    ops = {"floordiv": tirx.floordiv, "floormod": tirx.floormod, "min": tirx.min,
           "max": tirx.max}
    return ops[atom.op](a, b)


def _collect_vars(exprs: Iterator[Any], variables: dict[str, Any]) -> None:
    undefined = _tvm().tirx.analysis.undefined_vars
    for e in exprs:
        for v in undefined(e):
            variables.setdefault(str(v.name), v)


def _tvm_dims(theirs: TvmShape) -> Iterator[Any]:
    stack = [theirs]
    while stack:
        t = stack.pop()
        if isinstance(t, tuple):
            stack.extend(t)
        elif isinstance(t, TvmTensor) and t.shape is not None:
            yield from t.shape


class DimProver:
    """TVM's analyzer over one set of shape variables, matched by name.

    Shape variables range over the non-negative integers (this project's invariant,
    ``relay_ref.ir.symdim``); ``assume`` raises the lower bound of some (``{"n": 2}``: used
    only where TVM's own formula is wrong below the bound, as TVM 0.27's length of
    ``x[1:-1]``, which is ``-1`` at ``n = 1``)."""

    def __init__(self, theirs: TvmShape, assume: Mapping[str, int] | None = None) -> None:
        tvm = _tvm()
        self.variables: dict[str, Any] = {}
        _collect_vars(_tvm_dims(theirs), self.variables)
        self.analyzer = tvm.sym.Analyzer()
        self.assume = dict(assume or {})
        for name, var in self.variables.items():
            self._bound(name, var)

    def _bound(self, name: str, var: Any) -> None:
        sym = _tvm().sym
        lower = self.assume.get(name, 0)
        self.analyzer.update(var, sym.ConstIntBound(lower, sym.ConstIntBound.POS_INF))

    def agree(self, ours: Any, theirs: Any) -> bool:
        """Whether our dimension is provably equal to TVM's ``PrimExpr`` ``theirs``. ``?``
        agrees with nothing TVM knows."""
        if is_any(ours):
            return False
        known = set(self.variables)
        ours_expr = to_primexpr(ours, self.variables)
        for name in set(self.variables) - known:  # our variables TVM's shape lacks
            self._bound(name, self.variables[name])
        return self.equal(ours_expr, theirs)

    def equal(self, a: Any, b: Any) -> bool:
        """Whether TVM proves ``a == b``: its default simplification first, then with
        symbolic bounds (which ``n + floordiv(n, 3) == floordiv(n * 4, 3)`` needs)."""
        if self.analyzer.can_prove_equal(a, b):
            return True
        strength = _tvm().sym.ProofStrength.SYMBOLIC_BOUND
        return bool(self.analyzer.can_prove(a == b, strength))


def compare_types(ours: Type, theirs: TvmShape, where: str = "result",
                  assume: Mapping[str, int] | None = None) -> list[str]:
    """The disagreements between our type and TVM's struct info (empty when they agree): a
    kind, dtype or rank difference, or a dimension TVM knows that ours is not provably
    equal to (``DimProver``; variables matched by name)."""
    problems: list[str] = []
    prover = DimProver(theirs, assume)
    stack: list[tuple[Type, TvmShape, str]] = [(ours, theirs, where)]
    while stack:
        a, b, at = stack.pop()
        if b is None:
            continue  # TVM knows nothing of this one (not a tensor or tuple)
        if isinstance(b, tuple):
            if not isinstance(a, TupleType) or len(a.fields) != len(b):
                problems.append(f"{at}: TVM has a {len(b)}-tuple, we have {a}")
                continue
            fields = enumerate(zip(a.fields, b, strict=True))
            stack.extend((fa, fb, f"{at}.{i}") for i, (fa, fb) in fields)
            continue
        if not isinstance(a, TensorType):
            problems.append(f"{at}: TVM has a tensor, we have {a}")
            continue
        if a.dtype != b.dtype:
            problems.append(f"{at}: dtype {a.dtype}, TVM says {b.dtype}")
        if b.ndim >= 0 and len(a.shape) != b.ndim:
            problems.append(f"{at}: rank {len(a.shape)}, TVM says {b.ndim}")
            continue
        if b.shape is None:
            continue
        for i, (da, db) in enumerate(zip(a.shape, b.shape, strict=True)):
            if not prover.agree(da, db):
                problems.append(f"{at}: dimension {i} is {da} here, TVM infers {db}: "
                                "not provably equal")
    return problems


def dim_pairs(ours: Type, theirs: TvmShape) -> Iterator[tuple[Any, Any]]:
    """Each (our dimension, TVM's ``PrimExpr``) at the same place in two types of the same
    structure (places where TVM knows nothing, or the structures differ, are skipped)."""
    stack: list[tuple[Type, TvmShape]] = [(ours, theirs)]
    while stack:
        a, b = stack.pop()
        if isinstance(b, tuple) and isinstance(a, TupleType) and len(a.fields) == len(b):
            stack.extend(zip(a.fields, b, strict=True))
        elif isinstance(b, TvmTensor) and isinstance(a, TensorType) and b.shape is not None \
                and len(a.shape) == len(b.shape):
            yield from zip(a.shape, b.shape, strict=True)


def unproved_equalities(pairs: Sequence[tuple[Any, Any]],
                        assume: Mapping[str, int] | None = None) -> list[str]:
    """Whenever TVM's analyzer proves two of its dimensions equal, this project's prover
    (``relay_ref.ir.symdim.prove_equal``, with the same bounds) must prove ours equal too:
    the pairs of ours it does not, one line each."""
    from relay_ref.ir.symdim import prove_equal  # noqa: PLC0415

    bounds = {name: (lo, float("inf")) for name, lo in (assume or {}).items()}
    # one representative per distinct pair of texts: programs repeat dimensions a lot
    seen: dict[tuple[str, str], tuple[Any, Any]] = {}
    for ours, theirs in pairs:
        seen.setdefault((str(ours), str(theirs)), (ours, theirs))
    items = list(seen.values())
    prover = DimProver(tuple(TvmTensor("", 1, (t,)) for _, t in items), assume)
    problems = []
    for i, (a, ta) in enumerate(items):
        for b, tb in items[i + 1:]:
            if is_any(a) or is_any(b) or str(a) == str(b):
                continue
            if prover.equal(ta, tb) and prove_equal(a, b, bounds) is not True:
                problems.append(f"TVM proves {ta} == {tb}; we do not prove {a} == {b}")
    return problems


def values_close(ours: Any, theirs: Any, rtol: float = 1e-5, atol: float = 1e-5) -> list[str]:
    """The differences between two results (arrays or nested tuples); empty when equal in
    shape and dtype and close in value."""
    problems: list[str] = []
    stack: list[tuple[Any, Any, str]] = [(ours, theirs, "result")]
    while stack:
        a, b, at = stack.pop()
        if isinstance(b, tuple):
            if not isinstance(a, tuple) or len(a) != len(b):
                problems.append(f"{at}: TVM gives a {len(b)}-tuple, we give {type(a).__name__}")
                continue
            stack.extend((x, y, f"{at}.{i}") for i, (x, y) in enumerate(zip(a, b, strict=True)))
            continue
        a = np.asarray(a)
        if a.shape != b.shape or a.dtype != b.dtype:
            problems.append(f"{at}: {a.dtype}{list(a.shape)} vs TVM's {b.dtype}{list(b.shape)}")
        elif not np.allclose(a, b, rtol=rtol, atol=atol):
            problems.append(f"{at}: values differ by up to {np.max(np.abs(a - b))}")
    return problems


def random_inputs(specs: Sequence[tuple[tuple, str, Any]], sizes: Mapping[str, int],
                  seed: int = 0) -> list[np.ndarray]:
    """NumPy inputs for ``specs`` (``(shape, dtype, high)``: dimensions are ints or shape
    variable names looked up in ``sizes``; integer tensors are drawn from ``[0, high)``,
    ``high`` an int or a variable name; floats from ``[-1, 1)``), reproducibly."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype, high in specs:
        concrete = tuple(sizes[d] if isinstance(d, str) else d for d in shape)
        if np.dtype(dtype).kind in "iu":
            top = sizes[high] if isinstance(high, str) else (high or 4)
            out.append(rng.integers(0, top, size=concrete).astype(dtype))
        elif dtype == "bool":
            out.append(rng.integers(0, 2, size=concrete).astype(bool))
        else:
            out.append(rng.uniform(-1, 1, size=concrete).astype(dtype))
    return out


# ---- translating a module to TVMScript ----------------------------------------------------


class Untranslatable(ValueError):
    """A construct ``to_tvmscript`` does not translate (it says which)."""


#: operators with a direct Relax counterpart taking the same positional arguments
_SAME_ARGS = {"nn.relu": "R.nn.relu", "negative": "R.negative", "tanh": "R.tanh",
              "abs": "R.abs", "sigmoid": "R.sigmoid", "exp": "R.exp", "add": "R.add",
              "subtract": "R.subtract", "multiply": "R.multiply", "divide": "R.divide",
              "maximum": "R.maximum", "minimum": "R.minimum"}
_RESERVED = {"R", "T", "I", "Module", "tvm"}


def _dim_script(dim: Any, variables: dict[str, Any]) -> str:
    """A dimension as TVMScript (an int, or a PrimExpr printed in ``T.`` syntax)."""
    if isinstance(dim, int):
        return str(dim)
    if is_any(dim):
        raise Untranslatable("a ? dimension (TVM writes R.Tensor(ndim=k))")
    return str(to_primexpr(dim, variables))


def _type_script(ty: Type, variables: dict[str, Any], quoted: bool) -> str:
    """``Tensor[...]`` as ``R.Tensor((...), dtype)``; ``quoted`` dimensions (a signature,
    where shape variables are not yet Python names) are strings."""
    if isinstance(ty, TupleType):
        return f"R.Tuple({', '.join(_type_script(f, variables, quoted) for f in ty.fields)})"
    if not isinstance(ty, TensorType):
        raise Untranslatable(f"the type {ty}")
    dims = []
    for d in ty.shape:
        text = _dim_script(d, variables)
        dims.append(f'"{text}"' if quoted and not isinstance(d, int) else text)
    inner = ", ".join(dims) + ("," if len(dims) == 1 else "")
    return f'R.Tensor(({inner}), "{ty.dtype}")'


def _ints(values: Any) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def _operator_script(op: str, attrs: Any, args: list[str], variables: dict[str, Any]
                     ) -> str | None:
    """The Relax call for a Relay operator with attributes (``None``: not one of these).
    Only the attribute values Relax spells the same way are translated."""
    x = args[0] if args else ""
    if op == "reshape" and all(isinstance(d, int) and d >= -1 for d in attrs.newshape):
        shape = ", ".join(str(d) for d in attrs.newshape)
        return f"R.reshape({x}, ({shape},))"
    if op == "concatenate":
        return f"R.concat({x}, axis={attrs.axis})"
    if op == "nn.dense" and not attrs.out_dtype:
        return f"R.matmul({x}, R.permute_dims({args[1]}))"
    if op == "transpose":
        return f"R.permute_dims({x})" if attrs.axes is None else \
            f"R.permute_dims({x}, {_ints(attrs.axes)})"
    if op in ("sum", "mean", "max", "min") and not attrs.exclude:
        axis = "" if attrs.axis is None else f", axis={_ints(attrs.axis)}"
        return f"R.{op}({x}{axis}, keepdims={bool(attrs.keepdims)})"
    if op == "expand_dims" and attrs.axis >= 0:
        axes = range(attrs.axis, attrs.axis + attrs.num_newaxis)
        return f"R.expand_dims({x}, axis={_ints(axes)})"
    if op == "squeeze":
        return f"R.squeeze({x})" if attrs.axis is None else \
            f"R.squeeze({x}, axis={_ints(attrs.axis)})"
    if op in ("nn.max_pool2d", "nn.avg_pool2d") and attrs.layout == "NCHW" and \
            not attrs.out_layout:
        extra = f", count_include_pad={bool(attrs.count_include_pad)}" \
            if op == "nn.avg_pool2d" else ""
        return (f"R.{op}({x}, pool_size={tuple(attrs.pool_size)}, "
                f"strides={tuple(attrs.strides)}, padding={tuple(attrs.padding)}, "
                f"dilation={tuple(attrs.dilation)}, ceil_mode={bool(attrs.ceil_mode)}{extra})")
    if op == "nn.global_avg_pool2d" and getattr(attrs, "layout", "NCHW") == "NCHW":
        return f"R.mean({x}, axis=[2, 3], keepdims=True)"
    return None


class _Translator:
    """One function's body as TVMScript lines; expressions of the generated programs are
    shallow (operands are variables, constants and tuples of them), let-chains long."""

    def __init__(self, variables: dict[str, Any]) -> None:
        self.variables = variables
        self.lines: list[str] = []
        self.temps = 0

    def name(self, var: Any) -> str:
        name = var.name_hint
        if not name.isidentifier() or name in _RESERVED or name in self.variables:
            raise Untranslatable(f"the variable name %{name}")
        return name

    def temp(self, text: str) -> str:
        """Bind ``text`` to a fresh name (TVM 0.27's parser leaves some nested calls, such as
        ``R.reshape(R.permute_dims(x), ...)``, untyped: operands are names)."""
        self.temps += 1
        name = f"tmp_{self.temps}"
        self.lines.append(f"{name} = {text}")
        return name

    def operand(self, e: Any) -> str:
        from relay_ref.ir.expr import Call  # noqa: PLC0415

        return self.temp(self.expr(e)) if isinstance(e, Call) else self.expr(e)

    def expr(self, e: Any) -> str:
        from relay_ref.ir.expr import Call, Constant, Op, Tuple, TupleGetItem, Var  # noqa: PLC0415
        from relay_ref.ops.symbolic import DPSAttrs, MatchCastAttrs  # noqa: PLC0415

        if isinstance(e, Var):
            return self.name(e)
        if isinstance(e, Constant) and np.ndim(e.data) == 0:
            return f'R.const({float(e.data)!r}, "{e.data.dtype}")'
        if isinstance(e, Tuple):
            items = [self.operand(f) for f in e.fields]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if isinstance(e, TupleGetItem):
            return f"{self.temp(self.expr(e.tuple_value))}[{e.index}]"
        if not (isinstance(e, Call) and isinstance(e.op, Op)):
            raise Untranslatable(f"the expression {type(e).__name__}")
        op, attrs = e.op.name, e.attrs
        args = [self.operand(a) for a in e.args]
        if op in _SAME_ARGS:
            return f"{_SAME_ARGS[op]}({', '.join(args)})"
        text = _operator_script(op, attrs, args, self.variables)
        if text is not None:
            return text
        if op == "match_cast" and isinstance(attrs, MatchCastAttrs):
            target = _type_script(attrs.type, self.variables, quoted=False)
            return f"R.match_cast({args[0]}, {target})"
        if op in ("call_dps_packed", "call_tir") and isinstance(attrs, DPSAttrs):
            # call_tir of a packed function: TVM's call_dps_packed is the same call
            out = _type_script(attrs.out_type, self.variables, quoted=False)
            return f'R.call_dps_packed("{attrs.func_name}", {args[0]}, out_ty={out})'
        raise Untranslatable(f"the operator {op}")

    def chain(self, body: Any, indent: str) -> str:
        """Emit ``body``'s let-chain (dataflow blocks as ``with R.dataflow()``) and return
        its final expression."""
        from relay_ref.ir.expr import Call, Let, Op  # noqa: PLC0415

        while isinstance(body, Let):
            value, target = body.value, self.name(body.var)
            if isinstance(value, Call) and isinstance(value.op, Op) and \
                    value.op.name == "dataflow":
                self.lines.append(f"{indent}with R.dataflow():")
                inner = self.chain(value.args[0], indent + "    ")
                self.lines.append(f"{indent}    {target} = {inner}")
                self.lines.append(f"{indent}    R.output({target})")
            else:
                mark = len(self.lines)
                text = self.expr(value)
                self.lines[mark:] = [f"{indent}{line}" for line in self.lines[mark:]]
                self.lines.append(f"{indent}{target} = {text}")
            body = body.body
        mark = len(self.lines)
        text = self.expr(body)
        self.lines[mark:] = [f"{indent}{line}" for line in self.lines[mark:]]
        return text


def to_tvmscript(mod: Any, entry: str = "main") -> str:
    """``mod[entry]`` as a TVMScript module (class ``Module``, function ``main``), for the
    subset the symbolic program generator uses (``relay_ref.testing.symbolic_programs``):
    let-chains and dataflow blocks of elementwise and broadcasting operators, ``reshape``
    with ``-1``, ``concatenate``, ``nn.dense``, ``match_cast``, ``call_dps_packed`` /
    ``call_tir`` of packed functions, tuples and projections, scalar constants. Variable
    names are kept, so bindings compare by name. Raises ``Untranslatable`` otherwise."""
    fn = mod[entry]
    variables: dict[str, Any] = {}
    params = []
    for p in fn.params:
        ty = p.type_annotation
        if ty is None:
            raise Untranslatable(f"the unannotated parameter %{p.name_hint}")
        params.append(f"{p.name_hint}: {_type_script(ty, variables, quoted=True)}")
    tr = _Translator(variables)
    for p in fn.params:
        tr.name(p)
    result = tr.chain(fn.body, "        ")
    # every shape variable the body mentions is declared first (bound by the parameters
    # or by its match_cast, as TVM's parser expects)
    declare = [f"        {v} = T.int64()" for v in sorted(variables)]
    signature = ", ".join(params)
    return "\n".join(["@I.ir_module", "class Module:", "    @R.function",
                      f"    def main({signature}):", *declare, *tr.lines,
                      f"        return {result}", ""])
