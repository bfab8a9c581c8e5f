"""The `transformers` models of `executorch_models` (GPT-2, BERT, ViT, LLaMA), built from
configs with random weights and no downloads, each at a tiny size."""

from __future__ import annotations

import os
from typing import Any

from executorch_lowering import Case, frozen

os.environ.setdefault("HF_HUB_OFFLINE", "1")


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

    return Case(name, frozen(Wrapped()), inputs, needs="transformers")


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
