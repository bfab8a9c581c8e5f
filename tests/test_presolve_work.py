"""CP-SAT's presolve merges the no-overlap constraints a no-overlap-2D with fixed times
splits into and counts none of it as deterministic time: every solve optplan sets up
bounds that merge (`MERGE_WORK`), so a unit of work is not a minute of presolve."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from benchmarks.skyline_work import sliding
from optplan.budget import MERGE_WORK, Budget, limit_solver, running
from optplan.planners import drive


@pytest.mark.parametrize("budget", [Budget(work=1.0), Budget(seconds=1.0)])
def test_every_solve_of_the_cpsat_planner_bounds_the_merge(
    budget: Budget, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits: list[float] = []
    solve = cp_model.CpSolver.solve

    def recorded(solver: cp_model.CpSolver, *args: object, **kwargs: object) -> object:
        limits.append(solver.parameters.merge_no_overlap_work_limit)
        return solve(solver, *args, **kwargs)

    monkeypatch.setattr(cp_model.CpSolver, "solve", recorded)
    # Sliding windows the skyline search does not close in a unit: CP-SAT runs.
    drive(sliding(200, 50, seed=3), "cpsat", budget)
    assert limits and all(limit == MERGE_WORK for limit in limits)


@given(
    units=st.floats(0.0, 1e4, allow_nan=False),
    workers=st.integers(1, 8),
    seed=st.integers(0, 2**31 - 1),
    single=st.booleans(),
    interleave=st.booleans(),
    counted=st.booleans(),
    scale=st.floats(0.5, 8.0),
)
def test_every_limit_of_a_solve_bounds_the_merge(
    units: float,
    workers: int,
    seed: int,
    single: bool,
    interleave: bool,
    counted: bool,
    scale: float,
) -> None:
    clock = Budget(work=10.0 if counted else None, seconds=None if counted else 10.0).clock()
    solver = cp_model.CpSolver()
    clock.limit(
        solver.parameters, units, workers=workers, seed=seed, single=single, interleave=interleave
    )
    assert solver.parameters.merge_no_overlap_work_limit == MERGE_WORK
    outside, inside = cp_model.CpSolver(), cp_model.CpSolver()
    limit_solver(outside.parameters, units, workers=workers, seed=seed, scale=scale)
    with running(clock):
        limit_solver(inside.parameters, units, workers=workers, seed=seed, scale=scale)
    assert outside.parameters.merge_no_overlap_work_limit == MERGE_WORK
    assert inside.parameters.merge_no_overlap_work_limit == MERGE_WORK
