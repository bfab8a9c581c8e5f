"""Pictures of plans: the arena as rectangles over time.

Each buffer is drawn as one rectangle per live interval: program points along x, bytes
along y, at its planned offset. A dashed line marks the lower bound and a solid one the
arena, so the gap between them is visible at a glance (the dashes stay visible when the
two are equal). Colours follow the tensor, spread so that neighbours differ; the largest
tensors carry their names.

- `draw_arena` writes a picture with matplotlib (the `plot` extra); the file kind
  follows the suffix (.png, .svg, .pdf).
- `write_html` writes one self-contained page (an SVG, no scripts, nothing to install):
  hovering a rectangle shows the tensor, its size, lifetime and offset. It suits large
  plans, where names cannot fit.

A plan of several memories is drawn as one panel per memory, each with its residences,
its capacity (solid red) and the bytes it uses; a copy is a triangle at its point on the
tensor's rectangle, pointing up where the tensor arrives and down where it leaves.
"""

from __future__ import annotations

import colorsys
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optplan.errors import InputError
from optplan.problem import Problem
from optplan.problem.plan import Plan

GOLDEN = 0.6180339887  # hue steps of the golden ratio keep neighbouring colours apart


def colour(number: int) -> tuple[float, float, float]:
    """The fill of the `number`-th tensor, as RGB in [0, 1]."""
    hue = (number * GOLDEN) % 1.0
    return colorsys.hls_to_rgb(hue, 0.62 + 0.12 * (number % 3) / 2, 0.55)


def human_bytes(count: float) -> str:
    """Bytes in B, KiB, MiB or GiB, three significant figures."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.3g} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1024
    raise AssertionError("unreachable")


def _rectangles(problem: Problem, plan: Plan) -> list[tuple[int, str, int, int, int, int]]:
    """(tensor number, name, start, end, offset, size) per drawn live interval."""
    drawn = []
    for number, buffer in enumerate(problem.buffers):
        offset = plan.offsets.get(buffer.id)
        if offset is None or buffer.size == 0:
            continue
        for iv in buffer.live:
            drawn.append((number, buffer.id, iv.start, iv.end, offset, buffer.size))
    return drawn


@dataclass(frozen=True, slots=True)
class Panel:
    """One memory of a plan: its rectangles (tensor number, name, start, end, offset,
    size), its capacity, the bytes it uses, and its copies (point, offset, size, name,
    the other memory, arriving)."""

    memory: str
    capacity: int | None
    used: int
    drawn: list[tuple[int, str, int, int, int, int]]
    copies: list[tuple[int, int, int, str, str, bool]]


def panels(problem: Problem, plan: Plan) -> list[Panel]:
    """One panel per memory of a plan of several memories."""
    number = {b.id: k for k, b in enumerate(problem.buffers)}
    sizes = {b.id: b.size for b in problem.buffers}
    found = []
    for memory in problem.memories:
        here = [r for r in plan.residences if r.memory == memory.name and sizes[r.buffer]]
        drawn = [
            (number[r.buffer], r.buffer, iv.start, iv.end, r.offset, sizes[r.buffer])
            for r in here
            for iv in r.live
        ]
        offsets = {r.buffer: r.offset for r in here}
        copies = [
            (c.point, offsets[c.buffer], sizes[c.buffer], c.buffer, other, arriving)
            for c in plan.copies
            if c.buffer in offsets
            for other, arriving in ((c.source, True), (c.target, False))
            if (c.target if arriving else c.source) == memory.name
        ]
        used = max((o + z for *_, o, z in drawn), default=0)
        found.append(Panel(memory.name, memory.capacity, used, drawn, copies))
    return found


def draw_arena(
    problem: Problem, plan: Plan, path: str, *, title: str = "", labels: int = 12
) -> None:
    """Write a picture of `plan` to `path`, naming the `labels` largest rectangles."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise InputError('drawing needs matplotlib: pip install -e ".[plot]"', file=path) from None
    if plan.residences:
        shown = panels(problem, plan)
        figure, grid = plt.subplots(len(shown), 1, figsize=(11, 3.2 * len(shown)), squeeze=False)
        for axes, panel in zip(grid[:, 0], shown):
            _draw_panel(axes, panel, labels)
            axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: human_bytes(value)))
            axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9, fontsize=8)
        grid[0, 0].set_title(title or f"{plan.planner}: traffic {plan.traffic}")
    else:
        figure, axes = plt.subplots(figsize=(11, 5.5))
        _draw_plan(axes, problem, plan, labels)
        axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: human_bytes(value)))
        axes.set_title(
            title or f"{plan.planner}: {plan.arena} bytes, lower bound {plan.lower_bound}"
        )
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9, fontsize=8)
    figure.tight_layout()
    target = Path(path)
    partial = target.with_name(target.name + ".partial" + target.suffix)
    try:
        figure.savefig(partial, dpi=150)
        partial.replace(target)
    except (OSError, ValueError) as error:
        partial.unlink(missing_ok=True)
        raise InputError(f"cannot write the picture: {error}", file=path) from None
    finally:
        plt.close(figure)


