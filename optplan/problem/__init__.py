"""The allocation problem, the seam between programs and planners, and its judge.

- `buffers`: the records (`Interval`, `Buffer`, `Alias`);
- `memory`: `Memory`, one of the memories a problem's buffers may live in;
- `core`: `Problem`, its alias classes and the live-bytes lower bound;
- `columns`: a million buffers as NumPy columns, without a million objects;
- `csv_io`: MiniMalloc's CSV, read and written;
- `plan`: `Plan`, `Status` and `validate`, the one independent judge of every planner.

Planners import this package and nothing of the IR.
"""

from optplan.problem.buffers import Alias, Buffer, Interval
from optplan.problem.core import (
    AliasClass,
    Problem,
    alias_classes,
    columns_of,
    live_profile,
    lower_bound,
    merge_intervals,
    residue_of,
)
from optplan.problem.csv_io import read_csv, write_csv
from optplan.problem.memory import MAIN, Memory, one_arena

__all__ = [
    "MAIN",
    "Alias",
    "AliasClass",
    "Buffer",
    "Interval",
    "Memory",
    "Problem",
    "alias_classes",
    "columns_of",
    "live_profile",
    "lower_bound",
    "merge_intervals",
    "one_arena",
    "read_csv",
    "residue_of",
    "write_csv",
]
