"""Models built with TVM itself, for the integration tests and benchmarks/integrations.py.

Each builder returns a `Model`: an IRModule with one entry function `main` (high-level
Relax, weights as parameters after the first `num_input`) and random arguments from a
fixed seed. `scale` picks the size: "tiny" (tests: seconds to compile and run) or "real"
(the benchmark: the published widths, short sequences).

- `relax.frontend.nn`: an MLP, a GPT-2-style decoder (LayerNorm, fused QKV, causal mask
  from full + triu, GELU) and a LLaMA-style decoder in fp16 (RMSNorm, SwiGLU, causal mask).
- TVM's ONNX frontend (`from_onnx`, weights kept as parameters) on graphs written with
  `onnx.helper`: ResNet-50 (bottleneck blocks, BatchNorm), MobileNetV2 (depthwise
  convolutions, ReLU6 as Clip, inverted residuals) and a UNet (MaxPool down, ConvTranspose
  up, Concat skips).
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SEED = 0
# TVM's CPU kernels run on a pool of spinning worker threads; on a machine shared with
# other jobs they can wait on each other for minutes. One thread unless the user says.
os.environ.setdefault("TVM_NUM_THREADS", "1")


@dataclass(frozen=True)
class Model:
    """An IRModule whose entry function is `main`, and arguments to run it with."""

    name: str
    mod: Any
    args: tuple[np.ndarray, ...]


def _args(params: Sequence[Any], seed: int = SEED) -> tuple[np.ndarray, ...]:
    """Random arguments for `main`'s parameters: ids in range, floats small."""
    rng = np.random.default_rng(seed)
    out = []
    for param in params:
        shape = [int(d) for d in param.ty.shape.values]
        dtype = str(param.ty.dtype)
        if dtype.startswith("int"):
            out.append(rng.integers(0, 16, shape).astype(dtype))
        else:
            out.append((rng.standard_normal(shape) * 0.1).astype(dtype))
    return tuple(out)


def _entry(mod: Any, name: str) -> Any:
    """The module with its entry function renamed `main`."""
    import tvm

    funcs = {gv.name_hint: f for gv, f in mod.functions_items()}
    entry = funcs.pop(name).with_attr("global_symbol", "main")
    if entry.attrs is not None and "params" in entry.attrs:
        # from_onnx's copy of the weights' values; they are drawn at random here instead
        entry = entry.without_attr("params")
    new = tvm.IRModule({"main": entry})
    for gv, func in mod.functions_items():
        if gv.name_hint != name:
            new[gv] = func
    return new


# ---------------------------------------------------------------------------- relax.frontend.nn


def _nn_model(name: str, module: Any, inputs: dict[str, Any]) -> Model:
    mod, _ = module.export_tvm(spec={"forward": inputs})
    mod = _entry(mod, "forward")
    return Model(name, mod, _args(mod["main"].params))


def mlp(scale: str = "tiny") -> Model:
    from tvm.relax.frontend import nn

    widths = [64, 128, 128, 10] if scale == "tiny" else [784, 2048, 2048, 2048, 2048, 10]
    batch = 4 if scale == "tiny" else 128

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in itertools.pairwise(widths)])

        def forward(self, x: Any) -> Any:
            for layer in self.layers[:-1]:
                x = nn.op.relu(layer(x))
            return self.layers[-1](x)

    return _nn_model("mlp", MLP(), {"x": nn.spec.Tensor((batch, widths[0]), "float32")})


def _causal_mask(nn: Any, seq: int, dtype: str) -> Any:
    full = nn.op.full((seq, seq), -1e4, dtype=dtype)
    return nn.op.triu(full, 1)


def _attention(nn: Any, q: Any, k: Any, v: Any, shape: tuple[int, int, int, int]) -> Any:
    batch, seq, heads, head = shape
    q, k, v = (nn.op.permute_dims(nn.op.reshape(t, shape), [0, 2, 1, 3]) for t in (q, k, v))
    scores = nn.op.matmul(q, nn.op.permute_dims(k, [0, 1, 3, 2]))
    scores = scores * (1 / math.sqrt(head)) + _causal_mask(nn, seq, scores.dtype)
    probs = nn.op.softmax(scores.astype("float32"), axis=-1).astype(v.dtype)
    out = nn.op.permute_dims(nn.op.matmul(probs, v), [0, 2, 1, 3])
    return nn.op.reshape(out, (batch, seq, heads * head))


