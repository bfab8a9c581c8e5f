"""Reading what the command line is given: a TVMScript program, an ONNX model, a CSV problem.

Steps for a program: parse, infer types, verify, then liveness gives the Problem and the
placements the replay needs. A CSV problem goes straight to the planners; it has no program
to replay. Every fault becomes an InputError that names the file.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import Memory
from optplan.errors import InputError
from optplan.ir import Call, Loc, Program, iter_bindings
from optplan.plan import Plan, Status
from optplan.problem import Problem, read_csv


@dataclass(frozen=True, slots=True)
class Loaded:
    """A problem to plan and, for programs, the program and its memory facts."""

    path: str
    problem: Problem
    program: Program | None = None
    memory: Memory | None = None
    # Symbolic dimensions at the values the program was read at (their upper bounds when
    # planning), and for each the buffers whose size it sets.
    bounds: dict[str, int] = field(default_factory=dict)
    sized_by: dict[str, tuple[str, ...]] = field(default_factory=dict)


def load(
    path: str,
    *,
    alignment: int = 64,
    plan_outputs: bool = False,
    dims: dict[str, int] | None = None,
    inplace: bool = False,
    bounds: dict[str, int] | None = None,
    with_sizes: bool = True,
) -> Loaded:
    """Read `path` by its extension (.py, .onnx, .csv) into a Problem; with `inplace`,
    elementwise ops first take over dying inputs (`use_inplace_calls`).

    Symbolic dimensions are read at `bounds` (`--bound`), else at a TVMScript function's
    `tir_var_upper_bound`, else (ONNX inputs) at `dims` (`--dim`); `dims` of a TVMScript
    program are for replays (`load_replay`). With `with_sizes`, `Loaded.sized_by` says
    which buffers each symbolic dimension sizes (one more read per dimension)."""
    if alignment < 1:
        raise InputError(f"alignment must be at least 1, got {alignment}")
    if not Path(path).is_file():
        raise InputError("no such file", file=path)
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".csv":
            _refuse_options(dims=dims, bound=bounds, inplace=inplace, plan_outputs=plan_outputs)
            return Loaded(path, read_csv(path, alignment=alignment))
        values = dict(bounds or {})
        if suffix == ".py":
            _refuse_options(dims=dims)
            program = _read_script(path, values)
        elif suffix == ".onnx":
            values = {**(dims or {}), **values}
            program = _onnx_frontend().load_onnx(path, values)
        else:
            raise InputError(f"unknown kind of file {suffix!r}; expected .py, .onnx or .csv")
        _refuse_planned(program)
        if inplace:
            from optplan.passes import use_inplace_calls

            program = use_inplace_calls(program)
        loaded = _from_program(path, program, alignment, plan_outputs)
        if suffix == ".py":
            values = {**script_bounds(program), **values}
        if not values or not with_sizes:
            return replace(loaded, bounds=values)
        read = functools.partial(
            load,
            path,
            alignment=alignment,
            plan_outputs=plan_outputs,
            inplace=inplace,
            with_sizes=False,
        )
        return replace(loaded, bounds=values, sized_by=_sized_by(loaded, values, read))
    except InputError as error:
        raise error.located(path) from None


def load_replay(planned: Loaded, dims: dict[str, int], **options: object) -> Loaded:
    """The program of `planned` read again with its symbolic dimensions at `dims` (each at
    most its bound), for replaying the plan made at the bounds; the buffers are the same,
    no larger."""
    for name, value in sorted(dims.items()):
        bound = planned.bounds.get(name)
        if bound is None:
            message = f"--dim {name}: the program has no symbolic dimension named {name!r}"
            raise InputError(message, file=planned.path)
        if value > bound:
            message = f"--dim {name}={value} is above its upper bound {bound}"
            raise InputError(message, file=planned.path)
    values = {**planned.bounds, **dims}
    return load(planned.path, bounds=values, with_sizes=False, **options)  # type: ignore[arg-type]


def script_bounds(program: Program) -> dict[str, int]:
    """The `tir_var_upper_bound` of the entry function, as a dict."""
    pairs = program.main.attr("tir_var_upper_bound") or ()
    assert isinstance(pairs, tuple)
    return {str(p[0]): int(p[1]) for p in pairs if isinstance(p, tuple)}  # type: ignore[arg-type]


def _sized_by(
    loaded: Loaded, values: dict[str, int], read: Callable[..., Loaded]
) -> dict[str, tuple[str, ...]]:
    """For each symbolic dimension, the buffers whose size changes when it is smaller (one
    less, else half, else 1: a program may only be valid at even sizes, say). A dimension
    at 1, or at no smaller value the program accepts, is left out."""
    sizes = {b.id: b.size for b in loaded.problem.buffers}
    found = {}
    for name, value in sorted(values.items()):
        for smaller_value in sorted({value - 1, value // 2, 1} - {0, value}, reverse=True):
            try:
                smaller = read(bounds={**values, name: smaller_value}).problem.buffers
            except InputError:
                continue
            found[name] = tuple(b.id for b in smaller if sizes.get(b.id) != b.size)
            break
    return found


def _refuse_options(**given: object) -> None:
    """Options that mean nothing for this kind of input are an error, not ignored."""
    for name, value in given.items():
        if value:
            flag = "--dim" if name == "dims" else "--" + name.replace("_", "-")
            meaning = "fixes a dimension of an ONNX model's inputs" if name == "dims" else "acts on a program"
            raise InputError(f"{flag} {meaning}; this input has none to act on")


def _onnx_frontend() -> ModuleType:
    """The ONNX reader, or a clear error when the onnx package is missing."""
    try:
        return importlib.import_module("optplan.onnx_frontend")
    except ModuleNotFoundError as error:
        if error.name != "onnx":
            raise
        raise InputError("reading .onnx models needs the onnx package: pip install 'optplan[onnx]'") from None


def _read_script(path: str, dims: dict[str, int] | None = None) -> Program:
    from optplan.analysis.types import infer_types, verify
    from optplan.script import load as load_script

    program = load_script(path, dims)
    verify(program)
    return infer_types(program)


def _refuse_planned(program: Program) -> None:
    """A program that already allocates its own storage has a plan to check, not to make."""
    for binding in iter_bindings(program.main.body):
        value = binding.value
        if isinstance(value, Call) and value.op in ("memory.alloc_storage", "memory.alloc_tensor"):
            loc = value.loc or Loc()
            raise InputError(
                f"the program is already planned (it calls R.{value.op}); "
                "use 'optplan check' to validate and replay its plan",
                file=loc.file,
                line=loc.line,
                col=loc.col,
            )


def _from_program(path: str, program: Program, alignment: int, plan_outputs: bool) -> Loaded:
    memory = build_memory(program, plan_outputs=plan_outputs, alignment=alignment)
    return Loaded(path, memory.problem, program, memory)


def read_plan(path: str, problem: Problem) -> Plan:
    """A plan written by `optplan plan --json` (or by hand: `offsets` and `arena_bytes`)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=path) from None
    except json.JSONDecodeError as error:
        raise InputError(f"not JSON: {error.msg}", file=path, line=error.lineno, col=error.colno) from None
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict) or not isinstance(data.get("offsets"), dict):
        raise InputError("expected a JSON object with an 'offsets' object", file=path)
    offsets: dict[str, int] = {}
    for name, value in data["offsets"].items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(f"offset of {name!r} is not an integer: {value!r}", file=path)
        offsets[name] = value
    sizes = {b.id: b.size for b in problem.buffers}
    reach = max((offsets[n] + sizes.get(n, 0) for n in offsets), default=0)
    arena = data.get("arena_bytes", reach)
    if not isinstance(arena, int) or isinstance(arena, bool) or arena < 0:
        raise InputError(f"arena_bytes is not a non-negative integer: {arena!r}", file=path)
    memory = _machine_bytes()
    if arena > memory:
        raise InputError(
            f"arena_bytes {arena} is more than this machine's memory ({memory} bytes); "
            "such a plan cannot be replayed here",
            file=path,
        )
    from optplan.problem import lower_bound

    return Plan(
        offsets=offsets,
        arena=arena,
        status=Status.FEASIBLE,
        planner=str(data.get("planner", Path(path).name)),
        lower_bound=lower_bound(problem),
    )


def _machine_bytes() -> int:
    """The physical memory of this machine (2**62 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62
