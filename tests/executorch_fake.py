"""A stand-in for ExecuTorch's TensorSpec, with only what a planning algorithm reads: the
ExecuTorch tests hand lists of these to `optplan.executorch.algorithm(...)` directly."""

from __future__ import annotations


class FakeSpec:
    """What ExecuTorch hands an algorithm: bytes, an inclusive lifetime, a pinned mem_id
    or None, and for a storage-backed spec its base and byte offset in it."""

    def __init__(self, nbytes: int, lifetime: list[int], mem_id: int | None) -> None:
        self.nbytes, self.lifetime, self.mem_id = nbytes, lifetime, mem_id
        self.allocated_memory = nbytes
        self.storage_base: FakeSpec | None = None
        self.storage_base_offset = 0

    def realign(self, alignment: int) -> int:
        self.allocated_memory = -(-self.nbytes // alignment) * alignment
        return self.allocated_memory
