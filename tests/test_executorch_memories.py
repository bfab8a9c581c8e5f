"""optplan.executorch.algorithm(memories=...): fast and slow memory ids chosen inside ExecuTorch.

- Three real exports (`executorch_models`: a CNN; the KV-cache step through the reinplace
  pass, with mutable buffers, storage-backed specs and three calls in order; `cond`,
  whose branches are planned first and set bytes aside in each id) over a fast memory of
  half the bytes ExecuTorch plans and an unbounded slow one at ten times the cost. In the
  same export ExecuTorch's own `BankedGreedy` (fastest bank first, largest first) plans
  the same specs; `judge` judges both. The `.pte` runs with outputs equal to ExecuTorch's
  own plan bit for bit and close to eager torch; every id within its capacity; optplan's
  traffic at most BankedGreedy's on every planned graph; `optplan check` accepts it.
- A capacity no plan can meet: status infeasible, the reason naming the point (and its
  node) and the tensors live there, the over-full id marked, a warning logged; the `.pte`
  still runs (its buffers say what the memories would need), where BankedGreedy fails.
- Every bad `memories` argument is one error naming it, before any export.
- Random spec sets (hypothesis): pins to declared and undeclared ids, storage-backed
  specs, bytes set aside by a submodule, padding, two or three memories. Every result is
  rebuilt here as one problem per memory id and judged by `validate`; every id within
  its capacity when the status has a plan; the traffic recounted; and on tiny sets equal
  to a brute force of static placements where the status says optimal (none where it
  says infeasible).

Skipped without executorch (and torch).
"""

from __future__ import annotations

import logging
import math
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch", reason="torch is not installed (pip install torch, CPU build)")
pytest.importorskip(
    "executorch", reason="executorch is not installed (pip install -e '.[executorch]')"
)

import optplan.executorch as oet
from optplan.cli import main
from optplan.problem import Alias, Buffer, Interval, Memory, Problem
from optplan.problem.plan import Plan, Status, validate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import executorch_banked
import executorch_models
from executorch_fake import FakeSpec

from optplan.fuzz.tiers_brute import least_traffic

SLOW_COST = 10


def _tiers(fast_bytes: int, slow_bytes: int | None = None) -> list[Memory]:
    return [Memory("tcm", fast_bytes), Memory("psram", slow_bytes, cost=SLOW_COST)]


def _sizes(program: Any) -> list[int]:
    return list(program.executorch_program.execution_plan[0].non_const_buffer_sizes)


def _equal_outputs(program: Any, reference: Any, case: executorch_models.Case) -> bool:
    import torch

    got = executorch_models.run(program, case)
    want = executorch_models.run(reference, case)
    eager = executorch_models.eager(case)
    return all(
        len(a) == len(b) == len(e)
        and all(torch.equal(x, y) for x, y in zip(a, b))
        and all(torch.allclose(x, z, rtol=1e-4, atol=1e-5) for x, z in zip(a, e))
        for a, b, e in zip(got, want, eager)
    )


@pytest.mark.parametrize("name", ["cnn", "kv_cache_reinplace", "cond"])
def test_fast_and_slow_ids_run_the_same_for_less_traffic(name: str, tmp_path: Path) -> None:
    case = executorch_models.BUILDERS[name]()
    default = executorch_models.lower(case, None)
    fast = sum(_sizes(default)) // 2 // 16 * 16
    memories = _tiers(fast)
    reports: list[oet.PlanReport] = []
    ours = oet.algorithm(memories=memories, time_limit=10, report=reports.append)
    beside = executorch_banked.Beside(
        ours, memories, {"banked": executorch_banked.banked_greedy(memories)}
    )
    program = executorch_models.lower(case, [beside])
    assert _equal_outputs(program, default, case)
    sizes = _sizes(program)
    assert len(sizes) == 3 and sizes[1] <= fast  # ids 1 (fast) and 2 (slow); 0: constants
    assert len(reports) == len(beside.calls) == (3 if name == "cond" else 1)
    for report, row in zip(reports, beside.calls):
        mine, theirs = row["optplan"], row["banked"]
        assert mine.violations == () and theirs.violations == ()
        assert mine.fits and theirs.fits and report.fits
        assert report.status in ("optimal", "feasible") and report.reason == ""
        assert report.traffic == mine.traffic <= theirs.traffic
        assert report.traffic_bound is not None and report.traffic_bound <= report.traffic
        assert report.traffic <= (report.traffic_all_in_slow or 0)
        assert [u.mem_id for u in report.memories] == [1, 2]
    method = reports[-1]
    assert [u.buffer_bytes for u in method.memories] == sizes[1:]
    assert method.buffer_bytes == sum(sizes) and method.bound_bytes <= method.buffer_bytes
    assert method.memories[0].specs > 0  # the fast memory is used
    (tmp_path / "tiers.pte").write_bytes(program.buffer)
    assert main(["check", str(tmp_path / "tiers.pte")]) == 0


