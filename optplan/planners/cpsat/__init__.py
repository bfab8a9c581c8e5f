"""The exact planner: CP-SAT over the form's parts (`planner`), the model of one part
(`model`, which alone imports OR-Tools, when a part is solved; `part` holds what the
planner reads of it), with greedy, the exact search and LNS beside it."""

from optplan.planners.cpsat.planner import CpSat, plan_cpsat
from optplan.planners.cpsat.search_first import SEARCH_MAX_PART

__all__ = ["SEARCH_MAX_PART", "CpSat", "plan_cpsat"]
