"""A command run twice, once beside a process that spins on the CPU (a loaded machine)
and once alone, for the tests that an answer counted in work does not move with the load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def calm_and_loaded(
    command: list[str],
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`command` run beside a busy process, then alone: (calm, loaded)."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = subprocess.run(command, check=False, capture_output=True, text=True, cwd=ROOT)
    finally:
        busy.kill()
    calm = subprocess.run(command, check=False, capture_output=True, text=True, cwd=ROOT)
    return calm, loaded


def records(*runs: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    """Each run's `--json` record without its `seconds`, the one field that may differ."""
    found = [json.loads(run.stdout) for run in runs]
    for record in found:
        record.pop("seconds")
    return found
