"""optplan's own saved sets (`torch_search`): checked against every saved set of a tiny
step, and trained under a budget that only the search meets, against eager."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="optplan.torch needs torch (the torch extra)")

from hypothesis import given, settings
from hypothesis import strategies as st

import optplan.torch as ot
from optplan.budget import Budget
from optplan.integrations import torch_budget as tb
from optplan.integrations.torch_bound import Timeline, order_bound
from optplan.integrations.torch_exact import Facts, exact
from optplan.integrations.torch_search import Candidate, Space, improve

ACTIVATIONS = {"tanh": torch.nn.Tanh, "gelu": torch.nn.GELU, "sigmoid": torch.nn.Sigmoid}


def tiny(width: int, act: str) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(width, width, bias=False),
        ACTIVATIONS[act](),
        torch.nn.Linear(width, width, bias=False),
        ACTIVATIONS[act](),
    )
    return model, torch.randn(64, width)


def mlp(width: int = 128) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, width),
        torch.nn.GELU(),
        torch.nn.Linear(width, width),
        torch.nn.Tanh(),
        torch.nn.Linear(width, width),
        torch.nn.Sigmoid(),
        torch.nn.Linear(width, 8),
    )
    return model, torch.randn(256, 32)


def step(model: torch.nn.Module, run: Any, x: torch.Tensor) -> torch.Tensor:
    model.zero_grad(set_to_none=False)
    loss = run(x).square().mean()
    loss.backward()
    return loss.detach()


def captured(
    make: Any, monkeypatch: pytest.MonkeyPatch, backend: str = "aot_eager"
) -> tuple[Space, list[Candidate]]:
    """The joint graph of `make`'s step as the partitioner hands it to optplan, and
    torch's candidates on it."""
    seen: dict[str, Any] = {}
    real = tb.choose

    def spy(state: Any, original: Any, joint_graph: Any, node_info: Any) -> Any:
        seen.update(state=state, original=original, graph=joint_graph, info=node_info)
        return real(state, original, joint_graph, node_info)

    monkeypatch.setattr(tb, "choose", spy)
    model, x = make()
    torch._dynamo.reset()
    with ot.memory_budget(fraction=1.0, work=1.0):
        step(model, torch.compile(model, backend=backend), x)
    monkeypatch.undo()
    space = Space(seen["graph"], seen["info"], seen["state"].num_fwd_outputs)
    return space, tb.candidates(seen["original"], space)


def every_saved_set(space: Space) -> list[Candidate]:
    """Brute force: every subset of the forward's tensors and inputs, partitioned."""
    universe = [
        n
        for n in space.joint_graph.nodes
        if n in space.forward and isinstance(n.meta.get("val"), torch.Tensor)
    ]
    assert len(universe) <= 12, "brute force over more than 4,096 saved sets"
    found = []
    for k in range(len(universe) + 1):
        for subset in itertools.combinations(universe, k):
            judged = space.judge(subset, "brute force")
            if judged is not None:
                found.append(judged)
    return found


def proven(space: Space) -> int:
    """The larger of the order's cut bound and the backward model's bound."""
    line = Timeline(space.joint_graph, space.forward, space.outputs_held, space.num_fwd_outputs)
    model = exact(Facts(line, space.may_run_again, space.base_bytes), Budget(5.0, 60.0))
    return max(order_bound(line, space.may_run_again, space.base_bytes).bytes, model.bound)


def least_within(found: list[Candidate], budget: int) -> int | None:
    fits = [c.extra_flops for c in found if c.peak.bytes <= budget]
    return min(fits) if fits else None


@settings(max_examples=3, deadline=None, derandomize=True)
@given(width=st.sampled_from([8, 16, 24]), act=st.sampled_from(sorted(ACTIVATIONS)))
def test_the_search_finds_the_least_compute_of_every_saved_set_at_every_budget(
    width: int, act: str
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        space, torch_found = captured(lambda: tiny(width, act), monkeypatch)
    every = every_saved_set(space)
    assert torch_found and every
    # The proven bounds are below every partition's peak.
    assert proven(space) <= min(c.peak.bytes for c in every)
    for budget in sorted({c.peak.bytes for c in every}):
        starts = sorted(torch_found, key=lambda c: c.key(budget))[: tb.STARTS]
        best = improve(space, starts, budget)
        # At the lowest of every peak too: the search reaches the true floor from torch's.
        assert best.peak.bytes <= budget, (budget, best.label)
        assert best.extra_flops == least_within(every, budget), (budget, best.label)


def test_the_search_stops_on_its_work_and_gives_the_same_set_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    space, torch_found = captured(mlp, monkeypatch)
    budget = min(c.peak.bytes for c in torch_found) - 1
    answers = []
    for _ in range(2):
        fresh = Space(space.joint_graph, space.node_info, space.num_fwd_outputs)
        answers.append(improve(fresh, torch_found[:1], budget, Budget(0.5, 600.0)))
        assert fresh.evaluations <= 0.5 * 4 + 1
    assert answers[0].saved == answers[1].saved


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-7))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_budget_only_the_search_meets_trains_equal_to_eager(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    space, torch_found = captured(mlp, monkeypatch, backend)
    torch_least = min(c.peak.bytes for c in torch_found)
    starts = sorted(torch_found, key=lambda c: c.key(torch_least - 1))[: tb.STARTS]
    own = improve(space, starts, torch_least - 1)
    assert own.peak.bytes < torch_least, "the search found no lower peak than torch"
    model, x = mlp()
    eager = copy.deepcopy(model)
    torch._dynamo.reset()
    with ot.memory_budget(peak_bytes=own.peak.bytes):
        compiled = torch.compile(model, backend=backend)
        for _ in range(2):
            assert close(step(model, compiled, x), step(eager, eager, x))
            for p, q in zip(model.parameters(), eager.parameters(), strict=True):
                assert close(p.grad, q.grad)
            with torch.no_grad():
                for p, q in zip(model.parameters(), eager.parameters(), strict=True):
                    p -= 0.01 * p.grad
                    q -= 0.01 * q.grad
    report = ot.last_report()
    assert report is not None and report.peak_bytes <= own.peak.bytes < torch_least
    assert "moves" in report.candidate or "model" in report.candidate  # not one of torch's


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_only_a_nonzero_dropout_probability_draws_at_random(p: float) -> None:
    from torch import fx

    from optplan.integrations.torch_search import draws_random

    graph = fx.Graph()
    x = graph.placeholder("x")
    aten = torch.ops.aten
    calls = [
        graph.call_function(aten.native_dropout.default, (x, p, True)),
        graph.call_function(aten._scaled_dot_product_flash_attention_for_cpu.default, (x, x, x, p)),
        graph.call_function(aten._scaled_dot_product_flash_attention_for_cpu.default, (x, x, x)),
        graph.call_function(aten.rand_like.default, (x,)),
        graph.call_function(aten.mm.default, (x, x)),
    ]
    assert [draws_random(c) for c in calls] == [p > 0, p > 0, False, True, False]
