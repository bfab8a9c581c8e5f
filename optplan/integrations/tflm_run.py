"""Running `.tflite` models in TFLite Micro (`pip install tflite-micro`), the proof of a plan.

TFLite Micro's arena is one block: the head (the planned tensors: its own planner's
plan, or the model's offline plan), temporary memory while it prepares, and the tail
(persistent records: tensors' headers, kernels' data). A too-small arena makes the
Python interpreter refuse, or abort the whole process, so every run is a process of its
own, forked from a server that imported the runtime once (`prober`).

Steps of `compare_in_tflm(model, planned, lower_bound_bytes)`:

1. inputs for every graph input, drawn from a seed (the same for both models);
2. for each model, the smallest arena it runs in (`smallest_arena`): doubling from a
   first guess until a run succeeds, then bisection down to the byte between the last
   size that failed and the first that ran. No arena below the plan's lower bound can
   hold the head, so the search starts there. Each probe builds the interpreter with the
   recording allocator (never "preserve all tensors", which plans without reuse), sets the
   inputs, invokes, saves the outputs and prints the head and tail it used;
3. the outputs of both runs at their smallest arenas, compared byte for byte.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optplan.frontends.tflite import main_subgraph, parse, tensor_type

# The most a search tries before it gives up (a model that runs in no arena).
MOST_BYTES = 1 << 30

# A server in a child process: it imports the runtime once, then forks one grandchild per
# arena size asked on stdin, which runs the model with its output in a log file and dies
# (a crash included) without taking the server down; the server answers the exit status.
_SERVER = r"""
import os
import sys
import numpy as np
from tflite_micro.python.tflite_micro import runtime

model, io, outputs = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(model, "rb") as f:
    data = f.read()
with np.load(io + ".in.npz") as given:
    inputs = [given[f"arr_{k}"] for k in range(len(given.files))]
