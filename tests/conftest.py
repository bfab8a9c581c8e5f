"""Shared test settings: hypothesis profiles.

`ci` (selected when the CI environment variable is set) draws 200 examples per property;
`dev` draws 50, to keep the edit-test loop quick.

The exact search's kernels are compiled before any test runs, so that no planner's answer
depends on when a background compile ends.
"""

from __future__ import annotations

import os

from hypothesis import settings

from optplan.planners import jit

settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

jit.warm("optplan.planners.search")
