"""Models lowered by ExecuTorch, for tests/test_executorch.py and
`benchmarks/integrations.py --executorch`: torch.nn models written here and
`transformers` models built from configs with random weights (no downloads), each at a
tiny size and each taking one of the paths a memory plan must get right.

Every builder returns a `Case`: the module, its example inputs, the inputs to run it on in
order (a module with state runs several steps), and how to lower it (dynamic shapes, an
XNNPACK partitioner, the reinplace pass). `lower(case, algos)` exports and lowers it with
the given memory-planning algorithms (ExecuTorch's default greedy when None); `run(program,
case)` runs the `.pte` in ExecuTorch's runtime pybindings; `eager(case)` runs a copy of
the module in torch on the same inputs.

Paths: plain CNNs and a residual CNN; a U-Net's long skips; an MLP with skips, an
unrolled GRU and a random DAG (many short-lived tensors of mixed sizes); attention
(two encoder layers, GPT-2, BERT, ViT, LLaMA); control flow (`torch.cond`, whose
branches are planned first and set bytes aside, and `map`); mutable buffers (a KV cache
and a sliding window updated every step); the reinplace pass on that step, which hands
the planner a slice update stored inside the window (`storage_base`); XNNPACK, whose
delegate asks for 64 bytes of padding; a dynamic batch planned at its upper bound.
"""

from __future__ import annotations

import copy
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclass(frozen=True)
class Case:
    """A model to lower and run: `runs` are the inputs of each call, in order (the example
    inputs once when empty); `needs` is a package the case needs besides torch."""

    name: str
    module: Any
    inputs: tuple[Any, ...]
    runs: tuple[tuple[Any, ...], ...] = ()
    dynamic_shapes: Any = None
    xnnpack: bool = False
    reinplace: bool = False
    needs: str = ""

    @property
    def calls(self) -> tuple[tuple[Any, ...], ...]:
        return self.runs or (self.inputs,)


def _frozen(module: Any) -> Any:
    """Eval mode, no parameter asking for gradients (the reinplace pass writes buffers)."""
    module.eval()
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module


def cnn() -> Case:
    import torch
    from torch import nn

    class CNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
            self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.c3 = nn.Conv2d(16, 16, 3, padding=1)
            self.fc = nn.Linear(16, 10)

        def forward(self, x: Any) -> Any:
            x = torch.relu(self.b1(self.c1(x)))
            y = torch.relu(self.c2(x))
            y = y + torch.relu(self.c3(y))
            return self.fc(y.mean(dim=(2, 3)))

    torch.manual_seed(0)
    return Case("cnn", _frozen(CNN()), (torch.randn(1, 3, 16, 16),))


def resnet_like() -> Case:
    import torch
    from torch import nn

    def block(c: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
                             nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c))  # fmt: skip

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, padding=1)
            self.blocks = nn.ModuleList([block(16) for _ in range(3)])
            self.head = nn.Linear(16, 10)

        def forward(self, x: Any) -> Any:
            x = torch.relu(self.stem(x))
            for b in self.blocks:
                x = torch.relu(x + b(x))
            return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    torch.manual_seed(0)
    return Case("resnet_like", _frozen(Net()), (torch.randn(1, 3, 16, 16),))