def gpt2(scale: str = "tiny") -> Model:
    """GPT-2-style: pre-LN blocks, fused QKV projection, causal mask, GELU MLP, LM head."""
    from tvm.relax.frontend import nn

    layers, d, heads, vocab, seq = (
        (2, 64, 4, 100, 16) if scale == "tiny" else (12, 768, 12, 50257, 128)
    )

    class Block(nn.Module):
        def __init__(self) -> None:
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            q, k, v = nn.op.split(self.c_attn(self.ln_1(x)), 3, axis=2)
            x = x + self.c_proj(_attention(nn, q, k, v, (1, seq, heads, d // heads)))
            return x + self.mlp_proj(nn.op.gelu(self.c_fc(self.ln_2(x))))

    class GPT2(nn.Module):
        def __init__(self) -> None:
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f, self.lm_head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, ids: Any, positions: Any) -> Any:
            x = self.wte(ids) + self.wpe(positions)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    spec = {
        "ids": nn.spec.Tensor((1, seq), "int32"),
        "positions": nn.spec.Tensor((1, seq), "int32"),
    }
    return _nn_model("gpt2", GPT2(), spec)


def llama_fp16(scale: str = "tiny", dt: str = "float16") -> Model:
    """LLaMA-style in float16: RMSNorm, separate Q/K/V, causal mask, SwiGLU MLP."""
    from tvm.relax.frontend import nn

    layers, d, heads, ffn, vocab, seq = (
        (2, 64, 4, 128, 100, 16) if scale == "tiny" else (2, 2048, 32, 5632, 32000, 32)
    )

    class Block(nn.Module):
        def __init__(self) -> None:
            self.input_norm = nn.RMSNorm(d, axes=-1, bias=False, dtype=dt)
            self.post_norm = nn.RMSNorm(d, axes=-1, bias=False, dtype=dt)
            self.q, self.k, self.v, self.o = (
                nn.Linear(d, d, bias=False, dtype=dt) for _ in range(4)
            )
            self.gate = nn.Linear(d, ffn, bias=False, dtype=dt)
            self.up = nn.Linear(d, ffn, bias=False, dtype=dt)
            self.down = nn.Linear(ffn, d, bias=False, dtype=dt)

        def forward(self, x: Any) -> Any:
            h = self.input_norm(x)
            x = x + self.o(
                _attention(nn, self.q(h), self.k(h), self.v(h), (1, seq, heads, d // heads))
            )
            h = self.post_norm(x)
            return x + self.down(nn.op.silu(self.gate(h)) * self.up(h))

    class Llama(nn.Module):
        def __init__(self) -> None:
            self.embed = nn.Embedding(vocab, d, dtype=dt)
            self.layers = nn.ModuleList([Block() for _ in range(layers)])
            self.norm = nn.RMSNorm(d, axes=-1, bias=False, dtype=dt)
            self.lm_head = nn.Linear(d, vocab, bias=False, dtype=dt)

        def forward(self, ids: Any) -> Any:
            x = self.embed(ids)
            for layer in self.layers:
                x = layer(x)
            return self.lm_head(self.norm(x))

    return _nn_model("llama_fp16", Llama(), {"ids": nn.spec.Tensor((1, seq), "int32")})


# ---------------------------------------------------------------------------- ONNX graphs


class _Graph:
    """Nodes and weights of an ONNX graph being written; weights become graph inputs, so
    TVM's importer keeps them as parameters of `main`."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(SEED)
        self.nodes: list[Any] = []
        self.constants: list[Any] = []
        self.count = 0

    def op(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        from onnx import helper

        self.count += 1
        out = f"{op_type.lower()}_{self.count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def const(self, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.count += 1
        name = f"w_{self.count}"
        self.constants.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, shape: tuple[int, ...], scale: float) -> str:
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32))

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> str:
        w = self.weight((cout, cin // groups, k, k), math.sqrt(2 / (cin // groups * k * k)))
        b = self.weight((cout,), 0.01)
        return self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride] * 2,
                       pads=[k // 2] * 4, group=groups)  # fmt: skip

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int = 1, *, act: str = "relu",
                groups: int = 1) -> str:  # fmt: skip
        y = self.conv(x, cin, cout, k, stride, groups)
        ones, zeros = np.ones(cout, np.float32), np.zeros(cout, np.float32)
        stats = [self.const(ones), self.const(zeros), self.const(zeros), self.const(ones)]
        y = self.op("BatchNormalization", [y, *stats], epsilon=1e-5)
        if act == "relu":
            return self.op("Relu", [y])
        if act == "relu6":
            zero, six = self.const(np.array(0, np.float32)), self.const(np.array(6, np.float32))
            return self.op("Clip", [y, zero, six])
        return y

    def head(self, x: str, channels: int, classes: int) -> str:
        pooled = self.op("Flatten", [self.op("GlobalAveragePool", [x])])
        w, b = self.weight((classes, channels), 0.05), self.weight((classes,), 0.01)
        return self.op("Gemm", [pooled, w, b], transB=1)

    def model(self, name: str, image: tuple[int, ...], output: str) -> Model:
        import onnx
        from onnx import TensorProto, helper
        from tvm.relax.frontend.onnx import from_onnx

        inputs = [helper.make_tensor_value_info("image", TensorProto.FLOAT, list(image))]
        graph = helper.make_graph(self.nodes, name, inputs, [onnx.ValueInfoProto(name=output)],
                                  self.constants)  # fmt: skip
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        mod = from_onnx(model, keep_params_in_input=True)
        mod = _entry(mod, "main")
        return Model(name, mod, _args(mod["main"].params))


def resnet50(scale: str = "tiny") -> Model:
    """ResNet-50's bottleneck blocks; tiny: width 8, one block a stage, 32x32 image."""
    tiny = scale == "tiny"
    size, base, depths = (32, 8, [1, 1, 1, 1]) if tiny else (224, 64, [3, 4, 6, 3])
    g = _Graph()
    x = g.conv_bn("image", 3, base, 7, 2)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = base
    for stage, depth in enumerate(depths):
        width = base * 2**stage
        for i in range(depth):
            stride = 2 if stage > 0 and i == 0 else 1
            y = g.conv_bn(x, channels, width, 1)
            y = g.conv_bn(y, width, width, 3, stride)
            y = g.conv_bn(y, width, width * 4, 1, act="none")
            skip = x
            if stride != 1 or channels != width * 4:
                skip = g.conv_bn(x, channels, width * 4, 1, stride, act="none")
            x, channels = g.op("Relu", [g.op("Add", [y, skip])]), width * 4
    return g.model("resnet50", (1, 3, size, size), g.head(x, channels, 10 if tiny else 1000))


MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]  # fmt: skip


def mobilenet_v2(scale: str = "tiny") -> Model:
    """MobileNetV2; tiny: the first three stages at a quarter width, 32x32 image."""
    tiny = scale == "tiny"
    size, stages, div = (32, MOBILENET_V2[:3], 4) if tiny else (224, MOBILENET_V2, 1)
    g = _Graph()
    channels = 32 // div
    x = g.conv_bn("image", 3, channels, 3, 2, act="relu6")
    for expand, cout, repeats, stride in stages:
        cout //= div
        for i in range(repeats):
            hidden = channels * expand
            y = g.conv_bn(x, channels, hidden, 1, act="relu6") if expand != 1 else x
            y = g.conv_bn(y, hidden, hidden, 3, stride if i == 0 else 1, act="relu6",
                          groups=hidden)  # fmt: skip
            y = g.conv_bn(y, hidden, cout, 1, act="none")
            x = g.op("Add", [x, y]) if i > 0 else y
            channels = cout
    last = 1280 // div
    x = g.conv_bn(x, channels, last, 1, act="relu6")
    return g.model("mobilenet_v2", (1, 3, size, size), g.head(x, last, 10 if tiny else 1000))


def unet(scale: str = "tiny") -> Model:
    """UNet with padded 3x3 convolutions; tiny: widths 8-32 over 32x32, real: 64-1024 over
    256x256."""
    tiny = scale == "tiny"
    size, widths = (32, (8, 16)) if tiny else (256, (64, 128, 256, 512))
    g = _Graph()
    x, cin, skips = "image", 3, []
    for width in widths:
        x = g.op("Relu", [g.conv(g.op("Relu", [g.conv(x, cin, width, 3)]), width, width, 3)])
        skips.append((x, width))
        x, cin = g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2]), width
    bottom = widths[-1] * 2
    x = g.op("Relu", [g.conv(g.op("Relu", [g.conv(x, cin, bottom, 3)]), bottom, bottom, 3)])
    cin = bottom
    for skip, width in reversed(skips):
        w = g.weight((cin, width, 2, 2), math.sqrt(2 / (cin * 4)))
        up = g.op("ConvTranspose", [x, w, g.weight((width,), 0.01)], kernel_shape=[2, 2],
                  strides=[2, 2])  # fmt: skip
        x = g.op("Concat", [skip, up], axis=1)
        x = g.op("Relu", [g.conv(g.op("Relu", [g.conv(x, 2 * width, width, 3)]), width, width, 3)])
        cin = width
    return g.model("unet", (1, 3, size, size), g.conv(x, cin, 2, 1))


BUILDERS: dict[str, Callable[[str], Model]] = {
    "mlp": mlp,
    "gpt2": gpt2,
    "llama_fp16": llama_fp16,
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "unet": unet,
}


# ---------------------------------------------------------------------------- symbolic lengths

# d, heads, ffn, vocab, layers: "small" is the 2 layers at hidden 256; "tiny" is
# for tests, seconds to compile and run.
DECODER_SIZES = {"tiny": (64, 4, 128, 128, 2), "small": (256, 4, 1024, 1024, 2)}


@dataclass(frozen=True)
class Decoder:
    """A decoder exported with symbolic lengths: `prefill(ids[1, seq_len], ...)` and
    `decode(ids[1, 1], ..., total_seq_len)`, each appending to a KV cache per layer
    (`nn.KVCache`, a runtime object made by `_initialize_effect`, of `cache_shape`), with
    `tir_var_upper_bound` {"seq_len": bound} and {"total_seq_len": bound}. `weights` are
    random, in the order of the functions' weight parameters."""

    name: str
    mod: Any
    bound: int
    arch: str
    dtype: str
    vocab: int
    cache_shape: tuple[int, int, int]
    weights: tuple[np.ndarray, ...]


def decoder(arch: str, dtype: str, bound: int, size: str = "tiny") -> Decoder:
    """GPT-2-style (LayerNorm, fused QKV, learned positions, GELU MLP) or LLaMA-style
    (RMSNorm, separate Q/K/V, SwiGLU MLP), in `dtype`, with softmax in float32."""
    from tvm.relax.frontend import nn

    d, heads, ffn, vocab, layers = DECODER_SIZES[size]
    module = _decoder_module(nn, arch, dtype, bound, (d, heads, ffn, vocab, layers))
    ids = {"ids": nn.spec.Tensor((1, "seq_len"), "int32")}
    one = {"ids": nn.spec.Tensor((1, 1), "int32")}
    if arch == "gpt2":
        ids["positions"] = nn.spec.Tensor((1, "seq_len"), "int32")
        one["positions"] = nn.spec.Tensor((1, 1), "int32")
    spec = {"prefill": ids, "decode": {**one, "total_seq_len": nn.spec.Int()}}
    mod, _ = module.export_tvm(spec=spec)
    mod["prefill"] = mod["prefill"].with_attr("tir_var_upper_bound", {"seq_len": bound})
    mod["decode"] = mod["decode"].with_attr("tir_var_upper_bound", {"total_seq_len": bound})
    weights = _args(mod["decode"].params[int(mod["decode"].attrs["num_input"]) :])
    cache = (bound, heads, d // heads)
    return Decoder(f"{arch}_{dtype}_{bound}", mod, bound, arch, dtype, vocab, cache, weights)


def _decoder_module(nn: Any, arch: str, dt: str, bound: int, sizes: tuple[int, ...]) -> Any:
    d, heads, ffn, vocab, layers = sizes
    head = d // heads

    def norm() -> Any:
        return nn.LayerNorm(d, dtype=dt) if arch == "gpt2" else nn.RMSNorm(d, -1, bias=False,
                                                                           dtype=dt)  # fmt: skip

    class Attention(nn.Module):
        def __init__(self) -> None:
            bias = arch == "gpt2"
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias, dtype=dt) for _ in range(4))
            self.k_cache = nn.KVCache(bound, [heads, head], dt)
            self.v_cache = nn.KVCache(bound, [heads, head], dt)

        def forward(self, x: Any, total: Any) -> Any:
            seq = x.shape[1]
            q, k, v = (nn.op.reshape(f(x), (seq, heads, head)) for f in (self.q, self.k, self.v))
            self.k_cache.append(k)
            self.v_cache.append(v)
            keys, values = self.k_cache.view(total), self.v_cache.view(total)
            q, k, v = (nn.op.permute_dims(t, [1, 0, 2]) for t in (q, keys, values))
            scores = nn.op.matmul(q, nn.op.permute_dims(k, [0, 2, 1])) * (1 / math.sqrt(head))
            if not isinstance(seq, int):  # prefill: its own tokens only, causally
                scores = scores + _causal_mask(nn, seq, scores.dtype)
            probs = nn.op.softmax(scores.astype("float32"), axis=-1).astype(dt)
            out = nn.op.permute_dims(nn.op.matmul(probs, v), [1, 0, 2])
            return self.o(nn.op.reshape(out, (1, seq, d)))

    class Block(nn.Module):
        def __init__(self) -> None:
            self.norm_1, self.norm_2, self.attn = norm(), norm(), Attention()
            self.up = nn.Linear(d, ffn, arch == "gpt2", dtype=dt)
            self.down = nn.Linear(ffn, d, arch == "gpt2", dtype=dt)
            if arch != "gpt2":
                self.gate = nn.Linear(d, ffn, False, dtype=dt)

        def forward(self, x: Any, total: Any) -> Any:
            x = x + self.attn(self.norm_1(x), total)
            h = self.norm_2(x)
            if arch == "gpt2":
                return x + self.down(nn.op.gelu(self.up(h)))
            return x + self.down(nn.op.silu(self.gate(h)) * self.up(h))

    class Decoder(nn.Module):
        def __init__(self) -> None:
            self.embed = nn.Embedding(vocab, d, dtype=dt)
            if arch == "gpt2":
                self.positions = nn.Embedding(bound, d, dtype=dt)
            self.layers = nn.ModuleList([Block() for _ in range(layers)])
            self.norm, self.lm_head = norm(), nn.Linear(d, vocab, False, dtype=dt)

        def run(self, ids: Any, positions: Any, total: Any) -> Any:
            x = self.embed(ids)
            if positions is not None:
                x = x + self.positions(positions)
            for layer in self.layers:
                x = layer(x, total)
            return self.lm_head(self.norm(x))

        # The exporter passes the spec's inputs by the method's parameter names.
        if arch == "gpt2":

            def prefill(self, ids: Any, positions: Any) -> Any:
                return self.run(ids, positions, ids.shape[1])

            def decode(self, ids: Any, positions: Any, total_seq_len: Any) -> Any:
                return self.run(ids, positions, total_seq_len)

        else:

            def prefill(self, ids: Any) -> Any:
                return self.run(ids, None, ids.shape[1])

            def decode(self, ids: Any, total_seq_len: Any) -> Any:
                return self.run(ids, None, total_seq_len)

    return Decoder()


