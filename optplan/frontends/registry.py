"""Frontends: what `optplan.load` reads, one reader per kind of file, chosen by suffix.

`FRONTENDS` maps a suffix to a `Frontend`: a TVMScript program (`.py`), an ONNX model
(`.onnx`, weights read with it, once), a TensorFlow Lite model (`.tflite`, planned as
TFLite Micro plans its arena), a MiniMalloc problem (`.csv`). Steps of `load`:

1. pick the frontend by the file's suffix (an unknown suffix names the known ones);
2. its reader gives a `Source`: a typed program (types inferred once, here), its weights
   and the values its symbolic dimensions were read at; or, for a problem file, the
   Problem itself, which has no program to replay;
3. for a program: refuse one that is already planned, make calls in place when asked
   (`use_inplace_calls`), and derive its MemoryFacts (`build_memory`): the Problem and the
   placements the replay needs; a runtime that keeps its outputs in the arena
   (`Frontend.outputs_planned`) has them planned, and one that rounds every tensor's
   bytes (`Frontend.size_multiple`) has the Problem's sizes rounded the same way;
4. with symbolic dimensions, read it again once per dimension at a smaller value to find
   which buffers each one sizes (without weights).

Every fault becomes an InputError that names the file. To add a kind of input: a reader
`(path, Options) -> Source` and a `register(Frontend(suffix, ...))`.
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

import numpy as np

from optplan.analysis.liveness import build_memory
from optplan.analysis.memory import MemoryFacts
from optplan.errors import InputError
from optplan.ir import Call, Loc, Program, iter_bindings
from optplan.problem import Interval, Memory, Problem, read_csv
from optplan.problem.plan import Copy, Plan, Residence, Status
from optplan.schedule.graph import Graph


@dataclass(frozen=True, slots=True)
class Loaded:
    """A problem to plan and, for programs, the program, its memory facts and weights."""

    path: str
    problem: Problem
    program: Program | None = None
    memory: MemoryFacts | None = None
    # Parameter values the file itself holds (an ONNX model's initializers), by name.
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    # Symbolic dimensions at the values the program was read at (their upper bounds when
    # planning), and for each the buffers whose size it sets.
    bounds: dict[str, int] = field(default_factory=dict)
    sized_by: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # For a peer's computation graph (`.json`): the graph, whose program order the
    # problem is.
    graph: Graph | None = None


@dataclass(frozen=True, slots=True)
class Options:
    """How to read a file: see `load`."""

    alignment: int = 64
    plan_outputs: bool = False
    dims: dict[str, int] = field(default_factory=dict)
    inplace: bool = False
    bounds: dict[str, int] = field(default_factory=dict)
    with_weights: bool = True
    memories: tuple[Memory, ...] | None = None


@dataclass(frozen=True, slots=True)
class Source:
    """What a reader gives: a typed program with its weights and the values its symbolic
    dimensions were read at, or a problem."""

    program: Program | None = None
    problem: Problem | None = None
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    bounds: dict[str, int] = field(default_factory=dict)
    graph: Graph | None = None


Reader = Callable[[str, Options], Source]


@dataclass(frozen=True, slots=True)
class Frontend:
    """One kind of input file.

    `default_alignment`: the alignment a plan uses unless told (a problem file's sizes are
    exact byte counts: 1). `dims_at_replay`: `--dim` is the size a replay runs at, not
    the size read for planning (TVMScript, whose bounds are in the program).
    `outputs_planned`: the runtime keeps the outputs in the arena, so they are always
    planned; `size_multiple`: it rounds every tensor's bytes up to this (TFLite Micro: 16).
    """

    suffix: str
    read: Reader
    default_alignment: int = 64
    dims_at_replay: bool = False
    outputs_planned: bool = False
    size_multiple: int = 1


FRONTENDS: dict[str, Frontend] = {}


def register(frontend: Frontend) -> Frontend:
    FRONTENDS[frontend.suffix] = frontend
    return frontend


def frontend_of(path: str) -> Frontend:
    """The frontend that reads `path`, by its suffix (InputError for an unknown one)."""
    suffix = Path(path).suffix.lower()
    if suffix not in FRONTENDS:
        known = ", ".join(sorted(FRONTENDS))
        raise InputError(f"unknown kind of file {suffix!r}; expected one of {known}", file=path)
    return FRONTENDS[suffix]


def load(
    path: str,
    *,
    alignment: int | None = None,
    plan_outputs: bool = False,
    dims: dict[str, int] | None = None,
    inplace: bool = False,
    bounds: dict[str, int] | None = None,
    with_sizes: bool = True,
    with_weights: bool = True,
    memories: tuple[Memory, ...] | None = None,
) -> Loaded:
    """Read `path` by its suffix (`FRONTENDS`: .py, .onnx, .csv) into a Problem; with
    `inplace`, elementwise ops first take over dying inputs (`use_inplace_calls`).

    Symbolic dimensions are read at `bounds` (`--bound`), else at a TVMScript function's
    `tir_var_upper_bound`, else (ONNX inputs) at `dims` (`--dim`); `dims` of a TVMScript
    program are for replays (`load_replay`). With `with_sizes`, `Loaded.sized_by` says
    which buffers each symbolic dimension sizes (one more read per dimension, without
    weights); with `with_weights`, `Loaded.weights` holds the file's own parameter values.
    `alignment` defaults to the frontend's (`Frontend.default_alignment`). The
    problem's buffers live in `memories` (None: one unbounded memory)."""
    if alignment is not None and alignment < 1:
        raise InputError(f"alignment must be at least 1, got {alignment}")
    if Path(path).is_dir():
        raise InputError("is a directory; give a program or problem file in it", file=path)
    if not Path(path).is_file():
        raise InputError("no such file", file=path)
    if alignment is None:
        try:
            alignment = frontend_of(path).default_alignment
        except InputError as error:
            raise error.located(path) from None
    given = (plan_outputs, dict(dims or {}), inplace, dict(bounds or {}), with_weights, memories)
    options = Options(alignment, *given)
    try:
        frontend = frontend_of(path)
        if frontend.outputs_planned:
            options = replace(options, plan_outputs=True)
        source = frontend.read(path, options)
        if source.problem is not None:
            return Loaded(path, source.problem, graph=source.graph)
        assert source.program is not None
        loaded = _from_program(path, source, options, frontend.size_multiple)
        if not source.bounds or not with_sizes:
            return loaded
        read = functools.partial(
            load,
            path,
            alignment=alignment,
            plan_outputs=plan_outputs,
            inplace=inplace,
            with_sizes=False,
            with_weights=False,
            memories=memories,
        )
        return replace(loaded, sized_by=_sized_by(loaded, source.bounds, read))
    except InputError as error:
        raise error.located(path) from None


