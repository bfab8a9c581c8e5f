"""What `rematerialise` takes and gives: its options (`Remat`) and its answer
(`RematSchedule`), and the answer built from what the stages found. Steps of `answer`:

1. Nothing found: the traced bound may still prove that nothing fits (INFEASIBLE, its
   reason); else UNKNOWN, with how near the search came.
2. A schedule: OPTIMAL where its extra compute is at most the proven floor (the models'
   bound, the search of every schedule's least, the covering bound), else FEASIBLE.
   Beside it, the bound over every schedule (`lower_bound`, `lower.Lower`) and the gap.
"""

from __future__ import annotations

from dataclasses import dataclass

from optplan.budget import active, now, reading
from optplan.problem.plan import Plan, Status
from optplan.schedule.graph import Graph, peak_bytes
from optplan.schedule.remat.anytime import Found
from optplan.schedule.remat.bounds import MemoryBound, traced
from optplan.schedule.remat.heuristic import extra_cost
from optplan.schedule.remat.lower import Lower
from optplan.schedule.remat.packing import Nearest


@dataclass(frozen=True, slots=True)
class Remat:
    """Options: the budget in bytes (the block's `base_bytes` included), seconds (with
    `work`, units of work that every stage counts, the seconds only a guard), how many
    runs of one op the exact model allows, the largest graph it is tried on (above it
    the heuristics have all the time), the alignment of every offset, and the order search's work (its states:
    1,000,000 finds the best orders known on MOCCASIN's random graphs of 100 to 1,000
    ops in 0.5-7 s, with the time limit only an outer guard)."""

    budget_bytes: int
    time_limit: float = 10.0
    copies: int = 2
    exact_ops: int = 400
    alignment: int = 1
    order_work: int = 1_000_000
    work: float | None = None


@dataclass(frozen=True, slots=True)
class RematSchedule:
    """A schedule within the budget, or why there is none.

    `steps`: the ops run, in order (None: no schedule); `plan`: every instance's offset
    in `problem_of(graph, steps, alignment)` (capacity: the budget less `base_bytes`);
    `extra_cost` / `total_cost`: compute of the runs after each op's first / of one run
    of every op; `bound_cost`: proven lower bound on the extra compute, among schedules
    that run each op at most `copies` times where the exact model proved it, among all
    where the exhaustive search ran to its end or the covering bound gives it;
    `memory_bound`: no schedule holds less at its peak (no arena at the alignment is
    smaller, `base_bytes` added); `method`: what found it; `lower_bound`: no schedule
    within the budget costs less extra compute, over every schedule (any order, any
    recomputation), and `lower_reason` how it was got or why it is 0.
    """

    steps: tuple[int, ...] | None
    status: Status
    peak_bytes: int
    arena_bytes: int
    extra_cost: int
    total_cost: int
    bound_cost: int
    memory_bound: MemoryBound
    plan: Plan | None
    method: str
    reason: str
    seconds: float
    cut: bool = False
    lower_bound: int = 0
    lower_reason: str = ""

    @property
    def extra_percent(self) -> float:
        return 100.0 * self.extra_cost / self.total_cost if self.total_cost else 0.0

    @property
    def gap_percent(self) -> float:
        """How far the extra compute may be above the least: (extra - lower_bound) /
        extra, 0 where nothing is computed again."""
        if not self.extra_cost:
            return 0.0
        return 100.0 * (self.extra_cost - self.lower_bound) / self.extra_cost


def below_bound(options: Remat, bound: MemoryBound, total: int, began: float) -> RematSchedule:
    """The answer where the budget is below the proven memory bound: INFEASIBLE, why."""
    reason = (
        f"no schedule fits {options.budget_bytes} bytes: at least {bound.bytes} are needed "
        f"({bound.reason})"
    )
    return infeasible(bound, reason, total, began)


def infeasible(proof: MemoryBound, reason: str, total: int, began: float) -> RematSchedule:
    """No schedule fits, proven by `proof`, for `reason`."""
    seconds = reading() - began
    return RematSchedule(
        None, Status.INFEASIBLE, 0, 0, 0, total, 0, proof, None, "bound", reason, seconds
    )


def _spent(reading: float) -> str:
    """A reading of the running clock in its units."""
    clock = active()
    units = "units of work" if clock is not None and clock.counted else "s"
    return f"{reading:.1f} {units}"


def _guard_words() -> str:
    """`; the guard of 600 s ran out` where the guard, not the work, ended the run."""
    clock = active()
    if clock is None or not clock.cut or clock.budget.seconds is None:
        return ""
    return f"; the guard of {clock.budget.seconds:g} s ran out"


def _nearest_words(graph: Graph, nearest: Nearest | None, total: int) -> str:
    """What the nearest schedule found that did not pack needs, for the reason where
    nothing fits: its arena with real offsets and its extra compute (of `total`)."""
    if nearest is None or nearest.steps is None or nearest.plan is None:
        return ""
    extra = 100.0 * extra_cost(graph, nearest.steps) / total if total else 0.0
    arena = nearest.plan.arena + graph.base_bytes
    return f"; the nearest schedule found fits {arena} bytes with real offsets, at +{extra:.3f} % extra compute"


def answer(
    graph: Graph,
    options: Remat,
    best: Found | None,
    floors: tuple[int, Lower],
    total: int,
    bound: MemoryBound,
    began: float,
    nearest: Nearest | None = None,
) -> RematSchedule:
    """The answer of the module docstring; `floors`: the models' bound (over their
    spaces) and the bound over every schedule."""
    model_bound, lower = floors
    if best is None:
        # Nothing found: perhaps nothing fits, which the traced bound may prove (within
        # a second of the limit: on MOCCASIN's 1,000-node graph its work took 6 s).
        proof = traced(
            graph,
            options.budget_bytes,
            deadline=max(began + options.time_limit, now()) + 1.0,
            alignment=options.alignment,
        )
        if proof is not None:
            reason = f"no schedule fits {options.budget_bytes} bytes: {proof.reason}"
            return infeasible(proof, reason, total, began)
    seconds = reading() - began
    floor = max(model_bound, lower.cost)
    if best is None:
        reason = (
            f"no schedule within {options.budget_bytes} bytes found in {_spent(seconds)} of "
            f"the limit of {_spent(options.time_limit)} (the proven memory bound is "
            f"{bound.bytes}{_guard_words()})"
        ) + _nearest_words(graph, nearest, total)
        return RematSchedule(
            None, Status.UNKNOWN, 0, 0, 0, total, floor, bound, None, "none", reason, seconds,
            lower_bound=lower.cost, lower_reason=lower.reason,
        )  # fmt: skip
    # The least of the models' bounds holds over every space they searched; a model that
    # proved its own space optimal says nothing of the other. No recomputation is optimal.
    proven = 0 if best.extra == 0 else floor
    status = Status.OPTIMAL if best.extra <= proven else Status.FEASIBLE
    return RematSchedule(
        best.steps,
        status,
        peak_bytes(graph, best.steps),
        best.plan.arena + graph.base_bytes,
        best.extra,
        total,
        min(proven, best.extra),
        bound,
        best.plan,
        best.method,
        "",
        seconds,
        lower_bound=lower.cost,
        lower_reason=lower.reason,
    )
