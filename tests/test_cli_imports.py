"""What the commands import: OR-Tools, and the pandas it pulls in (half a second of every
start-up), only where a CP-SAT model or a max-flow is built. `plan`, `show`, `lower` and
`run` with greedy, naive or tokens, and TVM's pass module, never import it.

Each case runs in a fresh interpreter, since this one has imported OR-Tools long ago.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "residual_cnn.py"

# Runs each command line of argv[1] (JSON) through the CLI's `main`, then imports TVM's
# pass if TVM is installed, and prints what had imported OR-Tools first, or nothing.
SCRIPT = """
import json, sys
from optplan.cli import main

def heavy():
    return sorted(name for name in sys.modules if name.split(".")[0] == "ortools")

if heavy():
    print(json.dumps(["import optplan.cli", heavy()]))
    sys.exit()
for argv in json.loads(sys.argv[1]):
    if main(argv) != 0:
        sys.exit(f"exit status not 0: {argv}")
    if heavy():
        print(json.dumps([" ".join(argv), heavy()]))
        sys.exit()
try:
    import optplan.tvm  # TVM's pass; without apache-tvm it cannot be imported
except ImportError:
    pass
if heavy():
    print(json.dumps(["import optplan.tvm", heavy()]))
"""


def first_to_import_ortools(commands: list[list[str]], cwd: Path) -> object:
    """In a fresh interpreter: which step imported OR-Tools first, or None."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(commands)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1:] or ["null"]
    return json.loads(last[0]) if last[0].startswith("[") else None


def test_planning_with_greedy_never_imports_ortools(tmp_path: Path) -> None:
    program = str(EXAMPLE)
    commands = [
        ["plan", program, "--planner", "greedy", "--json"],
        ["plan", program, "--planner", "naive", "--json"],
        ["plan", program, "--planner", "tokens", "--json"],
        ["show", program, "--planner", "greedy", "-o", str(tmp_path / "arena.png")],
        ["lower", program, "--planner", "greedy", "-o", str(tmp_path / "lowered.py")],
        ["run", program, "--planner", "greedy"],
    ]
    assert first_to_import_ortools(commands, tmp_path) is None


def test_a_cpsat_model_still_imports_ortools(tmp_path: Path) -> None:
    """The check above can fail: ordering by a CP-SAT model imports it."""
    commands = [["plan", str(EXAMPLE), "--planner", "greedy", "--reorder", "cpsat", "--json"]]
    found = first_to_import_ortools(commands, tmp_path)
    assert isinstance(found, list)
