"""optplan.executorch.algorithm() inside ExecuTorch's MemoryPlanningPass, judged by running.

- Every model of `executorch_models` (CNNs, a U-Net, an MLP with skips, a GRU, a random
  DAG, attention, `cond`, `map`, mutable buffers, the reinplace pass on a KV-cache step,
  XNNPACK's padding, a dynamic batch, the two forced spec sets below, and four
  `transformers` models) is exported and lowered twice, with ExecuTorch's default planner
  and with optplan's; both `.pte` programs run in ExecuTorch's runtime on the same inputs
  (several calls in order for a model with state). Outputs must be equal to each other
  bit for bit and close to eager torch; optplan's buffers at or below ExecuTorch's; every
  planned graph's report consistent (at or above its proven bound); both `.pte` files
  pass `optplan check`.
- A suite of three algorithms (two of optplan's and ExecuTorch's greedy) keeps the
  smallest plan.
- Every bad argument of `algorithm()` is one error naming the argument, before any export.
- Two forced cases, read from the plan's detail: on `staggered` greedy misses the
  live-bytes bound and cpsat's exact search reaches it, so CP-SAT's own model never runs;
  on `gapped` no plan reaches that bound, the search lowers greedy's arena but leaves it
  above the bound it proved, and CP-SAT's model runs on that gap and proves the optimum.
- Random spec sets (hypothesis), including storage-backed specs (in-place and view
  outputs): the offsets written back pass the independent validator, views sit at their
  base plus their offset, and every offset is aligned.

Skipped without executorch (and torch; `transformers` for the four transformers).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("torch", reason="torch is not installed (pip install torch, CPU build)")
pytest.importorskip(
    "executorch", reason="executorch is not installed (pip install -e '.[executorch]')"
)

import optplan.executorch as oet
from optplan.cli import main
from optplan.planners import jit
from optplan.problem import Alias, Buffer, Interval, Memory, Problem
from optplan.problem.plan import Plan, Status, validate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import executorch_models
from executorch_fake import FakeSpec


def _reports() -> tuple[list[oet.PlanReport], Any]:
    reports: list[oet.PlanReport] = []
    return reports, reports.append


@pytest.mark.parametrize("name", list(executorch_models.BUILDERS))
def test_model_runs_the_same_in_no_more_memory(name: str, tmp_path: Path) -> None:
    import torch

    case = executorch_models.BUILDERS[name]()
    if case.needs:
        pytest.importorskip(case.needs, reason=f"{case.needs} is not installed")
    reports, hear = _reports()
    default = executorch_models.lower(case, None)
    ours = executorch_models.lower(case, [oet.algorithm(report=hear)])
    expected = executorch_models.run(default, case)
    got = executorch_models.run(ours, case)
    for want, have, reference in zip(expected, got, executorch_models.eager(case)):
        assert len(want) == len(have) == len(reference)
        assert all(torch.equal(a, b) for a, b in zip(want, have))
        assert all(torch.allclose(a, r, rtol=1e-4, atol=1e-5) for a, r in zip(have, reference))
    assert executorch_models.buffer_bytes(ours) <= executorch_models.buffer_bytes(default)
    assert reports and reports[-1].graph == "method"
    assert reports[-1].buffer_bytes == executorch_models.buffer_bytes(ours)
    assert reports[-1].executorch_bytes == executorch_models.buffer_bytes(default)
    for report in reports:
        assert report.bound_bytes <= report.buffer_bytes <= (report.executorch_bytes or 0)
    for program, label in ((default, "executorch"), (ours, "optplan")):  # optplan check
        (tmp_path / f"{label}.pte").write_bytes(program.buffer)
        assert main(["check", str(tmp_path / f"{label}.pte")]) == 0
    if name in ("vit", "encoder", "llama"):  # attention leaves room between its tensors
        assert executorch_models.buffer_bytes(ours) < executorch_models.buffer_bytes(default)
    if name in ("cond", "map"):  # the branches and the body are planned first
        assert [r.graph for r in reports].count("submodule") == (2 if name == "cond" else 1)


def test_paths_reach_the_planner() -> None:
    """The cases take the paths they are named for: a storage-backed spec from the
    reinplace pass, XNNPACK's padding, bytes a submodule set aside, a bounded shape."""
    from executorch.exir.memory_planning import greedy

    seen: dict[str, list[tuple[Any, ...]]] = {}

    def spy(alignment: int, specs: Any, module: Any, signature: Any, padding: int) -> Any:
        specs = list(specs)
        backed = sum(getattr(s, "storage_base", None) is not None for s in specs)
        bounded = sum(s.is_upper_bound_tensor for s in specs)
        reserved = sum(getattr(module, "input_mem_buffer_sizes", None) or [])
        seen[current].append((backed, padding, reserved, bounded))
        return greedy(alignment, specs, module, signature, padding)

    spy.__name__ = "spy"  # type: ignore[attr-defined]
    for current in ("kv_cache_reinplace", "mobilenet_xnnpack", "cond", "dynamic_batch"):
        seen[current] = []
        executorch_models.lower(executorch_models.BUILDERS[current](), [spy])
    assert any(backed for backed, *_ in seen["kv_cache_reinplace"])
    assert any(padding == 64 for _, padding, *_ in seen["mobilenet_xnnpack"])
    assert any(reserved for *_, reserved, _ in seen["cond"])
    assert any(bounded for *_, bounded in seen["dynamic_batch"])


