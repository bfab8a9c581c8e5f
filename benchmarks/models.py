"""Model zoo benchmark: real architectures as ONNX, planned by every planner.

Steps:

1. Build each architecture with onnx.helper at its published shapes, with random float32
   weights from a fixed seed (scaled small), and save it to a temporary directory with
   its weights as external data; nothing large is committed.
2. Load it as the command line does (`optplan.load`): shape inference, liveness, the
   Problem of its intermediates (function outputs are not planned, as in TVM).
3. Plan it with naive, tokens (TVM's StaticPlanBlockMemory rule), greedy and cpsat (with
   a time limit), and cpsat again after `use_inplace_calls` (elementwise ops writing over
   inputs that die there); check every plan with `validate`.
3b. With `--replay`: run the model in NumPy twice unplanned (the first run builds the
   kernels' caches) and once in the cpsat plan's arena; report the planned run's time over
   the second unplanned run's, and whether every value is bit-for-bit the same.
4. Do the same for every `*.2_fused_dataflow.py` dump of TVM 0.27 in
   ../shared/data/tvm/, when the TVMScript reader is importable.
5. Print a table and write benchmarks/results/models.csv.

    python benchmarks/models.py --models resnet18,bert --time-limit 30 [--replay]

Architectures: ResNet-18 and ResNet-50 (torchvision, BatchNorm kept as its own node),
MobileNetV2 (ReLU6 as Clip), UNet (Ronneberger et al.: 572x572 input, valid convolutions,
cropped skips), BERT-base encoder (12 layers, d=768, seq 128, with pooler), GPT-2-small
decoder (12 layers, seq 128, tied LM head), ViT-B/16 (224x224, 197 tokens).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optplan.errors import InputError
from optplan.frontends import Loaded, load
from optplan.planners import get_planner
from optplan.problem import Problem, lower_bound
from optplan.problem.plan import Plan, validate

OPSET = 17
SEED = 0
TVM_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "tvm"
RESULTS = Path(__file__).resolve().parent / "results" / "models.csv"

# ---------------------------------------------------------------------------- graph builder


class Net:
    """Collects nodes and initializers while a model is being built; names are unique."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.count = 0

    def name(self, tag: str) -> str:
        self.count += 1
        return f"{tag}_{self.count}"

    def input(self, name: str, elem_type: int, shape: list[int]) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        return name

    def weight(self, shape: tuple[int, ...], scale: float = 0.02) -> str:
        array = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        return self.const(array, "w")

    def const(self, array: np.ndarray, tag: str = "c") -> str:
        name = self.name(tag)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def scalar(self, value: float) -> str:
        return self.const(np.array(value, dtype=np.float32), "s")

    def ints(self, values: Sequence[int]) -> str:
        return self.const(np.array(values, dtype=np.int64), "i")

    def op(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        return self.ops(op_type, inputs, 1, **attrs)[0]

    def ops(self, op_type: str, inputs: Sequence[str], count: int, **attrs: Any) -> list[str]:
        outputs = [self.name(op_type.lower()) for _ in range(count)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outputs, **attrs))
        return outputs

    def model(self, outputs: Sequence[str]) -> onnx.ModelProto:
        """The model, with the outputs' types filled in by shape inference."""
        declared = [onnx.ValueInfoProto(name=name) for name in outputs]
        graph = helper.make_graph(self.nodes, "model", self.inputs, declared, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        model.graph.ClearField("output")
        model.graph.output.extend(inferred.graph.output)
        return model


# ---------------------------------------------------------------------------- CNN blocks


def conv(net: Net, x: str, cin: int, cout: int, k: int, stride: int = 1, **kw: int) -> str:
    groups, pad = kw.get("groups", 1), kw.get("pad", k // 2)
    w = net.weight((cout, cin // groups, k, k), math.sqrt(2 / (cin // groups * k * k)))
    inputs = [x, w] + ([net.weight((cout,))] if kw.get("bias", 0) else [])
    return net.op(
        "Conv", inputs, kernel_shape=[k, k], strides=[stride] * 2, pads=[pad] * 4, group=groups
    )


def batch_norm(net: Net, x: str, channels: int) -> str:
    ones, zeros = np.ones(channels, np.float32), np.zeros(channels, np.float32)
    params = [net.const(ones), net.const(zeros), net.const(zeros), net.const(ones)]
    return net.op("BatchNormalization", [x, *params], epsilon=1e-5)


def conv_bn(net: Net, x: str, cin: int, cout: int, k: int, stride: int = 1, *, act: str = "relu",
            groups: int = 1) -> str:  # fmt: skip
    y = batch_norm(net, conv(net, x, cin, cout, k, stride, groups=groups), cout)
    if act == "relu":
        return net.op("Relu", [y])
    if act == "relu6":
        return net.op("Clip", [y, net.scalar(0.0), net.scalar(6.0)])
    return y


def classifier(net: Net, x: str, channels: int, classes: int = 1000) -> str:
    pooled = net.op("Flatten", [net.op("GlobalAveragePool", [x])])
    w, b = net.weight((classes, channels)), net.weight((classes,))
    return net.op("Gemm", [pooled, w, b], transB=1)


def basic_block(net: Net, x: str, cin: int, cout: int, stride: int) -> str:
    y = conv_bn(net, x, cin, cout, 3, stride)
    y = conv_bn(net, y, cout, cout, 3, 1, act="none")
    skip = x if stride == 1 and cin == cout else conv_bn(net, x, cin, cout, 1, stride, act="none")
    return net.op("Relu", [net.op("Add", [y, skip])])


def bottleneck(net: Net, x: str, cin: int, width: int, stride: int) -> str:
    cout = width * 4
    y = conv_bn(net, x, cin, width, 1)
    y = conv_bn(net, y, width, width, 3, stride)
    y = conv_bn(net, y, width, cout, 1, act="none")
    skip = x if stride == 1 and cin == cout else conv_bn(net, x, cin, cout, 1, stride, act="none")
    return net.op("Relu", [net.op("Add", [y, skip])])


def resnet(depths: Sequence[int], wide: bool) -> onnx.ModelProto:
    """torchvision's ResNet at 1x3x224x224; `wide` selects bottleneck blocks (ResNet-50)."""
    net = Net()
    x = conv_bn(net, net.input("image", TensorProto.FLOAT, [1, 3, 224, 224]), 3, 64, 7, 2)
    x = net.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for stage, depth in enumerate(depths):
        width = 64 * 2**stage
        for i in range(depth):
            stride = 2 if stage > 0 and i == 0 else 1
            if wide:
                x, channels = bottleneck(net, x, channels, width, stride), width * 4
            else:
                x, channels = basic_block(net, x, channels, width, stride), width
    return net.model([classifier(net, x, channels)])


MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]  # fmt: skip


def inverted_residual(net: Net, x: str, cin: int, cout: int, stride: int, expand: int) -> str:
    hidden = cin * expand
    y = conv_bn(net, x, cin, hidden, 1, act="relu6") if expand != 1 else x
    y = conv_bn(net, y, hidden, hidden, 3, stride, act="relu6", groups=hidden)
    y = conv_bn(net, y, hidden, cout, 1, act="none")
    return net.op("Add", [x, y]) if stride == 1 and cin == cout else y


def mobilenet_v2() -> onnx.ModelProto:
    net = Net()
    image = net.input("image", TensorProto.FLOAT, [1, 3, 224, 224])
    x, channels = conv_bn(net, image, 3, 32, 3, 2, act="relu6"), 32
    for expand, cout, repeats, stride in MOBILENET_V2:
        for i in range(repeats):
            x = inverted_residual(net, x, channels, cout, stride if i == 0 else 1, expand)
            channels = cout
    x = conv_bn(net, x, channels, 1280, 1, act="relu6")
    return net.model([classifier(net, x, 1280)])


def double_conv(net: Net, x: str, cin: int, cout: int) -> str:
    for c in (cin, cout):
        x = net.op("Relu", [conv(net, x, c, cout, 3, pad=0, bias=1)])
    return x


def crop(net: Net, x: str, size: int, target: int) -> str:
    start = (size - target) // 2
    return net.op("Slice", [x, net.ints([start, start]), net.ints([start + target] * 2),
                            net.ints([2, 3])])  # fmt: skip


def unet() -> onnx.ModelProto:
    """The original UNet: 1x1x572x572 in, valid 3x3 convolutions, 2x1x388x388 out."""
    net = Net()
    x, size = net.input("image", TensorProto.FLOAT, [1, 1, 572, 572]), 572
    skips: list[tuple[str, int, int]] = []
    cin = 1
    for width in (64, 128, 256, 512):
        x, size = double_conv(net, x, cin, width), size - 4
        skips.append((x, width, size))
        x, size, cin = net.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2]), size // 2, width
    x, size = double_conv(net, x, 512, 1024), size - 4
    cin = 1024
    for skip, width, skip_size in reversed(skips):
        w = net.weight((cin, width, 2, 2), math.sqrt(2 / (cin * 4)))
        up_inputs = [x, w, net.weight((width,))]
        up = net.op("ConvTranspose", up_inputs, kernel_shape=[2, 2], strides=[2, 2])
        size *= 2
        joined = net.op("Concat", [crop(net, skip, skip_size, size), up], axis=1)
        x, size, cin = double_conv(net, joined, 2 * width, width), size - 4, width
    return net.model([conv(net, x, 64, 2, 1, pad=0, bias=1)])


# ---------------------------------------------------------------------------- transformer blocks


def linear(net: Net, x: str, d_in: int, d_out: int) -> str:
    return net.op("Add", [net.op("MatMul", [x, net.weight((d_in, d_out))]), net.weight((d_out,))])


def layer_norm(net: Net, x: str, d: int) -> str:
    gamma, beta = net.const(np.ones(d, np.float32)), net.const(np.zeros(d, np.float32))
    return net.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)


