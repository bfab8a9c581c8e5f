"""optplan.executorch.algorithm() inside ExecuTorch's MemoryPlanningPass, judged by running.

- Six tiny models (two torch.nn CNNs; GPT-2, BERT, ViT and LLaMA from `transformers`
  configs with random weights) exported and lowered twice, with ExecuTorch's default
  planner and with optplan's; both `.pte` programs run in ExecuTorch's runtime
  pybindings on the same inputs. Outputs must be equal, optplan's non-constant buffer at
  or below the default's on every model, strictly below on the ViT.
- Random spec sets (hypothesis), including storage-backed specs (in-place and view
  outputs): the offsets written back pass the independent validator, views sit at their
  base plus their offset, and every offset is aligned.

Skipped without executorch (and torch; `transformers` for the four transformers).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("torch", reason="torch is not installed (pip install torch)")
pytest.importorskip(
    "executorch", reason="executorch is not installed (pip install -e '.[executorch]')"
)

import optplan.executorch as oet
from optplan.problem import Alias, Buffer, Interval, Problem
from optplan.problem.plan import Plan, Status, validate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import executorch_models

TRANSFORMERS = {"gpt2", "bert", "vit", "llama"}


@pytest.mark.parametrize("name", list(executorch_models.BUILDERS))
def test_model_runs_the_same_in_no_more_memory(name: str) -> None:
    import torch

    if name in TRANSFORMERS:
        pytest.importorskip("transformers", reason="transformers is not installed")
    _, module, inputs = executorch_models.BUILDERS[name]()
    default = executorch_models.lower(module, inputs, None)
    ours = executorch_models.lower(module, inputs, [oet.algorithm(time_limit=10)])
    expected = executorch_models.run(default, inputs)
    got = executorch_models.run(ours, inputs)
    assert len(expected) == len(got)
    assert all(torch.equal(a, b) for a, b in zip(expected, got))
    assert executorch_models.buffer_bytes(ours) <= executorch_models.buffer_bytes(default)
    if name == "vit":
        assert executorch_models.buffer_bytes(ours) < executorch_models.buffer_bytes(default)


class FakeSpec:
    """What ExecuTorch hands an algorithm: sizes, inclusive lifetimes, a memory id, and
    for storage-backed specs their base and byte offset into it."""

    def __init__(self, nbytes: int, lifetime: list[int], mem_id: int | None) -> None:
        self.nbytes, self.lifetime, self.mem_id = nbytes, lifetime, mem_id
        self.allocated_memory = nbytes
        self.storage_base: FakeSpec | None = None
        self.storage_base_offset = 0

    def realign(self, alignment: int) -> int:
        self.allocated_memory = -(-self.nbytes // alignment) * alignment
        return self.allocated_memory


@st.composite
def spec_sets(draw: st.DrawFn) -> list[FakeSpec]:
    specs = []
    for _ in range(draw(st.integers(1, 12))):
        start = draw(st.integers(0, 20))
        spec = FakeSpec(draw(st.integers(0, 300)), [start, start + draw(st.integers(0, 6))],
                        draw(st.sampled_from([None, 1, 2])))  # fmt: skip
        bases = [s for s in specs if s.mem_id == spec.mem_id and s.nbytes > 0]
        if bases and draw(st.booleans()):  # an in-place or view output inside a base
            base = draw(st.sampled_from(bases))
            spec.nbytes = draw(st.integers(1, base.nbytes))
            spec.storage_base, spec.lifetime = base, list(base.lifetime)
        specs.append(spec)
    return specs


@given(spec_sets(), st.sampled_from([1, 16, 64]), st.integers(0, 64))
def test_offsets_written_back_pass_the_validator(
    specs: list[FakeSpec], alignment: int, padding: int
) -> None:
    class Module:
        input_mem_buffer_sizes = (0, 32)  # bytes a control-flow submodule set aside

    result = oet.plan_specs(alignment, specs, Module(), None, padding, planner="greedy")
    for mem_id in {1 if s.mem_id is None else s.mem_id for s in specs}:
        group = [s for s in specs if (1 if s.mem_id is None else s.mem_id) == mem_id]
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


def test_unknown_planner_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="unknown planner"):
        oet.algorithm("best")
