"""The shared corpus of the TVM differential tests: each program in this project's text and in
TVMScript (TVM 0.27 Relax), with the inputs to run it on.

Conventions that the comparison relies on:

* Both versions name their parameters, let-bound variables and shape variables alike
  (``%a`` / ``a``, ``n`` / ``"n"``): shapes are compared by variable *name*, for the result
  and for every binding bound in both.
* The TVMScript class is ``Module``, its entry ``main``; functions call each other as
  ``Module.f``. TVM's deduction is read from the body, so a TVMScript ``main`` has no return
  annotation unless the program is about one.
* ``args`` give each parameter's shape (ints and shape-variable names), dtype and, for
  integer tensors, the exclusive upper bound of the values (an int or a variable name: take
  indices stay in range); ``sizes`` the two assignments of the shape variables the values
  are compared at.
* Packed functions named in ``call_dps_packed`` are in ``PACKED`` (``fn(*inputs, *outputs)``,
  writing the outputs in place), registered with both systems by the test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: The two size assignments every program runs at unless it gives its own.
SIZES = ({"n": 3, "m": 2, "k": 4, "h": 9, "w": 8, "b": 2},
         {"n": 5, "m": 6, "k": 3, "h": 12, "w": 7, "b": 3})


@dataclass(frozen=True)
class Program:
    name: str
    relay: str
    tvm: str
    args: tuple = ()
    sizes: tuple = SIZES
    covers: str = ""  # the operator family or construct, for the report
    #: lower bounds of shape variables beyond ``>= 0`` that the shapes are compared under,
    #: only where the two systems differ below the bound for a stated reason: TVM 0.27's
    #: length of ``x[1:-1]`` is ``-1`` rows at ``n = 1`` (wrong; right for ``n >= 2``);
    #: Relay's ``split`` refuses at run time an index beyond the dimension, where TVM
    #: clamps, so ``split(x, [1, 3])`` is compared where it runs (``n >= 3``)
    assume: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Refusal:
    """A program TVM refuses: ``stage`` is ``"static"`` (parsing or checking) or
    ``"runtime"`` (with ``args`` at ``sizes``). ``relay_error`` names the ``rr`` error
    classes acceptable here (this project may refuse earlier than TVM, never not at all)."""

    name: str
    relay: str
    tvm: str
    stage: str
    relay_error: tuple[str, ...]
    args: tuple = ()
    sizes: dict = field(default_factory=dict)
    #: the line (of ``relay``, which starts with an empty line 1) the first diagnostic must
    #: point at, so that a refusal for another reason (a syntax not yet supported) fails
    line: int | None = None


def F(*shape: int | str) -> tuple:
    """A float32 parameter of this shape."""
    return (shape, "float32", None)


def I(*shape: int | str, high: int | str = 4) -> tuple:  # noqa: E743
    """An int64 parameter of this shape with values in ``[0, high)``."""
    return (shape, "int64", high)


def _add_one(x: np.ndarray, out: np.ndarray) -> None:
    out[...] = x + 1


def _concat_rows(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    out[...] = np.concatenate([x, y], axis=0)


PACKED = {"relax_oracle.add_one": _add_one, "relax_oracle.concat_rows": _concat_rows}


def _module(body: str) -> str:
    """A TVMScript module class around ``body`` (functions indented by 4)."""
    return "@I.ir_module\nclass Module:\n" + body


PROGRAMS: list[Program] = [
    # ---- broadcasting ---------------------------------------------------------------------
    Program("broadcast_row", """
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(1, 4), float32]) {
  let %a = add(%x, %y);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor((1, 4), "float32")):
        a = R.add(x, y)
        return a
"""), (F("n", 4), F(1, 4)), covers="broadcast"),
    Program("broadcast_outer", """
def @main(%x: Tensor[(n, 1), float32], %y: Tensor[(1, m), float32]) {
  let %a = multiply(%x, %y);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 1), "float32"), y: R.Tensor((1, "m"), "float32")):
        a = R.multiply(x, y)
        return a
"""), (F("n", 1), F(1, "m")), covers="broadcast"),
    Program("broadcast_rank", """
def @main(%x: Tensor[(n, m, 4), float32], %y: Tensor[(m, 1), float32]) {
  let %a = subtract(%x, %y);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m", 4), "float32"), y: R.Tensor(("m", 1), "float32")):
        a = R.subtract(x, y)
        return a
"""), (F("n", "m", 4), F("m", 1)), covers="broadcast"),
    Program("broadcast_same_var", """
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(n, 4), float32]) {
  let %a = maximum(%x, %y);
  let %b = divide(%a, 2f);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("n", 4), "float32")):
        a = R.maximum(x, y)
        b = R.divide(a, R.const(2.0, "float32"))
        return b
