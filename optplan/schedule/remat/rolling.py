"""Offsets for a schedule too tight for one CP-SAT model, packed window by window from
its end: step 3's last resort where a schedule is met in live bytes but none packs.

Where one op needs nearly the whole budget at once (on MOCCASIN's 250-node graph at
60 %, an op reading 44 buffers: 87,600 of 88,104 bytes), its inputs leave almost no
holes between them, and neither greedy nor a model of every instance packs within the
budget (CP-SAT: 94,500 bytes after 30 s, the staircase below pinned). Steps of `rolled`:

    bytes
    budget ┤      free band above the inputs made so far
           │         ┌────┐  ┌──┐   ┌─┐
           │   ┌──┐  │    │  │  │   │ │     working instances, placed window by window
           ├───┴──┴──┴────┴──┴──┴┬──┴─┴──┐
           │                ┌────┘ input │ the tight op's inputs, a staircase from 0 in
           │        ┌───────┘     3      │ the order they are made: each sits on the one
           │ ┌──────┘   input 2          │ made before, so the bytes not yet taken are
           └─┴──input 1──────────────────┴ one band above them
             0                        tight step      step

1. Slack away from the tight op: the schedule's target is lowered by a share of the
   budget (`TRIES`) at every step but its last `TAIL` (the tabu rank of
   `heuristic.relieved`), where the tight op's inputs gather and nothing can be freed.
2. `staircase`: the instances live at the tight step (the op needing most bytes at
   once) are pinned from offset 0, in the order they are made.
3. From the end back, windows of a few steps (`TRIES`). A window's model (`_window`) places
   every instance live in it or in the window before it that is not placed yet, around
   the placed ones live with them. It may go above the budget: it lowers the bytes
   above it first, then the highest top among the instances made before the window
   before (those the next model places the rest around). First only the instances the
   last model did not place are free, the others where it put them (`FAST_SECONDS`);
   where that ends above the budget, all are free, hinted with those offsets. A window
   that ends above the budget has failed. Those made in the window keep their place;
   the others are placed again with the window before. A window that fails is tried
   again with up to `MERGES` later windows placed again beside it.
4. Where every window fits, the plan of the whole schedule, checked by `validate`.
   Where one fails, steps 1 to 4 again with the next of `TRIES`, while time is left.

Measured on the 250-node graph at 60 %, on seven schedules the heuristics met in live
bytes, each relieved by 1,000-3,000 bytes: with the budget as a hard limit in each
window (no bytes above it), CP-SAT often finds no offsets in a window's time and has
nothing to improve. With the bytes above it lowered and the fast model first, windows
of 25 steps packed 4 of the 7 (86-167 s), windows of 15 steps 3 of 6 (83-124 s), and
5 of the 7 packed in one or the other. The schedule met at 88,010 bytes, relieved by
2,000, packed in 1 of 3 runs without the fast model and in 3 of 3 with it; the sum of
the tops instead of the highest top packed 1 of 5 runs. A window's result moves with
the load (CP-SAT's 2 workers): the same schedule packs in one run and not in the next.
Anytime only in that it stops at the deadline: None proves nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ortools.sat.python import cp_model

from optplan.budget import MODEL_SCALE, limit_solver, now, solver_done
from optplan.problem import Buffer, Problem, one_arena
from optplan.problem.plan import Plan, Status, validate
from optplan.schedule.graph import Graph, problem_of
from optplan.schedule.remat.bounds import direct_bytes
from optplan.schedule.remat.heuristic import TABU, relieved

WINDOW_SECONDS = 30.0  # the most time one window's model is given
FAST_SECONDS = 5.0  # the most time the model with the last model's offsets kept is given
MERGES = 3  # the most later windows placed again beside one that fails
# Step 1's slack (a share of the budget: 2,002 and 2,936 of 88,104 bytes) and the
# window, tried in turn while time is left.
TRIES = ((1 / 44, 25), (1 / 44, 15), (1 / 30, 25))
TAIL = 25  # the last steps of a schedule given no slack
ABOVE = 8  # a window's instances may reach 1/ABOVE of the budget above it


def rolled(
    graph: Graph,
    steps: Sequence[int],
    budget: int,
    alignment: int,
    allowed: list[bool],
    deadline: float,
) -> tuple[tuple[int, ...], Plan] | None:
    """A schedule met from `steps` with slack away from its tight op, and its instances
    packed window by window (the module docstring); None where every share fails."""
    room = budget - graph.base_bytes
    need = graph.base_bytes + np.array([direct_bytes(graph, v) for v in steps], dtype=np.int64)
    for share, window in TRIES:
        relief = np.where(np.arange(len(steps)) < len(steps) - TAIL, int(budget * share), 0)
        met = relieved(
            graph,
            steps,
            budget,
            allowed,
            deadline,
            TABU,
            np.clip(relief, 0, np.maximum(0, budget - need)),
        )
        if met is None:
            continue
        tight = max(range(len(met[0])), key=lambda t: direct_bytes(graph, met[0][t]))
        plan = roll(problem_of(graph, met[0], alignment), tight, room, deadline, window)
        if plan is not None:
            return met[0], plan
    return None


def roll(problem: Problem, tight: int, room: int, deadline: float, window: int) -> Plan | None:
    """`problem`'s instances (a schedule's, one interval each, `tight` its tight step)
    packed within `room` bytes by steps 2 to 4 in windows of `window` steps, or None
    where a window fails."""
    buffers = [b for b in problem.buffers if b.size > 0]
    end = max((b.live[-1].end for b in buffers), default=0)
    bounds = sorted({0, *range(end, 0, -window)})
    placed = staircase(buffers, tight)
    hint: dict[str, int] = {}
    k, merged = len(bounds) - 2, 0
    history: list[list[str]] = []  # the instances each window placed, latest last
    while k >= 0:
        low, cut, high = bounds[max(k - 1, 0)], bounds[k], bounds[k + 1 + merged]
        free = [b for b in buffers if b.id not in placed and _meets(b, low, high)]
        reach = max([high] + [b.live[-1].end for b in free])
        fixed = [b for b in buffers if b.id in placed and _meets(b, low, reach)]
        got = _placed(free, fixed, placed, hint, low if k else 0, room, deadline)
        if got is None:
            if merged == MERGES or not history or now() > deadline - 0.1:
                return None
            for key in history.pop():
                del placed[key]
            merged += 1
            continue
        hint.update(got)
        kept = [b.id for b in free if k == 0 or b.live[0].start >= cut]
        placed.update((key, got[key]) for key in kept)
        history.append(kept)
        k, merged = k - 1, max(0, merged - 1)
    offsets = {b.id: placed.get(b.id, 0) for b in problem.buffers}
    arena = max((offsets[b.id] + b.size for b in problem.buffers), default=0)
    plan = Plan(offsets, arena, Status.FEASIBLE, "rolling", 0)
    return (
        None
        if validate(Problem(problem.buffers, problem.aliases, memories=one_arena(room)), plan)
        else plan
    )


def _placed(
    free: list[Buffer],
    fixed: list[Buffer],
    placed: dict[str, int],
    hint: dict[str, int],
    before: int,
    room: int,
    deadline: float,
) -> dict[str, int] | None:
    """Step 3's offsets of `free` in one window: with the hinted ones kept where the last
    model put them, else all free, hinted; None where both end above `room`."""
    kept = [b for b in free if b.id in hint]
    seconds = min(FAST_SECONDS, deadline - now())
    if kept and seconds > 0.1:
        rest = [b for b in free if b.id not in hint]
        got = _window(rest, fixed + kept, {**placed, **hint}, {}, before, room, seconds)
        if got is not None:
            return {**got, **{b.id: hint[b.id] for b in kept}}
    seconds = min(WINDOW_SECONDS, deadline - now())
    return _window(free, fixed, placed, hint, before, room, seconds) if seconds > 0.1 else None


def staircase(buffers: Sequence[Buffer], tight: int) -> dict[str, int]:
    """Offsets of the instances live at step `tight`, each on the one made before it,
    the first at 0 (each offset rounded up to its alignment)."""
    at, pins = 0, {}
    for b in sorted(
        (b for b in buffers if _meets(b, tight, tight + 1)),
        key=lambda b: (b.live[0].start, -b.size),
    ):
        at = -(-at // b.alignment) * b.alignment
        pins[b.id] = at
        at += b.size
    return pins


def _meets(b: Buffer, start: int, end: int) -> bool:
    return any(span.start < end and start < span.end for span in b.live)


def _window(
    free: list[Buffer],
    fixed: list[Buffer],
    placed: dict[str, int],
    hint: dict[str, int],
    before: int,
    room: int,
    seconds: float,
) -> dict[str, int] | None:
    """Offsets of `free` around `fixed` (at `placed`) within `room`, or None where
    CP-SAT ends with some above it: the bytes above it lowest, then the highest top of
    those made before step `before`; `hint` holds earlier offsets."""
    model = cp_model.CpModel()
    height = room + room // ABOVE
    top = model.new_int_var(0, height, "top")
    early = model.new_int_var(0, height, "early")
    boxes, offset = [], {}
    for b in free:
        slot = model.new_int_var(0, (height - b.size) // b.alignment, f"slot[{b.id}]")
        if b.id in hint:
            model.add_hint(slot, hint[b.id] // b.alignment)
        offset[b.id] = b.alignment * slot
        model.add(top >= offset[b.id] + b.size)
        if b.live[0].start < before:
            model.add(early >= offset[b.id] + b.size)
        boxes.append((b, model.new_fixed_size_interval_var(offset[b.id], b.size, f"y[{b.id}]")))
    for b in fixed:
        boxes.append((b, model.new_fixed_size_interval_var(placed[b.id], b.size, f"y[{b.id}]")))
    rows = [
        model.new_fixed_size_interval_var(s.start, s.end - s.start, f"t[{b.id}]")
        for b, _ in boxes
        for s in b.live
    ]
    model.add_no_overlap_2d(rows, [box for b, box in boxes for _ in b.live])
    above = model.new_int_var(0, height, "above")
    model.add(above >= top - room)
    model.minimize((height + 1) * above + early)
    solver = cp_model.CpSolver()
    limit_solver(solver.parameters, seconds, workers=2, scale=MODEL_SCALE)
    code = solver.solve(model)
    solver_done(solver, MODEL_SCALE)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or solver.value(above) > 0:
        return None
    return {b.id: int(solver.value(offset[b.id])) for b in free}
