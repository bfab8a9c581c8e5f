"""numba where it is installed, and whether optplan's kernels are compiled for it.

numba compiles a kernel on its first call and caches the machine code on disk, beside
the source (`__pycache__`). Compiling optplan's kernels costs numba about 12 CPU seconds
for greedy's (`optplan.planners.greedy`) and 21 for the exact search's
(`optplan.planners.search`): more than a greedy plan of a 60,000-buffer trace takes, and
most of a short time limit. So they are compiled before the first plan:

1. `compile_all()` compiles every module of KERNELS, one process each, at once. pip runs
   it whenever it installs or builds optplan (`build_backend/optplan_build.py`, with
   numba in the build environment), so an installed optplan finds its kernels in
   numba's cache, and a wheel carries them.
2. `ready(module)` says whether they are compiled for this environment: a stamp written
   after a compile, keyed on what numba keys its cache on (the sources' contents, and
   their times and sizes where numba before 0.68 stamps by those; numba's version; the
   Python; the CPU numba compiles for), kept where numba keeps the cache. It holds in a
   fresh copy of the same sources, and no longer after numba is upgraded.
3. Where they are not compiled (numba upgraded after the install, an install numba may
   not write to, sources run without installing them): `warm(module)` compiles them in
   this process (greedy does on first use), and `compile_in_background(module)` starts
   one detached process that does (cpsat plans without the search until it lands).

Without numba the kernels are plain Python, always ready.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import platform
import subprocess
import sys
import time
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
GREEDY = "optplan.planners.greedy"
SEARCH = "optplan.planners.search"
BEAM = "optplan.schedule.beam"  # the order search's beam
REMAT = "optplan.schedule.remat.kernel"  # the recomputation heuristics' profile
KERNELS = (
    GREEDY,
    SEARCH,
    BEAM,
    REMAT,
)  # packages or modules of kernels, each with a `warm_kernels()`
STALE_SECONDS = 600  # a compile marked as running longer than this is taken as dead

_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the optplan package
_warming: set[str] = set()  # compiles under way in this process (warm_kernels re-enters)
_ready: set[str] = set()  # found compiled: the stamp is read from disk until then
_compiled_here: dict[str, float] = {}  # compiled in this process: seconds it took


def ready(module: str) -> bool:
    """Whether `module`'s kernels are compiled (or need no compiling) here. Once they
    are, the answer is remembered: greedy asks once a part, and a trace may have
    thousands of parts."""
    if not HAVE_NUMBA or module in _ready:
        return True
    if _stamp(module).exists():
        _ready.add(module)
        return True
    return False


def warm(module: str) -> None:
    """Compile `module`'s kernels now, in this process, and mark them ready, with the
    seconds it took (`compile_seconds`)."""
    if module in _warming or ready(module):
        return
    _warming.add(module)
    started = time.perf_counter()
    try:
        importlib.import_module(module).warm_kernels()
    finally:
        _warming.discard(module)
    seconds = _compiled_here[module] = time.perf_counter() - started
    _ready.add(module)
    stamp = _stamp(module)
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(f"{seconds:.1f}\n")
    except OSError:
        pass  # nowhere to write: numba's own cache decides, and each process compiles


def compile_seconds(module: str) -> float | None:
    """How long the compile of `module`'s kernels took, when it was done here."""
    if module in _compiled_here:
        return _compiled_here[module]
    if not HAVE_NUMBA:
        return None
    try:
        return float(_stamp(module).read_text())
    except (OSError, ValueError):
        return None


def compile_all() -> list[str]:
    """Compile every module of KERNELS not ready here, each in its own process, all at
    once (numba compiles on one thread), and wait; the modules whose compile failed."""
    running = {module: _start(module, detached=False) for module in KERNELS if not ready(module)}
    return [module for module, process in running.items() if process.wait() != 0]


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
    _start(module, detached=True)
    return True


# What a compiling process runs: the kernels without the __init__ of `optplan.planners`
# (whose registry of planners imports OR-Tools) or of `optplan.schedule` and
# `optplan.schedule.remat` (whose schedulers do), which the environment pip builds optplan in does not have (nor do the
# kernels need it).
_COMPILE = """
import importlib.util, sys
from pathlib import Path
root, module, detached = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
sys.path.insert(0, str(root))
for package in ("optplan.planners", "optplan.schedule", "optplan.schedule.remat"):
    folder = root.joinpath(*package.split("."))
    spec = importlib.util.spec_from_file_location(
        package, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    sys.modules[package] = importlib.util.module_from_spec(spec)
from optplan.planners import jit
try:
    jit.warm(module)
finally:
    if detached:
        jit.compiling_ended(module)
"""


def _start(module: str, *, detached: bool) -> subprocess.Popen[bytes]:
    """A process that compiles `module`'s kernels; detached, it outlives this one and
    says nothing."""
    quiet = subprocess.DEVNULL if detached else None
    flag = "1" if detached else "0"
    command = [sys.executable, "-c", _COMPILE, str(_ROOT), module, flag]
    return subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=quiet, stderr=quiet, start_new_session=detached
    )


def compiling_ended(module: str) -> None:
    """Clear the mark of a background compile of `module`."""
    _stamp(module).with_suffix(".compiling").unlink(missing_ok=True)


def _stamp(module: str) -> Path:
    """The mark of a finished compile: named by numba's cache key, kept in its folder."""
    folder, sources = _sources(module)
    digest = hashlib.sha256(repr(_environment()).encode())
    for path in sources:
        digest.update(path.name.encode() + path.read_bytes())
        if _environment()[0] < (0, 68):  # numba stamps its cache by times and sizes
            digest.update(f"{path.stat().st_mtime}:{path.stat().st_size}".encode())
    name = module.rsplit(".", 1)[-1]
    return _cache_folder(folder) / f"{name}.kernels-{digest.hexdigest()[:16]}.ready"


def _sources(module: str) -> tuple[Path, list[Path]]:
    """The folder numba caches `module`'s kernels beside, and the files they are in: every
    file of a package (a kernel's code is anywhere in it), or the module's own file."""
    path = _ROOT.joinpath(*module.split("."))
    if path.is_dir():
        return path, sorted(path.glob("*.py"))
    return path.parent, [path.with_suffix(".py")]


def _cache_folder(folder: Path) -> Path:
    """Where numba caches the kernels of `folder`: NUMBA_CACHE_DIR when set, else the
    folder's __pycache__ where it may be written, else a folder of the user's."""
    chosen = getattr(numba.config, "CACHE_DIR", "")
    if chosen:
        return Path(chosen) / "optplan"
    pycache = folder / "__pycache__"
    if os.access(pycache if pycache.exists() else folder, os.W_OK):
        return pycache
    return Path.home() / ".cache" / "optplan"


@functools.cache
def _environment() -> tuple[tuple[int, ...], str, str, tuple[object, ...]]:
    """What numba's cache is keyed on besides the source: its version, the Python, and
    the target it compiles for (triple, CPU name and features)."""
    version = tuple(int(part) for part in numba.__version__.split(".")[:2] if part.isdigit())
    try:
        from numba.core.registry import cpu_target

        target = tuple(cpu_target.target_context.codegen().magic_tuple())
    except (ImportError, AttributeError):  # another numba's insides: the machine at least
        target = (platform.machine(),)
    return version, numba.__version__, sys.implementation.cache_tag, target
