"""The memories a problem's buffers may live in: capacity, alignment, cost per byte.

A microcontroller has a small fast memory beside a large slow one; a problem names them
in a tuple, fast to slow by convention (the order breaks ties and is the order reports
use). Today's problem is the case of one unbounded memory, `MAIN`.

    memory  capacity   alignment  cost
    tcm     256 KiB    16         1      bytes accessed here cost 1 a byte
    psram   None       16         10     unbounded, ten times as dear

`cost` is what one byte accessed in the memory costs (an integer, so that traffic is an
exact sum): the traffic of a plan is the bytes written and read in each memory times its
cost, a copy reading its bytes in one memory and writing them in another
(`optplan.problem.plan.traffic`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Memory:
    """A memory: `capacity` in bytes (None: unbounded), the `alignment` every offset in it
    keeps (besides the buffer's own), and the `cost` of one byte accessed in it."""

    name: str
    capacity: int | None = None
    alignment: int = 1
    cost: int = 1

    def __str__(self) -> str:
        size = "unbounded" if self.capacity is None else f"{self.capacity} bytes"
        return f"{self.name} ({size}, alignment {self.alignment}, cost {self.cost})"


# The one memory of a problem that names none.
MAIN = Memory("main")


def one_arena(capacity: int | None) -> tuple[Memory, ...]:
    """The memories of a problem of one arena of at most `capacity` bytes (None:
    unbounded): `MAIN` with that capacity, the one way to bound a plain problem."""
    return (Memory(MAIN.name, capacity),)


def check_memories(memories: tuple[Memory, ...]) -> None:
    """Raise ValueError naming the first malformed memory."""
    if not memories:
        raise ValueError("a problem needs at least one memory")
    seen: set[str] = set()
    for memory in memories:
        if not memory.name:
            raise ValueError("a memory has an empty name")
        if memory.name in seen:
            raise ValueError(f"memory {memory.name!r} appears twice")
        seen.add(memory.name)
        if memory.capacity is not None and memory.capacity < 0:
            raise ValueError(f"memory {memory.name!r} has negative capacity {memory.capacity}")
        if memory.alignment < 1:
            raise ValueError(f"memory {memory.name!r} has alignment {memory.alignment} < 1")
        if memory.cost < 0:
            raise ValueError(f"memory {memory.name!r} has negative cost {memory.cost}")
