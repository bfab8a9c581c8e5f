"""Program-to-program rewrites of TVM Relax's memory passes, each a function a user can
run on its own and print as TVMScript:

- `kill_after_last_use` (KillAfterLastUse): kills after each tensor's and storage's last use;
- `use_inplace_calls` (DataflowUseInplaceCalls): elementwise ops write over a dying input;
- `attach_layout_free_buffers` (AttachAttrLayoutFreeBuffers): which kernel arguments are
  weights, and dead kernels dropped;
- `plan_memory` (StaticPlanBlockMemory's lowering): storages, tensors at planned
  offsets, destination-passing kernel calls, then kills.
"""

from optplan.passes.inplace import use_inplace_calls
from optplan.passes.kill import kill_after_last_use
from optplan.passes.layout_free import attach_layout_free_buffers
from optplan.passes.lower import lower_program, plan_memory

__all__ = [
    "attach_layout_free_buffers",
    "kill_after_last_use",
    "lower_program",
    "plan_memory",
    "use_inplace_calls",
]
