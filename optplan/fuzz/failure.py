"""What a fuzz judge reports: the property a plan violates."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Failure:
    """A violated property: its name (`overlap`, `beaten-optimum`, ...) and one line."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"
