"""The backward of a training step as one CP-SAT model: the saved set of least peak, or
of least extra compute within a budget.

The partitioner runs the backward's calls in a fixed order (`torch_bound`: anchor k's
step, just after what it needs that has not run). Slot k is anchor k's step with what
runs just before it. For each forward storage x (views share their source's):

1. `s[x]`: x is saved; `m[x,k]`: x exists in the backward by slot k (saved, or computed
   again at or before it), never undone. A backward read of x at slot k needs m[x,k]; a
   storage of a call that may not run again exists only saved; x computed again needs
   each storage its call reads to exist by then.
2. `v[x,k]`: x is read at slot k or after: by a backward call, or by a call computed
   again at slot k or after (the first slot where that call's storage exists).
3. Anchor k's step holds what `torch_bound` fixes there (the backward's own storages,
   the step's base, the anchor's scratch) and every x with m[x,k] that the anchor reads
   or that is read after slot k.
4. Where x is first computed again in slot k, that step holds the backward's storages
   carried into slot k, x's call's outputs and scratch, every storage x's call reads,
   every y that existed before slot k and is read at slot k or after, and every y that
   an earlier call of slot k (in the joint graph's order) made and that is read later.
5. `peak` is at least every step of 3 and 4; the model minimises it.
6. With a budget: `peak` within it, the model minimises the FLOPs of the forward's
   calls its outputs need (so the forward runs them) that the backward computes again.

Every partition gives values (its saved set, and the slot where each storage it computes
again first exists) that meet every constraint with no more bytes at any step than the
partition holds there, so the least `peak`, or CP-SAT's proven bound on it when the work
runs out, is a lower bound on the backward's peak of every saved set, and the least of
6 one on the extra compute of every saved set within the budget; the saved set of the
model's best answer is a candidate to judge for real (`torch_search`). Work is CP-SAT's
deterministic time on the running budget (`optplan.budget`).
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from ortools.sat.python import cp_model  # type: ignore[import-untyped, import-not-found, unused-ignore]
from torch import fx

from optplan.budget import Budget
from optplan.integrations.torch_bound import Storage, Timeline
from optplan.integrations.torch_graph import node_cost
from optplan.integrations.torch_workspace import footprints

# How many times a no-overlap-2D part's deterministic second this model's takes.
# (BERT's step: 7.2 deterministic seconds in 16 s of two cores; a unit is about a
# second of one core.)
SCALE = 0.2

# The objective's weight of a byte of peak over one storage saved (more than any count).
TIE = 1 << 16

# The compute bound of a budget no saved set meets.
INFEASIBLE = -1

# Forward storages times backward steps the model is built for, per unit of its work:
# its variables grow with both, and building it is not counted in work. BERT's step
# (50 x 57) proves its least peak in 7 deterministic seconds; the Llama-style step
# (110 x 154) finds no saved set in 30 units and its first in about 600.
CELLS_PER_UNIT = 500


@dataclass(frozen=True, slots=True)
class Exact:
    """`bound`: no saved set's backward holds less at its peak; `saved`: the saved set of
    the best answer found (None: none); `optimal`: the bound is that answer's peak."""

    bound: int
    saved: tuple[fx.Node, ...] | None
    optimal: bool
    work: float = 0.0


