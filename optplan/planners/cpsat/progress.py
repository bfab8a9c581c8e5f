"""What the CP-SAT planner tells its watch (`watch.Watch`): the arena and bound as they
improve, at most every REPORT_SECONDS unless forced, and whether it was asked to stop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from optplan.planners.common import Rect, top
from optplan.planners.cpsat.part import Settings

REPORT_SECONDS = 0.1  # a planner reports at most this often, unless forced


def is_stopped(options: Settings) -> bool:
    return options.watch is not None and options.watch.stopped


def report_progress(
    options: Settings,
    rects: Sequence[Rect],
    offsets: Sequence[int],
    bound: int,
    phase: str,
    *,
    force: bool = False,
) -> None:
    """Tell the watch, if any, the arena and bound now (at most every REPORT_SECONDS
    unless forced: finding the arena reads every rectangle)."""
    watch = options.watch
    if watch is not None and (force or watch.quiet_for(REPORT_SECONDS)):
        watch.report(top(rects, offsets), bound, phase)


def hearing(
    options: Settings,
    rects: Sequence[Rect],
    offsets: Sequence[int],
    parts: Sequence[Sequence[Rect]],
    bound: int,
    phase: str,
) -> Callable[[int, int], None] | None:
    """What a solver working on `parts` (all placed alike) tells the watch: the arena
    with them at the height found, and the bound (the others' top is found once, at the
    first report)."""
    watch = options.watch
    if watch is None:
        return None
    inside = {rect.index for part in parts for rect in part}
    rest: list[int] = []

    def heard(part_arena: int, part_bound: int = 0) -> None:
        if not rest:
            rest.append(
                max((offsets[r.index] + r.size for r in rects if r.index not in inside), default=0)
            )
        watch.report(max(rest[0], part_arena), max(bound, part_bound), phase)

    return heard
