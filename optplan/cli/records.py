"""What commands print of a plan: the JSON record, the summary line, the table."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from optplan.frontends import Loaded
from optplan.problem import Problem
from optplan.problem.outcome import Plan, Status, bytes_used, residences_of
from optplan.problem.tiers import all_in


def counted(count: int, noun: str, plural: str = "") -> str:
    """`1 buffer`, `2 buffers`: a count and its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


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
        **({} if plan.status.has_plan else {"reason": reason_of(plan)}),
        **({"interrupted": True} if plan.detail.get("interrupted") else {}),
        **work_record(plan, args),
        **({"bounds": loaded.bounds, "sized_by": loaded.sized_by} if loaded.bounds else {}),
        **(memory_record(loaded.problem, plan) if judged_by_traffic(loaded) else {}),
    }


def reason_of(plan: Plan) -> str:
    """Why `plan` holds no offsets: the planner's own words, else what its status means."""
    reason = plan.detail.get("reason")
    if reason:
        return str(reason)
    if plan.detail.get("interrupted"):
        return "interrupted (Ctrl-C) before a plan was found"
    if plan.detail.get("cut"):
        return "the time limit cut the search before it found a plan"
    if plan.status is Status.INFEASIBLE:
        return "proven: no plan fits the capacities"
    return "no plan found within the work and time limit given"


