"""`optplan fuzz`: it finds, shrinks and writes what is wrong, and stays quiet on what is right.

Targets under test: the fixture planners in `tests/fixtures` (a broken MiniMalloc-CSV
command, and Python functions right and wrong), optplan's own planners, and TVM's passes
(skipped without TVM).
"""

from __future__ import annotations

import io
import runpy
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings

from optplan.cli import main
from optplan.frontends.script import parse
from optplan.fuzz import Budget, TargetSpec, run_campaign
from optplan.fuzz.brute import brute_force
from optplan.fuzz.properties import Failure
from optplan.fuzz.relax import use_after_kill
from optplan.fuzz.targets import over_time, problem_reproducer
from optplan.planners import get_planner
from optplan.problem import (
    Alias,
    Buffer,
    Interval,
    Memory,
    Problem,
    alias_classes,
    lower_bound,
    one_arena,
    read_csv,
)
from optplan.problem.plan import validate
from optplan.strategies import problems

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BROKEN = FIXTURES / "broken_planner.py"


def command(script: Path) -> str:
    # -S: no site packages, so each of the many runs starts quickly.
    return f"{sys.executable} -S {script} --capacity={{capacity}} --input={{input}} --output={{output}}"


def test_command_target_finds_and_shrinks_the_overlap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fuzz", "--command", command(BROKEN), "--examples", "100", "--out", str(tmp_path)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "overlap: buffers" in out and "1 failure" in out
    (reproducer,) = tmp_path.glob("command-overlap.csv")
    problem = read_csv(reproducer)
    # The smallest case: three buffers (the fixture only errs from three on), the last
    # one put back at 0 on top of an earlier one that is live with it.
    assert len(problem.buffers) == 3
    last = problem.buffers[-1]
    assert last.size > 0 and any(
        b.size > 0 and b.overlaps_in_time(last) for b in problem.buffers[:-1]
    )


def test_right_callable_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fuzz", "tests.fixtures.planners:stacked", "--examples", "60", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert "60 examples" in capsys.readouterr().out
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("function", "kinds"),
    [
        # Everything at 0 also moves pins, breaks aliases and overflows capacities.
        ("all_at_zero", {"overlap", "pinned", "alias", "capacity"}),
        ("boastful", {"beaten-optimum"}),
        ("defeatist", {"false-infeasible"}),
    ],
)
def test_wrong_callables_are_caught(tmp_path: Path, function: str, kinds: set[str]) -> None:
    spec = TargetSpec("callable", f"tests.fixtures.planners:{function}")
    outcome = run_campaign(spec, Budget(examples=200), tmp_path)
    (found,) = outcome.found
    assert found.failure.kind in kinds
    assert found.path.exists() and found.size <= 3


def test_python_reproducer_rejudges_the_problem(tmp_path: Path) -> None:
    spec = TargetSpec("callable", "tests.fixtures.planners:defeatist")
    (found,) = run_campaign(spec, Budget(examples=200, seed=1), tmp_path).found
    if found.path.suffix == ".py":
        namespace = runpy.run_path(str(found.path))
        assert isinstance(namespace["problem"], Problem)
    else:
        assert read_csv(found.path).buffers is not None


@pytest.mark.parametrize(
    "problem",
    [
        Problem((Buffer("a", 4, (Interval(0, 1),)),), memories=one_arena(8)),
        Problem(
            (Buffer("a", 4, (Interval(0, 2),), memories=("sram", "dram")),),
            memories=(Memory("sram", 4, cost=1), Memory("dram", None, 8, cost=10)),
        ),
    ],
    ids=["capacity", "two-memories"],
)
def test_a_python_reproducer_rebuilds_its_problem(tmp_path: Path, problem: Problem) -> None:
    suffix, text = problem_reproducer(problem, Failure("overlap", "a and b"), "planner greedy")
    path = tmp_path / f"found{suffix}"
    path.write_text(text)
    assert suffix == ".py" and runpy.run_path(str(path))["problem"] == problem


@pytest.mark.parametrize("planner", ["naive", "greedy", "cpsat"])
def test_own_planners_run_clean(tmp_path: Path, planner: str) -> None:
    outcome = run_campaign(TargetSpec("planner", planner), Budget(examples=40), tmp_path)
    assert [str(f.failure) for f in outcome.found] == []
    assert outcome.examples == 40


@pytest.mark.parametrize("planner", ["naive", "greedy", "spill", "cpsat"])
def test_own_planners_run_clean_on_several_memories(tmp_path: Path, planner: str) -> None:
    spec = TargetSpec("planner", planner, memories=True)
    outcome = run_campaign(spec, Budget(examples=60), tmp_path)
    assert [str(f.failure) for f in outcome.found] == []
    assert outcome.examples == 60


