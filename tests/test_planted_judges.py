"""Every planted judge change (scripts/planted_judges.py: a critical value three times too
large, a false-fail budget of 1e-12, a validity rule dropped, a tolerance three times too wide,
a bound refuted only below half its witness, a slope allowance three times too wide) makes the
calibration tests fail, and without a change they pass.  Eight runs of the calibration suite:
marked thorough."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "planted_judges.py"


@pytest.mark.thorough
def test_calibration_catches_every_planted_judge_change():
    spec = importlib.util.spec_from_file_location("planted_judges", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.clean()["passed"]
    missed = [r for r in (mod.run(n) for n in mod.CHANGES) if not r["caught"]]
    assert not missed, missed
