"""The tokens planner reproduces TVM StaticPlanBlockMemory's storage totals."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from optplan.frontends import load
from optplan.planners.common import make_form
from optplan.planners.tokens import plan_tokens
from optplan.problem import Buffer, Interval, Problem, lower_bound
from optplan.problem.plan import validate
from optplan.strategies import problems

TVM = Path(__file__).resolve().parents[2] / "shared" / "data" / "tvm"


def buf(name: str, size: int, start: int, end: int, dtype: str = "float32") -> Buffer:
    return Buffer(name, size, (Interval(start, end),), dtype=dtype)


def test_dead_token_is_reused_by_the_next_tensor() -> None:
    problem = Problem((buf("a", 64, 0, 2), buf("b", 64, 1, 3), buf("c", 64, 2, 4)))
    plan = plan_tokens(make_form(problem))
    assert [size for _, size in plan.storages] == [64, 64]
    assert plan.offsets["c"] == plan.offsets["a"] == 0


def test_reuse_is_per_dtype() -> None:
    problem = Problem((buf("a", 64, 0, 2), buf("b", 64, 2, 4, "int32")))
    assert [size for _, size in plan_tokens(make_form(problem)).storages] == [64, 64]


def test_smallest_fit_within_sixteen_times_else_grow_largest_smaller() -> None:
    problem = Problem(
        (
            buf("big", 1600, 0, 2),
            buf("mid", 200, 0, 2),
            buf("small", 100, 0, 2),
            buf("want150", 150, 2, 4),  # takes mid (200): the smallest >= 150
            buf("want120", 120, 2, 4),  # mid is taken; big (1600 <= 16 x 120) fits
        )
    )
    plan = plan_tokens(make_form(problem))
    assert plan.offsets["want150"] == plan.offsets["mid"]
    assert plan.offsets["want120"] == plan.offsets["big"]
    grow = Problem((buf("a", 100, 0, 2), buf("b", 300, 2, 4)))
    assert [size for _, size in plan_tokens(make_form(grow)).storages] == [300]


def test_never_read_tensor_keeps_its_own_token() -> None:
    problem = Problem((buf("unused", 64, 0, 1), buf("b", 64, 1, 3)))
    assert [size for _, size in plan_tokens(make_form(problem)).storages] == [64, 64]


@given(problems(branches=False, aliases=False, pins=False, max_size=48))
def test_tokens_plans_validate(problem: Problem) -> None:
    plan = plan_tokens(make_form(problem))
    assert validate(problem, plan) == []
    assert lower_bound(problem) <= plan.arena


@pytest.mark.parametrize(
    ("model", "total"),
    [
        ("mlp", 2097152),
        ("mlp.unfused", 2102272),
        ("resnet18", 4919296),
        ("resnet18.unfused", 7432096),
        ("resnet18.inplace", 4417536),
    ],
)
def test_tvm_totals_byte_for_byte(model: str, total: int) -> None:
    path = TVM / f"{model}.2_fused_dataflow.py"
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    problem = load(str(path), alignment=1).problem
    plan = plan_tokens(make_form(problem))
    assert plan.arena == total
    assert validate(problem, plan) == []