"""), (F("n", 4), F("n", 4)), covers="broadcast"),
    # ---- reshape ----------------------------------------------------------------------------
    Program("reshape_flatten", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = reshape(%x, newshape=[-1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.reshape(x, (-1,))
        return a
"""), (F("n", 4),), covers="reshape"),
    Program("reshape_keep_minus1", """
def @main(%x: Tensor[(n, 4, 2), float32]) {
  let %a = reshape(%x, newshape=[-1, 2]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4, 2), "float32")):
        a = R.reshape(x, (-1, 2))
        return a
"""), (F("n", 4, 2),), covers="reshape"),
    Program("reshape_zero", """
def @main(%x: Tensor[(n, 4, 2), float32]) {
  let %a = reshape(%x, newshape=[0, -1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4, 2), "float32")):
        n = T.int64()
        a = R.reshape(x, R.shape([n, 8]))
        return a
"""), (F("n", 4, 2),), covers="reshape"),
    Program("reshape_twice", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = reshape(%x, newshape=[-1]);
  let %b = reshape(%a, newshape=[-1, 2]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.reshape(x, (-1,))
        b = R.reshape(a, (-1, 2))
        return b
"""), (F("n", 4),), covers="reshape"),
    # ---- transpose, concatenate, split, strided_slice -------------------------------------
    Program("transpose_axes", """
def @main(%x: Tensor[(n, m, 4), float32]) {
  let %a = transpose(%x, axes=[2, 0, 1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m", 4), "float32")):
        a = R.permute_dims(x, [2, 0, 1])
        return a
"""), (F("n", "m", 4),), covers="transpose"),
    Program("transpose_default", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = transpose(%x);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.permute_dims(x)
        return a
"""), (F("n", 4),), covers="transpose"),
    Program("concat_two_vars", """
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(m, 4), float32]) {
  let %a = concatenate((%x, %y), axis=0);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m", 4), "float32")):
        a = R.concat((x, y), axis=0)
        return a
"""), (F("n", 4), F("m", 4)), covers="concatenate"),
    Program("concat_axis1", """
def @main(%x: Tensor[(n, 3), float32], %y: Tensor[(n, m), float32]) {
  let %a = concatenate((%x, %y, %x), axis=1);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3), "float32"), y: R.Tensor(("n", "m"), "float32")):
        a = R.concat((x, y, x), axis=1)
        return a
"""), (F("n", 3), F("n", "m")), covers="concatenate"),
    Program("split_sections", """
def @main(%x: Tensor[(n, 6), float32]) {
  let %a = split(%x, indices_or_sections=3, axis=1);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 6), "float32")):
        a = R.split(x, 3, axis=1)
        return a
"""), (F("n", 6),), covers="split"),
    Program("split_indices", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = split(%x, indices_or_sections=[1, 3], axis=0);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.split(x, [1, 3], axis=0)
        return a
"""), (F("n", 4),), covers="split", assume={"n": 3}),
    Program("strided_slice_symbolic_end", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = strided_slice(%x, begin=[1], end=[-1], axes=[0]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.strided_slice(x, axes=[0], begin=[1], end=[-1])
        return a
"""), (F("n", 4),), covers="strided_slice", assume={"n": 2}),
    Program("strided_slice_step", """
def @main(%x: Tensor[(n, 8), float32]) {
  let %a = strided_slice(%x, begin=[1], end=[7], strides=[2], axes=[1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 8), "float32")):
        a = R.strided_slice(x, axes=[1], begin=[1], end=[7], strides=[2])
        return a
"""), (F("n", 8),), covers="strided_slice"),
    # ---- dense / matmul ---------------------------------------------------------------------
    Program("dense", """
def @main(%x: Tensor[(n, 8), float32], %w: Tensor[(16, 8), float32]) {
  let %a = nn.dense(%x, %w);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w: R.Tensor((16, 8), "float32")):
        a = R.matmul(x, R.permute_dims(w))
        return a
"""), (F("n", 8), F(16, 8)), covers="dense"),
    Program("matmul", """
def @main(%x: Tensor[(n, 8), float32], %y: Tensor[(8, m), float32]) {
  let %a = nn.matmul(%x, %y);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), y: R.Tensor((8, "m"), "float32")):
        a = R.matmul(x, y)
        return a
"""), (F("n", 8), F(8, "m")), covers="matmul"),
    Program("batch_matmul", """
def @main(%x: Tensor[(b, n, 8), float32], %y: Tensor[(b, m, 8), float32]) {
  let %a = nn.batch_matmul(%x, %y);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("b", "n", 8), "float32"), y: R.Tensor(("b", "m", 8), "float32")):
        a = R.matmul(x, R.permute_dims(y, [0, 2, 1]))
        return a
"""), (F("b", "n", 8), F("b", "m", 8)), covers="batch_matmul"),
    # ---- conv2d and pooling -----------------------------------------------------------------
    Program("conv2d_same", """
def @main(%x: Tensor[(n, 3, h, w), float32], %k: Tensor[(8, 3, 3, 3), float32]) {
  let %a = nn.conv2d(%x, %k, padding=[1, 1], channels=8, kernel_size=[3, 3]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, "h", "w"), "float32"), k: R.Tensor((8, 3, 3, 3), "float32")):
        a = R.nn.conv2d(x, k, padding=(1, 1))
        return a
"""), (F("n", 3, "h", "w"), F(8, 3, 3, 3)), covers="conv2d"),
    Program("conv2d_stride", """
def @main(%x: Tensor[(n, 3, h, w), float32], %k: Tensor[(4, 3, 3, 3), float32]) {
  let %a = nn.conv2d(%x, %k, strides=[2, 2], channels=4, kernel_size=[3, 3]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, "h", "w"), "float32"), k: R.Tensor((4, 3, 3, 3), "float32")):
        a = R.nn.conv2d(x, k, strides=(2, 2))
        return a
"""), (F("n", 3, "h", "w"), F(4, 3, 3, 3)), covers="conv2d"),
    Program("conv2d_dilated", """
def @main(%x: Tensor[(n, 2, h, w), float32], %k: Tensor[(4, 2, 3, 3), float32]) {
  let %a = nn.conv2d(%x, %k, padding=[2, 1], dilation=[2, 1], channels=4, kernel_size=[3, 3]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 2, "h", "w"), "float32"), k: R.Tensor((4, 2, 3, 3), "float32")):
        a = R.nn.conv2d(x, k, padding=(2, 1), dilation=(2, 1))
        return a
"""), (F("n", 2, "h", "w"), F(4, 2, 3, 3)), covers="conv2d"),
    Program("max_pool2d", """
def @main(%x: Tensor[(n, 3, h, w), float32]) {
  let %a = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, "h", "w"), "float32")):
        a = R.nn.max_pool2d(x, pool_size=(2, 2), strides=(2, 2))
        return a
"""), (F("n", 3, "h", "w"),), covers="pooling"),
    Program("avg_pool2d_pad", """
def @main(%x: Tensor[(n, 3, h, w), float32]) {
  let %a = nn.avg_pool2d(%x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, "h", "w"), "float32")):
        a = R.nn.avg_pool2d(x, pool_size=(3, 3), strides=(1, 1), padding=(1, 1))
        return a
"""), (F("n", 3, "h", "w"),), covers="pooling"),
    Program("global_avg_pool2d", """
def @main(%x: Tensor[(n, 3, h, w), float32]) {
  let %a = nn.global_avg_pool2d(%x);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, "h", "w"), "float32")):
        a = R.mean(x, axis=[2, 3], keepdims=True)
        return a
"""), (F("n", 3, "h", "w"),), covers="pooling"),
    # ---- reductions -------------------------------------------------------------------------
    Program("sum_axis", """
def @main(%x: Tensor[(n, m, 4), float32]) {
  let %a = sum(%x, axis=[1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m", 4), "float32")):
        a = R.sum(x, axis=[1])
        return a
"""), (F("n", "m", 4),), covers="reduction"),
    Program("mean_keepdims", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = mean(%x, axis=[1], keepdims=True);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.mean(x, axis=[1], keepdims=True)
        return a
"""), (F("n", 4),), covers="reduction"),
    Program("max_axis0", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = max(%x, axis=[0]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.max(x, axis=[0])
        return a
"""), (F("n", 4),), covers="reduction"),
    # ---- take, expand_dims, squeeze, pad ----------------------------------------------------
    Program("take_rows", """
def @main(%x: Tensor[(n, 4), float32], %i: Tensor[(k), int64]) {
  let %a = take(%x, %i, axis=0);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), i: R.Tensor(("k",), "int64")):
        a = R.take(x, i, axis=0)
        return a
"""), (F("n", 4), I("k", high="n")), covers="take"),
    Program("take_cols", """
def @main(%x: Tensor[(n, 5), float32], %i: Tensor[(k, m), int64]) {
  let %a = take(%x, %i, axis=1);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 5), "float32"), i: R.Tensor(("k", "m"), "int64")):
        a = R.take(x, i, axis=1)
        return a
"""), (F("n", 5), I("k", "m", high=5)), covers="take"),
    Program("expand_dims", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = expand_dims(%x, axis=1);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.expand_dims(x, axis=1)
        return a
"""), (F("n", 4),), covers="expand_dims"),
    Program("squeeze", """
def @main(%x: Tensor[(n, 1, 4), float32]) {
  let %a = squeeze(%x, axis=[1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 1, 4), "float32")):
        a = R.squeeze(x, axis=[1])
        return a
"""), (F("n", 1, 4),), covers="squeeze"),
    Program("pad_rows", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = nn.pad(%x, 0f, pad_width=[[1, 2], [0, 0]]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.nn.pad(x, pad_width=[1, 2, 0, 0])
        return a
"""), (F("n", 4),), covers="pad"),
    Program("pad_image", """
def @main(%x: Tensor[(n, 3, h, w), float32]) {
  let %a = nn.pad(%x, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [2, 2]]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, "h", "w"), "float32")):
        a = R.nn.pad(x, pad_width=[0, 0, 0, 0, 1, 1, 2, 2])
        return a
"""), (F("n", 3, "h", "w"),), covers="pad"),
    # ---- calls between functions: shape deduction (Shape-Call) ------------------------------
    Program("call_deduce", """
def @f(%x: Tensor[(n, 4), float32]) -> Tensor[(n * 2, 4), float32] {
  concatenate((%x, %x), axis=0)
}
def @main(%x: Tensor[(m, 4), float32], %y: Tensor[(1, 4), float32]) {
  let %z = concatenate((%x, %y), axis=0);
  let %r = @f(%z);
  %r
}""", _module("""
    @R.function
    def f(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n * 2", 4), "float32"):
        y = R.concat((x, x), axis=0)
        return y

    @R.function
    def main(x: R.Tensor(("m", 4), "float32"), y: R.Tensor((1, 4), "float32")):
        z = R.concat((x, y), axis=0)
        r = Module.f(z)
        return r
"""), (F("m", 4), F(1, 4)), covers="call deduction"),
    Program("call_deduce_matmul", """
def @g(%a: Tensor[(i, j), float32], %b: Tensor[(j, l), float32]) -> Tensor[(i, l), float32] {
  nn.matmul(%a, %b)
}
def @main(%x: Tensor[(n, 8), float32], %y: Tensor[(8, m), float32]) {
  let %r = @g(%x, %y);
  %r
}""", _module("""
    @R.function
    def g(a: R.Tensor(("i", "j"), "float32"),
          b: R.Tensor(("j", "l"), "float32")) -> R.Tensor(("i", "l"), "float32"):
        c = R.matmul(a, b)
        return c

    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), y: R.Tensor((8, "m"), "float32")):
        r = Module.g(x, y)
        return r
"""), (F("n", 8), F(8, "m")), covers="call deduction"),
    Program("call_twice", """
def @grow(%x: Tensor[(n, 4), float32]) -> Tensor[(n + 1, 4), float32] {
  nn.pad(%x, 0f, pad_width=[[0, 1], [0, 0]])
}
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = @grow(%x);
  let %b = @grow(%a);
  %b
}""", _module("""
    @R.function
    def grow(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n + 1", 4), "float32"):
        y = R.nn.pad(x, pad_width=[0, 1, 0, 0])
        return y

    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = Module.grow(x)
        b = Module.grow(a)
        return b
"""), (F("n", 4),), covers="call deduction"),
    # ---- match_cast -------------------------------------------------------------------------
    Program("match_cast_add", """
def @main(%x: Tensor[ndim=2, float32]) {
  let %b = match_cast(%x, Tensor[(k, 4), float32]);
  let %c = add(%b, %b);
  %c
}""", _module("""
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        k = T.int64()
        b = R.match_cast(x, R.Tensor((k, 4), "float32"))
        c = R.add(b, b)
        return c
"""), (F("k", 4),), covers="match_cast"),
    Program("match_cast_reshape", """
def @main(%x: Tensor[ndim=2, float32]) {
  let %b = match_cast(%x, Tensor[(k, 4), float32]);
  let %c = reshape(%b, newshape=[-1]);
  %c
}""", _module("""
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        k = T.int64()
        b = R.match_cast(x, R.Tensor((k, 4), "float32"))
        c = R.reshape(b, (-1,))
        return c
"""), (F("k", 4),), covers="match_cast"),
    Program("match_cast_then_call", """
def @f(%x: Tensor[(n, 4), float32]) -> Tensor[(n * 2, 4), float32] {
  concatenate((%x, %x), axis=0)
}
def @main(%x: Tensor[ndim=2, float32]) {
  let %b = match_cast(%x, Tensor[(k, 4), float32]);
  let %r = @f(%b);
  %r
}""", _module("""
    @R.function
    def f(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n * 2", 4), "float32"):
        y = R.concat((x, x), axis=0)
        return y

    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        k = T.int64()
        b = R.match_cast(x, R.Tensor((k, 4), "float32"))
        r = Module.f(b)
        return r
"""), (F("k", 4),), covers="match_cast"),
    # ---- dataflow blocks --------------------------------------------------------------------
    Program("dataflow_mlp", """
def @main(%x: Tensor[(n, 8), float32], %w1: Tensor[(16, 8), float32], %b1: Tensor[(16), float32],
          %w2: Tensor[(4, 16), float32], %b2: Tensor[(4), float32]) {
  dataflow {
    let %h = nn.relu(nn.bias_add(nn.dense(%x, %w1), %b1));
    let %o = nn.softmax(nn.bias_add(nn.dense(%h, %w2), %b2));
    %o
  }
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w1: R.Tensor((16, 8), "float32"),
             b1: R.Tensor((16,), "float32"), w2: R.Tensor((4, 16), "float32"),
             b2: R.Tensor((4,), "float32")):
        with R.dataflow():
            h = R.nn.relu(R.add(R.matmul(x, R.permute_dims(w1)), b1))
            o = R.nn.softmax(R.add(R.matmul(h, R.permute_dims(w2)), b2), axis=-1)
            R.output(o)
        return o
"""), (F("n", 8), F(16, 8), F(16), F(4, 16), F(4)), covers="dataflow, MLP"),
    Program("dataflow_split_tuple", """
def @main(%x: Tensor[(n, 6), float32]) {
  dataflow {
    let %s = split(%x, indices_or_sections=2, axis=1);
    let %a = add(%s.0, %s.1);
    let %t = (%a, %s.1);
    %t
  }
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 6), "float32")):
        with R.dataflow():
            s = R.split(x, 2, axis=1)
            a = R.add(s[0], s[1])
            t = (a, s[1])
            R.output(t)
        return t
"""), (F("n", 6),), covers="dataflow, split, tuples"),
    # ---- networks with a symbolic batch -----------------------------------------------------
    Program("mlp3", """
def @main(%x: Tensor[(n, 8), float32], %w1: Tensor[(16, 8), float32], %b1: Tensor[(16), float32],
          %w2: Tensor[(16, 16), float32], %b2: Tensor[(16), float32],
          %w3: Tensor[(4, 16), float32], %b3: Tensor[(4), float32]) {
  let %h1 = nn.relu(nn.bias_add(nn.dense(%x, %w1), %b1));
  let %h2 = nn.relu(nn.bias_add(nn.dense(%h1, %w2), %b2));
  let %o = nn.bias_add(nn.dense(%h2, %w3), %b3);
  %o
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), w1: R.Tensor((16, 8), "float32"),
             b1: R.Tensor((16,), "float32"), w2: R.Tensor((16, 16), "float32"),
             b2: R.Tensor((16,), "float32"), w3: R.Tensor((4, 16), "float32"),
             b3: R.Tensor((4,), "float32")):
        h1 = R.nn.relu(R.add(R.matmul(x, R.permute_dims(w1)), b1))
        h2 = R.nn.relu(R.add(R.matmul(h1, R.permute_dims(w2)), b2))
        o = R.add(R.matmul(h2, R.permute_dims(w3)), b3)
        return o
"""), (F("n", 8), F(16, 8), F(16), F(16, 16), F(16), F(4, 16), F(4)), covers="MLP"),
    Program("cnn", """
def @main(%x: Tensor[(n, 3, 8, 8), float32], %k: Tensor[(4, 3, 3, 3), float32],
          %kb: Tensor[(4), float32], %w: Tensor[(10, 64), float32]) {
  let %c = nn.relu(nn.bias_add(nn.conv2d(%x, %k, padding=[1, 1], channels=4,
                                         kernel_size=[3, 3]), %kb));
  let %p = nn.max_pool2d(%c, pool_size=[2, 2], strides=[2, 2]);
  let %f = nn.batch_flatten(%p);
  let %o = nn.softmax(nn.dense(%f, %w));
  %o
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, 8, 8), "float32"), k: R.Tensor((4, 3, 3, 3), "float32"),
             kb: R.Tensor((4,), "float32"), w: R.Tensor((10, 64), "float32")):
        n = T.int64()
        c = R.nn.relu(R.add(R.nn.conv2d(x, k, padding=(1, 1)), R.reshape(kb, (1, 4, 1, 1))))
        p = R.nn.max_pool2d(c, pool_size=(2, 2), strides=(2, 2))
        f = R.reshape(p, R.shape([n, 64]))
        o = R.nn.softmax(R.matmul(f, R.permute_dims(w)), axis=-1)
        return o
"""), (F("n", 3, 8, 8), F(4, 3, 3, 3), F(4), F(10, 64)), covers="CNN"),
    Program("cnn_symbolic_hw", """
def @main(%x: Tensor[(n, 3, h, w), float32], %k: Tensor[(4, 3, 3, 3), float32],
          %v: Tensor[(5, 4), float32]) {
  let %c = nn.relu(nn.conv2d(%x, %k, strides=[2, 2], padding=[1, 1], channels=4,
                             kernel_size=[3, 3]));
  let %p = nn.avg_pool2d(%c, pool_size=[2, 2], strides=[1, 1]);
  let %g = mean(%p, axis=[2, 3]);
  let %o = nn.dense(%g, %v);
  %o
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 3, "h", "w"), "float32"), k: R.Tensor((4, 3, 3, 3), "float32"),
             v: R.Tensor((5, 4), "float32")):
        c = R.nn.relu(R.nn.conv2d(x, k, strides=(2, 2), padding=(1, 1)))
        p = R.nn.avg_pool2d(c, pool_size=(2, 2), strides=(1, 1))
        g = R.mean(p, axis=[2, 3])
        o = R.matmul(g, R.permute_dims(v))
        return o
"""), (F("n", 3, "h", "w"), F(4, 3, 3, 3), F(5, 4)), covers="CNN"),
    # ---- call_dps_packed --------------------------------------------------------------------
    Program("dps_add_one", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = call_dps_packed("relax_oracle.add_one", (%x,), Tensor[(n, 4), float32]);
  let %b = nn.relu(%a);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        a = R.call_dps_packed("relax_oracle.add_one", (x,), out_ty=R.Tensor((n, 4), "float32"))
        b = R.nn.relu(a)
        return b
"""), (F("n", 4),), covers="call_dps_packed"),
    Program("dps_concat_rows", """
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(m, 4), float32]) {
  let %a = call_dps_packed("relax_oracle.concat_rows", (%x, %y), Tensor[(n + m, 4), float32]);
  let %b = sum(%a, axis=[1]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m", 4), "float32")):
        n = T.int64()
        m = T.int64()
        a = R.call_dps_packed("relax_oracle.concat_rows", (x, y),
                              out_ty=R.Tensor((n + m, 4), "float32"))
        b = R.sum(a, axis=[1])
        return b
"""), (F("n", 4), F("m", 4)), covers="call_dps_packed"),
]


REFUSALS: list[Refusal] = [
    Refusal("if_in_dataflow", """
def @main(%x: Tensor[(n, 4), float32], %c: bool) {
  dataflow {
    let %a = if (%c) { add(%x, %x) } else { multiply(%x, %x) };
    %a
  }
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), c: R.Tensor((), "bool")):
        with R.dataflow():
            if c:
                a = R.add(x, x)
            else:
                a = R.multiply(x, x)
            R.output(a)
        return a
"""), "static", ("ParseError", "RelayTypeError"), line=4),
    Refusal("broadcast_provably_different", """
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(n, 5), float32]) {
  add(%x, %y)
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("n", 5), "float32")):
        return R.add(x, y)
