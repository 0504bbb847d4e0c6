"""The property-testing helpers: undecidable settings are not drawn, and
``inconclusive="skip"`` rejects undecided draws (with an error when most are undecided)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis.errors import UnsatisfiedAssumption

import icltheory.testing as itest
from icltheory.core import Verdict, get_claim


def _verdict(status: str, claim: str = "example.fake") -> Verdict:
    return Verdict(claim=claim, verdict=status, setting={"N": 1}, predicted={}, measured={},
                   checks=[], evidence={}, seed=0, runtime_s=0.0, versions={},
                   reasons=["undecided: nothing"] if status == "inconclusive" else [])


@hsettings(max_examples=40, deadline=None)
@given(itest.settings("nonlinear.rescaling"))
def test_undecidable_settings_are_not_drawn(s):
    assert abs(math.log(s.L / s.L_prime)) > 1e-3


def test_undecidable_is_the_claims_own_statement():
    c = get_claim("nonlinear.rescaling")
    assert c.undecidable(c.setting({"L": 2, "L_prime": 2})) is not None
    assert c.undecidable(c.setting({"L": 2, "L_prime": 1})) is None
    t = get_claim("nonlinear.two-phase")
    assert t.undecidable(t.setting({"K": 2})) is not None
    assert t.undecidable(t.setting({"K": 8})) is None


# these call the helpers outside a property-based test (as Hypothesis's ``reject`` warns):
# in use they run inside ``@given``, where rejecting a draw is what they are for
_REJECT_OUTSIDE_GIVEN = pytest.mark.filterwarnings(
    "ignore:Using `reject` outside a property-based test:hypothesis.errors.HypothesisDeprecationWarning")


@_REJECT_OUTSIDE_GIVEN
def test_skip_rejects_an_undecided_draw(monkeypatch):
    monkeypatch.setattr(itest, "_UNDECIDED", {})
    with pytest.raises(UnsatisfiedAssumption):
        itest.assert_holds(_verdict("inconclusive"), inconclusive="skip")
    with pytest.raises(AssertionError):  # the default: undecided is a failure
        itest.assert_holds(_verdict("inconclusive"))
    with pytest.raises(AssertionError):  # a fails is never skipped
        itest.assert_holds(_verdict("fails"), inconclusive="skip")
    assert itest.assert_holds(_verdict("holds"), inconclusive="skip").verdict == "holds"
    with pytest.raises(ValueError):
        itest.assert_holds(_verdict("holds"), inconclusive="ignore")


@_REJECT_OUTSIDE_GIVEN
def test_mostly_undecided_is_an_error(monkeypatch):
    monkeypatch.setattr(itest, "_UNDECIDED", {})
    n = itest.UNDECIDED_MIN_DRAWS
    for _ in range(n - 1):
        with pytest.raises(UnsatisfiedAssumption):
            itest.assert_holds(_verdict("inconclusive", "example.mostly"), inconclusive="skip")
    with pytest.raises(AssertionError, match="hardly tested"):
        itest.assert_holds(_verdict("inconclusive", "example.mostly"), inconclusive="skip")
