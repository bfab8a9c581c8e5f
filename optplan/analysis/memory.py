"""Where every value of a function lives: the Problem to plan, and when bytes are freed.

(The builder, `build_memory`, is added with the liveness analysis.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optplan.problem import Problem


@dataclass(frozen=True, slots=True)
class Placement:
    """A value's bytes: those of buffer `buffer` of the Problem, from its first byte."""

    buffer: str


@dataclass(frozen=True, slots=True)
class Memory:
    """The memory facts of one function, for planners (`problem`) and the executor.

    - `placements[var]`: where a planned tensor value lives; a var whose value is a tuple
      produced by one call (split, a multi-output kernel) maps to a tuple of Placements,
      one per field. Views (reshape, tuple items, var-to-var bindings) map into their
      source's buffer. Values not listed (parameters, constants, unplanned function
      outputs, tuples built from other values) get fresh arrays of their own.
    - `release_after[var]`: buffers whose bytes are dead once the binding of `var` has run.
    - `release_then[var]` / `release_else[var]`: for a var bound to an If, buffers dead on
      entering that branch (live before the If, not used on that path).
    - `release_then_exit[var]` / `release_else_exit[var]`: buffers dead once that branch
      has run and its value has been copied into the If's own buffer (the branch's value
      and whatever the branch last read).
    - `points[var]`: the program point of each binding (for an If, its test point).
    """

    problem: Problem
    placements: dict[str, object] = field(default_factory=dict)
    release_after: dict[str, tuple[str, ...]] = field(default_factory=dict)
    release_then: dict[str, tuple[str, ...]] = field(default_factory=dict)
    release_else: dict[str, tuple[str, ...]] = field(default_factory=dict)
    release_then_exit: dict[str, tuple[str, ...]] = field(default_factory=dict)
    release_else_exit: dict[str, tuple[str, ...]] = field(default_factory=dict)
    points: dict[str, int] = field(default_factory=dict)
