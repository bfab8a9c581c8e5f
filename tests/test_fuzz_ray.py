"""`optplan fuzz --ray`: the same campaign as Ray tasks, on a local Ray this module starts.

Skipped without Ray (`pip install -e '.[ray]'`), except the refusal when it is absent.
The fixture planners are in `tests/fixtures`; Ray's workers import them because a local
Ray runs its workers in the driver's directory with the driver's import path.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optplan.cli import main
from optplan.fuzz import Budget, RayCluster, TargetSpec, run_campaign
from optplan.fuzz.on_ray import SHARD, _cut

needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="ray is not installed (pip install -e '.[ray]')",
)


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


@needs_ray
def test_shards_share_the_examples_on_ray(
    local_ray: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fuzz", "naive", "--examples", "41", "--ray", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # Two shards at once: one per CPU of the local Ray.
    assert "41 examples" in out and "(2 workers," in out
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@needs_ray
def test_a_failure_found_on_ray_is_shrunk_and_written_once(local_ray: None, tmp_path: Path) -> None:
    spec = TargetSpec("callable", "tests.fixtures.planners:all_at_zero")
    outcome = run_campaign(spec, Budget(examples=400, workers=2), tmp_path, RayCluster())
    (found,) = outcome.found
    assert found.failure.kind in {"overlap", "pinned", "alias", "capacity"}
    assert found.path.exists() and found.size <= 3
    assert [p.name for p in tmp_path.iterdir()] == [found.path.name]
    # The first failure ends the campaign: not every shard ran to its end.
    assert outcome.examples < 400


@needs_ray
def test_keep_going_on_ray_reports_each_property_once(local_ray: None, tmp_path: Path) -> None:
    spec = TargetSpec("callable", "tests.fixtures.planners:all_at_zero")
    budget = Budget(examples=60, workers=2, keep_going=True)
    outcome = run_campaign(spec, budget, tmp_path, RayCluster())
    kinds = [f.failure.kind for f in outcome.found]
    # Both shards find failures; each property is written once, and the campaign runs on.
    assert kinds and len(kinds) == len(set(kinds))
    assert outcome.examples >= 60


@needs_ray
def test_a_time_budget_stops_the_shards(
    local_ray: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fuzz", "naive", "--time", "3", "--ray", "--workers", "1", "--out", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "(1 worker," in out and "0 failures" in out


@needs_ray
def test_bad_input_met_in_a_shard_is_one_line_and_status_2(
    local_ray: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = f"{tmp_path}/no-such-planner {{input}} {{output}}"
    argv = ["fuzz", "--command", command, "--ray", "--examples", "4", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "cannot run" in err and len(err.strip().splitlines()) == 1


@needs_ray
def test_an_address_that_does_not_answer_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fuzz", "naive", "--ray-address", "127.0.0.1:1", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "'127.0.0.1:1'" in err and "does not answer" in err
    assert len(err.strip().splitlines()) == 1


@given(st.integers(1, 10 * SHARD), st.integers(1, 64))
def test_cuts_spend_the_budget_exactly_and_give_every_worker_a_shard(
    examples: int, at_once: int
) -> None:
    sizes = list(_cut(Budget(examples=examples), at_once))
    assert sum(sizes) == examples and all(1 <= size <= SHARD for size in sizes)
    assert len(sizes) >= min(at_once, examples)


def test_a_time_budget_cuts_full_shards_without_end() -> None:
    endless = _cut(Budget(seconds=1.0), 4)
    assert [next(endless) for _ in range(3)] == [SHARD] * 3


def test_without_ray_the_option_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    assert main(["fuzz", "naive", "--ray", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'optplan[ray]'" in err and len(err.strip().splitlines()) == 1
