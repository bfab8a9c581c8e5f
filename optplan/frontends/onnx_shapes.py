"""Static shapes of every tensor of an ONNX model, the way a user expects them.

`onnx.shape_inference` stops at shapes computed by the graph itself: TorchScript exports
build masks and position ids through `Shape -> Gather -> Concat -> ConstantOfShape ->
Where -> Expand` chains over the static input shape, and the inferred type of everything
downstream keeps a symbolic `unk__0`. None of it depends on data. Steps of `static_types`:

1. Infer with `onnx.shape_inference` (strict, with data propagation), on a skeleton of
   the model whose large initializers are typed inputs (their data is never needed).
2. Fold: walk the nodes in order, keeping the value of every small tensor (at most
   FOLD_LIMIT elements) that is known without the inputs' data: small initializers,
   `Constant` nodes, `Shape` and `Size` of a tensor whose shape is static, and any
   deterministic node whose inputs are all known (evaluated alone in `onnx.reference`).
   Every folded node's outputs get their static type from the values.
3. Re-infer on a copy of the model where every folded value is an initializer and its
   node is gone, so `Reshape`, `Expand`, `ConstantOfShape`, `Range`, `Tile`... read
   constant shape operands. Repeat 2-3 while new static types appear.
   The model's own static `value_info` goes into every inference (only when the graph
   inputs were static in the file: after a `--dim` it could be stale), so a shape the
   file declares fills a gap that inference cannot reach.
4. Tensors still unknown: onnxruntime's symbolic shape inference, where it is installed.
5. A tensor still without a static shape is an InputError naming the first node that
   produces one and why: an op whose output size is computed from data (NonZero, a TopK
   whose k is not constant, ...) is refused by name.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

FOLD_LIMIT = 1 << 16  # elements: shape tensors and small masks, never weights
MAX_ROUNDS = 8
# Ops whose output shape is computed from the values of a data input.
DATA_DEPENDENT = frozenset(
    {"NonZero", "Unique", "Compress", "NonMaxSuppression", "TopK", "StringSplit",
     "RandomNormal", "RandomUniform", "Multinomial", "Loop", "Scan", "If"}
)  # fmt: skip
_NEVER_FOLD = frozenset(
    {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli",
     "Multinomial", "Loop", "Scan", "If"}
)  # fmt: skip
Shape = tuple[int, ...]


class ShapeFault(Exception):
    """The model has a tensor whose shape depends on data: the message names the node."""


def static_types(
    model: onnx.ModelProto, declared: dict[str, onnx.TypeProto], *, trust_declared: bool
) -> dict[str, tuple[int, Shape]]:
    """(ONNX element type, static shape) of every value the graph reads or writes.

    `model` has static graph inputs; `declared` is the file's own `value_info` (used for
    what inference leaves unknown when `trust_declared`). Raises ShapeFault or
    onnx.shape_inference.InferenceError.
    """
    types: dict[str, tuple[int, Shape]] = {}
    values: dict[str, np.ndarray] = {}
    model = _skeleton(model)
    if trust_declared:
        model = _with_declared(model, declared)
    for _ in range(MAX_ROUNDS):
        folded_model = _with_folded(model, values)
        inferred = onnx.shape_inference.infer_shapes(folded_model, strict_mode=True, data_prop=True)
        before = len(types)
        types.update(_known(inferred.graph))
        _fold(model, types, values)
        if len(types) == before:
            break
    missing = _missing(model, types)
    if missing:
        types.update(
            {n: t for n, t in _symbolic(_with_folded(model, values)).items() if n in missing}
        )
    _refuse_unknown(model, types, values)
    return types


# ---------------------------------------------------------------------------- types


def _static(declared: dict[str, onnx.TypeProto]) -> dict[str, tuple[int, Shape]]:
    """The declared types that are tensors of fully static shape."""
    found = {}
    for name, proto in declared.items():
        if proto.WhichOneof("value") != "tensor_type":
            continue
        tensor = proto.tensor_type
        if tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim):
            found[name] = (tensor.elem_type, tuple(int(d.dim_value) for d in tensor.shape.dim))
    return found


def _known(graph: onnx.GraphProto) -> dict[str, tuple[int, Shape]]:
    declared = {v.name: v.type for v in [*graph.input, *graph.value_info, *graph.output]}
    known = _static(declared)
    for init in graph.initializer:
        known[init.name] = (init.data_type, tuple(int(d) for d in init.dims))
    return known


def _missing(model: onnx.ModelProto, types: dict[str, tuple[int, Shape]]) -> set[str]:
    return {o for node in model.graph.node for o in node.output if o and o not in types}


def _symbolic(model: onnx.ModelProto) -> dict[str, tuple[int, Shape]]:
    """onnxruntime's symbolic shape inference, where it is installed and succeeds."""
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except ImportError:
        return {}
    try:
        inferred = SymbolicShapeInference.infer_shapes(model, auto_merge=True)
    except Exception:  # noqa: BLE001 - a fallback: its failures are not the user's fault
        return {}
    if inferred is None:
        return {}
    return _known(inferred.graph)


