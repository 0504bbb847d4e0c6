"""Shared timing helper for the benchmark scripts: best-of-k wall time of a callable."""

from __future__ import annotations

import time


def best_of(fn, repeat: int = 3):
    """Run ``fn`` ``repeat`` times; return (best seconds, last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def check_claim(claim_id: str, profile: str = "standard", **setting):
    from icltheory.core import get_claim, run_check

    claim = get_claim(claim_id)
    return run_check(claim, claim.setting(setting), profile=profile)
