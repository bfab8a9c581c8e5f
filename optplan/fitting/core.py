"""`fit`: does a program fit in N bytes, and what is the cheapest way to make it fit?

Steps of `fit(loaded, capacity)`:

1. The levers that cost nothing, cheapest first: as is, in place, a better order, both
   (`forms.free_forms`); each planned within the capacity (`levers.attempt`). The first
   that fits is the answer.
2. Where none does, those that cost compute: recomputation of the program and of its
   in-place form (`forms.recompute_forms`); the least extra compute that fits wins.
3. Where none does and memories are given (`--memory`), a second memory, for the
   program and for its best free form (`forms.memory_forms`); the least slow-memory
   traffic wins.
4. Where nothing fits, the proof (`proof.prove`): the bound every lever needs, when the
   capacity is below it; else the answer is unknown (no lever found a plan in the time).

With `every`, every lever is tried whatever fits first (the table of `--levers`). The
time limit is shared among the levers by `SHARES`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from optplan.analysis.liveness import build_memory
from optplan.analysis.types import typed_program
from optplan.budget import Budget, running
from optplan.errors import InputError
from optplan.fitting import forms
from optplan.fitting.levers import (
    COMPUTE,
    FREE,
    TRAFFIC,
    Form,
    Setting,
    Tried,
    attempt,
    with_fast_memory,
)
from optplan.fitting.proof import Bound, Proof, program_rows, prove
from optplan.frontends import Loaded, frontend_of, load
from optplan.ir import Program
from optplan.problem import Memory, lower_bound

# The share of the time limit each lever may take: the order search and a CP-SAT packing
# are quick on the examples; recomputation searches, so it has the most.
SHARES = {"order": 0.1, "pack": 0.05, "recompute": 0.3}

FITS, CANNOT, UNKNOWN = "fits", "cannot", "unknown"


@dataclass(frozen=True, slots=True)
class Fitted:
    """The answer: `status` FITS (with `best`, the cheapest lever that fits), CANNOT
    (with `proof`) or UNKNOWN; `tried`: every lever tried, in order; `bounds`: each
    lever's lower bound."""

    path: str
    capacity: int
    status: str
    best: Tried | None
    tried: tuple[Tried, ...]
    proof: Proof | None
    bounds: tuple[Bound, ...]
    seconds: float

    @property
    def bound_bytes(self) -> int:
        return min((b.bytes for b in self.bounds), default=0)


def fit(
    source: Loaded | str | Program,
    capacity: int,
    *,
    memories: tuple[Memory, ...] | None = None,
    alignment: int | None = None,
    plan_outputs: bool = False,
    time_limit: float = 10.0,
    every: bool = False,
    allow: Callable[[str], bool] | None = None,
    work: float | None = None,
) -> Fitted:
    """The cheapest lever that fits `source` (a file, a program, or what `optplan.load`
    read without `inplace` and at `alignment`) in `capacity` bytes (module docstring); `alignment`
    defaults to the file's (64 for programs, 1 for a .csv); `allow(name)` False keeps a
    binding from being computed again (an ONNX node's inner bindings). With `work`, every
    lever stops on work and the answer is the same on any machine (`time_limit` is then a
    guard); without, the levers share `time_limit` seconds."""
    clock = Budget(work, time_limit).clock()
    with running(clock):
        return _fit(source, capacity, memories, (alignment, plan_outputs, every), allow, clock.end)


def _fit(
    source: Loaded | str | Program,
    capacity: int,
    memories: tuple[Memory, ...] | None,
    flags: tuple[int | None, bool, bool],
    allow: Callable[[str], bool] | None,
    time_limit: float,
) -> Fitted:
    """`fit` on the running clock, whose `time_limit` is in its units."""
    alignment, plan_outputs, every = flags
    loaded, alignment, allow = _read(source, alignment, plan_outputs, allow)
    if capacity < 1:
        raise InputError(f"a capacity must be at least 1 byte, got {capacity}")
    if loaded.graph is not None:
        raise InputError(
            "fit takes a program (.py, .onnx, .tflite) or a .csv problem; for a graph, "
            "'optplan reorder --capacity' recomputes",
            file=loaded.path,
        )
    began = time.perf_counter()
    setting = Setting(capacity, alignment, plan_outputs, memories, time_limit * SHARES["pack"])
    tried: list[Tried] = []
    bounds: list[Bound] = []
    free = _free(loaded, setting, time_limit, tried, bounds)
    if every or not _fits(tried, FREE):
        _recomputed(loaded, setting, time_limit, allow, tried, bounds)
    if memories is not None and (every or not _fits(tried, FREE, COMPUTE)):
        best_free = next((f for f in free if f.lever == forms.ORDER_INPLACE), None)
        for form in forms.memory_forms(loaded.program, best_free, setting):
            tried.append(attempt(form, setting, loaded.problem))
    best = cheapest(tried)
    proof = None
    if best is None:
        given = with_fast_memory(capacity, memories) if memories else None
        proof = prove(bounds, loaded.problem, loaded.memory, capacity, given)
    status = FITS if best else CANNOT if proof else UNKNOWN
    seconds = time.perf_counter() - began
    return Fitted(loaded.path, capacity, status, best, tuple(tried), proof, tuple(bounds), seconds)