def gelu_erf(net: Net, x: str) -> str:
    """0.5 x (1 + erf(x / sqrt 2)), as PyTorch exports nn.GELU at opset 17."""
    erf = net.op("Erf", [net.op("Div", [x, net.scalar(math.sqrt(2.0))])])
    erf1 = net.op("Add", [erf, net.scalar(1.0)])
    return net.op("Mul", [net.op("Mul", [x, erf1]), net.scalar(0.5)])


def gelu_tanh(net: Net, x: str) -> str:
    """GPT-2's gelu: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    cube = net.op("Mul", [net.op("Pow", [x, net.scalar(3.0)]), net.scalar(0.044715)])
    inner = net.op("Mul", [net.op("Add", [x, cube]), net.scalar(math.sqrt(2 / math.pi))])
    tanh1 = net.op("Add", [net.op("Tanh", [inner]), net.scalar(1.0)])
    return net.op("Mul", [net.op("Mul", [x, tanh1]), net.scalar(0.5)])


def split_heads(net: Net, x: str, seq: int, heads: int, d: int, perm: list[int]) -> str:
    return net.op("Transpose", [net.op("Reshape", [x, net.ints([1, seq, heads, d // heads])])],
                  perm=perm)  # fmt: skip


def attention(net: Net, q: str, k: str, v: str, seq: int, d: int, heads: int, mask: str) -> str:
    """Scaled dot-product attention over `heads` heads; `mask` is added to the scores."""
    qh = split_heads(net, q, seq, heads, d, [0, 2, 1, 3])
    kh = split_heads(net, k, seq, heads, d, [0, 2, 3, 1])
    vh = split_heads(net, v, seq, heads, d, [0, 2, 1, 3])
    scores = net.op("Div", [net.op("MatMul", [qh, kh]), net.scalar(math.sqrt(d // heads))])
    probs = net.op("Softmax", [net.op("Add", [scores, mask])], axis=-1)
    context = net.op("Transpose", [net.op("MatMul", [probs, vh])], perm=[0, 2, 1, 3])
    merged = net.op("Reshape", [context, net.ints([1, seq, d])])
    return linear(net, merged, d, d)


def self_attention(net: Net, x: str, seq: int, d: int, heads: int, mask: str) -> str:
    q, k, v = (linear(net, x, d, d) for _ in range(3))
    return attention(net, q, k, v, seq, d, heads, mask)


def mlp(net: Net, x: str, d: int, hidden: int, gelu: Callable[[Net, str], str]) -> str:
    return linear(net, gelu(net, linear(net, x, d, hidden)), hidden, d)


def bert_layer(net: Net, x: str, seq: int, d: int, mask: str) -> str:
    """Post-LN encoder layer (BERT)."""
    x = layer_norm(net, net.op("Add", [x, self_attention(net, x, seq, d, 12, mask)]), d)
    return layer_norm(net, net.op("Add", [x, mlp(net, x, d, 4 * d, gelu_erf)]), d)


def pre_ln_layer(net: Net, x: str, seq: int, d: int, mask: str, fused_qkv: bool) -> str:
    """Pre-LN layer (GPT-2 with one fused QKV projection split in three; ViT with three)."""
    h = layer_norm(net, x, d)
    if fused_qkv:
        q, k, v = net.ops("Split", [linear(net, h, d, 3 * d), net.ints([d] * 3)], 3, axis=-1)
        attended = attention(net, q, k, v, seq, d, 12, mask)
    else:
        attended = self_attention(net, h, seq, d, 12, mask)
    x = net.op("Add", [x, attended])
    gelu = gelu_tanh if fused_qkv else gelu_erf
    return net.op("Add", [x, mlp(net, layer_norm(net, x, d), d, 4 * d, gelu)])


def embed(net: Net, ids: str, vocab: int, d: int) -> str:
    return net.op("Gather", [net.weight((vocab, d)), ids])


def bert_base(seq: int = 128, d: int = 768) -> onnx.ModelProto:
    """BERT-base: embeddings, 12 encoder layers, pooler; the mask as Hugging Face exports it."""
    net = Net()
    ids = net.input("input_ids", TensorProto.INT64, [1, seq])
    keep = net.input("attention_mask", TensorProto.INT64, [1, seq])
    positions = net.ints(list(range(seq)))
    x = net.op("Add", [embed(net, ids, 30522, d), embed(net, positions, 512, d)])
    x = net.op("Add", [x, embed(net, net.ints([0] * seq), 2, d)])
    x = layer_norm(net, x, d)
    lifted = net.op("Cast", [net.op("Unsqueeze", [keep, net.ints([1, 2])])], to=TensorProto.FLOAT)
    mask = net.op("Mul", [net.op("Sub", [net.scalar(1.0), lifted]), net.scalar(-10000.0)])
    for _ in range(12):
        x = bert_layer(net, x, seq, d, mask)
    first = net.op("Gather", [x, net.const(np.array(0, np.int64))], axis=1)
    pooled = net.op("Tanh", [net.op("Gemm", [first, net.weight((d, d)), net.weight((d,))])])
    return net.model([x, pooled])


def gpt2_small(seq: int = 128, d: int = 768, vocab: int = 50257) -> onnx.ModelProto:
    """GPT-2 small: 12 pre-LN decoder layers, causal mask, LM head tied to the embedding."""
    net = Net()
    ids = net.input("input_ids", TensorProto.INT64, [1, seq])
    wte = net.weight((vocab, d))
    positions = embed(net, net.ints(list(range(seq))), 1024, d)
    x = net.op("Add", [net.op("Gather", [wte, ids]), positions])
    causal = np.triu(np.full((seq, seq), -10000.0, np.float32), k=1).reshape(1, 1, seq, seq)
    mask = net.const(causal, "causal")
    for _ in range(12):
        x = pre_ln_layer(net, x, seq, d, mask, fused_qkv=True)
    rows = net.op("Reshape", [layer_norm(net, x, d), net.ints([seq, d])])
    logits = net.op("Gemm", [rows, wte], transB=1)
    return net.model([net.op("Reshape", [logits, net.ints([1, seq, vocab])])])


def vit_b16(size: int = 224, patch: int = 16, d: int = 768) -> onnx.ModelProto:
    """ViT-B/16: 16x16 patches by a strided conv, a class token, 12 pre-LN layers, head."""
    net = Net()
    image = net.input("image", TensorProto.FLOAT, [1, 3, size, size])
    tokens = (size // patch) ** 2
    w = net.weight((d, 3, patch, patch))
    window = {"kernel_shape": [patch] * 2, "strides": [patch] * 2}
    patches = net.op("Conv", [image, w, net.weight((d,))], **window)
    rows = net.op("Reshape", [patches, net.ints([1, d, tokens])])
    flat = net.op("Transpose", [rows], perm=[0, 2, 1])
    x = net.op("Concat", [net.weight((1, 1, d)), flat], axis=1)
    x = net.op("Add", [x, net.weight((1, tokens + 1, d))])
    no_mask = net.const(np.zeros((1, 1, 1, tokens + 1), np.float32), "no_mask")
    for _ in range(12):
        x = pre_ln_layer(net, x, tokens + 1, d, no_mask, fused_qkv=False)
    first = net.op("Gather", [layer_norm(net, x, d), net.const(np.array(0, np.int64))], axis=1)
    head = [first, net.weight((1000, d)), net.weight((1000,))]
    return net.model([net.op("Gemm", head, transB=1)])


ARCHITECTURES: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet18": lambda: resnet([2, 2, 2, 2], wide=False),
    "resnet50": lambda: resnet([3, 4, 6, 3], wide=True),
    "mobilenetv2": mobilenet_v2,
    "unet": unet,
    "bert": bert_base,
    "gpt2": gpt2_small,
    "vit": vit_b16,
}

# ---------------------------------------------------------------------------- measuring


@dataclass(frozen=True, slots=True)
class Row:
    """One model's results; byte counts are arenas, `seconds` is cpsat's time."""

    model: str
    tensors: int
    naive: int
    tokens: int | None
    greedy: int
    cpsat: int
    cpsat_inplace: int
    lower_bound: int
    lower_bound_inplace: int
    gap_percent: float
    status: str
    seconds: float
    load_seconds: float
    replay_ratio: float | None = None
    bit_for_bit: bool | None = None


def save_model(model: onnx.ModelProto, directory: Path, name: str) -> str:
    path = directory / f"{name}.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, location=f"{name}.data")
    return str(path)


def checked(problem: Problem, plan: Plan) -> Plan:
    faults = validate(problem, plan)
    if faults:
        raise RuntimeError(f"{plan.planner} gave an invalid plan: {faults[0]}")
    return plan


def tokens_planner() -> Callable[[Problem], Plan] | None:
    try:
        from optplan.planners.tokens import TokensPlanner
    except ImportError:
        return None
    return TokensPlanner()


def replayed(loaded: Loaded, plan: Plan) -> tuple[float, bool]:
    """The planned run's time over the unplanned run's, and whether they agree bit for bit."""
    from optplan.runtime import replay as executor

    assert loaded.program is not None and loaded.memory is not None
    inputs = {**executor.make_inputs(loaded.program), **loaded.weights}
    reference = executor.reference_run(loaded.program, inputs)
    start = time.perf_counter()
    executor.reference_run(loaded.program, inputs)
    middle = time.perf_counter()
    planned = executor.planned_run(loaded.program, loaded.memory, plan, inputs)
    end = time.perf_counter()
    difference = executor.compare(reference, planned)
    if difference is not None:
        print(f"{loaded.path}: the replay differs: {difference}")
    return (end - middle) / (middle - start), difference is None


def measure(name: str, path: str, time_limit: float, alignment: int, replay: bool) -> Row:
    start = time.perf_counter()
    loaded = load(path, alignment=alignment)
    problem = loaded.problem
    load_seconds = time.perf_counter() - start
    tokens = tokens_planner()
    naive = checked(problem, get_planner("naive")(problem))
    greedy = checked(problem, get_planner("greedy")(problem))
    cpsat = checked(problem, get_planner("cpsat", work=None, time_limit=time_limit)(problem))
    ratio, same = replayed(loaded, cpsat) if replay else (None, None)
    # The same model after use_inplace_calls: elementwise ops take over dying inputs.
    inplace_problem = load(path, alignment=alignment, inplace=True).problem
    inplace = checked(
        inplace_problem, get_planner("cpsat", work=None, time_limit=time_limit)(inplace_problem)
    )
    return Row(
        model=name,
        tensors=len(problem.buffers),
        naive=naive.arena,
        tokens=checked(problem, tokens(problem)).arena if tokens else None,
        greedy=greedy.arena,
        cpsat=cpsat.arena,
        cpsat_inplace=inplace.arena,
        lower_bound=lower_bound(problem),
        lower_bound_inplace=inplace.lower_bound,
        gap_percent=round(100 * cpsat.gap, 2),
        status=cpsat.status.value,
        seconds=round(cpsat.seconds, 2),
        load_seconds=round(load_seconds, 2),
        replay_ratio=None if ratio is None else round(ratio, 2),
        bit_for_bit=same,
    )


def tvm_programs() -> dict[str, Path]:
    """TVM's fused dumps, when they and the TVMScript reader are both here."""
    if not TVM_DIR.is_dir():
        print(f"skipping TVM programs: {TVM_DIR} does not exist")
        return {}
    try:
        import optplan.frontends.script  # noqa: F401
    except ImportError as error:
        print(f"skipping TVM programs: optplan.frontends.script is not importable ({error})")
        return {}
    files = sorted(TVM_DIR.glob("*.2_fused_dataflow.py"))
    return {"tvm:" + f.name.removesuffix(".2_fused_dataflow.py"): f for f in files}


