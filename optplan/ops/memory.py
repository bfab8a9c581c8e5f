"""Kernel calls and memory: `call_tir`, `call_tir_inplace` and `call_kernel`, allocations
(`builtin.alloc_tensor`, `memory.alloc_storage`, `memory.alloc_tensor`) and kills, each
with its `Runs` override point in the interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optplan.ir import Call, Literal, ObjectType, ShapeType, TensorType, TupleType, Type
from optplan.ops.core import (
    OpDef,
    Runs,
    array,
    dtype_name,
    element_count,
    fail,
    inplace_outputs,
    int_param,
    register,
    shape_operand,
    shape_value,
    tensor_arg,
)

# ---------------------------------------------------------------------------- kernels and memory


def _infer_call_tir(call: Call, arg_types: Sequence[Type | None]) -> Type:
    out = call.attr("out_ty", call.attr("out_sinfo"))
    name = call.attr("kernel")
    if isinstance(out, tuple) and all(isinstance(t, TensorType) for t in out):
        # `out_sinfo=[R.Tensor(...), ...]`, the older spelling of a tuple result.
        out = TupleType(tuple(t for t in out if isinstance(t, TensorType)))
    if not isinstance(out, (TensorType, TupleType)):
        raise fail(call, f"{call.op} of {name!r} needs out_ty=R.Tensor(...), got {out!r}")
    outputs = out.fields if isinstance(out, TupleType) else (out,)
    if call.op == "call_tir_inplace":
        if call.attr("inplace_indices") is None:
            raise fail(call, f"call_tir_inplace of {name!r} needs inplace_indices")
        listed = inplace_outputs(call)
        if len(listed) != len(outputs):
            raise fail(call, f"call_tir_inplace of {name!r}: one inplace index per output")
        for output, index in zip(outputs, listed):
            _check_overwrite(call, arg_types, output, index)
    return out


def _check_overwrite(
    call: Call, arg_types: Sequence[Type | None], output: Type, index: int
) -> None:
    """An output written over argument `index` must be that argument's type exactly."""
    if index < 0:
        return
    if index >= len(arg_types):
        raise fail(call, f"call_tir_inplace: inplace index {index} names no argument")
    arg = arg_types[index]
    if arg is not None and arg != output:
        raise fail(
            call,
            f"call_tir_inplace of {call.attr('kernel')!r}: output {output} cannot overwrite "
            f"argument {index} of type {arg}",
        )


def _literal_dtype(call: Call, position: int) -> str:
    operand = call.args[position] if position < len(call.args) else None
    if not isinstance(operand, Literal) or operand.kind != "dtype":
        raise fail(call, f"{call.op}: operand {position} must be R.dtype(...)")
    return dtype_name(call, str(operand.value))


def _infer_builtin_alloc(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TensorType(shape_operand(call, 0), _literal_dtype(call, 1))


def _infer_alloc_storage(call: Call, arg_types: Sequence[Type | None]) -> Type:
    shape_operand(call, 0)
    return ObjectType()


def _infer_memory_alloc(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TensorType(shape_operand(call, 2), _literal_dtype(call, 3))


def _storage_view(call: Call, args: Sequence[object]) -> object:
    """`R.memory.alloc_tensor(storage, offset, shape, dtype)`: a view of the storage."""
    storage, offset, shape = array(args, 0), int_param(call, "offset", 1), shape_value(args, 2)
    dtype = np.dtype(_literal_dtype(call, 3))
    size_bytes = element_count(shape) * dtype.itemsize
    if offset < 0 or offset + size_bytes > storage.nbytes:
        raise fail(
            call,
            f"memory.alloc_tensor of {size_bytes} bytes at offset {offset} does not fit in a "
            f"storage of {storage.nbytes} bytes",
        )
    return (
        storage.reshape(-1).view(np.uint8)[offset : offset + size_bytes].view(dtype).reshape(shape)
    )


def _no_value(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return TupleType(())


def _infer_packed(call: Call, arg_types: Sequence[Type | None]) -> Type:
    """A packed call returns what its `ty_args` say (TVM prints one type), else an
    object, as TVM types it."""
    types = call.attr("ty_args")
    if types is None:
        return ObjectType()
    if not (isinstance(types, tuple) and len(types) == 1 and isinstance(types[0], Type)):
        raise fail(call, f"{call.op} of {call.attr('func')!r} needs ty_args=(type,)")
    return types[0]


register(OpDef("call_tir", _infer_call_tir))
# `kernel(a, b, out)` after CallTIRRewrite: writes its destinations, returns nothing.
# Lowered programs run with optplan.runtime.lowered, which knows storages and destinations.
register(OpDef("call_kernel", _no_value, runs=Runs.KERNEL))
register(OpDef("call_tir_inplace", _infer_call_tir))
register(
    OpDef(
        "builtin.alloc_tensor",
        _infer_builtin_alloc,
        # Fresh memory is zeroed so that a replay is deterministic.
        lambda call, args: np.zeros(shape_value(args, 0), _literal_dtype(call, 1)),
        runs=Runs.ALLOC_FRESH,
    )
)
register(
    OpDef(
        "memory.alloc_storage",
        _infer_alloc_storage,
        lambda call, args: np.zeros(shape_value(args, 0), np.uint8),
        effect=True,
        runs=Runs.ALLOC_STORAGE,
    )
)
register(
    OpDef(
        "memory.alloc_tensor",
        _infer_memory_alloc,
        _storage_view,
        view=True,
        effect=True,
        runs=Runs.ALLOC_TENSOR,
    )
)
for _kill, _runs in (
    ("memory.kill_tensor", Runs.KILL_TENSOR),
    ("memory.kill_storage", Runs.KILL_STORAGE),
    ("vm.kill_object", Runs.KILL_OBJECT),
):
    register(OpDef(_kill, _no_value, lambda call, args: (), effect=True, runs=_runs))


# ---------------------------------------------------------------------------- runtime builtins


def _infer_tensor_to_shape(call: Call, arg_types: Sequence[Type | None]) -> Type:
    """`R.tensor_to_shape(t)`: the values of a 1-D int64 tensor as a shape, computed from
    data at run time (TVM's way to a data-dependent size, named by a `match_cast`)."""
    x = tensor_arg(call, arg_types, 0)
    if len(x.shape) != 1:
        raise fail(call, f"tensor_to_shape needs a 1-D tensor, got shape {x.shape}")
    return ShapeType(x.shape[0])


# Functions of the runtime's (VM builtins): a packed call's type is its annotation. None
# has a kernel here, so a program calling one is planned but not replayed.
register(OpDef("call_packed", _infer_packed, effect=True, runtime_result=True))
register(OpDef("call_builtin_with_ctx", _infer_packed, effect=True, runtime_result=True))
register(OpDef("tensor_to_shape", _infer_tensor_to_shape))
