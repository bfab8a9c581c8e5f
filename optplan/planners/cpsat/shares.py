"""How the cpsat planner shares out its budget: one table, one line of reason a row.

Each share is of what is left to the step that holds it (work, or seconds when the
budget counts none); `share(name)` reads it.
"""

from __future__ import annotations

SHARES = {
    # Of the whole budget, first to the exact skyline search: it reaches MiniMalloc's peaks
    # where a no-overlap-2D model alone stays 3-29 % above them (results/minimalloc.csv).
    "search": 0.75,
    # Of a kind of part's search share, asking whether it fits under the lower bound.
    "first_ask": 0.4,
    # Of a part's CP-SAT budget after the first pass, asking whether the target is reachable.
    "decide": 0.25,
    # Of a large part's budget, greedy tries in perturbed orders before LNS: on S_1 one run
    # in a dozen beat the best fixed order by 1 %, while LNS found nothing below its top.
    "tries": 0.7,
}


def share(name: str) -> float:
    return SHARES[name]
