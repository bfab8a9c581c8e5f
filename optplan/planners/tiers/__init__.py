"""Planning several memories: the form (`form`), where each tensor is at each point
(`stays`), the rules that decide it (`fill`, `belady`), the heuristics' driver
(`driver`) and the CP-SAT model of residency, copies and offsets (`model`).

Planners pack a problem of one arena as they always have; on any other they hand
it here with their own packer, which lays out each memory's buffers.
"""

from optplan.planners.tiers.driver import RULES, plan_heuristics
from optplan.planners.tiers.form import TierForm, make_tier_form

__all__ = ["RULES", "TierForm", "make_tier_form", "plan_heuristics"]
