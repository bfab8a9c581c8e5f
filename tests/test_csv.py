"""MiniMalloc CSV reading: the faults of issue 8 section 6, and the NumPy reader agreeing
with the row-by-row reader on every file, good or bad."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optplan.errors import InputError
from optplan.problem import Interval, Problem, read_csv, write_csv
from optplan.problem.csv_io import read_rows
from optplan.strategies import problems

HEADER = "id,lower,upper,size\n"


def fault(text: str) -> str:
    with pytest.raises(InputError) as caught:
        read_csv("bad.csv", text=text)
    return str(caught.value)


def test_a_byte_that_is_not_utf8_is_one_located_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_bytes(HEADER.encode() + b"a,0,3,4\nb\xff,0,3,4\n")
    with pytest.raises(InputError) as caught:
        read_csv(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:3:2: "), message
    assert "UTF-8" in message and "0xff" in message


@pytest.mark.parametrize(
    ("row", "where", "what"),
    [
        ("a,0,,4", "bad.csv:2:3", "upper of buffer 'a' is empty"),
        ("a,,3,4", "bad.csv:2:2", "lower of buffer 'a' is empty"),
        ("a,0,3,", "bad.csv:2:4", "size of buffer 'a' is empty"),
        (",0,3,4", "bad.csv:2:1", "empty id"),
    ],
)
def test_an_empty_required_cell_is_one_located_error(row: str, where: str, what: str) -> None:
    message = fault(HEADER + row + "\n")
    assert message.startswith(where + ": "), message
    assert what in message


@pytest.mark.parametrize("number", ["١٢", "１２", "1_000", "+ 4", "0x10", "4.0", "1e3"])
def test_only_ascii_decimal_integers_are_integers(number: str) -> None:
    message = fault(HEADER + f"a,0,3,{number}\n")
    assert message.startswith("bad.csv:2:4: "), message
    assert "is not an integer" in message


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    text = "\ufeff" + HEADER + "a,0,3,4\n"
    assert read_csv("bom.csv", text=text).buffer("a").size == 4
    path = tmp_path / "bom.csv"
    path.write_bytes(text.encode("utf-8"))
    assert read_csv(path).buffer("a").live == (Interval(0, 3),)


def test_carriage_returns_and_blank_rows_are_accepted() -> None:
    problem = read_csv("dos.csv", text="id,lower,upper,size\r\na,0,3,4\r\n\r\n,,,\r\nb,1,2,8\r\n")
    assert [b.id for b in problem.buffers] == ["a", "b"]


BAD_CELLS = st.sampled_from(["", "x", "-1", "0", "1_0", "٣", " 7 ", '"5"', "99999999999999999999"])


def test_quoted_cells_are_read() -> None:
    problem = read_csv("q.csv", text=HEADER + 'a,0,3,4\n"b,c",1,2,"3"\n')
    assert problem.buffer("b,c").size == 3


@given(problems(branches=False, aliases=False, pins=False, max_size=48), st.data())
def test_numpy_reader_agrees_with_row_reader(problem: Problem, data: st.DataObject) -> None:
    """The same Problem, or the same error, from both readers, on written files with one
    cell (perhaps) spoiled."""
    text = write_csv(problem)
    lines = text.splitlines()
    if data.draw(st.booleans()):
        row = data.draw(st.integers(1, len(lines) - 1))
        cells = lines[row].split(",")
        column = data.draw(st.integers(0, len(cells) - 1))
        cells[column] = data.draw(BAD_CELLS)
        lines[row] = ",".join(cells)
    text = "\n".join(lines) + "\n"
    least = data.draw(st.sampled_from([1, 4, 64]))
    assert outcome(lambda: read_csv("f.csv", text=text, alignment=least)) == outcome(
        lambda: read_rows("f.csv", text, least)
    )


def test_alignment_is_the_lcm_with_the_column() -> None:
    text = "id,lower,upper,size,alignment\na,0,3,4,48\nb,1,2,4,\n"
    problem = read_csv("a.csv", text=text, alignment=64)
    assert [b.alignment for b in problem.buffers] == [192, 64]


def outcome(read: object) -> object:
    try:
        return read()  # type: ignore[operator]
    except InputError as error:
        return str(error)


def test_plan_of_a_file_that_is_not_utf8_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from optplan.cli import main

    path = tmp_path / "latin1.csv"
    path.write_bytes(HEADER.encode() + "café,0,3,4\n".encode("latin-1"))
    target = tmp_path / "plan.csv"
    assert main(["plan", str(path), "--planner", "greedy", "-o", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}:2:4:" in err and "Traceback" not in err
    assert not target.exists()


def test_rows_read_in_chunks_are_the_rows_read_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from optplan.problem import csv_io as problem_csv

    monkeypatch.setattr(problem_csv, "_CHUNK_ROWS", 2)
    text = HEADER + "".join(f"b{k},{k},{k + 3},{k * 7}\n" for k in range(5))
    assert read_csv("c.csv", text=text) == read_rows("c.csv", text)
    assert fault(text + "b1,0,1,1\n").startswith("bad.csv:7: buffer 'b1' already defined")
