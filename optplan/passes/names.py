"""Fresh variable names for rewrites that add bindings."""

from __future__ import annotations


def fresh_name(name: str, taken: set[str], separator: str = "") -> str:
    """`name`, or `name` + separator + the first number that makes it new; it is then
    added to `taken`."""
    candidate, suffix = name, 1
    while candidate in taken:
        candidate, suffix = f"{name}{separator}{suffix}", suffix + 1
    taken.add(candidate)
    return candidate
