"""The first run against the hundredth: what a fresh install pays before its first plan.

    python benchmarks/cold_start.py [--rev REV] [--cases minimalloc-5,idealloc,compare]
                                    [--instances A,B] [--out FILE]

Steps:
1. A fresh copy of the source tree (the working tree's tracked files, or `git archive
   REV`) in a temporary folder: no `__pycache__`, so no numba cache and no byte code.
2. A new virtual environment there, installed with the README's quick-start command
   (`python3 -m venv .venv && .venv/bin/pip install -q -e .`), timed: the `install` row.
3. Each case runs twice with the copy's `optplan` command, as a user types it: cold (the
   copy as the install left it: every file written since is removed first) and warm
   (right after, once any background compile has ended). Seconds are end to end
   (interpreter start, imports, reading, planning): wall, and CPU (user + system of the
   process and what it waited for; a detached background compile is not in it), which
   a shared machine's load sways less; `compiled` counts the numba kernels written to
   the cache by the cold run (and by any background compile it started), and `note` is
   the note it printed, if any.

Cases: MiniMalloc's 11 with cpsat at --time-limit 5 and 60 (`minimalloc-5`,
`minimalloc-60`), idealloc's S_1 and Y_1 with greedy (`idealloc`), the transformer
example with `compare` (`compare`; the arena is the best row's). Writes
benchmarks/results/cold_start.csv (or --out). The data come from ../shared/data; cases
without them are skipped, saying so.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "cold_start.csv"
INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q -e ."
MINIMALLOC = "ABCDEFGHIJK"
COLUMNS = (
    "case",
    "cold_arena",
    "warm_arena",
    "cold_s",
    "warm_s",
    "cold_cpu_s",
    "warm_cpu_s",
    "cold_status",
    "warm_status",
    "compiled",
    "note",
)
WIDTHS = (19, 13, 13, 7, 7, 10, 10, 11, 11, 8)
BACKGROUND_WAIT_S = 900  # a background compile on a loaded machine: give it time to end


@dataclass(frozen=True, slots=True)
class Case:
    """One command: its name, the arguments after `optplan`, and whether its output is
    `compare`'s list of rows."""

    name: str
    args: tuple[str, ...]
    compare: bool = False


@dataclass(frozen=True, slots=True)
class Run:
    """What one run gave: the arena, the status, wall and CPU seconds, its note."""

    arena: int | None
    status: str
    seconds: float
    cpu_seconds: float
    note: str


def cases(chosen: set[str], instances: str) -> list[Case]:
    """The cases asked for whose data are at hand."""
    found: list[Case] = []
    minimalloc = DATA / "minimalloc" / "challenging"
    for limit in (5, 60):
        if f"minimalloc-{limit}" not in chosen:
            continue
        for name in instances:
            path = minimalloc / f"{name}.1048576.csv"
            if not path.exists():
                print(f"minimalloc {name}: no file {path}; skipped")
                continue
            args = ("plan", str(path), "--planner", "cpsat", "--time-limit", str(limit))
            found.append(Case(f"{name} cpsat {limit}s", args))
    for name in ("S_1", "Y_1") if "idealloc" in chosen else ():
        path = DATA / "idealloc" / f"{name}.csv"
        if not path.exists():
            print(f"idealloc {name}: no file {path}; skipped")
            continue
        args = ("plan", str(path), "--planner", "greedy", "--alignment", "1")
        found.append(Case(f"{name} greedy", args))
    if "compare" in chosen:
        args = ("compare", "examples/transformer_block.py")
        found.append(Case("transformer compare", args, compare=True))
    return found


def fresh_tree(rev: str | None) -> Path:
    """Step 1: the source tree copied into a new temporary folder."""
    tree = Path(tempfile.mkdtemp(prefix="optplan-cold-"))
    if rev is not None:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        return tree
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    return tree


