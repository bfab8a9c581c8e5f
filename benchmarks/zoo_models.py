"""The torch zoo's models: CNNs written in torch.nn, transformers from `transformers`
configs with random weights (nothing is downloaded), each at two sizes.

`build(name, size, seed)` gives an eval-mode module and its example inputs. "full" is the
published width of each architecture with fewer layers (so both exporters and the NumPy
replay finish in minutes on two cores); "tiny" is small enough to commit as test data.
Every transformer is wrapped to take one tensor and return its first output, with the
attention mask built inside from the input's shape (what an Optimum-style export passes),
and without a key-value cache.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


# ---------------------------------------------------------------------------- CNNs


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    """ResNet-18's layout: stem, four stages of two basic blocks, pooling, classifier."""

    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        blocks, cin = [], width
        for stage, cout in enumerate([width, width * 2, width * 4, width * 8]):
            blocks += [BasicBlock(cin, cout, 1 if stage == 0 else 2), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(
            torch.flatten(nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1)
        )


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.body = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNet(nn.Module):
    """MobileNetV2's inverted residuals with depthwise convolutions and ReLU6."""

    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(3, width, 3, 2, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU6(),
        ]
        cin = width
        for cout, stride in [
            (width, 1),
            (width * 2, 2),
            (width * 2, 1),
            (width * 4, 2),
            (width * 4, 1),
        ]:
            layers.append(InvertedResidual(cin, cout, stride, 6))
            cin = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x).mean((2, 3)))


