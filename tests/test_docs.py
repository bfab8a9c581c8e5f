"""The documentation cannot go stale silently.

- The site builds with `mkdocs build --strict` (no broken link, no missing reference).
- Every command shown in a code block of the README or of a page (a line that starts
  with `optplan`, or `$ optplan`, in a block not marked `text`) runs, on the examples
  shipped in the repository, without bad input or a traceback; every Python example
  (`>>>`) runs as a doctest, and every other Python block runs as a script, in a fresh
  interpreter, where the packages it imports (torch, TVM, ExecuTorch) are installed.
  Blocks marked `text` hold what is not run: synopses with placeholders (`PROGRAM`,
  `model.npz`, `mypkg.alloc:plan`) and printed output.
- Every option of every command is on the command-line page with its help text (the
  page is written from the parser), and every name `optplan` exports is on the API page.
"""

from __future__ import annotations

import ast
import doctest
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```", re.DOTALL | re.MULTILINE)


def _commands(page: Path) -> list[str]:
    found = []
    for language, body in FENCE.findall(page.read_text()):
        if language in ("text", "python"):
            continue
        for line in body.splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("optplan "):
                found.append(line.split(" # ")[0].strip())
    return found


COMMANDS = [(page, command) for page in PAGES for command in _commands(page)]


def _scripts(page: Path) -> list[str]:
    return [
        body
        for language, body in FENCE.findall(page.read_text())
        if language == "python" and ">>>" not in body
    ]


SCRIPTS = [(page, k, body) for page in PAGES for k, body in enumerate(_scripts(page))]


def _missing(script: str) -> list[str]:
    """The top-level packages `script` imports that are not installed."""
    names = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(name for name in names if importlib.util.find_spec(name) is None)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples, both as `examples/...` and by their own names, and a .tflite."""
    folder = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "examples", folder / "examples")
    for example in (ROOT / "examples").glob("*.py"):
        shutil.copy(example, folder / example.name)
    shutil.copy(ROOT / "tests" / "data" / "tflite" / "ds_cnn.tflite", folder / "ds_cnn.tflite")
    return folder


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p.name}: {c}" for p, c in COMMANDS])
def test_every_command_shown_runs(page: Path, command: str, workdir: Path) -> None:
    argv = [sys.executable, "-m", "optplan", *shlex.split(command)[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, capture_output=True, text=True, cwd=workdir, env=env, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), f"{page.name}: {command}: {done.stderr}"


def test_every_python_block_is_a_doctest_or_a_script() -> None:
    assert len(SCRIPTS) >= 6  # the integrations' pages: TVM, ExecuTorch (3), PyTorch, budgets


@pytest.mark.parametrize(
    ("page", "index", "script"), SCRIPTS, ids=[f"{p.name}: block {k + 1}" for p, k, _ in SCRIPTS]
)
def test_every_python_script_shown_runs(page: Path, index: int, script: str, workdir: Path) -> None:
    missing = _missing(script)
    if missing:
        pytest.skip(f"{page.name} block {index + 1} imports {', '.join(missing)}, not installed")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    path = workdir / f"{page.stem}_{index + 1}.py"  # a file: TVMScript's parser reads the source
    path.write_text(script)
    argv = [sys.executable, path.name]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=workdir, env=env, check=False)
    assert done.returncode == 0, f"{page.name} block {index + 1}: {done.stderr[-3000:]}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_python_example_runs(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    test = doctest.DocTestParser().get_doctest(page.read_text(), {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_option_is_on_the_command_line_page_with_its_help() -> None:
    import argparse

    from optplan.cli import make_parser

    hooks = _hooks()
    assert hooks.MARKER in (DOCS / "commands.md").read_text()
    page = hooks.reference()
    commands = hooks._subcommands(make_parser())
    assert commands
    for name, sub in commands.items():
        assert f"### `optplan {name}`" in page
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in page, (name, flag)
            words = " ".join((action.help or "").split())[:40].replace("|", "\\|")
            assert words in " ".join(page.split()), (name, action.dest)


def test_every_public_name_is_on_the_api_page() -> None:
    import optplan

    page = (DOCS / "python.md").read_text()
    for name in optplan.__all__:
        assert f"::: {optplan._EXPORTS[name]}.{name}" in page, name


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (the docs extra)")
    pytest.importorskip("material", reason="mkdocs-material is not installed (the docs extra)")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed (the docs extra)")
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
