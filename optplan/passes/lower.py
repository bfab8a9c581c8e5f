"""plan_memory: lower a program onto the storages of a plan, as StaticPlanBlockMemory does.

Input: a program, the MemoryFacts of its entry function (`build_memory`) and a plan of that
MemoryFacts's problem, from any planner. Output: the entry function in TVM's planned form:

1. Storages. One `R.memory.alloc_storage` of `plan.arena` bytes; or, when the plan says
   how its arena splits into storages (`plan.storages`, the tokens of the `tokens`
   planner), one per storage, each buffer going to the storage whose bytes hold its
   offset. All are allocated on entry.
2. Every call that makes new buffers becomes a destination-passing call: one
   `R.memory.alloc_tensor(storage, offset, R.shape(shape), R.dtype(dtype), 0)` per
   planned output, bound to the call's own variable (a tuple output gets one tensor per
   field and the variable is bound to their tuple), then a bare kernel call
   `kernel(args..., out)`. An output the plan leaves out (a returned value) is a
   `R.builtin.alloc_tensor`, as in TVM.
3. An in-place call writes over its argument: `kernel(args...)` then `v = args[i]`.
   Views, tuples, tuple items and var-to-var bindings are kept as they are.
4. An If keeps its branches (each lowered the same way) and gives its own buffer the
   liveness's meaning: at the end of each branch the If's tensor is carved at its
   planned offset, the branch's value is copied into it (`astype` to the same dtype, a
   bit-exact copy the op table already runs) or, when the value is a call, computed
   into it, and the branch yields that tensor.
5. Blocks become one plain block (destination-passing calls are not pure), and
   `kill_after_last_use` adds the kills: a tensor after its last use, a storage after its
   last `alloc_tensor`.
6. A plan of several memories (`plan.residences`) gets one storage per memory, its scope
   the memory's name, and every tensor is carved in the memory holding it where it is
   written. Before the binding of each point, every copy of that point carves the
   buffer's tensor in the target memory and copies it there (`astype` to the same
   dtype); from then on the binding's arguments name the tensor in the memory reads
   come from at their point (a view of a moved tensor is made again from the copy, as a
   `reshape`), so the kills follow each copy's last use.

A high-level op is lowered to a kernel named after the op that keeps the op's attributes
and names the op (`Call("call_kernel", ..., attrs=(("kernel", "add"), ("op", "add"),
...))`), so that the lowered executor runs the op and not an opaque kernel that happens to
share its name. It prints as `nn_conv2d(x, w, out, op="nn.conv2d", strides=[1, 1], ...)`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import MemoryFacts, Placement
from optplan.analysis.types import typed_program
from optplan.errors import InputError
from optplan.ir import (
    Binding,
    Block,
    Call,
    Expr,
    If,
    Literal,
    ObjectType,
    Program,
    SeqExpr,
    ShapeExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    iter_bindings,
    var_types,
)
from optplan.ops import lookup, overwritten_args
from optplan.passes.kill import BARE, kill_after_last_use
from optplan.passes.names import fresh_name
from optplan.planners import Planner
from optplan.problem.plan import Plan, Residence

STORAGE = "storage"


@dataclass(frozen=True, slots=True)
class Storage:
    """One `alloc_storage`: its variable, its size and where it starts in the plan's arena
    (for a plan of several memories, its memory: the storage scope)."""

    name: str
    size_bytes: int
    base: int
    scope: str = "global"


def plan_memory(program: Program, memory: MemoryFacts, plan: Plan) -> Program:
    """The entry function of `program` lowered onto `plan` (steps 1-5)."""
    if not plan.status.has_plan:
        raise ValueError(
            f"plan of {plan.planner!r} has status {plan.status.value}: nothing to lower"
        )
    fn = typed_program(program).main
    taken = {b.var.name for b in iter_bindings(fn.body)} | {p.var.name for p in fn.params}
    if plan.residences:
        storages = memory_storages(memory, plan, taken)
        lowering: _Lowering = _MemoryLowering(memory, plan, storages, taken, var_types(fn))
    else:
        storages = storages_of(plan, taken)
        lowering = _Lowering(memory, plan, storages, taken)
    bindings = [_alloc_storage(s) for s in storages] + lowering.seq(fn.body)
    result = lowering.result(fn.body.body, bindings)
    body = SeqExpr((Block(tuple(bindings)),), result)
    lowered = dataclasses.replace(fn, body=body, attrs=_forced_pure(fn.attrs))
    # Only the lowered function gets kills; the others are left as they are.
    killed = kill_after_last_use(Program((lowered,))).functions[0]
    return program.replace_function(killed)


def lower_program(
    program: Program, planner: Planner, *, alignment: int = 1
) -> tuple[Program, Plan]:
    """Plan `program`'s entry function with `planner` and lower it onto the plan: what
    `optplan lower PROGRAM --planner NAME` prints (with `print_program`)."""
    typed = typed_program(program)
    memory = build_memory(typed, alignment=alignment)
    plan = planner(memory.problem)
    return plan_memory(typed, memory, plan), plan


def storages_of(plan: Plan, taken: set[str]) -> list[Storage]:
    """The storages the plan's arena is cut into (step 1), named apart from `taken`."""
    storages = plan.storages or ((0, plan.arena),)
    return [
        Storage(fresh_name(f"{STORAGE}{index or ''}", taken, "_"), size, base)
        for index, (base, size) in enumerate(storages)
    ]


