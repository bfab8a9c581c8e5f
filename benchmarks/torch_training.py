"""Training under a peak budget: optplan.torch beside torch's own activation_memory_budget.

For each model (built locally from a config, no downloads), on CPU with torch's own
`aot_eager` backend (min-cut partitioner, no-op compilers that record the graphs):

1. torch's settings: solvers dp, greedy and ilp (`--solvers`) at every
   activation_memory_budget from 0 to 1 in steps of 0.05 (`--step`; 0.05 and 0.15
   always, pytorch#197838's pair); each compiled, warmed up one step, then one step
   measured with PyTorch's memory profiler (`measured_peak`) and one timed.
2. optplan at 90/75/60/50/40 % of the measured peak of torch's default partition
   (budget 1.0), with `BENCH_WORK` units of work (model and search) and `outputs_held=False` (each
   step keeps only its loss), measured the same way; "met" is
   measured peak <= budget. The first budget optplan cannot meet gives the least peak
   it found: it runs again at that peak (budget "lowest"), and the smaller shares are
   written as not met without a run (the search over the budget climbs the same way
   for every budget below every peak it visits).
3. pytorch#197838's case: optplan at the measured peaks of torch's dp at 0.05 and 0.15
   (Llama only).
4. Extra compute: FLOPs of the step's forward and backward graphs (torch's formulas, one
   per element for the rest) less those of torch's default partition.

Writes benchmarks/results/torch_training.csv (`--csv`, `--append`) and, with `--plot`,
docs/torch_training.svg (peak against extra compute per model). Usage:
python benchmarks/torch_training.py [model ...] [--step 0.05] [--solvers dp,greedy,ilp,optplan]
"""

from __future__ import annotations

import argparse
import csv
import functools
import re
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch._dynamo.backends.debugging import aot_eager, boxed_nop

import optplan.torch as ot
from optplan.integrations.torch_budget import WORK
from optplan.integrations.torch_graph import graph_cost
from optplan.integrations.torch_measure import measured_peak
from optplan.integrations.torch_search import draws_random

RESULTS = Path(__file__).parent / "results"
PICTURE = Path(__file__).parent.parent / "docs" / "torch_training.svg"
FIELDS = [
    "model",
    "budget",
    "solver",
    "measured_peak",
    "extra_flops",
    "step_ms",
    "met",
    "bound",
    "draws_again",
]
SHARES = (0.9, 0.75, 0.6, 0.5, 0.4)
# Units of optplan's work per compile: the default that users get (the model, then 120
# partitions of search).
BENCH_WORK = WORK
# Every step here keeps only the loss: the logits die with the model's output, or (ViT,
# CNN) with the square's backward, before the compiled backward runs.
OURS = {"work": BENCH_WORK, "outputs_held": False}
# Where the models run (`--device`): CPU, or a CUDA device where one is present.
DEVICE = "cpu"
LEAST = re.compile(r"the least peak found is (\d+) bytes")
BOUND = re.compile(r"(?:holds at least|proven lower bound) (\d+) bytes")


def _hf(kind: str) -> tuple[torch.nn.Module, Callable[[torch.nn.Module], torch.Tensor]]:
    import transformers as tf

    torch.manual_seed(0)
    ids = torch.randint(0, 512, (2, 256), device=DEVICE)
    if kind == "gpt2":
        cfg = tf.GPT2Config(n_layer=1, n_embd=128, n_head=4, vocab_size=512, n_positions=256)
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
            num_hidden_layers=1,
            hidden_size=128,
            intermediate_size=384,
            num_attention_heads=4,
            vocab_size=512,
            max_position_embeddings=256,
        )
        model = tf.BertForMaskedLM(cfg)
    else:
        cfg = tf.ViTConfig(
            num_hidden_layers=1,
            hidden_size=128,
            intermediate_size=384,
            num_attention_heads=4,
            image_size=64,
            patch_size=8,
        )
        model = _WithLoss(tf.ViTForImageClassification(cfg), lambda y: y.logits.square().mean())
        pixels = torch.randn(4, 3, 64, 64, device=DEVICE)
        return model, lambda m: m(pixels)
    model.config.use_cache = False
    # GPT-2's class name gives transformers no loss type: it would warn through a logger
    # dynamo cannot trace, a graph break between the model and its loss.
    model.loss_type = "ForCausalLM" if kind != "bert" else model.loss_type
    return model, lambda m: m(input_ids=ids, labels=ids).loss


