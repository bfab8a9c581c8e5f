"""ONNX model -> Program, with every standard ONNX op runnable through `onnx.reference`.

Steps of `read_onnx(path, dims)`:

1. Load the file and run `onnx.checker.check_model`: a broken file, an op the onnx package
   does not know, or a node the checker rejects is one InputError naming the file.
2. Fix symbolic dimensions of the graph inputs from `dims` (`--dim NAME=VALUE`); an input
   dimension still unknown is an InputError that says which `--dim` fixes it.
3. Static shapes of every tensor (`optplan.onnx_shapes`): ONNX shape inference, plus the
   shape computations the graph does itself folded from the static input shapes, plus
   the model's own `value_info`; a shape that truly depends on data is refused naming
   the op.
4. Name every value: ONNX names ("/layer1/Conv_output_0", "input.1") become unique Python
   identifiers; `OnnxModel.names` maps one to the other.
5. Parameters: the graph inputs first (`num_input` of them), then the weights: the
   initializers and the values of `Constant` nodes. As with TVM's `keep_params_in_input`,
   parameters at or after `num_input` are weights; both are owned by the caller and never
   planned.
6. One binding per node: `Call("onnx.<OpType>", inputs, attrs)`. Empty optional inputs are
   skipped and the positions of the others kept in `onnx_inputs` (likewise `onnx_outputs`);
   `onnx_opset` is the model's opset; `out_ty` is the inferred type. A node with several
   outputs binds a tuple, then one `TupleGetItem` binding per output.
7. The function returns the graph outputs.

Importing this module registers an OpDef for every standard ONNX op under `onnx.<OpType>`:
its type rule reads `out_ty`, its kernel runs the node alone in `onnx.reference`'s
ReferenceEvaluator (a typed one-node model, built once per distinct node and input types
and cached), except where `onnx.reference` is wrong or slow (GatherElements, MatMul),
which run optplan's own NumPy kernels; the few ops that `onnx.reference` does not
implement get no kernel, so the executor runs its mixing kernel for them. Reshape, Squeeze, Unsqueeze, Flatten and
Identity are views of their first input: their kernel reshapes, so the result shares it.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import RuntimeImplementationError
from onnx.reference.ops import load_op

from optplan import kernels
from optplan.errors import InputError
from optplan.ir import (
    AttrValue,
    Binding,
    Block,
    Call,
    Expr,
    Function,
    Param,
    Program,
    SeqExpr,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
)
from optplan.onnx_shapes import ShapeFault, static_types
from optplan.ops import OpDef, fail, register

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
_STANDARD_DOMAINS = ("", "ai.onnx")
# The few dtypes NumPy has natively; bfloat16 and float8 would need ml_dtypes.
_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "complex64", "complex128"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class OnnxModel:
    """A model read into a Program, its weights by parameter name, and the names map."""

    program: Program
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)


def read_onnx(path: str, dims: dict[str, int], *, with_weights: bool = True) -> OnnxModel:
    """The Program of the model at `path`, with its weights unless `with_weights` is False."""
    model = _read_checked(path, load_data=with_weights)
    opset = _opset(model)
    declared = {v.name: v.type for v in model.graph.value_info}
    _fix_input_dims(model.graph, dims, path)
    types = _static_types(model, declared, path, trust_declared=not dims)
    names = _names(model.graph)
    fn = _function(model.graph, types, names, opset)
    weights = _weights(model, names, opset) if with_weights else {}
    return OnnxModel(Program((fn,)), weights, names)


# ---------------------------------------------------------------------------- reading


def _read_checked(path: str, *, load_data: bool) -> onnx.ModelProto:
    try:
        model = onnx.load(path, load_external_data=load_data)
    except Exception as error:  # noqa: BLE001 - protobuf raises unrelated types on bad bytes
        raise InputError(f"not an ONNX model: {_first_line(error)}", file=path) from None
    # Unknown ops first: the checker's own message for them is hard to read.
    _check_ops(model, path)
    try:
        # Checking the file rather than the loaded proto finds external weights beside it.
        onnx.checker.check_model(path)
    except (onnx.checker.ValidationError, OSError) as error:
        raise InputError(f"invalid ONNX model: {_first_line(error)}", file=path) from None
    if not model.graph.node and not model.graph.output:
        # Random bytes can decode as an empty but well-formed protobuf.
        raise InputError("not an ONNX model: it has no graph", file=path)
    return model


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in _STANDARD_DOMAINS:
            return int(entry.version)
    return onnx.defs.onnx_opset_version()


def _check_ops(model: onnx.ModelProto, path: str) -> None:
    """Every node must be a standard op that can be replayed deterministically."""
    for index, node in enumerate(model.graph.node):
        label = node.name or next((o for o in node.output if o), f"#{index}")
        where = f"node {label!r} ({node.op_type})"
        if node.domain not in _STANDARD_DOMAINS:
            raise InputError(f"{where}: op domain {node.domain!r} is not standard ONNX", file=path)
        if not onnx.defs.has(node.op_type):
            raise InputError(f"{where}: the onnx package does not know this op", file=path)
        if node.op_type in RANDOM_OPS and not any(a.name == "seed" for a in node.attribute):
            raise InputError(f"{where}: a random op without a seed cannot be replayed", file=path)
        for attribute in node.attribute:
            if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                raise InputError(f"{where}: ops with subgraphs are not supported", file=path)


# ---------------------------------------------------------------------------- shapes


def _fix_input_dims(graph: onnx.GraphProto, dims: dict[str, int], path: str) -> None:
    """Set every symbolic input dimension named in `dims`; fail on one left unknown."""
    used: set[str] = set()
    for value in _graph_inputs(graph):
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                continue
            name = dim.dim_param
            if name in dims:
                dim.dim_value = int(dims[name])
                used.add(name)
            elif name:
                raise InputError(
                    f"tensor {value.name!r} has unknown dimension {name!r}; "
                    f"fix it with --dim {name}=VALUE, or plan at a bound with --bound {name}=VALUE",
                    file=path,
                )
            else:
                raise InputError(
                    f"tensor {value.name!r} has an unnamed unknown dimension (axis {axis}); "
                    "give the input a static shape",
                    file=path,
                )
    for name in sorted(set(dims) - used):
        raise InputError(f"--dim {name}: no graph input has a dimension named {name!r}", file=path)
    # Shapes declared further in are re-derived from the fixed inputs.
    del graph.value_info[:]


def _static_types(
    model: onnx.ModelProto, declared: dict[str, onnx.TypeProto], path: str, *, trust_declared: bool
) -> dict[str, TensorType]:
    """The static tensor type of every value the graph reads or writes (`onnx_shapes`)."""
    try:
        found = static_types(model, declared, trust_declared=trust_declared)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        raise InputError(f"shape inference failed: {_first_line(error)}", file=path) from None
    except ShapeFault as error:
        raise InputError(str(error), file=path) from None
    types = {
        name: _tensor_type(name, elem_type, shape, path) for name, (elem_type, shape) in found.items()
    }
    for value in _graph_inputs(model.graph):
        types[value.name] = _declared_type(value.name, value.type, path)
    return types


def _declared_type(name: str, proto: onnx.TypeProto, path: str) -> TensorType:
    if proto.WhichOneof("value") != "tensor_type":
        kind = proto.WhichOneof("value")
        raise InputError(f"tensor {name!r} is a {kind}, not a tensor", file=path)
    tensor = proto.tensor_type
    if not tensor.HasField("shape"):
        raise InputError(f"tensor {name!r} has no inferred shape", file=path)
    shape = []
    for dim in tensor.shape.dim:
        if not dim.HasField("dim_value"):
            what = f"dimension {dim.dim_param!r}" if dim.dim_param else "an unnamed dimension"
            raise InputError(
                f"tensor {name!r} has unknown {what}, which depends on data; "
                "optplan needs static shapes",
                file=path,
            )
        shape.append(int(dim.dim_value))
    return _tensor_type(name, tensor.elem_type, tuple(shape), path)


def _tensor_type(name: str, elem_type: int, shape: tuple[int, ...], path: str) -> TensorType:
    dtype = _dtype_name(elem_type)
    if dtype not in _DTYPES:
        message = f"tensor {name!r} has dtype {dtype}, which optplan does not run"
        raise InputError(message, file=path)
    return TensorType(shape, dtype)


def _dtype_name(elem_type: int) -> str:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        return onnx.TensorProto.DataType.Name(elem_type).lower()


# ---------------------------------------------------------------------------- names


def _graph_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (old models list weights as inputs too)."""
    weights = {init.name for init in graph.initializer}
    return [value for value in graph.input if value.name not in weights]


