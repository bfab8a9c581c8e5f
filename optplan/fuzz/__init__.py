"""`optplan fuzz`: property-based fuzzing of memory plans, for any planner.

A campaign (`optplan.fuzz.campaign`) draws inputs with hypothesis
(`optplan.strategies`), hands each to a target (`optplan.fuzz.targets`: an optplan
planner, a Python function, an external command speaking MiniMalloc's CSV, or TVM's own
passes in `optplan.fuzz.relax`), judges the result (`optplan.fuzz.properties`), and
shrinks every failure to a small reproducer written to a file. Problems of several
memories (`TargetSpec(..., memories=True)`) are judged by `optplan.fuzz.memories`.

    >>> from optplan.fuzz import Budget, TargetSpec, run_campaign
    >>> outcome = run_campaign(TargetSpec("planner", "greedy"), Budget(examples=200), out)

With `RayCluster()` as the last argument the shards run as Ray tasks
(`optplan.fuzz.on_ray`).
"""

from __future__ import annotations

from optplan.fuzz.campaign import run_campaign
from optplan.fuzz.properties import Failure, judge_plan
from optplan.fuzz.targets import TargetSpec, make_target, parse_target
from optplan.fuzz.worker import Budget, Found, Outcome, RayCluster

__all__ = [
    "Budget",
    "Failure",
    "Found",
    "Outcome",
    "RayCluster",
    "TargetSpec",
    "judge_plan",
    "make_target",
    "parse_target",
    "run_campaign",
]