def test_suite_of_three_keeps_the_smallest() -> None:
    """ExecuTorch's suite keys results by `__name__`: two optplan algorithms and its own
    greedy each count, and the smallest plan wins whatever the order."""
    from executorch.exir.memory_planning import greedy

    case = executorch_models.unet()
    algos = [oet.algorithm(), oet.algorithm("naive"), greedy]
    assert len({a.__name__ for a in algos}) == 3
    alone = [executorch_models.buffer_bytes(executorch_models.lower(case, [a])) for a in algos]
    suite = executorch_models.lower(case, algos)
    assert executorch_models.buffer_bytes(suite) == min(alone)
    assert alone[0] < alone[1]  # naive, last of optplan's, must not win
    reference = executorch_models.run(executorch_models.lower(case, None), case)
    import torch

    got = executorch_models.run(suite, case)
    assert all(torch.equal(a, b) for want, have in zip(reference, got) for a, b in zip(want, have))


def test_names_differ_per_configuration() -> None:
    names = {
        oet.algorithm().__name__,
        oet.algorithm(time_limit=3).__name__,
        oet.algorithm("greedy").__name__,
        oet.algorithm("naive").__name__,
        oet.algorithm("tokens").__name__,
    }
    assert len(names) == 5
    assert oet.algorithm(time_limit=2.5).__name__ == "optplan_cpsat_guard2.5s"


BAD_ARGUMENTS = [
    ({"time_limit": "10"}, TypeError, "time_limit must be a number of seconds, got str '10'"),
    ({"time_limit": None}, TypeError, "time_limit must be a number of seconds, got NoneType"),
    ({"time_limit": True}, TypeError, "time_limit must be a number of seconds, got bool"),
    ({"time_limit": 0}, ValueError, "time_limit must be a positive number of seconds, got 0"),
    ({"time_limit": -5}, ValueError, "time_limit must be a positive number of seconds, got -5"),
    ({"time_limit": float("nan")}, ValueError, "time_limit must be a positive number"),
    ({"planner": "naive", "time_limit": 5}, ValueError, "the naive planner has no time limit"),
    ({"planner": "tokens", "time_limit": 5}, ValueError, "the tokens planner has no time limit"),
    ({"planner": 10}, TypeError, r"a time limit is a keyword: algorithm\(time_limit=10\)"),
    ({"planner": "best"}, ValueError, "planner: unknown planner 'best'; choose from"),
    ({"planner": None}, TypeError, "planner must be a planner's name"),
    ({"report": 3}, TypeError, "report must be a callable that takes a PlanReport, got int"),
    ({"work": "3"}, TypeError, "work must be a number of units, got str '3'"),
    ({"work": None}, TypeError, "work must be a number of units, got NoneType"),
    ({"work": True}, TypeError, "work must be a number of units, got bool"),
    ({"work": 0}, ValueError, "work must be a positive number of units, got 0"),
    ({"work": float("inf")}, ValueError, "work must be a positive number of units, got inf"),
    ({"planner": "naive", "work": 5}, ValueError, "work: the naive planner takes no work"),
]