class UNet(nn.Module):
    """Two levels down (conv, max-pool), two up (transposed conv, concatenated skips)."""

    def __init__(self, width: int) -> None:
        super().__init__()

        def double(cin: int, cout: int) -> nn.Module:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, 1, 1), nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1), nn.ReLU()
            )

        self.down1, self.down2 = double(3, width), double(width, width * 2)
        self.bottom = double(width * 2, width * 4)
        self.up2 = nn.ConvTranspose2d(width * 4, width * 2, 2, 2)
        self.dec2 = double(width * 4, width * 2)
        self.up1 = nn.ConvTranspose2d(width * 2, width, 2, 2)
        self.dec1 = double(width * 2, width)
        self.head = nn.Conv2d(width, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d1 = self.down1(x)
        d2 = self.down2(nn.functional.max_pool2d(d1, 2))
        bottom = self.bottom(nn.functional.max_pool2d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(bottom), d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.head(u1)


# ---------------------------------------------------------------------------- transformers


class FirstOutput(nn.Module):
    """One tensor in, the model's first output out; token models get an all-ones mask."""

    def __init__(self, model: nn.Module, key: str, extra: Callable[[torch.Tensor], dict]) -> None:
        super().__init__()
        self.model, self.key, self.extra = model, key, extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(**{self.key: x}, **self.extra(x), return_dict=False)[0]


def _tokens(x: torch.Tensor) -> dict:
    return {"attention_mask": torch.ones_like(x)}


def _decoder_tokens(x: torch.Tensor) -> dict:
    return {"attention_mask": torch.ones_like(x), "use_cache": False}


def _t5_inputs(x: torch.Tensor) -> dict:
    # Encoder-decoder: the decoder reads the same tokens (teacher forcing, unshifted).
    return {"attention_mask": torch.ones_like(x), "decoder_input_ids": x, "use_cache": False}


def _transformer(name: str, size: str) -> Built:
    import transformers as hf

    tiny = size == "tiny"
    seq, vocab = (8, 32) if tiny else (128, 32000)
    ids = torch.randint(0, vocab, (1, seq))
    if name == "gpt2":
        cfg = hf.GPT2Config(
            n_layer=1 if tiny else 4,
            n_embd=16 if tiny else 768,
            n_head=2 if tiny else 12,
            vocab_size=vocab,
            n_positions=seq,
            bos_token_id=0,
            eos_token_id=0,
        )
        return FirstOutput(hf.GPT2LMHeadModel(cfg), "input_ids", _decoder_tokens), (ids,)
    if name == "bert":
        cfg = hf.BertConfig(
            num_hidden_layers=1 if tiny else 4,
            hidden_size=16 if tiny else 768,
            num_attention_heads=2 if tiny else 12,
            intermediate_size=32 if tiny else 3072,
            vocab_size=vocab,
            max_position_embeddings=seq,
        )
        return FirstOutput(hf.BertModel(cfg), "input_ids", _tokens), (ids,)
    if name == "llama":
        cfg = hf.LlamaConfig(
            num_hidden_layers=1 if tiny else 4,
            hidden_size=16 if tiny else 512,
            num_attention_heads=2 if tiny else 8,
            num_key_value_heads=1 if tiny else 8,
            intermediate_size=32 if tiny else 1376,
            vocab_size=vocab,
            max_position_embeddings=seq,
            bos_token_id=0,
            eos_token_id=0,
        )
        return FirstOutput(hf.LlamaForCausalLM(cfg), "input_ids", _decoder_tokens), (ids,)
    if name == "t5":
        cfg = hf.T5Config(
            num_layers=1 if tiny else 4,
            num_decoder_layers=1 if tiny else 4,
            d_model=16 if tiny else 512,
            d_kv=8 if tiny else 64,
            num_heads=2 if tiny else 8,
            d_ff=32 if tiny else 2048,
            vocab_size=vocab,
            decoder_start_token_id=0,
        )
        return FirstOutput(hf.T5ForConditionalGeneration(cfg), "input_ids", _t5_inputs), (ids,)
    if name == "bart":
        cfg = hf.BartConfig(
            encoder_layers=1 if tiny else 4,
            decoder_layers=1 if tiny else 4,
            d_model=16 if tiny else 768,
            encoder_attention_heads=2 if tiny else 12,
            decoder_attention_heads=2 if tiny else 12,
            encoder_ffn_dim=32 if tiny else 3072,
            decoder_ffn_dim=32 if tiny else 3072,
            vocab_size=vocab,
            max_position_embeddings=seq,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            decoder_start_token_id=2,
        )
        return FirstOutput(hf.BartForConditionalGeneration(cfg), "input_ids", _t5_inputs), (ids,)
    if name == "vit":
        image, patch = (16, 8) if tiny else (224, 16)
        cfg = hf.ViTConfig(
            num_hidden_layers=1 if tiny else 4,
            hidden_size=16 if tiny else 768,
            num_attention_heads=2 if tiny else 12,
            intermediate_size=32 if tiny else 3072,
            image_size=image,
            patch_size=patch,
        )
        return FirstOutput(hf.ViTModel(cfg), "pixel_values", lambda x: {}), (
            torch.randn(1, 3, image, image),
        )
    raise KeyError(name)


def _cnn(name: str, size: str) -> Built:
    tiny = size == "tiny"
    image = 16 if tiny else 224
    x = torch.randn(1, 3, image, image)
    if name == "resnet":
        return ResNet(1 if tiny else 64, 10 if tiny else 1000), (x,)
    if name == "mobilenet":
        return MobileNet(2 if tiny else 32, 10 if tiny else 1000), (x,)
    if name == "unet":
        return UNet(2 if tiny else 32), (
            torch.randn(1, 3, 16, 16) if tiny else torch.randn(1, 3, 128, 128),
        )
    raise KeyError(name)


CNNS = ("resnet", "mobilenet", "unet")
TRANSFORMERS = ("gpt2", "bert", "vit", "llama", "t5", "bart")
NAMES = CNNS + TRANSFORMERS


def build(name: str, size: str, seed: int = 0) -> Built:
    """An eval-mode model with random weights from `seed`, and its example inputs."""
    torch.manual_seed(seed)
    model, inputs = (_cnn if name in CNNS else _transformer)(name, size)
    model.eval()
    with torch.no_grad():
        # Random BatchNorm statistics, so folding them is not the identity.
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    return model, inputs


def llama_fp16(layers: int = 4, seq: int = 256) -> Built:
    """A LLaMA-style decoder in float16 (width 512, 8 heads, MLP 1376), for replay time."""
    import transformers as hf

    torch.manual_seed(0)
    cfg = hf.LlamaConfig(
        num_hidden_layers=layers,
        hidden_size=512,
        num_attention_heads=8,
        num_key_value_heads=8,
        intermediate_size=1376,
        vocab_size=32000,
        max_position_embeddings=seq,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = FirstOutput(hf.LlamaForCausalLM(cfg), "input_ids", _decoder_tokens).eval().half()
    return model, (torch.randint(0, 32000, (1, seq)),)