@dataclass
class Facts:
    """What the model reads off the timeline: slots, reads, calls and their bytes."""

    line: Timeline
    may_run_again: Callable[[fx.Node], bool]
    base_bytes: int

    def __post_init__(self) -> None:
        line = self.line
        steps = [a for a in line.runs.anchors if a in line.reads]
        index = {a: k for k, a in enumerate(line.runs.anchors)}
        self.anchors = steps
        self.at = [index[a] for a in steps]  # anchor k's place among the timeline's
        self.slot_of = _slots(self.at, len(line.runs.anchors))
        self.K = len(steps)
        self.xs = sorted(line.forward_made)
        self.order = {n: i for i, n in enumerate(line.graph.nodes)}
        self.read_at: dict[Storage, set[int]] = {x: set() for x in self.xs}
        self.read_times: dict[Storage, set[int]] = {x: set() for x in self.xs}
        for node, reads in line.reads.items():
            t = line.runs.time[node]
            for x in reads & line.forward_made:
                self.read_times[x].add(t)
                if self.slot_of[t] < self.K:
                    self.read_at[x].add(self.slot_of[t])
        self.maker = {x: line.storages.node(x) for x in self.xs}
        # The bytes a storage adds where it is held: none for the caller's outputs.
        self.size = {x: 0 if x in line.kept else line.storages.size[x] for x in self.xs}
        self.inputs = {x: self._inputs(x) for x in self.xs}
        self.by_order = sorted(self.xs, key=lambda x: (self.order[self.maker[x]], x[1]))
        self.costs = {n: node_cost(n) for n in {self.maker[x] for x in self.xs}}
        self.needed = _needed(line)
        scratch = footprints([*steps, *{self.maker[x] for x in self.xs}])
        self.scratch = {
            n: max(b - line.storages.bytes_of(set(line.storages.of[n.name])), 0)
            for n, b in scratch.items()
        }
        self.base = self.base_bytes + line.throughout
        # Above every step's bytes: everything the backward and its scratch could hold.
        self.most = line.storages.bytes_of(set(line.storages.size)) + sum(self.scratch.values())

    def _inputs(self, x: Storage) -> list[Storage]:
        node = self.maker[x]
        of = self.line.storages.of
        found = {s for a in node.all_input_nodes for s in of[a.name]}
        return sorted(found & self.line.forward_made)

    def again(self, x: Storage) -> bool:
        return self.may_run_again(self.maker[x])

    def fixed(self, k: int) -> int:
        """Anchor k's held bytes without choice: the backward's storages and scratch."""
        held, _, _ = self.line.held_at(self.at[k], self.anchors[k])
        return self.line.storages.bytes_of(held) + self.scratch.get(self.anchors[k], 0)

    def carried(self, k: int) -> int:
        """The backward's storages held through slot k: made by the slots before it, read
        at anchor k's step or after it (or returned)."""
        line = self.line
        at = self.at[k]
        made_by = self.at[k - 1] if k else -1
        return line.storages.bytes_of(
            {
                s
                for s in line.storages.size
                if s not in line.forward_made
                and not line.scalar(s)
                and line.made_at.get(s, -1) <= made_by
                and (line.last.get(s, -1) >= at or s in line.returned)
            }
        )


def _needed(line: Timeline) -> set[fx.Node]:
    """The forward's calls its outputs need: the forward runs them whatever is saved."""
    outputs = list(line.graph.find_nodes(op="output"))
    todo = [a for a in outputs[0].args[0][: line.num_fwd_outputs] if isinstance(a, fx.Node)]
    found: set[fx.Node] = set()
    while todo:
        node = todo.pop()
        if node not in found and node in line.forward:
            found.add(node)
            todo.extend(node.all_input_nodes)
    return found


def _slots(steps: list[int], end: int) -> dict[int, int]:
    """Each anchor index to the slot of the first anchor with a step at or after it."""
    slot_of, j = {}, 0
    for t in range(end + 1):
        while j < len(steps) and steps[j] < t:
            j += 1
        slot_of[t] = j
    return slot_of