"""), "static", ("RelayTypeError",), line=3),
    Refusal("concat_other_axis_differs", """
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(m, 5), float32]) {
  concatenate((%x, %y), axis=0)
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("m", 5), "float32")):
        return R.concat((x, y), axis=0)
"""), "static", ("RelayTypeError",), line=3),
    Refusal("matmul_inner_differs", """
def @main(%x: Tensor[(n, 8), float32], %y: Tensor[(9, m), float32]) {
  nn.matmul(%x, %y)
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 8), "float32"), y: R.Tensor((9, "m"), "float32")):
        return R.matmul(x, y)
"""), "static", ("RelayTypeError",), line=3),
    Refusal("match_cast_fails", """
def @main(%x: Tensor[ndim=2, float32]) {
  let %b = match_cast(%x, Tensor[(k, 4), float32]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        k = T.int64()
        b = R.match_cast(x, R.Tensor((k, 4), "float32"))
        return b
"""), "runtime", ("RelayRuntimeError",), (F(3, 5),), line=3),
    Refusal("match_cast_repeated_var_fails", """
def @main(%x: Tensor[ndim=2, float32]) {
  let %b = match_cast(%x, Tensor[(k, k), float32]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        k = T.int64()
        b = R.match_cast(x, R.Tensor((k, k), "float32"))
        return b
"""), "runtime", ("RelayRuntimeError",), (F(3, 4),), line=3),
    Refusal("parameter_shapes_disagree", """
def @main(%x: Tensor[(n, 4), float32], %y: Tensor[(n, 4), float32]) {
  add(%x, %y)
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("n", 4), "float32")):
        return R.add(x, y)
"""), "runtime", ("RelayRuntimeError",), (F(3, 4), F(2, 4))),
]

REFUSALS += [
    Refusal("call_shape_var_conflict", """
def @f(%x: Tensor[(n), float32], %y: Tensor[(n), float32]) {
  add(%x, %y)
}
def @main(%a: Tensor[(3), float32], %b: Tensor[(4), float32]) {
  @f(%a, %b)
}""", _module("""
    @R.function
    def f(x: R.Tensor(("n",), "float32"), y: R.Tensor(("n",), "float32")):
        return R.add(x, y)

    @R.function
    def main(a: R.Tensor((3,), "float32"), b: R.Tensor((4,), "float32")):
        r = Module.f(a, b)
        return r
"""), "runtime", ("RelayTypeError", "RelayRuntimeError"), (F(3), F(4)), line=6),
    Refusal("match_cast_rank_differs", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %b = match_cast(%x, Tensor[(k), float32]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        k = T.int64()
        b = R.match_cast(x, R.Tensor((k,), "float32"))
        return b
"""), "static", ("RelayTypeError",), line=3),
]

