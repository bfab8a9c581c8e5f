"""`optplan.executorch`, the name ExecuTorch users import: the algorithm lives in
`optplan.integrations.executorch`."""

from optplan.integrations.executorch import algorithm, plan_specs

__all__ = ["algorithm", "plan_specs"]
