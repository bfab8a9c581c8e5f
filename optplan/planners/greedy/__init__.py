"""Greedy first-fit and best-fit planners (`planner`), their runs (`runs`), the compiled
loops (`kernel`, `buckets`, `sweeps`), the columnar path for CSV traces (`columns`),
perturbed tries for large parts and a search over the placement sequence for plans that
must fit a capacity (`tries`)."""

from optplan.planners.greedy.kernel import warm_kernels
from optplan.planners.greedy.planner import Greedy, best_offsets, plan_greedy
from optplan.planners.greedy.runs import FITS, ORDERS

__all__ = ["FITS", "ORDERS", "Greedy", "best_offsets", "plan_greedy", "warm_kernels"]
