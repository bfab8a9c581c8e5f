"""Readers of programs and problems, chosen by suffix (`registry`), and writers back.

- `script`, `script_print`, `script_symbolic`: TVMScript in Relax, read and printed, with
  symbolic shapes and their bounds;
- `onnx`, `onnx_shapes`, `onnx_write`: ONNX models read (shapes folded from the graph's
  own computations) and written back reordered;
- `registry`: `FRONTENDS` and `load`, which reads a file once and derives its Problem.
"""

from optplan.frontends.registry import (
    FRONTENDS,
    Frontend,
    Loaded,
    Options,
    Source,
    frontend_of,
    load,
    load_replay,
    read_plan,
    register,
    script_bounds,
)

__all__ = [
    "FRONTENDS",
    "Frontend",
    "Loaded",
    "Options",
    "Source",
    "frontend_of",
    "load",
    "load_replay",
    "read_plan",
    "register",
    "script_bounds",
]
