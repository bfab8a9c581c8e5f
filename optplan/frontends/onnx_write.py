"""Write an ONNX model with its nodes in the order of a reordered program.

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
            raise InputError(f"node {node.name or index} of the model is not in the program", file=source)
        return (position[names[key]], index)

    nodes = [node for _, node in sorted(enumerate(model.graph.node), key=rank)]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.checker.check_model(model)
    partial = Path(target).with_name(Path(target).name + ".partial")
    onnx.save(model, str(partial))
    partial.replace(target)