def _draw_plan(axes: Any, problem: Problem, plan: Plan, labels: int) -> None:
    """The rectangles, the `labels` largest named, and the arena and lower-bound lines."""
    from matplotlib.patches import Rectangle

    drawn = _rectangles(problem, plan)
    horizon = max((end for _, _, _, end, _, _ in drawn), default=1)
    for number, _, start, end, offset, size in drawn:
        axes.add_patch(
            Rectangle(
                (start, offset),
                end - start,
                size,
                facecolor=colour(number),
                edgecolor="black",
                linewidth=0.3,
            )
        )
    largest = sorted(drawn, key=lambda r: -(r[3] - r[2]) * r[5])[:labels]
    for _, name, start, end, offset, size in largest:
        axes.text(
            (start + end) / 2,
            offset + size / 2,
            name,
            ha="center",
            va="center",
            fontsize=7,
            clip_on=True,
        )
    arena_label = f"arena ({plan.planner}): {human_bytes(plan.arena)}"
    axes.axhline(plan.arena, color="black", linewidth=1.2, label=arena_label)
    bound_label = f"lower bound: {human_bytes(plan.lower_bound)}"
    axes.axhline(
        plan.lower_bound, color="crimson", linestyle=(0, (4, 3)), linewidth=2, label=bound_label
    )
    axes.set_xlim(0, horizon)
    axes.set_ylim(0, max(plan.arena, plan.lower_bound, 1) * 1.05)
    axes.set_xlabel("program point")
    axes.set_ylabel("offset")


def _draw_panel(axes: Any, panel: Panel, labels: int) -> None:
    """One memory: its rectangles, the largest named, its copies, capacity and use."""
    from matplotlib.patches import Rectangle

    horizon = max((end for _, _, _, end, _, _ in panel.drawn), default=1)
    for number, _, start, end, offset, size in panel.drawn:
        axes.add_patch(
            Rectangle(
                (start, offset),
                end - start,
                size,
                facecolor=colour(number),
                edgecolor="black",
                linewidth=0.3,
            )
        )
    for _, name, start, end, offset, size in sorted(
        panel.drawn, key=lambda r: -(r[3] - r[2]) * r[5]
    )[:labels]:
        axes.text(
            (start + end) / 2,
            offset + size / 2,
            name,
            ha="center",
            va="center",
            fontsize=7,
            clip_on=True,
        )
    for arriving, marker, label in ((True, "^", "copy in"), (False, "v", "copy out")):
        points = [(p + 0.5, o + z / 2) for p, o, z, _, _, a in panel.copies if a == arriving]
        if points:
            xs, ys = zip(*points)
            axes.scatter(xs, ys, marker=marker, color="black", s=40, zorder=3, label=label)
    axes.axhline(panel.used, color="black", linewidth=1.2, label=f"used: {human_bytes(panel.used)}")
    top = max(panel.used, 1)
    if panel.capacity is not None:
        axes.axhline(
            panel.capacity,
            color="crimson",
            linewidth=2,
            label=f"capacity: {human_bytes(panel.capacity)}",
        )
        top = max(top, panel.capacity)
    axes.set_xlim(0, horizon)
    axes.set_ylim(0, top * 1.05)
    axes.set_xlabel("program point")
    axes.set_ylabel(f"offset in {panel.memory}")


@dataclass(frozen=True, slots=True)
class _Axes:
    """An SVG's scales: program points left to right, offsets bottom to top."""

    width: float
    height: float
    margin: float
    horizon: float  # the last program point
    top: float  # the highest offset shown

    def x(self, point: float) -> float:
        return self.margin + point / self.horizon * (self.width - 2 * self.margin)

    def y(self, offset: float) -> float:
        return self.height - self.margin - offset / self.top * (self.height - 2 * self.margin)

    def rect(self, number: int, start: int, end: int, offset: int, size: int, tip: str) -> str:
        """One tensor's rectangle, coloured by its number, with `tip` shown on hover."""
        r, g, b = (int(255 * c) for c in colour(number))
        x, y = self.x, self.y
        return (
            f'<rect x="{x(start):.2f}" y="{y(offset + size):.2f}" width="{x(end) - x(start):.2f}" '
            f'height="{y(offset) - y(offset + size):.2f}" fill="rgb({r},{g},{b})" stroke="black" '
            f'stroke-width="0.3"><title>{html.escape(tip)}</title></rect>'
        )