def test_capacity_no_plan_meets_is_a_status(caplog: pytest.LogCaptureFixture) -> None:
    """The CNN has 16384 bytes live at once; 4096 fast and 8192 slow cannot hold them."""
    from executorch.exir.banked_memory_planning import BankPlacementError

    case = executorch_models.cnn()
    memories = _tiers(4096, 8192)
    reports: list[oet.PlanReport] = []
    ours = oet.algorithm(memories=memories, time_limit=10, report=reports.append)
    beside = executorch_banked.Beside(
        ours, memories, {"banked": executorch_banked.banked_greedy(memories)}
    )
    with caplog.at_level(logging.WARNING, logger="optplan.integrations.executorch"):
        program = executorch_models.lower(case, [beside])
    (report,) = reports
    assert report.status == "infeasible" and not report.fits
    assert report.reason.startswith("at point ") and "(node " in report.reason
    assert (
        "bytes of tensors are live that only tcm and psram may hold (12288 bytes)" in report.reason
    )
    assert "aten_convolution_default" in report.reason
    assert [u.fits for u in report.memories] == [True, False]
    assert report.memories[1].buffer_bytes == _sizes(program)[2] > 8192
    ours_logged = [r for r in caplog.records if r.name == "optplan.integrations.executorch"]
    (line,) = [r.getMessage() for r in ours_logged if r.levelno == logging.WARNING]
    assert "OVER CAPACITY" in line and "no plan within the capacities: at point" in line
    assert isinstance(beside.calls[0]["banked"], BankPlacementError)
    assert _equal_outputs(program, executorch_models.lower(case, None), case)


BAD_MEMORIES: list[tuple[dict[str, Any], type, str]] = [
    ({"memories": Memory("tcm", 1024)}, TypeError, r"got one: memories=\[Memory"),
    ({"memories": "tcm=256KiB"}, TypeError, "memories must be a list of Memory values, fast first"),
    ({"memories": []}, ValueError, "memories: give at least one memory"),
    ({"memories": ["tcm"]}, TypeError, "memories: mem_id 1 must be an optplan.problem.Memory"),
    (
        {"memories": [Memory("tcm", 0)]},
        ValueError,
        "'tcm' has capacity 0; a capacity is a positive",
    ),
    ({"memories": [Memory("tcm", -5)]}, ValueError, "'tcm' has capacity -5"),
    ({"memories": [Memory("tcm", 1.5)]}, ValueError, "'tcm' has capacity 1.5"),  # type: ignore[arg-type]
    ({"memories": [Memory("tcm", 64, cost=-1)]}, ValueError, "'tcm' has cost -1"),
    ({"memories": [Memory("tcm", 64, alignment=0)]}, ValueError, "'tcm' has alignment 0"),
    ({"memories": [Memory("a", 64), Memory("a")]}, ValueError, "memory 'a' appears twice"),
    ({"memories": [Memory("", 64)]}, ValueError, "mem_id 1 has a memory with an empty name"),
    ({"memories": {0: Memory("tcm", 64)}}, ValueError, "mem_id 0 is not a planned buffer"),
    ({"memories": {"1": Memory("tcm", 64)}}, TypeError, "a mem_id is an int, got str '1'"),
    ({"planner": "spill", "memories": _tiers(64)}, ValueError, "planner: spill copies tensors"),
]


