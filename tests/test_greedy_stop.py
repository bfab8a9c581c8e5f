"""Greedy's two compiled loops agree, and its runs stop on the guard and only then.

The tree and the bucket loop (`greedy.kernel`, `greedy.buckets`) must give the same offsets
for every order and fit, and those offsets must make a valid plan, on drawn problems with
the awkward cases (pins, alignments, classes live over two intervals, zero sizes, a few
lifetimes across the whole run among short ones). A stop flag never raised changes no
offset; a raised one (a time limit, a stopped watch) cuts the runs, leaves a valid plan
and says so.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from optplan.planners.common import make_form, make_plan
from optplan.planners.greedy import FITS, ORDERS, Greedy
from optplan.planners.greedy import kernel as greedy_kernel
from optplan.planners.greedy.stop import STOPPED, flag_of
from optplan.planners.watch import Watch
from optplan.problem import Buffer, Interval, Problem
from optplan.problem.plan import validate
from optplan.strategies import problems

pytestmark = pytest.mark.skipif(not greedy_kernel.COMPILED, reason="numba is not installed")
ROOT = Path(__file__).resolve().parent.parent


def crowded(count: int, live: int, seed: int) -> Problem:
    """`count` buffers, buffer k starting at k and living 2 to 2 * live points, so about
    `live` are live at once (as `benchmarks/greedy_concurrency.py` draws them)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 2 * live + 1, count).tolist()
    sizes = rng.integers(1, 1 << 16, count).tolist()
    return Problem(
        tuple(
            Buffer(f"b{k}", size, (Interval(k, k + length),))
            for k, (length, size) in enumerate(zip(lengths, sizes))
        )
    )


@st.composite
def traces(draw: st.DrawFn) -> Problem:
    """Short lifetimes with a few across the whole run, equal and zero sizes, alignments:
    the shapes where the loops' bookkeeping differs most (many buckets a query)."""
    count = draw(st.integers(1, 60))
    span = draw(st.integers(1, 40))
    buffers = []
    for k in range(count):
        start = draw(st.integers(0, span))
        length = draw(st.sampled_from((1, 1, 2, 3, 5, span + 1)))
        size = draw(st.sampled_from((0, 1, 8, 8, 24, 100)))
        alignment = draw(st.sampled_from((1, 1, 4, 16)))
        buffers.append(Buffer(f"t{k}", size, (Interval(start, start + length),), alignment))
    return Problem(tuple(buffers))


def assert_loops_agree(problem: Problem) -> None:
    form = make_form(problem)
    if form.fault is not None:
        return
    for order in ORDERS:
        for fit in FITS:
            offsets = [r.pin if r.pin is not None else r.lift(0) for r in form.rects]
            for part in form.parts:
                tree = greedy_kernel.Compiled.build(list(part), "tree")
                buckets = greedy_kernel.Compiled.build(list(part), "buckets")
                assert tree is not None and buckets is not None
                sequence = tree.sequence(order)
                placed = tree.whole(sequence, fit).tolist()
                assert buckets.whole(sequence, fit).tolist() == placed, (order, fit)
                for rect, offset in zip(part, placed):
                    offsets[rect.index] = offset
            plan = make_plan(form, "greedy", offsets, started=time.perf_counter())
            assert validate(problem, plan) == [], (order, fit)


@settings(max_examples=150, deadline=None)
@given(problems(max_buffers=14, pins=True, aliases=True, residues=True))
def test_both_loops_place_drawn_problems_alike_and_validly(problem: Problem) -> None:
    assert_loops_agree(problem)


@settings(max_examples=150, deadline=None)
@given(traces())
@example(Problem((Buffer("a", 8, (Interval(0, 1),)), Buffer("b", 0, (Interval(0, 1),)))))
@example(
    Problem(
        tuple(Buffer(f"s{k}", 8, (Interval(k, k + 1),)) for k in range(20))
        + (Buffer("long", 8, (Interval(0, 21),)),)
    )
)
def test_both_loops_place_awkward_traces_alike_and_validly(problem: Problem) -> None:
    assert_loops_agree(problem)


