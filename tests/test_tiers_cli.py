"""Several memories on the command line: --memory, the traffic column, JSON and CSV plans
with each buffer's memory and copies, replays, pictures, lowering, and bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from optplan.cli import main
from optplan.cli.options import parse_bytes, parse_memory
from optplan.problem import Memory

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = str(ROOT / "examples" / "transformer_block.py")
TWO = ["--memory", "fast=576KiB", "--memory", "slow:cost=10", "--time-limit", "20"]


@pytest.mark.parametrize(
    ("text", "size"),
    [("4096", 4096), ("256KiB", 262144), ("1 MiB", 1 << 20), ("2gib", 2 << 30), ("0B", 0)],
)
def test_parse_bytes(text: str, size: int) -> None:
    assert parse_bytes(text) == size


@pytest.mark.parametrize(
    ("text", "words"), [("12KB", "powers of 1024"), ("x", "such as 4096"), ("-1", "such as")]
)
def test_parse_bytes_refuses(text: str, words: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=words):
        parse_bytes(text)


def test_parse_memory() -> None:
    assert parse_memory("tcm=256KiB") == Memory("tcm", 262144)
    assert parse_memory("psram:cost=10") == Memory("psram", None, 1, 10)
    assert parse_memory("sram=2MiB:cost=3:alignment=16") == Memory("sram", 2 << 20, 16, 3)


@pytest.mark.parametrize(
    ("memory", "words"),
    [
        ("=5", "NAME=SIZE"),
        ("fast=abc", "in 'fast=abc'"),
        ("fast=5:cost=x", "cost=C"),
        ("fast=5:speed=2", "cost=C"),
        ("fast=5KB", "KiB"),
    ],
)
def test_a_malformed_memory_is_exit_2_in_one_line(
    memory: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", EXAMPLE, "--memory", memory, "--memory", "slow"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and words in error


def test_a_memory_named_twice_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", EXAMPLE, "--memory", "fast=1KiB", "--memory", "fast=2KiB"]) == 2
    assert "names 'fast' twice" in capsys.readouterr().err


def test_compare_adds_traffic(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", EXAMPLE, *TWO, "--json"]) == 0
    records = {r["planner"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(records) == {"naive", "greedy", "spill", "cpsat"}
    cpsat = records["cpsat"]
    assert cpsat["status"] == "optimal" and cpsat["traffic"] == cpsat["traffic_bound"]
    assert all(cpsat["traffic"] <= r["traffic"] for r in records.values())
    assert records["naive"]["traffic"] == cpsat["traffic_all_in_slow"]
    assert {m["name"] for m in cpsat["memories"]} == {"fast", "slow"}
    assert cpsat["copies"] and set(cpsat["memory_of"]) == set(cpsat["offsets"])
    assert main(["compare", EXAMPLE, *TWO]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "traffic all in slow" in table[0]
    assert table[1].split()[:3] == ["planner", "status", "traffic"]


def test_plan_writes_memories_and_copies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.csv"
    assert main(["plan", EXAMPLE, *TWO, "-o", str(out)]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == "id,lower,upper,size,alignment,memory,offset,copy_from"
    assert any(row.endswith(",fast") for row in rows[1:])  # a row its copy fills from fast
    saved = tmp_path / "plan.json"
    assert main(["plan", EXAMPLE, *TWO, "-o", str(saved)]) == 0
    assert "traffic" in capsys.readouterr().out
    assert main(["run", EXAMPLE, *TWO, "--plan", str(saved)]) == 0
    assert "with 1 copy" in capsys.readouterr().out


def test_run_show_and_lower(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", EXAMPLE, *TWO]) == 0
    assert "replay bit-for-bit equal" in capsys.readouterr().out
    page = tmp_path / "tiers.html"
    assert main(["show", EXAMPLE, *TWO, "-o", str(page)]) == 0
    text = page.read_text()
    assert text.count("<svg") == 2 and "copied to slow at point" in text
    lowered = tmp_path / "lowered.py"
    assert main(["lower", EXAMPLE, *TWO, "-o", str(lowered)]) == 0
    assert "astype(resid1, resid1_slow" in lowered.read_text()


def test_a_program_with_if_is_refused_for_several_memories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "branch.py"
    program.write_text(
        "@R.function\n"
        'def main(c: R.Tensor((), dtype="bool"), x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):\n'
        "    if c:\n"
        "        y = R.add(x, x)\n"
        "    else:\n"
        "        y = R.multiply(x, x)\n"
        "    return y\n"
    )
    assert main(["plan", str(program), "--memory", "fast=64", "--memory", "slow"]) == 2
    assert "without If" in capsys.readouterr().err


def test_a_capacity_no_plan_meets_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = tmp_path / "p.csv"
    problem.write_text("id,lower,upper,size,memories\na,0,3,8,fast\nb,2,4,12,fast\n")
    assert main(["plan", str(problem), "--memory", "fast=16", "--memory", "slow:cost=10"]) == 1
    out = capsys.readouterr().out.strip()
    assert out.endswith(
        "at point 2, 20 bytes of tensors are live that only fast may hold (16 bytes): b, a"
    )
