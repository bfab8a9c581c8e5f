"""A pytest plugin that runs ExecuTorch's own memory-planning tests with optplan in
place of ExecuTorch's greedy: `pytest -p executorch_upstream <their test files>`, with
this directory on the path (`test_executorch_upstream.py` does it).

Before their modules are collected, `executorch.exir.memory_planning.greedy` (the
default of every `MemoryPlanningAlgorithmSuite`, and what their tests import) becomes
`optplan.executorch.algorithm("cpsat")`. The tests below are expected to fail, each for
the reason given; they are marked xfail (not strict) so the rest must pass. Tests that
fail with ExecuTorch's own greedy too, in this wheel, are skipped with the reason.
"""

from __future__ import annotations

from typing import Any

import pytest

# Tests whose failure with optplan in place is expected, and why.
EXPECTED: dict[str, str] = {
    "TestSingleBankEquivalence::test_matches_greedy_per_spec_on_a_real_graph": (
        "pins greedy's exact offsets and object ids: BankedGreedy over one bank must place "
        "every spec where greedy does, and greedy is optplan here"
    ),
    "TestOverlappingReuse::test_offset_reuse_matches_greedy_per_spec": (
        "pins greedy's exact offsets: BankedGreedy's reuse above a live allocation must "
        "land where greedy's does, and greedy is optplan here"
    ),
}

# Tests that fail with ExecuTorch's own greedy as well, in this wheel: not planning's doing.
WITHOUT_OPTPLAN_TOO: dict[str, str] = {
    "PybindingsTest::test_method_quantized_ops": (
        "fails with greedy too: the wheel has no out variants of quantized_decomposed ops"
    ),
    "PybindingsTest::test_quantized_ops": (
        "fails with greedy too: the wheel has no out variants of quantized_decomposed ops"
    ),
    "TestPasses::test_to_out_variant_none_output": (
        "fails with greedy too: an AttributeError in ExecuTorch's ToOutVarPass"
    ),
    "TestPasses::test_to_edge_quantized_dropout": (
        "fails with greedy too: its subtests count 2 nodes where they expect 1"
    ),
}


def pytest_configure(config: Any) -> None:
    import executorch.exir.memory_planning as planning

    import optplan.executorch as oet

    planning.greedy = oet.algorithm("cpsat", time_limit=5)


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        for name, reason in WITHOUT_OPTPLAN_TOO.items():  # skipped: subtests ignore xfail
            if item.nodeid.endswith(name):
                item.add_marker(pytest.mark.skip(reason=reason))
        for name, reason in EXPECTED.items():
            if item.nodeid.endswith(name):
                item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
