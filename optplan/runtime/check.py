"""Check a planned program from anywhere: extract its plan, validate it, replay it.

A planned program (TVM's `*.4_planned.py` / `*.5_killed.py`, or `plan_memory`'s output)
says where every tensor lives: `R.memory.alloc_storage` makes storages and
`R.memory.alloc_tensor(storage, offset, ...)` carves tensors out of them. Steps:

1. Lifetimes: kills and unread names of memory are dropped first (`drop_unread_views`):
   neither touches a byte, so neither keeps a tensor alive. Then the liveness of the
   lowered program's runtime objects
   (`optplan.passes.objects`): a carved tensor is live from its `alloc_tensor` to its
   last use (a destination-passing kernel call writes it, later calls read it; views and
   var-to-var bindings share it; a tensor an If branch yields lives on as the If's
   value). Returned values are left out, as TVM leaves them out.
2. The arena: the storages that hold at least one planned tensor, laid end to end in the
   order they are allocated (alignment 1, so the arena is TVM's total of storage bytes);
   a storage made only for a returned value (LowerAllocTensor's) is not counted.
3. The Problem: one buffer per carved tensor, live as in step 1; the Plan: its offset is
   its storage's base plus its `alloc_tensor` offset.
4. Validate with the independent judge (`optplan.problem.plan.validate`), plus two checks the
   arena view cannot see: a tensor must end inside its own storage, at an offset that is
   a multiple of its element type's alignment.
5. Replay (`optplan.runtime.lowered.run_lowered`): the program with `kill_after_last_use`'s
   kills, run once with every tensor in fresh memory and once in the shared, poisoned
   storages; any byte that differs is reported. Kills already in the program are
   replaced first: TVM's `kill_tensor` drops one reference, not the bytes (ResNet-18's
   last kill frees a tensor whose reshape is still read), while the replay poisons bytes
   at a kill, which is right only once every alias is dead.

`check_program(program)` is what `optplan check PROGRAM` calls on the file's program: it
exits 0 when the report is `valid`, 1 otherwise.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from optplan.analysis.memory import Placement
from optplan.analysis.types import infer_types, typed_program
from optplan.errors import InputError
from optplan.ir import (
    Binding,
    Call,
    Function,
    If,
    Literal,
    Program,
    SeqExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    free_vars,
    iter_bindings,
)
from optplan.ops import inplace_outputs, lookup
from optplan.passes.kill import kill_after_last_use, strip_kills
from optplan.passes.objects import Objects, function_objects, storage_bytes
from optplan.problem import Alias, Buffer, Interval, Problem, lower_bound, merge_intervals
from optplan.problem.plan import Plan, Status, validate
from optplan.runtime.lowered import run_lowered
from optplan.runtime.replay import compare, make_inputs

KILLS = ("memory.kill_tensor", "memory.kill_storage", "vm.kill_object")


@dataclass(frozen=True, slots=True)
class Carved:
    """A tensor carved from a storage: `size_bytes` at `offset` into `storage`."""

    name: str
    storage: str
    offset: int
    size_bytes: int
    alignment: int = 1


@dataclass(frozen=True, slots=True)
class CheckReport:
    """What `check_program` found. `valid` when no violation and the replay matched."""

    path: str
    arena_bytes: int
    storages: tuple[tuple[str, int], ...]
    tensors: int
    lower_bound_bytes: int
    violations: tuple[str, ...]
    replay: str | None

    @property
    def valid(self) -> bool:
        return not self.violations and self.replay is None

    def as_dict(self) -> dict[str, object]:
        """The report as plain JSON-ready values (for `optplan check --json`)."""
        return {
            "path": self.path,
            "valid": self.valid,
            "arena_bytes": self.arena_bytes,
            "lower_bound_bytes": self.lower_bound_bytes,
            "storages": [{"name": name, "bytes": size} for name, size in self.storages],
            "tensors": self.tensors,
            "violations": list(self.violations),
            "replay": self.replay,
        }

    def summary(self) -> str:
        """One line per fact, ending with "valid" or "invalid" and the reasons."""
        lines = [
            (
                f"{self.path}: {len(self.storages)} storage{_s(len(self.storages))}, "
                f"{self.arena_bytes} bytes (lower bound {self.lower_bound_bytes}), "
                f"{self.tensors} planned tensor{_s(self.tensors)}"
            ),
            *(f"  storage {name!r}: {size} bytes" for name, size in self.storages),
            *(f"  {v}" for v in self.violations),
        ]
        if self.replay is not None:
            lines.append(f"  replay: {self.replay}")
        lines.append("valid" if self.valid else "invalid")
        return "\n".join(lines)


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def check_program(program: Program, *, path: str = "<program>", seed: int = 0) -> CheckReport:
    """Extract, validate and replay the plan of a planned program (steps 1-5)."""
    # Typed first: an unread tuple's annotation may be what types a metadata constant.
    typed = drop_unread_views(typed_program(program))
    problem, plan = extract_plan(typed)
    storages = _counted_storages(typed.main, problem)
    faults = [str(v) for v in validate(problem, plan)]
    faults += _overruns(typed.main)
    faults += _misaligned(typed.main)
    return CheckReport(
        path=path,
        arena_bytes=plan.arena,
        storages=tuple(storages.items()),
        tensors=len(problem.buffers),
        lower_bound_bytes=plan.lower_bound,
        violations=tuple(faults),
        replay=_replay(typed, seed),
    )


def extract_plan(program: Program) -> tuple[Problem, Plan]:
    """The Problem and Plan that a planned program's entry function encodes (steps 1-3)."""
    fn = typed_program(program).main
    objects = function_objects(fn)
    carved = carved_tensors(fn)
    live = _lifetimes(objects)
    buffers = tuple(
        Buffer(name, c.size_bytes, live[name], dtype=_dtype(fn, name))
        for name, c in carved.items()
        if name in live
    )
    unaliased = Problem(buffers)
    bases = _bases(_counted_storages(fn, unaliased))
    offsets = {b.id: bases[carved[b.id].storage] + carved[b.id].offset for b in buffers}
    problem = Problem(buffers, _yield_aliases(objects, offsets))
    bound = lower_bound(problem)
    arena = sum(size for size in _counted_storages(fn, problem).values())
    plan = Plan(offsets, arena, Status.FEASIBLE, "extracted", bound, bound=bound)
    return problem, plan