@pytest.mark.parametrize(("kwargs", "kind", "message"), BAD_ARGUMENTS)
def test_bad_argument_is_one_clear_error(kwargs: dict[str, Any], kind: type, message: str) -> None:
    planner = kwargs.pop("planner", "cpsat")
    with pytest.raises(kind, match=message):
        oet.algorithm(planner, **kwargs)


def test_positional_number_is_refused_before_any_export() -> None:
    with pytest.raises(TypeError, match=r"algorithm\(time_limit=10\)"):
        oet.algorithm(10)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        oet.algorithm("cpsat", 10)  # type: ignore[misc]
    with pytest.raises(ValueError, match="the naive planner has no time limit"):
        oet.Algorithm("naive", 5.0)


def test_report_is_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    case = executorch_models.cnn()
    with caplog.at_level(logging.INFO, logger="optplan.integrations.executorch"):
        program = executorch_models.lower(case, [oet.algorithm("greedy")])
    lines = [r.getMessage() for r in caplog.records if "method: greedy" in r.getMessage()]
    assert len(lines) == 1
    assert f"{executorch_models.buffer_bytes(program)} bytes (bound" in lines[0]
    assert "ExecuTorch's greedy" in lines[0]


def test_forced_search_runs_inside_an_export() -> None:
    """`staggered`'s specs defeat every greedy order of optplan's: cpsat runs its exact
    search inside the export, which reaches the live-bytes bound, so CP-SAT's own model
    has nothing left to do; the report shows greedy's arena and the search's."""
    import torch

    jit.warm("optplan.planners.search")  # as the benchmarks do: no limit pays the compile
    reports, hear = _reports()
    case = executorch_models.staggered()
    program = executorch_models.lower(case, [oet.algorithm(time_limit=10, report=hear)])
    (report,) = reports
    detail = report.detail["1"]
    assert isinstance(detail, dict)
    assert detail["search_parts"] == 1
    assert detail["search_arena"] < detail["greedy_arena"]
    assert detail["search_arena"] == detail["search_bound"] and detail["rounds"] == 0
    assert report.status == "optimal"
    assert report.buffer_bytes == report.bound_bytes < (report.executorch_bytes or 0)
    (got,), (reference,) = executorch_models.run(program, case), executorch_models.eager(case)
    assert all(torch.allclose(a, r) for a, r in zip(got, reference))


def test_forced_cpsat_model_runs_inside_an_export(tmp_path: Path) -> None:
    """`gapped`'s specs have no plan at the live-bytes bound: inside the export cpsat's
    exact search lowers greedy's arena but leaves it above the bound it proved, and
    CP-SAT's own model then runs on that gap and proves the optimum. The program
    passes `optplan check`; its outputs equal ExecuTorch's own plan's bit for bit and
    eager torch's."""
    import torch

    jit.warm("optplan.planners.search")  # as the benchmarks do: no limit pays the compile
    reports, hear = _reports()
    case = executorch_models.gapped()
    ours = executorch_models.lower(case, [oet.algorithm(time_limit=10, report=hear)])
    (report,) = reports
    detail = report.detail["1"]
    assert isinstance(detail, dict)
    assert detail["search_parts"] == 1  # the search placed the part anew ...
    assert detail["search_bound"] < detail["search_arena"] < detail["greedy_arena"]
    assert detail["rounds"] >= 1 and detail["parts_solved"] >= 1  # ... and CP-SAT ran on it
    assert report.status == "optimal"
    assert detail["search_bound"] < report.bound_bytes == report.buffer_bytes
    assert report.buffer_bytes < (report.executorch_bytes or 0)
    default = executorch_models.lower(case, None)
    (want,), (have,) = executorch_models.run(default, case), executorch_models.run(ours, case)
    (reference,) = executorch_models.eager(case)
    assert all(torch.equal(a, b) for a, b in zip(want, have))
    assert all(torch.allclose(a, r, rtol=1e-4, atol=1e-5) for a, r in zip(have, reference))
    (tmp_path / "gapped.pte").write_bytes(ours.buffer)
    assert main(["check", str(tmp_path / "gapped.pte")]) == 0


