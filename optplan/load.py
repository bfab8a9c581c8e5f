"""Reading what the command line is given: a TVMScript program, an ONNX model, a CSV problem.

Steps for a program: parse, infer types, verify, then liveness gives the Problem and the
placements the replay needs. A CSV problem goes straight to the planners; it has no program
to replay. Every fault becomes an InputError that names the file.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from dataclasses import dataclass, replace
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


def load(
    path: str,
    *,
    alignment: int = 64,
    plan_outputs: bool = False,
    dims: dict[str, int] | None = None,
    inplace: bool = False,
) -> Loaded:
    """Read `path` by its extension (.py, .onnx, .csv) into a Problem; with `inplace`,
    elementwise ops first take over dying inputs (`use_inplace_calls`)."""
    if alignment < 1:
        raise InputError(f"alignment must be at least 1, got {alignment}")
    if not Path(path).is_file():
        raise InputError("no such file", file=path)
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".csv":
            _refuse_options(dims=dims, inplace=inplace, plan_outputs=plan_outputs)
            return Loaded(path, _realign(read_csv(path), alignment))
        if suffix == ".py":
            _refuse_options(dims=dims)
            program = _read_script(path)
        elif suffix == ".onnx":
            program = _onnx_frontend().load_onnx(path, dims or {})
        else:
            raise InputError(f"unknown kind of file {suffix!r}; expected .py, .onnx or .csv")
        _refuse_planned(program)
        if inplace:
            from optplan.passes import use_inplace_calls

            program = use_inplace_calls(program)
        return _from_program(path, program, alignment, plan_outputs)
    except InputError as error:
        raise error.located(path) from None


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


def load_program(path: str) -> Program:
    """Parse, type and verify a TVMScript program."""
    try:
        return _read_script(path)
    except InputError as error:
        raise error.located(path) from None


def _read_script(path: str) -> Program:
    from optplan.analysis.types import infer_types, verify
    from optplan.script import load as load_script

    program = load_script(path)
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


def _realign(problem: Problem, alignment: int) -> Problem:
    if alignment == 1:
        return problem
    buffers = tuple(
        replace(b, alignment=math.lcm(b.alignment, alignment)) for b in problem.buffers
    )
    return replace(problem, buffers=buffers)


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