def unet() -> Case:
    import torch
    from torch import nn

    def conv(cin: int, cout: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.d1, self.d2, self.mid = conv(3, 8), conv(8, 16), conv(16, 32)
            self.u2, self.u1 = conv(32 + 16, 16), conv(16 + 8, 8)
            self.out = nn.Conv2d(8, 2, 1)

        def forward(self, x: Any) -> Any:
            a = self.d1(x)
            b = self.d2(nn.functional.max_pool2d(a, 2))
            m = self.mid(nn.functional.max_pool2d(b, 2))
            up = nn.functional.interpolate(m, scale_factor=2.0, mode="nearest")
            b = self.u2(torch.cat([up, b], 1))
            up = nn.functional.interpolate(b, scale_factor=2.0, mode="nearest")
            return self.out(self.u1(torch.cat([up, a], 1)))

    torch.manual_seed(0)
    return Case("unet", _frozen(UNet()), (torch.randn(1, 3, 32, 32),))


def mlp_skips() -> Case:
    import torch
    from torch import nn

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            widths = [48, 96, 64, 96, 48, 80]
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(widths))

        def forward(self, x: Any) -> Any:
            seen = [x]
            for layer in self.layers:
                y = torch.relu(layer(seen[-1]))
                skip = next((s for s in seen[:-1] if s.shape == y.shape), None)
                seen.append(y if skip is None else y + skip)
            return seen[-1]

    torch.manual_seed(0)
    return Case("mlp_skips", _frozen(MLP()), (torch.randn(4, 48),))


def gru() -> Case:
    import torch
    from torch import nn

    class GRU(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cell, self.head = nn.GRUCell(24, 40), nn.Linear(40, 8)

        def forward(self, xs: Any) -> Any:
            h = torch.zeros(xs.shape[0], 40)
            for t in range(xs.shape[1]):  # unrolled: the loop is traced step by step
                h = self.cell(xs[:, t], h)
            return self.head(h)

    torch.manual_seed(0)
    return Case("gru", _frozen(GRU()), (torch.randn(2, 6, 24),))


def random_dag() -> Case:
    import torch
    from torch import nn

    class DAG(nn.Module):
        """Each node applies a layer to the sum of two earlier nodes (fixed seed)."""

        def __init__(self) -> None:
            super().__init__()
            generator = torch.Generator().manual_seed(7)
            self.edges = [
                tuple(int(v) for v in torch.randint(0, k + 1, (2,), generator=generator))
                for k in range(10)
            ]
            self.layers = nn.ModuleList(nn.Linear(32, 32) for _ in self.edges)

        def forward(self, x: Any) -> Any:
            nodes = [x]
            for (a, b), layer in zip(self.edges, self.layers):
                nodes.append(torch.tanh(layer(nodes[a] + nodes[b])) * nodes[b])
            return torch.cat(nodes[-3:], 1)

    torch.manual_seed(0)
    return Case("random_dag", _frozen(DAG()), (torch.randn(3, 32),))


def encoder() -> Case:
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self, d: int = 32, heads: int = 4) -> None:
            super().__init__()
            self.heads, self.qkv, self.proj = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 64), nn.GELU(), nn.Linear(64, d))

        def forward(self, x: Any) -> Any:
            b, s, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, -1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
            return x + self.ff(self.n2(x))

    torch.manual_seed(0)
    return Case("encoder", _frozen(nn.Sequential(Layer(), Layer())), (torch.randn(1, 12, 32),))


def cond() -> Case:
    import torch
    from torch import nn

    class Cond(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 16)

        def forward(self, x: Any) -> Any:
            y = torch.relu(self.a(x))
            z = torch.cond(y.sum() > 0, lambda t: (t * 2).sin() + t, lambda t: t.cos() - 1, (y,))
            return self.b(z) + y

    torch.manual_seed(0)
    x = torch.randn(8, 16)
    return Case("cond", _frozen(Cond()), (x,), runs=((x,), (-x,)))


