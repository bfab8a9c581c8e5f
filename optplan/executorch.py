"""`optplan.executorch`, the name ExecuTorch users import: the algorithm lives in
`optplan.integrations.executorch`."""

from optplan.integrations.executorch import (
    DEFAULT_TIME_LIMIT_S,
    DEFAULT_WORK,
    Algorithm,
    Judgement,
    MemoryUse,
    PlanReport,
    algorithm,
    judge,
    offsets_of,
    plan_specs,
    to_problem,
)
from optplan.integrations.executorch_state import shared_state_pass

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "DEFAULT_WORK",
    "Algorithm",
    "Judgement",
    "MemoryUse",
    "PlanReport",
    "algorithm",
    "judge",
    "offsets_of",
    "plan_specs",
    "shared_state_pass",
    "to_problem",
]
