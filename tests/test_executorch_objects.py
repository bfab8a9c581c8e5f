"""Memory objects (`mem_obj_id`) from `optplan.executorch.algorithm()`, both ways of
`allow_overlapping_allocations`: judged by tests/executorch_objects_check.py (which
shares no code with optplan), measured against ExecuTorch's own greedy on the same
specs, and checked against a brute force on small sets; then one real export.
"""

from __future__ import annotations

import functools
import itertools
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "executorch.exir.memory_planning", reason="executorch is not installed (pip install executorch)"
)

import optplan.executorch as oet
from optplan.budget import Budget
from optplan.integrations.executorch_objects import Unit, cut, level_bound, pack

sys.path.insert(0, str(Path(__file__).parent))
from executorch_fake import FakeSpec
from executorch_objects_check import Beside, object_bytes, object_faults


class Spec(FakeSpec):
    """FakeSpec with the alignment ExecuTorch's greedy reads off a storage-backed spec."""

    alignment = 1

    def realign(self, alignment: int) -> int:
        self.alignment = alignment
        return super().realign(alignment)


class Module:
    def __init__(self) -> None:
        self.input_mem_buffer_sizes = [0, 32]  # bytes a control-flow submodule set aside


@st.composite
def spec_sets(draw: st.DrawFn) -> list[Spec]:
    """Up to 14 specs: sizes from 0 bytes, lives of one point and longer, pinned to
    memory ids 1 or 2 or not, some stored inside an earlier spec (at an aligned offset
    inside it, alive while it is, as ExecuTorch extends a base's life over its views)."""
    specs: list[Spec] = []
    for _ in range(draw(st.integers(1, 14))):
        start = draw(st.integers(0, 16))
        spec = Spec(draw(st.sampled_from([0, 1, 16, 40, 64, 100, 128, 256])),
                    [start, start + draw(st.integers(0, 6))],
                    draw(st.sampled_from([None, None, 1, 2])))  # fmt: skip
        bases = [s for s in specs if s.nbytes >= 64 and s.storage_base is None]
        if bases and draw(st.integers(0, 3)) == 0:
            base = draw(st.sampled_from(bases))
            spec.storage_base_offset = draw(st.sampled_from([0, 64])) if base.nbytes >= 128 else 0
            spec.nbytes = draw(st.integers(1, base.nbytes - spec.storage_base_offset))
            spec.storage_base, spec.lifetime = base, list(base.lifetime)
        specs.append(spec)
    return specs


def _greedy(allow: bool) -> Any:
    from executorch.exir.memory_planning import greedy

    return functools.partial(greedy, allow_overlapping_allocations=allow)


@settings(deadline=None, max_examples=150)
@given(spec_sets(), st.sampled_from([1, 16, 64]), st.integers(0, 64), st.booleans())
@example([Spec(0, [0, 2], None), Spec(0, [1, 3], None)], 16, 0, False)  # no bytes, alive together
def test_objects_are_valid_and_no_larger_than_greedys(
    specs: list[Spec], alignment: int, padding: int, allow: bool
) -> None:
    ours = oet.algorithm(allow_overlapping_allocations=allow)(
        alignment, specs, Module(), None, padding
    )
    assert object_faults(specs, ours, allow) == []
    theirs = _greedy(allow)(alignment, specs, Module(), None, padding)
    assert object_faults(specs, theirs, allow) == []  # the judge agrees with greedy
    assert object_bytes(specs, ours)[0] <= object_bytes(specs, theirs)[0]


def _brute(units: list[Unit]) -> int:
    """The least total over every grouping of units into objects of no two alive at once."""
    best = sum(u.size for u in units)
    for of in itertools.product(range(len(units)), repeat=len(units)):
        if any(
            of[a] == of[b] and units[a].meets(units[b])
            for a, b in itertools.combinations(range(len(units)), 2)
        ):
            continue
        sizes: dict[int, int] = {}
        for unit, k in zip(units, of):
            sizes[k] = max(sizes.get(k, 0), unit.size)
        best = min(best, sum(sizes.values()))
    return best


units_lists = st.lists(
    st.builds(
        lambda start, length, size: Unit(start, start + length, size),
        st.integers(0, 8), st.integers(1, 4), st.sampled_from([0, 1, 3, 8, 9, 16]),
    ),
    min_size=1, max_size=6,
)  # fmt: skip


@settings(deadline=None, max_examples=80)
@given(units_lists)
def test_pack_reaches_the_brute_force_optimum(units: list[Unit]) -> None:
    found = pack(units, Budget(5.0, 30.0))
    assert found.total == _brute(units)
    assert level_bound(units) <= found.bound <= found.total
    assert found.status.value == "optimal"
    for a, b in itertools.combinations(range(len(units)), 2):
        assert found.of[a] != found.of[b] or not units[a].meets(units[b])


def test_cut_joins_ranges_that_share_a_byte() -> None:
    assert cut([(0, 64), (64, 64), (32, 64), (200, 10), (300, 0), (40, 0)]) == [0, 0, 0, 1, 2, 0]


def test_false_refuses_memories_and_names_the_configuration() -> None:
    from optplan.problem import Memory

    with pytest.raises(ValueError, match="allow_overlapping_allocations"):
        oet.algorithm(memories=[Memory("a", 1024)], allow_overlapping_allocations=False)
    with pytest.raises(TypeError, match="allow_overlapping_allocations"):
        oet.algorithm(allow_overlapping_allocations="no")  # type: ignore[arg-type]
    assert oet.algorithm(allow_overlapping_allocations=False).__name__.endswith("_no_overlap")


def test_partial_with_greedys_keyword_is_the_same_as_the_option() -> None:
    specs = [Spec(64, [0, 2], None), Spec(64, [1, 3], None), Spec(32, [3, 4], None)]
    by_keyword = functools.partial(oet.algorithm(), allow_overlapping_allocations=False)
    a = by_keyword(16, specs, None, None, 0)
    b = oet.algorithm(allow_overlapping_allocations=False)(16, specs, None, None, 0)
    assert a.bufsizes == b.bufsizes == [0, 128]
    assert [a.spec_dict[s].mem_obj_id for s in specs] == [0, 1, 0]


def test_real_export_runs_with_objects_both_ways() -> None:
    """A small CNN lowered with each setting: ExecuTorch's own Verifier passes, the
    judge finds nothing, the objects total no more than greedy's, and the program gives
    eager torch's outputs."""
    import executorch_models
    import torch

    case = executorch_models.BUILDERS["mlp_skips"]()
    for allow in (True, False):
        beside = Beside(keep=allow)
        program = executorch_models.lower(case, [beside])
        assert beside.calls
        for row in beside.calls:
            assert all(faults == [] for *_, faults in row.values())
            assert row["optplan", allow][0] <= row["greedy", allow][0]
        got, want = executorch_models.run(program, case), executorch_models.eager(case)
        for have, expected in zip(got, want):
            assert all(torch.allclose(h, e, rtol=1e-4, atol=1e-5) for h, e in zip(have, expected))
