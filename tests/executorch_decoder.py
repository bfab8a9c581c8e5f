"""A small decoder with a KV cache exported as ExecuTorch language-model exporters do:
`prefill` and `decode` methods over one module, the cache its mutable buffers, shared
between the methods (`share_mutable_buffers=True`); run in ExecuTorch's runtime, whose
methods share their arenas, over a prefill and decode steps fed by argmax."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

PROMPT = 8
VOCAB, WIDTH, HEADS, LAYERS, CONTEXT = 96, 64, 4, 2, 32


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.up, self.down = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)
        shape = (1, HEADS, CONTEXT, WIDTH // HEADS)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def forward(self, x: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, HEADS, -1).permute(2, 0, 3, 1, 4)
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache.index_copy_(2, pos, v)
        att = (q @ self.k_cache.transpose(-1, -2)) * (WIDTH // HEADS) ** -0.5
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ self.v_cache).transpose(1, 2).reshape(b, s, WIDTH)
        x = x + self.out(y)
        return x + self.down(torch.relu(self.up(self.norm2(x))))


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        mask = torch.arange(CONTEXT).view(1, -1) <= pos.view(-1, 1)
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, pos, mask)
        return self.head(x)


class Method(nn.Module):
    """One entry point over the shared decoder (so the cache's names agree)."""

    def __init__(self, decoder: Decoder) -> None:
        super().__init__()
        self.decoder = decoder

    def forward(self, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.decoder(tokens, pos)


def inputs() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    prompt = torch.arange(PROMPT).view(1, -1) * 7 % VOCAB
    return {
        "prefill": (prompt, torch.arange(PROMPT)),
        "decode": (torch.zeros(1, 1, dtype=torch.long), torch.tensor([PROMPT])),
    }


def export(planning: Any) -> Any:
    """The two-method program, planned by `planning` (a MemoryPlanningPass)."""
    from executorch.exir import ExecutorchBackendConfig, to_edge

    torch.manual_seed(0)
    decoder = Decoder().eval().requires_grad_(False)
    method = Method(decoder)
    programs = {
        name: torch.export.export(method, args, strict=False) for name, args in inputs().items()
    }
    edge = to_edge(programs)
    return edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))


def run(program: Any, steps: int = 10) -> list[torch.Tensor]:
    """Logits of a prefill and `steps` decode steps, each fed the last argmax."""
    from executorch.runtime import Runtime

    loaded = Runtime.get().load_program(program.buffer)
    prefill, decode = loaded.load_method("prefill"), loaded.load_method("decode")
    tokens, pos = inputs()["prefill"]
    outs = [prefill.execute([tokens, pos])[0].clone()]
    for step in range(steps):
        token = outs[-1][:, -1:].argmax(-1)
        outs.append(decode.execute([token, torch.tensor([PROMPT + step])])[0].clone())
    return outs


def eager(steps: int = 10) -> list[torch.Tensor]:
    torch.manual_seed(0)
    decoder = Decoder().eval()
    tokens, pos = inputs()["prefill"]
    with torch.no_grad():
        outs = [decoder(tokens, pos)]
        for step in range(steps):
            token = outs[-1][:, -1:].argmax(-1)
            outs.append(decoder(token, torch.tensor([PROMPT + step])))
    return outs
