"""Why nothing fits: one proof a reader can check, from the bounds that already exist.

Steps of `prove(forms, ...)`:

1. The point of the program as written where the most bytes are live, and the tensors
   held there (`problem.live_profile`).
2. One row per lever, each a lower bound on what that lever can reach:
   as is and in place: the live bytes of that program at the alignment (no plan is
   smaller: at each point, its buffers at offsets on multiples of the alignment);
   order: `passes.reorder`'s proven bound over every order;
   order + in place: the same, of the in-place form of the best order found;
   recomputation (with any order): `schedule.remat.bounds.memory_bound` over every
   dataflow block of the program and of its in-place form, at the alignment (the op and
   the tensors it must hold at once; `core` tightens it with the bound recomputation
   proves knowing which ops may run again);
   a program without dataflow blocks keeps its order, so its live bytes stand.
3. The bound is the least row: every lever needs at least that many bytes. Several
   memories hold at most the sum of their capacities (none where one has no limit).
"""

from __future__ import annotations

from dataclasses import dataclass

from optplan.analysis.liveness import MemoryFacts
from optplan.fitting.levers import Setting
from optplan.ir import Program
from optplan.passes.reorder import block_graphs
from optplan.problem import Memory, Problem, live_profile, lower_bound
from optplan.schedule.remat import memory_bound
from optplan.schedule.remat.bounds import aligned_bytes

# Up to this many buffers the live sets are swept for their aligned bytes (a pass over
# every buffer per point).
ALIGNED_SWEEP = 4000


@dataclass(frozen=True, slots=True)
class Bound:
    """No plan of `lever` needs fewer than `bytes`, because of `reason`."""

    lever: str
    bytes: int
    reason: str


@dataclass(frozen=True, slots=True)
class Proof:
    """`bound_bytes`: what every lever needs at least (`rows`: each lever's bound, the
    least of them sets it); `point`, `binding`, `held`: the peak of the program as
    written, the tensors live there and their bytes (`live_bytes` in all)."""

    bound_bytes: int
    reason: str
    point: int
    binding: str
    held: tuple[tuple[str, int], ...]
    live_bytes: int
    rows: tuple[Bound, ...]

    def short(self, capacity: int) -> str:
        return (
            f"no lever fits {capacity} bytes: every one needs at least {self.bound_bytes} "
            f"({self.reason})"
        )

    def line(self, capacity: int) -> str:
        shown = ", ".join(f"{name} ({size})" for name, size in self.held[:6])
        more = f" and {len(self.held) - 6} more" if len(self.held) > 6 else ""
        where = f" ({self.binding})" if self.binding else ""
        return (
            f"no lever fits {capacity} bytes: every one needs at least {self.bound_bytes} "
            f"({self.reason}); as written, {self.live_bytes} bytes are live at point "
            f"{self.point}{where}: {shown}{more}"
        )


def peak_of(
    problem: Problem, memory: MemoryFacts | None
) -> tuple[int, str, tuple[tuple[str, int], ...]]:
    """The point of the most live bytes, its binding's name, and the tensors live there
    (largest first)."""
    profile = live_profile(problem)
    point = max(profile, key=lambda pair: pair[1])[0] if profile else 0
    live = sorted(
        (b for b in problem.buffers if any(iv.start <= point < iv.end for iv in b.live)),
        key=lambda b: (-b.size, b.id),
    )
    names = [n for n, p in memory.points.items() if p == point] if memory is not None else []
    return point, names[0] if names else "", tuple((b.id, b.size) for b in live)


def program_rows(
    as_is: tuple[Program, Problem],
    inplace: tuple[Program, Problem],
    best_order_bytes: int,
    reordered_inplace: Problem,
    setting: Setting,
) -> list[Bound]:
    """Step 2 of the module docstring for a program: one row per lever `fit` tries."""
    live = "the live bytes" + (
        f" at offsets on multiples of {setting.alignment}" if setting.alignment > 1 else ""
    )
    return [
        Bound(
            "as is", aligned_peak(as_is[1], setting.alignment), f"{live} of the program as written"
        ),
        Bound(
            "in place", aligned_peak(inplace[1], setting.alignment), f"{live} of its in-place form"
        ),
        Bound("order", best_order_bytes, "the order search's proven bound over every order"),
        Bound(
            "order + in place",
            aligned_peak(reordered_inplace, setting.alignment),
            f"{live} of the best order's in-place form",
        ),
        _remat_row("recompute", *as_is, setting),
        _remat_row("recompute + in place", *inplace, setting),
    ]


def aligned_peak(problem: Problem, alignment: int) -> int:
    """The least arena any plan of `problem` needs: at each point, the buffers live there
    held at once with offsets on multiples of `alignment` (`aligned_bytes`); the live
    bytes where buffers alias (an alias class is one allocation) or are too many to sweep."""
    peak = lower_bound(problem)
    if alignment <= 1 or problem.aliases or len(problem.buffers) > ALIGNED_SWEEP:
        return peak
    points = sorted({iv.start for b in problem.buffers for iv in b.live})
    for point in points:
        sizes = [
            b.size for b in problem.buffers if any(iv.start <= point < iv.end for iv in b.live)
        ]
        peak = max(peak, aligned_bytes(sizes, alignment))
    return peak


def _remat_row(lever: str, program: Program, problem: Problem, setting: Setting) -> Bound:
    graphs = block_graphs(program, plan_outputs=setting.plan_outputs)
    if not graphs:
        return Bound(lever, lower_bound(problem), "no dataflow block: the order is fixed")
    found = max(
        (memory_bound(g, alignment=setting.alignment) for g in graphs), key=lambda b: b.bytes
    )
    return Bound(lever, found.bytes, found.reason)


def prove(
    rows: list[Bound],
    problem: Problem,
    memory: MemoryFacts | None,
    capacity: int,
    memories: tuple[Memory, ...] | None,
) -> Proof | None:
    """The proof that nothing fits `capacity` (or the memories), or None where the
    bounds do not exclude it."""
    # Of the rows that set the bound, the last: a recomputation row covers every order too.
    least = min(reversed(rows), key=lambda row: row.bytes)
    room = capacity
    if memories is not None:
        if any(m.capacity is None for m in memories):
            return None
        room = max(capacity, sum(m.capacity or 0 for m in memories))
    if least.bytes <= room:
        return None
    point, binding, held = peak_of(problem, memory)
    reason = f"{least.lever}: {least.reason}"
    if memories is not None:
        reason += f"; the memories hold {room} bytes in all"
    return Proof(least.bytes, reason, point, binding, held, sum(s for _, s in held), tuple(rows))
