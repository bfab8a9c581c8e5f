"""How `rematerialise` shares out its limit: one table, one line of reason a row.

Each share is of the whole limit (work, or seconds where the budget counts none), from
the start of the call; `share(name)` reads it. The figures behind them are rows of
`benchmarks/results/remat.csv` and `remat_programs.csv`.
"""

from __future__ import annotations

SHARES = {
    # The search of every schedule on small graphs: ends on the training steps' blocks.
    "exhaustive": 0.25,
    # The same search at budgets a fifth lower, where it did not end at the budget.
    "lower": 0.4,
    # Packing the exhaustive search's schedule.
    "exhaustive_pack": 0.3,
    # The order searches' guard; they stop on their own work (`Remat.order_work`).
    "orders": 0.3,
    # The covering bound on extra compute, before the heuristics: at 500-1,000 ops, 12
    # units give it 3-6 rounds of solves and cuts (benchmarks/results/remat_bounds.csv).
    "covering": 0.2,
    # Step 3, the heuristics, where the exact model follows (all of the limit elsewhere).
    "heuristics": 0.4,
    # The least the heuristics get however late they start (a loaded machine).
    "heuristics_least": 0.1,
    # CP-SAT packing the nearest schedule, where nothing packed (100-node graph at 60 %).
    "nearest": 1 / 3,
    # Window by window packing, where it leaves ROLLING_SECONDS (250-node graph at 60 %).
    "rolling": 1 / 2,
}


def share(name: str) -> float:
    return SHARES[name]