for line in sys.stdin:
    arena = int(line)
    pid = os.fork()
    if pid == 0:
        log = os.open(f"{io}.{arena}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(log, 1)
        os.dup2(log, 2)
        code = 1
        try:
            interpreter = runtime.Interpreter.from_bytes(data, arena_size=arena)
            for k, value in enumerate(inputs):
                interpreter.set_input(value, k)
            interpreter.invoke()
            found = [interpreter.get_output(k) for k in range(outputs)]
            np.savez(f"{io}.{arena}.out.npz", *found)
            sys.stdout.flush()
            interpreter.print_allocations()
            code = 0
        except Exception as error:
            print(error, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    print(status, flush=True)
"""


class TflmError(RuntimeError):
    """TFLite Micro could not run the model at any arena size (a missing kernel, say)."""


@dataclass(frozen=True, slots=True)
class Run:
    """One model run in TFLite Micro at one arena size."""

    arena_bytes: int
    fits: bool
    head_bytes: int = 0
    tail_bytes: int = 0
    outputs: tuple[np.ndarray, ...] = ()
    message: str = ""


@dataclass(frozen=True, slots=True)
class Smallest:
    """The smallest arena a model ran in, the run there, and how many probes it took."""

    run: Run
    probes: int

    @property
    def arena_bytes(self) -> int:
        return self.run.arena_bytes


@dataclass(frozen=True, slots=True)
class Comparison:
    """TFLite Micro's own plan against the offline plan: smallest arenas and outputs."""

    own: Smallest
    planned: Smallest
    outputs_equal: bool


def available() -> bool:
    """Whether the tflite-micro package is installed."""
    return importlib.util.find_spec("tflite_micro") is not None


def model_inputs(data: bytes, seed: int = 0) -> list[np.ndarray]:
    """One value per graph input, by its dtype: integers over their whole range, floats
    normal."""
    graph = main_subgraph(parse(data, "<model>"), "<model>")
    rng = np.random.default_rng(seed)
    values = []
    for index in graph.inputs:
        type_ = tensor_type(graph.tensors[index])
        dtype = np.dtype(type_.dtype)
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            values.append(rng.integers(info.min, info.max, type_.shape, endpoint=True, dtype=dtype))
        else:
            values.append(rng.standard_normal(type_.shape).astype(dtype))
    return values


@contextlib.contextmanager
def prober(model: Path, inputs: list[np.ndarray], outputs: int) -> Iterator[Callable[[int], Run]]:
    """A function that runs the model at an arena size, each run in a process of its own
    forked from one server (see `_SERVER`), for as long as the context lasts."""
    with tempfile.TemporaryDirectory(prefix="optplan-tflm-") as scratch:
        io = str(Path(scratch) / "io")
        np.savez(io + ".in.npz", *inputs)
        server = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(model), io, str(outputs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdin is not None and server.stdout is not None
        ask, answer = server.stdin, server.stdout

        def probe(arena_bytes: int) -> Run:
            ask.write(f"{arena_bytes}\n")
            ask.flush()
            status = answer.readline().strip()
            if not status:
                raise TflmError(f"the TFLite Micro server for {model.name} stopped")
            log = Path(f"{io}.{arena_bytes}.log").read_text(errors="replace")
            if status != "0":
                lines = [line for line in log.splitlines() if line.strip()]
                return Run(arena_bytes, False, message=lines[-1] if lines else "crashed")
            with np.load(f"{io}.{arena_bytes}.out.npz") as saved:
                found = tuple(saved[f"arr_{k}"] for k in range(outputs))
            return Run(arena_bytes, True, _recorded("head", log), _recorded("tail", log), found)

        try:
            yield probe
        finally:
            ask.close()
            server.wait()


def run_once(model: Path, arena_bytes: int, inputs: list[np.ndarray], outputs: int) -> Run:
    """The model run once at `arena_bytes`, in a child process."""
    with prober(model, inputs, outputs) as probe:
        return probe(arena_bytes)


def _recorded(section: str, text: str) -> int:
    found = re.search(rf"Arena allocation {section} (\d+) bytes", text)
    return int(found.group(1)) if found else 0


def smallest_arena(
    model: Path, inputs: list[np.ndarray], outputs: int, lower_bound_bytes: int
) -> Smallest:
    """The smallest arena, to the byte, in which the model runs (see the module's steps)."""
    probes = 0
    with prober(model, inputs, outputs) as run:

        def probe(size: int) -> Run:
            nonlocal probes
            probes += 1
            return run(size)

        failed = max(lower_bound_bytes - 1, 0)
        size = max(2 * lower_bound_bytes, 16384)
        ran = probe(size)
        while not ran.fits:
            if size >= MOST_BYTES:
                message = f"{model.name} runs in no arena up to {MOST_BYTES} bytes: {ran.message}"
                raise TflmError(message)
            failed, size = size, min(2 * size, MOST_BYTES)
            ran = probe(size)
        return Smallest(_bisect(failed, ran, probe), probes)


def _bisect(failed: int, ran: Run, probe: Callable[[int], Run]) -> Run:
    """The run at the smallest size in (failed, ran.arena_bytes] that fits."""
    while ran.arena_bytes - failed > 1:
        middle = (failed + ran.arena_bytes) // 2
        attempt = probe(middle)
        if attempt.fits:
            ran = attempt
        else:
            failed = middle
    return ran


def compare_in_tflm(
    model: bytes, planned: bytes, lower_bound_bytes: int, seed: int = 0
) -> Comparison:
    """TFLite Micro's smallest arenas for `model` (planned by TFLite Micro itself) and
    `planned` (the same model carrying an offline plan), and whether their outputs are
    equal."""
    inputs = model_inputs(model, seed)
    outputs = len(main_subgraph(parse(model, "<model>"), "<model>").outputs)
    with tempfile.TemporaryDirectory(prefix="optplan-tflm-") as scratch:
        paths = Path(scratch) / "own.tflite", Path(scratch) / "planned.tflite"
        paths[0].write_bytes(model)
        paths[1].write_bytes(planned)
        own = smallest_arena(paths[0], inputs, outputs, lower_bound_bytes)
        offline = smallest_arena(paths[1], inputs, outputs, lower_bound_bytes)
    equal = len(own.run.outputs) == len(offline.run.outputs) and all(
        a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        for a, b in zip(own.run.outputs, offline.run.outputs)
    )
    return Comparison(own, offline, equal)


def describe(found: Comparison, plan_bytes: int) -> str:
    """One line: both smallest arenas, head and tail, what the plan saves, the outputs."""
    own, planned = found.own.run, found.planned.run
    saved = 1 - planned.arena_bytes / own.arena_bytes if own.arena_bytes else 0.0
    outputs = "outputs byte-for-byte equal" if found.outputs_equal else "OUTPUTS DIFFER"
    return (
        f"TFLite Micro runs it in {planned.arena_bytes} bytes with optplan's plan (head "
        f"{planned.head_bytes}, the plan's {plan_bytes}; tail {planned.tail_bytes}) and in "
        f"{own.arena_bytes} with its own (head {own.head_bytes}, tail {own.tail_bytes}): "
        f"{saved:.1%} less; {outputs}"
    )


def as_dict(found: Comparison) -> dict[str, object]:
    """The comparison as JSON: each run's smallest arena, head and tail, and the outputs."""
    runs = {"own": found.own, "planned": found.planned}
    record: dict[str, object] = {
        name: {
            "arena_bytes": s.run.arena_bytes,
            "head_bytes": s.run.head_bytes,
            "tail_bytes": s.run.tail_bytes,
            "probes": s.probes,
        }
        for name, s in runs.items()
    }
    record["outputs_equal"] = found.outputs_equal
    return record
