"""Does a program fit in N bytes? The levers tried from the cheapest, the cheapest plan
that fits, or a proof that none can (`core.fit`; the levers in `levers` and `forms`, the
proof in `proof`)."""

from optplan.fitting.core import CANNOT, FITS, UNKNOWN, Fitted, cheapest, fit
from optplan.fitting.levers import Tried
from optplan.fitting.proof import Bound, Proof

__all__ = ["CANNOT", "FITS", "UNKNOWN", "Bound", "Fitted", "Proof", "Tried", "cheapest", "fit"]