PROGRAMS += [
    Program("reshape_leading_number", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = reshape(%x, newshape=[-1]);
  let %b = reshape(%a, newshape=[2, -1]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.reshape(x, (-1,))
        b = R.reshape(a, (2, -1))
        return b
"""), (F("n", 4),), covers="reshape"),
    Program("call_deduce_expression_param", """
def @f(%x: Tensor[(n, 4), float32], %y: Tensor[(n * 2, 4), float32])
    -> Tensor[(n * 3, 4), float32] {
  concatenate((%x, %y), axis=0)
}
def @main(%x: Tensor[(m, 4), float32]) {
  let %d = concatenate((%x, %x), axis=0);
  let %r = @f(%x, %d);
  %r
}""", _module("""
    @R.function
    def f(x: R.Tensor(("n", 4), "float32"),
          y: R.Tensor(("n * 2", 4), "float32")) -> R.Tensor(("n * 3", 4), "float32"):
        z = R.concat((x, y), axis=0)
        return z

    @R.function
    def main(x: R.Tensor(("m", 4), "float32")):
        d = R.concat((x, x), axis=0)
        r = Module.f(x, d)
        return r
"""), (F("m", 4),), covers="call deduction"),
]

PROGRAMS += [
    Program("reshape_floordiv", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = reshape(%x, newshape=[3, -1]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.reshape(x, (3, -1))
        return a
"""), (F("n", 4),), ({"n": 3}, {"n": 6}), covers="reshape"),
]

