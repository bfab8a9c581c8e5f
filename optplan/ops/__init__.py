"""One table of per-op facts: how each op types its output, runs in NumPy, and uses memory.

Analyses read `OPS[name]` instead of testing op names. An entry says:

- `infer(call, arg_types)`: the output type, or InputError naming the call when the
  operands do not fit;
- `kernel(call, args)`: the NumPy result (an array, or a tuple of arrays for ops with a
  tuple result); None for ops optplan cannot interpret, which run the mixing kernel;
- `inplace`: the output may take the bytes of an argument that dies at this op and has the
  same shape and dtype (elementwise ops);
- `view`: the output is the same bytes as the first argument, reinterpreted (reshape);
  views are never planned on their own;
- `effect`: the op does something besides computing its value (allocates, kills, prints),
  so it keeps its place in the program whatever the order of the values around it;
- `keeps_elements`: the output is the first operand's elements in the same order (reshape);
  `keeps_sign`: positive operands give a positive output (add, astype);
  `needs_positive`: the op's domain is the positive numbers (sqrt, log);
  `indexed_size(call, data)`: for ops that read operand 1 as indices into operand 0
  (`take`, ONNX Gather), how many entries the indexed axis of `data` has. The replay's
  input maker reads these four (`optplan.runtime.replay.make_inputs`);
- `runs`: the interpreter's override point for the op (`Runs`): most ops compute a value;
  kernel calls, allocations and kills have points of their own, which the planned and
  lowered runners override;
- `into(call, args, out)`: optional destination passing: writes the result straight into
  the array `out` and returns True, or returns False when it cannot (the executor then
  runs `kernel` and copies). NumPy ufuncs do this with `out=`, saving a copy per op.

Op names are Relax's, without `R.`. Attributes are read as TVM 0.27 prints them
(`axis=`, `axes=`, `strides=[1, 1]`, `padding=[t, l, b, r]`, ...); an attribute TVM prints
positionally (`R.triu(x, 1)`) is also accepted as a `Literal` operand. `evaluate(call,
args, out_type)` runs a call the way both replays do: the kernel, or the mixing kernel,
then a check that the result has the inferred type.

The package: `core` (the record, the registry, `evaluate`, shared helpers and type rules)
and one module per family of ops, imported below in the order the registry keeps:
`elementwise` (and matmul), `shapes` (and views), `reductions` (and normalisation),
`conv` (and pooling), `indexing` (joining and indexing), `creation` (and more tensor ops),
`memory` (kernel calls, allocations, kills). NumPy bodies too long for a lambda live in
`optplan.ops.kernels`.
"""

from __future__ import annotations

import dataclasses

from optplan.ops.core import (
    OPS,
    IndexedSize,
    Infer,
    Into,
    Kernel,
    OpDef,
    Runs,
    array,
    broadcast,
    compute_cost,
    evaluate,
    fail,
    float_attr,
    has_effect,
    inplace_outputs,
    int_param,
    ints,
    lookup,
    normal_axis,
    optional_int,
    overwritten_args,
    param,
    register,
    same_dtype,
    shape_value,
    tensor_arg,
)

# Each family registers its ops as it is imported, and the registry keeps that order
# (anything that walks `OPS` sees it): keep these imports in this order.
# isort: off
from optplan.ops import elementwise  # noqa: F401
from optplan.ops import shapes  # noqa: F401
from optplan.ops import reductions  # noqa: F401
from optplan.ops import conv  # noqa: F401
from optplan.ops import indexing  # noqa: F401
from optplan.ops import creation  # noqa: F401
from optplan.ops import memory  # noqa: F401
from optplan.ops.conv import Window, window
# isort: on

# Facts for drawing replay inputs: a sqrt or log of a value in [-1, 1) would be a NaN that
# spreads and hides later corruption.
for _name in ("sqrt", "rsqrt", "log"):
    OPS[_name] = dataclasses.replace(OPS[_name], needs_positive=True)
for _name in ("add", "multiply", "astype", "reshape", "expand_dims", "squeeze", "flatten"):
    OPS[_name] = dataclasses.replace(OPS[_name], keeps_sign=True)

__all__ = [
    "OPS",
    "IndexedSize",
    "Infer",
    "Into",
    "Kernel",
    "OpDef",
    "Runs",
    "Window",
    "array",
    "broadcast",
    "compute_cost",
    "evaluate",
    "fail",
    "float_attr",
    "has_effect",
    "inplace_outputs",
    "int_param",
    "ints",
    "lookup",
    "normal_axis",
    "optional_int",
    "overwritten_args",
    "param",
    "register",
    "same_dtype",
    "shape_value",
    "tensor_arg",
    "window",
]
