"""How the planners scale: greedy at 1k, 10k and 100k buffers, CP-SAT at 10k.

Steps:
1. Build problems of about 1,000, 10,000 and 100,000 buffers in these families:
   - `tvm`: the real traces of `../shared/data/tvm/*.2_fused_dataflow.py` (ResNet-18 and
     an MLP, fused and unfused, as TVM printed them; read with `optplan.load`), each copy
     rescaled (a batch factor of 1-4, and every buffer by 0.75-1.25, rounded to 256
     bytes, so that sizes stop being tidy powers of two) and chained end to end, as
     inference requests follow each other. Skipped when the data is absent.
   - `resnet`: synthetic residual-CNN-like traces (conv, conv, add with a skip connection; a
     projection on every downsampling block), each copy rescaled by a random batch
     factor and chained so that one copy's output is still live when the next starts:
     one long connected trace, as a deep network gives.
   - `minimalloc`: the 11 MiniMalloc challenging instances repeated one after another,
     shifted in time, when `../shared/data/minimalloc/challenging/` is present: many
     independent hard parts.
   The generator is seeded, so the problems are the same on every run.
2. Run every greedy order with every fit, the best-of `greedy`, and `cpsat` on the 10k
   problems (`--cpsat-at`; time limit 60 s), with and without splitting into
   independent parts.
3. Print a table (instance, buffers, planner, arena bytes, lower bound, gap, status, wall
   seconds, CPU seconds of this process; CP-SAT's worker threads count in the latter) and
   write it as CSV to `benchmarks/results/scaling.csv`.
4. For the `minimalloc` chain, print where cpsat's arena comes from: for each of the 11
   instances, its copies' worst arena beside its lower bound and MiniMalloc's peak (the
   best known). The chain's arena is the worst copy of any instance, so the best known
   arena of the chain is the highest of those peaks.

Run: `python benchmarks/scaling.py [--sizes 1000,10000,100000] [--time-limit 60]`.

Measured on the 2-core machine (CPU seconds; cpsat splits into parts, 60 s limit, gap to
the live-bytes bound; the 100k cpsat rows come from a separate run of the same planner):

    instance            buffers   greedy best-of        cpsat
    tvm-1000              1,018          0.005 s    0.0 % in  0.006 s
    tvm-10000            10,082          0.061 s    0.0 % in  0.61 s
    tvm-100000          100,118          0.60 s     0.0 % in  7.7 s
    resnet-1000           1,036          0.005 s    0.0 % in  0.006 s
    resnet-10000         10,019          0.041 s    0.0 % in  0.054 s
    resnet-100000       100,004          0.49 s     0.0 % in  0.77 s
    minimalloc-1000       1,251          0.15 s     0.0 % in  4.9 s
    minimalloc-10000     10,076          0.10 s     7.1 % in 45 s
    minimalloc-100000   100,111          1.22 s    39.7 % in 45 s

Greedy grows linearly (below 2,000 buffers it runs in plain Python, hence minimalloc's
0.15 s at 1k). On the minimalloc chain every copy ends 6-7 % above the bound at 10k: the
search minimises one peak for the whole chain in its 45 s share, and the CP-SAT rounds
that follow stop after one part without improving it.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))  # run from a checkout without installing

from minimalloc import MINIMALLOC_PEAK  # benchmarks/minimalloc.py: the best-known peaks

from optplan.planners import Planner, get_planner
from optplan.planners.greedy import FITS, ORDERS
from optplan.problem import Buffer, Interval, Problem, lower_bound, read_csv
from optplan.problem.plan import Plan, validate

MINIMALLOC = ROOT.parent.parent / "shared" / "data" / "minimalloc" / "challenging"
TVM = ROOT.parent.parent / "shared" / "data" / "tvm"
STAGES = ((64, 56), (128, 28), (256, 14), (512, 7))  # (channels, height = width)


def resnet_copy(rng: random.Random, name: str, start: int, batch: int) -> tuple[list[Buffer], int]:
    """One residual network's activations from point `start`; returns them and the point
    at which the network's output is last read (the next copy's first op)."""
    buffers: list[Buffer] = []
    point = start

    def add(size_bytes: int, defined: int, last_use: int) -> None:
        buffers.append(
            Buffer(f"{name}.{len(buffers)}", size_bytes, (Interval(defined, last_use + 1),))
        )

    channels, side = STAGES[0]
    x_size, x_def = batch * channels * side * side * 4, point
    for stage, (channels, side) in enumerate(STAGES):
        for block in range(rng.randint(2, 3)):
            out = batch * channels * side * side * 4
            downsample = stage > 0 and block == 0
            add(out, point + 1, point + 2)  # conv1 output, read by conv2
            add(out, point + 2, point + 3)  # conv2 output, read by the add
            if downsample:
                add(out, point + 1, point + 3)  # projection of the skip, read by the add
            add(x_size, x_def, point + 3 if not downsample else point + 1)  # block input
            x_size, x_def = out, point + 3
            point += 3
    add(x_size, x_def, point + 1)  # the output, read by the next network's first op
    return buffers, point + 1


def resnet_chain(count: int, seed: int = 0) -> Problem:
    """Residual networks chained until there are at least `count` buffers."""
    rng = random.Random(seed)
    buffers: list[Buffer] = []
    point = copy = 0
    while len(buffers) < count:
        more, point = resnet_copy(rng, f"n{copy}", point, rng.choice((1, 2, 4, 8)))
        buffers.extend(more)
        copy += 1
    return Problem(tuple(buffers))


def tvm_chain(count: int, seed: int = 0) -> Problem | None:
    """Rescaled copies of TVM's real traces, end to end, until there are `count` buffers."""
    from optplan.errors import InputError
    from optplan.frontends import load

    traces = []
    for path in sorted(TVM.glob("*.2_fused_dataflow.py")):
        try:
            traces.append(load(str(path), alignment=1).problem)
        except InputError as error:  # a trace the reader cannot take is left out, loudly
            print(f"skipped: {error}", file=sys.stderr)
    if not traces:
        return None
    rng = random.Random(seed)
    buffers: list[Buffer] = []
    shift = copy = 0
    while len(buffers) < count:
        trace = rng.choice(traces)
        batch = rng.randint(1, 4)
        for b in trace.buffers:
            size = max(256, round(b.size * batch * rng.uniform(0.75, 1.25) / 256) * 256)
            live = tuple(Interval(iv.start + shift, iv.end + shift) for iv in b.live)
            buffers.append(Buffer(f"{copy}.{b.id}", size, live))
        shift += max(b.end for b in trace.buffers)
        copy += 1
    return Problem(tuple(buffers))


