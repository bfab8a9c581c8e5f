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