def memory_storages(memory: MemoryFacts, plan: Plan, taken: set[str]) -> list[Storage]:
    """One storage per memory the plan uses (step 6), as large as its highest byte."""
    sizes = {b.id: b.size for b in memory.problem.buffers}
    used: dict[str, int] = {}
    for r in plan.residences:
        used[r.memory] = max(used.get(r.memory, 0), r.offset + sizes[r.buffer])
    return [
        Storage(fresh_name(f"{STORAGE}_{m.name}", taken, "_"), used[m.name], 0, m.name)
        for m in memory.problem.memories
        if m.name in used
    ]


def storage_of(storages: list[Storage], offset: int) -> Storage:
    """The storage whose bytes hold `offset` (a zero-byte buffer may sit at its end)."""
    for storage in storages:
        if storage.base <= offset < storage.base + storage.size_bytes:
            return storage
    for storage in storages:
        if offset == storage.base + storage.size_bytes:
            return storage
    raise ValueError(f"offset {offset} lies in no storage of the plan")


def _forced_pure(attrs: tuple) -> tuple:  # type: ignore[type-arg]
    # TVM marks lowered functions this way: they call impure memory builtins.
    return tuple(sorted({**dict(attrs), "relax.force_pure": True}.items()))


def _alloc_storage(storage: Storage) -> Binding:
    call = Call(
        "memory.alloc_storage",
        (
            ShapeExpr((storage.size_bytes,)),
            Literal("prim", 0),
            Literal("str", storage.scope),
            Literal("dtype", "uint8"),
        ),
    )
    return Binding(Var(storage.name), call, ObjectType())


