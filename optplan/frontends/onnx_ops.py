"""Every standard ONNX op in optplan's op table, as `onnx.<OpType>`: a type rule that
reads the node's `out_ty`, and a kernel that runs the node alone in `onnx.reference`
(a typed one-node model, built once per distinct node and input types), except
GatherElements and MatMul, which run optplan's own NumPy kernels. Ops that
`onnx.reference` does not implement get no kernel: the executor mixes their bytes.
Importing this module registers them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import RuntimeImplementationError
from onnx.reference.ops import load_op

from optplan.errors import InputError
from optplan.ir import (
    AttrValue,
    Call,
    TensorType,
    TupleType,
    Type,
)
from optplan.ops import OpDef, fail, kernels, register

PREFIX = "onnx."


VIEW_OPS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"})


# Elementwise ops whose output may take the bytes of an input that dies at the node.
ELEMENTWISE_OPS = frozenset(
    {
        "Abs", "Add", "Ceil", "Clip", "Cos", "Div", "Elu", "Erf", "Exp", "Floor", "Gelu",
        "HardSigmoid", "HardSwish", "LeakyRelu", "Log", "Mul", "Neg", "Pow", "Reciprocal",
        "Relu", "Round", "Sigmoid", "Sign", "Sin", "Softplus", "Sqrt", "Sub", "Tanh",
    }
)  # fmt: skip


# Ops that draw random numbers; without a seed the replay could not be compared.
RANDOM_OPS = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Bernoulli",
        "Multinomial",
    }
)


# Facts the replay's input maker reads (see `optplan.ops.OpDef`), as for Relax's ops.
_KEEPS_SIGN_OPS = VIEW_OPS | {"Add", "Mul", "Cast"}


_NEEDS_POSITIVE_OPS = frozenset({"Sqrt", "Log"})


_INDEXING_OPS = frozenset({"Gather", "GatherElements"})


STANDARD_DOMAINS = ("", "ai.onnx")


def attr_value(value: object) -> AttrValue:
    """An ONNX attribute as an IR attribute; a tensor becomes (TensorType, flat values)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, onnx.TensorProto):
        array = numpy_helper.to_array(value)
        return (TensorType(tuple(array.shape), array.dtype.name), tuple(array.reshape(-1).tolist()))
    if isinstance(value, (list, tuple)):
        return tuple(attr_value(v) for v in value)
    if isinstance(value, (int, float, str)):
        return value
    # Sparse tensors and type protos: seen in no model we know; say so rather than guess.
    raise InputError(f"ONNX attribute of kind {type(value).__name__} is not supported")


# Attributes optplan adds to a call; the rest are the node's own.
# optplan's own attributes of an `onnx.*` call, never handed to the ONNX node
# (`inplace_indices` is `use_inplace_calls`'s).
_OWN_ATTRS = frozenset({"out_ty", "onnx_opset", "onnx_inputs", "onnx_outputs", "inplace_indices"})


def _infer(call: Call, arg_types: Sequence[Type | None]) -> Type:
    out = call.attr("out_ty")
    if not isinstance(out, (TensorType, TupleType)):
        raise fail(call, f"{call.op} needs out_ty, the type ONNX shape inference gave")
    return out


@dataclass(frozen=True, slots=True)
class _NodeSpec:
    """What an `onnx.*` call says about its node: enough to rebuild it alone."""

    op_type: str
    opset: int
    attributes: tuple[tuple[str, AttrValue], ...]
    inputs: tuple[int, ...]  # positions of the present inputs among the node's inputs
    outputs: tuple[int, ...]
    out_types: tuple[TensorType, ...]


def _spec(call: Call) -> _NodeSpec:
    out = call.attr("out_ty")
    out_types = out.fields if isinstance(out, TupleType) else (out,)
    if not all(isinstance(t, TensorType) for t in out_types):
        raise fail(call, f"{call.op} needs out_ty, the type ONNX shape inference gave")
    return _NodeSpec(
        op_type=call.op[len(PREFIX) :],
        opset=_int(call.attr("onnx_opset", onnx.defs.onnx_opset_version())),
        attributes=tuple((k, v) for k, v in call.attrs if k not in _OWN_ATTRS),
        inputs=_ints(call.attr("onnx_inputs", tuple(range(len(call.args))))),
        outputs=_ints(call.attr("onnx_outputs", tuple(range(len(out_types))))),
        out_types=out_types,  # type: ignore[arg-type]
    )


def _int(value: AttrValue) -> int:
    assert isinstance(value, int)
    return value


def _ints(value: AttrValue) -> tuple[int, ...]:
    assert isinstance(value, tuple)
    return tuple(_int(v) for v in value)


def _kernel(call: Call, args: Sequence[object]) -> object:
    spec = _spec(call)
    arrays_in = [np.asarray(a) for a in args]
    if spec.op_type in VIEW_OPS:
        # Each view op only reinterprets its first input's bytes in a new shape; reshaping
        # keeps the result a view of them, as the memory plan assumes.
        return arrays_in[0].reshape(spec.out_types[0].shape)
    own = _OWN_KERNELS.get(spec.op_type)
    if own is not None:
        results = own(dict(spec.attributes), arrays_in)
        arrays = tuple(np.asarray(r, dtype=t.dtype) for r, t in zip(results, spec.out_types))
        return arrays if isinstance(call.attr("out_ty"), TupleType) else arrays[0]
    in_types = tuple(TensorType(a.shape, a.dtype.name) for a in arrays_in)
    feeds = {f"i{p}": a for p, a in zip(spec.inputs, arrays_in)}
    reference = list(_evaluator(spec, in_types).run(None, feeds))
    # Copies in the declared dtype: a reference op may hand back its input or a wider type.
    arrays = tuple(np.array(r, dtype=t.dtype) for r, t in zip(reference, spec.out_types))
    return arrays if isinstance(call.attr("out_ty"), TupleType) else arrays[0]


