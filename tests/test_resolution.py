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
    # a bound stated tighter than its certificate proves: undecided below δ, never passed
    ({"kind": "upper_bound", "delta": 0.09, "verified": True, "below": "inconclusive"},
     "a bound stated lower by ≥ 9 % fails (at 0.9 %: inconclusive)"),
    ({"kind": "upper_bound", "delta": 0.09, "verified": False, "below": "fails",
      "note": "not monotone: at δ fails, at δ/10 fails"}, "[not monotone"),
])
def test_resolution_text(rec, text):
    assert text in resolution_text(rec)
    assert not math.isnan(len(resolution_text(rec)))


def test_measured_resolutions_are_of_the_current_judges():
    """Each claim's resolutions were measured with the source file that now defines it: a judge
    edited since (a new guard, a changed tolerance) makes them stale — re-measure with
    ``python scripts/resolution.py CLAIM``."""
    from icltheory.core._resolution import claim_source_hash, load_resolution_sources

    sources = load_resolution_sources()
    stale = [c.id for c in all_claims()
             if not c.is_legacy() and not c.id.startswith("example.")
             and sources.get(c.id) != claim_source_hash(c)]
    assert not stale, f"stale resolutions (re-measure: python scripts/resolution.py ...): {stale}"


def test_probes_keep_the_sign_and_identities_are_exact():
    """A prediction is lowered by at most a relative 1 − 1e-9, never through 0 (p·(1 − 10) was
    bad input, read as 'does not fail'): nonlinear.final-attention's δ = 0.05 resolves; a constant
    that fails at every error tried is recorded as exact."""
    from icltheory.core import get_claim
    from icltheory.core._resolution import _LOWER_MAX

    assert 0 < 1.0 - _LOWER_MAX <= 1e-6
    c = get_claim("nonlinear.final-attention")
    rec = load_resolutions()[c.id]["quick"]["delta"]
    assert rec["delta"] is not None and rec["delta"] < 1.0 and rec["verified"], rec
    text = resolution_text({"kind": "value", "exact": True, "delta": 1e-12, "verified": True})
    assert text.startswith("exact: every error tried fails, down to 1e-12")


def test_a_list_under_one_absolute_tolerance_is_resolved_entry_by_entry():
    """Entries 1 and 100 judged with one absolute tolerance 0.01: the worst entry's δ (1 %) is
    the list's resolution, and each entry's own δ is recorded (the large one resolves 100×
    finer), and shown."""
    from _fake_claims import PairUnderOneTolerance

    c = PairUnderOneTolerance()
    s = c.setting({})
    r = measure_resolution(c, s, steps=30)["pair"]
    assert r.verified and math.isclose(r.delta, 0.01, rel_tol=1e-3), r
    assert set(r.by_position) == {"0", "1"}
    assert math.isclose(r.by_position["0"], 0.01, rel_tol=1e-3)
    assert math.isclose(r.by_position["1"], 1e-4, rel_tol=1e-3)
    text = resolution_text(r.as_dict())
    assert text.startswith("an error of ≥ 1 % fails (by entry: [0] 1 %, [1] 0.01 %)"), text
    # entries resolved alike are not listed
    assert "by entry" not in resolution_text({**r.as_dict(), "by_position": {"0": 0.01, "1": 0.009}})


def test_a_bound_undecided_below_its_resolution_is_verified_and_says_so():
    """An upper bound between a witness (1.0) and its proof (1.5): stated lower by a third it
    fails, by a tenth of that it is inconclusive (not proved, not refuted): the resolution is
    verified, records the verdict below it and says that error is undecided."""
    from _fake_claims import BoundWithUndecidedZone

    c = BoundWithUndecidedZone()
    r = measure_resolution(c, c.setting({}), steps=30)["K"]
    assert r.verified and r.below == "inconclusive" and math.isclose(r.delta, 1 / 3, rel_tol=1e-3), r
    assert resolution_text(r.as_dict()) == "a bound stated lower by ≥ 33 % fails (at 3.3 %: inconclusive)"


def test_a_relative_resolution_reads_as_a_plain_percentage():
    """Two significant digits, written out in full: 110 %, not 1.1e+02 %."""
    from icltheory.core._resolution import resolution_text

    rec = {"delta": 1.1, "kind": "upper_bound", "absolute": False, "verified": True, "below": "holds"}
    assert resolution_text(rec) == "a bound stated lower by ≥ 110 % fails"
    assert "≥ 0.34 %" in resolution_text({**rec, "delta": 0.0034})