@dataclass(slots=True)
class _Lowering:
    memory: MemoryFacts
    plan: Plan
    storages: list[Storage]
    taken: set[str]

    def seq(self, seq: SeqExpr) -> list[Binding]:
        return [out for block in seq.blocks for b in block.bindings for out in self.binding(b)]

    def result(self, body: Expr, bindings: list[Binding]) -> Expr:
        """The function's result, as the lowered bindings end."""
        return body

    def binding(self, binding: Binding) -> list[Binding]:
        value = binding.value
        if isinstance(value, If):
            return [self.lower_if(binding, value)]
        if not isinstance(value, Call) or binding.var.name == BARE:
            return [binding]
        indices = overwritten_args(value)
        if indices:
            return self.in_place(binding, value, indices)
        op = lookup(value.op)
        if (op is not None and op.view) or not _makes_tensors(binding.type):
            return [binding]
        return self.destination_passing(binding, value)

    def lower_if(self, binding: Binding, node: If) -> Binding:
        """Each branch ends by copying its value into the If's own tensor, carved there
        (the If's buffer is born at the branch's end), and yields that tensor."""
        name, type_ = binding.var.name, binding.type
        if not isinstance(type_, TensorType):
            raise InputError(f"plan_memory lowers only Ifs whose value is one tensor, not {name!r}")
        branches = []
        for side, branch in (("then", node.then_branch), ("else", node.else_branch)):
            target = Var(fresh_name(f"{name}_{side}", self.taken, "_"))
            alloc = Binding(target, self.alloc(self.memory.placements.get(name), type_), type_)
            body = branch.body
            # A branch whose value is a call computes it straight into the If's tensor.
            write = (
                _kernel_call(body, (target,))
                if isinstance(body, Call)
                else copy_call(body, target, type_)
            )
            bindings = (*self.seq(branch), alloc, Binding(Var(BARE), write))
            branches.append(SeqExpr((Block(bindings),), target))
        lowered = dataclasses.replace(node, then_branch=branches[0], else_branch=branches[1])
        return dataclasses.replace(binding, value=lowered)

    def in_place(self, binding: Binding, call: Call, indices: tuple[int, ...]) -> list[Binding]:
        kernel = _kernel_call(call, (), keep_inplace=indices != (0,))
        target = (
            call.args[indices[0]]
            if len(indices) == 1
            else Tuple(tuple(call.args[i] for i in indices))
        )
        return [Binding(Var(BARE), kernel), dataclasses.replace(binding, value=target)]

    def destination_passing(self, binding: Binding, call: Call) -> list[Binding]:
        name, type_ = binding.var.name, binding.type
        placement = self.memory.placements.get(name)
        if isinstance(type_, TensorType):
            alloc = Binding(binding.var, self.alloc(placement, type_), type_, loc=binding.loc)
            return [alloc, Binding(Var(BARE), _kernel_call(call, (binding.var,)))]
        assert isinstance(type_, TupleType)
        fields = placement if isinstance(placement, tuple) else (None,) * len(type_.fields)
        allocs = []
        for index, (field_type, field_placement) in enumerate(zip(type_.fields, fields)):
            if not isinstance(field_type, TensorType):
                raise InputError(f"plan_memory cannot lower the nested tuple output of {name!r}")
            var = Var(fresh_name(f"{name}_{index}", self.taken, "_"))
            allocs.append(Binding(var, self.alloc(field_placement, field_type), field_type))
        outs = tuple(a.var for a in allocs)
        kernel = Binding(Var(BARE), _kernel_call(call, outs))
        return [*allocs, kernel, dataclasses.replace(binding, value=Tuple(outs))]

    def alloc(self, placement: object, type_: TensorType) -> Call:
        shape, dtype = ShapeExpr(type_.shape), Literal("dtype", type_.dtype)
        if not isinstance(placement, Placement):
            # Not planned (a returned value): a tensor of its own, as TVM leaves it.
            return Call(
                "builtin.alloc_tensor",
                (shape, dtype, Literal("prim", 0), Literal("str", "global")),
                (("ty_args", (type_,)),),
            )
        storage, offset = self.carve(placement.buffer)
        args = (
            Var(storage.name),
            Literal("prim", offset - storage.base),
            shape,
            dtype,
            Literal("prim", 0),
        )
        return Call("memory.alloc_tensor", args)

    def carve(self, buffer: str) -> tuple[Storage, int]:
        """The storage a buffer's tensor is carved from where it is written, and its
        offset there."""
        offset = self.plan.offsets[buffer]
        storage = storage_of(self.storages, offset)
        return storage, offset