@pytest.mark.parametrize("live", [3, 40, 400])
def test_random_traces_take_the_bucket_loop_and_agree_with_the_tree(live: int) -> None:
    problem = crowded(2500, live, live)
    (part,) = make_form(problem).parts
    auto = greedy_kernel.Compiled.build(list(part))
    assert auto is not None and auto.buckets
    assert_loops_agree(problem)


@settings(max_examples=10, deadline=None)
@given(st.integers(2000, 2400), st.sampled_from((3, 40, 400)), st.integers(0, 2**16))
def test_a_far_guard_gives_the_plan_of_no_guard(count: int, live: int, seed: int) -> None:
    problem = crowded(count, live, seed)
    plain = Greedy()(problem)
    guarded = Greedy(time_limit=3600.0, watch=Watch())(problem)
    assert validate(problem, guarded) == []
    assert guarded.offsets == plain.offsets
    assert "cut" not in guarded.detail and "interrupted" not in guarded.detail


@pytest.mark.parametrize("live", [10, 1000])
def test_a_stopped_watch_cuts_the_runs_and_the_plan_says_so(live: int) -> None:
    problem = crowded(3000, live, 0)
    watch = Watch()
    watch.stop()
    plan = Greedy(watch=watch)(problem)
    assert plan.status.has_plan and validate(problem, plan) == []
    assert plan.detail["interrupted"] is True
    assert plan.detail["order"] == "naive"


def test_a_raised_flag_cuts_a_compiled_run() -> None:
    (part,) = make_form(crowded(3000, 100, 1)).parts
    for kernel in ("tree", "buckets"):
        compiled = greedy_kernel.Compiled.build(list(part), kernel)
        assert compiled is not None
        flag = flag_of()
        flag[0] = STOPPED
        assert compiled.place(compiled.sequence("size"), "first", flag) is None


def test_a_stopped_watch_cuts_the_rectangle_path() -> None:
    # A buffer live over two intervals keeps the problem off the columns path.
    crowd = crowded(2500, 1000, 2)
    split_buffer = Buffer("split", 64, (Interval(0, 5), Interval(900, 905)))
    problem = Problem((*crowd.buffers, split_buffer))
    watch = Watch()
    watch.stop()
    plan = Greedy(watch=watch)(problem)
    assert plan.status.has_plan and validate(problem, plan) == []
    assert plan.detail["interrupted"] is True


def test_a_time_limit_cut_is_reported() -> None:
    # Every run here takes far longer than the limit, so the guard must cut one.
    problem = crowded(20_000, 3000, 3)
    plan = Greedy(time_limit=0.05)(problem)
    assert plan.status.has_plan and validate(problem, plan) == []
    assert plan.detail["cut"] is True


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_on_the_command_line_ends_greedy_with_its_best_plan(tmp_path: Path) -> None:
    # Greedy's runs on this trace take many seconds; one Ctrl-C must end them (the
    # loops hold no GIL and poll the flag), print the plan so far and exit 130.
    rng = np.random.default_rng(4)
    count = 100_000  # about 10,000 live: a full run takes well past the signal
    ends = np.arange(count) + rng.integers(2, 20_001, count)
    sizes = rng.integers(1, 1 << 20, count)
    rows = "".join(f"{k},{k},{e},{z}\n" for k, (e, z) in enumerate(zip(ends, sizes)))
    trace = tmp_path / "crowded.csv"
    trace.write_text("id,lower,upper,size\n" + rows)
    command = [sys.executable, "-m", "optplan", "plan", str(trace), "--planner", "greedy"]
    child = subprocess.Popen(
        [*command, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        # A shell's background job ignores SIGINT, and its children inherit that.
        preexec_fn=_default_sigint,  # noqa: PLW1509 - one call, no lock taken, then exec
    )
    time.sleep(10.0)  # past reading the trace and building the loop
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    record = json.loads(out)
    assert record["interrupted"] is True and record["arena_bytes"] > 0