def run_decoder(executable: Any, model: Decoder, function: str, length: int) -> np.ndarray:
    """The logits of `function` at `length` tokens in the Relax VM: prefill of `length`
    tokens into new caches; or decode of the `length`-th token into caches that hold
    `length - 1` entries already. Tokens and cache entries from a seed that depends on the
    length only. The caches are the runtime's own (`_initialize_effect`'s, or made by the
    same builtin it calls, already filled: no prefill of `length - 1` tokens first)."""
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(executable, tvm.cpu())
    rng = np.random.default_rng(length)
    ids = rng.integers(0, model.vocab, (1, length)).astype("int32")
    caches = list(vm["_initialize_effect"]())
    if function == "decode":
        create = tvm.get_global_func("vm.builtin.attention_kv_cache_create")
        shape = tvm.runtime.ShapeTuple(model.cache_shape)
        entries = [rng.standard_normal(model.cache_shape) * 0.1 for _ in caches]
        caches = [create(tvm.runtime.tensor(e.astype(model.dtype)), shape, length - 1)
                  for e in entries]  # fmt: skip
    args = [tvm.runtime.tensor(ids if function == "prefill" else ids[:, -1:])]
    if model.arch == "gpt2":
        start = 0 if function == "prefill" else length - 1
        positions = np.arange(start, length, dtype="int32")[None]
        args.append(tvm.runtime.tensor(positions))
    if function == "decode":
        args.append(tvm.runtime.ShapeTuple([length]))
    weights = [tvm.runtime.tensor(w) for w in model.weights]
    logits, _ = vm[function](*args, *caches, *weights)
    return logits.numpy()