@dataclass(slots=True)
class _MemoryLowering(_Lowering):
    """Step 6: a plan of several memories. Program point k is binding k (such programs
    have no If); `names[(var, memory)]` is the variable naming var's tensor in that
    memory, `buffer_of[var]` its buffer, and a buffer's `defining` variable the one its
    kernel writes (a field of a kernel's tuple has one of its own)."""

    types: dict[str, Type | None] = field(default_factory=dict)
    point: int = -1
    names: dict[tuple[str, str], Var] = field(default_factory=dict)
    buffer_of: dict[str, str] = field(default_factory=dict)
    defining: dict[str, tuple[str, TensorType]] = field(default_factory=dict)
    placed: dict[str, list[Residence]] = field(default_factory=dict)

    def binding(self, binding: Binding) -> list[Binding]:
        self.point += 1
        out = self.arrive()
        value = self.substitute(binding.value, out)
        lowered = _Lowering.binding(self, dataclasses.replace(binding, value=value))
        self.remember(binding, lowered[-1])
        return out + lowered

    def result(self, body: Expr, bindings: list[Binding]) -> Expr:
        self.point += 1  # the return point, where the outputs are read
        bindings += self.arrive()
        return self.substitute(body, bindings)

    def arrive(self) -> list[Binding]:
        """Forget names in memories the buffers left; carve and copy every copy here."""
        for name, memory in list(self.names):
            if not self.holds(self.buffer_of[name], memory, self.point):
                del self.names[(name, memory)]
        out: list[Binding] = []
        for copy in sorted(c for c in self.plan.copies if c.point == self.point):
            var, type_ = self.defining[copy.buffer]
            source = self.names[(var, copy.source)]
            target = Var(fresh_name(f"{var}_{copy.target}", self.taken, "_"))
            storage, offset = self.storage_in(copy.buffer, copy.target)
            shape, dtype = ShapeExpr(type_.shape), Literal("dtype", type_.dtype)
            carve = Call(
                "memory.alloc_tensor",
                (Var(storage.name), Literal("prim", offset), shape, dtype, Literal("prim", 0)),
            )
            out += [
                Binding(target, carve, type_),
                Binding(Var(BARE), copy_call(source, target, type_)),
            ]
            self.name(target, copy.buffer, copy.target)
            self.names[(var, copy.target)] = target
        return out

    def substitute(self, expr: Expr, out: list[Binding]) -> Expr:
        """`expr` with every planned variable named where it is read at this point."""
        if isinstance(expr, Var):
            return self.where_read(expr, out)
        if isinstance(expr, Call):
            return dataclasses.replace(expr, args=tuple(self.substitute(a, out) for a in expr.args))
        if isinstance(expr, Tuple):
            return dataclasses.replace(
                expr, fields=tuple(self.substitute(f, out) for f in expr.fields)
            )
        if isinstance(expr, TupleGetItem):
            inner = self.substitute(expr.tuple_value, out)
            if isinstance(inner, Tuple):
                return inner.fields[expr.index]
            return dataclasses.replace(expr, tuple_value=inner)
        return expr

    def where_read(self, var: Var, out: list[Binding]) -> Expr:
        placement = self.memory.placements.get(var.name)
        if isinstance(placement, tuple) and var.name not in self.buffer_of:
            # A tuple of tensors a kernel wrote: its fields, each where it is read now.
            fields = []
            for item in placement:
                if not isinstance(item, Placement) or item.buffer not in self.defining:
                    return var
                fields.append(self.where_read(Var(self.defining[item.buffer][0]), out))
            return Tuple(tuple(fields))
        buffer = self.buffer_of.get(var.name)
        if (
            buffer is None
            and isinstance(placement, Placement)
            and placement.buffer in self.defining
        ):
            buffer = placement.buffer
        if buffer is None:
            return var
        memory = self.read_memory(buffer)
        named = self.names.get((var.name, memory))
        if named is not None:
            return named
        # A view of a moved tensor: made again from the tensor where it is now.
        source, _ = self.defining[buffer]
        type_ = self.types.get(var.name)
        if not isinstance(type_, TensorType):
            raise InputError(f"plan_memory cannot lower {var.name!r}: its type is not a tensor")
        view = Var(fresh_name(f"{var.name}_{memory}", self.taken, "_"))
        reshape = Call("reshape", (self.names[(source, memory)], ShapeExpr(type_.shape)))
        out.append(Binding(view, reshape, type_))
        self.name(view, buffer, memory)
        self.names[(var.name, memory)] = view
        return view

    def remember(self, binding: Binding, last: Binding) -> None:
        """Name the binding's tensor (or a kernel's tuple's fields, which `last` gathers)
        in the memory where it was written or read."""
        placement = self.memory.placements.get(binding.var.name)
        type_ = binding.type
        if isinstance(placement, Placement) and isinstance(type_, TensorType):
            self.define(binding.var, placement.buffer, type_)
        elif (
            isinstance(placement, tuple)
            and isinstance(type_, TupleType)
            and isinstance(last.value, Tuple)
        ):
            for item, var, field_type in zip(placement, last.value.fields, type_.fields):
                if (
                    isinstance(item, Placement)
                    and isinstance(var, Var)
                    and isinstance(field_type, TensorType)
                ):
                    self.define(var, item.buffer, field_type)

    def define(self, var: Var, buffer: str, type_: TensorType) -> None:
        if buffer not in self.defining:
            self.defining[buffer] = (var.name, type_)
        self.name(var, buffer, self.read_memory(buffer))

    def name(self, var: Var, buffer: str, memory: str) -> None:
        self.buffer_of[var.name] = buffer
        self.names[(var.name, memory)] = var

    def carve(self, buffer: str) -> tuple[Storage, int]:
        return self.storage_in(buffer, self.read_memory(buffer))

    def storage_in(self, buffer: str, memory: str) -> tuple[Storage, int]:
        storage = next(s for s in self.storages if s.scope == memory)
        offset = next(
            r.offset for r in self.plan.residences if r.buffer == buffer and r.memory == memory
        )
        return storage, offset

    def holds(self, buffer: str, memory: str, point: int) -> bool:
        if not self.placed:
            for r in self.plan.residences:
                self.placed.setdefault(r.buffer, []).append(r)
        return any(
            r.memory == memory and any(iv.start <= point < iv.end for iv in r.live)
            for r in self.placed.get(buffer, [])
        )

    def read_memory(self, buffer: str) -> str:
        """The cheapest memory holding `buffer` at this point (where a write goes too)."""
        for memory in sorted(self.memory.problem.memories, key=lambda m: m.cost):
            if self.holds(buffer, memory.name, self.point):
                return memory.name
        raise ValueError(f"the plan holds buffer {buffer!r} in no memory at point {self.point}")


