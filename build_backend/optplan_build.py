"""optplan's build: setuptools' own, after numba has compiled the kernels ahead of use.

pip builds optplan in an environment of its own holding what pyproject's build-system
requires: setuptools, and numba for this step. Before setuptools makes the wheel (or
the editable wheel of `pip install -e .`):

1. every package of kernels (`optplan.planners.jit.KERNELS`) is compiled by numba into
   its cache beside the sources, with the stamp that says for which numba, Python and
   CPU (`jit.compile_all`: one process a package, at once), so an installed optplan
   plans its first problem as fast as its hundredth;
2. the sources are byte-compiled, as pip does for a regular install and not for an
   editable one.

The wheel carries the cache (pyproject's package-data). Where the environment optplan
then runs in has another numba, or another CPU, the stamp does not match and optplan
compiles on first use instead, as it would have without this step. A failed compile
never fails the build.
"""

from __future__ import annotations

import compileall
import importlib.util
import sys
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # the hooks not named below, unchanged

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, object] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _ahead()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, object] | None = None,
    metadata_directory: str | None = None,
) -> str:
    _ahead()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)


def _ahead() -> None:
    """Steps 1 and 2. `jit` is loaded from its file: importing it as part of the package
    would run `optplan.planners`'s __init__, which needs OR-Tools."""
    try:
        spec = importlib.util.spec_from_file_location(
            "optplan_build_jit", ROOT / "optplan" / "planners" / "jit.py"
        )
        assert spec is not None and spec.loader is not None
        jit = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(jit)
        failed = jit.compile_all()
    except (OSError, ImportError) as error:  # the build goes on without the kernels
        failed = [f"all ({error})"]
    for module in failed:
        print(f"optplan: {module} not compiled ahead: it compiles on first use", file=sys.stderr)
    compileall.compile_dir(ROOT / "optplan", quiet=1)