REFUSALS += [
    Refusal("return_type_unbound_var", """
def @main(%x: Tensor[(n, 4), float32]) -> Tensor[(k, 4), float32] {
  %x
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("k", 4), "float32"):
        return x
"""), "static", ("RelayTypeError",), line=2),
    Refusal("match_cast_dtype_differs", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %b = match_cast(%x, Tensor[(k, 4), int64]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        k = T.int64()
        b = R.match_cast(x, R.Tensor((k, 4), "int64"))
        return b
"""), "static", ("RelayTypeError",), line=3),
    Refusal("dps_unregistered", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = call_dps_packed("relax_oracle.not_registered", (%x,), Tensor[(n, 4), float32]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        a = R.call_dps_packed("relax_oracle.not_registered", (x,),
                              out_ty=R.Tensor((n, 4), "float32"))
        return a
"""), "runtime", ("RelayRuntimeError",), (F(2, 4),), line=3),
]

PROGRAMS += [
    Program("max_pool2d_ceil", """
def @main(%x: Tensor[(n, 2, h, w), float32]) {
  let %a = nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], ceil_mode=True);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 2, "h", "w"), "float32")):
        a = R.nn.max_pool2d(x, pool_size=(3, 3), strides=(2, 2), ceil_mode=True)
        return a
"""), (F("n", 2, "h", "w"),), covers="pooling"),
    Program("avg_pool2d_stride_pad", """
def @main(%x: Tensor[(n, 2, h, w), float32]) {
  let %a = nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1],
                         count_include_pad=True);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 2, "h", "w"), "float32")):
        a = R.nn.avg_pool2d(x, pool_size=(3, 3), strides=(2, 2), padding=(1, 1),
                            count_include_pad=True)
        return a
"""), (F("n", 2, "h", "w"),), covers="pooling"),
    Program("conv2d_depthwise", """
def @main(%x: Tensor[(n, 4, h, w), float32], %k: Tensor[(4, 1, 3, 3), float32]) {
  let %a = nn.conv2d(%x, %k, padding=[1, 1], groups=4, channels=4, kernel_size=[3, 3]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4, "h", "w"), "float32"), k: R.Tensor((4, 1, 3, 3), "float32")):
        a = R.nn.conv2d(x, k, padding=(1, 1), groups=4)
        return a
"""), (F("n", 4, "h", "w"), F(4, 1, 3, 3)), covers="conv2d"),
    Program("conv2d_symbolic_channels", """
def @main(%x: Tensor[(n, m, h, w), float32], %k: Tensor[(8, m, 3, 3), float32]) {
  let %a = nn.conv2d(%x, %k, channels=8, kernel_size=[3, 3]);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m", "h", "w"), "float32"),
             k: R.Tensor((8, "m", 3, 3), "float32")):
        a = R.nn.conv2d(x, k)
        return a
"""), (F("n", "m", "h", "w"), F(8, "m", 3, 3)), covers="conv2d"),
    Program("dense_symbolic_features", """
def @main(%x: Tensor[(n, k), float32], %w: Tensor[(m, k), float32]) {
  let %a = nn.dense(%x, %w);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "k"), "float32"), w: R.Tensor(("m", "k"), "float32")):
        a = R.matmul(x, R.permute_dims(w))
        return a
"""), (F("n", "k"), F("m", "k")), covers="dense"),
    Program("transpose_then_reshape", """
def @main(%x: Tensor[(n, m, 4), float32]) {
  let %a = transpose(%x, axes=[1, 0, 2]);
  let %b = reshape(%a, newshape=[0, -1]);
  %b
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m", 4), "float32")):
        n = T.int64()
        m = T.int64()
        a = R.permute_dims(x, [1, 0, 2])
        b = R.reshape(a, R.shape([m, n * 4]))
        return b
"""), (F("n", "m", 4),), covers="transpose, reshape"),
    Program("expand_dims_two", """
def @main(%x: Tensor[(n, m), float32]) {
  let %a = expand_dims(%x, axis=1, num_newaxis=2);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32")):
        a = R.expand_dims(x, axis=[1, 2])
        return a
"""), (F("n", "m"),), covers="expand_dims"),
    Program("mean_all", """
def @main(%x: Tensor[(n, m), float32]) {
  let %a = mean(%x);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32")):
        a = R.mean(x)
        return a
"""), (F("n", "m"),), covers="reduction"),
    Program("layer_norm", """
def @main(%x: Tensor[(n, m, 8), float32], %g: Tensor[(8), float32], %b: Tensor[(8), float32]) {
  let %a = nn.layer_norm(%x, %g, %b);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m", 8), "float32"), g: R.Tensor((8,), "float32"),
             b: R.Tensor((8,), "float32")):
        a = R.nn.layer_norm(x, g, b, axes=[-1])
        return a
"""), (F("n", "m", 8), F(8), F(8)), covers="normalization"),
    Program("dataflow_match_cast", """
def @main(%x: Tensor[ndim=2, float32]) {
  dataflow {
    let %b = match_cast(%x, Tensor[(k, 4), float32]);
    let %c = reshape(%b, newshape=[-1]);
    %c
  }
}""", _module("""
    @R.function
    def main(x: R.Tensor(ndim=2, dtype="float32")):
        k = T.int64()
        with R.dataflow():
            b = R.match_cast(x, R.Tensor((k, 4), "float32"))
            c = R.reshape(b, (-1,))
            R.output(c)
        return c
"""), (F("k", 4),), covers="dataflow, match_cast"),
    Program("dataflow_calls_pure_global", """
def @f(%x: Tensor[(n, 4), float32]) -> Tensor[(n * 2, 4), float32] {
  concatenate((%x, %x), axis=0)
}
def @main(%x: Tensor[(m, 4), float32]) {
  dataflow {
    let %a = nn.relu(%x);
    let %r = @f(%a);
    %r
  }
}""", _module("""
    @R.function
    def f(x: R.Tensor(("n", 4), "float32")) -> R.Tensor(("n * 2", 4), "float32"):
        y = R.concat((x, x), axis=0)
        return y

    @R.function
    def main(x: R.Tensor(("m", 4), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            r = Module.f(a)
            R.output(r)
        return r
"""), (F("m", 4),), covers="dataflow, call deduction"),
]