def map_body() -> Case:
    import torch
    from torch import nn
    from torch._higher_order_ops.map import map as hmap

    class Map(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Linear(16, 16)

        def forward(self, xs: Any, y: Any) -> Any:
            h = self.w(xs)
            return hmap(lambda x, y: (x + y).relu() * 2, h, y).sum(0)

    torch.manual_seed(0)
    return Case("map", _frozen(Map()), (torch.randn(5, 16), torch.randn(16)))


def _kv_step() -> Any:
    """A decoder step with state: a KV cache written at `pos` (index_put; the cache's
    sequence axis first) and a sliding window of the last inputs shifted by one every
    step (slice_scatter)."""
    import torch
    from torch import nn

    class Step(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("k", torch.zeros(8, 2, 16))
            self.register_buffer("v", torch.zeros(8, 2, 16))
            self.register_buffer("window", torch.zeros(1, 4, 32))
            self.q, self.kv = nn.Linear(32, 32), nn.Linear(32, 64)

        def forward(self, x: Any, pos: Any) -> Any:
            q = self.q(x).view(2, 1, 16)
            kv = self.kv(x)
            k, v = kv[..., :32].reshape(1, 2, 16), kv[..., 32:].reshape(1, 2, 16)
            self.k.index_put_((pos,), k)  # not k[pos] = ..., which drops the unit axis
            self.v.index_put_((pos,), v)
            self.window[:, :-1] = self.window[:, 1:].clone()
            self.window[:, -1:] = x
            keys, values = self.k.transpose(0, 1), self.v.transpose(0, 1)
            a = torch.softmax(q @ keys.transpose(1, 2), -1) @ values
            return a.reshape(1, 1, 32) + self.window.mean(1, keepdim=True)

    return Step()


def _kv_case(name: str, reinplace: bool) -> Case:
    import torch

    torch.manual_seed(0)
    steps = tuple((torch.randn(1, 1, 32), torch.tensor([t])) for t in range(3))
    module = _frozen(_kv_step())
    return Case(name, module, steps[0], runs=steps, reinplace=reinplace)


def kv_cache() -> Case:
    return _kv_case("kv_cache", reinplace=False)


def kv_cache_reinplace() -> Case:
    return _kv_case("kv_cache_reinplace", reinplace=True)


def mobilenet_xnnpack() -> Case:
    import torch
    from torch import nn

    def inverted(c: int, e: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(c, e, 1), nn.ReLU6(), nn.Conv2d(e, e, 3, padding=1, groups=e),
                             nn.ReLU6(), nn.Conv2d(e, c, 1))  # fmt: skip

    class Mobile(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem, self.b1, self.b2 = nn.Conv2d(3, 16, 3, 2, 1), inverted(16, 48), inverted(16, 64)
            self.head = nn.Linear(16, 10)

        def forward(self, x: Any) -> Any:
            x = torch.relu(self.stem(x))
            x = x + self.b1(x)
            x = (x + self.b2(x)).flip(-1)  # flip has no XNNPACK kernel: a portable op between
            return self.head(x.mean((2, 3)))

    torch.manual_seed(0)
    return Case("mobilenet_xnnpack", _frozen(Mobile()), (torch.randn(1, 3, 32, 32),), xnnpack=True)


def dynamic_batch() -> Case:
    import torch
    from torch import nn

    module = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 48), nn.ReLU(),
                           nn.Linear(48, 8))  # fmt: skip
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=16)
    runs = ((torch.randn(16, 24),), (torch.randn(3, 24),), (torch.randn(1, 24),))
    return Case("dynamic_batch", _frozen(module), runs[0], runs, dynamic_shapes=({0: batch},))


def staggered() -> Case:
    """Seven tensors of mixed sizes over staggered lifetimes, on which every greedy order
    of optplan's misses the live-bytes bound (greedy 19712 bytes, bound 18960): cpsat's
    exact search runs inside the export and reaches the bound."""
    import torch
    from torch import nn

    class Staggered(nn.Module):
        sizes = (192, 768, 768, 448, 832, 320, 832)  # floats
        ends = (2, 3, 3, 4, 7, 7, 7)  # tensor k is folded into the sum before step ends[k]

        def forward(self, x: Any) -> Any:
            live, total = {}, x[:1] * 0
            for step, size in enumerate(self.sizes):
                live[step] = x[:size] * (step + 1) + total
                for k, end in enumerate(self.ends):
                    if k in live and k != step and end == step + 1:
                        total = total + live.pop(k)[:1]
            for tensor in live.values():
                total = total + tensor[:1]
            return total

    torch.manual_seed(0)
    return Case("staggered", Staggered().eval(), (torch.randn(1536),))


