"""What kernels allocate while they run (`torch_workspace`): the plan of a small traced
graph never lies below the peak PyTorch's profiler measures when it runs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch", reason="optplan.torch needs torch (the torch extra)")

from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch.fx.experimental.proxy_tensor import make_fx

from optplan.integrations.torch_graph import graph_of
from optplan.integrations.torch_measure import measured_peak
from optplan.integrations.torch_workspace import FOOTPRINTS, footprints
from optplan.schedule.graph import step_bytes

F = torch.nn.functional


def _qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (q * k).tanh() + v


# Ops whose CPU kernels allocate beyond their outputs (dropout's float mask, the
# softmax's mask, a transposed operand made contiguous, convolution's columns) beside
# ones that should not, each behind a view or two so aliasing is exercised too.
OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "dropout": lambda x: F.dropout(x, 0.3, training=True).relu(),
    "softmax": lambda x: torch.softmax(x, dim=-1) * 2,
    "safe_softmax": lambda x: torch.ops.aten._safe_softmax(x, -1).sum(0),
    "mm_transposed": lambda x: x.t().contiguous().t() @ x.t(),
    "split": lambda x: _qkv(*torch.cat([x, x.exp(), x], -1).split(x.shape[-1], dim=-1)),
    "conv": lambda x: F.conv2d(x[None, None], torch.ones(4, 1, 3, 3), padding=1).sum(1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]).tanh(),
}


def planned_and_measured(op: str, rows: int, cols: int) -> tuple[int, int]:
    x = torch.randn(rows, cols)
    gm = make_fx(OPS[op], tracing_mode="fake")(x)
    built = graph_of(gm, {})
    planned = max(step_bytes(built.graph, list(range(built.graph.ops))), default=0)
    with torch.no_grad():
        gm(x)  # warm-up: first calls may allocate once-only state
        measured = measured_peak(lambda: gm(x))
    return planned, measured


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    op=st.sampled_from(sorted(OPS)),
    rows=st.integers(1, 96),
    cols=st.sampled_from([1, 3, 17, 64, 130]),
)
@example(op="dropout", rows=64, cols=64)
@example(op="split", rows=8, cols=3)
@example(op="conv", rows=1, cols=1)
def test_the_plan_of_one_op_is_never_below_its_measured_peak(op: str, rows: int, cols: int) -> None:
    planned, measured = planned_and_measured(op, rows, cols)
    # Scalars a kernel wraps Python numbers in (8 bytes each) are below this slack.
    assert measured <= planned + 64, (op, planned, measured)


def test_dropout_backward_is_measured_once_per_signature() -> None:
    grad, mask = torch.randn(32, 48), torch.rand(32, 48) > 0.5
    backward = torch.ops.aten.native_dropout_backward.default
    gm = make_fx(lambda g, m: backward(g, m, 2.0), tracing_mode="fake")(grad, mask)
    nodes = [n for n in gm.graph.nodes if "native_dropout_backward" in str(n.target)]
    assert nodes
    first = footprints(nodes)
    size = FOOTPRINTS.copy()
    # The float copy of the mask, the input's size, beside the gradient it returns.
    assert first[nodes[0]] >= 2 * 32 * 48 * 4
    assert footprints(nodes) == first and FOOTPRINTS == size
