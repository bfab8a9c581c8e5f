"""Shared test settings: hypothesis profiles.

`ci` (selected when the CI environment variable is set) draws 200 examples per property;
`dev` draws 50, to keep the edit-test loop quick.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=200, deadline=None)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
