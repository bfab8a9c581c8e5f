"""`optplan check model.pte`: ExecuTorch's memory plan read from the program file and
judged by the independent validator, with neither torch nor executorch installed.

The files in `tests/data/executorch` were written by ExecuTorch 1.5.1 itself with its own
planner (`tests/executorch_models.py`: `cond`, `map`, the KV-cache step through the
reinplace pass, MobileNet-like blocks through XNNPACK); each must read as valid. A copy
with one kernel's output moved onto another tensor live at that kernel must read as
invalid, naming the two.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from optplan.cli import main
from optplan.frontends import pte
from optplan.problem import lower_bound
from optplan.problem.plan import validate

DATA = Path(__file__).resolve().parent / "data" / "executorch"
FILES = sorted(DATA.glob("*.pte"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_executorch_plans_read_as_valid(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plans = pte.read_pte(str(path))
    assert plans and all(validate(p.problem, p.plan) == [] for p in plans)
    assert all(lower_bound(p.problem) <= p.buffer_bytes for p in plans)
    assert main(["check", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] and report["memories"][0]["method"] == "forward"
    assert report["memories"][0]["buffer_bytes"] == plans[0].buffer_bytes


def test_the_reinplace_slice_update_shares_the_window() -> None:
    """The storage-backed output (slice_scatter's, stored inside the sliding window) and
    the static views are aliases of their bases, not conflicts."""
    (plan,) = pte.read_pte(str(DATA / "kv_cache_reinplace.pte"))
    assert len(plan.problem.aliases) >= 3


def _moved_output(data: bytes) -> tuple[bytes, int, int]:
    """The file with one kernel call's output placed at the offset of another tensor
    live at that call (one the call does not touch), and the two value indices."""
    program = pte._Table(data, struct.unpack_from("<I", data, 0)[0])
    execution_plan = program.tables(1)[0]
    method = pte._method(execution_plan)
    (memory,) = pte.memory_plans(method)
    live = {int(b.id): b.live[0] for b in memory.problem.buffers}
    planned = {t.value: t for t in method.tensors}
    found = [
        (planned[other], planned[out])
        for at, (touched, written) in enumerate(zip(method.touches, method.writes))
        for out in written
        if out in planned
        for other, span in live.items()
        if other not in touched and span.start <= at < span.end
        and planned[other].offset != planned[out].offset != 0  # 0 is not stored: no field
    ]  # fmt: skip
    source, target = found[0]
    info = execution_plan.tables(2)[target.value].table(1).table(6)  # type: ignore[union-attr]
    assert info is not None
    patched = bytearray(data)
    struct.pack_into("<I", patched, info._field(1), source.offset)
    return bytes(patched), source.value, target.value


def test_an_output_moved_onto_a_live_tensor_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, source, target = _moved_output((DATA / "kv_cache_reinplace.pte").read_bytes())
    path = tmp_path / "moved.pte"
    path.write_bytes(data)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.rstrip().endswith("invalid")
    assert f"'{source}'" in out and f"'{target}'" in out


def test_a_file_that_is_not_a_program_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.pte"
    path.write_bytes(b"\x00" * 64)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an ExecuTorch program" in err and str(path) in err
    assert main(["check", str(tmp_path / "missing.pte")]) == 2
