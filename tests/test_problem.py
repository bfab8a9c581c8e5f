"""Problem construction, the live-bytes lower bound, and MiniMalloc CSV reading."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optplan.errors import InputError
from optplan.problem import (
    Alias,
    Buffer,
    Interval,
    Problem,
    alias_classes,
    lower_bound,
    read_csv,
    write_csv,
)
from optplan.strategies import problems

EXAMPLE = """id,lower,upper,size
b1,0,3,4
b2,3,9,4
b3,0,9,4
b4,9,21,4
"""


def test_example_lower_bound_is_twelve() -> None:
    problem = read_csv("input.12.csv", text=EXAMPLE)
    assert [b.id for b in problem.buffers] == ["b1", "b2", "b3", "b4"]
    assert problem.buffer("b2").live == (Interval(3, 9),)
    # Half-open: b1 ends at 3 where b2 starts, so at most b1|b2 plus b3 live at once.
    assert lower_bound(problem) == 8


def test_inclusive_end_header_is_read_as_half_open() -> None:
    problem = read_csv("old.csv", text="buffer,start,end,size\na,0,2,8\nb,3,4,8\n")
    assert problem.buffer("a").live == (Interval(0, 3),)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("id,lower,upper,size\na,0,3,-4\n", "bad.csv:2:4", "negative size -4"),
        ("id,lower,upper,size\na,0,0,4\n", "bad.csv:2:3", "empty lifetime [0, 0)"),
        ("id,lower,upper,size\na,0,x,4\n", "bad.csv:2:3", "upper 'x'"),
        ("id,lower,upper\na,0,3\n", "bad.csv:1", "lacks column 'size'"),
        ("id,lower,upper,size\na,0,3,4\na,1,2,4\n", "bad.csv:3", "already defined on line 2"),
        ("id,lower,upper,size\na,0,3\n", "bad.csv:2", "expected 4 fields, found 3"),
        ("", "bad.csv:1", "empty file"),
    ],
)
def test_csv_faults_name_file_line_and_column(text: str, where: str, what: str) -> None:
    with pytest.raises(InputError) as caught:
        read_csv("bad.csv", text=text)
    message = str(caught.value)
    assert message.startswith(where + ":"), message
    assert what in message


def test_problem_rejects_inconsistent_input() -> None:
    live = (Interval(0, 1),)
    with pytest.raises(ValueError, match="twice"):
        Problem((Buffer("a", 1, live), Buffer("a", 1, live)))
    with pytest.raises(ValueError, match="negative size"):
        Problem((Buffer("a", -1, live),))
    with pytest.raises(ValueError, match="empty interval"):
        Problem((Buffer("a", 1, (Interval(2, 2),)),))
    with pytest.raises(ValueError, match="unknown buffer"):
        Problem((Buffer("a", 1, live),), (Alias("a", "b"),))


def test_alias_class_is_one_rectangle_counted_once() -> None:
    problem = Problem(
        (
            Buffer("x", 16, (Interval(0, 3),)),
            Buffer("y", 8, (Interval(2, 5),)),
            Buffer("z", 4, (Interval(1, 2),)),
        ),
        (Alias("x", "y", 8),),
    )
    classes = alias_classes(problem)
    assert len(classes) == 2
    xy = classes[0]
    assert dict(xy.members) == {"x": 0, "y": 8}
    assert xy.size == 16 and xy.live == (Interval(0, 5),)
    assert lower_bound(problem) == 20


@given(problems(branches=False, aliases=False, pins=False, max_size=48))
def test_csv_round_trip_keeps_single_interval_problems(problem: Problem) -> None:
    text = write_csv(problem)
    again = read_csv("round.csv", text=text)
    for before, after in zip(problem.buffers, again.buffers):
        assert after.id == before.id and after.size == before.size
        assert after.live == (Interval(before.start, before.end),)
        assert after.alignment == before.alignment and after.offset == before.offset


@given(problems(branches=False, aliases=False, pins=False, max_size=48))
def test_lower_bound_is_max_of_live_bytes_at_each_point(problem: Problem) -> None:
    classes = alias_classes(problem)
    horizon = max(c.live[-1].end for c in classes)
    by_point = [
        sum(c.size for c in classes if any(iv.start <= t < iv.end for iv in c.live))
        for t in range(horizon)
    ]
    assert lower_bound(problem) == max(by_point)


def brute_lower_bound(problem: Problem) -> int:
    classes = alias_classes(problem)
    points = {iv.start for c in classes for iv in c.live}
    return max(
        (
            sum(c.size for c in classes if any(iv.start <= p < iv.end for iv in c.live))
            for p in points
        ),
        default=0,
    )


@given(st.one_of(problems(branches=False, aliases=False, pins=False, max_size=48), problems()))
def test_lower_bound_is_the_most_bytes_live_at_one_point(problem: Problem) -> None:
    assert lower_bound(problem) == brute_lower_bound(problem)


def test_lower_bound_of_sizes_past_int64_is_exact() -> None:
    huge = 1 << 70
    problem = Problem(
        (
            Buffer("a", huge, (Interval(0, 3),)),
            Buffer("b", huge + 1, (Interval(2, 5),)),
            Buffer("c", 7, (Interval(3, 9),)),
        )
    )
    assert lower_bound(problem) == 2 * huge + 1
    assert lower_bound(Problem(())) == 0


def test_lower_bound_counts_an_alias_class_once_over_split_lifetimes() -> None:
    problem = Problem(
        (
            Buffer("x", 16, (Interval(0, 2), Interval(6, 8))),
            Buffer("y", 8, (Interval(1, 7),), offset=None),
            Buffer("z", 4, (Interval(3, 4),)),
        ),
        (Alias("x", "y", 4),),
    )
    assert lower_bound(problem) == brute_lower_bound(problem) == 20
