"""Hypothesis strategies for optplan's inputs, for property tests of any memory planner.

- `optplan.strategies.problems`: allocation problems (sizes, lifetimes of several
  intervals, alignments, aliases at residues, pins, capacities), valid by construction.
- `optplan.strategies.programs`: random well-typed Relax programs built from IR nodes.
- `optplan.strategies.passes`: programs rich in what the memory passes care about, and an
  independent judge of kills.
- `optplan.strategies.relax`: high-level Relax programs that TVM's parser and passes accept.

Hypothesis is an optional dependency (`pip install optplan[fuzz]`); importing this
package without it raises ImportError naming the extra.

    >>> from hypothesis import given
    >>> from optplan.strategies import problems
    >>> @given(problems(residues=True, capacities=True))
    ... def test_my_planner(problem): ...
"""

from __future__ import annotations

try:
    import hypothesis  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("optplan.strategies needs hypothesis: pip install 'optplan[fuzz]'") from error

from optplan.strategies.problems import (
    ALIGNMENTS,
    ODD_ALIGNMENTS,
    awkward_problems,
    buffers,
    fuzz_problems,
    lifetimes,
    problems,
    roomy_capacity,
    roomy_offsets,
    tiny_awkward_problems,
)

__all__ = [
    "ALIGNMENTS",
    "ODD_ALIGNMENTS",
    "awkward_problems",
    "buffers",
    "fuzz_problems",
    "lifetimes",
    "problems",
    "roomy_capacity",
    "roomy_offsets",
    "tiny_awkward_problems",
]
