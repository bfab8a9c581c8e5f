"""The first run is as good as the hundredth.

- What pip's build compiles (every `warm_kernels`) is every signature a plan calls: after
  the build, a first plan in a fresh copy of the sources compiles nothing, and the build
  needs no OR-Tools (pip's build environment has none).
- The stamp that says the kernels are compiled holds in a copy of the same sources and
  no longer once a kernel's source changes.
- Where the kernels were not compiled ahead, cpsat takes the search up when its
  background compile lands: driven by the answers `jit.ready` gives, not by a clock.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from optplan.planners import get_planner, jit
from optplan.planners.greedy import buckets, kernel, sweeps
from optplan.planners.search import floor, memo, order, runner
from optplan.problem import Alias, Buffer, Interval, Problem
from optplan.problem.plan import Status, validate
from optplan.strategies import problems

ROOT = Path(__file__).resolve().parents[1]
KERNEL_MODULES = (kernel, buckets, sweeps, floor, order, memo, runner)
needs_numba = pytest.mark.skipif(not jit.HAVE_NUMBA, reason="numba is not installed or disabled")
NUMBA_VERSION = tuple(int(part) for part in version("numba").split(".")[:2])


def trace(count: int, seed: int) -> list[Buffer]:
    """A CSV-like trace large enough for greedy's compiled loops."""
    state, buffers = seed, []
    for index in range(count):
        state = (state * 1103515245 + 12345) % (1 << 31)
        start, length = state % (count // 2), 1 + (state >> 8) % 40
        size = 1 + (state >> 16) % 4096
        buffers.append(Buffer(f"b{index}", size, (Interval(start, start + length),)))
    return buffers


def searched() -> Problem:
    """No placement meets the lower bound (4 bytes live at every point, 5 needed), so
    cpsat hands the problem to the search."""
    rows = [("a", 3, 0, 1), ("c", 2, 1, 2), ("b", 1, 0, 3), ("f", 1, 2, 3)]
    rows += [("g", 2, 3, 4), ("d", 1, 1, 4), ("e", 1, 2, 5), ("h", 3, 4, 5)]
    return Problem(tuple(Buffer(n, size, (Interval(s, e),)) for n, size, s, e in rows))


def signatures() -> dict[str, tuple[object, ...]]:
    """Every kernel's compiled signatures in this process."""
    return {
        f"{module.__name__}.{name}": tuple(value.signatures)
        for module in KERNEL_MODULES
        for name, value in vars(module).items()
        if hasattr(value, "signatures") and hasattr(value, "py_func")
    }


@needs_numba
def test_the_warm_up_compiles_every_signature_a_plan_calls() -> None:
    """Greedy from columns and from rectangles (an alias forces them), cpsat with both
    searches: no kernel gets a signature the warm-up did not compile."""
    for module in jit.KERNELS:
        importlib.import_module(module).warm_kernels()
    warmed = signatures()
    buffers = trace(2500, 1)
    for problem in (Problem(tuple(buffers)), Problem(tuple(buffers), (Alias("b0", "b1", 0),))):
        plan = get_planner("greedy")(problem)
        assert validate(problem, plan) == []
    plan = get_planner("cpsat", time_limit=10.0)(searched())
    assert plan.detail.get("search_parts") == 1
    assert signatures() == warmed


def child(code: str, tree: Path, *paths: Path) -> str:
    """Run `code` in a new Python whose optplan is the one in `tree`; its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (*paths, tree))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tree, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def copy_sources(tree: Path, *, caches: bool) -> None:
    """The package (with or without its __pycache__ folders) and the build backend."""
    ignore = None if caches else shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "optplan", tree / "optplan", ignore=ignore)
    shutil.copytree(ROOT / "build_backend", tree / "build_backend", ignore=ignore)


FIRST_PLANS = """
from numba.core import event
compiled = []
class Heard(event.Listener):
    def on_start(self, ev): compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev): pass
event.register("numba:compile", Heard())
from optplan.planners import get_planner, jit
from optplan.problem import Buffer, Interval, Problem
from optplan.problem.plan import validate
from tests.test_jit import searched, trace
print(all(jit.ready(module) for module in jit.KERNELS))
for problem, name in ((Problem(tuple(trace(2500, 2))), "greedy"), (searched(), "cpsat")):
    plan = get_planner(name)(problem)
    assert validate(problem, plan) == [] and plan.detail.get("search") != "compiling"
print(sorted(set(compiled)))
"""


@needs_numba
def test_the_build_compiles_every_kernel_ahead_without_or_tools(tmp_path: Path) -> None:
    """The build backend's step on a fresh copy (no cache), with OR-Tools unimportable
    as in pip's build environment; then a first greedy plan of a 2,500-buffer trace and
    a first cpsat plan that runs the search compile nothing."""
    tree = tmp_path / "tree"
    copy_sources(tree, caches=False)
    shutil.copytree(ROOT / "tests", tree / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    blocker = tmp_path / "blocker" / "ortools"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no OR-Tools where pip builds')\n")
    build = "import optplan_build\noptplan_build._ahead()\nprint('built')"
    assert child(build, tree, tree / "build_backend", blocker.parent) == "built"
    ready, compiled = child(FIRST_PLANS, tree).splitlines()
    assert (ready, compiled) == ("True", "[]")


READY = "from optplan.planners import jit; print(jit.ready(jit.GREEDY))"


@needs_numba
@pytest.mark.skipif("NUMBA_CACHE_DIR" in os.environ, reason="the cache is not beside the sources")
def test_the_stamp_holds_for_a_copy_of_the_same_sources_only(tmp_path: Path) -> None:
    """A copy, a new time on a source (numba 0.68 on keys its cache on contents): still
    compiled; a changed source: not."""
    jit.warm(jit.GREEDY)
    copy_sources(tmp_path, caches=True)
    assert child(READY, tmp_path) == "True"
    source = tmp_path / "optplan" / "planners" / "greedy" / "kernel.py"
    os.utime(source, (1e9, 1e9))
    if NUMBA_VERSION >= (0, 68):
        assert child(READY, tmp_path) == "True"
    source.write_text(source.read_text() + "# changed\n")
    assert child(READY, tmp_path) == "False"


def landing(after: int) -> Iterator[bool]:
    """`jit.ready`'s answers for the search: not compiled `after` times, then compiled."""
    yield from [False] * after
    while True:
        yield True