@pytest.mark.parametrize(("kwargs", "kind", "message"), BAD_MEMORIES)
def test_bad_memories_are_one_clear_error(kwargs: dict[str, Any], kind: type, message: str) -> None:
    planner = kwargs.pop("planner", "cpsat")
    with pytest.raises(kind, match=message):
        oet.algorithm(planner, **kwargs)


def test_names_tell_memories_apart() -> None:
    names = {
        oet.algorithm().__name__,
        oet.algorithm(memories=_tiers(1024)).__name__,
        oet.algorithm(memories=_tiers(2048)).__name__,
        oet.algorithm(memories={2: Memory("tcm", 1024), 3: Memory("psram", cost=10)}).__name__,
        oet.algorithm("greedy", memories=_tiers(1024)).__name__,
    }
    assert len(names) == 5
    assert oet.algorithm(memories=_tiers(1024)).memories == (
        (1, _tiers(1024)[0]),
        (2, _tiers(1024)[1]),
    )


# ---------------------------------------------------------------------------- random spec sets


UNDECLARED = 7  # a pool a custom pass pinned specs to without declaring it


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[FakeSpec], list[Memory], list[int], int, int]:
    memories = []
    for k in range(draw(st.integers(1, 3))):
        capacity = draw(st.one_of(st.none(), st.integers(64, 1200)))
        alignment = draw(st.sampled_from([1, 32]))
        memories.append(Memory(f"m{k}", capacity, alignment, draw(st.integers(0, 10))))
    pins = [None, None, None, *range(1, len(memories) + 1), UNDECLARED]
    specs: list[FakeSpec] = []
    for _ in range(draw(st.integers(1, 7))):
        start = draw(st.integers(0, 8))
        spec = FakeSpec(draw(st.integers(0, 300)), [start, start + draw(st.integers(0, 4))],
                        draw(st.sampled_from(pins)))  # fmt: skip
        bases = [s for s in specs if s.nbytes > 0 and s.storage_base is None]
        if bases and draw(st.booleans()):  # an in-place or view output inside its base
            base = draw(st.sampled_from(bases))
            spec.nbytes, spec.mem_id = draw(st.integers(1, base.nbytes)), None
            spec.storage_base, spec.lifetime = base, list(base.lifetime)
        specs.append(spec)
    reserved = [0, draw(st.sampled_from([0, 48])), draw(st.sampled_from([0, 80]))]
    return specs, memories, reserved, draw(st.sampled_from([1, 16])), draw(st.sampled_from([0, 64]))


def _root(spec: FakeSpec) -> FakeSpec:
    return spec if spec.storage_base is None else _root(spec.storage_base)


def _start(reserved: list[int], mem_id: int, memory: Memory, alignment: int) -> int:
    before = reserved[mem_id] if mem_id < len(reserved) else 0
    step = math.lcm(alignment, memory.alignment)
    return -(-before // step) * step


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["cpsat", "greedy", "naive", "tokens"]))
def test_random_specs_are_placed_within_capacities(
    case: tuple[list[FakeSpec], list[Memory], list[int], int, int], planner: str
) -> None:
    specs, memories, reserved, alignment, padding = case
    module = SimpleNamespace(graph=SimpleNamespace(nodes=[]), input_mem_buffer_sizes=reserved)
    reports: list[oet.PlanReport] = []
    options: dict[str, Any] = {"time_limit": 5} if planner == "cpsat" else {}
    algo = oet.algorithm(planner, memories=memories, report=reports.append, **options)
    result = algo(alignment, specs, module, None, padding)
    (report,) = reports
    event(f"status {report.status}")
    by_id = {k: m for k, m in enumerate(memories, start=1)}
    if any(s.mem_id == UNDECLARED for s in specs):
        by_id[UNDECLARED] = Memory(f"mem_id {UNDECLARED}", None, 1, 0)
    traffic = 0
    for mem_id, memory in by_id.items():
        placed = [s for s in specs if result.spec_dict[s].mem_id == mem_id]
        start = _start(reserved, mem_id, memory, alignment)
        _judge_one_id(placed, result, start, math.lcm(alignment, memory.alignment))
        used = [s for s in placed if s.allocated_memory > 0]
        if used:
            top = max(result.spec_dict[s].mem_offset + s.allocated_memory for s in used)
            assert result.bufsizes[mem_id] == top + padding
        if report.status in ("optimal", "feasible") and memory.capacity is not None:
            assert result.bufsizes[mem_id] <= memory.capacity
        traffic += sum(2 * s.allocated_memory * memory.cost for s in used)  # one write, one read
    for spec in specs:  # pins kept, views in their base's id, the rest in declared ids
        where, pin = result.spec_dict[spec].mem_id, _root(spec).mem_id
        if spec.allocated_memory > 0:
            assert where == pin if pin is not None else where in range(1, len(memories) + 1)
    assert report.traffic == traffic
    _against_brute_force(specs, memories, by_id, reserved, alignment, padding, report)


