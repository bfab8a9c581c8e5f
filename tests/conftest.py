"""Shared test settings: hypothesis profiles.

`ci` (selected when the CI environment variable is set) draws 200 examples per property,
the same ones on every run, so that a submission's CI judges the code and not the luck of
the draw; `dev` draws 50 new ones each run (and `optplan fuzz` runs long campaigns), which
is where new failures are found, to be added as `@example`s.

Every kernel is compiled before any test runs (pip's install has done it already, unless
the sources changed since), so that no planner's answer depends on when a background
compile ends.
"""

from __future__ import annotations

import os

from hypothesis import settings

from optplan.planners import jit

settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

for module in jit.KERNELS:
    jit.warm(module)
