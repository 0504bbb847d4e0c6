"""How far a verdict is from failing, in units of its own tolerances.

A check's margin is 1 − (its error in units of its tolerance): 1 for a perfect agreement, 0 at
the tolerance, negative beyond it (a failed check).  A ``close`` check's error is
max |m − p| / (atol + rtol·|p|); a z-test's the statistic over the critical value on its side;
a bound's the certified witness over the claimed bound.  A boolean condition has no margin
(``None``) unless it failed (−∞).  A verdict's margin is the smallest of its checks' margins:
the check closest to failing decides how close the verdict is.
"""

from __future__ import annotations

import math
from typing import Any

from ..core import Verdict
from ..sweep._rows import check_margin

__all__ = ["check_margin_of", "verdict_margin"]


def check_margin_of(check: Any) -> float | None:
    """The margin of one check (a :class:`~icltheory.core.Check` or its ``as_dict()``)."""
    own = getattr(check, "margin", None)
    if own is not None:
        return float(own)
    record = check.as_dict() if hasattr(check, "as_dict") else dict(check)
    if "margin" in record and record["margin"] is not None:
        return float(record["margin"])
    units = check_margin(record)
    if units is None:
        return None
    return -math.inf if math.isinf(units) else 1.0 - float(units)


def verdict_margin(v: Verdict) -> float | None:
    """The smallest check margin of ``v`` (``None`` when no check has one)."""
    own = getattr(v, "margin", None)
    if own is not None and not callable(own):
        return float(own)
    ms = [m for m in (check_margin_of(c) for c in v.checks) if m is not None]
    return min(ms) if ms else None
