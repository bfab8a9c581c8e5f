"""A `Graph` as flat NumPy tables, derived once and handed to the searches that run on it.

Sets of ops are bit sets: `words` 64-bit words per set, op v at bit v % 64 of word
v // 64. What the beam search, the min-cut bounds and the ancestor sets read:

- `pred_mask[v]` / `succ_mask[v]`: v's predecessors / successors as bit sets; the
  lists `pred_ptr`/`pred_idx` and `succ_ptr`/`succ_idx` (CSR) hold the same edges.
- `made[v]`: bytes op v makes; `sizes[b]`, `live_in[b]`, `live_out[b]` and `reader_mask[b]` (the ops
  that read buffer b) for every buffer; `creates_*` and `reads_*` (CSR): the buffers
  each op makes and reads.
- `base_bytes` as in the graph; `start_held` / `end_held`: bytes held before the first step (`base_bytes` and what is
  live in) and after the last (`base_bytes` and what is live out).
- `zobrist[v]`: a fixed random word per op; the hash of a set is the XOR of its ops'.

Built in O(ops + edges + buffers x words): nothing here grows with the square of the
op count except the bit sets of the ancestor closure, which `ancestor_masks` builds on
demand in O(edges x words).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from optplan.schedule.graph import Graph


@dataclass(frozen=True, slots=True, eq=False)
class Tables:
    """The flat form of one `Graph` (module docstring)."""

    ops: int
    words: int
    pred_mask: np.ndarray
    succ_mask: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    made: np.ndarray
    sizes: np.ndarray
    live_in: np.ndarray
    live_out: np.ndarray
    reader_mask: np.ndarray
    creates_ptr: np.ndarray
    creates_idx: np.ndarray
    reads_ptr: np.ndarray
    reads_idx: np.ndarray
    base_bytes: int
    start_held: int
    end_held: int
    zobrist: np.ndarray


def tables(graph: Graph) -> Tables:
    """The tables of `graph`."""
    n = graph.ops
    words = max(1, (n + 63) // 64)
    preds = [sorted(set(p)) for p in graph.preds]
    succs: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(preds):
        for u in ps:
            succs[u].append(v)
    readers = graph.readers()
    sizes, live_in, live_out = buffer_arrays(graph)
    made = np.array([sum(graph.sizes[b] for b in bufs) for bufs in graph.creates], dtype=np.int64)
    created = {b for bufs in graph.creates for b in bufs} | set(graph.live_in)
    out_bytes = sum(graph.sizes[b] for b in graph.live_out if b in created)
    rng = np.random.default_rng(0x5EED)
    return Tables(
        ops=n,
        words=words,
        pred_mask=_masks(preds, words),
        succ_mask=_masks(succs, words),
        pred_ptr=_ptr(preds),
        pred_idx=_idx(preds),
        succ_ptr=_ptr(succs),
        succ_idx=_idx(succs),
        made=made,
        sizes=sizes,
        live_in=live_in,
        live_out=live_out,
        reader_mask=_masks([list(r) for r in readers], words),
        creates_ptr=_ptr(graph.creates),
        creates_idx=_idx(graph.creates),
        reads_ptr=_ptr(graph.reads),
        reads_idx=_idx(graph.reads),
        base_bytes=graph.base_bytes,
        start_held=graph.base_bytes + int(sizes[live_in].sum()),
        end_held=graph.base_bytes + out_bytes,
        zobrist=rng.integers(1, 2**63, size=max(n, 1), dtype=np.int64).astype(np.uint64),
    )


def ancestor_masks(t: Tables) -> np.ndarray:
    """For every op, its ancestors as a bit set (an `ops` x `words` array), in one pass
    in topological order: O(edges x words) word operations, no Python sets."""
    out = np.zeros((t.ops, t.words), dtype=np.uint64)
    for v in topological(t):
        for u in t.pred_idx[t.pred_ptr[v] : t.pred_ptr[v + 1]]:
            out[v] |= out[u]
            out[v, u >> 6] |= np.uint64(1) << np.uint64(u & 63)
    return out


def descendant_masks(t: Tables) -> np.ndarray:
    """For every op, its descendants as a bit set (as `ancestor_masks`, reversed)."""
    out = np.zeros((t.ops, t.words), dtype=np.uint64)
    for v in reversed(topological(t)):
        for w in t.succ_idx[t.succ_ptr[v] : t.succ_ptr[v + 1]]:
            out[v] |= out[w]
            out[v, w >> 6] |= np.uint64(1) << np.uint64(w & 63)
    return out


def topological(t: Tables) -> list[int]:
    """A topological order of the ops (Kahn's, earliest numbered first)."""
    waiting = np.diff(t.pred_ptr).tolist()
    ready = [v for v in range(t.ops) if waiting[v] == 0]
    order: list[int] = []
    while ready:
        v = ready.pop()
        order.append(v)
        for w in t.succ_idx[t.succ_ptr[v] : t.succ_ptr[v + 1]].tolist():
            waiting[w] -= 1
            if waiting[w] == 0:
                ready.append(w)
    return order


def _masks(rows: list[list[int]] | tuple[tuple[int, ...], ...], words: int) -> np.ndarray:
    out = np.zeros((len(rows), words), dtype=np.uint64)
    for i, row in enumerate(rows):
        for v in row:
            out[i, v >> 6] |= np.uint64(1) << np.uint64(v & 63)
    return out


def buffer_arrays(graph: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every buffer's size, whether it is live in, and whether it is live out."""
    sizes = np.array(graph.sizes, dtype=np.int64)
    live_in = np.zeros(len(graph.sizes), dtype=np.bool_)
    live_in[list(graph.live_in)] = True
    live_out = np.zeros(len(graph.sizes), dtype=np.bool_)
    live_out[list(graph.live_out)] = True
    return sizes, live_in, live_out


def csr(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """`rows` as one index array and the offset where each row starts (and one past the
    last row's end)."""
    return _ptr(rows), _idx(rows)


def _ptr(rows: Sequence[Sequence[int]]) -> np.ndarray:
    return np.concatenate(([0], np.cumsum([len(r) for r in rows], dtype=np.int64))).astype(np.int64)


def _idx(rows: Sequence[Sequence[int]]) -> np.ndarray:
    return np.array([x for r in rows for x in r], dtype=np.int64)


def unpack(masks: np.ndarray, n: int) -> np.ndarray:
    """Bit sets (rows of uint64 words) as a bool matrix of `n` columns."""
    if masks.shape[0] == 0:
        return np.zeros((0, n), dtype=bool)
    as_bytes = masks.astype("<u8").view(np.uint8).reshape(masks.shape[0], -1)
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :n].astype(bool)
