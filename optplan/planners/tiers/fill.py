"""The baseline users have today: each tensor in one memory all its life, fast first.

Steps (`fill`):
1. The tracks are taken in one order: `size`, largest first (TFLite's greedy by size, and
   how banked planners fill their fastest bank), or `density`, the bytes accessed per
   byte held per point, highest first (the tensors whose accesses save the most for the
   fast memory they take).
2. Each goes to the cheapest memory it may use where, at every point of its life, the
   bytes already there plus its own stay within that memory's limit; else to the next
   cheapest; the last resort is a memory without limit.
3. A track that fits nowhere leaves no plan (None).

Limits are counted in bytes live at each point, alignment padding aside; the memory's
packing (`stays.pack`) then finds offsets, and a caller whose packing overflows tries
again with lower limits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optplan.planners.tiers.form import TierForm, Track

KEYS = ("size", "density")


class Loads:
    """Bytes held in each memory at each point, against each memory's limit."""

    def __init__(self, form: TierForm, limits: Sequence[int | None]) -> None:
        points = 1 + max((t.points[-1] for t in form.tracks if t.points), default=0)
        self.limits = list(limits)
        self.bytes = [np.zeros(points, dtype=np.int64) for _ in limits]

    def fits(self, memory: int, points: Sequence[int], size: int) -> bool:
        limit = self.limits[memory]
        if limit is None or not size:
            return True
        return int(self.bytes[memory][list(points)].max(initial=0)) + size <= limit

    def add(self, memory: int, points: Sequence[int], size: int) -> None:
        self.bytes[memory][list(points)] += size


def order(form: TierForm, key: str, tracks: Sequence[Track] | None = None) -> list[Track]:
    """The tracks in the order `key` names (ties: earlier first, then problem order)."""
    chosen = list(form.tracks if tracks is None else tracks)
    if key == "size":
        return sorted(chosen, key=lambda t: (-t.size, t.first, t.index))
    if key == "density":
        return sorted(chosen, key=lambda t: (-_density(t), -t.size, t.first, t.index))
    raise ValueError(f"unknown fill order {key!r}; choose from {', '.join(KEYS)}")


def _density(track: Track) -> float:
    accessed = sum(size for _, size in (*track.writes, *track.reads))
    held = track.size * len(track.points)
    return accessed / held if held else float("inf")


def fill(form: TierForm, limits: Sequence[int | None], key: str) -> list[int] | None:
    """One memory per track (see the module), or None when some track fits nowhere."""
    loads = Loads(form, limits)
    choice = [-1] * len(form.tracks)
    for track in order(form, key):
        memory = place(loads, track)
        if memory < 0:
            return None
        choice[track.index] = memory
    return choice


def place(loads: Loads, track: Track, memories: Sequence[int] | None = None) -> int:
    """The cheapest memory of `memories` (default: those the track may use) with room
    for the track all its life, its bytes added there; -1 when none has room."""
    for memory in track.allowed if memories is None else memories:
        if loads.fits(memory, track.points, track.size):
            loads.add(memory, track.points, track.size)
            return memory
    return -1