# ---------------------------------------------------------------------------- both ways


@dataclass(frozen=True)
class Compiled:
    """One model compiled both ways and run: TVM's and optplan's planned bytes, optplan's
    reports, and whether the two VMs returned the same bytes."""

    name: str
    tvm_bytes: int
    optplan_bytes: int
    reports: tuple[Any, ...]
    same_outputs: bool
    seconds_plan: float


def lowered(mod: Any, target: Any) -> Any:
    """`mod` through TVM's CPU pipeline up to its memory planning (dispatch, legalize,
    fuse, CallTIRRewrite)."""
    import tvm
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    passes = (
        cpu.library_dispatch_passes(target)
        + cpu.legalize_passes(target)
        + cpu.dataflow_lower_passes(target)
    )
    with target:
        return tvm.transform.Sequential(passes)(mod)


def finalized(mod: Any, target: Any, *, planned: bool) -> Any:
    """TVM's finalize passes on a lowered module; `planned` when memory is planned already
    (StaticPlanBlockMemory is skipped)."""
    import tvm
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    passes = cpu.finalize_passes(target)
    if planned:
        passes = [p for p in passes if p.info.name != "StaticPlanBlockMemory"]
    with target:
        return tvm.transform.Sequential(passes)(mod)


def run(mod: Any, target: Any, args: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Build a finalized module and run `main` in the Relax VM on the CPU."""
    import tvm
    from tvm import relax

    executable = tvm.compile(mod, target, relax_pipeline=None)
    vm = relax.VirtualMachine(executable, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in args])
    outs = (
        out
        if isinstance(out, (list, tuple)) or hasattr(out, "__len__") and not hasattr(out, "numpy")
        else [out]
    )
    return [o.numpy() for o in outs]


def compile_both(model: Model, planner: str = "cpsat", time_limit: float = 10.0) -> Compiled:
    """TVM's StaticPlanBlockMemory and optplan's PlanBlockMemory on the same lowered module;
    both built and run in the VM on the same arguments."""
    import time

    import tvm
    from tvm import relax

    from optplan.tvm import Options, plan_module, storage_bytes

    target = tvm.target.Target("llvm")
    low = lowered(model.mod, target)
    tvm_bytes = sum(storage_bytes(relax.transform.StaticPlanBlockMemory()(low)).values())
    started = time.perf_counter()
    ours, reports = plan_module(low, Options(planner, time_limit))
    seconds = time.perf_counter() - started
    ours_bytes = sum(storage_bytes(ours).values())
    theirs = run(finalized(low, target, planned=False), target, model.args)
    mine = run(finalized(ours, target, planned=True), target, model.args)
    same = len(theirs) == len(mine) and all(
        a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in zip(theirs, mine)
    )
    return Compiled(model.name, tvm_bytes, ours_bytes, tuple(reports), same, seconds)


DECODER_FUNCTIONS = {"prefill": "seq_len", "decode": "total_seq_len"}


@dataclass(frozen=True)
class DecoderBoth:
    """A `Decoder` planned both ways and built: the reports of optplan's pass by function,
    TVM's and optplan's storage bytes by function, and the two executables."""

    model: Decoder
    reports: dict[str, Any]
    tvm_bytes: dict[str, int]
    optplan_bytes: dict[str, int]
    theirs: Any
    mine: Any

    def same_at(self, function: str, length: int) -> bool:
        """Whether both executables give the same bytes for `function` at `length`."""
        a = run_decoder(self.theirs, self.model, function, length)
        b = run_decoder(self.mine, self.model, function, length)
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def decoder_both(model: Decoder, time_limit: float = 10.0, build: bool = True) -> DecoderBoth:
    """TVM's StaticPlanBlockMemory and optplan's PlanBlockMemory on the lowered decoder;
    both built with LLVM unless not `build`."""
    import tvm
    from tvm import relax

    from optplan.tvm import Options, plan_module, storage_bytes

    target = tvm.target.Target("llvm")
    low = lowered(model.mod, target)
    theirs = relax.transform.StaticPlanBlockMemory()(low)
    ours, reports = plan_module(low, Options(time_limit=time_limit))
    executables = [
        tvm.compile(finalized(m, target, planned=p), target, relax_pipeline=None) if build else None
        for m, p in ((low, False), (ours, True))
    ]
    return DecoderBoth(
        model,
        {r.function: r for r in reports},
        storage_bytes(theirs),
        storage_bytes(ours),
        *executables,
    )


def fixed_at_bound(model: Decoder, function: str, time_limit: float = 10.0) -> Any:
    """optplan's report on `function` with its symbolic length fixed at the bound
    (`BindSymbolicVars` on the lowered module): the same program at the bound's sizes."""
    import tvm
    from tvm import relax

    from optplan.tvm import Options, plan_module

    target = tvm.target.Target("llvm")
    binding = {DECODER_FUNCTIONS[function]: model.bound}
    low = lowered(model.mod, target)
    fixed = relax.transform.BindSymbolicVars(binding, func_name=function)(low)
    _, reports = plan_module(fixed, Options(time_limit=time_limit))
    return next(r for r in reports if r.function == function)