@dataclass
class _Model:
    """Steps 1 to 5 as CP-SAT variables and constraints; with a `budget`, step 6."""

    facts: Facts
    budget: int | None = None

    def __post_init__(self) -> None:
        f, model = self.facts, cp_model.CpModel()
        self.model = model
        self.s = {x: model.new_bool_var(f"s{i}") for i, x in enumerate(f.xs)}
        self.m = {x: [model.new_bool_var("") for _ in range(f.K)] for x in f.xs}
        self.v = {x: [model.new_bool_var("") for _ in range(f.K + 1)] for x in f.xs}
        self.total = sum(f.size.values())
        self.peak = model.new_int_var(0, f.base + self.total + f.most, "peak")
        self.users: dict[Storage, list[Storage]] = {x: [] for x in f.xs}
        for x in f.xs:
            if f.again(x):
                for y in f.inputs[x]:
                    self.users[y].append(x)
        for x in f.xs:
            self._exists(x)
            self._read_after(x)
        for k in range(f.K):
            self._anchor(k)
            self._computed_again(k)
        for x in f.xs:
            if x in f.line.kept:
                model.add(self.s[x] == 1)  # the caller's: saved for nothing
        if self.budget is None:
            # The least peak; among equal peaks, the fewest storages saved.
            model.minimize(self.peak * TIE + sum(self.s.values()))
        else:
            model.add(self.peak <= self.budget)
            model.minimize(self._extra())

    def _extra(self) -> Any:
        """Step 6: the FLOPs of the calls the forward must run (those the outputs need)
        that the backward computes again (a storage of theirs exists there unsaved)."""
        f, model, terms = self.facts, self.model, []
        for maker, group in itertools.groupby(f.by_order, key=f.maker.__getitem__):
            items = list(group)
            if maker not in f.needed or not f.costs[maker]:
                continue
            again = model.new_bool_var("")
            for x in items:
                model.add_bool_or([again, self.m[x][f.K - 1].Not(), self.s[x]])
            terms.append(f.costs[maker] * again)
        return sum(terms)

    def hint(self, saved: set[Storage]) -> None:
        """Start CP-SAT from `saved`: each storage not saved first exists at the first
        slot that needs it (directly, or through a call computed again from it)."""
        f, first = self.facts, dict[Storage, int]()
        for x in reversed(f.by_order):
            needs = [*f.read_at[x], *(first[z] for z in self.users[x] if z not in saved)]
            first[x] = -1 if x in saved else min(needs, default=f.K)
        for x in f.xs:
            self.model.add_hint(self.s[x], x in saved)
            for k in range(f.K):
                self.model.add_hint(self.m[x][k], first[x] <= k)
            last = max(f.read_at[x], default=-1)
            later = max((first[z] for z in self.users[x] if z not in saved), default=-1)
            for k in range(f.K + 1):
                self.model.add_hint(self.v[x][k], k <= last or (k <= later < f.K))

    def before(self, x: Storage, k: int) -> Any:
        """x exists before slot k (saved, at slot 0)."""
        return self.m[x][k - 1] if k else self.s[x]

    def _exists(self, x: Storage) -> None:
        """Step 1."""
        f, model, m = self.facts, self.model, self.m[x]
        for k in range(f.K):
            model.add_implication(self.before(x, k), m[k])
            if x in f.line.kept:
                model.add(m[k] == 1)  # the caller's output: held throughout, counted there
        for k in f.read_at[x]:
            model.add(m[k] == 1)
        if not f.again(x):
            model.add_implication(m[f.K - 1], self.s[x])
            return
        for y in f.inputs[x]:
            for k in range(f.K):
                model.add_bool_or([m[k].Not(), self.s[x], self.m[y][k]])

    def _read_after(self, x: Storage) -> None:
        """Step 2."""
        f, model, v = self.facts, self.model, self.v[x]
        last = max(f.read_at[x], default=-1)
        model.add(v[f.K] == 0)
        for k in range(f.K):
            model.add_implication(v[k + 1], v[k])
            if k <= last:
                model.add(v[k] == 1)
            for z in self.users[x]:
                model.add_bool_or([v[k], self.m[z][f.K - 1].Not(), self.before(z, k)])

    def _anchor(self, k: int) -> None:
        """Step 3."""
        f, model = self.facts, self.model
        reads = f.line.reads[f.anchors[k]] & f.line.forward_made
        terms, size = [], f.size
        for x in f.xs:
            if x in reads:
                continue
            live = model.new_bool_var("")
            model.add_bool_or([live, self.m[x][k].Not(), self.v[x][k + 1].Not()])
            terms.append(size[x] * live)
        const = f.base + f.fixed(k) + sum(size[x] for x in reads)
        model.add(self.peak >= const + sum(terms))

    def _computed_again(self, k: int) -> None:
        """Step 4: the bytes held into slot k, and those the slot's earlier calls
        (in the joint graph's order, as the partitioner inserts them) made and leave."""
        f, model, size = self.facts, self.model, self.facts.size
        carry, early = self._held_in_slot(k)
        held = model.new_int_var(0, self.total, "")
        model.add(held == sum(size[y] * carry[y] for y in f.xs))
        carried = f.base + f.carried(k)
        prefix: Any = 0  # what the calls before this one in the slot made and leave
        for maker, group in itertools.groupby(f.by_order, key=f.maker.__getitem__):
            items = list(group)
            for x in (x for x in items if f.again(x) and k <= min(f.read_at[x], default=f.K)):
                first = model.new_bool_var("")
                model.add_bool_or([first, self.m[x][k].Not(), self.before(x, k)])
                own = f.line.storages.bytes_of(set(f.line.storages.of[maker.name]))
                own += f.scratch.get(maker, 0)
                # An input is held at the step once, however it came to be.
                inputs = sum(size[y] * (1 - carry[y] - early[y]) for y in f.inputs[x])
                step = carried + own + inputs + held + prefix
                model.add(self.peak >= step).only_enforce_if(first)
            if any(size[x] for x in items):
                total = model.new_int_var(0, self.total, "")
                model.add(total == prefix + sum(size[x] * early[x] for x in items))
                prefix = total

    def _held_in_slot(self, k: int) -> tuple[dict[Storage, Any], dict[Storage, Any]]:
        """For each y: held into slot k (existed before it, read in it after its calls
        computed again, or later), and first computed in slot k and read likewise."""
        f, model = self.facts, self.model
        index = f.at[k]
        carry, early = {}, {}
        for y in f.xs:
            late = any(t >= index for t in f.read_times[y])
            carry[y], early[y] = model.new_bool_var(""), model.new_bool_var("")
            after = [] if late else [self.v[y][k + 1].Not()]
            model.add_bool_or([carry[y], self.before(y, k).Not(), *after])
            model.add_bool_or([early[y], self.m[y][k].Not(), self.before(y, k), *after])
        return carry, early


