"""Fuzzing throughput: examples per second per worker, and what each campaign found.

    python benchmarks/fuzz.py [--seconds 120] [--workers 2] [--targets naive,greedy,cpsat,tvm]

For each target: one `optplan fuzz` campaign of `--seconds` over `--workers` local
processes with `--keep-going` (one failure per property), from seed 0. Prints a table
(target, workers, seconds, examples, examples/s/worker, failures found with the seconds
at which each was found and shrunk) and writes benchmarks/results/fuzz.csv, keeping the
rows of targets not run this time; reproducers go to benchmarks/results/fuzz-failures/.
`tvm` is left out when TVM is not installed.
Seconds include the shrinking of what was found, so a target with failures shows fewer
examples per second than a clean one.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optplan.fuzz import Budget, parse_target, run_campaign

RESULTS = ROOT / "benchmarks" / "results" / "fuzz.csv"
FAILURES = ROOT / "benchmarks" / "results" / "fuzz-failures"
COLUMNS = ("target", "workers", "seconds", "examples", "per_second_per_worker", "found")


def measure(target: str, seconds: float, workers: int) -> dict[str, object]:
    spec = parse_target(target, None, 10.0)
    budget = Budget(seconds=seconds, workers=workers, keep_going=True)
    outcome = run_campaign(spec, budget, FAILURES)
    found = "; ".join(f"{f.failure.kind} at {f.seconds:.0f} s" for f in outcome.found)
    return {
        "target": target,
        "workers": workers,
        "seconds": round(outcome.seconds, 1),
        "examples": outcome.examples,
        "per_second_per_worker": round(outcome.examples / outcome.seconds / workers, 2),
        "found": found or "nothing",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="per target")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--targets", default="naive,greedy,cpsat,tvm")
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    if "tvm" in targets and importlib.util.find_spec("tvm") is None:
        print("tvm: not installed, left out")
        targets.remove("tvm")
    rows = []
    for target in targets:
        rows.append(measure(target, args.seconds, args.workers))
        print("  ".join(f"{rows[-1][c]}" for c in COLUMNS), flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    rows = _kept_rows({str(row["target"]) for row in rows}) + rows
    with RESULTS.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


def _kept_rows(targets: set[str]) -> list[dict[str, object]]:
    """The rows of the results file for targets not measured in this run."""
    if not RESULTS.exists():
        return []
    with RESULTS.open(newline="") as source:
        return [row for row in csv.DictReader(source) if row["target"] not in targets]


if __name__ == "__main__":
    sys.exit(main())
