"""Training under a peak budget: optplan.torch beside torch's own activation_memory_budget.

For each model (built locally from a config, no downloads), on CPU with AOTAutograd's
min-cut partitioner and no-op compilers (aot_eager's path):

1. torch's settings: solver dp, greedy (and ilp where SciPy is present) at
   activation_memory_budget in TORCH_BUDGETS; each compiled, warmed up one step, then
   one step measured with PyTorch's memory profiler (`measured_peak`) and one timed.
2. optplan at 90/75/60/50/40 % of the peak of torch's default partition (budget 1.0),
   measured the same way; "met" is measured peak <= budget.
3. Extra compute: FLOPs of the step's forward and backward graphs (torch's formulas, one
   per element for the rest) less those of torch's default partition.

Writes benchmarks/results/torch_training.csv and torch_training.png (peak against extra
compute per model). Usage: python benchmarks/torch_training.py [model ...] [--step 0.05]
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.debugging import boxed_nop
from torch._functorch.partitioners import min_cut_rematerialization_partition

import optplan.torch as ot
from optplan.integrations.torch_graph import graph_cost
from optplan.integrations.torch_measure import measured_peak

RESULTS = Path(__file__).parent / "results"
FIELDS = ["model", "budget", "solver", "measured_peak", "extra_flops", "step_ms", "met"]
SHARES = (0.9, 0.75, 0.6, 0.5, 0.4)


def _hf(kind: str) -> tuple[torch.nn.Module, Callable[[torch.nn.Module], torch.Tensor]]:
    import transformers as tf

    torch.manual_seed(0)
    ids = torch.randint(0, 512, (2, 256))
    if kind == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=512, n_positions=256)
        model = tf.GPT2LMHeadModel(cfg)
    elif kind == "llama":
        cfg = tf.LlamaConfig(
            num_hidden_layers=2,
            hidden_size=128,
            intermediate_size=384,
            num_attention_heads=4,
            num_key_value_heads=4,
            vocab_size=512,
            max_position_embeddings=256,
        )
        model = tf.LlamaForCausalLM(cfg)
    elif kind == "bert":
        cfg = tf.BertConfig(
            num_hidden_layers=2,
            hidden_size=128,
            intermediate_size=384,
            num_attention_heads=4,
            vocab_size=512,
            max_position_embeddings=256,
        )
        model = tf.BertForMaskedLM(cfg)
    else:
        cfg = tf.ViTConfig(
            num_hidden_layers=2,
            hidden_size=128,
            intermediate_size=384,
            num_attention_heads=4,
            image_size=64,
            patch_size=8,
        )
        model = tf.ViTForImageClassification(cfg)
        pixels = torch.randn(4, 3, 64, 64)
        return model, lambda m: m(pixel_values=pixels).logits.square().mean()
    model.config.use_cache = False
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def _cnn() -> tuple[torch.nn.Module, Callable[[torch.nn.Module], torch.Tensor]]:
    torch.manual_seed(0)

    def block(c: int) -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Conv2d(c, c, 3, padding=1), torch.nn.BatchNorm2d(c), torch.nn.ReLU()
        )

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        *[block(16) for _ in range(4)],
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 10),
    )
    x = torch.randn(8, 3, 64, 64)
    return model, lambda m: m(x).square().mean()


MODELS = {
    "gpt2": lambda: _hf("gpt2"),
    "llama": lambda: _hf("llama"),
    "bert": lambda: _hf("bert"),
    "vit": lambda: _hf("vit"),
    "cnn": _cnn,
}


def run(
    make: Callable[[], tuple[torch.nn.Module, Callable[[torch.nn.Module], torch.Tensor]]],
    settings: dict[str, object],
    budget: dict[str, float] | None,
) -> tuple[int, int, float]:
    """(measured peak, FLOPs of fw+bw, step ms) of one compile."""
    model, loss_of = make()
    graphs: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> Callable[..., object]:
        graphs.append(gm)
        return boxed_nop(gm, inputs)  # aot_eager's compiler: frees each input at its last use

    torch._dynamo.reset()
    compiled = torch.compile(
        model,
        backend=aot_autograd(
            fw_compiler=keep, bw_compiler=keep, partition_fn=min_cut_rematerialization_partition
        ),
    )

    def step() -> None:
        model.zero_grad(set_to_none=False)
        loss_of(compiled).backward()

    with torch._functorch.config.patch(**settings):
        if budget is None:
            step()
        else:
            with ot.memory_budget(**budget):  # type: ignore[arg-type]
                step()
    peak = measured_peak(step)
    start = time.perf_counter()
    step()
    return peak, sum(graph_cost(g) for g in graphs), 1000 * (time.perf_counter() - start)


def bench(name: str, torch_budgets: list[float], writer: csv.DictWriter) -> None:
    make = MODELS[name]
    base_peak, base_flops, _ = run(make, {"activation_memory_budget": 1.0}, None)
    for solver in ("dp", "greedy"):
        for b in torch_budgets:
            peak, flops, ms = run(
                make,
                {"activation_memory_budget": b, "activation_memory_budget_solver": solver},
                None,
            )
            writer.writerow(
                {
                    "model": name,
                    "budget": f"torch {b:.2f}",
                    "solver": f"torch-{solver}",
                    "measured_peak": peak,
                    "extra_flops": flops - base_flops,
                    "step_ms": f"{ms:.1f}",
                    "met": "",
                }
            )
            print(name, solver, b, peak, flops - base_flops, flush=True)
    for share in SHARES:
        target = int(share * base_peak)
        try:
            peak, flops, ms = run(make, {}, {"peak_bytes": target})
        except torch._dynamo.exc.BackendCompilerFailed as error:
            writer.writerow(
                {
                    "model": name,
                    "budget": target,
                    "solver": "optplan",
                    "measured_peak": "",
                    "extra_flops": "",
                    "step_ms": "",
                    "met": f"infeasible: {str(error).splitlines()[1][:120]}",
                }
            )
            continue
        writer.writerow(
            {
                "model": name,
                "budget": target,
                "solver": "optplan",
                "measured_peak": peak,
                "extra_flops": flops - base_flops,
                "step_ms": f"{ms:.1f}",
                "met": peak <= target,
            }
        )
        print(name, "optplan", share, target, peak, flops - base_flops, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--step", type=float, default=0.05)
    parser.add_argument("--plot", action="store_true", help="only draw the PNG from the CSV")
    args = parser.parse_args()
    if args.plot:
        print(plot())
        return
    budgets = sorted(
        {round(k * args.step, 2) for k in range(round(1 / args.step) + 1)} | {0.05, 0.15}
    )
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "torch_training.csv"
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if f.tell() == 0:
            writer.writeheader()
        for name in args.models:
            bench(name, budgets, writer)
            f.flush()


def plot(csv_path: Path = RESULTS / "torch_training.csv") -> Path:
    """Peak against extra compute, one panel per model, optplan's points beside torch's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in csv.DictReader(csv_path.open()) if r["measured_peak"]]
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(models), figsize=(4.5 * len(models), 3.6), squeeze=False)
    for ax, name in zip(axes[0], models, strict=True):
        for solver, mark in (
            ("torch-dp", "o"),
            ("torch-greedy", "x"),
            ("torch-ilp", "+"),
            ("optplan", "*"),
        ):
            pts = [r for r in rows if r["model"] == name and r["solver"] == solver]
            if pts:
                ax.scatter(
                    [float(r["extra_flops"]) / 1e6 for r in pts],
                    [int(r["measured_peak"]) / 2**20 for r in pts],
                    marker=mark,
                    label=solver,
                )
        ax.set_title(name)
        ax.set_xlabel("extra compute (MFLOP)")
        ax.set_ylabel("measured peak (MiB)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = csv_path.with_suffix(".png")
    fig.savefig(out, dpi=110)
    return out


if __name__ == "__main__":
    main()