@st.composite
def spec_sets(draw: st.DrawFn) -> list[FakeSpec]:
    specs = []
    for _ in range(draw(st.integers(1, 12))):
        start = draw(st.integers(0, 20))
        spec = FakeSpec(draw(st.integers(0, 300)), [start, start + draw(st.integers(0, 6))],
                        draw(st.sampled_from([None, 1, 2])))  # fmt: skip
        bases = [s for s in specs if s.nbytes > 0]  # of any mem_id: the view follows its base
        if bases and draw(st.booleans()):  # an in-place or view output inside a base
            base = draw(st.sampled_from(bases))
            spec.nbytes = draw(st.integers(1, base.nbytes))
            spec.storage_base, spec.lifetime = base, list(base.lifetime)
        specs.append(spec)
    return specs


@settings(deadline=None)
@given(spec_sets(), st.sampled_from([1, 16, 64]), st.integers(0, 64),
       st.sampled_from(["greedy", "naive", "tokens"]))  # fmt: skip
def test_offsets_written_back_pass_the_validator(
    specs: list[FakeSpec], alignment: int, padding: int, planner: str
) -> None:
    class Module:
        input_mem_buffer_sizes = (0, 32)  # bytes a control-flow submodule set aside

    def home(spec: FakeSpec) -> int:  # a storage-backed spec lives in its root's mem_id
        while spec.storage_base is not None:
            spec = spec.storage_base
        return 1 if spec.mem_id is None else spec.mem_id

    result = oet.algorithm(planner)(alignment, specs, Module(), None, padding)
    for mem_id in {home(s) for s in specs}:
        group = [s for s in specs if home(s) == mem_id]
        placed = {str(k): result.spec_dict[s] for k, s in enumerate(group)}
        reserved = 32 if mem_id == 1 else 0
        buffers = tuple(
            Buffer(
                str(k), s.allocated_memory, (Interval(s.lifetime[0], s.lifetime[1] + 1),), alignment
            )
            for k, s in enumerate(group)
            if s.allocated_memory > 0
        )
        index = {id(s): k for k, s in enumerate(group)}
        aliases = tuple(
            Alias(str(index[id(s.storage_base)]), str(k), s.storage_base_offset)
            for k, s in enumerate(group)
            if s.storage_base is not None
        )
        offsets = {b.id: placed[b.id].mem_offset - reserved for b in buffers}
        assert all(placed[b.id].mem_offset >= reserved for b in buffers)
        arena = result.bufsizes[mem_id] - reserved - padding
        plan = Plan(offsets, arena, Status.FEASIBLE, "written", 0)
        assert validate(Problem(buffers, aliases), plan) == []
        assert all(r.mem_id == mem_id for r in placed.values())


@pytest.mark.parametrize("planner", ["cpsat", "greedy"])
def test_a_view_off_the_alignment_is_named(planner: str) -> None:
    """ExecuTorch requires a storage-backed spec's place (its base's offset plus
    `storage_base_offset`) to be a multiple of the alignment; one at byte 12 of its base
    under alignment 16 can never be, so it is one error that names it, not an
    "infeasible" plan."""
    base, view = FakeSpec(64, [0, 3], None), FakeSpec(16, [1, 2], None)
    view.storage_base, view.storage_base_offset = base, 12

    class Module:
        input_mem_buffer_sizes = None

    with pytest.raises(ValueError, match=r"storage_base_offset 12 .* alignment 16"):
        oet.algorithm(planner)(16, [base, view], Module(), None, 0)


