"""Small faults of the command line a new user meets: a closed pipe, a directory where a
file belongs, words that mislead, counts in the wrong number, a line on stderr no one
reads. Each test failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from optplan.cli import main

ROOT = Path(__file__).resolve().parents[1]
CNN = str(ROOT / "examples" / "cnn_train.py")


def _optplan(
    *argv: str, cwd: Path = ROOT, closed: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python -m optplan ARGV` in a child; with `closed`, its stdout is a pipe whose
    reader has gone before the child writes (`optplan lower X | head -0`)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not closed:
        return subprocess.run(
            [sys.executable, "-m", "optplan", *argv],
            check=False,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    child = subprocess.Popen(
        [sys.executable, "-m", "optplan", *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read()
    child.wait(timeout=300)
    return subprocess.CompletedProcess(child.args, child.returncode, "", err)


def test_a_closed_pipe_is_a_quiet_exit() -> None:
    done = _optplan("lower", CNN, "--planner", "greedy", closed=True)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.stderr == ""
    assert done.returncode == 141  # 128 + SIGPIPE, what a shell reports for `yes | head`


def test_a_directory_as_program_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("plan", "run", "reorder", "compare"):
        assert main([command, str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert "is a directory" in err and "no such file" not in err and "\n" not in err


def test_show_into_a_directory_says_so_and_names_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", CNN, "-o", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["show", CNN, "-o", str(tmp_path / "arena.txt")]) == 2
    err = capsys.readouterr().err
    assert all(suffix in err for suffix in (".png", ".svg", ".pdf", ".html"))


def test_fuzz_imports_a_module_of_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "my_planner_here.py").write_text(
        "from optplan.planners import get_planner\n\n"
        "def plan(problem):\n"
        "    return get_planner('greedy')(problem)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    argv = ["fuzz", "my_planner_here:plan", "--examples", "5", "--out", str(tmp_path / "out")]
    assert main(argv) == 0, capsys.readouterr().err
    assert "5 examples" in capsys.readouterr().out
    assert main(["fuzz", "no_such_module_here:plan"]) == 2
    assert "PYTHONPATH" in capsys.readouterr().err


def test_compare_says_the_alignments_a_csv_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "aligned.csv"
    csv.write_text("id,lower,upper,size,alignment\na,0,2,1,64\nb,0,2,1,16\nc,2,3,4,1\n")
    assert main(["compare", str(csv), "--planners", "greedy"]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    assert "alignment 1," not in title and "alignments 1, 16, 64" in title
    csv.write_text("id,lower,upper,size,alignment\na,0,2,1,64\nb,0,2,1,64\n")
    assert main(["compare", str(csv), "--planners", "greedy"]) == 0
    assert "alignment 64," in capsys.readouterr().out.splitlines()[0]


def test_help_names_every_input_and_every_memory_setting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--help"]) == 0
    top = " ".join(capsys.readouterr().out.split())
    for kind in ("TVMScript .py", ".onnx", ".tflite", ".csv", ".json"):
        assert kind in top, kind
    assert main(["plan", "--help"]) == 0
    assert ":alignment=" in capsys.readouterr().out


def test_counts_of_one_are_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    csv = tmp_path / "one.csv"
    csv.write_text("id,lower,upper,size\na,0,2,1\n")
    assert main(["plan", str(csv), "--planner", "greedy"]) == 0
    assert main(["compare", str(csv), "--planners", "greedy"]) == 0
    lowered = tmp_path / "lowered.py"
    assert main(["lower", CNN, "--planner", "greedy", "-o", str(lowered)]) == 0
    assert main(["check", str(lowered)]) == 0
    out = capsys.readouterr().out
    assert "1 buffer," in out and "1 buffers" not in out
    assert "1 storage," in out and "1 storages" not in out
    assert "storage storage" not in out


def test_planning_line_only_on_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", CNN, "--time-limit", "5"]) == 0
    assert main(["compare", CNN, "--time-limit", "5"]) == 0
    assert "planning with" not in capsys.readouterr().err


def test_a_capacity_of_nothing_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("plan", "compare", "reorder", "run"):
        assert main([command, CNN, "--capacity", "0"]) == 2
        err = capsys.readouterr().err.strip()
        assert "--capacity" in err and "\n" not in err


def test_a_memory_of_nothing_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", CNN, "--memory", "fast=0", "--memory", "slow"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--memory" in err and "fast=0" in err and "\n" not in err


def test_run_names_the_kind_of_file_that_has_no_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = tmp_path / "g.json"
    graph.write_text(
        '{"directed": true, "multigraph": false, "graph": {},'
        ' "nodes": [{"id": 0, "cost_ram": 4}, {"id": 1, "cost_ram": 4}],'
        ' "links": [{"source": 0, "target": 1}]}'
    )
    assert main(["run", str(graph)]) == 2
    err = capsys.readouterr().err.strip()
    assert "computation graph" in err and "CSV" not in err, err