def copy_call(source: Expr, target: Var, type_: TensorType) -> Call:
    """`target` := `source`, bit for bit: an `astype` to the same dtype, which the op table
    already runs, as a destination-passing kernel."""
    attrs = (("dtype", type_.dtype), ("kernel", "astype"), ("op", "astype"))
    return Call("call_kernel", (source, target), attrs)


def _makes_tensors(type_: object) -> bool:
    return isinstance(type_, TensorType) or (isinstance(type_, TupleType) and bool(type_.fields))


def _kernel_call(call: Call, outs: tuple[Expr, ...], *, keep_inplace: bool = False) -> Call:
    """`kernel(args..., outs...)`: a `call_tir` keeps its kernel's name; a high-level op
    becomes a kernel named after the op that keeps the op's attributes and names it."""
    attrs = dict(call.attrs)
    if call.op in ("call_tir", "call_tir_inplace"):
        kernel = attrs.pop("kernel", None)
        attrs = {k: v for k, v in attrs.items() if k == "inplace_indices"}
    else:
        # The op is named apart from kernels: a kernel may be called `add` and be opaque.
        # The kernel's own name is the op's with dots made printable (`nn_conv2d`).
        kernel, attrs["op"] = call.op.replace(".", "_"), call.op
    if not keep_inplace:
        attrs.pop("inplace_indices", None)
    return Call("call_kernel", call.args + outs, tuple(sorted({**attrs, "kernel": kernel}.items())))
