"""MkDocs hooks: the home page is the README (one copy of it, its links made relative to
the site); the command-line reference is written from optplan's own parser, so that
every command and option the parser has is on the page with its help text; and a line
`<!-- results: FILE.csv [col,col,...] -->` becomes the table of that committed file
under benchmarks/results/, so a page never shows a figure the file lacks."""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path
from typing import Any

MARKER = "<!-- options from the parser -->"
README = "<!-- the README -->"
ROOT = Path(__file__).resolve().parents[1]
RESULTS = re.compile(r"^<!-- results: (\S+\.csv)(?: ([\w,]+))? -->$", re.MULTILINE)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if README in markdown:
        return markdown.replace(README, home())
    if MARKER in markdown:
        return markdown.replace(MARKER, reference())
    return RESULTS.sub(lambda found: table(found[1], found[2]), markdown)


def table(name: str, columns: str | None) -> str:
    """benchmarks/results/NAME as a Markdown table of `columns` (comma-separated; all)."""
    with (ROOT / "benchmarks" / "results" / name).open(newline="") as file:
        rows = list(csv.DictReader(file))
    chosen = columns.split(",") if columns else list(rows[0])
    missing = [c for c in chosen if c not in rows[0]]
    if missing:
        raise ValueError(f"{name} has no column {', '.join(missing)}")
    lines = ["| " + " | ".join(chosen) + " |", "|" + " --- |" * len(chosen)]
    lines += ["| " + " | ".join(row[c] or "" for c in chosen) + " |" for row in rows]
    return "\n".join(lines) + f"\n\n*From `benchmarks/results/{name}`.*\n"


def home() -> str:
    """The README as the site's home: links into docs/ made relative, and without the
    section that says how to build this site."""
    text = (ROOT / "README.md").read_text().replace("](docs/", "](")
    return re.sub(r"## Documentation\n.*?(?=\n## )", "", text, flags=re.DOTALL)


def reference() -> str:
    """Every subcommand of `optplan`, its usage and a table of its options."""
    from optplan.cli import make_parser

    parser = make_parser()
    parts = []
    for name, sub in _subcommands(parser).items():
        usage = " ".join(sub.format_usage().split())
        parts.append(f"### `optplan {name}`\n\n{sub.description or ''}\n\n```\n{usage}\n```\n")
        rows = ["| option | what it does |", "|---|---|"]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            flags = ", ".join(f"`{flag}`" for flag in action.option_strings) or f"`{action.dest}`"
            text = (action.help or "").replace("|", "\\|").replace("\n", " ")
            if "%(" in text:
                text = text % {"default": action.default, "prog": sub.prog}
            rows.append(f"| {flags} | {text} |")
        parts.append("\n".join(rows) + "\n")
    return "\n".join(parts)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
