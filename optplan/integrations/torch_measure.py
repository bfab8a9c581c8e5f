"""The measured peak of a training step on CPU, with PyTorch's own memory profiler.

1. Run the step once under `torch.profiler.profile(profile_memory=True,
   record_shapes=True, with_stack=True)` (after a warm-up step the caller runs, so that
   compiling and the gradients' first allocation are not in it).
2. `MemoryProfileTimeline` gives every allocation and free of the profiled region, by
   category; summed over categories, the bytes live at each event.
3. The step's peak is the most bytes live at any event less the bytes live when the
   step began (the parameters, the inputs and the gradients of the warm-up): what the
   step allocates on top of what the caller holds.

On a CUDA device the same figure is `torch.cuda.max_memory_allocated` over the step
less the bytes allocated when it began (the caching allocator's reserve not counted).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import MemoryProfileTimeline


def measured_peak(step: Callable[[], object], device: str = "cpu") -> int:
    """Bytes the step allocates at its peak over what was live when it began."""
    if torch.device(device).type == "cuda":
        return _cuda_peak(step, torch.device(device))
    with profile(
        activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True
    ) as prof:
        step()
    timeline = MemoryProfileTimeline(prof._memory_profile())
    _, sizes = timeline._coalesce_timeline(torch.device("cpu"))
    totals = [sum(row) for row in sizes]
    if not totals:
        return 0
    return int(max(totals) - totals[0])


def _cuda_peak(step: Callable[[], object], device: torch.device) -> int:
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    start = torch.cuda.memory_allocated(device)
    step()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - start)
