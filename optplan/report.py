"""Pictures of plans: the arena as rectangles over time.

Each buffer is drawn as one rectangle per live interval: program points along x, bytes
along y, at its planned offset. A dashed line marks the lower bound and a solid one the
arena, so the gap between them is visible at a glance. Needs matplotlib (the `plot`
extra); the file kind follows the output's suffix (.png, .svg, .pdf).
"""

from __future__ import annotations

from pathlib import Path

from optplan.errors import InputError
from optplan.plan import Plan
from optplan.problem import Problem


def draw_arena(problem: Problem, plan: Plan, path: str, *, title: str = "") -> None:
    """Write a picture of `plan` to `path`."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:
        raise InputError(
            "drawing needs matplotlib: pip install -e \".[plot]\"", file=path
        ) from None
    figure, axes = plt.subplots(figsize=(10, 5))
    colours = plt.get_cmap("tab20")
    horizon = 1
    for number, buffer in enumerate(problem.buffers):
        offset = plan.offsets.get(buffer.id)
        if offset is None or buffer.size == 0:
            continue
        for iv in buffer.live:
            horizon = max(horizon, iv.end)
            axes.add_patch(
                Rectangle(
                    (iv.start, offset),
                    iv.end - iv.start,
                    buffer.size,
                    facecolor=colours(number % 20),
                    edgecolor="black",
                    linewidth=0.3,
                )
            )
    axes.axhline(plan.lower_bound, color="grey", linestyle="--", linewidth=1, label="lower bound")
    axes.axhline(plan.arena, color="black", linewidth=1, label=f"arena ({plan.planner})")
    axes.set_xlim(0, horizon)
    axes.set_ylim(0, max(plan.arena, plan.lower_bound, 1) * 1.05)
    axes.set_xlabel("program point")
    axes.set_ylabel("byte offset")
    axes.set_title(title or f"{plan.planner}: {plan.arena} bytes, lower bound {plan.lower_bound}")
    axes.legend(loc="best", framealpha=0.9)
    figure.tight_layout()
    target = Path(path)
    partial = target.with_name(target.name + ".partial" + target.suffix)
    try:
        figure.savefig(partial)
    except (OSError, ValueError) as error:
        partial.unlink(missing_ok=True)
        raise InputError(f"cannot write the picture: {error}", file=path) from None
    finally:
        plt.close(figure)
    partial.replace(target)
