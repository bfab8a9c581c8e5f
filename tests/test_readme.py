"""The README's Python example and the package docstring run as written."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import optplan

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the example loads a program by its path in the repository
    text = (ROOT / "README.md").read_text()
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, "README.md", str(ROOT / "README.md"), 0)
    assert test.examples, "the README has no Python example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_package_docstring_runs() -> None:
    assert doctest.testmod(optplan).failed == 0


def test_version_is_the_package_version() -> None:
    from importlib.metadata import version

    assert optplan.__version__ == version("optplan")


def test_load_is_a_function_of_the_package() -> None:
    # Importing the module must not shadow the function.
    import optplan.frontends

    assert callable(optplan.load)
    assert optplan.load is optplan.frontends.load