def drop_unread_views(program: Program) -> Program:
    """`program` without kills and without the bindings that only name memory already
    there (a tuple, a tuple item, a variable, a view op such as reshape) and that nothing
    reads, repeated until none is left. Neither kind touches a byte, so neither may keep
    a tensor alive: TVM's StaticPlanBlockMemory counts a tensor as used only where a
    kernel takes it, and gives away the bytes of one that only an unread tuple holds."""
    functions = []
    for fn in program.functions:
        fn = dataclasses.replace(fn, body=_drop_unread(fn.body, set(), kills=True))
        while (body := _drop_unread(fn.body, _names_read(fn.body))) != fn.body:
            fn = dataclasses.replace(fn, body=body)
        functions.append(fn)
    return dataclasses.replace(program, functions=tuple(functions))


def _names_read(seq: SeqExpr) -> set[str]:
    names = {var.name for var in free_vars(seq.body)}
    for binding in iter_bindings(seq):
        value = binding.value
        if isinstance(value, If):
            names |= {var.name for var in free_vars(value.then_branch.body)}
            names |= {var.name for var in free_vars(value.else_branch.body)}
        names |= {var.name for var in free_vars(value)}
    return names


def _drop_unread(seq: SeqExpr, read: set[str], *, kills: bool = False) -> SeqExpr:
    """`seq` without its unread views or, with `kills`, without its kills."""
    blocks = []
    for block in seq.blocks:
        kept = tuple(
            _drop_in_branches(b, read, kills)
            for b in block.bindings
            if not (_is_kill(b) if kills else _unread_view(b, read))
        )
        if kept or not block.bindings:
            outputs = tuple(v for v in block.outputs if v.name in {b.var.name for b in kept})
            blocks.append(dataclasses.replace(block, bindings=kept, outputs=outputs))
    return dataclasses.replace(seq, blocks=tuple(blocks))


def _drop_in_branches(binding: Binding, read: set[str], kills: bool) -> Binding:
    node = binding.value
    if not isinstance(node, If):
        return binding
    then_branch = _drop_unread(node.then_branch, read, kills=kills)
    else_branch = _drop_unread(node.else_branch, read, kills=kills)
    value = dataclasses.replace(node, then_branch=then_branch, else_branch=else_branch)
    return dataclasses.replace(binding, value=value)


def _is_kill(binding: Binding) -> bool:
    """TVM's kills: of a tensor, of a storage, and VM's kill of any object (a tuple)."""
    return isinstance(binding.value, Call) and binding.value.op in KILLS


def _unread_view(binding: Binding, read: set[str]) -> bool:
    value = binding.value
    if binding.var.name in read:
        return False
    if isinstance(value, (Var, Tuple, TupleGetItem)):
        return True
    if not isinstance(value, Call) or value.op == "memory.alloc_tensor":
        return False  # a carved tensor stays, read or not: it is part of the plan
    op = lookup(value.op)
    return op is not None and op.view and not inplace_outputs(value)


def _yielded(objects: Objects) -> dict[str, list[str]]:
    """For each If, the carved tensors its branches yield (its value on each path)."""
    yielded: dict[str, list[str]] = {}
    for binding in iter_bindings(objects.shadow.body):
        node = binding.value
        if not isinstance(node, If):
            continue
        for branch in (node.then_branch, node.else_branch):
            placed = objects.memory.placements.get(getattr(branch.body, "name", ""))
            if isinstance(placed, Placement):
                yielded.setdefault(binding.var.name, []).append(placed.buffer)
    return yielded


