"""Type soundness as a checkable property (progress + preservation, as PLT Redex checks it;
the theorems are spec/semantics.md section 7).

``value_conforms(value, ty, mod)`` says whether a run-time value inhabits a type, the value
typing ``Σ ⊢ v : τ`` of spec/semantics.md 1.1:

* ``Tensor[s, d]``: an ``ndarray`` of dtype ``d`` whose shape matches ``s`` (``?`` matches any
  extent; V-Tensor);
* ``(T1, ..., Tn)``: a tuple of n conforming values (V-Tuple);
* ``Adt[T1, ..., Tk]``: a ``ConstructorValue`` of one of the ADT's constructors whose fields
  conform to the constructor's field types with the ADT's type variables replaced by the
  ``Ti`` (V-Ctor);
* ``fn (...) -> R``: a function value (closure, recursive closure, constructor, operator:
  V-Closure, V-RecClosure, V-CtorFn, V-Op); functions are not inspected further (their
  bodies were checked statically);
* ``ref(T)``: a ``RefValue`` whose current contents conform to ``T`` (V-Ref, with the store
  typing V-Store checked at that cell);
* a type variable: any value.

The check is iterative, so a 100 000-element list is fine.
"""

from __future__ import annotations

# The check lives in the interpreter layer, which uses it for host arguments (``rr.evaluate``
# refuses arguments that do not inhabit their parameter's type); testing sits above it.
from relay_ref.interpreter.args import value_conforms
from relay_ref.ir.types import substitute

__all__ = ["substitute", "value_conforms"]