def wanted(name: str, chosen: set[str] | None) -> bool:
    return chosen is None or name in chosen or (name.startswith("tvm:") and "tvm" in chosen)


def print_table(rows: Sequence[Row]) -> None:
    headers = [f.name for f in fields(Row)]
    cells = [[("-" if v is None else str(v)) for v in astuple(row)] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths)))
    for line in cells:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths)))


def write_csv(rows: Sequence[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f.name for f in fields(Row)])
        writer.writerows(["" if v is None else v for v in astuple(row)] for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated: " + ",".join(ARCHITECTURES) + ",tvm")
    parser.add_argument("--time-limit", type=float, default=30.0, help="cpsat seconds per model")
    parser.add_argument("--alignment", type=int, default=64)
    parser.add_argument("--replay", action="store_true", help="time and check the replay")
    parser.add_argument("-o", "--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    chosen = set(args.models.split(",")) if args.models else None
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="optplan-models-") as scratch:
        for name, build in ARCHITECTURES.items():
            if wanted(name, chosen):
                path = save_model(build(), Path(scratch), name)
                rows.append(measure(name, path, args.time_limit, args.alignment, args.replay))
                print(rows[-1], flush=True)
    for name, file in tvm_programs().items():
        if wanted(name, chosen):
            try:
                rows.append(measure(name, str(file), args.time_limit, args.alignment, args.replay))
            except InputError as error:
                print(f"skipping {name}: {error}")
                continue
            print(rows[-1], flush=True)
    print_table(rows)
    write_csv(rows, args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
