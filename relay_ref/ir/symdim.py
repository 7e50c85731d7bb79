"""Symbolic dimensions: integer expressions over shape variables (spec/typing.md 5.2, Shape-Sym).

A ``SymDim`` is a polynomial with integer coefficients over *atoms*, kept in one canonical
form, so that ``n * 4`` and ``4 * n``, ``2 * (n + 1)`` and ``2 * n + 2`` are the same value
(structural ``==`` and ``hash``). Atoms are shape variables (``n``) and the operations that
are not polynomial: ``floordiv``/``floormod`` by a non-constant (or a remainder that does not
simplify) and ``min``/``max`` that cannot be decided; their arguments are canonical too.

Invariants:

* A ``SymDim`` is never constant: every operation that gives a constant returns an ``int``.
  So ``isinstance(d, int)`` still means "known", and ``SymDim`` means "symbolic".
* Terms are sorted, coefficients are non-zero, monomials are sorted ``(atom, power)`` pairs
  with ``power >= 1``: equal polynomials have equal ``terms``.
* Shape variables range over the non-negative integers (they are dimensions); provers use
  that and any bounds the caller gives (``{"n": (1, 64)}``), never anything else.
* A question that cannot be decided is never answered ``False``: ``bool(d)``, ``int(d)``,
  ``d < e`` and friends raise ``UndecidableDim`` unless the answer is provable;
  ``prove_equal``/``prove_le`` answer ``True``, ``False`` or ``None`` (unknown).
  ``==`` is the one exception, on purpose: it is *structural* (the same canonical
  expression, what type equality and hashing need), so ``n == m`` is ``False`` although
  ``n`` and ``m`` may be equal at run time. Ask ``prove_equal`` whether two dimensions are
  equal as numbers.
* ``floordiv``/``floormod`` are floor division and the matching remainder (Python's ``//`` and
  ``%``), as TVM's ``floordiv``/``floormod``; by a constant ``c > 0`` they simplify exactly:
  ``floordiv(c*q + r, c) = q + floordiv(r, c)``; nested divisions flatten
  (``floordiv(floordiv(n, 2), 3) = floordiv(n, 6)``, ``floormod(floormod(n, 6), 3) =
  floormod(n, 3)``), common factors cancel (``floordiv(n * 2, 4) = floordiv(n, 2)``), a
  division passes through ``min``/``max`` (monotone), and a divisor provably non-zero that
  divides exactly as a polynomial gives the quotient (``floordiv(n * m + n, m + 1) = n``).
  Every simplification is an identity for all integer values where the division is defined
  (a divisor that may be 0 is never simplified away: ``floordiv(m * n, m)`` stays).
* Printing keeps the user's forms, so one value may have several canonical forms
  (``floormod(n, 2)`` and ``n - floordiv(n, 2) * 2``; ``floordiv(n + 1, 2)`` and
  ``n - floordiv(n, 2)``): the provers compare *normal forms* (``_normal``: remainders
  expanded, each ``floordiv`` atom one of its pair, ``min``/``max`` as ``a + min(0, e)``,
  re-simplified under the caller's bounds), so whatever TVM's analyzer proves equal on the
  corpus of tests/ir/test_symdim.py they prove equal too (its listed gaps aside).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from math import inf

#: ``(lower, upper)`` bounds of shape variables; absent means ``(0, inf)``.
Bounds = Mapping[str, tuple[float, float]]


class UndecidableDim(TypeError):
    """A comparison or conversion of a symbolic dimension that cannot be decided statically
    (``bool(n > 2)``, ``int(n)``). Callers that can degrade (``dim_map``) catch it."""


@dataclass(frozen=True, slots=True)
class Atom:
    """A shape variable (``op == "var"``, ``args == (name,)``) or an opaque operation
    (``floordiv``, ``floormod``, ``min``, ``max``) over canonical dimensions."""

    op: str
    args: tuple

    def text(self) -> str:
        if self.op == "var":
            return self.args[0]
        return f"{self.op}({', '.join(dim_to_text(a) for a in self.args)})"

    def key(self) -> tuple:
        # variables before operations, then by text: a total, deterministic order
        return (0 if self.op == "var" else 1, self.text())


Monomial = tuple[tuple[Atom, int], ...]


def _mono_key(m: Monomial) -> tuple:
    return (-sum(p for _, p in m), tuple((a.key(), -p) for a, p in m))


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    powers: dict[Atom, int] = dict(a)
    for atom, p in b:
        powers[atom] = powers.get(atom, 0) + p
    return tuple(sorted(powers.items(), key=lambda ap: ap[0].key()))


@dataclass(frozen=True, slots=True)
class SymDim:
    """A non-constant symbolic dimension in canonical form: ``terms`` pairs each monomial
    (``()`` is the constant term) with its non-zero integer coefficient, sorted."""

    terms: tuple[tuple[Monomial, int], ...]

    # ---- construction -------------------------------------------------------------------

    @staticmethod
    def var(name: str) -> SymDim:
        return SymDim((((((Atom("var", (name,)), 1),)), 1),))

    @staticmethod
    def _from(poly: dict[Monomial, int]) -> Dim:
        terms = tuple(sorted(((m, c) for m, c in poly.items() if c),
                             key=lambda mc: _mono_key(mc[0])))
        if not terms:
            return 0
        if len(terms) == 1 and terms[0][0] == ():
            return terms[0][1]
        return SymDim(terms)

    def _poly(self) -> dict[Monomial, int]:
        return dict(self.terms)

    # ---- arithmetic (Python operators; ints mix in) -------------------------------------

    def __add__(self, other: object) -> Dim:
        return add(self, other) if _is_dim(other) else NotImplemented

    __radd__ = __add__

    def __sub__(self, other: object) -> Dim:
        return add(self, mul(-1, other)) if _is_dim(other) else NotImplemented

    def __rsub__(self, other: object) -> Dim:
        return add(other, mul(-1, self)) if _is_dim(other) else NotImplemented

    def __neg__(self) -> Dim:
        return mul(-1, self)

    def __mul__(self, other: object) -> Dim:
        return mul(self, other) if _is_dim(other) else NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, other: object) -> Dim:
        return floordiv(self, other) if _is_dim(other) else NotImplemented

    def __rfloordiv__(self, other: object) -> Dim:
        return floordiv(other, self) if _is_dim(other) else NotImplemented

    def __mod__(self, other: object) -> Dim:
        return floormod(self, other) if _is_dim(other) else NotImplemented

    def __rmod__(self, other: object) -> Dim:
        return floormod(other, self) if _is_dim(other) else NotImplemented

    # ---- questions that must not be answered silently -----------------------------------

    def __bool__(self) -> bool:
        raise UndecidableDim(f"the truth value of the dimension {self} is not known statically")

    def __int__(self) -> int:
        raise UndecidableDim(f"the dimension {self} has no value until run time")

    __index__ = __int__

    def __lt__(self, other: object) -> bool:
        return _decide(prove_lt(self, other), self, "<", other)

    def __le__(self, other: object) -> bool:
        return _decide(prove_le(self, other), self, "<=", other)

    def __gt__(self, other: object) -> bool:
        return _decide(prove_lt(other, self), self, ">", other)

    def __ge__(self, other: object) -> bool:
        return _decide(prove_le(other, self), self, ">=", other)

    def __str__(self) -> str:
        return dim_to_text(self)

    __repr__ = __str__


Dim = int | SymDim


def _is_dim(x: object) -> bool:
    return isinstance(x, (int, SymDim)) and not isinstance(x, bool)


def _decide(answer: bool | None, a: object, op: str, b: object) -> bool:
    if answer is None:
        raise UndecidableDim(f"cannot decide {a} {op} {b} statically")
    return answer


def _poly_of(d: object) -> dict[Monomial, int]:
    if isinstance(d, SymDim):
        return d._poly()
    if isinstance(d, int):
        return {(): d} if d else {}
    raise TypeError(f"not a dimension: {d!r}")


def sym(name: str) -> SymDim:
    """The shape variable ``name``."""
    return SymDim.var(name)


def add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    out = _poly_of(a)
    for m, c in _poly_of(b).items():
        out[m] = out.get(m, 0) + c
    return SymDim._from(out)


def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    out: dict[Monomial, int] = {}
    for ma, ca in _poly_of(a).items():
        for mb, cb in _poly_of(b).items():
            m = _mono_mul(ma, mb)
            out[m] = out.get(m, 0) + ca * cb
    return SymDim._from(out)


def _split(p: dict[Monomial, int], c: int) -> tuple[dict[Monomial, int], dict[Monomial, int]]:
    """``p = c * q + r`` with every coefficient of ``r`` in ``[0, c)``."""
    q = {m: k // c for m, k in p.items()}
    r = {m: k % c for m, k in p.items()}
    return q, r


def _atom_dim(op: str, a: Dim, b: Dim) -> SymDim:
    return SymDim((((((Atom(op, (a, b)), 1),)), 1),))


def _single_atom(mono: Monomial, op: str) -> Atom | None:
    """The atom of ``mono`` if it is one ``op`` atom by a positive constant, to power 1."""
    if len(mono) == 1 and mono[0][1] == 1:
        atom = mono[0][0]
        if atom.op == op and isinstance(atom.args[1], int) and atom.args[1] > 0:
            return atom
    return None


def _floordiv_rem(rem: Dim, b: int) -> Dim:
    """``floordiv(rem, b)`` for ``b > 0`` and ``rem`` with every coefficient in ``[0, b)``.

    Nested division flattens: ``floordiv(floordiv(x, c) + y, b) = floordiv(x + c * y, c * b)``
    (``floor(floor(u) / b) = floor(u / b)`` for an integer ``b > 0``; exact for every integer
    ``x``, ``y``), applied to the first ``floordiv`` atom with coefficient 1."""
    if isinstance(rem, int):
        return rem // b
    lo, hi = bounds_of(rem)
    if lo >= 0 and hi < b:
        return 0
    for mono, coeff in rem.terms:
        inner = _single_atom(mono, "floordiv") if coeff == 1 else None
        if inner is not None:
            x, c = inner.args
            rest = add(rem, mul(-1, SymDim(((mono, 1),))))
            return floordiv(add(x, mul(c, rest)), c * b)
    for mono, coeff in rem.terms:
        if coeff == 1 and len(mono) == 1 and mono[0][1] == 1 and mono[0][0].op in ("min", "max"):
            shift = add(rem, mul(-1, SymDim(((mono, 1),))))
            if isinstance(shift, int):
                # floordiv is monotone: floordiv(min(x, y) + k, b) = min(floordiv(x + k, b), ...)
                x, y = mono[0][0].args
                return _minmax(mono[0][0].op, floordiv(add(x, shift), b),
                               floordiv(add(y, shift), b))
    g = _common_factor(rem, b)
    if g > 1:  # floordiv(g * x, g * c) = floordiv(x, c)
        return _floordiv_rem(_divide_exactly(rem, g), b // g)
    return _atom_dim("floordiv", rem, b)


def _common_factor(rem: SymDim, b: int) -> int:
    return math.gcd(b, *(c for _, c in rem.terms))


def _divide_exactly(d: SymDim, g: int) -> Dim:
    return SymDim._from({m: c // g for m, c in d.terms})


def _exact_quotient(a: Dim, b: SymDim) -> Dim | None:
    """``q`` with ``a == b * q`` as polynomials over the atoms (integer coefficients), or
    ``None`` when there is none (multivariate division by one divisor under the graded
    lexicographic order: ``b`` divides ``a`` iff the remainder is 0, and then ``LT(b)``
    divides the leading term at every step). Bounded: at most 64 steps."""
    pa, pb = _poly_of(a), b._poly()
    atoms = sorted({atom for m in (*pa, *pb) for atom, _ in m}, key=Atom.key)

    def order(m: Monomial) -> tuple:
        powers = dict(m)
        return (sum(powers.values()), tuple(powers.get(x, 0) for x in atoms))

    lead_b = max(pb, key=order)
    coeff_b = pb[lead_b]
    lead_powers = dict(lead_b)
    rem, quot = dict(pa), {}
    for _ in range(64):
        if not rem:
            return SymDim._from(quot)
        lead = max(rem, key=order)
        powers = dict(lead)
        if rem[lead] % coeff_b or any(powers.get(x, 0) < p for x, p in lead_powers.items()):
            return None
        mq: Monomial = tuple(sorted(((x, p - lead_powers.get(x, 0)) for x, p in powers.items()
                                     if p > lead_powers.get(x, 0)), key=lambda xp: xp[0].key()))
        cq = rem[lead] // coeff_b
        quot[mq] = quot.get(mq, 0) + cq
        for m, c in pb.items():
            mm = _mono_mul(mq, m)
            left = rem.get(mm, 0) - cq * c
            if left:
                rem[mm] = left
            else:
                rem.pop(mm, None)
    return None


def _nonzero(b: Dim, bounds: Bounds | None = None) -> bool:
    lo, hi = _min_max_bounds(b, bounds)
    return lo >= 1 or hi <= -1


def floordiv(a: Dim, b: Dim) -> Dim:
    """Floor division (TVM's ``floordiv``); by zero raises ``ZeroDivisionError``.

    Exact simplifications only: by a constant ``c > 0``, ``floordiv(c*q + r, c) = q +
    floordiv(r, c)`` (nested divisions flatten, ``_floordiv_rem``); by a negative constant,
    ``floordiv(a, -c) = floordiv(-a, c)``; by a provably non-zero ``b`` that divides ``a``
    exactly as a polynomial (``floordiv(m * n, m)`` with ``m >= 1``), the quotient."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if b == 0:
        raise ZeroDivisionError("dimension divided by zero")
    if isinstance(b, int) and b > 0:
        q, r = _split(_poly_of(a), b)
        return add(SymDim._from(q), _floordiv_rem(SymDim._from(r), b))
    if isinstance(b, int) and b < 0:
        return floordiv(mul(-1, a), -b)  # floor(a / b) == floor(-a / -b)
    assert isinstance(b, SymDim)
    if _nonzero(b):
        quot = _exact_quotient(a, b)
        if quot is not None:
            return quot
        if prove_le(0, a) and prove_lt(a, b):  # 0 <= a < b
            return 0
        if prove_lt(a, 0) and prove_le(0, add(a, b)):
            return -1  # -b <= a < 0
    return _atom_dim("floordiv", a, b)


def floormod(a: Dim, b: Dim) -> Dim:
    """The remainder of floor division (TVM's ``floormod``): ``a - b * floordiv(a, b)``.

    By a constant ``c > 0`` the remainder polynomial (coefficients in ``[0, c)``) is kept when
    provably in ``[0, c)``; a ``k * floormod(x, d)`` term with ``c | k * d`` is ``k * x``
    modulo ``c`` (``floormod(floormod(n, 6), 3) = floormod(n, 3)``). By a provably non-zero
    ``b`` that divides ``a`` exactly: 0."""
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    if b == 0:
        raise ZeroDivisionError("dimension divided by zero")
    if isinstance(b, int) and b > 0:
        _, r = _split(_poly_of(a), b)
        rem = SymDim._from(r)
        if isinstance(rem, int):
            return rem % b
        lo, hi = bounds_of(rem)
        if lo >= 0 and hi < b:
            return rem
        for mono, coeff in rem.terms:
            inner = _single_atom(mono, "floormod")
            if inner is not None and (coeff * inner.args[1]) % b == 0:
                # k * floormod(x, d) = k * x - k * d * floordiv(x, d), a multiple of b apart
                rest = add(rem, mul(-coeff, SymDim(((mono, 1),))))
                return floormod(add(rest, mul(coeff, inner.args[0])), b)
        g = _common_factor(rem, b)
        if g > 1:  # floormod(g * x, g * c) = g * floormod(x, c)
            return mul(g, floormod(_divide_exactly(rem, g), b // g))
        return _atom_dim("floormod", rem, b)
    if isinstance(b, int):  # b < 0: a - b * floor(a / b) = -(-a - (-b) * floor(-a / -b))
        return mul(-1, floormod(mul(-1, a), -b))
    if a == b:
        return 0
    if isinstance(b, SymDim) and _nonzero(b):
        if _exact_quotient(a, b) is not None:
            return 0
        if prove_le(0, a) and prove_lt(a, b):  # 0 <= a < b
            return a
        if prove_lt(a, 0) and prove_le(0, add(a, b)):  # -b <= a < 0
            return add(a, b)
    return _atom_dim("floormod", a, b)


def _minmax(op: str, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b) if op == "min" else max(a, b)
    # a <= b or b <= a provable (either order: interval bounds are not symmetric, e.g.
    # max(n, 0) is n because 0 <= n, while n <= 0 is undecidable): the smaller / larger one
    le = prove_le(a, b)
    if le is None and prove_le(b, a):
        le = False
    if le is not None:
        return (a if le else b) if op == "min" else (b if le else a)
    # max(min(x, c), min(y, c)) = min(max(x, y), c) and dually (a distributive lattice)
    dual = "max" if op == "min" else "min"
    ia, ib = _bare_atom(a, dual), _bare_atom(b, dual)
    if ia is not None and ib is not None:
        common = [c for c in ia.args if c in ib.args]
        if common:
            x = ia.args[1] if ia.args[0] == common[0] else ia.args[0]
            y = ib.args[1] if ib.args[0] == common[0] else ib.args[0]
            return _minmax(dual, _minmax(op, x, y), common[0])
    # min(a, min(x, y)): an operand that another one bounds is dropped (max alike)
    for one, other in ((a, b), (b, a)):
        inner = _bare_atom(other, op)
        if inner is None:
            continue
        for x, y in (inner.args, inner.args[::-1]):
            first, second = (x, one) if op == "min" else (one, x)
            if prove_le(first, second):  # ``one`` never wins
                return other
            if prove_le(second, first):  # ``x`` never wins
                return _minmax(op, one, y)
    x, y = sorted((a, b), key=dim_to_text)  # commutative: one order
    return SymDim((((((Atom(op, (x, y)), 1),)), 1),))


def _bare_atom(d: Dim, op: str) -> Atom | None:
    if isinstance(d, SymDim) and len(d.terms) == 1:
        mono, coeff = d.terms[0]
        if coeff == 1 and len(mono) == 1 and mono[0][1] == 1 and mono[0][0].op == op:
            return mono[0][0]
    return None


def dim_min(a: Dim, b: Dim) -> Dim:
    return _minmax("min", a, b)


def dim_max(a: Dim, b: Dim) -> Dim:
    return _minmax("max", a, b)


# ---- bounds and proofs --------------------------------------------------------------------


def _imul(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    prods = [x * y for x in a for y in b
             if not ((x == 0 and abs(y) == inf) or (y == 0 and abs(x) == inf))]
    if not prods:
        return (0, 0)
    return (min(prods), max(prods))


def _atom_bounds(atom: Atom, bounds: Bounds | None) -> tuple[float, float]:
    if atom.op == "var":
        return (bounds or {}).get(atom.args[0], (0, inf))
    a, b = atom.args
    la, ha = bounds_of(a, bounds)
    lb, hb = bounds_of(b, bounds)
    if atom.op == "min":
        return (min(la, lb), min(ha, hb))
    if atom.op == "max":
        return (max(la, lb), max(ha, hb))
    if lb <= 0:
        return (-inf, inf)
    if atom.op == "floormod":  # in [0, b); at most a when a >= 0 (then it is a or smaller)
        return (0, min(hb - 1, ha) if la >= 0 else hb - 1)
    # floordiv by a positive divisor in [lb, hb]
    cands = [x / y for x in (la, ha) for y in (lb, hb) if abs(x) != inf or abs(y) != inf]
    lo = min(cands) if la != -inf else -inf
    hi = max(cands) if ha != inf else inf
    return (lo if lo == -inf else int(lo // 1), hi if hi == inf else int(hi // 1))


def bounds_of(d: Dim, bounds: Bounds | None = None) -> tuple[float, float]:
    """An interval ``(lo, hi)`` containing every value of ``d`` (interval arithmetic; shape
    variables in ``[0, inf)`` unless ``bounds`` says otherwise)."""
    if isinstance(d, int):
        return (d, d)
    lo_total, hi_total = 0.0, 0.0
    for mono, coeff in d.terms:
        iv: tuple[float, float] = (coeff, coeff)
        for atom, p in mono:
            ab = _atom_bounds(atom, bounds)
            for _ in range(p):
                iv = _imul(iv, ab)
        lo_total += iv[0]
        hi_total += iv[1]
    return (lo_total, hi_total)


def _ceil(x: float) -> float:
    return x if abs(x) == inf else float(math.ceil(x))


def _floor(x: float) -> float:
    return x if abs(x) == inf else float(math.floor(x))


def _min_max_bounds(d: Dim, bounds: Bounds | None) -> tuple[float, float]:
    """``bounds_of(d)``, tightened where ``d`` has a ``min``/``max``/``floordiv`` atom alone
    in a term: ``min(x, y) <= x`` and ``max(x, y) >= x``, so replacing the atom by one of its
    arguments bounds ``d`` on one side (below for ``-min``/``+max`` terms, above for
    ``+min``/``-max``); ``(x - k + 1) / k <= floordiv(x, k) <= x / k`` for a constant
    ``k > 0`` bounds it on both. Interval bounds alone lose the relation between an atom and
    its own arguments (``n - min(n, m)`` is ``>= 0``, yet its interval is ``(-inf, inf)``).
    Each atom is tried alone (the others keep their interval bounds)."""
    lo, hi = bounds_of(d, bounds)
    if not isinstance(d, SymDim):
        return lo, hi
    for mono, coeff in d.terms:
        if len(mono) != 1 or mono[0][1] != 1 or mono[0][0].op not in ("min", "max",
                                                                       "floordiv"):
            continue
        atom = mono[0][0]
        rest = add(d, mul(-coeff, SymDim(((mono, 1),))))
        if atom.op == "floordiv":
            x, k = atom.args
            if not isinstance(k, int) or k <= 0:
                continue
            # (x - k + 1) / k <= floordiv(x, k) <= x / k, so k * d lies between
            # k * rest + coeff * x and k * rest + coeff * (x - k + 1) (ordered by coeff's sign)
            a_lo, a_hi = bounds_of(add(mul(k, rest), mul(coeff, x)), bounds)
            b_lo, b_hi = bounds_of(add(mul(k, rest), mul(coeff, add(x, 1 - k))), bounds)
            lo = max(lo, _ceil(min(a_lo, b_lo) / k))  # d is an integer
            hi = min(hi, _floor(max(a_hi, b_hi) / k))
            continue
        for arg in atom.args:
            alo, ahi = bounds_of(add(rest, mul(coeff, arg)), bounds)
            if (atom.op == "min") == (coeff < 0):  # the replacement is a lower bound
                lo = max(lo, alo)
            else:
                hi = min(hi, ahi)
    return lo, hi


def _dominance_lower(d: SymDim, bounds: Bounds | None) -> float:
    """A lower bound of ``d`` by monomial dominance: for non-negative integer atoms, ``m'``
    is at least ``m`` when ``m`` divides ``m'`` and every extra factor is an atom of ``m``
    (if one of those is 0 both are 0, else the extra factor is at least 1) or an atom that is
    at least 1. Each negative term is paired greedily with positive terms that dominate it
    (``n * n * n - n * n >= 0``); what is left is bounded by intervals."""
    poly = d._poly()
    # a dominating monomial has a higher degree than the one it dominates; a negative
    # constant is left to the intervals (a monomial is at least 1 only by its atoms' bounds)
    small_deg = min((sum(p for _, p in m) for m, c in poly.items() if c < 0 and m), default=0)
    big_deg = max((sum(p for _, p in m) for m, c in poly.items() if c > 0), default=0)
    if not small_deg or big_deg <= small_deg:
        return -inf
    atom_lo: dict[Atom, float] = {}
    for mono in poly:
        for atom, _ in mono:
            if atom not in atom_lo:
                atom_lo[atom] = _atom_bounds(atom, bounds)[0]
    if any(lo < 0 for lo in atom_lo.values()):
        return -inf

    def dominates(big: Monomial, small: Monomial) -> bool:
        pb, ps = dict(big), dict(small)
        if any(pb.get(x, 0) < p for x, p in ps.items()):
            return False
        return all(x in ps or atom_lo[x] >= 1 for x, p in pb.items() if p > ps.get(x, 0))

    for small in sorted((m for m, c in poly.items() if c < 0), key=_mono_key):
        for big in sorted((m for m, c in poly.items() if c > 0 and m != small), key=_mono_key):
            if poly[small] >= 0:
                break
            if poly[big] > 0 and dominates(big, small):
                t = min(poly[big], -poly[small])
                poly[big] -= t
                poly[small] += t
    return bounds_of(SymDim._from(poly), bounds)[0]


def _diff_bounds(d: Dim, bounds: Bounds | None) -> tuple[float, float]:
    """Bounds of ``d``: relational (``_min_max_bounds``), then monomial dominance where an
    interval bound does not decide the sign."""
    lo, hi = _min_max_bounds(d, bounds)
    if isinstance(d, SymDim) and lo < 0 <= hi:
        lo = max(lo, _dominance_lower(d, bounds))
        if lo < 0:
            neg = mul(-1, d)
            assert isinstance(neg, SymDim)
            hi = min(hi, -_dominance_lower(neg, bounds))
    return lo, hi


# ---- the prover's normal form -------------------------------------------------------------
#
# Printing keeps what the user wrote (``floormod(n, 2)``, ``floordiv(n + 1, 2)``), so one value
# may have several canonical forms. The provers compare *normal forms* instead, which are only
# for comparison (never printed): every ``floormod(x, c)`` by a constant ``c > 0`` becomes
# ``x - c * floordiv(x, c)``; every ``floordiv(r, c)`` atom becomes the chosen one of its pair
# ``floordiv(r, c) = -(q' + floordiv(r', c))`` where ``-r + c - 1 = c * q' + r'`` (so
# ``floordiv(n + 1, 2)`` is ``n - floordiv(n, 2)``); divisions and ``min``/``max`` re-simplify
# under the caller's bounds (``floordiv(m * n, m) = n`` when ``m >= 1``). Each step is an
# identity for all integer values, so equal normal forms mean equal values.


def _pair_choice(r: SymDim) -> tuple:
    return (len(r.terms), dim_to_text(r))


def _normal_floordiv(x: Dim, k: int, bounds: Bounds | None) -> Dim:
    """``floordiv(x, k)`` for ``k > 0`` in normal form (``x`` already normal)."""
    out: Dim = floordiv(x, k)
    if not isinstance(out, SymDim):
        return out
    total: Dim = 0
    for mono, coeff in out.terms:
        atom = _single_atom(mono, "floordiv")  # by c, or by a multiple of c (flattened)
        if atom is None or isinstance(atom.args[0], int):
            # a min/max from floordiv(min(x, y) + k, c) is normalised too
            total = add(total, _normal(SymDim(((mono, coeff),)), bounds) if mono else coeff)
            continue
        r, c = atom.args
        lo, hi = bounds_of(r, bounds)
        if lo >= 0 and hi < c:
            continue  # floordiv(r, c) is 0 within the bounds
        q2, r2p = _split(_poly_of(add(mul(-1, r), c - 1)), c)
        r2 = SymDim._from(r2p)
        if isinstance(r2, SymDim) and (_common_factor(r2, c) > 1
                                       or _pair_choice(r2) < _pair_choice(r)):
            # the twin (reduced by a common factor first: a smaller divisor, so this ends)
            value: Dim = mul(-1, add(SymDim._from(q2), _normal_floordiv(r2, c, bounds)))
        else:
            value = _atom_dim("floordiv", r, c)
        total = add(total, mul(coeff, value))
    return total


def _normal_atom(atom: Atom, bounds: Bounds | None) -> Dim:
    if atom.op == "var":
        return SymDim((((((atom, 1),)), 1),))
    if atom.op == "floormod" and isinstance(atom.args[1], int) and atom.args[1] > 0:
        # x - c * floordiv(x, c), the division built from the canonical x (which it may
        # simplify, e.g. through a max) and then normalised
        x, c = atom.args
        return add(_normal(x, bounds), mul(-c, _normal(floordiv(x, c), bounds)))
    a, b = (_normal(x, bounds) for x in atom.args)
    if atom.op in ("min", "max"):
        le = prove_le(a, b, bounds)
        if le is None and prove_le(b, a, bounds):
            le = False
        if le is not None:
            return (a if le else b) if atom.op == "min" else (b if le else a)
        # min(a, b) = a + min(0, b - a) = b + min(0, a - b): the one whose min argument has
        # a positive leading coefficient; max(a, b) = a + b - min(a, b)
        e = add(b, mul(-1, a))
        base = a
        if isinstance(e, SymDim) and e.terms[0][1] < 0:
            e, base = mul(-1, e), b
        low = add(base, _atom_dim("min", 0, e))
        return low if atom.op == "min" else add(add(a, b), mul(-1, low))
    if isinstance(b, int) and b > 0:
        fd = _normal_floordiv(a, b, bounds)
        return fd if atom.op == "floordiv" else add(a, mul(-b, fd))
    if isinstance(b, SymDim) and _nonzero(b, bounds):
        quot = _exact_quotient(a, b)
        if quot is not None:
            return quot if atom.op == "floordiv" else 0
        if prove_le(0, a, bounds) and prove_lt(a, b, bounds):  # 0 <= a < b
            return 0 if atom.op == "floordiv" else a
        if prove_lt(a, 0, bounds) and prove_le(0, add(a, b), bounds):  # -b <= a < 0
            return -1 if atom.op == "floordiv" else add(a, b)
    if b == 0:
        return _atom_dim(atom.op, a, b)  # undefined; left alone
    return (floordiv if atom.op == "floordiv" else floormod)(a, b)


def _normal(d: Dim, bounds: Bounds | None = None) -> Dim:
    """The prover's normal form of ``d`` (see above). Recursion follows the nesting of
    atoms (dimensions are small expressions)."""
    if isinstance(d, int):
        return d
    if all(atom.op == "var" for mono, _ in d.terms for atom, _ in mono):
        return d  # a polynomial in variables is already normal
    return _normal_cached(d, tuple(sorted(bounds.items())) if bounds else ())


@functools.lru_cache(maxsize=4096)
def _normal_cached(d: SymDim, frozen_bounds: tuple) -> Dim:
    # the checker asks about the same few dimensions again and again: memoised per bounds
    bounds = dict(frozen_bounds) or None
    total: Dim = 0
    for mono, coeff in d.terms:
        term: Dim = coeff
        for atom, p in mono:
            value = _normal_atom(atom, bounds)
            for _ in range(p):
                term = mul(term, value)
        total = add(total, term)
    return _square_free_mins(total)


def _square_free_mins(d: Dim) -> Dim:
    """``t ** p = e ** (p - 1) * t`` for an atom ``t = min(0, e)`` (``t`` is 0 or ``e``), so
    that ``min(a, b) * max(a, b)`` normalises to ``a * b``."""
    if not isinstance(d, SymDim):
        return d
    total: Dim = 0
    changed = False
    for mono, coeff in d.terms:
        term: Dim = coeff
        for atom, p in mono:
            factor: Dim = SymDim((((((atom, 1),)), 1),))
            if p > 1 and atom.op == "min" and atom.args[0] == 0:
                changed = True
                e = atom.args[1]
                for _ in range(p - 1):
                    term = mul(term, e)
                term = mul(term, factor)
                continue
            for _ in range(p):
                term = mul(term, factor)
        total = add(total, term)
    # e's own min atoms may now be squared: repeat (each round lowers the nesting)
    return _square_free_mins(total) if changed else total


def prove_le(a: Dim, b: Dim, bounds: Bounds | None = None) -> bool | None:
    """``True`` if ``a <= b`` for every value of the variables (within ``bounds``), ``False``
    if ``a > b`` for every value, ``None`` when neither is provable."""
    if isinstance(a, int) and isinstance(b, int):
        return a <= b
    if a == b:
        return True
    diff = add(b, mul(-1, a))
    norm = _normal(diff, bounds)
    for d in (diff,) if norm == diff else (diff, norm):
        lo, hi = _diff_bounds(d, bounds)
        if lo >= 0:
            return True
        if hi < 0:
            return False
    return None


def prove_lt(a: Dim, b: Dim, bounds: Bounds | None = None) -> bool | None:
    return prove_le(add(a, 1), b, bounds)


def prove_equal(a: Dim, b: Dim, bounds: Bounds | None = None) -> bool | None:
    """``True`` if ``a`` and ``b`` are provably equal (canonically equal, or equal normal
    forms), ``False`` if they provably differ for every value, ``None`` when it depends on
    the variables."""
    if a == b:
        return True
    if isinstance(a, int) and isinstance(b, int):
        return False
    diff = add(a, mul(-1, b))
    if isinstance(diff, int):
        return diff == 0
    norm = _normal(diff, bounds)
    if isinstance(norm, int):
        return norm == 0
    for d in (diff,) if norm == diff else (diff, norm):
        lo, hi = _diff_bounds(d, bounds)
        if lo > 0 or hi < 0:
            return False
    return None


# ---- variables, substitution, evaluation --------------------------------------------------


def dim_vars(d: object) -> frozenset[str]:
    """The shape variables ``d`` mentions (empty for an ``int`` or ``?``)."""
    if not isinstance(d, SymDim):
        return frozenset()
    out: set[str] = set()
    for mono, _ in d.terms:
        for atom, _ in mono:
            if atom.op == "var":
                out.add(atom.args[0])
            else:
                for arg in atom.args:
                    out |= dim_vars(arg)
    return frozenset(out)


def var_name(d: object) -> str | None:
    """The variable's name if ``d`` is a bare shape variable (``n``), else ``None``."""
    if isinstance(d, SymDim) and len(d.terms) == 1:
        mono, coeff = d.terms[0]
        if coeff == 1 and len(mono) == 1 and mono[0][1] == 1 and mono[0][0].op == "var":
            return mono[0][0].args[0]
    return None


_OPS = {"floordiv": floordiv, "floormod": floormod, "min": dim_min, "max": dim_max}


def substitute_dim(d: object, mapping: Mapping[str, object]) -> object:
    """``d`` with each variable in ``mapping`` replaced by its value (a ``Dim``, or any
    non-dimension such as ``?``, which then makes the whole result that value). Canonical."""
    if not isinstance(d, SymDim):
        return d
    total: Dim = 0
    for mono, coeff in d.terms:
        term: Dim = coeff
        for atom, p in mono:
            if atom.op == "var":
                val = mapping.get(atom.args[0], SymDim.var(atom.args[0]))
            else:
                args = [substitute_dim(a, mapping) for a in atom.args]
                bad = next((a for a in args if not _is_dim(a)), None)
                val = bad if bad is not None else _OPS[atom.op](*args)
            if not _is_dim(val):
                return val
            for _ in range(p):
                term = mul(term, val)
        total = add(total, term)
    return total


def eval_dim(d: object, env: Mapping[str, int]) -> int:
    """The value of ``d`` when every variable has a value in ``env``; ``KeyError`` names the
    first variable without one."""
    if isinstance(d, int):
        return d
    missing = sorted(dim_vars(d) - env.keys())
    if missing:
        raise KeyError(missing[0])
    out = substitute_dim(d, env)
    assert isinstance(out, int)
    return out


# ---- text ---------------------------------------------------------------------------------


def _mono_text(mono: Monomial, coeff: int) -> str:
    parts = [atom.text() for atom, p in mono for _ in range(p)]
    if coeff != 1:
        parts.append(str(coeff))
    return " * ".join(parts)


def dim_to_text(d: object) -> str:
    """A dimension as the text format writes it: ``n * 4 + 2``, ``n - 1``, ``floordiv(n, 2)``
    (positive terms first, highest degree first, constant last; re-parses to the same
    canonical value)."""
    if not isinstance(d, SymDim):
        return str(d)
    pos = [(m, c) for m, c in d.terms if c > 0 and m != ()]
    neg = [(m, -c) for m, c in d.terms if c < 0 and m != ()]
    const = dict(d.terms).get((), 0)
    text = " + ".join(_mono_text(m, c) for m, c in pos) if pos else ""
    if const > 0 and text:
        text += f" + {const}"
    elif const > 0:
        text = str(const)
    if not text:
        text = "0"
    for m, c in neg:
        text += f" - {_mono_text(m, c)}"
    if const < 0:
        text += f" - {-const}"
    return text