def work_record(plan: Plan, args: argparse.Namespace) -> dict[str, object]:
    """The budget a plan was made with and what makes it reproducible: the work given
    and spent, whether the time limit cut it (then, and only then, it may differ from run
    to run), and the versions of optplan and OR-Tools (CP-SAT's answers hold within one
    version)."""
    record: dict[str, object] = {"versions": versions()}
    if "work" in plan.detail:
        record["work"] = {"given": getattr(args, "work", None), "spent": plan.detail["work"]}
    record["cut_by_time_limit"] = bool(plan.detail.get("cut"))
    return record


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in ("optplan", "ortools"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "unknown"
    return found


def judged_by_traffic(loaded: Loaded) -> bool:
    """Whether the plans of `loaded` are judged, and so reported, by their traffic
    (`Problem.objective`); by their arena otherwise, with the same record keys as ever."""
    return loaded.problem.objective == "traffic"


def memory_record(problem: Problem, plan: Plan) -> dict[str, object]:
    """What a plan judged by traffic adds: each memory and the bytes it uses, the
    traffic, its proven bound and that of everything in the dearest memory, where each
    buffer is written, its residences and its copies."""
    used = bytes_used(problem, plan)
    residences = residences_of(problem, plan)
    home = {}
    for r in residences:
        if any(iv.start <= problem.buffer(r.buffer).start < iv.end for iv in r.live):
            home[r.buffer] = r.memory
    return {
        "memories": [
            {
                "name": m.name,
                "capacity_bytes": m.capacity,
                "alignment": m.alignment,
                "cost": m.cost,
                "used_bytes": used[m.name],
            }
            for m in problem.memories
        ],
        "traffic": plan.traffic,
        "traffic_bound": plan.traffic_bound,
        "traffic_all_in_slow": all_in(problem, dearest(problem)),
        "memory_of": home,
        "residences": [
            {
                "buffer": r.buffer,
                "memory": r.memory,
                "offset": r.offset,
                "live": [[iv.start, iv.end] for iv in r.live],
            }
            for r in residences
        ],
        "copies": [
            {"buffer": c.buffer, "point": c.point, "from": c.source, "to": c.target}
            for c in plan.copies
        ],
    }


def dearest(problem: Problem) -> str:
    """The memory of the highest cost (the last listed on a tie): the slow memory."""
    return max(reversed(problem.memories), key=lambda m: m.cost).name


def summary(loaded: Loaded, plan: Plan, args: argparse.Namespace) -> str:
    if not plan.status.has_plan:
        return (
            f"{loaded.path}: {plan.planner} found no plan ({plan.status.value}): {reason_of(plan)}"
        )
    if judged_by_traffic(loaded):
        record = memory_record(loaded.problem, plan)
        where = ", ".join(
            f"{m['name']} {m['used_bytes']}"
            + ("" if m["capacity_bytes"] is None else f" of {m['capacity_bytes']}")
            for m in record["memories"]  # type: ignore[attr-defined]
        )
        return (
            f"{loaded.path}: {plan.planner} {plan.status.value}: traffic {plan.traffic}, proven bound "
            f"{plan.traffic_bound} (gap {plan.gap:.2%}); all in {dearest(loaded.problem)} "
            f"{record['traffic_all_in_slow']}; bytes used: {where}; {counted(len(plan.copies), 'copy', 'copies')}; "
            f"{counted(len(loaded.problem.buffers), 'buffer')}, {outputs_note(loaded, args)}; {plan.seconds:.2f} s"
        )
    return bounds_note(loaded) + (
        f"{loaded.path}: {plan.planner} {plan.status.value}: arena {plan.arena} bytes, "
        f"lower bound {plan.lower_bound}, proven bound {max(plan.bound, plan.lower_bound)} "
        f"(gap {plan.gap:.2%}); naive {loaded.problem.naive_bytes}; "
        f"{counted(len(loaded.problem.buffers), 'buffer')}, {outputs_note(loaded, args)}; {plan.seconds:.2f} s"
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
            f"{name} planned at its bound {value}: sizes {counted(len(buffers), 'buffer')} ({shown})\n"
        )
    return "".join(lines)


def outputs_note(loaded: Loaded, args: argparse.Namespace) -> str:
    if loaded.program is None:
        return "a bare allocation problem"
    return "function outputs planned" if args.plan_outputs else "function outputs not planned"


def table(loaded: Loaded, records: list[dict[str, object]], args: argparse.Namespace) -> str:
    """One row per planner; every gap is measured against the same bound, the best any of
    them proved (never below the live-bytes lower bound). With several memories the
    rows are of traffic (`memory_table`)."""
    if judged_by_traffic(loaded):
        return memory_table(loaded, records, args)
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
    lower = records[0]["lower_bound_bytes"]
    title = (
        f"{loaded.path}: {counted(len(loaded.problem.buffers), 'buffer')}, {alignment_note(loaded.problem)}, "
        f"{outputs_note(loaded, args)}; lower bound {lower}, gaps against the best proven "
        f"bound {best}"
    )
    return _laid_out(title, rows)


def alignment_note(problem: Problem) -> str:
    """The alignments the buffers have (a CSV's own column, else `--alignment`)."""
    buffers = problem.buffers
    column = getattr(buffers, "alignment", None)  # a huge CSV's columns
    found = sorted(set(column.tolist() if column is not None else (b.alignment for b in buffers)))
    if len(found) <= 1:
        return f"alignment {found[0] if found else 1}"
    shown = found if len(found) <= 6 else [*found[:5], "..."]
    return f"alignments {', '.join(map(str, shown))}"


def headline(plan: Plan) -> str:
    if plan.traffic is not None:
        return (
            f"{plan.planner} {plan.status.value}, traffic {plan.traffic}, proven bound "
            f"{plan.traffic_bound}, {counted(len(plan.copies), 'copy', 'copies')}"
        )
    return f"{plan.planner} {plan.status.value}, {plan.arena} bytes, lower bound {plan.lower_bound}"


def memory_table(loaded: Loaded, records: list[dict[str, object]], args: argparse.Namespace) -> str:
    """One row per planner of a problem of several memories: traffic, the bound it
    proved, the gap against the best bound any proved, traffic as a share of everything
    in the dearest memory, copies and the bytes used in each memory."""
    problem = loaded.problem
    planned = [r for r in records if r.get("traffic") is not None]
    best = max([int(r.get("traffic_bound") or 0) for r in records] or [0])  # type: ignore[call-overload]
    slow = all_in(problem, dearest(problem))
    names = [m.name for m in problem.memories]
    header = (
        "planner",
        "status",
        "traffic",
        "proven bound",
        "gap",
        f"vs all in {dearest(problem)}",
        "copies",
        *(f"{n} bytes" for n in names),
        "seconds",
    )
    rows = [header]
    for r in records:
        has_plan = r in planned
        traffic = int(r["traffic"]) if has_plan else 0  # type: ignore[call-overload]
        used = {m["name"]: m["used_bytes"] for m in r.get("memories", [])} if has_plan else {}  # type: ignore[attr-defined]
        rows.append(
            (
                str(r["planner"]) + (f" (reorder {r['reorder']})" if r.get("reorder") else ""),
                str(r["status"]),
                str(traffic) if has_plan else "-",
                str(r.get("traffic_bound", "-")),
                f"{(traffic - best) / best:.2%}" if has_plan and best else "-",
                f"{traffic / slow:.1%}" if has_plan and slow else "-",
                str(len(r.get("copies", []))) if has_plan else "-",  # type: ignore[arg-type]
                *(str(used.get(n, "-")) for n in names),
                f"{float(r['seconds']):.2f}",  # type: ignore[arg-type]
            )
        )
    memories = ", ".join(
        f"{m.name} ({'unbounded' if m.capacity is None else f'{m.capacity} bytes'}, cost {m.cost})"
        for m in problem.memories
    )
    title = (
        f"{loaded.path}: {counted(len(problem.buffers), 'buffer')}, {alignment_note(problem)}, "
        f"{outputs_note(loaded, args)}; memories {memories}; traffic all in "
        f"{dearest(problem)} {slow}, gaps against the best proven bound {best}"
    )
    return _laid_out(title, rows)


def reasons(records: list[dict[str, object]]) -> str:
    """One line under a table for each row without a plan: why it has none."""
    return "".join(
        f"\n{r['planner']}"
        + (f" (reorder {r['reorder']})" if r.get("reorder") else "")
        + f": {r['status']}: {r['reason']}"
        for r in records
        if r.get("reason")
    )


def _laid_out(title: str, rows: Sequence[Sequence[str]]) -> str:
    """The title over the rows in columns: the first two left-aligned, numbers right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [title]
    for row in rows:
        cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        lines.append("  ".join(cells))
    return "\n".join(lines)
