"""The torch zoo: models as users export them, planned and replayed (needs torch).

Steps, for every model of `zoo_models` and both of torch's ONNX exporters:

1. Build the model with random weights (a fixed seed; transformers from `transformers`
   configs, nothing downloaded) and export it with `torch.onnx.export(..., dynamo=False)`
   (TorchScript, what Optimum-style exports produce) or `dynamo=True`; external weights
   are folded back into one file.
2. Run it in onnxruntime on the export's example inputs: the outputs to match.
3. Load it as the command line does (static shapes from `optplan.frontends.onnx_shapes`), plan it
   with tokens (TVM's rule), greedy and cpsat, and `validate` every plan.
4. Replay: the reference run and the cpsat plan's run in one arena, compared bit for bit;
   the reference outputs against onnxruntime's within RTOL/ATOL (float16: RTOL16/ATOL16).
5. Print a table and write benchmarks/results/zoo.csv. A model whose export fails is a
   row saying so (the exporter's fault, not optplan's).

    python benchmarks/zoo.py [--models gpt2,bert] [--exporters script,dynamo] [--fp16]
    python benchmarks/zoo.py --size tiny --write-tests tests/data/zoo

`--fp16` adds a 4-layer LLaMA-style decoder in float16 at sequence 256 (replay time is the
point). `--write-tests DIR` keeps each (tiny) model with its inputs and onnxruntime's
outputs as `DIR/<model>_<exporter>.onnx` and `.npz`, the data of tests/test_zoo.py.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import os
import re
import sys
import tempfile
import time
import warnings
from dataclasses import astuple, dataclass, fields
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import onnx
import torch
from zoo_models import NAMES, build, llama_fp16

from optplan.errors import InputError
from optplan.frontends import load
from optplan.frontends.onnx import read_onnx
from optplan.planners import get_planner
from optplan.problem.plan import validate
from optplan.runtime import replay as executor

RESULTS = Path(__file__).resolve().parent / "results" / "zoo.csv"
EXPORTERS = ("script", "dynamo")
# BART stands for the encoder-decoders in the test data, from both exporters; T5 exports
# only through TorchScript (torch.export fails on a view in its attention) and that file
# alone is 82 KB.
NOT_KEPT = frozenset({"t5", "llama_fp16"})
RTOL, ATOL = 1e-3, 1e-4
RTOL16, ATOL16 = 5e-2, 5e-2


@dataclass
class Row:
    model: str
    exporter: str
    status: str
    nodes: int = 0
    buffers: int = 0
    naive_bytes: int = 0
    lower_bound_bytes: int = 0
    tokens_bytes: int = 0
    greedy_bytes: int = 0
    cpsat_bytes: int = 0
    plan_seconds: float = 0.0
    bit_for_bit: str = ""
    max_diff_vs_ort: float = 0.0
    reference_seconds: float = 0.0
    replay_seconds: float = 0.0


def export(
    model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], exporter: str, path: Path
) -> None:
    """One self-contained .onnx file by the chosen exporter; its chatter is silenced."""
    sink = io.StringIO()
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
    ):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            inputs,
            str(path),
            dynamo=exporter == "dynamo",
            input_names=["x"],
            output_names=["y"],
            **({} if exporter == "dynamo" else {"opset_version": 17}),
        )
    data = path.with_name(path.name + ".data")
    if data.exists():
        whole = onnx.load(str(path))
        data.unlink()
        onnx.save(whole, str(path))


def ort_outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options).run(None, feeds)


def measure(
    name: str, exporter: str, path: Path, feeds: dict[str, np.ndarray], time_limit: float
) -> Row:
    expected = ort_outputs(path, feeds)
    loaded = load(str(path))
    assert loaded.program is not None and loaded.memory is not None
    problem = loaded.problem
    started = time.perf_counter()
    plans = {
        "tokens": get_planner("tokens")(problem),
        "greedy": get_planner("greedy")(problem),
        "cpsat": get_planner("cpsat", work=None, time_limit=time_limit)(problem),
    }
    plan_seconds = time.perf_counter() - started
    for plan in plans.values():
        assert validate(problem, plan) == [], plan.planner
    row = Row(
        name,
        exporter,
        "ok",
        nodes=len(onnx.load(str(path), load_external_data=False).graph.node),
        buffers=len(problem.buffers),
        naive_bytes=problem.naive_bytes,
        lower_bound_bytes=plans["cpsat"].lower_bound,
        tokens_bytes=plans["tokens"].arena,
        greedy_bytes=plans["greedy"].arena,
        cpsat_bytes=plans["cpsat"].arena,
        plan_seconds=round(plan_seconds, 2),
    )
    model = read_onnx(str(path), {})
    inputs = {**model.weights, **{model.names[k]: v for k, v in feeds.items()}}
    started = time.perf_counter()
    reference = executor.reference_run(model.program, inputs)
    row.reference_seconds = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    replay = executor.planned_run(model.program, loaded.memory, plans["cpsat"], inputs)
    row.replay_seconds = round(time.perf_counter() - started, 2)
    same = reference.failure is None and executor.compare(reference, replay) is None
    row.bit_for_bit = (
        "yes" if same else f"NO: {reference.failure or executor.compare(reference, replay)}"
    )
    fp16 = any(e.dtype == np.float16 for e in expected)
    rtol, atol = (RTOL16, ATOL16) if fp16 else (RTOL, ATOL)
    worst = 0.0
    for got, want in zip(reference.outputs, expected):
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        worst = max(worst, float(diff.max(initial=0.0)))
        if not np.allclose(got, want, rtol=rtol, atol=atol):
            row.status = f"differs from onnxruntime beyond rtol {rtol:g}, atol {atol:g}"
    row.max_diff_vs_ort = float(f"{worst:.3g}")
    return row


def run_one(name: str, exporter: str, size: str, args: argparse.Namespace, work: Path) -> Row:
    model, inputs = llama_fp16() if name == "llama_fp16" else build(name, size)
    path = work / f"{name}_{exporter}.onnx"
    try:
        export(model, inputs, exporter, path)
    except Exception as error:  # noqa: BLE001 - an exporter's failure is a row, not a crash
        # The exporter colours its messages; the table keeps the words.
        first = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).splitlines()[0]
        return Row(name, exporter, f"export failed: {first[:80]}")
    feeds = {"x": inputs[0].numpy()}
    try:
        row = measure(name, exporter, path, feeds, args.time_limit)
    except InputError as error:
        return Row(name, exporter, f"refused: {error.message[:100]}")
    if (
        args.write_tests
        and row.status == "ok"
        and row.bit_for_bit == "yes"
        and name not in NOT_KEPT
    ):
        keep(path, feeds, Path(args.write_tests))
    return row


def keep(path: Path, feeds: dict[str, np.ndarray], directory: Path) -> None:
    """The model without its doc strings and metadata (the exporters' stack traces, most
    of a dynamo file's bytes), its inputs, and onnxruntime's outputs."""
    directory.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(path))
    model.ClearField("metadata_props")
    model.graph.doc_string = ""
    for node in model.graph.node:
        node.doc_string = ""
        node.ClearField("metadata_props")
    onnx.save(model, str(directory / path.name))
    outputs = ort_outputs(path, feeds)
    arrays = {
        **{f"input_{k}": v for k, v in feeds.items()},
        **{f"output_{i}": o for i, o in enumerate(outputs)},
    }
    np.savez_compressed(directory / path.with_suffix(".npz").name, **arrays)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(NAMES))
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--size", choices=("full", "tiny"), default="full")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--fp16", action="store_true", help="add the float16 LLaMA at sequence 256")
    parser.add_argument("--write-tests", help="keep the models and onnxruntime's outputs here")
    parser.add_argument("--csv", default=str(RESULTS))
    args = parser.parse_args()
    names = [n for n in args.models.split(",") if n] + (["llama_fp16"] if args.fp16 else [])
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            for exporter in args.exporters.split(","):
                row = run_one(name, exporter, args.size, args, Path(work))
                rows.append(row)
                print(_line(row), flush=True)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(args.csv, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([f.name for f in fields(Row)])
        writer.writerows(astuple(r) for r in rows)
    print(f"wrote {args.csv}")
    return 0


def _line(row: Row) -> str:
    if row.status != "ok" and not row.buffers:
        return f"{row.model:11} {row.exporter:7} {row.status}"
    return (
        f"{row.model:11} {row.exporter:7} {row.status:3} nodes {row.nodes:5} buffers {row.buffers:5} "
        f"naive {row.naive_bytes:>11} lower {row.lower_bound_bytes:>10} tokens {row.tokens_bytes:>10} "
        f"cpsat {row.cpsat_bytes:>10} plan {row.plan_seconds:6.2f}s bit-for-bit {row.bit_for_bit} "
        f"|diff| {row.max_diff_vs_ort:.2g} ref {row.reference_seconds:.2f}s replay {row.replay_seconds:.2f}s"
    )


if __name__ == "__main__":
    sys.exit(main())