def _read(
    source: Loaded | str | Program,
    alignment: int | None,
    plan_outputs: bool,
    allow: Callable[[str], bool] | None,
) -> tuple[Loaded, int, Callable[[str], bool] | None]:
    """`source` read, its alignment (the file's by default), and what may be recomputed."""
    if isinstance(source, str):
        alignment = alignment or frontend_of(source).default_alignment
        allow = allow or onnx_allow(source)
        source = load(source, alignment=alignment, plan_outputs=plan_outputs)
    if isinstance(source, Program):
        alignment = alignment or 64
        program = typed_program(source)
        facts = build_memory(program, plan_outputs=plan_outputs, alignment=alignment)
        source = Loaded("<program>", facts.problem, program, facts)
    if alignment is None:
        alignment = 64 if source.program is not None else 1
    return source, alignment, allow


def onnx_allow(path: str, dims: dict[str, int] | None = None) -> Callable[[str], bool] | None:
    """What may be computed again in the model at `path`: of an ONNX model, not its nodes'
    inner bindings (its writer keeps the nodes whole); of any other file, anything."""
    if not path.lower().endswith(".onnx"):
        return None
    from optplan.frontends.onnx_write import node_variables

    return node_variables(path, dims or {}).__contains__


def cheapest(tried: list[Tried]) -> Tried | None:
    """The lever that fits of the cheapest class, and within it the least cost (the
    earlier on a tie)."""
    for cost_class in (FREE, COMPUTE, TRAFFIC):
        fitting = [t for t in tried if t.fits and t.cost_class == cost_class]
        if fitting:
            return min(fitting, key=lambda t: t.cost)
    return None


def _fits(tried: list[Tried], *classes: int) -> bool:
    return any(t.fits and t.cost_class in classes for t in tried)


def _free(
    loaded: Loaded, setting: Setting, time_limit: float, tried: list[Tried], bounds: list[Bound]
) -> list[Form]:
    """Step 1, and each free lever's bound; the forms made."""
    if loaded.program is None:
        tried.append(
            attempt(Form(forms.AS_IS, FREE, None, "nothing changed"), setting, loaded.problem)
        )
        bounds.append(
            Bound(forms.AS_IS, lower_bound(loaded.problem), "the live bytes of the problem")
        )
        return []
    ordering = Setting(
        setting.capacity,
        setting.alignment,
        setting.plan_outputs,
        setting.memories,
        time_limit * SHARES["order"],
    )
    made, best_order = forms.free_forms(loaded.program, ordering)
    attempts = [attempt(form, setting) for form in made]
    tried.extend(attempts)
    inplace = made[1]
    assert inplace.program is not None
    problems = [a.problem for a in attempts]
    assert problems[0] is not None and problems[1] is not None and problems[3] is not None
    as_is_pair = (loaded.program, problems[0])
    inplace_pair = (inplace.program, problems[1])
    bounds.extend(program_rows(as_is_pair, inplace_pair, best_order, problems[3], setting))
    return made


def _recomputed(
    loaded: Loaded,
    setting: Setting,
    time_limit: float,
    allow: Callable[[str], bool] | None,
    tried: list[Tried],
    bounds: list[Bound],
) -> None:
    """Step 2: recomputation, alone and in place; a lever with no program is a row that
    does not fit. Its blocks' memory bounds, which know which ops may run again, tighten
    the rows of `bounds` of the same lever."""
    if loaded.program is None:
        return
    share = Setting(
        setting.capacity,
        setting.alignment,
        setting.plan_outputs,
        setting.memories,
        time_limit * SHARES["recompute"] / 2,
    )
    for found in forms.recompute_forms(loaded.program, share, allow):
        if found.form is not None:
            tried.append(attempt(found.form, setting))
        else:
            tried.append(Tried.none(found.lever, COMPUTE, found.reason))
        for i, row in enumerate(bounds):
            if row.lever == found.lever and found.bound_bytes > row.bytes:
                bounds[i] = Bound(row.lever, found.bound_bytes, found.bound_reason)
