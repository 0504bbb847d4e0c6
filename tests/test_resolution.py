"""The resolution of a prediction: the smallest planted error that fails, verified (fails at
δ, holds at δ/10); the built-in claims' measured resolutions cover every judged constant."""

from __future__ import annotations

import math

import pytest

from icltheory.core import all_claims, judge_claim, measure_claim
from icltheory.core._resolution import (RESOLUTIONS_FILE, load_resolutions, measure_resolution,
                                        resolution_text)


def test_resolution_is_the_smallest_failing_error(example):
    s = example.setting({"profile": "quick"})
    m = measure_claim(example, s)
    res = measure_resolution(example, s, measurement=m, keys=["eta_star"], steps=14)
    r = res["eta_star"]
    assert r.verified and r.delta is not None and 1e-4 < r.delta < 0.5, r
    consts = example.constants(s)
    p = consts["eta_star"]
    for sign in (+1, -1):
        at = judge_claim(example, s, m, predict={"eta_star": p * (1 + sign * r.delta * 1.01)},
                         constants=consts)
        assert at.verdict == "fails"
    tenth = judge_claim(example, s, m, predict={"eta_star": p * (1 + r.delta / 10)},
                        constants=consts)
    assert tenth.verdict == "holds"
    assert "%" in resolution_text(r.as_dict())


def test_measured_resolutions_cover_every_judged_constant():
    """proofs/resolutions.json (scripts/resolution.py) has an entry for every judged predicted
    constant of every built-in claim at quick and standard, so describe cannot show a stale or
    missing resolution."""
    table = load_resolutions()
    assert table, f"{RESOLUTIONS_FILE} is missing: run python scripts/resolution.py"
    missing = []
    for c in all_claims():
        if c.is_legacy() or c.id.startswith("example."):
            continue
        for profile in ("quick", "standard"):
            rec = table.get(c.id, {}).get(profile, {})
            for key, p in c.predictions.items():
                if not p.informational and key not in rec:
                    missing.append(f"{c.id}:{profile}:{key}")
    assert not missing, f"not measured (run scripts/resolution.py): {missing[:10]}"


@pytest.mark.parametrize("rec, text", [
    ({"kind": "value", "delta": 0.02, "verified": True}, "an error of ≥ 2 % fails"),
    ({"kind": "value", "delta": 3e-9, "verified": True}, "an error of ≥ 3e-09 (relative) fails"),
    ({"kind": "count", "exact": True, "delta": None}, "exact"),
    ({"kind": "lower_bound", "delta": 0.5, "verified": True}, "a bound stated higher by ≥ 50 %"),
    ({"kind": "value", "delta": None, "note": "the defaults are fails"}, "not measured"),
])
def test_resolution_text(rec, text):
    assert text in resolution_text(rec)
    assert not math.isnan(len(resolution_text(rec)))