def _judge_one_id(placed: list[FakeSpec], result: Any, start: int, alignment: int) -> None:
    """The specs placed in one id, as a problem of one memory, judged by `validate`."""
    index = {id(s): k for k, s in enumerate(placed)}
    buffers = tuple(
        Buffer(str(k), s.allocated_memory, (Interval(s.lifetime[0], s.lifetime[1] + 1),), alignment)
        for k, s in enumerate(placed)
        if s.allocated_memory > 0
    )
    aliases = tuple(
        Alias(str(index[id(s.storage_base)]), str(k), s.storage_base_offset)
        for k, s in enumerate(placed)
        if s.storage_base is not None and s.allocated_memory > 0
    )
    offsets = {b.id: result.spec_dict[placed[int(b.id)]].mem_offset - start for b in buffers}
    arena = max((offsets[b.id] + b.size for b in buffers), default=0)
    assert (
        validate(Problem(buffers, aliases), Plan(offsets, arena, Status.FEASIBLE, "written", 0))
        == []
    )


def _against_brute_force(
    specs: list[FakeSpec],
    memories: list[Memory],
    by_id: dict[int, Memory],
    reserved: list[int],
    alignment: int,
    padding: int,
    report: oet.PlanReport,
) -> None:
    """On tiny sets: the least traffic of any static placement, each memory holding its
    capacity less the bytes set aside and the padding, by trying every one."""
    starts = {k: _start(reserved, k, m, alignment) for k, m in by_id.items()}
    aside = {k: reserved[k] if k < len(reserved) else 0 for k in by_id}
    if any(m.capacity is not None and aside[k] > m.capacity for k, m in by_id.items()):
        assert report.status == "infeasible"
        return  # the bytes a submodule set aside overflow an id, whatever the plan
    sized = [s for s in specs if s.allocated_memory > 0]
    if len({id(_root(s)) for s in sized}) > 5:
        return
    rooms = {
        mem_id: None if m.capacity is None else max(0, m.capacity - starts[mem_id] - padding)
        for mem_id, m in by_id.items()
    }
    declared = tuple(m.name for m in memories)
    index = {id(s): k for k, s in enumerate(sized)}
    buffers = []
    for k, s in enumerate(sized):
        pin = _root(s).mem_id
        live = (Interval(s.lifetime[0], s.lifetime[1] + 1),)
        allowed = declared if pin is None else (by_id[pin].name,)
        buffers.append(Buffer(str(k), s.allocated_memory, live, alignment, memories=allowed))
    aliases = tuple(
        Alias(str(index[id(s.storage_base)]), str(k), s.storage_base_offset)
        for k, s in enumerate(sized)
        if s.storage_base is not None
    )
    tiers = tuple(Memory(m.name, rooms[k], m.alignment, m.cost) for k, m in sorted(by_id.items()))
    least = least_traffic(Problem(tuple(buffers), aliases, memories=tiers), copies=False)
    if report.status == "optimal":
        assert report.traffic == least
    elif report.status == "infeasible":
        assert least is None
    elif report.status == "feasible":
        assert least is not None and report.traffic is not None and report.traffic >= least