def minimalloc_chain(count: int) -> Problem | None:
    """The challenging instances one after another until there are `count` buffers; a
    buffer's id is `instance.copy.id`."""
    files = sorted(MINIMALLOC.glob("*.csv"))
    if not files:
        return None
    instances = [(path.name.split(".")[0], read_csv(path)) for path in files]
    buffers: list[Buffer] = []
    shift = 0
    while len(buffers) < count:
        copy = shift >> 20
        name, problem = instances[copy % len(instances)]
        for b in problem.buffers:
            live = tuple(Interval(iv.start + shift, iv.end + shift) for iv in b.live)
            buffers.append(Buffer(f"{name}.{copy}.{b.id}", b.size, live))
        shift += 1 << 20
    return Problem(tuple(buffers))


def by_instance(problem: Problem, plan: Plan) -> list[dict[str, object]]:
    """For a `minimalloc_chain` plan: per instance, its copies, lower bound, MiniMalloc's
    peak, the worst arena over its copies, and how many copies end over 1 % above the
    chain's lower bound."""
    tops: dict[tuple[str, str], int] = {}
    for b in problem.buffers:
        name, copy, _ = b.id.split(".", 2)
        tops[name, copy] = max(tops.get((name, copy), 0), plan.offsets[b.id] + b.size)
    rows = []
    for name in sorted({name for name, _ in tops}):
        arenas = [arena for (other, _), arena in tops.items() if other == name]
        rows.append(
            {
                "instance": name,
                "copies": len(arenas),
                "lower_bound": lower_bound(read_csv(MINIMALLOC / f"{name}.1048576.csv")),
                "minimalloc_peak": MINIMALLOC_PEAK.get(name, ""),
                "worst_copy": max(arenas),
                "copies_over_1_percent": sum(a > 1.01 * plan.lower_bound for a in arenas),
            }
        )
    return rows


