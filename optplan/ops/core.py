"""The op table's core: the entry record `OpDef`, `Runs`, the registry `OPS` with
`register`, `lookup` and `has_effect`, `evaluate` (how both replays run a call), and the
helpers and type rules that every family of ops shares.

The families of ops register their entries with `register`; `optplan.ops` imports them
in the order the registry keeps.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from optplan.errors import InputError
from optplan.ir import Call, Literal, TensorType, TupleType, Type
from optplan.ops import kernels

Infer = Callable[[Call, Sequence[Type | None]], Type]
Kernel = Callable[[Call, Sequence[object]], object]
Into = Callable[[Call, Sequence[object], np.ndarray], bool]
IndexedSize = Callable[[Call, TensorType], int]
# Arithmetic of one call from its operand types and its result type (recomputation's cost).
Flops = Callable[[Call, Sequence[Type | None], Type], int]


class Runs(enum.Enum):
    """Which override point of the interpreter (`optplan.runtime.interpreter`) runs an op."""

    OP = "op"  # computes its value from its operands (`call_op`)
    KERNEL = "kernel"  # writes its destination operands (`call_kernel`)
    ALLOC_STORAGE = "alloc_storage"
    ALLOC_TENSOR = "alloc_tensor"  # carved from a storage
    ALLOC_FRESH = "alloc_fresh"  # a tensor of its own
    KILL_TENSOR = "kill_tensor"
    KILL_STORAGE = "kill_storage"
    KILL_OBJECT = "kill_object"


@dataclass(frozen=True, slots=True)
class OpDef:
    name: str
    infer: Infer
    kernel: Kernel | None = None
    inplace: bool = False
    view: bool = False
    elementwise: bool = False
    into: Into | None = None
    effect: bool = False
    keeps_elements: bool = False
    keeps_sign: bool = False
    needs_positive: bool = False
    indexed_size: IndexedSize | None = None
    runs: Runs = Runs.OP
    flops: Flops | None = None
    # The result is the runtime's memory (a packed function's): never planned, as TVM's
    # StaticPlanBlockMemory gives a packed call's result no storage.
    runtime_result: bool = False


OPS: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    OPS[op.name] = op
    return op


def lookup(name: str) -> OpDef | None:
    """The table entry of `name`, or None when optplan does not know the op."""
    return OPS.get(name)


# Ops with an effect that the table has no entry for (they have no type rule), and the
# namespaces whose every op has one.
_EFFECTS_UNTABLED = frozenset({"print", "assert_op", "call_packed", "call_builtin_with_ctx"})
_EFFECT_NAMESPACES = ("memory.", "vm.")


def has_effect(name: str) -> bool:
    """Whether op `name` does something besides computing its value (`OpDef.effect`)."""
    op = lookup(name)
    if op is not None and op.effect:
        return True
    return name in _EFFECTS_UNTABLED or name.startswith(_EFFECT_NAMESPACES)


# ---------------------------------------------------------------------------- helpers


def fail(call: Call, message: str) -> InputError:
    """An InputError about `call`, placed at its source location when it has one."""
    loc = call.loc
    if loc is None:
        return InputError(message)
    return InputError(message, file=loc.file, line=loc.line, col=loc.col)


def param(call: Call, name: str, position: int | None = None, default: object = None) -> object:
    """Attribute `name`, else the Literal operand at `position`, else `default`."""
    for key, value in call.attrs:
        if key == name:
            return value
    if position is not None and position < len(call.args):
        operand = call.args[position]
        if isinstance(operand, Literal):
            return operand.value
    return default


def int_param(
    call: Call, name: str, position: int | None = None, default: int | None = None
) -> int:
    """An integer attribute (or positional literal); InputError when it is anything else."""
    value = param(call, name, position, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(call, f"{call.op}: {name} must be an integer, not {value!r}")
    return value


def optional_int(call: Call, name: str, position: int | None = None) -> int | None:
    """An integer attribute that may be absent or None (an axis of "all axes")."""
    if param(call, name, position) is None:
        return None
    return int_param(call, name, position)


def float_attr(call: Call, name: str, default: float) -> float:
    value = call.attr(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(call, f"{call.op}: {name} must be a number, not {value!r}")
    return float(value)


def shape_value(args: Sequence[object], index: int) -> tuple[int, ...]:
    """Operand `index` of a kernel that is an `R.shape([...])`, as a tuple of ints."""
    value = args[index]
    if not isinstance(value, tuple) or not all(isinstance(d, int) for d in value):
        raise TypeError(f"operand {index} is {value!r}, not a shape")
    return value


def array(args: Sequence[object], index: int) -> np.ndarray:
    """Operand `index` of a kernel, which the type rule has made sure is a tensor."""
    value = args[index]
    if not isinstance(value, np.ndarray):
        raise TypeError(f"operand {index} is a {type(value).__name__}, not an array")
    return value


def inplace_outputs(call: Call) -> tuple[int, ...]:
    """For each output of the call, the argument it overwrites, or -1 for a fresh output
    (`inplace_indices` of `call_tir_inplace`); empty for other calls."""
    indices = call.attr("inplace_indices")
    if indices is None:
        return ()
    if isinstance(indices, int):
        indices = (indices,)
    if not isinstance(indices, tuple):
        raise fail(call, f"inplace_indices must be integers, not {indices!r}")
    return tuple(int(i) for i in indices if isinstance(i, int))


def overwritten_args(call: Call) -> tuple[int, ...]:
    """Positions of the arguments whose memory the call's outputs take (and overwrite)."""
    return tuple(i for i in inplace_outputs(call) if i >= 0)


