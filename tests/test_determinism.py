"""Same input, same plan, whatever the machine's load: a planner given a budget of work
stops on work, never on the clock.

The load is faked by a clock that jumps ahead a thousand seconds at every reading: any
stage that still shared out or stopped on seconds would see its time gone at once and
answer differently. The plans must be byte for byte those of the real clock.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from hypothesis import given, settings

from optplan import budget as budget_module
from optplan.budget import Budget, Clock
from optplan.planners import drive
from optplan.problem import Buffer, Interval, Problem, read_csv
from optplan.problem.plan import validate
from optplan.strategies import problems
from optplan.strategies.memories import memory_problems
from tests.loaded import calm_and_loaded, records

ROOT = Path(__file__).resolve().parents[1]
MINIMALLOC = ROOT.parent / "shared" / "data" / "minimalloc" / "challenging"


class _Jumping:
    """A `perf_counter` that runs a thousand seconds ahead at every reading."""

    def __init__(self) -> None:
        self.readings = itertools.count()

    def __call__(self) -> float:
        return time.monotonic() + 1000.0 * next(self.readings)


def _JumpingTime() -> types.SimpleNamespace:
    """A `time` module for `optplan.budget` alone whose `perf_counter` jumps."""
    return types.SimpleNamespace(perf_counter=_Jumping())


def _planned_under_load(
    problem: Problem, budget: Budget, monkeypatch: pytest.MonkeyPatch
) -> dict[str, int]:
    with monkeypatch.context() as patched:
        patched.setattr(budget_module.time, "perf_counter", _Jumping())
        return dict(drive(problem, "cpsat", budget).offsets)


def hard_problem() -> Problem:
    """Interlocking buffers whose optimum is above the live bytes: CP-SAT and the search
    both have work to do before they prove it."""
    buffers = []
    for k in range(24):
        start = (k * 7) % 19
        size = 3 + (k * 5) % 11
        buffers.append(Buffer(f"b{k}", size, (Interval(start, start + 2 + k % 5),)))
    return Problem(tuple(buffers))


def test_a_clock_that_counts_work_reads_no_seconds() -> None:
    clock = Budget(work=2.0).clock()
    clock.spend(0.5)
    assert (clock.now(), clock.left(), clock.past(0.5), clock.past(0.6)) == (0.5, 1.5, True, False)
    assert not Clock(Budget(work=1.0)).cut


def test_the_guard_cuts_a_counted_run_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Budget(work=1.0, seconds=5.0).clock()
    monkeypatch.setattr(budget_module.time, "perf_counter", lambda: clock.started + 6.0)
    assert clock.past(0.5) and clock.cut


def test_a_loaded_machine_gets_the_same_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = hard_problem()
    budget = Budget(work=3.0)
    calm = drive(problem, "cpsat", budget)
    assert validate(problem, calm) == [] and "cut" not in calm.detail
    assert _planned_under_load(problem, budget, monkeypatch) == dict(calm.offsets)


@settings(deadline=None, max_examples=30)
@given(problems(max_buffers=12, residues=True))
def test_plans_counted_in_work_do_not_move_with_the_clock(problem: Problem) -> None:
    budget = Budget(work=0.3)
    calm = drive(problem, "cpsat", budget)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(budget_module.time, "perf_counter", _Jumping())
        loaded = drive(problem, "cpsat", budget)
    assert (loaded.status, loaded.arena, dict(loaded.offsets)) == (
        calm.status,
        calm.arena,
        dict(calm.offsets),
    )


@pytest.mark.skipif(
    not MINIMALLOC.is_dir(), reason="MiniMalloc's instances (../shared/data) absent"
)
@pytest.mark.parametrize("instance", ["D", "J"])
def test_minimalloc_hard_instances_twice_under_load(
    instance: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = read_csv(MINIMALLOC / f"{instance}.1048576.csv")
    budget = Budget(work=4.0)
    calm = drive(problem, "cpsat", budget)
    assert validate(problem, calm) == []
    assert _planned_under_load(problem, budget, monkeypatch) == dict(calm.offsets)


def test_the_command_line_prints_the_same_plan_twice(tmp_path: Path) -> None:
    """Two processes, one of them beside a busy one: the same JSON but for the seconds."""
    path = tmp_path / "hard.csv"
    rows = [f"{b.id},{b.start},{b.end},{b.size}" for b in hard_problem().buffers]
    path.write_text("id,lower,upper,size\n" + "\n".join(rows) + "\n")
    command = [sys.executable, "-m", "optplan", "plan", str(path), "--work", "2", "--json"]
    calm, loaded = calm_and_loaded(command)
    assert calm.returncode == loaded.returncode == 0, loaded.stderr
    first, second = records(calm, loaded)
    assert first == second
    assert first["cut_by_time_limit"] is False
    assert first["versions"]["ortools"] != "unknown"


@settings(deadline=None, max_examples=20)
@given(memory_problems())
def test_plans_of_several_memories_do_not_move_with_the_clock(problem: Problem) -> None:
    budget = Budget(work=0.5)
    calm = drive(problem, "cpsat", budget)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(budget_module.time, "perf_counter", _Jumping())
        loaded = drive(problem, "cpsat", budget)
    assert (loaded.status, loaded.residences, loaded.copies) == (
        calm.status,
        calm.residences,
        calm.copies,
    )


def _written_twice(command: list[str], out: Path) -> list[bytes]:
    """`command` run beside a busy process and then alone, writing `out` each time: the
    bytes written each time."""
    written = []
    for busy_beside in (True, False):
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy_beside else None
        try:
            subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        finally:
            if busy is not None:
                busy.kill()
        written.append(out.read_bytes())
    return written


def test_the_planned_tflite_is_the_same_bytes_twice(tmp_path: Path) -> None:
    model = ROOT / "tests" / "data" / "tflite" / "ds_cnn.tflite"
    out = tmp_path / "planned.tflite"
    command = [sys.executable, "-m", "optplan", "plan", str(model), "--work", "3", "-o", str(out)]
    first, second = _written_twice(command, out)
    assert first == second and first[4:8] == model.read_bytes()[4:8]


def test_a_plan_with_a_small_fast_memory_is_the_same_twice(tmp_path: Path) -> None:
    example = ROOT / "examples" / "transformer_block.py"
    out = tmp_path / "plan.json"
    command = [sys.executable, "-m", "optplan", "plan", str(example), "--work", "3"]
    command += ["--memory", "fast=256KiB", "--memory", "slow", "-o", str(out)]
    plans = [json.loads(text) for text in _written_twice(command, out)]
    for plan in plans:
        plan.pop("seconds")
    assert plans[0] == plans[1] and plans[0]["residences"]


def test_tvms_module_is_the_same_text_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    tvm = pytest.importorskip("tvm", reason="apache-tvm is not installed (the tvm extra)")
    sys.path.insert(0, str(ROOT / "tests"))
    import tvm_models

    from optplan.tvm import Options, plan_module

    model = tvm_models.BUILDERS["mlp"]("tiny")
    low = tvm_models.lowered(model.mod, tvm.target.Target("llvm"))
    options = Options("cpsat", time_limit=math.inf, work=2.0)
    calm = plan_module(low, options)[0].script()
    with monkeypatch.context() as patched:
        patched.setattr(budget_module, "time", _JumpingTime())
        loaded = plan_module(low, options)[0].script()
    assert calm == loaded


@pytest.mark.parametrize(
    "options",
    [{"work": None, "time_limit": None}, {"work": 0.0}, {"work": -1.0}, {"time_limit": 0.0}],
)
def test_a_budget_that_would_never_end_or_is_not_positive_is_refused(
    options: dict[str, float | None],
) -> None:
    from optplan.planners import get_planner

    with pytest.raises(ValueError, match="work|time limit"):
        get_planner("cpsat", **options)


def test_work_on_the_command_line_is_checked(tmp_path: Path) -> None:
    from optplan.cli import main

    path = tmp_path / "p.csv"
    path.write_text("id,lower,upper,size\na,0,2,8\n")
    for bad in ("0", "-3", "nan", "lots"):
        assert main(["plan", str(path), "--work", bad]) == 2


@pytest.mark.parametrize("example", ["cnn_train.py", "transformer_block.py"])
def test_fit_counted_in_work_answers_the_same_whatever_the_clock(
    example: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from optplan.fitting import fit

    path = str(ROOT / "examples" / example)
    capacity = {"cnn_train.py": 45875, "transformer_block.py": 943718}[example]

    def answer() -> tuple[object, ...]:
        found = fit(path, capacity, time_limit=math.inf, work=4.0, every=True)
        rows = [(t.lever, t.fits, t.arena_bytes, t.extra_percent) for t in found.tried]
        best = found.best
        offsets = None if best is None or best.plan is None else dict(best.plan.offsets)
        return found.status, rows, offsets

    calm = answer()
    with monkeypatch.context() as patched:
        patched.setattr(budget_module, "time", _JumpingTime())
        assert answer() == calm