def _from_program(path: str, source: Source, options: Options, size_multiple: int = 1) -> Loaded:
    program = source.program
    assert program is not None
    _refuse_planned(program)
    if options.inplace:
        from optplan.passes import use_inplace_calls

        program = use_inplace_calls(program)
    memory = build_memory(
        program,
        plan_outputs=options.plan_outputs,
        alignment=options.alignment,
        memories=options.memories,
    )
    if size_multiple > 1:
        memory = replace(memory, problem=rounded_sizes(memory.problem, size_multiple))
    return Loaded(path, memory.problem, program, memory, source.weights, source.bounds)


def rounded_sizes(problem: Problem, multiple: int) -> Problem:
    """`problem` with every buffer's size rounded up to a multiple of `multiple`."""
    buffers = tuple(replace(b, size=-(-b.size // multiple) * multiple) for b in problem.buffers)
    return replace(problem, buffers=buffers)


# ---------------------------------------------------------------------------- readers


def _read_script(path: str, options: Options) -> Source:
    """A TVMScript program, parsed, verified and typed at `--bound` (else its own bounds)."""
    from optplan.analysis.types import infer_types, verify
    from optplan.frontends.script import load as load_script

    _refuse_options(dims=options.dims)
    program = load_script(path, dict(options.bounds))
    verify(program)
    program = infer_types(program)
    return Source(program, bounds={**script_bounds(program), **options.bounds})


def _read_onnx(path: str, options: Options) -> Source:
    """An ONNX model with its inputs' symbolic dimensions at `--dim` / `--bound`, and its
    weights (initializers and Constant values) read in the same pass."""
    from optplan.analysis.types import infer_types

    values = {**options.dims, **options.bounds}
    model = _onnx_frontend().read_onnx(path, values, with_weights=options.with_weights)
    return Source(infer_types(model.program), weights=model.weights, bounds=values)


def _read_tflite(path: str, options: Options) -> Source:
    """A TensorFlow Lite model's main subgraph, as TFLite Micro plans its arena."""
    from optplan.analysis.types import infer_types
    from optplan.frontends.tflite import read_tflite

    _refuse_options(dims=options.dims, bound=options.bounds)
    if options.inplace:
        raise InputError("--inplace: TFLite Micro runs no operator in place")
    model = read_tflite(path, with_weights=options.with_weights)
    return Source(infer_types(model.program), weights=model.weights)


def _read_csv(path: str, options: Options) -> Source:
    """A MiniMalloc problem: buffers, lifetimes and sizes, nothing to replay."""
    _refuse_options(
        dims=options.dims,
        bound=options.bounds,
        inplace=options.inplace,
        plan_outputs=options.plan_outputs,
    )
    return Source(problem=read_csv(path, alignment=options.alignment, memories=options.memories))


def _read_graph(path: str, options: Options) -> Source:
    """A peer's computation graph (Checkmate, MOCCASIN): its program order as a problem,
    and the graph itself for the schedulers."""
    from optplan.frontends.graphs import read_graph
    from optplan.schedule.graph import problem_of

    _refuse_options(
        dims=options.dims,
        bound=options.bounds,
        inplace=options.inplace,
        plan_outputs=options.plan_outputs,
    )
    graph = read_graph(path).graph
    return Source(problem=problem_of(graph, range(graph.ops), options.alignment), graph=graph)


register(Frontend(".py", _read_script, dims_at_replay=True))
register(Frontend(".onnx", _read_onnx))
register(Frontend(".tflite", _read_tflite, 16, outputs_planned=True, size_multiple=16))
register(Frontend(".csv", _read_csv, default_alignment=1))
register(Frontend(".json", _read_graph, default_alignment=1))


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
    # The weights do not depend on the sizes: those read for planning serve.
    again = load(planned.path, bounds=values, with_sizes=False, with_weights=False, **options)  # type: ignore[arg-type]
    return replace(again, weights=planned.weights)


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
            meaning = (
                "fixes a dimension of an ONNX model's inputs"
                if name == "dims"
                else "acts on a program"
            )
            raise InputError(f"{flag} {meaning}; this input has none to act on")


def _onnx_frontend() -> ModuleType:
    """The ONNX reader, or a clear error when the onnx package is missing."""
    try:
        return importlib.import_module("optplan.frontends.onnx")
    except ModuleNotFoundError as error:
        if error.name != "onnx":
            raise
        raise InputError(
            "reading .onnx models needs the onnx package: pip install 'optplan[onnx]'"
        ) from None


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


def read_plan(path: str, problem: Problem) -> Plan:
    """A plan written by `optplan plan --json` (or by hand: `offsets` and `arena_bytes`)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=path) from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"not JSON: {error.msg}", file=path, line=error.lineno, col=error.colno
        ) from None
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
        **_memory_fields(path, data),  # type: ignore[arg-type]
    )


def _memory_fields(path: str, data: dict[str, object]) -> dict[str, object]:
    """A plan of several memories' residences, copies and traffic, as `plan --json` writes
    them (empty for a plan of one arena)."""
    if "residences" not in data:
        return {}
    try:
        residences = tuple(
            Residence(
                str(r["buffer"]),
                str(r["memory"]),
                int(r["offset"]),
                tuple(Interval(int(a), int(b)) for a, b in r["live"]),
            )
            for r in data["residences"]  # type: ignore[attr-defined]
        )
        copies = tuple(
            Copy(str(c["buffer"]), int(c["point"]), str(c["from"]), str(c["to"]))
            for c in data.get("copies", [])  # type: ignore[attr-defined]
        )
        traffic = data.get("traffic")
        return {
            "residences": residences,
            "copies": copies,
            "traffic": None if traffic is None else int(traffic),  # type: ignore[call-overload]
        }
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"malformed residences or copies: {error!s}", file=path) from None


def _machine_bytes() -> int:
    """The physical memory of this machine (2**62 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62
