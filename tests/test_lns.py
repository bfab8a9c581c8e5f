"""Large-neighbourhood search keeps every placement valid and never raises the top; cpsat
hands parts above MODEL_MAX_PART to it and still returns a valid plan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from optplan.budget import Budget, Clock
from optplan.planners import lns
from optplan.planners.common import Form, live_peak, make_form, make_plan, now, top
from optplan.planners.cpsat import planner as cpsat
from optplan.planners.greedy import best_offsets
from optplan.planners.greedy import kernel as greedy_kernel
from optplan.planners.greedy import tries as greedy_tries
from optplan.planners.watch import Watch
from optplan.problem import Buffer, Interval, Problem
from optplan.problem.plan import Status, validate
from optplan.strategies import problems


@settings(deadline=None, max_examples=40)
@given(problems(max_buffers=10))
def test_improve_keeps_plans_valid_and_never_higher(problem: Problem) -> None:
    form = make_form(problem)
    rects = form.rects
    if any(r.residue is None for r in rects):
        return
    offsets, _ = best_offsets(form)
    if validate(problem, make_plan(form, "greedy", offsets, started=now())):
        return  # pins the greedy cannot honour: nothing to improve from
    improved = list(offsets)
    for part in form.parts:
        clock = Budget(work=0.5).clock()
        improved = lns.improve(list(part), improved, (live_peak(part), clock.end), clock)
    plan = make_plan(form, "lns", improved, started=now())
    assert validate(problem, plan) == []
    assert top(rects, improved) <= top(rects, offsets)


def staircase() -> Problem:
    """A long buffer under short ones of two kinds; the live bytes, 20, are reachable."""
    buffers = [Buffer("long", 10, (Interval(0, 10),))]
    buffers += [Buffer(f"s{k}", 6, (Interval(k, k + 1),)) for k in range(10)]
    buffers += [Buffer(f"m{k}", 4, (Interval(2 * k, 2 * k + 2),)) for k in range(5)]
    return Problem(tuple(buffers))


def stacked(
    form: Form, deadline: float | None = None, clock: Clock | None = None
) -> tuple[list[int], dict[str, object]]:
    """The naive stack as a (bad) starting placement."""
    offsets, high = [], 0
    for rect in form.rects:
        offsets.append(high)
        high += rect.size
    return offsets, {"order": "stack"}


def test_improve_lowers_a_bad_placement_to_the_bound() -> None:
    problem = staircase()
    form = make_form(problem)
    rects = list(form.rects)
    offsets, _ = stacked(form)
    clock = Budget(work=20.0).clock()
    improved = lns.improve(rects, offsets, (20, clock.end), clock)
    assert validate(problem, make_plan(form, "lns", improved, started=now())) == []
    assert top(rects, improved) == 20 < top(rects, offsets)


def test_cpsat_uses_the_neighbourhood_search_on_large_parts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    problem = staircase()
    monkeypatch.setattr(cpsat, "MODEL_MAX_PART", 3)
    monkeypatch.setattr(cpsat, "best_offsets", stacked)
    plan = cpsat.CpSat(time_limit=20.0, search_share=0.0)(problem)
    assert validate(problem, plan) == []
    assert plan.detail["greedy_arena"] == 90
    assert plan.arena == 20 == plan.lower_bound and plan.status is Status.OPTIMAL


@pytest.mark.skipif(not greedy_kernel.COMPILED, reason="numba is not installed")
@settings(deadline=None, max_examples=40)
@given(problems(max_buffers=10))
def test_greedy_tries_keep_plans_valid_and_never_higher(problem: Problem) -> None:
    form = make_form(problem)
    if any(r.residue is None for r in form.rects):
        return
    offsets, _ = best_offsets(form)
    if validate(problem, make_plan(form, "greedy", offsets, started=now())):
        return
    tried = list(offsets)
    for part in form.parts:
        clock = Budget(work=0.05).clock()
        tried = greedy_tries.tries(part, tried, clock.end, clock=clock, seed=3)
    assert validate(problem, make_plan(form, "tries", tried, started=now())) == []
    assert top(form.rects, tried) <= top(form.rects, offsets)


def test_a_stopped_watch_ends_the_large_part_work_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C reaches a part too big for one model: the tries and the neighbourhood
    search hear the watch and return the placement they have, long before the limit."""
    problem = staircase()
    monkeypatch.setattr(cpsat, "MODEL_MAX_PART", 3)
    monkeypatch.setattr(cpsat, "best_offsets", stacked)
    watch = Watch()
    watch.stop()
    began = now()
    plan = cpsat.CpSat(time_limit=30.0, search_share=0.0, watch=watch)(problem)
    assert now() - began < 5.0
    assert validate(problem, plan) == [] and plan.detail.get("interrupted") is True
    form = make_form(problem)
    offsets, _ = stacked(form)
    clock = Budget(work=30.0).clock()
    until = (20, clock.end)
    assert lns.improve(list(form.rects), offsets, until, clock, watch=watch) == offsets
    tried = greedy_tries.tries(list(form.rects), offsets, clock.end, clock=clock, watch=watch)
    assert tried == offsets
