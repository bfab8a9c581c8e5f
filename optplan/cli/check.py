"""`optplan check`: extract, validate and replay the plan of a planned program, or
extract and validate the memory plan of an ExecuTorch program (`.pte`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from optplan.cli.options import Commands
from optplan.errors import InputError


def _cmd_check(args: argparse.Namespace) -> int:
    if args.program.lower().endswith(".tflite"):
        return _check_tflite(args)
    if args.program.lower().endswith(".pte"):
        return _check_pte(args)
    from optplan.frontends.script import load as load_script
    from optplan.runtime.check import check_program

    try:
        report = check_program(load_script(args.program), path=args.program, seed=args.seed)
    except InputError as error:
        raise error.located(args.program) from None
    if not report.storages:
        raise InputError(
            "no plan in this program (no R.memory.alloc_storage holds a tensor); "
            "'optplan lower' prints one planned",
            file=args.program,
        )
    print(json.dumps(report.as_dict(), indent=1) if args.json else report.summary())
    return 0 if report.valid else 1


def _check_tflite(args: argparse.Namespace) -> int:
    """A `.tflite` model's offline plan: validated, then (with tflite-micro) run in TFLite
    Micro beside the same model without it, outputs compared."""
    from optplan.integrations import tflm, tflm_run

    report = tflm.check_offline_plan(args.program)
    if report is None:
        raise InputError(
            f"no plan in this model (no {tflm.OFFLINE_PLAN} metadata); "
            "'optplan plan MODEL.tflite -o PLANNED.tflite' writes one",
            file=args.program,
        )
    record: dict[str, object] = {
        "path": args.program, "valid": report.valid, "head_bytes": report.head_bytes,
        "lower_bound_bytes": report.lower_bound_bytes, "tensors": report.placed,
        "left_to_tflm": report.left, "violations": list(report.violations), "tflm": None,
    }  # fmt: skip
    if report.valid and tflm_run.available():
        found = tflm.run_against_own(args.program, report.lower_bound_bytes, args.seed)
        record["tflm"] = tflm_run.as_dict(found)
        record["valid"] = found.outputs_equal
    print(json.dumps(record, indent=1) if args.json else tflm.check_summary(report, record))
    return 0 if record["valid"] else 1


def _check_pte(args: argparse.Namespace) -> int:
    """Per method and memory id: ExecuTorch's bytes, the live-bytes bound and the gap to
    it, and what the independent validator finds; valid (0) or invalid (1)."""
    from optplan.frontends.pte import read_pte
    from optplan.problem import lower_bound
    from optplan.problem.plan import validate

    try:
        plans = read_pte(args.program)
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", file=args.program) from None
    rows: list[dict[str, Any]] = []
    for memory in plans:
        bound = lower_bound(memory.problem)
        rows.append({
            "method": memory.method,
            "mem_id": memory.mem_id,
            "buffer_bytes": memory.buffer_bytes,
            "tensors": len(memory.problem.buffers),
            "lower_bound_bytes": bound,
            "gap": (memory.buffer_bytes - bound) / bound if bound else 0.0,
            "violations": [str(v) for v in validate(memory.problem, memory.plan)],
        })  # fmt: skip
    valid = not any(row["violations"] for row in rows)
    if args.json:
        print(json.dumps({"path": args.program, "valid": valid, "memories": rows}, indent=1))
    else:
        methods = ", ".join(dict.fromkeys(row["method"] for row in rows))
        print(f"{args.program}: ExecuTorch program, methods: {methods or 'none'}")
        for row in rows:
            print(f"  {row['method']} memory {row['mem_id']}: {row['buffer_bytes']} bytes, "
                  f"{row['tensors']} planned tensors, live-bytes bound "
                  f"{row['lower_bound_bytes']} ({row['gap']:.1%} above)")  # fmt: skip
            for violation in row["violations"]:
                print(f"    {violation}")
        print("valid" if valid else "invalid")
    return 0 if valid else 1


def add(commands: Commands) -> None:
    check = commands.add_parser(
        "check", help="extract, validate and replay the plan of an already planned program"
    )
    check.add_argument(
        "program",
        help="a planned TVMScript .py (alloc_storage, alloc_tensor), a .tflite with an "
        "offline plan, or an ExecuTorch .pte",
    )
    check.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(handler=_cmd_check)