def evaluate(
    call: Call, args: Sequence[object], out_type: Type
) -> np.ndarray | tuple[np.ndarray, ...]:
    """The value of `call` on `args`: its kernel's result, or the mixing kernel's for
    opaque ops, checked against `out_type` (a mismatch is a bug in the table)."""
    op = lookup(call.op)
    if op is None or op.kernel is None:
        name = str(call.attr("kernel") or call.op)
        return _checked(call, kernels.mix(name, args, out_type), out_type)
    with np.errstate(all="ignore"):
        return _checked(call, op.kernel(call, args), out_type)


def _checked(call: Call, value: object, out_type: Type) -> np.ndarray | tuple[np.ndarray, ...]:
    if isinstance(out_type, TupleType):
        if not isinstance(value, tuple) or len(value) != len(out_type.fields):
            raise RuntimeError(f"{call.op} returned {type(value).__name__}, expected {out_type}")
        fields = [_checked(call, v, t) for v, t in zip(value, out_type.fields)]
        return tuple(f for f in fields if isinstance(f, np.ndarray))
    array = np.asarray(value)
    if isinstance(out_type, TensorType) and (
        array.shape != out_type.shape or array.dtype != np.dtype(out_type.dtype)
    ):
        raise RuntimeError(
            f"{call.op} kernel gave {array.shape} {array.dtype}, its type rule says "
            f"{out_type.shape} {out_type.dtype}"
        )
    return array


# ---------------------------------------------------------------------------- shared rules


def tensor_arg(call: Call, arg_types: Sequence[Type | None], index: int) -> TensorType:
    """The type of operand `index`, which must be a tensor of known type."""
    if index >= len(arg_types):
        raise fail(call, f"{call.op} needs at least {index + 1} operands, got {len(arg_types)}")
    arg = arg_types[index]
    if arg is None:
        raise fail(call, f"{call.op}: the type of operand {index} is not known")
    if not isinstance(arg, TensorType):
        raise fail(call, f"{call.op}: operand {index} is not a tensor")
    return arg


def ints(value: object, what: str, call: Call) -> tuple[int, ...]:
    """An attribute that may be one integer or a list of them, as a tuple."""
    if isinstance(value, bool) or value is None:
        raise fail(call, f"{call.op}: {what} must be integers, not {value!r}")
    if isinstance(value, int):
        return (value,)
    if isinstance(value, tuple) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(v for v in value if isinstance(v, int))
    raise fail(call, f"{call.op}: {what} must be integers, not {value!r}")


def normal_axis(call: Call, axis: int, ndim: int) -> int:
    """`axis` counted from the front; InputError when it is out of range."""
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise fail(call, f"{call.op}: axis {axis} is out of range for {ndim} dimensions")
    return axis % ndim if ndim else 0


def broadcast(call: Call, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy's broadcasting of `shapes`, or InputError naming them all."""
    ndim = max(len(s) for s in shapes)
    out: list[int] = []
    for position in range(ndim):
        dims = {s[len(s) - ndim + position] for s in shapes if len(s) - ndim + position >= 0}
        dims.discard(1)
        if len(dims) > 1:
            listed = " and ".join(str(s) for s in shapes)
            raise fail(call, f"{call.op} of {listed}: shapes do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def same_dtype(call: Call, types: Sequence[TensorType]) -> str:
    dtypes = {t.dtype for t in types}
    if len(dtypes) > 1:
        raise fail(call, f"{call.op} of {' and '.join(t.dtype for t in types)}: dtypes differ")
    return types[0].dtype


def infer_unary(call: Call, arg_types: Sequence[Type | None]) -> Type:
    return tensor_arg(call, arg_types, 0)


def dtype_name(call: Call, dtype: str) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise fail(call, f"{call.op}: unknown dtype {dtype!r}") from None


def shape_operand(call: Call, index: int) -> tuple[int, ...]:
    from optplan.ir import ShapeExpr

    operand = call.args[index] if index < len(call.args) else None
    if not isinstance(operand, ShapeExpr):
        raise fail(call, f"{call.op}: operand {index} must be R.shape([...])")
    return operand.values


def element_count(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def _tensor_bytes(type_: Type | None) -> int:
    if isinstance(type_, TensorType):
        return type_.size_bytes
    if isinstance(type_, TupleType):
        return sum(_tensor_bytes(t) for t in type_.fields)
    return 0


def compute_cost(call: Call, arg_types: Sequence[Type | None], result: Type | None) -> int:
    """What running `call` once costs, for choosing what to compute again: its FLOPs where
    its family gives a rule (`OpDef.flops`: matmul, convolution), else the bytes it reads
    and writes (the cost of an op bound by memory traffic)."""
    op = lookup(call.op)
    if op is not None and op.flops is not None and result is not None:
        try:
            return max(1, op.flops(call, arg_types, result))
        except (TypeError, ValueError, IndexError):
            pass  # a rule that cannot read these types: the bytes below
    return max(1, sum(_tensor_bytes(t) for t in arg_types) + _tensor_bytes(result))
