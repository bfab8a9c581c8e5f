"""ONNX model -> Program, with every standard ONNX op runnable through `onnx.reference`.

Steps of `read_onnx(path, dims)`:

1. Load the file and run `onnx.checker.check_model`: a broken file, an op the onnx package
   does not know, or a node the checker rejects is one InputError naming the file.
2. Fix symbolic dimensions of the graph inputs from `dims` (`--dim NAME=VALUE`); an input
   dimension still unknown is an InputError that says which `--dim` fixes it.
3. Static shapes of every tensor (`optplan.frontends.onnx_shapes`): ONNX shape inference, plus the
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

Importing this module registers an OpDef for every standard ONNX op under `onnx.<OpType>`
(`onnx_ops`). Reshape, Squeeze, Unsqueeze, Flatten and Identity are views of their first
input: their kernel reshapes, so the result shares it.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from optplan.errors import InputError
from optplan.frontends.onnx_ops import PREFIX, RANDOM_OPS, STANDARD_DOMAINS, VIEW_OPS, attr_value
from optplan.frontends.onnx_shapes import ShapeFault, static_types
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
        if entry.domain in STANDARD_DOMAINS:
            return int(entry.version)
    return onnx.defs.onnx_opset_version()


def _check_ops(model: onnx.ModelProto, path: str) -> None:
    """Every node must be a standard op that can be replayed deterministically."""
    for index, node in enumerate(model.graph.node):
        label = node.name or next((o for o in node.output if o), f"#{index}")
        where = f"node {label!r} ({node.op_type})"
        if node.domain not in STANDARD_DOMAINS:
            raise InputError(f"{where}: op domain {node.domain!r} is not standard ONNX", file=path)
        if not onnx.defs.has(node.op_type):
            raise InputError(f"{where}: the onnx package does not know this op", file=path)
        if node.op_type in RANDOM_OPS and not any(a.name == "seed" for a in node.attribute):
            raise InputError(f"{where}: a random op without a seed cannot be replayed", file=path)
        for attribute in node.attribute:
            if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                raise InputError(f"{where}: ops with subgraphs are not supported", file=path)


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
        name: _tensor_type(name, elem_type, shape, path)
        for name, (elem_type, shape) in found.items()
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


def _graph_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (old models list weights as inputs too)."""
    weights = {init.name for init in graph.initializer}
    return [value for value in graph.input if value.name not in weights]


def _constant_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    return [n for n in graph.node if n.op_type == "Constant" and n.domain in STANDARD_DOMAINS]


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


def _function(
    graph: onnx.GraphProto, types: dict[str, TensorType], names: dict[str, str], opset: int
) -> Function:
    constants = _constant_nodes(graph)
    inputs = [v.name for v in _graph_inputs(graph)]
    weights = [i.name for i in graph.initializer] + [n.output[0] for n in constants]
    params = tuple(Param(Var(names[n]), types[n]) for n in inputs + weights)
    bindings: list[Binding] = []
    for index, node in enumerate(graph.node):
        if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS:
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
    return [(a.name, attr_value(onnx.helper.get_attribute_value(a))) for a in node.attribute]


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


__all__ = ["VIEW_OPS", "OnnxModel", "read_onnx"]