def _yield_aliases(objects: Objects, offsets: dict[str, int]) -> tuple[Alias, ...]:
    """The tensors one If yields on its two paths are one value after it: tied as aliases
    at their offsets, so that they may share bytes (they never meet on one path)."""
    aliases = []
    for names in _yielded(objects).values():
        placed = sorted({n for n in names if n in offsets}, key=lambda n: (offsets[n], n))
        for other in placed[1:]:
            aliases.append(Alias(placed[0], other, offsets[other] - offsets[placed[0]]))
    return tuple(aliases)


def _lifetimes(objects: Objects) -> dict[str, tuple[Interval, ...]]:
    """Each object's live intervals; a tensor that a branch yields lives on as the If's
    value, so it also takes the If's own intervals (the liveness copies at the yield,
    the lowered program hands the tensor over)."""
    live = {b.id: list(b.live) for b in objects.memory.problem.buffers}
    for name, buffers in _yielded(objects).items():
        for buffer in buffers:
            if buffer in live and name in live:
                live[buffer] += live[name]
    return {name: merge_intervals(intervals) for name, intervals in live.items()}


def carved_tensors(fn: Function) -> dict[str, Carved]:
    """Every `alloc_tensor` of `fn`, by the variable it is bound to; InputError where one
    carves something that no `alloc_storage` of `fn` made, or at an offset that is not a
    plain integer."""
    storages = _storage_sizes(fn)
    carved = {}
    for binding in iter_bindings(fn.body):
        value = binding.value
        if not (isinstance(value, Call) and value.op == "memory.alloc_tensor"):
            continue
        storage, offset = value.args[0], value.args[1]
        if not (isinstance(storage, Var) and storage.name in storages):
            raise _located(
                f"{binding.var.name!r} is carved from no storage of {fn.name!r}", binding
            )
        if not (isinstance(offset, Literal) and isinstance(offset.value, int)):
            raise _located(f"the offset of {binding.var.name!r} is not an integer", binding)
        assert isinstance(binding.type, TensorType)
        carved[binding.var.name] = Carved(
            binding.var.name,
            storage.name,
            int(offset.value),
            binding.type.size_bytes,
            np.dtype(binding.type.dtype).alignment,
        )
    return carved


def _located(message: str, binding: Binding) -> InputError:
    loc = binding.loc
    if loc is None:
        return InputError(message)
    return InputError(message, file=loc.file, line=loc.line, col=loc.col)


def _storage_sizes(fn: Function) -> dict[str, int]:
    return {
        b.var.name: storage_bytes(b.value)
        for b in iter_bindings(fn.body)
        if isinstance(b.value, Call) and b.value.op == "memory.alloc_storage"
    }


def _counted_storages(fn: Function, problem: Problem) -> dict[str, int]:
    """Storages holding at least one planned tensor, in allocation order (step 2)."""
    planned = {b.id for b in problem.buffers}
    used = {c.storage for c in carved_tensors(fn).values() if c.name in planned}
    return {name: size for name, size in _storage_sizes(fn).items() if name in used}


def _bases(storages: dict[str, int]) -> dict[str, int]:
    bases, base = {}, 0
    for name, size in storages.items():
        bases[name] = base
        base += size
    return bases


def _dtype(fn: Function, name: str) -> str:
    for binding in iter_bindings(fn.body):
        if binding.var.name == name and isinstance(binding.type, TensorType):
            return binding.type.dtype
    return ""


def _overruns(fn: Function) -> list[str]:
    sizes = _storage_sizes(fn)
    return [
        f"tensor {c.name!r} at bytes [{c.offset}, {c.offset + c.size_bytes}) overruns storage "
        f"{c.storage!r} of {sizes[c.storage]} bytes"
        for c in carved_tensors(fn).values()
        if c.offset < 0 or c.offset + c.size_bytes > sizes.get(c.storage, 0)
    ]


def _misaligned(fn: Function) -> list[str]:
    """Tensors at an offset their element type cannot be read at (a float32 at byte 1)."""
    return [
        f"tensor {c.name!r} at offset {c.offset} of storage {c.storage!r} is not a multiple "
        f"of {c.alignment}, the alignment of its element type"
        for c in carved_tensors(fn).values()
        if c.offset % c.alignment
    ]


def _replay(program: Program, seed: int) -> str | None:
    """Step 5: None when the shared run matches the fresh one byte for byte."""
    program = infer_types(kill_after_last_use(strip_kills(program)))
    inputs = make_inputs(program, seed)
    fresh = run_lowered(program, inputs, shared=False)
    shared = run_lowered(program, inputs, shared=True)
    difference = compare(fresh, shared)
    return None if difference is None else str(difference)
