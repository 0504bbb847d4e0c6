"""Property-testing theorems at random settings with ``icltheory.testing`` — one per paper.

Run with ``pytest examples/property_tests`` (the project's test command runs it too).  Each
test draws valid settings from the claim's own setting schema (every key declared with a
``sample=`` range varies; cross-field constraints such as ``len(lambdas) == D`` hold) and
asserts that the theorem holds there, at the ``quick`` profile.  A failure prints the setting
and the failing checks, predicted vs measured, so it can be re-run with ``icltheory check``.

Hypothesis shrinks a failing setting towards a simple one, and ``inconclusive`` (the run could
not decide, e.g. over budget) is allowed here: ``assert_not_fails`` is the right assertion for
"never wrong"; ``assert_holds`` would demand that every random setting is decidable.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings as hsettings

import icltheory.testing as itest

RUNS = hsettings(max_examples=8, deadline=None, database=None, derandomize=True)


def assert_not_fails(claim: str, setting) -> None:
    v = itest.check(claim, setting)
    assert v.verdict != "fails", v.summary()


@RUNS
@given(itest.settings("linattn.merged.fixed-points", N=12))
def test_eq19_plateau_losses_at_N12(setting):
    """Zhang et al.: ATTN_M's fixed-point losses (Eq. 19) at N = 12, random spectra."""
    assert_not_fails("linattn.merged.fixed-points", setting)


@RUNS
@given(itest.settings("softmaxreg.vectorization"))
def test_tensor_trick(setting):
    """Gao, Song, Xie: vec(A1 X A2ᵀ) = (A1 ⊗ A2) vec(X) and the loss as n softmax problems."""
    itest.assert_holds("softmaxreg.vectorization", setting)


@RUNS
@given(itest.settings("nonlinear.rescaling"))
def test_eta_L2_rescaling(setting):
    """Li, Duan, Liang: GD at (η, L) is GD at (ηL²/L'², L') — bitwise — at random sizes."""
    assert_not_fails("nonlinear.rescaling", setting)


@RUNS
@given(itest.settings("catgd.functional-gd"))
def test_functional_gd(setting):
    """Wang et al.: GD on the RKHS parameter is functional GD with the kernel."""
    assert_not_fails("catgd.functional-gd", setting)


@RUNS
@given(itest.settings("linattn.merged.sigmoid", D=3))
def test_sigmoid_time_course_D3(setting):
    """Zhang et al.: the logistic σ(t) of ATTN_M with white inputs at D = 3."""
    assert_not_fails("linattn.merged.sigmoid", setting)