PACKED["relax_oracle.tir_add_one"] = _add_one

PROGRAMS += [
    Program("closure_captures_shape_var", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %g = fn (%y: Tensor[(n, 4), float32]) { add(%y, %x) };
  let %a = %g(%x);
  %a
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()

        @R.function
        def g(y: R.Tensor((n, 4), "float32")):
            return R.add(y, x)

        a = g(x)
        return a
"""), (F("n", 4),), covers="closures"),
    Program("call_tir_add_one", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = call_tir("relax_oracle.tir_add_one", (%x,), Tensor[(n, 4), float32]);
  let %b = multiply(%a, %a);
  %b
}""", _module("""
    @T.prim_func(private=True)
    def tir_add_one(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (n, 4), "float32")
        Y = T.match_buffer(y, (n, 4), "float32")
        for i, j in T.grid(n, 4):
            Y[i, j] = X[i, j] + T.float32(1)

    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        a = R.call_tir(Module.tir_add_one, (x,), out_ty=R.Tensor((n, 4), "float32"))
        b = R.multiply(a, a)
        return b
"""), (F("n", 4),), covers="call_tir"),
    Program("call_returns_tuple", """
def @f(%x: Tensor[(n, 4), float32])
    -> (Tensor[(n, 4), float32], Tensor[(n * 2, 4), float32]) {
  (nn.relu(%x), concatenate((%x, %x), axis=0))
}
def @main(%x: Tensor[(m, 4), float32], %y: Tensor[(2, 4), float32]) {
  let %z = concatenate((%x, %y), axis=0);
  let %t = @f(%z);
  let %a = %t.1;
  %a
}""", _module("""
    @R.function
    def f(x: R.Tensor(("n", 4), "float32")) -> R.Tuple(R.Tensor(("n", 4), "float32"),
                                                       R.Tensor(("n * 2", 4), "float32")):
        y = (R.nn.relu(x), R.concat((x, x), axis=0))
        return y

    @R.function
    def main(x: R.Tensor(("m", 4), "float32"), y: R.Tensor((2, 4), "float32")):
        z = R.concat((x, y), axis=0)
        t = Module.f(z)
        a = t[1]
        return a
"""), (F("m", 4), F(2, 4)), covers="call deduction, tuples"),
    Program("dataflow_then_more", """
def @main(%x: Tensor[(n, 4), float32], %w: Tensor[(3, 4), float32]) {
  let %d = dataflow {
    let %a = nn.dense(%x, %w);
    let %b = nn.relu(%a);
    %b
  };
  let %e = sum(%d, axis=[0]);
  %e
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), w: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            a = R.matmul(x, R.permute_dims(w))
            b = R.nn.relu(a)
            R.output(b)
        e = R.sum(b, axis=[0])
        return e
"""), (F("n", 4), F(3, 4)), covers="dataflow"),
]

