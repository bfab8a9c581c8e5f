"""One table of per-op facts: how each op types its output, runs in NumPy, and uses memory.

Analyses read `OPS[name]` instead of testing op names. An entry says:

- `infer(call, arg_types)`: the output type, or InputError naming the call when the
  operands do not fit;
- `kernel(call, args)`: the NumPy result (an array, or a tuple of arrays for ops with a
  tuple result); None for ops optplan cannot interpret, which run the mixing kernel;
- `inplace`: the output may take the bytes of an argument that dies at this op and has the
  same shape and dtype (elementwise ops);
- `view`: the output is the same bytes as the first argument, reinterpreted (reshape);
  views are never planned on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from optplan.ir import Call, Type

Infer = Callable[[Call, Sequence[Type | None]], Type]
Kernel = Callable[[Call, Sequence[object]], object]


@dataclass(frozen=True, slots=True)
class OpDef:
    name: str
    infer: Infer
    kernel: Kernel | None = None
    inplace: bool = False
    view: bool = False
    elementwise: bool = False


OPS: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    OPS[op.name] = op
    return op


def lookup(name: str) -> OpDef | None:
    """The table entry of `name`, or None when optplan does not know the op."""
    return OPS.get(name)


__all__ = ["OPS", "OpDef", "register", "lookup", "np"]