def test_cpsat_takes_the_search_up_when_its_compile_lands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not compiled when cpsat would run the search; compiled at its first look after."""
    answers = landing(1)
    started: list[str] = []
    monkeypatch.setattr(jit, "ready", lambda module: module != jit.SEARCH or next(answers))
    monkeypatch.setattr(jit, "compile_in_background", lambda module: started.append(module))
    problem = searched()
    plan = get_planner("cpsat", work=None, time_limit=30.0)(problem)
    assert started == [jit.SEARCH]
    assert "search_joined_s" in plan.detail and plan.detail["search_parts"] == 1
    assert (plan.arena, plan.status) == (5, Status.OPTIMAL)
    assert validate(problem, plan) == []


def test_cpsat_counting_work_compiles_the_search_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget counted in work cannot wait on a compile in the background (where the
    search joins would depend on the machine): the search is compiled first, then run."""
    warmed: list[str] = []
    monkeypatch.setattr(jit, "ready", lambda module: module != jit.SEARCH or bool(warmed))
    monkeypatch.setattr(jit, "warm", lambda module: warmed.append(module))
    monkeypatch.setattr(jit, "compile_in_background", lambda module: pytest.fail(module))
    problem = searched()
    plan = get_planner("cpsat", work=5.0)(problem)
    assert warmed == [jit.SEARCH] and plan.detail["search_parts"] == 1
    assert (plan.arena, plan.status) == (5, Status.OPTIMAL)
    assert validate(problem, plan) == []


@st.composite
def unreachable_bounds(draw: st.DrawFn) -> Problem:
    """Problems greedy alone does not settle, so cpsat wants the search: one or two
    copies of `searched()`, scaled and shifted in time, with a few buffers more, in any
    order."""
    scale, copies = draw(st.integers(1, 4)), draw(st.integers(1, 2))
    buffers = []
    for copy in range(copies):
        shift = draw(st.integers(0, 3)) + copy * draw(st.integers(2, 6))
        for b in searched().buffers:
            live = Interval(b.live[0].start + shift, b.live[0].end + shift)
            buffers.append(Buffer(f"{b.id}{copy}", b.size * scale, (live,)))
    extra = st.tuples(st.integers(0, 12), st.integers(1, 3), st.integers(1, 4))
    for k, (start, length, size) in enumerate(draw(st.lists(extra, max_size=4))):
        buffers.append(Buffer(f"x{k}", size, (Interval(start, start + length),)))
    order = draw(st.permutations(range(len(buffers))))
    return Problem(tuple(buffers[i] for i in order))


SETTLED = (Status.OPTIMAL, Status.INFEASIBLE)


@settings(max_examples=40)
@given(st.one_of(unreachable_bounds(), problems(8, capacities=True)), st.integers(0, 2))
@example(searched(), 1)
@example(searched(), 2)
def test_a_first_cpsat_plan_is_the_plan_of_a_warm_one(problem: Problem, after: int) -> None:
    """Whenever the compile lands (before cpsat looks, at its first look after the
    search was skipped, after a slice of CP-SAT), the plan is valid and, where both
    runs settled the problem, it is the warm run's: same status, same arena."""
    warm = get_planner("cpsat", time_limit=10.0)(problem)
    answers = landing(after)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jit, "ready", lambda module: module != jit.SEARCH or next(answers))
        patch.setattr(jit, "compile_in_background", lambda module: True)
        cold = get_planner("cpsat", time_limit=10.0)(problem)
    assert validate(problem, cold) == []
    if cold.status in SETTLED and warm.status in SETTLED:
        assert (cold.status, cold.arena) == (warm.status, warm.arena)


def test_the_notes_say_what_a_first_run_paid_and_nothing_after() -> None:
    """A run that compiled greedy's kernels, one made while the search compiled, one
    the search joined late: one note each; a run with everything compiled: none."""
    from optplan.cli.solving import compile_notes

    plan = get_planner("cpsat", time_limit=10.0)(searched())
    assert compile_notes(plan, []) == []
    (greedy,) = compile_notes(plan, [jit.GREEDY])
    assert "compiling greedy's kernels for this environment, once" in greedy
    compiling = dataclasses.replace(plan, detail={"search": "compiling"})
    (note,) = compile_notes(compiling, [])
    assert note.endswith("this plan is without them")
    joined = dataclasses.replace(plan, detail={"search_joined_s": 7.5})
    (note,) = compile_notes(joined, [])
    assert note.endswith("they joined this plan at 7.5 s")