REFUSALS += [
    Refusal("parameter_expression_unbound", """
def @main(%x: Tensor[(n * 2, 4), float32]) {
  %x
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n * 2", 4), "float32")):
        return x
"""), "static", ("RelayTypeError",), line=2),
]

PROGRAMS += [
    Program("dataflow_dps", """
def @main(%x: Tensor[(n, 4), float32]) {
  dataflow {
    let %a = call_dps_packed("relax_oracle.add_one", (%x,), Tensor[(n, 4), float32]);
    let %b = nn.relu(%a);
    %b
  }
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        n = T.int64()
        with R.dataflow():
            a = R.call_dps_packed("relax_oracle.add_one", (x,),
                                  out_ty=R.Tensor((n, 4), "float32"))
            b = R.nn.relu(a)
            R.output(b)
        return b
"""), (F("n", 4),), covers="dataflow, call_dps_packed"),
    Program("broadcast_var_against_one", """
def @main(%x: Tensor[(n, m), float32], %y: Tensor[(n, 1), float32], %z: Tensor[(1, m), float32]) {
  let %a = add(%x, %y);
  let %b = multiply(%a, %z);
  let %c = subtract(%y, %z);
  (%b, %c)
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", "m"), "float32"), y: R.Tensor(("n", 1), "float32"),
             z: R.Tensor((1, "m"), "float32")):
        a = R.add(x, y)
        b = R.multiply(a, z)
        c = R.subtract(y, z)
        return (b, c)
"""), (F("n", "m"), F("n", 1), F(1, "m")), covers="broadcast, tuples"),
]