def _hf(name: str, config: Any, model_class: Any, inputs: tuple[Any, ...]) -> Case:
    import torch

    torch.manual_seed(0)
    model = model_class(config).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: Any) -> Any:
            out = self.model(
                x,
                return_dict=False,
                **({"use_cache": False} if hasattr(config, "use_cache") else {}),
            )
            return out[0]

    return Case(name, _frozen(Wrapped()), inputs, needs="transformers")


def gpt2() -> Case:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=32)
    return _hf("gpt2", config, GPT2LMHeadModel, (torch.randint(0, 128, (1, 16)),))


def bert() -> Case:
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                        intermediate_size=128, vocab_size=128, max_position_embeddings=32)  # fmt: skip
    return _hf("bert", config, BertModel, (torch.randint(0, 128, (1, 16)),))


def vit() -> Case:
    import torch
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                       intermediate_size=128, image_size=32, patch_size=8)  # fmt: skip
    return _hf("vit", config, ViTModel, (torch.randn(1, 3, 32, 32),))


def llama() -> Case:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                         max_position_embeddings=32)  # fmt: skip
    return _hf("llama", config, LlamaForCausalLM, (torch.randint(0, 128, (1, 16)),))


BUILDERS: dict[str, Callable[[], Case]] = {
    "cnn": cnn,
    "resnet_like": resnet_like,
    "unet": unet,
    "mlp_skips": mlp_skips,
    "gru": gru,
    "random_dag": random_dag,
    "encoder": encoder,
    "cond": cond,
    "map": map_body,
    "kv_cache": kv_cache,
    "kv_cache_reinplace": kv_cache_reinplace,
    "mobilenet_xnnpack": mobilenet_xnnpack,
    "dynamic_batch": dynamic_batch,
    "staggered": staggered,
    "gpt2": gpt2,
    "bert": bert,
    "vit": vit,
    "llama": llama,
}


def lower(case: Case, algos: list[Any] | None) -> Any:
    """Export and lower to an ExecuTorch program; `algos` for MemoryPlanningAlgorithmSuite
    (ExecuTorch's default planning when None)."""
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass

    exported = torch.export.export(case.module, case.inputs, dynamic_shapes=case.dynamic_shapes)
    if case.xnnpack:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        edge = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    else:
        edge = to_edge(exported)
    options: dict[str, Any] = {}
    if case.reinplace:
        from executorch.exir.dialects._ops import ops

        # index_put becomes index_put_ (the cache's own spec); slice_scatter, which has no
        # in-place form, is stored inside the window (a storage-backed spec).
        options = {"run_reinplace_pass": True,
                   "reinplace_extra_ops": frozenset({ops.edge.aten.slice_scatter.default})}  # fmt: skip
    if algos is not None:
        suite = MemoryPlanningAlgorithmSuite(algo_list=algos)
        options["memory_planning_pass"] = MemoryPlanningPass(memory_planning_algo=suite)
    return edge.to_executorch(ExecutorchBackendConfig(**options))


def buffer_bytes(program: Any) -> int:
    """The non-constant buffer bytes of the program's first execution plan."""
    return sum(program.executorch_program.execution_plan[0].non_const_buffer_sizes)


def run(program: Any, case: Case) -> list[list[Any]]:
    """The outputs of every call of `case`, in order, in one loaded method (state kept)."""
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    method = _load_for_executorch_from_buffer(program.buffer)
    return [list(method.forward(inputs)) for inputs in case.calls]


def eager(case: Case) -> list[list[Any]]:
    """The same calls in torch, on a copy of the module (its buffers start as exported)."""
    import torch

    module = copy.deepcopy(case.module)
    outputs = []
    with torch.no_grad():
        for inputs in case.calls:
            out = module(*inputs)
            outputs.append(list(out) if isinstance(out, (tuple, list)) else [out])
    return outputs