def test_the_pte_is_the_same_bytes_whatever_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The algorithm stops on work: the program lowered with the budget's clock jumping a
    thousand seconds at every reading is byte for byte the one lowered with the real one."""
    import itertools
    import time
    import types

    from optplan import budget

    case = executorch_models.BUILDERS["encoder"]()
    algo = oet.algorithm(time_limit=1e12)  # no guard within reach of the jumps
    calm = executorch_models.lower(case, [algo]).buffer
    readings = itertools.count()
    jumping = types.SimpleNamespace(perf_counter=lambda: time.monotonic() + 1e3 * next(readings))
    monkeypatch.setattr(budget, "time", jumping)
    assert executorch_models.lower(case, [algo]).buffer == calm


def test_names_say_the_work_and_a_guard_only_when_not_the_default() -> None:
    """The suite's key names what sets the plan (the work), not the default guard."""
    assert oet.algorithm().__name__ == "optplan_cpsat"
    assert oet.algorithm("greedy").__name__ == "optplan_greedy"
    assert oet.algorithm(work=3, time_limit=5).__name__ == "optplan_cpsat_3w_guard5s"
    assert oet.algorithm("naive").__name__ == "optplan_naive"


def test_work_is_one_budget_per_graph_and_checked() -> None:
    assert oet.algorithm().work == oet.DEFAULT_WORK
    assert oet.algorithm(work=3).__name__ == "optplan_cpsat_3w"
    assert oet.algorithm("naive").work is None
    assert oet.algorithm("greedy", work=3).work == 3  # greedy takes a budget and a guard
    with pytest.raises(ValueError, match="work: the naive planner takes no work"):
        oet.algorithm("naive", work=3)
    with pytest.raises(ValueError, match="work must be a positive number"):
        oet.algorithm(work=0)


@pytest.mark.parametrize("planner", ["cpsat", "greedy"])
def test_a_view_stays_inside_its_base_pinned_elsewhere(planner: str) -> None:
    """A storage-backed spec whose own mem_id is unset while its base is pinned to memory
    3 lives where its base lives (ExecuTorch's greedy gives it the base's mem_id): in
    memory 3, at the base's offset plus `storage_base_offset`, adding no bytes."""
    base, view = FakeSpec(96, [0, 3], 3), FakeSpec(32, [0, 3], None)
    view.storage_base, view.storage_base_offset = base, 64
    other = FakeSpec(16, [1, 2], None)

    class Module:
        input_mem_buffer_sizes = None

    result = oet.algorithm(planner)(16, [base, view, other], Module(), None, 0)
    placed, under = result.spec_dict[view], result.spec_dict[base]
    assert placed.mem_id == under.mem_id == 3
    assert placed.mem_offset == under.mem_offset + 64
    assert result.bufsizes[3] == 96
    assert result.bufsizes[1] == 16


@pytest.mark.parametrize("planner", ["cpsat", "greedy"])
def test_a_view_whose_base_is_missing_is_named(planner: str) -> None:
    """A storage-backed spec whose base is not among the specs handed over (left out by
    `alloc_graph_input=False`, or a shared mutable buffer) cannot be placed inside it:
    one error that names the spec, never a plan of its own."""
    base, view = FakeSpec(96, [0, 3], None), FakeSpec(32, [1, 2], None)
    view.storage_base = base

    class Module:
        input_mem_buffer_sizes = None

    with pytest.raises(ValueError, match=r"storage-backed spec .*32 bytes.* base is not"):
        oet.algorithm(planner)(16, [view], Module(), None, 0)
    with pytest.raises(ValueError, match=r"storage-backed spec .* base is not"):
        oet.algorithm(planner, memories=[Memory("fast", 1024), Memory("slow")])(
            16, [view], Module(), None, 0
        )
