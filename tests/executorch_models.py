"""Models lowered by ExecuTorch, for tests/test_executorch.py and
`benchmarks/integrations.py --executorch`: torch.nn models written here and
`transformers` models built from configs with random weights (no downloads), each at a
tiny size and each taking one of the paths a memory plan must get right.

Every builder returns a `Case`, which `lower`, `run` and `eager` take
(`executorch_lowering`); the `transformers` models are built in
`executorch_transformers`.

Paths: plain CNNs and a residual CNN; a U-Net's long skips; an MLP with skips, an
unrolled GRU and a random DAG (many short-lived tensors of mixed sizes); attention
(two encoder layers, GPT-2, BERT, ViT, LLaMA); control flow (`torch.cond`, whose
branches are planned first and set bytes aside, and `map`); mutable buffers (a KV cache
and a sliding window updated every step); the reinplace pass on that step, which hands
the planner a slice update stored inside the window (`storage_base`); XNNPACK, whose
delegate asks for 64 bytes of padding; a dynamic batch planned at its upper bound; two
spec sets built to force the exact planner's later steps (`staggered`, where greedy
misses the live-bytes bound and the exact search reaches it, and `gapped`, where no plan
reaches it and CP-SAT's own model settles the optimum).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from executorch_lowering import Case, buffer_bytes, eager, frozen, lower, run
from executorch_transformers import bert, gpt2, llama, vit

__all__ = ["BUILDERS", "Case", "buffer_bytes", "eager", "lower", "run"]


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
    return Case("cnn", frozen(CNN()), (torch.randn(1, 3, 16, 16),))


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
    return Case("resnet_like", frozen(Net()), (torch.randn(1, 3, 16, 16),))


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
    return Case("unet", frozen(UNet()), (torch.randn(1, 3, 32, 32),))


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
    return Case("mlp_skips", frozen(MLP()), (torch.randn(4, 48),))


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
    return Case("gru", frozen(GRU()), (torch.randn(2, 6, 24),))


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
    return Case("random_dag", frozen(DAG()), (torch.randn(3, 32),))


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
    return Case("encoder", frozen(nn.Sequential(Layer(), Layer())), (torch.randn(1, 12, 32),))


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
    return Case("cond", frozen(Cond()), (x,), runs=((x,), (-x,)))


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
    return Case("map", frozen(Map()), (torch.randn(5, 16), torch.randn(16)))


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
    module = frozen(_kv_step())
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
            self.stem, self.b1, self.b2 = (
                nn.Conv2d(3, 16, 3, 2, 1),
                inverted(16, 48),
                inverted(16, 64),
            )
            self.head = nn.Linear(16, 10)

        def forward(self, x: Any) -> Any:
            x = torch.relu(self.stem(x))
            x = x + self.b1(x)
            x = (x + self.b2(x)).flip(-1)  # flip has no XNNPACK kernel: a portable op between
            return self.head(x.mean((2, 3)))

    torch.manual_seed(0)
    return Case("mobilenet_xnnpack", frozen(Mobile()), (torch.randn(1, 3, 32, 32),), xnnpack=True)


def dynamic_batch() -> Case:
    import torch
    from torch import nn

    module = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 48), nn.ReLU(),
                           nn.Linear(48, 8))  # fmt: skip
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=16)
    runs = ((torch.randn(16, 24),), (torch.randn(3, 24),), (torch.randn(1, 24),))
    return Case("dynamic_batch", frozen(module), runs[0], runs, dynamic_shapes=({0: batch},))


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


def gapped() -> Case:
    """Fifty-two tensors whose sizes and lifetimes leave no plan at the live-bytes bound
    (2288 bytes; the optimum is 2320), on which CP-SAT's own model runs inside the export.
    The set was found among random sets of sizes in units of 64 bytes whose live units are
    the same at every step: one of those the exact search could not prove above that
    level. Each tensor is one op, a slice of the input made at step `start`, and its last
    use is one op too, an `addmm` into the running sum at step `end`, so the specs are
    those tensors, the input and sums of 16 bytes. Greedy misses the optimum; cpsat's
    exact search proves no bound above the live bytes in its share of the time (nor in
    150 s alone), and CP-SAT's model then proves the optimum in under a second."""
    import torch
    from torch import nn

    unit = 16  # floats: 64 bytes
    tensors = (  # (size in units, start, end)
        (1, 0, 1), (1, 0, 1), (2, 0, 1), (2, 0, 1), (4, 0, 1), (8, 0, 1), (3, 0, 2), (3, 0, 2),
        (4, 1, 2), (5, 1, 2), (8, 1, 2), (1, 1, 6), (4, 2, 3), (6, 2, 3), (4, 2, 4), (3, 2, 5),
        (6, 2, 8), (1, 3, 4), (1, 3, 4), (1, 3, 4), (2, 3, 5), (5, 3, 8), (1, 4, 5), (1, 4, 6),
        (2, 4, 7), (3, 4, 7), (1, 5, 6), (5, 5, 6), (8, 6, 11), (5, 7, 8), (4, 8, 9),
        (4, 8, 9), (8, 8, 13), (3, 9, 10), (3, 9, 10), (2, 9, 15), (6, 10, 12), (1, 11, 12),
        (3, 11, 12), (4, 11, 16), (1, 12, 13), (8, 12, 15), (1, 12, 16), (2, 13, 14),
        (5, 13, 14), (2, 13, 16), (2, 14, 16), (5, 14, 16), (1, 15, 16), (2, 15, 16),
        (2, 15, 16), (5, 15, 16),
    )  # fmt: skip

    class Gapped(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weights = nn.ParameterList(
                nn.Parameter(torch.randn(size * unit, 1) / size) for size, _, _ in tensors
            )

        def forward(self, x: Any) -> Any:
            live, total = {}, x[:, :1]
            for step in range(max(end for _, _, end in tensors) + 1):
                for k, (_, _, end) in enumerate(tensors):
                    if end == step:  # one op: the sum and the tensor's last use
                        total = torch.addmm(total, live.pop(k), self.weights[k])
                for k, (size, start, _) in enumerate(tensors):
                    if start == step:  # one op, and each slice starts elsewhere
                        live[k] = x[:, k : k + size * unit]
            return total + x.sum()  # the input stays live to the end

    torch.manual_seed(0)
    width = max(size for size, _, _ in tensors) * unit + len(tensors)
    return Case("gapped", frozen(Gapped()), (torch.randn(1, width),))


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
    "gapped": gapped,
    "gpt2": gpt2,
    "bert": bert,
    "vit": vit,
    "llama": llama,
}
