"""numba where it is installed, and whether a module's kernels are compiled yet.

numba compiles a kernel on its first call and caches the machine code on disk; the exact
search's kernels take it 10-50 s in a new environment. A planner with a time limit cannot
spend that inside the limit, so:

1. `ready(module)` says whether this environment has compiled the module's kernels: a
   stamp written after a compile, keyed (as numba's own cache is) on the source files'
   sizes and modification times (every file of a package), and on numba's version;
2. `compile_in_background(module)` starts one detached process that compiles them
   (`module.warm_kernels()`) and writes the stamp; until then callers go without;
3. `warm(module)` compiles in this process, for tests and benchmarks that must not
   depend on when a background compile ends.

Without numba the kernels are plain Python, always ready.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    import numba

    njit: Callable[..., Any] = numba.njit
    NUMBA_INSTALLED = True
except ImportError:  # pragma: no cover - the same code runs as plain Python, ~100x slower
    NUMBA_INSTALLED = False

    def njit(*args: object, **kwargs: object) -> Any:
        if args and callable(args[0]):
            return args[0]
        return lambda function: function


HAVE_NUMBA = NUMBA_INSTALLED and not os.environ.get("NUMBA_DISABLE_JIT")
STALE_SECONDS = 600  # a compile marked as running longer than this is taken as dead


def ready(module: str) -> bool:
    """Whether `module`'s kernels are compiled (or need no compiling) here."""
    return not HAVE_NUMBA or _stamp(module).exists()


def warm(module: str) -> None:
    """Compile `module`'s kernels now, in this process, and mark them ready."""
    if ready(module):
        return
    importlib.import_module(module).warm_kernels()
    stamp = _stamp(module)
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    except OSError:
        pass  # a read-only install: numba's own cache decides, and we compile each time


def compile_in_background(module: str) -> bool:
    """Start compiling `module`'s kernels in a detached process, unless one is already at
    it; True when this call started one."""
    running = _stamp(module).with_suffix(".compiling")
    try:
        if running.exists() and time.time() - running.stat().st_mtime < STALE_SECONDS:
            return False
        running.parent.mkdir(parents=True, exist_ok=True)
        running.touch()
    except OSError:
        return False
    subprocess.Popen(
        [sys.executable, "-m", "optplan.planners.jit", module],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return True


def _stamp(module: str) -> Path:
    """Where the mark of a finished compile lives: beside numba's cache of the module."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    source = Path(spec.origin)
    # A package's kernels live in all its files: any of them changing means a recompile.
    files = sorted(source.parent.glob("*.py")) if source.name == "__init__.py" else [source]
    facts = ";".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)
    key = zlib.crc32(facts.encode())
    version = getattr(sys.modules.get("numba"), "__version__", "none")
    name = f"{module.rsplit('.', 1)[-1]}.kernels-{key:08x}-{version}.ready"
    folder = source.parent / "__pycache__"
    if not os.access(source.parent, os.W_OK):
        folder = Path.home() / ".cache" / "optplan"
    return folder / name


if __name__ == "__main__":
    target = sys.argv[1]
    try:
        warm(target)
    finally:
        _stamp(target).with_suffix(".compiling").unlink(missing_ok=True)
