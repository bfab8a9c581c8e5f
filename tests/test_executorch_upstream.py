"""ExecuTorch's own memory-planning tests, run with optplan in place of its greedy.

Opt-in (a few minutes on two cores): `OPTPLAN_EXECUTORCH_UPSTREAM=1 pytest
tests/test_executorch_upstream.py`. The test files ship in the executorch wheel; each is
run in a child pytest with the plugin `executorch_upstream.py`, which substitutes
optplan and marks the tests that pin greedy's own choices (listed there with the
reason) as expected failures; every other test must pass. Skipped without executorch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install torch, CPU build)")
executorch = pytest.importorskip(
    "executorch", reason="executorch is not installed (pip install -e '.[executorch]')"
)
if not os.environ.get("OPTPLAN_EXECUTORCH_UPSTREAM"):
    pytest.skip(
        "ExecuTorch's own tests take minutes: set OPTPLAN_EXECUTORCH_UPSTREAM=1 to run them",
        allow_module_level=True,
    )

HERE = Path(__file__).resolve().parent
FILES = [
    "exir/tests/test_memory_planning.py",
    "exir/tests/test_banked_memory_planning.py",
    "exir/tests/test_remove_view_copy.py",
    "exir/tests/test_prune_empty_tensors_pass.py",
    "exir/tests/test_tensor.py",
    "exir/emit/test/test_emit.py",
    "extension/pybindings/test/test_pybindings.py",
    "exir/tests/test_passes.py",
    "exir/program/test/test_program.py",
]


@pytest.mark.parametrize("name", FILES)
def test_their_tests_pass_with_optplan(name: str, tmp_path: Path) -> None:
    path = Path(next(iter(executorch.__path__))) / name
    if not path.exists():
        pytest.skip(f"{name} is not in this executorch wheel")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE.parent), str(HERE)]))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "executorch_upstream",
         "-q", "-rfX", str(path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:]
