"""The training programs of `benchmarks/graphs/training.py` under budgets: filled in by
the program path (`passes.recompute`)."""

from __future__ import annotations


def program_rows(shares: list[float], limit: float) -> list[dict[str, object]]:
    return []
