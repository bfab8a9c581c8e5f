"""Write an ONNX model with its nodes in the order of a reordered program (and, for a
program that computes values again, `write_recomputed_onnx`: a copy of a node per
computation again).

1. Read the model again and the names `read_onnx` gave its values (`OnnxModel.names`):
   a node's binding is named after its output, or `node:<index>` for a node with
   several outputs.
2. Number every binding of the reordered program by its position; sort the nodes by the
   position of their binding (Constant nodes, which are weights, stay first).
3. Check the model and write it through a temporary file, so nothing is left half-way.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from optplan.errors import InputError
from optplan.frontends.onnx import read_onnx
from optplan.ir import Program, iter_bindings


def write_reordered_onnx(source: str, program: Program, target: str, dims: dict[str, int]) -> None:
    model = onnx.load(source)
    names = read_onnx(source, dims, with_weights=False).names
    position = {b.var.name: i for i, b in enumerate(iter_bindings(program.main.body))}

    def rank(item: tuple[int, onnx.NodeProto]) -> tuple[int, int]:
        index, node = item
        if node.op_type == "Constant":
            return (-1, index)
        outputs = [o for o in node.output if o]
        key = f"node:{index}" if len(outputs) > 1 else outputs[0]
        if names.get(key) not in position:
            raise InputError(
                f"node {node.name or index} of the model is not in the program", file=source
            )
        return (position[names[key]], index)

    _save(model, [node for _, node in sorted(enumerate(model.graph.node), key=rank)], target)


def node_variables(source: str, dims: dict[str, int]) -> set[str]:
    """The program variables that are a whole node's one output: the bindings a model
    with recomputation can compute again by running their node again."""
    model = onnx.load(source)
    names = read_onnx(source, dims, with_weights=False).names
    outputs = [
        [o for o in node.output if o] for node in model.graph.node if node.op_type != "Constant"
    ]
    return {names[out[0]] for out in outputs if len(out) == 1 and out[0] in names}


def write_recomputed_onnx(
    source: str, program: Program, copies: dict[str, str], target: str, dims: dict[str, int]
) -> None:
    """The model with a copy of a node wherever the program computes a value again: the
    copy's output is `<output>__rcK`, and every node after it reads that name."""
    model = onnx.load(source)
    names = read_onnx(source, dims, with_weights=False).names
    node_of: dict[str, onnx.NodeProto] = {}
    onnx_name: dict[str, str] = {}
    for index, node in enumerate(model.graph.node):
        outputs = [o for o in node.output if o]
        key = outputs[0] if len(outputs) == 1 else f"node:{index}"
        if node.op_type != "Constant" and key in names:
            node_of[names[key]] = node
            onnx_name[names[key]] = key
    nodes = [node for node in model.graph.node if node.op_type == "Constant"]
    latest: dict[str, str] = {}
    for binding in iter_bindings(program.main.body):
        var = binding.var.name
        original = copies.get(var, var)
        if original not in node_of:
            continue  # an item of a node with several outputs: its node is placed already
        node = onnx.NodeProto()
        node.CopyFrom(node_of[original])
        node.input[:] = [latest.get(name, name) for name in node.input]
        if var in copies:
            if len(node.output) != 1:
                raise InputError(
                    f"node {node.name or original} has several outputs; it cannot be computed again",
                    file=source,
                )
            fresh = f"{onnx_name[original]}__{var[len(original) + 1 :]}"
            latest[onnx_name[original]] = fresh
            node.output[:] = [fresh]
            node.name = f"{node.name}__{var[len(original) + 1 :]}" if node.name else ""
        nodes.append(node)
    _save(model, nodes, target)


def _save(model: onnx.ModelProto, nodes: list[onnx.NodeProto], target: str) -> None:
    """`model` with `nodes` as its graph's nodes, checked by onnx and written to `target`
    whole or not at all (through a `.partial` file beside it)."""
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.checker.check_model(model)
    partial = Path(target).with_name(Path(target).name + ".partial")
    onnx.save(model, str(partial))
    partial.replace(target)