# Programs where one size arrives by two routes and an elementwise op needs them equal: this
# project's prover must prove what TVM's analyzer proves (or the result is ? / refused).
PROGRAMS += [
    Program("resnet_downsample_add", """
def @main(%x: Tensor[(n, 4, h, w), float32], %k1: Tensor[(8, 4, 3, 3), float32],
          %k2: Tensor[(8, 4, 1, 1), float32]) {
  let %a = nn.conv2d(%x, %k1, strides=[2, 2], padding=[1, 1], channels=8, kernel_size=[3, 3]);
  let %b = nn.conv2d(%x, %k2, strides=[2, 2], channels=8, kernel_size=[1, 1]);
  let %c = nn.relu(add(%a, %b));
  %c
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4, "h", "w"), "float32"), k1: R.Tensor((8, 4, 3, 3), "float32"),
             k2: R.Tensor((8, 4, 1, 1), "float32")):
        a = R.nn.conv2d(x, k1, strides=(2, 2), padding=(1, 1))
        b = R.nn.conv2d(x, k2, strides=(2, 2))
        c = R.nn.relu(R.add(a, b))
        return c
"""), (F("n", 4, "h", "w"), F(8, 4, 3, 3), F(8, 4, 1, 1)), covers="conv2d, CNN"),
    Program("reshape_vs_concat_add", """
def @main(%x: Tensor[(n, 6), float32], %y: Tensor[(n, 3), float32]) {
  let %a = reshape(%x, newshape=[-1, 3]);
  let %b = concatenate((%y, %y), axis=0);
  let %c = add(%a, %b);
  %c
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 6), "float32"), y: R.Tensor(("n", 3), "float32")):
        a = R.reshape(x, (-1, 3))
        b = R.concat((y, y), axis=0)
        c = R.add(a, b)
        return c
"""), (F("n", 6), F("n", 3)), covers="reshape, concatenate, broadcast"),
    Program("reshape_two_routes_add", """
def @main(%x: Tensor[(n, 4), float32]) {
  let %a = reshape(%x, newshape=[-1]);
  let %t = transpose(%x);
  let %b = reshape(%t, newshape=[-1]);
  let %c = multiply(%a, %b);
  %c
}""", _module("""
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        a = R.reshape(x, (-1,))
        t = R.permute_dims(x)  # TVM 0.27's parser leaves R.reshape(R.permute_dims(x)) untyped
        b = R.reshape(t, (-1,))
        c = R.multiply(a, b)
        return c
"""), (F("n", 4),), covers="reshape, transpose"),
]
