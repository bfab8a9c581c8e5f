"""The proven bounds on a training step's peak (`torch_bound`, `torch_exact`): never above
the peak of any saved set the partitioner splits the step with, judged for real.

Small networks drawn at random (linear layers, activations, dropout, layer norm,
residual adds, a split), each with every saved set of its forward where there are few,
else torch's candidates and random saved sets; the model's own saved set is judged too.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="optplan.torch needs torch (the torch extra)")

from hypothesis import given, settings
from hypothesis import strategies as st

from optplan.budget import Budget
from optplan.integrations.torch_bound import Timeline, order_bound
from optplan.integrations.torch_exact import Facts, exact
from optplan.integrations.torch_search import Candidate, Space
from tests.test_torch_search import captured, every_saved_set

ACTS = {"tanh": torch.nn.Tanh, "gelu": torch.nn.GELU, "relu": torch.nn.ReLU}


class Block(torch.nn.Module):
    """A linear layer, an activation, and optionally dropout, layer norm, a residual
    add and a split into halves added back."""

    def __init__(self, width: int, act: str, parts: frozenset[str]) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.act = ACTS[act]()
        self.parts = parts
        self.drop = torch.nn.Dropout(0.25)
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(self.linear(x))
        if "dropout" in self.parts:
            y = self.drop(y)
        if "norm" in self.parts:
            y = self.norm(y)
        if "split" in self.parts:
            a, b = y.split(y.shape[-1] // 2, dim=-1)
            y = torch.cat([a * b, b], dim=-1)
        return x + y if "residual" in self.parts else y


def network(widths: list[int], acts: list[str], parts: list[frozenset[str]]) -> Any:
    def make() -> tuple[torch.nn.Module, torch.Tensor]:
        torch.manual_seed(0)
        width = widths[0]
        blocks = [Block(width, a, p) for a, p in zip(acts, parts, strict=True)]
        return torch.nn.Sequential(*blocks, torch.nn.Linear(width, 2)), torch.randn(32, width)

    return make


def proven_and_model(space: Space, work: float = 5.0) -> tuple[int, Candidate | None]:
    """The larger bound, and the model's saved set judged for real."""
    line = Timeline(space.joint_graph, space.forward, space.outputs_held, space.num_fwd_outputs)
    order = order_bound(line, space.may_run_again, space.base_bytes)
    model = exact(Facts(line, space.may_run_again, space.base_bytes), Budget(work, 60.0))
    judged = space.judge(model.saved, "model") if model.saved is not None else None
    return max(order.bytes, model.bound), judged


def judged_sets(space: Space, found: list[Candidate], seed: int) -> list[Candidate]:
    universe = [
        n
        for n in space.joint_graph.nodes
        if n in space.forward and isinstance(n.meta.get("val"), torch.Tensor)
    ]
    if len(universe) <= 9:
        return every_saved_set(space)
    rng = random.Random(seed)
    picks = [[n for n in universe if rng.random() < p] for p in (0.2, 0.5, 0.8) * 8]
    judged = [space.judge(p, "random") for p in picks]
    return [*found, *(c for c in judged if c is not None)]


@settings(max_examples=8, deadline=None, derandomize=True)
@given(
    width=st.sampled_from([8, 16]),
    blocks=st.lists(
        st.tuples(
            st.sampled_from(sorted(ACTS)),
            st.frozensets(st.sampled_from(["dropout", "norm", "split", "residual"])),
        ),
        min_size=1,
        max_size=3,
    ),
    held=st.booleans(),
)
def test_no_saved_set_holds_less_than_the_bounds(
    width: int, blocks: list[tuple[str, frozenset[str]]], held: bool
) -> None:
    make = network([width], [a for a, _ in blocks], [p for _, p in blocks])
    with pytest.MonkeyPatch.context() as monkeypatch:
        space, found = captured(make, monkeypatch)
    space = Space(space.joint_graph, space.node_info, space.num_fwd_outputs, held)
    found = [c for c in (space.judge(c.saved, c.label) for c in found) if c is not None]
    bound, model = proven_and_model(space)
    every = judged_sets(space, found, seed=width)
    assert every
    least = min(c.peak.bytes for c in every)
    assert bound <= least, (bound, least)
    if model is not None:
        assert bound <= model.peak.bytes


def test_the_model_gives_the_same_saved_set_twice_and_reaches_the_least_peak() -> None:
    make = network([16], ["gelu", "tanh"], [frozenset({"dropout"}), frozenset({"norm"})])
    with pytest.MonkeyPatch.context() as monkeypatch:
        space, found = captured(make, monkeypatch)
    line = Timeline(space.joint_graph, space.forward, space.outputs_held, space.num_fwd_outputs)
    answers = [exact(Facts(line, space.may_run_again, 0), Budget(5.0, 60.0)) for _ in range(2)]
    assert answers[0] == answers[1]
    judged = space.judge(answers[0].saved or (), "model")
    assert judged is not None
    least = min(c.peak.bytes for c in found)
    # Proven optimal on a step this small, and no worse than torch's lowest.
    assert answers[0].optimal and judged.peak.bytes <= least
    assert answers[0].bound <= judged.peak.bytes


@settings(max_examples=4, deadline=None, derandomize=True)
@given(
    width=st.sampled_from([8, 16, 24]),
    act=st.sampled_from(sorted(ACTS)),
    parts=st.frozensets(st.sampled_from(["dropout", "residual"])),
)
def test_no_saved_set_within_a_budget_computes_less_again_than_the_bound(
    width: int, act: str, parts: frozenset[str]
) -> None:
    make = network([width], [act, act], [parts, frozenset()])
    with pytest.MonkeyPatch.context() as monkeypatch:
        space, found = captured(make, monkeypatch)
    every = judged_sets(space, found, seed=width)
    line = Timeline(space.joint_graph, space.forward, space.outputs_held, space.num_fwd_outputs)
    for budget in sorted({c.peak.bytes for c in every}):
        least = min(c.extra_flops for c in every if c.peak.bytes <= budget)
        model = exact(Facts(line, space.may_run_again, 0), Budget(5.0, 60.0), budget=budget)
        assert 0 <= model.bound <= least, (budget, model.bound, least)


def test_a_step_too_large_to_model_still_gets_the_order_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from optplan.integrations import torch_exact

    make = network([16], ["gelu"], [frozenset({"residual"})])
    space, found = captured(make, monkeypatch)
    monkeypatch.setattr(torch_exact, "CELLS_PER_UNIT", 0.001)
    line = Timeline(space.joint_graph, space.forward, space.outputs_held, space.num_fwd_outputs)
    model = exact(Facts(line, space.may_run_again, 0), Budget(5.0, 60.0))
    assert model.saved is None and model.work == 0
    order = order_bound(line, space.may_run_again)
    assert model.bound <= order.bytes <= min(c.peak.bytes for c in found)
