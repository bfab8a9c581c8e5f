"""Running one planner for a command: the progress line, Ctrl-C, the compile note."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from optplan.budget import Budget
from optplan.errors import InputError
from optplan.problem import Problem
from optplan.problem.plan import Plan

if TYPE_CHECKING:
    from optplan.planners.common import Form
    from optplan.planners.watch import Watch


INTERRUPTED = "optplan: interrupted: the best plan found before Ctrl-C is shown (exit status 130)"


def solve_watched(
    problem: Problem, name: str, budget: Budget, *, quiet: bool, form: Form | None = None
) -> tuple[Plan, bool]:
    """`solve` where Ctrl-C returns the best plan so far (and says so: True); on a
    terminal, and not `quiet`, one line on stderr shows the planner's progress."""
    from optplan.cli.terminal import run_planner

    def call(watch: Watch) -> Plan:
        return solve(problem, name, budget, quiet=quiet, watch=watch, form=form)

    outcome = run_planner(call, name, show=not quiet and sys.stderr.isatty())
    assert outcome.plan is not None  # a planner that fails raises; a second Ctrl-C too
    return outcome.plan, outcome.interrupted


def solve(
    problem: Problem,
    name: str,
    budget: Budget,
    *,
    quiet: bool,
    watch: Watch | None = None,
    form: Form | None = None,
) -> Plan:
    """`name`'s plan of `problem` within `budget` (where the planner takes one), with the
    notes a first run in a new environment owes; a plan the guard cut says so."""
    from optplan.planners import PLANNERS, drive, jit

    if name not in PLANNERS:
        raise InputError(f"unknown planner {name!r}; choose from {', '.join(sorted(PLANNERS))}")
    if not quiet and PLANNERS[name].takes_work and sys.stderr.isatty():
        print(f"planning with {name} ({_budget_words(budget)})...", file=sys.stderr, flush=True)
    waiting = [module for module in jit.KERNELS if not jit.ready(module)]
    plan = drive(problem, name, budget, watch=watch, form=form)
    for note in compile_notes(plan, waiting):
        print(f"optplan: note: {note}", file=sys.stderr)
    if plan.detail.get("cut"):
        print(f"optplan: note: {CUT_NOTE.format(seconds=budget.seconds)}", file=sys.stderr)
    return plan


CUT_NOTE = (
    "the time limit ({seconds:g} s) cut this plan before its work was done, so it may "
    "differ from run to run; give more --time-limit or less --work"
)


def _budget_words(budget: Budget) -> str:
    if budget.work is None:
        return f"time limit {budget.seconds:g} s"
    return f"work {budget.work:g}, time limit {budget.seconds:g} s"


def compile_notes(plan: Plan, waiting: list[str]) -> list[str]:
    """What this run paid because numba had not compiled the kernels of `waiting` here
    (pip compiles them when it installs optplan): nothing once they are."""
    from optplan.planners import jit

    notes = []
    if jit.GREEDY in waiting and jit.ready(jit.GREEDY):
        seconds = jit.compile_seconds(jit.GREEDY) or 0.0
        notes.append(
            f"{seconds:.0f} s of this run went to compiling greedy's kernels for this "
            "environment, once"
        )
    compiling = "the exact search's kernels are compiling in the background for this environment"
    if plan.detail.get("search") == "compiling":
        notes.append(
            f"{compiling} (about 20 s on an idle machine, once); this plan is without them"
        )
    elif "search_joined_s" in plan.detail:
        notes.append(f"{compiling}; they joined this plan at {plan.detail['search_joined_s']} s")
    return notes


def report_faults(plan: Plan, faults: list) -> None:  # type: ignore[type-arg]
    print(f"optplan: the {plan.planner} plan is invalid:", file=sys.stderr)
    for fault in faults[:20]:
        print(f"  {fault}", file=sys.stderr)
