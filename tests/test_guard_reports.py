"""A run counted in work that its guard (seconds) cut says what it spent, in units of
work, and that the guard cut it: never a reading pushed past every deadline."""

from __future__ import annotations

import itertools
import re
import time
import types

import pytest

from optplan import budget as budget_module
from optplan.budget import Budget, running
from optplan.schedule.graph import Graph
from optplan.schedule.remat import Remat
from optplan.schedule.remat.answer import answer
from optplan.schedule.remat.bounds import MemoryBound
from optplan.schedule.remat.lower import Lower


def test_an_answer_after_the_guard_ran_out_reports_the_work_spent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The clock jumps 1,000 s at every look, so its guard of 1 s has run out when the
    answer is written: `now()` then reads past every deadline, the report must not."""
    graph = Graph(
        sizes=(8, 8), creates=((0,), (1,)), reads=((), (0,)), preds=((), (0,)), costs=(1, 1)
    )
    readings = itertools.count()
    jumping = types.SimpleNamespace(perf_counter=lambda: time.monotonic() + 1e3 * next(readings))
    monkeypatch.setattr(budget_module, "time", jumping)
    clock = Budget(work=5.0, seconds=1.0).clock()
    with running(clock):
        clock.spend(0.9)
        assert budget_module.now() - clock.started > 5.0  # past every deadline
        floors = (0, Lower(0, "no bound asked"))
        found = answer(
            graph, Remat(20, work=5.0), None, floors, 2, MemoryBound(8, "x"), clock.started
        )
    assert found.plan is None and clock.cut
    spent = re.search(r"found in ([0-9.]+) units of work of the limit", found.reason)
    assert spent is not None, found.reason
    assert float(spent.group(1)) == pytest.approx(0.9, abs=0.05)
    assert "the guard of 1 s ran out" in found.reason
