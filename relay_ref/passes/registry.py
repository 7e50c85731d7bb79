"""The registry of pass names: every pass module imported (their ``register_pass``
decorators fill ``relay_ref.passes.base``'s table), and lookup by name.

No pass module imports this module (passes import ``relay_ref.passes.base`` only), so the
imports below make no cycle. A new pass module is added to the import list here.

* ``pass_names()``: the registered names, sorted.
* ``pass_class(name)``: the class, ``KeyError`` naming the known passes (and a near miss).
* ``get_pass(name, **options)``: a fresh instance (options as the constructor takes them;
  ``relay_ref.passes.manager.make_pass`` checks them and reads specs).
"""

from __future__ import annotations

from typing import Any

# Registration side effects: every pass class, by the module that defines it.
from relay_ref.passes.annotate_target import AnnotateTarget  # noqa: F401
from relay_ref.passes.base import Pass, registered
from relay_ref.passes.bind_params import BindParams  # noqa: F401
from relay_ref.passes.dataflow_to_graph import DataflowToGraph  # noqa: F401
from relay_ref.passes.dead_code import DeadCodeElimination  # noqa: F401
from relay_ref.passes.eliminate_common_subexpr import EliminateCommonSubexpr  # noqa: F401
from relay_ref.passes.fold_constant import FoldConstant  # noqa: F401
from relay_ref.passes.fold_scale_axis import FoldScaleAxis  # noqa: F401
from relay_ref.passes.fuse_ops import FuseOps  # noqa: F401
from relay_ref.passes.gradient import ExpandGradient  # noqa: F401
from relay_ref.passes.inline import Inline  # noqa: F401
from relay_ref.passes.lambda_lift import LambdaLift  # noqa: F401
from relay_ref.passes.merge_compiler_regions import MergeCompilerRegions  # noqa: F401
from relay_ref.passes.merge_composite import MergeComposite  # noqa: F401
from relay_ref.passes.partial_eval import PartialEvaluate  # noqa: F401
from relay_ref.passes.partition_graph import PartitionGraph  # noqa: F401
from relay_ref.passes.simplify_expr import SimplifyExpr  # noqa: F401
from relay_ref.passes.simplify_inference import SimplifyInference  # noqa: F401
from relay_ref.passes.to_a_normal_form import ToANormalForm  # noqa: F401
from relay_ref.passes.to_graph_normal_form import ToGraphNormalForm  # noqa: F401
from relay_ref.suggest import did_you_mean

__all__ = ["get_pass", "pass_class", "pass_names", "unknown_pass_message"]


def pass_names() -> list[str]:
    """Names of the registered passes, sorted."""
    return sorted(registered())


def unknown_pass_message(name: str) -> str:
    """``unknown pass 'X'; did you mean 'Y'? (known passes: ...)``."""
    return (f"unknown pass {name!r}{did_you_mean(name, registered(), quote=True)} (known "
            f"passes: {', '.join(pass_names())})")


def pass_class(name: str) -> type[Pass]:
    """The class registered as ``name``; ``KeyError`` naming the known passes."""
    try:
        return registered()[name]
    except KeyError:
        raise KeyError(unknown_pass_message(name)) from None


def get_pass(name: str, **options: Any) -> Pass:
    """A fresh instance of the pass called ``name``, built with ``options``; ``KeyError``
    naming the known passes for an unknown name."""
    return pass_class(name)(**options)
