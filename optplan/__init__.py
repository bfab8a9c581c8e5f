"""optplan: optimal static memory planning for tensor programs.

The names a user needs, imported on first use (so that `import optplan` stays quick):

    >>> from optplan import Buffer, Interval, Problem, get_planner
    >>> problem = Problem((Buffer("a", 64, (Interval(0, 2),)), Buffer("b", 32, (Interval(1, 3),))))
    >>> get_planner("greedy")(problem).arena
    96
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Alias": "optplan.problem",
    "Buffer": "optplan.problem",
    "Interval": "optplan.problem",
    "Memory": "optplan.problem",
    "Problem": "optplan.problem",
    "lower_bound": "optplan.problem",
    "one_arena": "optplan.problem",
    "read_csv": "optplan.problem",
    "write_csv": "optplan.problem",
    "Plan": "optplan.problem.plan",
    "Status": "optplan.problem.plan",
    "validate": "optplan.problem.plan",
    "PLANNERS": "optplan.planners",
    "get_planner": "optplan.planners",
    "drive": "optplan.planners",
    "Budget": "optplan.budget",
    "load": "optplan.frontends",
    "Loaded": "optplan.frontends",
    "fit": "optplan.fitting",
    "Fitted": "optplan.fitting",
}

__all__ = [
    "PLANNERS",
    "Alias",
    "Budget",
    "Buffer",
    "Fitted",
    "Interval",
    "Loaded",
    "Memory",
    "Plan",
    "Problem",
    "Status",
    "drive",
    "fit",
    "get_planner",
    "load",
    "lower_bound",
    "one_arena",
    "read_csv",
    "validate",
    "write_csv",
]

if TYPE_CHECKING:
    from optplan.budget import Budget
    from optplan.fitting import Fitted, fit
    from optplan.frontends import Loaded, load
    from optplan.planners import PLANNERS, drive, get_planner
    from optplan.problem import (
        Alias,
        Buffer,
        Interval,
        Memory,
        Problem,
        lower_bound,
        one_arena,
        read_csv,
        write_csv,
    )
    from optplan.problem.plan import Plan, Status, validate


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'optplan' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
