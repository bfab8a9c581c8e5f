"""Multi-branch and irregular networks, written branch after branch as a person would:
Inception-style cells, a NASNet-style cell, and randomly wired networks."""

from __future__ import annotations

import random

from optplan.ir import Program

from .builder import Builder


def inception(cells: int = 2, channels: int = 8, size: int = 16) -> Program:
    """Cells of four branches (1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3 with a wide middle;
    pool -> 1x1) joined by a concat, then a 1x1 back to `channels`."""
    b = Builder()
    x = b.input("x", (1, channels, size, size))
    for _ in range(cells):
        one = b.relu(b.conv(x, channels, 1))
        three = b.relu(b.conv(b.relu(b.conv(x, 2 * channels, 1)), channels, 3))
        wide = b.relu(b.conv(x, 4 * channels, 1))
        five = b.relu(b.conv(b.relu(b.conv(wide, 4 * channels, 3)), channels, 3))
        pooled = b.relu(b.conv(b.pool(x), channels, 1))
        x = b.relu(b.conv(b.concat([one, three, five, pooled]), channels, 1))
    return b.program(x)


def nasnet(channels: int = 8, size: int = 16) -> Program:
    """A NASNet-A-style normal cell: five blocks each add two ops over the two previous
    hidden states or earlier blocks; the blocks no other block reads are concatenated."""
    b = Builder()
    prev = b.input("h_prev", (1, channels, size, size))
    cur = b.input("h_cur", (1, channels, size, size))
    prev = b.relu(b.conv(prev, 2 * channels, 1))
    cur = b.relu(b.conv(cur, 2 * channels, 1))

    def sep(x: str, kernel: int) -> str:
        return b.relu(b.conv(b.relu(b.conv(x, 4 * channels, kernel)), 2 * channels, 1))

    blocks = [
        b.add(sep(cur, 3), cur),
        b.add(sep(prev, 3), sep(cur, 5)),
        b.add(b.pool(cur), prev),
        b.add(b.pool(prev), b.pool(prev)),
        b.add(sep(prev, 5), sep(prev, 3)),
    ]
    return b.program(b.relu(b.conv(b.concat(blocks), channels, 1)))


def randwire(
    nodes: int = 24, p: float = 0.25, seed: int = 0, channels: int = 8, size: int = 16
) -> Program:
    """A randomly wired network (Erdos-Renyi edges between ordered nodes): each node sums
    its inputs and runs relu -> 3x3 conv with its own width; nodes without successors are
    summed into the output."""
    rng = random.Random(seed)
    b = Builder()
    x = b.input("x", (1, channels, size, size))
    preds = [[i for i in range(j) if rng.random() < p] for j in range(nodes)]
    widths = [rng.choice((channels, 2 * channels, 4 * channels)) for _ in range(nodes)]
    outs: list[str] = []
    for j in range(nodes):
        inputs = [outs[i] for i in preds[j]] or [x]
        total = inputs[0]
        for other in inputs[1:]:
            total = b.add(total, other)
        wide = b.conv(b.relu(total), widths[j], 3)
        outs.append(b.relu(b.conv(wide, channels, 1)))
    sinks = [outs[j] for j in range(nodes) if not any(j in preds[k] for k in range(nodes))]
    result = sinks[0]
    for other in sinks[1:]:
        result = b.add(result, other)
    return b.program(result)
