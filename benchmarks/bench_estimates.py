"""Benchmark: every claim's work estimate against the work it measurably does.

Run:  python benchmarks/bench_estimates.py [--profile quick|standard] [--draws N] [--seed S]
      [--claims PREFIX[,PREFIX…]]

For each claim (or those whose id starts with one of the prefixes): its defaults at the profile and
``--draws`` random valid settings (:func:`icltheory.testing.settings`, Hypothesis seeded with
``--seed``, so the same settings every run).  Each setting's estimate (``Claim.estimate``, computed
before anything runs) is printed beside the CPU seconds of ``run_check`` in this process, after one
warm-up run of the defaults (so SymPy derivations and imports are not counted), as

    ratio = estimate ÷ (CPU seconds × icltheory.core.WORK_RATE)

The target is 0.5 ≤ ratio ≤ 2 (the estimate is the run's CPU time within a factor of 2 on a
machine like the reference one).  Settings the budget refuses are listed as refused, with the
estimate; runs under 0.5 CPU s are printed but not judged (fixed costs dominate them).  The last
lines give, per claim, the ratios' range, whether it is inside the band, and the
``work_calibration`` that would centre it; the exit status is 1 when a claim is outside.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

from hypothesis import HealthCheck, given, seed, settings

from icltheory.core import WORK_RATE, all_claims, get_claim, over_budget, run_check
from icltheory.testing import settings as valid_settings

#: runs shorter than this (CPU seconds) are reported, not judged: fixed costs dominate them
MIN_JUDGED = 0.5


def _changed(setting, base) -> str:
    out = []
    for f in dataclasses.fields(setting):
        a, b = getattr(setting, f.name), getattr(base, f.name)
        if a != b:
            out.append(f"{f.name}={a}")
    return " ".join(out)[:110]


def _one(claim, setting, base, rows: list) -> None:
    cost = claim.cost(setting)
    work = cost.work if cost is not None else 0.0
    why = over_budget(claim, setting)
    if why:
        print(f"  {'refused':>8}  estimate {work:9.3g}  {_changed(setting, base)}")
        return
    t0 = time.process_time()
    verdict = run_check(claim, setting).verdict
    cpu = time.process_time() - t0
    ratio = work / (cpu * WORK_RATE) if cpu > 0 else float("inf")
    judged = cpu >= MIN_JUDGED
    if judged:
        rows.append(ratio)
    mark = "" if not judged else ("" if 0.5 <= ratio <= 2.0 else "  OUTSIDE")
    print(f"  {verdict:>8}  estimate {work:9.3g}  cpu {cpu:6.2f} s  ratio {ratio:6.2f}{mark}  "
          f"{_changed(setting, base) or '(defaults)'}", flush=True)


def _claim_rows(claim, a) -> list[float]:
    """One claim's judged ratios: its defaults, then ``a.draws`` random settings."""
    print(claim.id, flush=True)
    base = claim.setting({"profile": a.profile})
    run_check(claim, base)  # warm-up: derivations and imports
    rows: list[float] = []
    _one(claim, base, base, rows)

    @seed(a.seed)
    @settings(max_examples=max(a.draws, 1), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(valid_settings(claim, profile=a.profile))
    def draw(s):
        _one(claim, s, base, rows)

    if a.draws > 0:
        draw()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick", choices=("quick", "standard"))
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--claims", default="")
    a = ap.parse_args()
    prefixes = tuple(p for p in a.claims.split(",") if p)
    summary = []
    for claim in all_claims():
        if prefixes and not claim.id.startswith(prefixes):
            continue
        summary.append((claim.id, _claim_rows(claim, a)))
    print(f"\nestimate ÷ (CPU s × {WORK_RATE:.0e}), runs ≥ {MIN_JUDGED} CPU s; target 0.5 … 2"
          "  (suggested work_calibration: the claim's current one × the ratios' geometric centre)")
    outside = []
    for cid, rows in summary:
        if rows:
            ok = all(0.5 <= r <= 2.0 for r in rows)
            centre = math.sqrt(min(rows) * max(rows))
            cal = get_claim(cid).work_calibration
            print(f"  {cid:40s} {min(rows):6.2f} … {max(rows):6.2f}  {'ok' if ok else 'OUTSIDE':7s}"
                  f"  work_calibration {cal:g} → {cal * centre:.2g}")
            if not ok:
                outside.append(cid)
        else:
            print(f"  {cid:40s}   (no run long enough to judge)")
    if outside:
        print(f"\n{len(outside)} claim(s) outside the band: {', '.join(outside)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