def clean_env() -> dict[str, str]:
    """The environment without settings that would point numba at an existing cache."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHONPATH"))}


def install(tree: Path) -> tuple[float, float]:
    """Step 2: the README's install command in the copy; its wall and CPU seconds."""
    before, started = cpu_of_children(), time.perf_counter()
    subprocess.run(INSTALL, shell=True, cwd=tree, env=clean_env(), check=True)
    return time.perf_counter() - started, cpu_of_children() - before


def written(tree: Path) -> set[Path]:
    """Every file under the copy's package."""
    return {p for p in (tree / "optplan").rglob("*") if p.is_file()}


def settle(tree: Path) -> None:
    """Wait until no background compile is marked as running in the copy."""
    waited = 0.0
    while any((tree / "optplan").rglob("*.compiling")) and waited < BACKGROUND_WAIT_S:
        time.sleep(1.0)
        waited += 1.0


def run(tree: Path, case: Case) -> Run:
    """One run of the case's command in the copy, as a user would type it."""
    command = [str(tree / ".venv" / "bin" / "optplan"), *case.args, "--json"]
    before, started = cpu_of_children(), time.perf_counter()
    done = subprocess.run(
        command, check=False, cwd=tree, env=clean_env(), capture_output=True, text=True
    )
    seconds, cpu = time.perf_counter() - started, cpu_of_children() - before
    notes = [line for line in done.stderr.splitlines() if line.startswith("optplan: note")]
    note = notes[0].removeprefix("optplan: note: ") if notes else ""
    if done.returncode != 0:
        return Run(None, f"exit {done.returncode}", seconds, cpu, done.stderr.strip()[-200:])
    result = json.loads(done.stdout)
    rows = result if case.compare else [result]
    best = min(rows, key=lambda row: row["arena_bytes"])
    return Run(int(best["arena_bytes"]), str(best["status"]), seconds, cpu, note)


def cpu_of_children() -> float:
    """CPU seconds of the child processes this one has waited for, so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(tree: Path, case: Case, installed: set[Path]) -> dict[str, object]:
    """Step 3 for one case: back to the state the install left, then cold and warm."""
    settle(tree)
    for path in written(tree) - installed:
        path.unlink()
    cold = run(tree, case)
    settle(tree)
    compiled = sum(1 for path in written(tree) - installed if path.suffix == ".nbi")
    warm = run(tree, case)
    return {
        "case": case.name,
        "cold_arena": "" if cold.arena is None else cold.arena,
        "warm_arena": "" if warm.arena is None else warm.arena,
        "cold_s": f"{cold.seconds:.1f}",
        "warm_s": f"{warm.seconds:.1f}",
        "cold_cpu_s": f"{cold.cpu_seconds:.1f}",
        "warm_cpu_s": f"{warm.cpu_seconds:.1f}",
        "cold_status": cold.status,
        "warm_status": warm.status,
        "compiled": compiled,
        "note": cold.note,
    }


def show(row: dict[str, object]) -> None:
    print(" ".join(str(row[c]).rjust(w) for c, w in zip(COLUMNS, WIDTHS)), row["note"], flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision to copy instead of the working tree")
    parser.add_argument("--cases", default="minimalloc-5,minimalloc-60,idealloc,compare")
    parser.add_argument("--instances", default=MINIMALLOC, help="MiniMalloc's, e.g. AB")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    chosen = {c.strip() for c in args.cases.split(",") if c.strip()}
    todo = cases(chosen, args.instances.replace(",", ""))
    tree = fresh_tree(args.rev)
    try:
        seconds, cpu = install(tree)
        installed = written(tree)
        print(" ".join(h.rjust(w) for h, w in zip(COLUMNS, WIDTHS)), "note")
        rows: list[dict[str, object]] = [dict.fromkeys(COLUMNS, "")]
        rows[0].update(case="install", cold_s=f"{seconds:.1f}", cold_cpu_s=f"{cpu:.1f}")
        rows[0]["note"] = INSTALL
        rows[0]["compiled"] = sum(1 for path in installed if path.suffix == ".nbi")
        show(rows[0])
        for case in todo:
            rows.append(measure(tree, case, installed))
            show(rows[-1])
    finally:
        settle(tree)
        shutil.rmtree(tree, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
