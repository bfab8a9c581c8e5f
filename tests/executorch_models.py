"""Models lowered by ExecuTorch, for tests/test_executorch.py: torch.nn CNNs and
`transformers` models built from configs with random weights (no downloads).

Each builder returns `(name, module, example_inputs)` at a tiny size; `lower(module,
inputs, algo)` exports it and lowers it to an ExecuTorch program with the given
memory-planning algorithms (ExecuTorch's default greedy when None); `run(program,
inputs)` runs the `.pte` in ExecuTorch's runtime pybindings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def cnn() -> tuple[str, Any, tuple[Any, ...]]:
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
    return "cnn", CNN().eval(), (torch.randn(1, 3, 16, 16),)


def resnet_like() -> tuple[str, Any, tuple[Any, ...]]:
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
    return "resnet_like", Net().eval(), (torch.randn(1, 3, 16, 16),)


def _hf(
    name: str, config: Any, model_class: Any, inputs: tuple[Any, ...]
) -> tuple[str, Any, tuple[Any, ...]]:
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

    return name, Wrapped().eval(), inputs


def gpt2() -> tuple[str, Any, tuple[Any, ...]]:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=32)
    return _hf("gpt2", config, GPT2LMHeadModel, (torch.randint(0, 128, (1, 16)),))


def bert() -> tuple[str, Any, tuple[Any, ...]]:
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                        intermediate_size=128, vocab_size=128, max_position_embeddings=32)  # fmt: skip
    return _hf("bert", config, BertModel, (torch.randint(0, 128, (1, 16)),))


def vit() -> tuple[str, Any, tuple[Any, ...]]:
    import torch
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                       intermediate_size=128, image_size=32, patch_size=8)  # fmt: skip
    return _hf("vit", config, ViTModel, (torch.randn(1, 3, 32, 32),))


def llama() -> tuple[str, Any, tuple[Any, ...]]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=128, vocab_size=128,
                         max_position_embeddings=32)  # fmt: skip
    return _hf("llama", config, LlamaForCausalLM, (torch.randint(0, 128, (1, 16)),))


BUILDERS: dict[str, Callable[[], tuple[str, Any, tuple[Any, ...]]]] = {
    "cnn": cnn,
    "resnet_like": resnet_like,
    "gpt2": gpt2,
    "bert": bert,
    "vit": vit,
    "llama": llama,
}


def lower(module: Any, inputs: tuple[Any, ...], algos: list[Any] | None) -> Any:
    """Export and lower to an ExecuTorch program; `algos` for MemoryPlanningAlgorithmSuite."""
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge
    from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite
    from executorch.exir.passes import MemoryPlanningPass

    edge = to_edge(torch.export.export(module, inputs))
    if algos is None:
        return edge.to_executorch(ExecutorchBackendConfig())
    suite = MemoryPlanningAlgorithmSuite(algo_list=algos)
    config = ExecutorchBackendConfig(
        memory_planning_pass=MemoryPlanningPass(memory_planning_algo=suite)
    )
    return edge.to_executorch(config)


def buffer_bytes(program: Any) -> int:
    """The non-constant buffer bytes of the program's first execution plan."""
    return sum(program.executorch_program.execution_plan[0].non_const_buffer_sizes)


def run(program: Any, inputs: tuple[Any, ...]) -> list[Any]:
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    return list(_load_for_executorch_from_buffer(program.buffer).forward(inputs))
