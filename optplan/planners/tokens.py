"""TVM's storage-token reuse rule (Relax StaticPlanBlockMemory), as a baseline.

TVM gives each tensor a storage token and places every tensor at offset 0 of its token;
tokens never share bytes. Walking program points in order:

1. release: tokens of tensors whose last use was the previous point go back to a free pool
   kept per dtype (and per allowed offset residue, so that reuse keeps every alignment),
   ordered by size (earlier releases first among equal sizes);
2. request, for each tensor defined here, in buffer order:
   - a tensor that is never read gets a fresh token that is never released;
   - else the smallest free token of its dtype with size in [request, 16 x request];
   - else the largest free token with size in [request / 16, request), grown to the
     request;
   - else a fresh token of the request's size.

The arena is the tokens laid end to end (each aligned), so its size is TVM's total of
storage bytes; `Plan.storages` gives each token's bytes. Pinned classes stay at their pins
and the tokens start above them; pins that contradict each other or the alignments, and
an arena over the capacity, are reported as every planner reports them. An alias class (a view, an in-place output) shares one token, as TVM's
tensors that share a storage do; a class live in several intervals (If branches) holds its
token from its first point to its last.

    point:   0     1     2     3
    a       [tok0=========)             a dies after point 1: tok0 back in the pool
    b             [tok1===========)
    c                   [tok0=====)     c (same dtype, size within 16x) reuses tok0
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from optplan.planners.base import Declared
from optplan.planners.common import Form, Rect, make_form, make_plan, no_plan, now
from optplan.planners.tiers import plan_heuristics
from optplan.problem import Problem
from optplan.problem.plan import Plan, Status

MATCH_RANGE = 16


def _pack(problem: Problem) -> Plan:
    return plan_tokens(make_form(problem))


@dataclass(slots=True)
class _Token:
    number: int
    size: int
    kind: tuple[str, int, int]


@dataclass(slots=True)
class _Pools:
    """Free tokens per kind, as sorted (size, release order, token number) triples."""

    free: dict[tuple[str, int, int], list[tuple[int, int, int]]] = field(default_factory=dict)
    released: int = 0

    def release(self, token: _Token) -> None:
        bisect.insort(
            self.free.setdefault(token.kind, []), (token.size, self.released, token.number)
        )
        self.released += 1

    def reuse(self, size: int, kind: tuple[str, int, int]) -> int | None:
        """The token number to reuse for a request of `size` bytes, taken out of the pool."""
        pool = self.free.get(kind, [])
        low = bisect.bisect_left(pool, (size // MATCH_RANGE, -1, -1))
        mid = bisect.bisect_left(pool, (size, -1, -1))
        high = bisect.bisect_right(pool, (size * MATCH_RANGE, self.released, 1 << 62))
        if mid < high:
            return pool.pop(mid)[2]
        if mid > low:
            return pool.pop(mid - 1)[2]
        return None


def plan_tokens(form: Form, *, started: float | None = None) -> Plan:
    started = now() if started is None else started
    if form.fault is not None:
        return no_plan(form, "tokens", started=started, status=Status.INFEASIBLE, reason=form.fault)
    rects = form.rects
    free = [r for r in rects if r.pin is None]
    tokens: list[_Token] = []
    token_of: dict[int, int] = {}
    pools = _Pools()
    starts: dict[int, list[Rect]] = {}
    ends: dict[int, list[Rect]] = {}
    for rect in free:
        starts.setdefault(rect.start, []).append(rect)
        ends.setdefault(rect.end, []).append(rect)
    for point in sorted(set(starts) | set(ends)):
        for rect in ends.get(point, []):
            if _is_read(rect):
                pools.release(tokens[token_of[rect.index]])
        for rect in starts.get(point, []):
            kind = _kind(form.problem, rect)
            number = pools.reuse(rect.size, kind) if _is_read(rect) else None
            if number is None:
                number = len(tokens)
                tokens.append(_Token(number, rect.size, kind))
            tokens[number].size = max(tokens[number].size, rect.size)
            token_of[rect.index] = number
    floor = max((r.pin + r.size for r in rects if r.pin is not None), default=0)
    storages = lay_end_to_end([(t.size, t.kind[1], t.kind[2]) for t in tokens], floor)
    offsets = [r.pin if r.pin is not None else storages[token_of[r.index]][0] for r in rects]
    return make_plan(form, "tokens", offsets, started=started, storages=tuple(storages))


def _is_read(rect: Rect) -> bool:
    """A class live at one point only was written and never read."""
    return rect.end - rect.start > 1


def _kind(problem: Problem, rect: Rect) -> tuple[str, int, int]:
    """What a token is pooled by: the dtype, as TVM does, and the offsets it may take
    (residue and modulus), so that every class reusing a token stays aligned."""
    assert rect.residue is not None
    return problem.buffer(rect.root).dtype, rect.residue, rect.modulus


def lay_end_to_end(tokens: list[tuple[int, int, int]], floor: int = 0) -> list[tuple[int, int]]:
    """Storages of (size, residue, modulus) one after another from `floor`, each at the
    lowest offset its residue allows: their (offset, size) pairs."""
    storages: list[tuple[int, int]] = []
    cursor = floor
    for size, residue, modulus in tokens:
        base = cursor + (residue - cursor) % modulus
        storages.append((base, size))
        cursor = base + size
    return storages


@dataclass(frozen=True, slots=True)
class TokensPlanner(Declared):
    """TVM StaticPlanBlockMemory's storage tokens: one storage per token, at offset 0."""

    name: str = "tokens"

    def arena(self, form: Form, started: float) -> Plan:
        return plan_tokens(form, started=started)

    def memories(self, problem: Problem, started: float) -> Plan:
        """Everything in the dearest memory, as TVM has it."""
        return plan_heuristics(problem, self.name, ["dearest"], _pack, started=started)
