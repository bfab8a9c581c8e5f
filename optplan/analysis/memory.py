"""Where every value of a function lives: the Problem to plan, and when bytes are freed.

`optplan.analysis.liveness.build_memory` builds it; the executor, the kill and in-place
passes and the lowering read it by field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optplan.problem import Problem

Buffers = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    """A value's bytes: those of buffer `buffer` of the Problem, from its first byte."""

    buffer: str


@dataclass(frozen=True, slots=True)
class Releases:
    """The buffers whose bytes are dead at one binding, by the moment they die.

    - `after`: once the binding has run (a binding that is not an If);
    - `then_entry` / `else_entry`: for an If, on entering that branch (live before the If,
      not used on that path);
    - `then_exit` / `else_exit`: for an If, once that branch has run and its value has
      been copied into the If's own buffer (the branch's value and whatever the branch
      last read).
    """

    after: Buffers = ()
    then_entry: Buffers = ()
    else_entry: Buffers = ()
    then_exit: Buffers = ()
    else_exit: Buffers = ()

    def entry(self, then: bool) -> Buffers:
        """Dead on entering the branch taken."""
        return self.then_entry if then else self.else_entry

    def exit(self, then: bool) -> Buffers:
        """Dead once the branch taken has run and its value is the If's."""
        return self.then_exit if then else self.else_exit


NO_RELEASES = Releases()


@dataclass(frozen=True, slots=True)
class MemoryFacts:
    """The memory facts of one function, for planners (`problem`) and the executor.

    - `placements[var]`: where a planned tensor value lives; a var whose value is a tuple
      produced by one call (split, a multi-output kernel) maps to a tuple of Placements,
      one per field. Views (reshape, tuple items, var-to-var bindings) map into their
      source's buffer. Values not listed (parameters, constants, unplanned function
      outputs, tuples built from other values) get fresh arrays of their own.
    - `releases[var]`: the buffers dead at the binding of `var` (`Releases`); a var not
      listed frees nothing.
    - `points[var]`: the program point of each binding (for an If, its test point).
    """

    problem: Problem
    placements: dict[str, object] = field(default_factory=dict)
    releases: dict[str, Releases] = field(default_factory=dict)
    points: dict[str, int] = field(default_factory=dict)

    def released(self, var: str) -> Releases:
        """The buffers dead at the binding of `var`."""
        return self.releases.get(var, NO_RELEASES)