def _constant_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    return [n for n in graph.node if n.op_type == "Constant" and n.domain in _STANDARD_DOMAINS]


def _names(graph: onnx.GraphProto) -> dict[str, str]:
    """A unique identifier for every value, and for every multi-output node a tuple name
    keyed `node:<index>`; deterministic in the graph alone, so weights and program agree."""
    names: dict[str, str] = {}
    taken: set[str] = set()

    def claim(key: str, raw: str) -> None:
        base = re.sub(r"\W", "_", raw) or "v"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = "v_" + base
        name, suffix = base, 0
        while name in taken:
            suffix += 1
            name = f"{base}_{suffix}"
        taken.add(name)
        names[key] = name

    for value in _graph_inputs(graph):
        claim(value.name, value.name)
    for init in graph.initializer:
        claim(init.name, init.name)
    for index, node in enumerate(graph.node):
        outputs = [o for o in node.output if o]
        if len(outputs) > 1:
            claim(f"node:{index}", node.name or node.op_type.lower())
        for output in outputs:
            claim(output, output)
    return names


# ---------------------------------------------------------------------------- program


def _function(
    graph: onnx.GraphProto, types: dict[str, TensorType], names: dict[str, str], opset: int
) -> Function:
    constants = _constant_nodes(graph)
    inputs = [v.name for v in _graph_inputs(graph)]
    weights = [i.name for i in graph.initializer] + [n.output[0] for n in constants]
    params = tuple(Param(Var(names[n]), types[n]) for n in inputs + weights)
    bindings: list[Binding] = []
    for index, node in enumerate(graph.node):
        if node.op_type == "Constant" and node.domain in _STANDARD_DOMAINS:
            continue
        bindings.extend(_node_bindings(index, node, types, names, opset))
    outputs = [names[v.name] for v in graph.output]
    bound = {b.var.name for b in bindings}
    block_outputs = tuple(Var(n) for n in dict.fromkeys(outputs) if n in bound)
    body: Expr = Var(outputs[0]) if len(outputs) == 1 else Tuple(tuple(Var(n) for n in outputs))
    out_types = [types[v.name] for v in graph.output]
    ret_type: Type = out_types[0] if len(out_types) == 1 else TupleType(tuple(out_types))
    return Function(
        name="main",
        params=params,
        ret_type=ret_type,
        body=SeqExpr((Block(tuple(bindings), dataflow=True, outputs=block_outputs),), body),
        attrs=(("num_input", len(inputs)),),
    )


