"""Dynamic Tensor Rematerialization (spec/dtr.md; Kirisame et al., ICLR 2021).

* ``engine``: the runtime state shared by the executor's runtime and the simulator
  (``Engine``, ``Tensor``, ``Storage``);
* ``heuristics``: the eviction scores, as a table (``HEURISTICS``, ``get_heuristic``,
  ``ablation``), with ``unionfind`` for h_DTR^eq;
* ``stats``: ``DTRStats`` and the event trace;
* ``log``: the paper's JSON-lines log format (``read_log``, ``LogWriter``);
* ``simulator``: replay a log under a budget (``simulate``, ``sweep``, exported here:
  ``relay_ref.dtr.simulate(log, budget, ...)`` is the function).

This package imports nothing of the executor; ``relay_ref.dtr.runtime`` (the executor's
runtime under a budget) is the one module that does.
"""

from __future__ import annotations

from relay_ref.dtr.engine import DEALLOC_POLICIES, Engine, Storage, Tensor
from relay_ref.dtr.errors import DTRError, DTRLogError, DTROutOfMemory
from relay_ref.dtr.heuristics import HEURISTICS, Heuristic, ablation, get_heuristic
from relay_ref.dtr.log import read_log
from relay_ref.dtr.simulator import SweepPoint, simulate, sweep
from relay_ref.dtr.stats import DTREvent, DTRStats

__all__ = ["DEALLOC_POLICIES", "HEURISTICS", "DTRError", "DTREvent", "DTRLogError",
           "DTROutOfMemory", "DTRStats", "Engine", "Heuristic", "Storage", "SweepPoint",
           "Tensor", "ablation", "get_heuristic", "read_log", "simulate", "sweep"]
