"""A `.tflite` model's main subgraph -> Program, with its weights, as TFLite Micro plans it.

Steps of `read_tflite(path)`:

1. Parse the flatbuffer (`tflite_format`): a truncated or foreign file is one InputError.
2. Refuse what optplan cannot plan, in one line each: several subgraphs (control flow:
   IF, WHILE, CALL_ONCE), buffers kept outside the flatbuffer, a model that already
   carries an offline plan (`optplan check` judges that one), an operator that writes a
   constant, a variable or a tensor written before, a read of a tensor nothing wrote, a
   dtype NumPy has not (int4, string, resource) or a dynamic dimension.
3. Name every tensor: TFLite names ("model/conv2d/Relu;model/conv2d/BiasAdd") become
   unique Python identifiers from their first part (`tensor_names`, deterministic in the subgraph alone, so the plan's buffer
   names map back to tensor indices).
4. Parameters: each graph input's value as the caller holds it (`<name>_host`), then the
   weights: tensors whose buffer holds data, and variable tensors (TFLite Micro keeps
   those in its persistent tail; their initial value, else zeros). Weights are never
   planned.
5. Bindings: one `tflite.input` call copies every graph input into its arena tensor at
   point 0 (TFLite Micro makes all inputs live from the start); then one
   `tflite.<OPNAME>` call per operator in the file's order, typed by the file; an operator
   with several outputs binds a tuple, then one item per output.
6. The function returns the graph outputs; the frontend registry plans them (TFLite Micro
   keeps them in the arena until the end) and rounds every size up to 16 bytes, as
   TFLite Micro's planner does.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from optplan.errors import InputError
from optplan.frontends.tflite_format import FormatFault, Model, Subgraph, Tensor, parse_model
from optplan.frontends.tflite_ops import INPUT, PREFIX, register_op
from optplan.ir import (
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

OFFLINE_PLAN = "OfflineMemoryAllocation"


@dataclass(frozen=True, slots=True)
class TfliteProgram:
    """A model's main subgraph as a Program, its weights by parameter name, the model."""

    program: Program
    model: Model
    weights: dict[str, np.ndarray] = field(default_factory=dict)


def read_bytes(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=path) from None


def parse(data: bytes, path: str) -> Model:
    """The model in `data`, or one InputError saying why it is not a `.tflite` model."""
    try:
        return parse_model(data)
    except FormatFault as error:
        raise InputError(f"not a TensorFlow Lite model: {error}", file=path) from None


def main_subgraph(model: Model, path: str) -> Subgraph:
    """The one subgraph optplan plans; InputError for several (control flow) or none."""
    if len(model.subgraphs) != 1:
        raise InputError(
            f"the model has {len(model.subgraphs)} subgraphs; optplan plans models of one "
            "subgraph (no IF, WHILE or CALL_ONCE)",
            file=path,
        )
    if model.external:
        raise InputError("buffers stored outside the flatbuffer are not supported", file=path)
    return model.subgraphs[0]


def read_tflite(
    path: str, *, with_weights: bool = True, offline_plan_ok: bool = False
) -> TfliteProgram:
    """The Program of the model at `path` (see the module's steps); with
    `offline_plan_ok`, an offline plan the model carries is ignored, not refused."""
    model = parse(read_bytes(path), path)
    graph = main_subgraph(model, path)
    if not offline_plan_ok and model.metadata_bytes(OFFLINE_PLAN) is not None:
        raise InputError(
            f"the model already carries an offline memory plan ({OFFLINE_PLAN}); "
            "use 'optplan check' to validate it",
            file=path,
        )
    names = tensor_names(graph)
    stored = stored_tensors(model, graph)
    try:
        fn = _function(graph, names, stored)
    except InputError as error:
        raise error.located(path) from None
    weights = _weights(model, graph, names, stored) if with_weights else {}
    return TfliteProgram(Program((fn,)), model, weights)


def tensor_names(graph: Subgraph) -> tuple[str, ...]:
    """A unique Python identifier for every tensor, from its name, in tensor order.

    The tensors a plan places claim their names first (the graph inputs, then each
    operator's outputs), so a weight that shares a name's first part takes the suffix."""
    first = [*graph.inputs, *(i for op in graph.operators for i in op.outputs)]
    count = len(graph.tensors)
    order = dict.fromkeys(i for i in [*first, *range(count)] if 0 <= i < count)
    names: dict[int, str] = {}
    taken: set[str] = set()
    for index in order:
        # The converter joins the names of fused ops with ';': the first names the tensor.
        raw = graph.tensors[index].name.split(";")[0]
        names[index] = _claim(raw or f"t{index}", taken)
    return tuple(names[i] for i in range(count))


