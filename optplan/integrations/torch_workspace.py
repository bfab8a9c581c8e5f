"""The bytes a CPU kernel allocates while it runs beyond the outputs a graph shows.

A graph's meta says what each op returns; the kernel behind it may allocate more while
it runs: `native_dropout` turns its boolean mask into a float tensor of the input's
size, its backward does the same, `_safe_softmax` builds a mask, convolutions and
layer norm take scratch. Those bytes are live only while the op runs, but they are live
on top of everything the step holds there. Steps:

1. An op's signature: its target, and for every tensor argument its shape, strides and
   dtype, every other argument as it is. Views, `getitem`, ops outside `aten`, and ops
   with symbolic shapes are not measured (they count 0).
2. Signatures not yet in the cache are measured together, one profiler session
   (`torch.profiler`, `profile_memory=True`): for each, real inputs of those shapes,
   strides and dtypes are made (floats normal, integers and booleans zero: valid indices
   for embeddings, gathers and losses), then the op runs inside its own
   `record_function` range while the random state is put back after.
3. Its footprint is the most bytes its range allocated at any moment (its outputs still
   held at the range's end); the plan counts that less the bytes it already gives the
   op's outputs (`torch_graph.graph_of`). An op that fails on these inputs counts 0.

The cache holds a signature's footprint for the whole process, so each distinct op is
run once however many partitions are judged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import torch
from torch import fx
from torch._C._profiler import _EventType
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils._pytree import tree_map

LOG = logging.getLogger("optplan.torch")

Signature = tuple[object, ...]

# Footprint in bytes by signature, for the whole process (step 3).
FOOTPRINTS: dict[Signature, int] = {}

_RANGE = "optplan.workspace."


def signature(node: fx.Node) -> Signature | None:
    """Step 1: what an op's allocations depend on, or None for an op not measured."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return None
    if target.namespace != "aten" or any(r.alias_info is not None for r in target._schema.returns):
        return None
    unmeasurable: list[object] = []

    def sign(x: Any) -> Any:
        if isinstance(x, fx.Node):
            x = x.meta.get("val")
            if x is None:
                unmeasurable.append(x)
        if isinstance(x, torch.Tensor):
            if not all(isinstance(d, int) for d in (*x.shape, *x.stride())):
                unmeasurable.append(x)
                return None
            return ("tensor", tuple(x.shape), tuple(x.stride()), str(x.dtype), str(x.device))
        if isinstance(x, torch.SymInt | torch.SymFloat | torch.SymBool):
            unmeasurable.append(x)
        return x

    args = tree_map(sign, (node.args, node.kwargs))
    if unmeasurable:
        return None
    return (str(target), repr(args))


def footprints(nodes: Iterable[fx.Node]) -> dict[fx.Node, int]:
    """Steps 2 and 3: the footprint of each measurable node, measuring the new ones."""
    signed = {n: s for n in nodes if (s := signature(n)) is not None}
    new = {s: n for n, s in signed.items() if s not in FOOTPRINTS}
    if new and not torch.autograd.profiler._is_profiler_enabled:
        FOOTPRINTS.update(_measure(list(new.items())))
    return {n: FOOTPRINTS[s] for n, s in signed.items() if s in FOOTPRINTS}


def _real(x: Any, generator: torch.Generator) -> Any:
    value = x.meta.get("val") if isinstance(x, fx.Node) else x
    if not isinstance(value, torch.Tensor):
        return value
    # Filled through a dense storage: strides may repeat elements (expand's zero stride).
    extent = 1 + sum((d - 1) * abs(s) for d, s in zip(value.shape, value.stride(), strict=True))
    storage = torch.zeros(extent if value.numel() else 0, dtype=value.dtype, device=value.device)
    if storage.is_floating_point() or storage.is_complex():
        storage.normal_(generator=generator)
    return storage.as_strided(tuple(value.shape), tuple(value.stride()))


def _measure(todo: list[tuple[Signature, fx.Node]]) -> dict[Signature, int]:
    generator = torch.Generator().manual_seed(0)
    failed: set[int] = set()
    with (
        unset_fake_temporarily(),
        torch.no_grad(),
        torch.random.fork_rng(devices=[]),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        for i, (_, node) in enumerate(todo):
            try:
                args, kwargs = tree_map(lambda x: _real(x, generator), (node.args, node.kwargs))
                with record_function(f"{_RANGE}{i}"):
                    out = node.target(*args, **kwargs)  # type: ignore[operator]
            except Exception as error:  # noqa: BLE001 - any kernel may refuse these inputs
                LOG.debug("workspace of %s not measured: %s", node.name, error)
                failed.add(i)
            args = kwargs = out = None  # noqa: F841 - freed outside the range
    peaks = _range_peaks(prof.profiler.kineto_results.experimental_event_tree())
    return {s: peaks.get(i, 0) for i, (s, _) in enumerate(todo) if i not in failed}


def _range_peaks(roots: list[Any]) -> dict[int, int]:
    """The most bytes allocated at once inside each `record_function` range."""
    peaks: dict[int, int] = {}
    stack = list(roots)
    while stack:
        event = stack.pop()
        if event.name.startswith(_RANGE):
            events = sorted(_allocations(event), key=lambda e: e.start_time_ns)
            live = peak = 0
            for e in events:
                live += e.typed[1].alloc_size
                peak = max(peak, live)
            peaks[int(event.name.removeprefix(_RANGE))] = peak
        else:
            stack.extend(event.children)
    return peaks


def _allocations(event: Any) -> list[Any]:
    found, stack = [], list(event.children)
    while stack:
        e = stack.pop()
        if e.typed[0] == _EventType.Allocation:
            found.append(e)
        stack.extend(e.children)
    return found