def _skeleton(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its large initializers as typed graph inputs: inference needs their
    types only, and serialising a model's weights for every round of inference would
    cost more than the inference (17 s of 20 on a 4-layer GPT-2)."""
    graph = model.graph
    large = [init for init in graph.initializer if not _small(init.dims)]
    if not large:
        return model
    skeleton = onnx.ModelProto(ir_version=model.ir_version)
    skeleton.opset_import.extend(model.opset_import)
    skeleton.functions.extend(model.functions)
    bones = skeleton.graph
    bones.name = graph.name
    bones.node.extend(graph.node)
    bones.input.extend(graph.input)
    bones.output.extend(graph.output)
    bones.value_info.extend(graph.value_info)
    bones.initializer.extend(init for init in graph.initializer if _small(init.dims))
    listed = {value.name for value in graph.input}
    for init in large:
        if init.name not in listed:
            value = onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            bones.input.append(value)
    return skeleton


def _with_declared(model: onnx.ModelProto, declared: dict[str, onnx.TypeProto]) -> onnx.ModelProto:
    """A copy of `model` whose value_info holds the declared types that are static."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for name in _static(declared):
        copy.graph.value_info.add(name=name).type.CopyFrom(declared[name])
    return copy


# ---------------------------------------------------------------------------- folding


def _fold(
    model: onnx.ModelProto, types: dict[str, tuple[int, Shape]], values: dict[str, np.ndarray]
) -> None:
    """Add to `values` (and `types`) every small tensor known without the inputs' data."""
    graph = model.graph
    for init in graph.initializer:
        if init.name not in values and _small(init.dims) and _has_data(init):
            values[init.name] = numpy_helper.to_array(init)
    opset = _opset(model)
    for node in graph.node:
        outputs = [o for o in node.output if o]
        if not outputs or all(o in values for o in outputs) or node.op_type in _NEVER_FOLD:
            continue
        results = _evaluate(node, values, types, opset)
        if results is None:
            continue
        for name, result in zip(node.output, results):
            if not name:
                continue
            array = np.asarray(result)
            types[name] = (onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)
            if array.size <= FOLD_LIMIT:
                values[name] = array


def _evaluate(
    node: onnx.NodeProto,
    values: dict[str, np.ndarray],
    types: dict[str, tuple[int, Shape]],
    opset: int,
) -> list[np.ndarray] | None:
    """The node's outputs when they are known without data, else None."""
    if node.op_type == "Shape" and node.input[0] in types:
        shape = np.array(types[node.input[0]][1], dtype=np.int64)
        start, end = _attr(node, "start", 0), _attr(node, "end", len(shape))
        return [shape[start:end]]
    if node.op_type == "Size" and node.input[0] in types:
        return [np.array(int(np.prod(types[node.input[0]][1])), dtype=np.int64)]
    present = [name for name in node.input if name]
    if node.op_type != "Constant" and not all(name in values for name in present):
        return None
    try:
        return list(_run_alone(node, [values[n] for n in present], opset))
    except Exception:  # noqa: BLE001 - not foldable here; the replay will say what is wrong
        return None


def _run_alone(node: onnx.NodeProto, args: list[np.ndarray], opset: int) -> list[np.ndarray]:
    present = [name for name in node.input if name]
    inputs = [
        onnx.helper.make_tensor_value_info(
            name, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape)
        )
        for name, a in zip(present, args)
    ]
    outputs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o]
    graph = onnx.helper.make_graph([node], "fold", inputs, outputs)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
    return list(ReferenceEvaluator(model).run(None, dict(zip(present, args))))


def _with_folded(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` where each folded value is an initializer and its node is gone."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    if not values:
        return copy
    existing = {init.name for init in graph.initializer}
    kept = [n for n in graph.node if not all(o in values for o in n.output if o) or not n.output]
    del graph.node[:]
    graph.node.extend(kept)
    for name, array in values.items():
        if name not in existing:
            graph.initializer.append(numpy_helper.from_array(np.asarray(array), name))
    return copy


# ---------------------------------------------------------------------------- refusal


def _refuse_unknown(
    model: onnx.ModelProto, types: dict[str, tuple[int, Shape]], values: dict[str, np.ndarray]
) -> None:
    for index, node in enumerate(model.graph.node):
        unknown = [o for o in node.output if o and o not in types]
        if not unknown:
            continue
        label = node.name or unknown[0] or f"#{index}"
        where = f"node {label!r} ({node.op_type})"
        if node.op_type in DATA_DEPENDENT:
            raise ShapeFault(
                f"{where}: the shape of its output {unknown[0]!r} depends on the values of "
                "its input data; optplan plans static shapes only"
            )
        computed = [n for n in node.input[1:] if n and n not in values]
        if computed:
            raise ShapeFault(
                f"{where}: the shape of its output {unknown[0]!r} is computed from "
                f"{computed[0]!r}, which depends on data; optplan plans static shapes only"
            )
        raise ShapeFault(f"{where}: the shape of its output {unknown[0]!r} cannot be inferred")


# ---------------------------------------------------------------------------- helpers


def _small(dims: object) -> bool:
    return int(np.prod(list(dims))) <= FOLD_LIMIT  # type: ignore[call-overload]


def _has_data(init: onnx.TensorProto) -> bool:
    return init.data_location != onnx.TensorProto.EXTERNAL


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    for attribute in node.attribute:
        if attribute.name == name:
            return int(attribute.i)
    return default


def _opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return onnx.defs.onnx_opset_version()


__all__ = ["DATA_DEPENDENT", "FOLD_LIMIT", "ShapeFault", "static_types"]