def print_by_instance(rows: list[dict[str, object]]) -> None:
    print("cpsat on the minimalloc chain, by instance:")
    print("  ".join(f"{c:>21}" for c in rows[0]))
    for line in rows:
        print("  ".join(f"{v:>21}" for v in line.values()))


def timed(planner: Planner, problem: Problem) -> tuple[Plan, float]:
    """The plan and the CPU seconds it took (wall time alone misleads on a shared machine)."""
    started = time.process_time()
    plan = planner(problem)
    return plan, time.process_time() - started


def row(
    instance: str, problem: Problem, label: str, planned: tuple[Plan, float]
) -> dict[str, object]:
    plan, cpu = planned
    faults = validate(problem, plan)
    if faults:
        raise SystemExit(f"{instance}: {label} gave an invalid plan: {faults[0]}")
    gap = (plan.arena - plan.lower_bound) / plan.lower_bound if plan.lower_bound else 0.0
    return {
        "instance": instance,
        "buffers": len(problem.buffers),
        "planner": label,
        "arena_bytes": plan.arena,
        "lower_bound_bytes": plan.lower_bound,
        "gap_percent": round(100 * gap, 2),
        "status": plan.status.value,
        "seconds": round(plan.seconds, 3),
        "cpu_seconds": round(cpu, 3),
    }


def run(instance: str, problem: Problem, time_limit: float, with_cpsat: bool) -> list[dict]:
    """Rows for every single order and fit, the best-of greedy and (`with_cpsat`) cpsat
    split and unsplit; prints the by-instance table of cpsat on a minimalloc chain."""
    rows = []
    for order in ORDERS:
        for fit in FITS:
            plan = timed(get_planner("greedy", orders=(order,), fits=(fit,)), problem)
            rows.append(row(instance, problem, f"greedy {order}/{fit}", plan))
    best = timed(get_planner("greedy"), problem)
    rows.append(row(instance, problem, f"greedy (best: {best[0].detail['order']})", best))
    if with_cpsat:
        plan = timed(get_planner("cpsat", work=None, time_limit=time_limit), problem)
        rows.append(row(instance, problem, "cpsat", plan))
        if instance.startswith("minimalloc"):
            print_by_instance(by_instance(problem, plan[0]))
        whole = timed(get_planner("cpsat", work=None, time_limit=time_limit, split=False), problem)
        rows.append(row(instance, problem, "cpsat (one model, no split)", whole))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument(
        "--cpsat-at", default="10000", help="sizes at which to run cpsat, e.g. 1000,10000"
    )
    parser.add_argument("--out", default=str(ROOT / "results" / "scaling.csv"))
    args = parser.parse_args(argv)
    cpsat_at = {int(s) for s in args.cpsat_at.split(",")}
    rows: list[dict] = []
    columns = (
        "instance",
        "buffers",
        "planner",
        "arena_bytes",
        "lower_bound_bytes",
        "gap_percent",
        "status",
        "seconds",
        "cpu_seconds",
    )
    print("  ".join(f"{c:>12}" if c != "planner" else f"{c:<28}" for c in columns))
    for size in (int(s) for s in args.sizes.split(",")):
        families = [
            ("tvm", tvm_chain(size)),
            ("resnet", resnet_chain(size)),
            ("minimalloc", minimalloc_chain(size)),
        ]
        for family, problem in families:
            if problem is None:
                continue
            for line in run(f"{family}-{size}", problem, args.time_limit, size in cpsat_at):
                rows.append(line)
                print(
                    "  ".join(
                        f"{line[c]:>12}" if c != "planner" else f"{line[c]:<28}" for c in columns
                    ),
                    flush=True,
                )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
