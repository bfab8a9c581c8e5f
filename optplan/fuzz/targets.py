"""What `optplan fuzz` can aim at, each as a `Target`: draw, judge, write a reproducer.

- `PlannerTarget`: an optplan planner by name (`fuzz greedy`).
- `CallableTarget`: a Python function `module:function` taking a `Problem` and returning
  offsets (a dict of buffer name to offset) or a `Plan`; None means it found no plan.

Planners and functions must also answer in time: far past the time limit (`over_time`)
is a failure of its own, as a crash is.
- `CommandTarget`: an external program speaking MiniMalloc's CSV. Per example: the problem
  is written with `write_csv` to `{input}`, the command runs with `{capacity}` (the
  problem's, or the stacked layout's arena when it has none), and `{output}` must then be
  a CSV with an `offset` column.
- `optplan.fuzz.relax.TvmTarget`: TVM's own memory passes on random Relax programs.

A target is rebuilt in every worker process from its `TargetSpec` (a few strings), so
nothing but the spec crosses a process boundary. Problems whose every buffer has one
interval and that have no aliases and no capacity are written as CSV reproducers; the
others as a Python file that rebuilds the problem and re-judges it.
"""

from __future__ import annotations

import importlib
import shlex
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hypothesis import strategies as st

from optplan.budget import DEFAULT_WORK
from optplan.errors import InputError
from optplan.fuzz.properties import Failure, judge_plan, plan_from_offsets
from optplan.problem import MAIN, Problem, one_arena, read_csv, write_csv
from optplan.problem.plan import Plan


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """How to build a target: `kind` is planner, callable, command or tvm; `memories`
    draws problems of several memories (planners and callables only)."""

    kind: str
    name: str
    time_limit: float = 10.0
    memories: bool = False


class Target(Protocol):
    label: str  # for messages: "planner greedy"
    stem: str  # for file names: "greedy"

    def strategy(self) -> st.SearchStrategy[Any]: ...

    def judge(self, example: Any) -> Failure | None: ...

    def size(self, example: Any) -> int: ...

    def reproducer(self, example: Any, failure: Failure) -> tuple[str, str]: ...


def make_target(spec: TargetSpec) -> Target:
    """The target of `spec`; InputError when it names nothing that exists."""
    if spec.memories and spec.kind not in ("planner", "callable"):
        what = "a MiniMalloc-CSV command plans" if spec.kind == "command" else "TVM's passes plan"
        raise InputError(f"--memories needs a planner or module:function target: {what} one arena")
    if spec.kind == "planner":
        return PlannerTarget(spec.name, spec.time_limit, spec.memories)
    if spec.kind == "callable":
        return CallableTarget(spec.name, spec.time_limit, spec.memories)
    if spec.kind == "command":
        return CommandTarget(spec.name, spec.time_limit)
    if spec.kind == "tvm":
        from optplan.fuzz.relax import TvmTarget

        return TvmTarget()
    raise InputError(f"unknown fuzz target kind {spec.kind!r}")


def parse_target(
    target: str | None, command: str | None, time_limit: float, memories: bool = False
) -> TargetSpec:
    """The spec for `optplan fuzz TARGET` or `optplan fuzz --command CMD`."""
    from optplan.planners import PLANNERS

    if command is not None:
        if target is not None:
            raise InputError("give a TARGET or --command, not both")
        for field in ("{input}", "{output}"):
            if field not in command:
                raise InputError(f"--command must name {field} (and may name {{capacity}})")
        return TargetSpec("command", command, time_limit, memories)
    if target is None:
        raise InputError("give a TARGET (a planner, module:function, or tvm) or --command")
    if target == "tvm":
        return TargetSpec("tvm", "tvm", time_limit, memories)
    if ":" in target:
        return TargetSpec("callable", target, time_limit, memories)
    if target in PLANNERS:
        return TargetSpec("planner", target, time_limit, memories)
    choices = ", ".join(sorted(PLANNERS))
    raise InputError(
        f"unknown fuzz target {target!r}; give a planner ({choices}), "
        "module:function, tvm, or --command"
    )


# ---------------------------------------------------------------------------- problems


class _ProblemTarget:
    """What every Problem target shares: the strategy, the size, the reproducer."""

    label = "problem"
    stem = "problem"
    memories = False

    def strategy(self) -> st.SearchStrategy[Problem]:
        from optplan.strategies import fuzz_problems
        from optplan.strategies.memories import memory_problems

        if not self.memories:
            return fuzz_problems()
        # Tiny ones the brute force weighs, and larger ones judged by the references.
        return st.one_of(
            memory_problems(3, max_points=3),
            memory_problems(4, max_points=4, bounded_last=True),
            memory_problems(10, max_points=6),
        )

    def size(self, example: Problem) -> int:
        return len(example.buffers)

    def reproducer(self, example: Problem, failure: Failure) -> tuple[str, str]:
        return problem_reproducer(example, failure, self.label)

    def judge_result(self, problem: Problem, result: object, name: str) -> Failure | None:
        if result is None:
            return None
        if isinstance(result, Plan):
            return judge_plan(problem, result)
        if isinstance(result, dict):
            return judge_plan(problem, plan_from_offsets(problem, result, name))
        return Failure("bad-result", f"{name} returned {type(result).__name__}, not offsets")


