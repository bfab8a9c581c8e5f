"""`optplan.tvm`, the name TVM users import: the pass lives in `optplan.integrations.tvm`."""

from optplan.integrations.tvm import (
    FunctionReport,
    Left,
    Options,
    PlanBlockMemory,
    PlanWarning,
    pipeline,
    plan_module,
    storage_bytes,
)

__all__ = [
    "FunctionReport",
    "Left",
    "Options",
    "PlanBlockMemory",
    "PlanWarning",
    "pipeline",
    "plan_module",
    "storage_bytes",
]