class _WithLoss(torch.nn.Module):
    """A model and its loss as one module: the compiled graphs hold the whole step, so no
    eager op outside them allocates (the measured peak is the planned one)."""

    def __init__(
        self, model: torch.nn.Module, loss: Callable[[torch.Tensor], torch.Tensor]
    ) -> None:
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.loss(self.model(x))


class _Residual(torch.nn.Module):
    """A ResNet basic block: two 3x3 convolutions with batch norm, the input added."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(channels),
            torch.nn.ReLU(),
            torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


def _cnn() -> tuple[torch.nn.Module, Callable[[torch.nn.Module], torch.Tensor]]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        *[_Residual(16) for _ in range(3)],
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 10),
    )
    x = torch.randn(8, 3, 64, 64, device=DEVICE)
    return _WithLoss(model, lambda y: y.square().mean()), lambda m: m(x)


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
    budget: dict[str, object] | None,
) -> tuple[int, int, float, int]:
    """(measured peak, FLOPs of fw+bw, step ms, random ops the backward runs again) of
    one compile: a random op run again draws anew on CPU, its gradients unlike eager's."""
    model, loss_of = make()
    model.to(DEVICE)
    graphs: list[torch.fx.GraphModule] = []

    def keep(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> Callable[..., object]:
        graphs.append(gm)
        return boxed_nop(gm, inputs)  # aot_eager's compiler: frees each input at its last use

    torch._dynamo.reset()
    # aot_eager itself (min-cut partitioner, input mutations such as BatchNorm's running
    # statistics kept in the graph), its graphs recorded on the way to its compiler.
    compiled = torch.compile(
        model, backend=functools.partial(aot_eager, fw_compiler=keep, bw_compiler=keep)
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
    peak = measured_peak(step, DEVICE)
    start = time.perf_counter()
    step()
    ms = 1000 * (time.perf_counter() - start)
    return peak, sum(graph_cost(g) for g in graphs), ms, _drawn_again(graphs)


def _drawn_again(graphs: list[torch.fx.GraphModule]) -> int:
    """Random calls that a forward and the backward after it both run."""

    def random(gm: torch.fx.GraphModule) -> set[str]:
        calls = (n for n in gm.graph.nodes if n.op == "call_function")
        return {n.name for n in calls if draws_random(n)}

    pairs = zip(graphs[0::2], graphs[1::2], strict=False)
    return sum(len(random(fw) & random(bw)) for fw, bw in pairs)


def _row(
    name: str,
    budget: object,
    solver: str,
    result: tuple[int, int, float, int] | None,
    base_flops: int,
    met: object,
    bound: int | None = None,
) -> dict[str, object]:
    peak, flops, ms, drawn = result if result is not None else ("", None, None, "")
    return {
        "model": name,
        "budget": budget,
        "solver": solver,
        "measured_peak": peak,
        "extra_flops": "" if flops is None else flops - base_flops,
        "step_ms": "" if ms is None else f"{ms:.1f}",
        "met": met,
        "bound": "" if bound is None else bound,
        "draws_again": drawn,
    }


def bench(
    name: str, torch_budgets: list[float], solvers: list[str], writer: csv.DictWriter
) -> None:
    """Steps 1 to 4 for one model: torch's `solvers`, then optplan's if listed."""
    make = MODELS[name]
    base_peak, base_flops, _, _ = run(make, {"activation_memory_budget": 1.0}, None)
    torch_peaks = {}
    for solver in (s for s in solvers if not s.startswith("optplan")):
        for b in torch_budgets:
            settings = {"activation_memory_budget": b, "activation_memory_budget_solver": solver}
            result = run(make, settings, None)
            torch_peaks[solver, b] = result[0]
            writer.writerow(_row(name, f"torch {b:.2f}", f"torch-{solver}", result, base_flops, ""))
            print(name, solver, b, result[0], result[1] - base_flops, flush=True)
    for solver in (s for s in solvers if s.startswith("optplan")):
        ours(name, base_peak, base_flops, torch_peaks, writer, solver)


def ours(
    name: str,
    base_peak: int,
    base_flops: int,
    torch_peaks: dict[tuple[str, float], int],
    writer: csv.DictWriter,
    solver: str = "optplan",
) -> None:
    """Steps 2 and 3: optplan's rows; `solver` "optplan-held" keeps the outputs held."""
    make = MODELS[name]
    options = {**OURS, "outputs_held": solver == "optplan-held"}
    targets: list[tuple[object, int]] = [(int(s * base_peak), int(s * base_peak)) for s in SHARES]
    least = bound = None
    while targets:
        label, target = targets.pop(0)
        if least is not None and label != "lowest":
            met = _unmet(target, least, bound)
            writer.writerow(_row(name, label, solver, None, base_flops, met, bound))
            continue
        try:
            result = run(make, {}, {"peak_bytes": target, **options})
        except torch._dynamo.exc.BackendCompilerFailed as error:
            text = str(error)
            least = int(m.group(1)) if (m := LEAST.search(text)) else None
            bound = int(m.group(1)) if (m := BOUND.search(text)) else bound
            if label != "probe":
                met = f"infeasible: {text.splitlines()[1][:160]}; " + _unmet(target, least, bound)
                writer.writerow(_row(name, label, solver, None, base_flops, met, bound))
            if least is not None:
                targets.insert(0, ("lowest", least))
            continue
        report = ot.last_report()
        bound = report.bound_bytes if report is not None else bound
        row = _row(name, label, solver, result, base_flops, result[0] <= target, bound)
        writer.writerow(row)
        print(name, solver, label, target, result[0], result[1] - base_flops, flush=True)
        if label == "lowest":
            least = target
        elif not targets and least is None:
            targets.append(("probe", 1))  # the least peak optplan finds, from its error
    if name == "llama":
        for b in (0.05, 0.15):
            if ("dp", b) not in torch_peaks:
                settings = {"activation_memory_budget": b, "activation_memory_budget_solver": "dp"}
                torch_peaks["dp", b] = run(make, settings, None)[0]
            target = torch_peaks["dp", b]
            result = run(make, {}, {"peak_bytes": target, **options})
            label = f"torch-dp {b:.2f} peak"
            writer.writerow(_row(name, label, solver, result, base_flops, result[0] <= target))
            print(name, solver, "at", label, result, flush=True)


def _unmet(target: int, least: int | None, bound: int | None) -> str:
    """Why a budget is not met: proven out of reach, or below the least peak found."""
    if bound is not None and bound > target:
        return f"proven out of reach: every saved set holds at least {bound} bytes"
    return f"not met: below the least peak optplan found, {least} bytes (bound {bound})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--step", type=float, default=0.05)
    parser.add_argument(
        "--solvers",
        default="dp,greedy,ilp,optplan",
        help="torch's solvers to sweep, and optplan, optplan-held (comma-separated)",
    )
    parser.add_argument("--csv", type=Path, default=RESULTS / "torch_training.csv")
    parser.add_argument(
        "--device", default="cpu", help="cpu, or cuda where present (its max_memory_allocated)"
    )
    parser.add_argument("--append", action="store_true", help="add rows to the CSV")
    parser.add_argument("--plot", action="store_true", help="only draw the picture from the CSV")
    parser.add_argument("--table", action="store_true", help="only print the table from the CSV")
    args = parser.parse_args()
    if args.plot or args.table:
        print(plot() if args.plot else table())
        return
    if args.device != "cpu" and not torch.cuda.is_available():
        parser.exit(2, f"torch_training.py: --device {args.device}: no CUDA device here\n")
    global DEVICE
    DEVICE = args.device
    budgets = sorted(
        {round(k * args.step, 2) for k in range(round(1 / args.step) + 1)} | {0.05, 0.15}
    )
    solvers = args.solvers.split(",")
    path = args.csv
    path.parent.mkdir(exist_ok=True)
    with path.open("a" if args.append else "w", newline="", buffering=1) as f:
        writer = csv.DictWriter(f, FIELDS)
        if f.tell() == 0:
            writer.writeheader()
        for name in args.models:
            bench(name, budgets, solvers, writer)
            f.flush()


def table(csv_path: Path = RESULTS / "torch_training.csv") -> str:
    """Per model and budget: optplan's measured peak and extra compute beside the least
    extra compute among torch's settings whose measured peak meets the same budget."""
    rows = list(csv.DictReader(csv_path.open()))
    lines = [
        "| model | solver | budget | bytes | measured peak | extra MFLOP "
        + "| torch's least extra that meets it |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in (r for r in rows if r["solver"].startswith("optplan")):
        theirs = [t for t in rows if t["model"] == r["model"] and t["solver"].startswith("torch")]
        target = _target(r, rows)
        base = next(int(t["measured_peak"]) for t in theirs if t["budget"] == "torch 1.00")
        label = f"{100 * target / base:.0f} %" if r["budget"].isdigit() else r["budget"]
        if r["measured_peak"]:
            ours = f"{int(r['measured_peak']):,} | {int(r['extra_flops']) / 1e6:.1f}"
        elif r.get("bound") and int(r["bound"]) > target:
            ours = f"proven out of reach (bound {int(r['bound']):,}) | -"
        else:
            found = re.search(r"(\d+) bytes", r["met"].replace(str(target), ""))
            ours = f"not met (least planned {int(found.group(1)):,})" if found else "not met"
            ours += " | -"
        lines.append(
            f"| {r['model']} | {r['solver']} | {label} | {target:,} | {ours} | {_least(theirs, target)} |"
        )
    return "\n".join(lines)


def _target(row: dict[str, str], rows: list[dict[str, str]]) -> int:
    """The budget in bytes of one of optplan's rows."""
    label = row["budget"]
    if label.isdigit():
        return int(label)
    solvers = (row["solver"], "torch-dp")
    same = [r for r in rows if r["model"] == row["model"] and r["solver"] in solvers]
    if label == "lowest":  # the least peak of the infeasible row before it
        before = same[: same.index(row)]
        return int(next(m for r in reversed(before) if (m := LEAST.search(r["met"]))).group(1))
    setting = label.split()[1]  # "torch-dp 0.05 peak": that setting's measured peak
    return int(
        next(r for r in same if r["budget"] == f"torch {setting}" and r["solver"] == "torch-dp")[
            "measured_peak"
        ]
    )


def _least(theirs: list[dict[str, str]], target: int) -> str:
    """torch's least extra compute that meets `target` with gradients equal to eager's (no
    random op drawn again in the backward)."""
    fair = [t for t in theirs if t["measured_peak"] and not int(t.get("draws_again") or 0)]
    meets = [t for t in fair if int(t["measured_peak"]) <= target]
    redrawn = any(
        int(t["measured_peak"]) <= target for t in theirs if int(t.get("draws_again") or 0)
    )
    note = " (others meet it drawing dropout again)" if redrawn else ""
    if not meets:
        low = min(int(t["measured_peak"]) for t in fair)
        return f"none meets it (least {low:,} B){note}"
    best = min(meets, key=lambda t: (int(t["extra_flops"]), int(t["measured_peak"])))
    solver = best["solver"].removeprefix("torch-")
    setting = best["budget"].removeprefix("torch ")
    peak, extra = int(best["measured_peak"]), int(best["extra_flops"]) / 1e6
    return f"{solver} {setting}: {peak:,} B, {extra:.1f} MFLOP{note}"


def plot(csv_path: Path = RESULTS / "torch_training.csv", out: Path = PICTURE) -> Path:
    """Peak against extra compute, one panel per model, optplan's points beside torch's."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "optplan"  # the same CSV draws the same file
    import matplotlib.pyplot as plt

    rows = [r for r in csv.DictReader(csv_path.open()) if r["measured_peak"]]
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(models), figsize=(3.6 * len(models), 3.4), squeeze=False)
    for ax, name in zip(axes[0], models, strict=True):
        for solver, mark in (
            ("torch-dp", "o"),
            ("torch-greedy", "x"),
            ("torch-ilp", "+"),
            ("optplan", "*"),
            ("optplan-held", "P"),
        ):
            pts = [r for r in rows if r["model"] == name and r["solver"] == solver]
            if pts:
                ax.scatter(
                    [float(r["extra_flops"]) / 1e6 for r in pts],
                    [int(r["measured_peak"]) / 2**20 for r in pts],
                    marker=mark,
                    s=60 if solver.startswith("optplan") else 25,
                    label=solver,
                    zorder=3 if solver.startswith("optplan") else 2,
                )
        ax.set_title(name)
        ax.set_xlabel("extra compute (MFLOP)")
        ax.set_ylabel("measured peak (MiB)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)
    return out


if __name__ == "__main__":
    main()