def exact(
    facts: Facts,
    work: Budget,
    hint: tuple[fx.Node, ...] = (),
    budget: int | None = None,
) -> Exact:
    """The module's model of a timeline's `facts` (built once for both solves of one
    step), solved within `work` (CP-SAT's
    deterministic time, two workers taking turns: the same answer on any machine),
    starting from the saved set `hint`. Without `budget` it minimises the peak (`bound`
    in bytes); with one, the extra compute within it (`bound` in FLOPs: no saved set
    whose backward's peak is within `budget` computes less again). A step larger than
    `CELLS_PER_UNIT` per unit of work is not modelled (no saved set, a bound of what is
    held throughout)."""
    if facts.K == 0 or len(facts.xs) * facts.K > CELLS_PER_UNIT * (work.work or 0):
        return Exact(facts.base if budget is None else 0, None, False)
    built = _Model(facts, budget)
    built.hint({s for n in hint for s in facts.line.storages.of.get(n.name, ())})
    solver = cp_model.CpSolver()
    clock = work.clock()
    clock.limit(solver.parameters, clock.left() / SCALE, workers=2, seed=0, interleave=True)
    status = solver.solve(built.model)
    clock.solved(solver, SCALE)
    bound = math.ceil((solver.best_objective_bound - TIE + 1) / TIE - 1e-9)
    if budget is not None:
        bound = math.ceil(solver.best_objective_bound - 1e-6)
        if status == cp_model.INFEASIBLE:
            return Exact(INFEASIBLE, None, True, clock.now())
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Exact(bound, None, False, clock.now())
    saved = [x for x in facts.xs if solver.value(built.s[x])]
    return Exact(bound, _nodes(facts, saved), status == cp_model.OPTIMAL, clock.now())


def _nodes(facts: Facts, saved: list[Storage]) -> tuple[fx.Node, ...]:
    """The forward nodes that hold `saved`: a call's tensor, or the item of its tuple;
    and the inputs and parameters (the caller's: they cost nothing)."""
    graph = facts.line.graph
    found = [n for n in graph.find_nodes(op="placeholder") if n in facts.line.forward]
    for x in saved:
        maker = facts.maker[x]
        if isinstance(maker.meta.get("val"), torch.Tensor):
            found.append(maker)
            continue
        items = [u for u in maker.users if u.target is operator.getitem and u.args[1] == x[1]]
        found.extend(items[:1])
    return tuple(found)