def arena_html(problem: Problem, plan: Plan, *, title: str = "") -> str:
    """One self-contained page: the arena as an SVG whose rectangles name themselves on
    hover (SVG <title>), with the lower bound dashed and the arena solid; for a plan of
    several memories, one SVG per memory, its capacity solid red, its copies triangles."""
    if plan.residences:
        heading = html.escape(title or f"{plan.planner}: traffic {plan.traffic}")
        svgs = "\n".join(
            f"<h4>{html.escape(p.memory)}</h4>\n{_panel_svg(p)}" for p in panels(problem, plan)
        )
        return (
            '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
            f'<title>{heading}</title></head>\n<body style="font-family: sans-serif">\n'
            f"<h3>{heading}</h3>\n<p>One panel per memory: program points left to right, offsets "
            "bottom to top; hover a rectangle for its tensor, a triangle for its copy. Solid "
            "red: the memory's capacity; black: the bytes it uses.</p>\n"
            + svgs
            + "\n</body></html>\n"
        )
    width, height, margin = 1100.0, 560.0, 60.0
    drawn = _rectangles(problem, plan)
    horizon = max((end for _, _, _, end, _, _ in drawn), default=1)
    axes = _Axes(width, height, margin, horizon, max(plan.arena, plan.lower_bound, 1) * 1.05)
    y = axes.y
    parts = [
        axes.rect(number, start, end, offset, size,
                  f"{name}: {human_bytes(size)} ({size} bytes), live [{start}, {end}), offset {offset}")
        for number, name, start, end, offset, size in drawn
    ]  # fmt: skip
    for value, style, label in (
        (plan.arena, 'stroke="black" stroke-width="1.2"', f"arena ({plan.planner})"),
        (
            plan.lower_bound,
            'stroke="crimson" stroke-width="2" stroke-dasharray="6 4"',
            "lower bound",
        ),
    ):
        parts.append(
            f'<line x1="{margin}" x2="{width - margin}" y1="{y(value):.2f}" y2="{y(value):.2f}" {style}>'
            f"<title>{html.escape(f'{label}: {human_bytes(value)} ({value} bytes)')}</title></line>"
        )
    heading = html.escape(title or f"{plan.planner}: {plan.arena} bytes")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<title>{heading}</title></head>\n<body style="font-family: sans-serif">\n'
        f"<h3>{heading}</h3>\n<p>Program points run left to right, offsets bottom to top; "
        "hover a rectangle for its tensor. Dashed: the lower bound; solid: the arena.</p>\n"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}">\n'
        + "\n".join(parts)
        + "\n</svg>\n</body></html>\n"
    )


def _panel_svg(panel: Panel) -> str:
    """One memory as an SVG: rectangles, copies, capacity and use, each with a tip."""
    width, height, margin = 1100.0, 300.0, 40.0
    horizon = max((end for _, _, _, end, _, _ in panel.drawn), default=1)
    axes = _Axes(width, height, margin, horizon, max(panel.used, panel.capacity or 0, 1) * 1.05)
    x, y = axes.x, axes.y
    parts = [
        axes.rect(number, start, end, offset, size,
                  f"{name}: {human_bytes(size)} ({size} bytes), held [{start}, {end}) in {panel.memory} at {offset}")
        for number, name, start, end, offset, size in panel.drawn
    ]  # fmt: skip
    for point, offset, size, name, other, arriving in panel.copies:
        cx, cy = x(point + 0.5), y(offset + size / 2)
        dy = -6 if arriving else 6
        way = f"from {other}" if arriving else f"to {other}"
        parts.append(
            f'<polygon points="{cx - 5:.2f},{cy - dy:.2f} {cx + 5:.2f},{cy - dy:.2f} {cx:.2f},{cy + dy:.2f}" '
            f'fill="black"><title>{html.escape(f"{name} copied {way} at point {point}")}</title></polygon>'
        )
    lines = [(panel.used, 'stroke="black" stroke-width="1.2"', "used")]
    if panel.capacity is not None:
        lines.append((panel.capacity, 'stroke="crimson" stroke-width="2"', "capacity"))
    for value, style, label in lines:
        parts.append(
            f'<line x1="{margin}" x2="{width - margin}" y1="{y(value):.2f}" y2="{y(value):.2f}" {style}>'
            f"<title>{html.escape(f'{label}: {human_bytes(value)} ({value} bytes)')}</title></line>"
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}">\n'
        + "\n".join(parts)
        + "\n</svg>"
    )