def _own_gather_elements(attrs: dict[str, AttrValue], args: list[np.ndarray]) -> list[object]:
    return [kernels.gather_elements(args[0], args[1], _int(attrs.get("axis", 0)))]


def _own_matmul(attrs: dict[str, AttrValue], args: list[np.ndarray]) -> list[object]:
    return [kernels.matmul(args[0], args[1], args[0].dtype)]


# Ops whose `onnx.reference` implementation is wrong (GatherElements cannot broadcast a
# one-element index) or slow (MatMul in float16): optplan's own NumPy kernels.
_OWN_KERNELS: dict[str, Callable[[dict[str, AttrValue], list[np.ndarray]], list[object]]] = {
    "GatherElements": _own_gather_elements,
    "MatMul": _own_matmul,
}


@functools.lru_cache(maxsize=4096)
def _evaluator(spec: _NodeSpec, in_types: tuple[TensorType, ...]) -> ReferenceEvaluator:
    """The node alone in a typed one-node model, ready to run; identical nodes on identical
    types share one. Typed inputs let the ops that ONNX defines as functions of their input
    types (Gelu) expand."""
    node = _node_proto(spec)
    inputs = [_value_info(name, t) for name, t in zip(filter(None, node.input), in_types)]
    outputs = [_value_info(name, t) for name, t in zip(filter(None, node.output), spec.out_types)]
    graph = onnx.helper.make_graph([node], "one_node", inputs, outputs)
    opsets = [onnx.helper.make_opsetid("", spec.opset)]
    return ReferenceEvaluator(onnx.helper.make_model(graph, opset_imports=opsets))


def _value_info(name: str, type_: TensorType) -> onnx.ValueInfoProto:
    elem_type = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(type_.dtype))
    return onnx.helper.make_tensor_value_info(name, elem_type, list(type_.shape))


def _node_proto(spec: _NodeSpec) -> onnx.NodeProto:
    inputs = _named("i", spec.inputs)
    outputs = _named("o", spec.outputs)
    node = onnx.helper.make_node(spec.op_type, inputs, outputs)
    schema = onnx.defs.get_schema(spec.op_type, spec.opset, "")
    for name, value in spec.attributes:
        # The schema gives the kind, which an empty list alone would not tell.
        kind = int(schema.attributes[name].type.value)  # type: ignore[attr-defined]
        node.attribute.append(onnx.helper.make_attribute(name, _onnx_value(value), attr_type=kind))
    return node


def _named(prefix: str, positions: tuple[int, ...]) -> list[str]:
    """Names at the given positions, empty names (absent optional values) between them."""
    names = [""] * (max(positions, default=-1) + 1)
    for position in positions:
        names[position] = f"{prefix}{position}"
    return names


def _onnx_value(value: AttrValue) -> object:
    """The inverse of `attr_value`."""
    if isinstance(value, tuple) and len(value) == 2:
        ty, flat = value
        if isinstance(ty, TensorType):
            return numpy_helper.from_array(np.array(flat, dtype=ty.dtype).reshape(ty.shape))
    if isinstance(value, tuple):
        return [_onnx_value(v) for v in value]
    return value


def _has_reference(schema: onnx.defs.OpSchema) -> bool:
    """Whether `onnx.reference` can run the op (a few, like GlobalLpPool, it cannot)."""
    try:
        load_op("", schema.name, schema.since_version)
    except RuntimeImplementationError:
        return False
    except Exception:  # noqa: BLE001 - any other failure is a lookup that needs context
        # Ops defined as functions of their input types load only with a node in context.
        return True
    return True


def _indexed_axis_size(call: Call, data: TensorType) -> int:
    """Gather's and GatherElements' indices index `axis` of the data (default 0)."""
    axis = call.attr("axis", 0)
    return (
        data.shape[axis]
        if isinstance(axis, int) and -len(data.shape) <= axis < len(data.shape)
        else 1
    )


def _register_all() -> None:
    """One OpDef per standard op; ops without a reference implementation get no kernel,
    so the executor runs its deterministic mixing kernel for them."""
    for schema in onnx.defs.get_all_schemas():
        if schema.domain in STANDARD_DOMAINS:
            name = schema.name
            register(
                OpDef(
                    PREFIX + name,
                    _infer,
                    _kernel if _has_reference(schema) else None,
                    inplace=name in ELEMENTWISE_OPS,
                    view=name in VIEW_OPS,
                    elementwise=name in ELEMENTWISE_OPS,
                    keeps_elements=name in VIEW_OPS,
                    keeps_sign=name in _KEEPS_SIGN_OPS,
                    needs_positive=name in _NEEDS_POSITIVE_OPS,
                    indexed_size=_indexed_axis_size if name in _INDEXING_OPS else None,
                )
            )


_register_all()