def over_time(started: float, time_limit: float) -> Failure | None:
    """A target that runs far past its time limit hangs its users: a failure too. The
    margin is wide, so that a loaded machine does not cry wolf."""
    seconds = time.monotonic() - started
    allowed = max(3 * time_limit, time_limit + 30)
    if seconds <= allowed:
        return None
    return Failure("over-time", f"took {seconds:.0f} s with a time limit of {time_limit:g} s")


def problem_reproducer(problem: Problem, failure: Failure, label: str) -> tuple[str, str]:
    """(suffix, text): a CSV when the format holds the whole problem, else Python."""
    plain = problem.memories == (MAIN,) and not problem.aliases  # what a CSV reads back
    if plain and all(len(b.live) == 1 for b in problem.buffers):
        return ".csv", write_csv(problem)
    lines = [
        f'"""{failure}"""',
        "",
        "from optplan.fuzz.properties import judge_plan",
        "from optplan.fuzz.targets import make_target, TargetSpec",
        "from optplan.problem import Alias, Buffer, Interval, Memory, Problem",
        "",
        f"problem = {problem!r}",
        "",
        "if __name__ == '__main__':",
        f"    print(make_target(TargetSpec(*{_spec_args(label)!r})).judge(problem))",
    ]
    return ".py", "\n".join(lines) + "\n"


def _spec_args(label: str) -> tuple[str, str]:
    kind, _, name = label.partition(" ")
    return kind, name


@dataclass
class PlannerTarget(_ProblemTarget):
    name: str
    time_limit: float
    memories: bool = False

    def __post_init__(self) -> None:
        from optplan.budget import Budget
        from optplan.planners import get_planner
        from optplan.planners.base import configured

        # Each example gets the planner's default work, guarded by the time limit.
        budget = Budget(DEFAULT_WORK, self.time_limit)
        self.planner = configured(get_planner(self.name), budget)  # type: ignore[type-var]
        self.label, self.stem = f"planner {self.name}", self.name

    def judge(self, example: Problem) -> Failure | None:
        started = time.monotonic()
        try:
            plan = self.planner(example)
        except Exception as error:  # noqa: BLE001 - any crash of the target is the finding
            return Failure("crash", f"{type(error).__name__}: {error}")
        return over_time(started, self.time_limit) or judge_plan(example, plan)


@dataclass
class CallableTarget(_ProblemTarget):
    name: str
    time_limit: float = 10.0
    memories: bool = False

    def __post_init__(self) -> None:
        module_name, _, attribute = self.name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise InputError(
                f"cannot import {module_name!r}: {error} (run from the folder that holds "
                "it, or put that folder on PYTHONPATH)"
            ) from None
        function = getattr(module, attribute, None)
        if not callable(function):
            raise InputError(f"{module_name!r} has no function {attribute!r}")
        self.function = function
        self.label, self.stem = f"callable {self.name}", attribute

    def judge(self, example: Problem) -> Failure | None:
        started = time.monotonic()
        try:
            result = self.function(example)
        except Exception as error:  # noqa: BLE001 - any crash of the target is the finding
            return Failure("crash", f"{type(error).__name__}: {error}")
        return over_time(started, self.time_limit) or self.judge_result(example, result, self.name)


@dataclass
class CommandTarget(_ProblemTarget):
    """MiniMalloc's CSV in and out: single intervals, no aliases, no capacity of its own."""

    command: str
    time_limit: float

    def __post_init__(self) -> None:
        self.label, self.stem = f"command {self.command}", "command"

    def strategy(self) -> st.SearchStrategy[Problem]:
        from optplan.strategies import problems

        def plain(count: int, size: int) -> st.SearchStrategy[Problem]:
            return problems(
                count,
                min_buffers=0,
                branches=False,
                aliases=False,
                pins=False,
                alignments=False,
                max_size=size,
            )

        return st.one_of(plain(10, 64), plain(60, 256))

    def judge(self, example: Problem) -> Failure | None:
        from optplan.strategies import roomy_capacity

        capacity = roomy_capacity(example)
        with tempfile.TemporaryDirectory(prefix="optplan-fuzz-") as folder:
            source, target = Path(folder, "input.csv"), Path(folder, "output.csv")
            source.write_text(write_csv(example))
            fields = {"capacity": capacity, "input": source, "output": target}
            argv = shlex.split(self.command.format(**fields))
            try:
                done = subprocess.run(
                    argv, check=False, capture_output=True, text=True, timeout=self.time_limit
                )
            except subprocess.TimeoutExpired:
                return None  # a time-out is no answer, not a wrong one
            except OSError as error:
                raise InputError(f"cannot run {argv[0]!r}: {error.strerror}") from None
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
                return Failure("crash", f"exit status {done.returncode}: {last}")
            if not target.exists():
                return Failure("no-output", f"exit status 0 but no {target.name} written")
            return self._judge_output(example, target, capacity)

    def _judge_output(self, problem: Problem, output: Path, capacity: int) -> Failure | None:
        try:
            planned = read_csv(output)
        except InputError as error:
            return Failure("bad-output", str(error).replace(str(output), "output.csv"))
        offsets = {b.id: b.offset for b in planned.buffers if b.offset is not None}
        bounded = Problem(problem.buffers, problem.aliases, memories=one_arena(capacity))
        return self.judge_result(bounded, offsets, "the command")