@pytest.mark.parametrize(
    ("function", "kinds"),
    [
        ("boastful_naive", {"beaten-optimum"}),
        ("overclaiming", {"bound-above-a-plan"}),
        ("defeatist", {"false-infeasible"}),
        # Offsets alone keep every buffer in the first memory, as all_at_zero_first does.
        ("all_at_zero", {"overlap", "memory", "capacity", "alignment"}),
        ("all_at_zero_first", {"overlap", "memory", "capacity", "alignment"}),
    ],
)
def test_wrong_callables_are_caught_on_several_memories(
    tmp_path: Path, function: str, kinds: set[str]
) -> None:
    spec = TargetSpec("callable", f"tests.fixtures.planners:{function}", memories=True)
    (found,) = run_campaign(spec, Budget(examples=300), tmp_path).found
    assert found.failure.kind in kinds, found.failure
    assert found.path.suffix == ".py" and found.size <= 2
    rejudged = runpy.run_path(str(found.path))["problem"]
    assert rejudged.objective == "traffic"


def test_memories_refuse_targets_of_one_arena(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fuzz", "--memories", "--command", "prog {input} {output}"]
    assert main(argv) == 2
    assert "--memories needs a planner or module:function target" in capsys.readouterr().err


def test_workers_share_the_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fuzz", "naive", "--examples", "30", "--workers", "2", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert "30 examples" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fuzz", "nonsense"], "unknown fuzz target 'nonsense'"),
        (["fuzz"], "give a TARGET"),
        (["fuzz", "--command", "prog {input}"], "--command must name {output}"),
        (["fuzz", "no_such_module_here:plan"], "cannot import 'no_such_module_here'"),
        (["fuzz", "tests.fixtures.planners:missing"], "has no function 'missing'"),
        (["fuzz", "greedy", "--examples", "0"], "--examples must be positive"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@settings(max_examples=30)
@given(problems(max_buffers=5, residues=True, pinned_aliases=True))
def test_brute_force_is_valid_and_no_worse_than_greedy(problem: Problem) -> None:
    if len(alias_classes(problem)) > 6:
        return
    plan = brute_force(problem)
    assert validate(problem, plan) == []
    assert lower_bound(problem) <= plan.arena <= get_planner("greedy")(problem).arena


def test_use_after_kill_is_reported() -> None:
    text = (
        "@R.function\n"
        'def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):\n'
        '    y: R.Tensor((2,), dtype="float32") = R.exp(x)\n'
        "    R.memory.kill_tensor(y)\n"
        '    z: R.Tensor((2,), dtype="float32") = R.exp(y)\n'
        "    return z\n"
    )
    failure = use_after_kill(parse(text))
    assert failure is not None and failure.kind == "use-after-kill" and "'y'" in failure.message


def test_tvm_writes_into_a_constant_and_the_fuzzer_finds_it(tmp_path: Path) -> None:
    pytest.importorskip("tvm", reason="apache-tvm is not installed (pip install -e '.[tvm]')")
    outcome = run_campaign(TargetSpec("tvm", "tvm"), Budget(examples=300), tmp_path)
    (found,) = outcome.found
    assert found.failure.kind == "constant-written"
    text = found.path.read_text()
    assert text.startswith("# constant-written: ")
    bindings = [line for line in text.splitlines() if " = " in line]
    assert 1 <= len(bindings) <= 10


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_one_updating_line_on_a_terminal_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for terminal, expected in ((True, True), (False, False)):
        stream = _Terminal() if terminal else io.StringIO()
        monkeypatch.setattr(sys, "stderr", stream)
        run_campaign(TargetSpec("planner", "naive"), Budget(examples=20), tmp_path)
        text = stream.getvalue()
        last = text.rsplit("\r", 1)[-1]
        assert last.startswith("fuzz planner naive: 20 examples") == expected
        assert text.count("\n") == (1 if expected else 0)


def test_time_budget_stops_the_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(["fuzz", "naive", "--time", "2", "--out", str(tmp_path)]) == 0
    assert time.monotonic() - started < 30
    assert "0 failures" in capsys.readouterr().out


def test_far_past_the_time_limit_is_a_failure() -> None:
    assert over_time(time.monotonic(), 1.0) is None
    late = over_time(time.monotonic() - 100, 1.0)
    assert late is not None and late.kind == "over-time"


def test_found_cpsat_keeps_a_view_at_a_residue_aligned() -> None:
    # Found by `optplan fuzz cpsat` and shrunk to this: cpsat placed b1 at 1.
    live = (Interval(0, 1),)
    problem = Problem((Buffer("b0", 0, live), Buffer("b1", 0, live, 2)), (Alias("b0", "b1", 1),))
    plan = get_planner("cpsat", time_limit=5.0)(problem)
    assert validate(problem, plan) == []
