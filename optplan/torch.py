"""`optplan.torch`, the name PyTorch users import: the partition lives in
`optplan.integrations.torch_budget`."""

from optplan.integrations.torch_budget import Report, last_report, memory_budget

__all__ = ["Report", "last_report", "memory_budget"]