def _claim(raw: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", raw) or "t"
    if base[0].isdigit() or keyword.iskeyword(base):
        base = "t_" + base
    name, suffix = base, 0
    while name in taken:
        suffix += 1
        name = f"{base}_{suffix}"
    taken.add(name)
    return name


def stored_tensors(model: Model, graph: Subgraph) -> frozenset[int]:
    """Tensors whose bytes are not the arena's: constants (a buffer with data) and
    variables (TFLite Micro's persistent tail)."""
    return frozenset(
        t.index
        for t in graph.tensors
        if t.is_variable or (0 < t.buffer < len(model.buffers) and model.buffers[t.buffer])
    )


def read_stored(graph: Subgraph, stored: frozenset[int]) -> list[int]:
    """The stored tensors some operator reads: the function's weights, in tensor order."""
    return sorted({i for op in graph.operators for i in op.inputs if i in stored})


def tensor_type(tensor: Tensor) -> TensorType:
    """The tensor's static type; InputError for a dtype NumPy has not or a dynamic dim."""
    if tensor.dtype is None:
        raise InputError(
            f"tensor {tensor.name!r} has type {tensor.type_name}, which optplan does not run"
        )
    if any(d < 0 for d in tensor.shape):
        raise InputError(f"tensor {tensor.name!r} has a dynamic shape {list(tensor.shape)}")
    return TensorType(tuple(tensor.shape), tensor.dtype)


def _function(graph: Subgraph, names: tuple[str, ...], stored: frozenset[int]) -> Function:
    taken = set(names)
    hosts = [_claim(names[i] + "_host", taken) for i in graph.inputs]
    weights = read_stored(graph, stored)
    params = [Param(Var(h), tensor_type(graph.tensors[i])) for h, i in zip(hosts, graph.inputs)]
    params += [Param(Var(names[i]), tensor_type(graph.tensors[i])) for i in weights]
    bindings = _input_bindings(graph, names, hosts, taken)
    defined = set(graph.inputs) | set(weights)
    for op in graph.operators:
        bindings.extend(_operator_bindings(graph, op.index, names, defined, stored, taken))
    outputs = [names[i] for i in graph.outputs]
    for index in graph.outputs:
        if index not in defined:
            name = graph.tensors[index].name
            raise InputError(f"graph output {name!r} is written by no operator")
    out_types = [tensor_type(graph.tensors[i]) for i in graph.outputs]
    body: Expr = Var(outputs[0]) if len(outputs) == 1 else Tuple(tuple(Var(n) for n in outputs))
    ret_type: Type = out_types[0] if len(out_types) == 1 else TupleType(tuple(out_types))
    kept = tuple(Var(n) for n in dict.fromkeys(outputs))
    block = Block(tuple(bindings), dataflow=True, outputs=kept)
    attrs = (("num_input", len(hosts)),)
    return Function("main", tuple(params), ret_type, SeqExpr((block,), body), attrs)


def _input_bindings(
    graph: Subgraph, names: tuple[str, ...], hosts: list[str], taken: set[str]
) -> list[Binding]:
    """One `tflite.input` call defining every graph input at the same point."""
    if not graph.inputs:
        return []
    types = tuple(tensor_type(graph.tensors[i]) for i in graph.inputs)
    args = tuple(Var(h) for h in hosts)
    if len(types) == 1:
        call = Call(INPUT, args, (("out_ty", types[0]),))
        return [Binding(Var(names[graph.inputs[0]]), call, types[0])]
    whole = _claim("graph_inputs", taken)
    call = Call(INPUT, args, (("out_ty", TupleType(types)),))
    items = [
        Binding(Var(names[i]), TupleGetItem(Var(whole), k), types[k])
        for k, i in enumerate(graph.inputs)
    ]
    return [Binding(Var(whole), call, TupleType(types)), *items]


def _operator_bindings(
    graph: Subgraph,
    index: int,
    names: tuple[str, ...],
    defined: set[int],
    stored: frozenset[int],
    taken: set[str],
) -> list[Binding]:
    op = graph.operators[index]
    where = f"operator {index} ({op.op})"
    for i in op.inputs:
        if i >= len(graph.tensors) or (i >= 0 and i not in defined):
            what = repr(graph.tensors[i].name) if i < len(graph.tensors) else f"#{i}"
            raise InputError(f"{where} reads tensor {what} before any operator writes it")
    if not op.outputs:
        raise InputError(f"{where} has no outputs; optplan plans no stateful operators")
    for i in op.outputs:
        if not 0 <= i < len(graph.tensors) or i in defined or i in stored:
            what = repr(graph.tensors[i].name) if 0 <= i < len(graph.tensors) else f"#{i}"
            raise InputError(
                f"{where} writes tensor {what}, which is an input, a weight or written before"
            )
    defined.update(op.outputs)
    register_op(op.op)
    types = tuple(tensor_type(graph.tensors[i]) for i in op.outputs)
    out_ty: Type = types[0] if len(types) == 1 else TupleType(types)
    args = tuple(Var(names[i]) for i in op.inputs if i >= 0)
    call = Call(PREFIX + op.op, args, (("operator", index), ("out_ty", out_ty)))
    if len(types) == 1:
        return [Binding(Var(names[op.outputs[0]]), call, out_ty)]
    whole = _claim(f"{op.op.lower()}_{index}", taken)
    items = [
        Binding(Var(names[i]), TupleGetItem(Var(whole), k), types[k])
        for k, i in enumerate(op.outputs)
    ]
    return [Binding(Var(whole), call, out_ty), *items]


def _weights(
    model: Model, graph: Subgraph, names: tuple[str, ...], stored: frozenset[int]
) -> dict[str, np.ndarray]:
    """Every stored tensor's value: its buffer's bytes, or zeros for a variable without."""
    weights: dict[str, np.ndarray] = {}
    for index in read_stored(graph, stored):
        tensor = graph.tensors[index]
        type_ = tensor_type(tensor)
        data = model.buffers[tensor.buffer] if 0 < tensor.buffer < len(model.buffers) else b""
        if data:
            if len(data) != type_.size_bytes:
                raise InputError(
                    f"tensor {tensor.name!r} has {len(data)} bytes of data; "
                    f"its shape and type need {type_.size_bytes}"
                )
            array = np.frombuffer(data, dtype=type_.dtype).reshape(type_.shape)
        else:
            array = np.zeros(type_.shape, dtype=type_.dtype)
        array.flags.writeable = False
        weights[names[index]] = array
    return weights
