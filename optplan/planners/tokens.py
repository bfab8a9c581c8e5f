"""TVM's storage-token reuse rule (Relax StaticPlanBlockMemory), as a baseline.

TVM gives each tensor a storage token and places every tensor at offset 0 of its token;
tokens never share bytes. Walking program points in order:

1. release: tokens of tensors whose last use was the previous point go back to a free pool
   kept per dtype, ordered by size (earlier releases first among equal sizes);
2. request, for each tensor defined here, in buffer order:
   - a tensor that is never read gets a fresh token that is never released;
   - else the smallest free token of its dtype with size in [request, 16 x request];
   - else the largest free token with size in [request / 16, request), grown to the
     request;
   - else a fresh token of the request's size.

The arena is the tokens laid end to end (each aligned), so its size is TVM's total of
storage bytes. An alias class (a view, an in-place output) shares one token, as TVM's
tensors that share a storage do; a class live in several intervals (If branches) holds its
token from its first point to its last.

    point:   0     1     2     3
    a       [tok0=========)             a dies after point 1: tok0 back in the pool
    b             [tok1===========)
    c                   [tok0=====)     c (same dtype, size within 16x) reuses tok0
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field

from optplan.plan import Plan, Status
from optplan.problem import AliasClass, Problem, alias_classes, lower_bound

MATCH_RANGE = 16


@dataclass(slots=True)
class _Token:
    number: int
    size: int
    dtype: str


@dataclass(slots=True)
class _Pools:
    """Free tokens per dtype, as sorted (size, release order, token number) triples."""

    free: dict[str, list[tuple[int, int, int]]] = field(default_factory=dict)
    released: int = 0

    def release(self, token: _Token) -> None:
        bisect.insort(self.free.setdefault(token.dtype, []), (token.size, self.released, token.number))
        self.released += 1

    def reuse(self, size: int, dtype: str) -> int | None:
        """The token number to reuse for a request of `size` bytes, taken out of the pool."""
        pool = self.free.get(dtype, [])
        low = bisect.bisect_left(pool, (size // MATCH_RANGE, -1, -1))
        mid = bisect.bisect_left(pool, (size, -1, -1))
        high = bisect.bisect_right(pool, (size * MATCH_RANGE, self.released, 1 << 62))
        if mid < high:
            return pool.pop(mid)[2]
        if mid > low:
            return pool.pop(mid - 1)[2]
        return None


def plan_tokens(problem: Problem) -> Plan:
    started = time.perf_counter()
    classes = alias_classes(problem)
    tokens: list[_Token] = []
    token_of: dict[int, int] = {}
    pools = _Pools()
    starts: dict[int, list[int]] = {}
    ends: dict[int, list[int]] = {}
    for index, cls in enumerate(classes):
        starts.setdefault(cls.live[0].start, []).append(index)
        ends.setdefault(cls.live[-1].end, []).append(index)
    for point in sorted(set(starts) | set(ends)):
        for index in ends.get(point, []):
            if _is_read(classes[index]):
                pools.release(tokens[token_of[index]])
        for index in starts.get(point, []):
            cls = classes[index]
            dtype = _dtype(problem, cls)
            number = pools.reuse(cls.size, dtype) if _is_read(cls) else None
            if number is None:
                number = len(tokens)
                tokens.append(_Token(number, cls.size, dtype))
            tokens[number].size = max(tokens[number].size, cls.size)
            token_of[index] = number
    return _lay_out(problem, classes, tokens, token_of, time.perf_counter() - started)


def _is_read(cls: AliasClass) -> bool:
    """A class live at one point only was written and never read."""
    return cls.live[-1].end - cls.live[0].start > 1


def _dtype(problem: Problem, cls: AliasClass) -> str:
    return problem.buffer(cls.root).dtype


def lay_end_to_end(problem: Problem, sizes: list[int]) -> tuple[list[int], int]:
    """Storages of `sizes` bytes one after another, each starting at a multiple of the
    problem's largest alignment: their base offsets and the arena they span."""
    alignment = max((b.alignment for b in problem.buffers), default=1)
    bases: list[int] = []
    arena = 0
    for size in sizes:
        arena = -(-arena // alignment) * alignment
        bases.append(arena)
        arena += size
    return bases, arena


def _lay_out(
    problem: Problem,
    classes: list[AliasClass],
    tokens: list[_Token],
    token_of: dict[int, int],
    seconds: float,
) -> Plan:
    base, arena = lay_end_to_end(problem, [t.size for t in tokens])
    offsets = {
        name: base[token_of[index]] + delta
        for index, cls in enumerate(classes)
        for name, delta in cls.members
    }
    bound = lower_bound(problem)
    return Plan(
        offsets=offsets,
        arena=arena,
        status=Status.OPTIMAL if arena == bound else Status.FEASIBLE,
        planner="tokens",
        lower_bound=bound,
        seconds=seconds,
        bound=bound,
        detail={"storages": [t.size for t in tokens]},
    )


@dataclass(frozen=True, slots=True)
class TokensPlanner:
    """TVM StaticPlanBlockMemory's storage tokens: one storage per token, at offset 0."""

    name: str = "tokens"

    def __call__(self, problem: Problem) -> Plan:
        return plan_tokens(problem)