def _node_bindings(
    index: int,
    node: onnx.NodeProto,
    types: dict[str, TensorType],
    names: dict[str, str],
    opset: int,
) -> list[Binding]:
    outputs = [o for o in node.output if o]
    out_types = tuple(types[o] for o in outputs)
    out_ty: Type = out_types[0] if len(out_types) == 1 else TupleType(out_types)
    attrs = dict(_node_attrs(node))
    attrs["out_ty"] = out_ty
    attrs["onnx_opset"] = opset
    if len(node.input) and not all(node.input):
        attrs["onnx_inputs"] = tuple(p for p, name in enumerate(node.input) if name)
    if not all(node.output):
        attrs["onnx_outputs"] = tuple(p for p, name in enumerate(node.output) if name)
    args = tuple(Var(names[name]) for name in node.input if name)
    call = Call(PREFIX + node.op_type, args, tuple(sorted(attrs.items())))
    if len(outputs) == 1:
        return [Binding(Var(names[outputs[0]]), call, out_ty)]
    whole = Var(names[f"node:{index}"])
    items = [
        Binding(Var(names[name]), TupleGetItem(whole, position), out_types[position])
        for position, name in enumerate(outputs)
    ]
    return [Binding(whole, call, out_ty), *items]


def _node_attrs(node: onnx.NodeProto) -> list[tuple[str, AttrValue]]:
    return [(a.name, _attr_value(onnx.helper.get_attribute_value(a))) for a in node.attribute]


def _attr_value(value: object) -> AttrValue:
    """An ONNX attribute as an IR attribute; a tensor becomes (TensorType, flat values)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, onnx.TensorProto):
        array = numpy_helper.to_array(value)
        return (TensorType(tuple(array.shape), array.dtype.name), tuple(array.reshape(-1).tolist()))
    if isinstance(value, (list, tuple)):
        return tuple(_attr_value(v) for v in value)
    if isinstance(value, (int, float, str)):
        return value
    # Sparse tensors and type protos: seen in no model we know; say so rather than guess.
    raise InputError(f"ONNX attribute of kind {type(value).__name__} is not supported")


# ---------------------------------------------------------------------------- weights


def _weights(model: onnx.ModelProto, names: dict[str, str], opset: int) -> dict[str, np.ndarray]:
    graph = model.graph
    weights = {names[init.name]: numpy_helper.to_array(init) for init in graph.initializer}
    for node in _constant_nodes(graph):
        (value,) = ReferenceEvaluator(node, opsets={"": opset}).run(None, {})
        weights[names[node.output[0]]] = np.asarray(value)
    for array in weights.values():
        # Weights are the caller's; a kernel or a plan that writes them is a bug to catch.
        array.flags.writeable = False
    return weights


# ---------------------------------------------------------------------------- op table

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
    """The inverse of `_attr_value`."""
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
    return data.shape[axis] if isinstance(axis, int) and -len(data.shape) <= axis < len(data.shape) else 1


def _register_all() -> None:
    """One OpDef per standard op; ops without a reference implementation get no kernel,
    so the executor runs its deterministic mixing kernel for them."""
    for schema in onnx.defs.get_all_schemas():
        if schema.domain in _STANDARD_DOMAINS:
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

__all__ = ["VIEW_OPS", "OnnxModel", "read_onnx"]
