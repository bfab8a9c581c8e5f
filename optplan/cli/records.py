"""What commands print of a plan: the JSON record, the summary line, the table."""

from __future__ import annotations

import argparse

from optplan.frontends import Loaded
from optplan.problem.plan import Plan


def plan_record(
    loaded: Loaded, plan: Plan, args: argparse.Namespace, *, reorder: str | None = "args"
) -> dict[str, object]:
    return {
        "program": loaded.path,
        "planner": plan.planner,
        "reorder": getattr(args, "reorder", None) if reorder == "args" else reorder,
        "status": plan.status.value,
        "arena_bytes": plan.arena,
        "lower_bound_bytes": plan.lower_bound,
        "bound_bytes": max(plan.bound, plan.lower_bound),
        "gap": round(plan.gap, 6),
        "naive_bytes": loaded.problem.naive_bytes,
        "buffers": len(loaded.problem.buffers),
        "alignment": args.alignment,
        "outputs_planned": bool(args.plan_outputs) and loaded.program is not None,
        "inplace": bool(args.inplace),
        "seconds": round(plan.seconds, 4),
        "offsets": dict(plan.offsets),
        **({"interrupted": True} if plan.detail.get("interrupted") else {}),
        **({"bounds": loaded.bounds, "sized_by": loaded.sized_by} if loaded.bounds else {}),
    }


def summary(loaded: Loaded, plan: Plan, args: argparse.Namespace) -> str:
    if not plan.status.has_plan:
        return f"{loaded.path}: {plan.planner} found no plan ({plan.status.value})"
    return bounds_note(loaded) + (
        f"{loaded.path}: {plan.planner} {plan.status.value}: arena {plan.arena} bytes, "
        f"lower bound {plan.lower_bound}, proven bound {max(plan.bound, plan.lower_bound)} "
        f"(gap {plan.gap:.2%}); naive {loaded.problem.naive_bytes}; "
        f"{len(loaded.problem.buffers)} buffers, {outputs_note(loaded, args)}; {plan.seconds:.2f} s"
    )


def bounds_note(loaded: Loaded) -> str:
    """One line per symbolic dimension: its bound and the buffers it sizes."""
    lines = []
    for name, value in sorted(loaded.bounds.items()):
        if name not in loaded.sized_by:
            lines.append(f"{name} planned at its bound {value}\n")
            continue
        buffers = loaded.sized_by[name]
        shown = ", ".join(buffers[:8]) + (", ..." if len(buffers) > 8 else "")
        lines.append(
            f"{name} planned at its bound {value}: sizes {len(buffers)} buffers ({shown})\n"
        )
    return "".join(lines)


def outputs_note(loaded: Loaded, args: argparse.Namespace) -> str:
    if loaded.program is None:
        return "a bare allocation problem"
    return "function outputs planned" if args.plan_outputs else "function outputs not planned"


def table(loaded: Loaded, records: list[dict[str, object]], args: argparse.Namespace) -> str:
    """One row per planner; every gap is measured against the same bound, the best any of
    them proved (never below the live-bytes lower bound)."""
    best = max(int(r["bound_bytes"]) for r in records)  # type: ignore[call-overload]
    header = ("planner", "status", "arena bytes", "proven bound", "gap", "vs naive", "seconds")
    rows = [header]
    for r in records:
        naive = int(r["naive_bytes"]) or 1  # type: ignore[call-overload]
        arena = int(r["arena_bytes"])  # type: ignore[call-overload]
        has_plan = r["status"] in ("optimal", "feasible")
        rows.append(
            (
                str(r["planner"]) + (f" (reorder {r['reorder']})" if r.get("reorder") else ""),
                str(r["status"]),
                str(arena) if has_plan else "-",
                str(r["bound_bytes"]),
                f"{(arena - best) / best:.2%}" if has_plan and best else "-",
                f"{arena / naive:.1%}" if has_plan else "-",
                f"{float(r['seconds']):.2f}",  # type: ignore[arg-type]
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lower = records[0]["lower_bound_bytes"]
    title = (
        f"{loaded.path}: {len(loaded.problem.buffers)} buffers, alignment {args.alignment}, "
        f"{outputs_note(loaded, args)}; lower bound {lower}, gaps against the best proven "
        f"bound {best}"
    )
    lines = [title]
    for row in rows:
        cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def headline(plan: Plan) -> str:
    return f"{plan.planner} {plan.status.value}, {plan.arena} bytes, lower bound {plan.lower_bound}"
