"""Progress and Ctrl-C: a watched cpsat reports as it improves and, when stopped, returns
its best valid plan so far; `optplan plan` and `compare` under a real SIGINT."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from optplan.cli.terminal import progress_text, run_planner
from optplan.planners import get_planner
from optplan.planners.watch import Progress, Watch
from optplan.problem import Buffer, Interval, Problem, read_csv, write_csv
from optplan.problem.plan import Plan, Status, validate

ROOT = Path(__file__).resolve().parent.parent


def slow_problem(buffers: int = 300, *, pinned: bool = False) -> Problem:
    """Random lifetimes and sizes, on which cpsat uses its whole time limit: with 300
    buffers and a pin (so the exact search is skipped), CP-SAT stays at 90,897 above the
    live bytes, 88,296, after 20 s; with 600 buffers the search and CP-SAT stay at 158,754
    above 155,708."""
    rng = random.Random(0)
    drawn = []
    for k in range(buffers):
        start = rng.randrange(0, 150)
        size = rng.randint(1, 4096)
        drawn.append(Buffer(f"b{k}", size, (Interval(start, start + rng.randint(1, 30)),)))
    if pinned:
        drawn.append(Buffer("pinned", 1, (Interval(200, 201),), offset=0))
    return Problem(tuple(drawn))


@pytest.mark.parametrize("pinned", [False, True], ids=["in the search", "in CP-SAT"])
def test_a_stopped_cpsat_returns_its_best_plan_with_the_bound_so_far(pinned: bool) -> None:
    problem = slow_problem(300 if pinned else 600, pinned=pinned)
    heard: list[Progress] = []
    watch = Watch(on_progress=heard.append)
    threading.Timer(1.5, watch.stop).start()
    started = time.perf_counter()
    plan = get_planner("cpsat", time_limit=120.0, watch=watch)(problem)
    assert time.perf_counter() - started < 30.0  # not the time limit
    assert validate(problem, plan) == []
    assert plan.status is Status.FEASIBLE and plan.detail["interrupted"] is True
    assert plan.bound >= plan.lower_bound
    assert heard and heard[0].phase == "greedy" and heard[-1].phase == "done"
    assert heard[-1].arena == plan.arena and heard[-1].bound == plan.bound
    for before, after in itertools.pairwise(heard):
        assert after.arena <= before.arena and after.bound >= before.bound


def test_an_unwatched_or_finished_plan_says_nothing_of_interruption() -> None:
    problem = Problem((Buffer("a", 8, (Interval(0, 2),)), Buffer("b", 8, (Interval(1, 3),))))
    plan = get_planner("cpsat", time_limit=5.0, watch=Watch())(problem)
    assert plan.status is Status.OPTIMAL and "interrupted" not in plan.detail


def test_the_progress_line_is_drawn_in_place_and_finished(tmp_path: Path) -> None:
    """Off a terminal nothing is drawn; drawn, the line is rewritten after a carriage
    return and ends with one newline."""

    class Screen:
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

    def call(watch: Watch) -> Plan:
        watch.report(200, 100, "greedy")
        time.sleep(0.3)
        watch.report(150, 120, "search")
        time.sleep(0.3)
        return Plan({}, 150, Status.FEASIBLE, "x", 100, bound=120)

    screen = Screen()
    outcome = run_planner(call, "x", show=True, stream=screen)  # type: ignore[arg-type]
    assert outcome.plan is not None and not outcome.interrupted
    assert screen.text.startswith("\rx: arena 200 B, bound 100 B, gap 100.00% (greedy, ")
    assert "\rx: arena 150 B, bound 120 B, gap 25.00% (search, " in screen.text
    assert screen.text.endswith("\n") and screen.text.count("\n") == 1
    quiet = Screen()
    run_planner(call, "x", show=False, stream=quiet)  # type: ignore[arg-type]
    assert quiet.text == ""
    assert progress_text("cpsat", Progress(110, 100, "cp-sat", 0.0), 2.0) == (
        "cpsat: arena 110 B, bound 100 B, gap 10.00% (cp-sat, 2.0 s)"
    )


def _interrupt(args: list[str], tmp_path: Path, wait_for: str) -> subprocess.CompletedProcess[str]:
    """Run `optplan ARGS` with stderr on a terminal (where the "planning with" line and
    the progress show), send SIGINT a moment after `wait_for` shows there."""
    import pty

    terminal, child_end = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "optplan", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=child_end,
        text=True,
    )
    os.close(child_end)
    heard: list[bytes] = []
    seen = threading.Event()

    def drain() -> None:  # read all the time, so that a full terminal never blocks the child
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            heard.append(chunk)
            if wait_for.encode() in b"".join(heard):
                seen.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    while not seen.wait(0.1):
        assert process.poll() is None, f"optplan ended before {wait_for!r}: {heard}"
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    stdout, _ = process.communicate(timeout=60)
    reader.join(timeout=10)
    os.close(terminal)
    stderr = b"".join(heard).decode(errors="replace").replace("\r\n", "\n")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_ctrl_c_during_plan_prints_and_writes_the_best_plan_so_far(tmp_path: Path) -> None:
    problem = slow_problem(pinned=True)
    source = tmp_path / "slow.csv"
    source.write_text(write_csv(problem))
    out = tmp_path / "plan.json"
    args = ["plan", str(source), "--time-limit", "120", "-o", str(out)]
    done = _interrupt(args, tmp_path, "planning with cpsat")
    assert done.returncode == 130, done.stderr
    assert "interrupted" in done.stderr and "Traceback" not in done.stderr
    assert "cpsat feasible: arena" in done.stdout
    record = json.loads(out.read_text())
    assert record["status"] == "feasible" and record["interrupted"] is True
    again = read_csv(source)
    plan = Plan(record["offsets"], record["arena_bytes"], Status.FEASIBLE, "cpsat", 0)
    assert validate(again, plan) == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_ctrl_c_during_compare_prints_the_rows_it_finished(tmp_path: Path) -> None:
    source = tmp_path / "slow.csv"
    source.write_text(write_csv(slow_problem(pinned=True)))
    args = [
        "compare",
        str(source),
        "--planners",
        "naive,greedy,cpsat,tokens",
        "--time-limit",
        "120",
    ]
    done = _interrupt(args, tmp_path, "planning with cpsat")
    assert done.returncode == 130, done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines()[2:]]
    assert rows == ["naive", "greedy", "cpsat"]  # tokens never ran
    assert "Traceback" not in done.stderr


class _InterruptedWriter:
    """A stdout that receives a real SIGINT as the first piece of the answer is written,
    as when Ctrl-C is pressed a second time while a long record prints."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        if not self.parts:
            os.kill(os.getpid(), signal.SIGINT)
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        return None


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
@pytest.mark.parametrize("command", ["plan", "compare"])
def test_ctrl_c_while_the_answer_prints_leaves_it_whole(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from optplan.cli import main

    writer = _InterruptedWriter()
    monkeypatch.setattr(sys, "stdout", writer)
    source = str(ROOT / "examples" / "transformer_block.py")
    planners = ["--planners", "naive,greedy"] if command == "compare" else ["--planner", "greedy"]
    status = main([command, source, "--json", *planners])
    assert status == 130
    json.loads("".join(writer.parts))  # the whole record, not half of it
