"""Deliberately wrong passes, each a few lines over ``relay_ref.passes.rewrite``, as users
write them; and correct ones. ``tests/testing/test_check_pass_focus.py`` checks that
``check_pass`` with default settings catches every wrong one and none of the correct."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from relay_ref.ir.expr import Call, Constant, Op, Tuple
from relay_ref.passes.rewrite import fresh_copy, map_functions, rewrite


def on_nodes(rule, name):
    """A module pass applying ``rule`` bottom-up to every global function."""
    def pass_(mod):
        return map_functions(mod, lambda _, fn: rewrite(fn, rule))
    pass_.__name__ = name
    return pass_


def is_call(node, *names):
    return isinstance(node, Call) and isinstance(node.op, Op) and node.op.name in names


swap_where = on_nodes(
    lambda n: Call(n.op, (n.args[0], n.args[2], n.args[1]), n.attrs)
    if is_call(n, "where") else None, "swap_where")
clip_bounds_swapped = on_nodes(
    lambda n: replace(n, attrs=replace(n.attrs, a_min=n.attrs.a_max, a_max=n.attrs.a_min))
    if is_call(n, "clip") else None, "clip_bounds_swapped")
floor_divide_as_divide = on_nodes(
    lambda n: Call(Op("divide"), n.args, n.attrs) if is_call(n, "floor_divide") else None,
    "floor_divide_as_divide")
concatenate_reversed = on_nodes(
    lambda n: Call(n.op, (Tuple(n.args[0].fields[::-1]),), n.attrs)
    if is_call(n, "concatenate") and isinstance(n.args[0], Tuple) else None,
    "concatenate_reversed")
sigmoid_as_tanh = on_nodes(
    lambda n: Call(Op("tanh"), n.args, n.attrs) if is_call(n, "sigmoid") else None,
    "sigmoid_as_tanh")


def _zeros_like_rule(n):
    if is_call(n, "subtract") and n.args[0] is n.args[1]:
        return Call(Op("zeros_like"), (n.args[0],), None)
    return None


x_minus_x_is_zero = on_nodes(_zeros_like_rule, "x_minus_x_is_zero")


def _transpose_rank3(n):  # "for rank 3": explicit axes of length 3
    if is_call(n, "transpose") and n.attrs.axes is not None and len(n.attrs.axes) == 3:
        return replace(n, attrs=replace(n.attrs, axes=tuple(n.attrs.axes)[::-1]))
    return None


transpose_rank3_reversed = on_nodes(_transpose_rank3, "transpose_rank3_reversed")
take_clip_as_wrap = on_nodes(
    lambda n: replace(n, attrs=replace(n.attrs, mode="wrap"))
    if is_call(n, "take") and n.attrs.mode == "clip" else None, "take_clip_as_wrap")
x_times_zero_is_zero = on_nodes(  # wrong where x is inf or NaN
    lambda n: Call(Op("zeros_like"), (n.args[0],), None) if is_call(n, "multiply")
    and isinstance(n.args[1], Constant) and n.args[1].data.shape == ()
    and float(n.args[1].data) == 0 else None, "x_times_zero_is_zero")
maximum_as_minimum = on_nodes(
    lambda n: Call(Op("minimum"), n.args, n.attrs) if is_call(n, "maximum") else None,
    "maximum_as_minimum")
drop_relu = on_nodes(lambda n: n.args[0] if is_call(n, "nn.relu") else None, "drop_relu")

BUGGY = [swap_where, clip_bounds_swapped, floor_divide_as_divide, concatenate_reversed,
         sigmoid_as_tanh, x_minus_x_is_zero, transpose_rank3_reversed, take_clip_as_wrap,
         maximum_as_minimum, drop_relu, x_times_zero_is_zero]

commute_add = on_nodes(
    lambda n: Call(n.op, n.args[::-1], n.attrs) if is_call(n, "add") else None,
    "commute_add")
never_fires = on_nodes(lambda n: None, "never_fires")
fold_zero_times_one = on_nodes(  # correct but fires only on a pattern nobody generates
    lambda n: Constant(np.zeros((), "float32")) if is_call(n, "multiply") and all(
        isinstance(a, Constant) and a.data.shape == () and a.data.dtype == np.float32
        and float(a.data) == v for a, v in zip(n.args, (0.0, 1.0), strict=True)) else None,
    "fold_zero_times_one")


def rename_variables(mod):
    """Correct: every binder renamed (a fresh copy of each function)."""
    return map_functions(mod, lambda _, fn: fresh_copy(fn))
