"""The floor search's memo of failed states: three hashes of (floors, rectangles left),
kept up to date move by move, and an open-addressed table of the states that failed.

1. `hash_keys(sections, rectangles, floors, scalars)` draws, from a fixed seed, one
   multiplier per section and one key per rectangle for each of three primes, and
   writes the root state's hashes into `scalars`.
2. A state's hash h is sum(floor[s] * mult[s]) + sum(key[r] for r placed), mod prime h;
   `_set_floor` and `_toggle` change it by one term as the search moves.
3. `_memo` looks the three hashes up (and with `insert`, adds them); a table 60 % full
   forgets everything, since probing slows down past that.
"""

from __future__ import annotations

import numpy as np

from optplan.planners.jit import njit
from optplan.planners.search.parts import _H1, _H2, _H3, _MEMO, _PRIMES

SEED = 0x5EED  # fixed: hashes must not change the search


def hash_keys(
    sections: int, rectangles: int, floors: np.ndarray, scalars: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per prime, the sections' multipliers and the rectangles' keys (`mult`,
    `zobrist`); the hashes of `floors` with nothing placed go into `scalars`."""
    rng = np.random.default_rng(SEED)
    primes = np.array(_PRIMES, dtype=np.int64)
    mult = rng.integers(1, primes[:, None], size=(3, sections), dtype=np.int64)
    zobrist = rng.integers(0, primes[:, None], size=(3, rectangles), dtype=np.int64)
    for h, prime in enumerate(_PRIMES):
        terms = (int(f) % prime * int(m) % prime for f, m in zip(floors, mult[h]))
        scalars[_H1 + h] = sum(terms) % prime
    return mult, zobrist


@njit(cache=True)
def _term(section, floor, multipliers, prime):
    return (floor % prime) * multipliers[section] % prime


@njit(cache=True)
def _set_floor(section, floor, floors, mult, scalars):
    """Move one floor, keeping the three hashes of the state up to date."""
    old = floors[section]
    for h in range(3):
        prime = _PRIMES[h]
        value = scalars[_H1 + h] - _term(section, old, mult[h], prime)
        scalars[_H1 + h] = (value + _term(section, floor, mult[h], prime)) % prime
    floors[section] = floor


@njit(cache=True)
def _toggle(r, sign, zobrist, scalars):
    """Add rectangle r's keys (`sign` 1: it is placed) or take them away (-1)."""
    for h in range(3):
        prime = _PRIMES[h]
        scalars[_H1 + h] = (scalars[_H1 + h] + sign * zobrist[h, r]) % prime


@njit(cache=True)
def _memo(table, scalars, insert):
    """Look the state's hashes up in the open-addressed table of failed states; with
    `insert`, add them. Returns True when they were already there."""
    slots = table.shape[0]
    k1, k2, k3 = scalars[_H1] + 1, scalars[_H2], scalars[_H3]  # +1: zero marks empty
    slot = (k1 * 40503 + k2) % slots
    while table[slot, 0] != 0:
        if table[slot, 0] == k1 and table[slot, 1] == k2 and table[slot, 2] == k3:
            return True
        slot = (slot + 1) % slots
    if insert:
        if scalars[_MEMO] * 10 >= slots * 6:
            for row in range(slots):  # full enough to slow probing: forget everything
                table[row, 0], table[row, 1], table[row, 2] = 0, 0, 0
            scalars[_MEMO] = 0
            slot = (k1 * 40503 + k2) % slots
        table[slot, 0] = k1
        table[slot, 1] = k2
        table[slot, 2] = k3
        scalars[_MEMO] += 1
    return False
