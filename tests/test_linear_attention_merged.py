"""Merged key-query linear attention (ATTN_M): model identities, claims, negative controls."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icltheory.core import get_claim, run_check
from icltheory.models import linear_attention as la

sizes = st.tuples(st.integers(1, 4), st.integers(1, 6), st.integers(1, 3), st.integers(0, 2**32 - 1))


@given(sizes)
def test_attention_equals_quadratic_feature_form(args):
    """Naive forward pass vs ⟨Θ, Z⟩, for the loss and (by finite differences) the gradient."""
    D, N, H, seed = args
    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.1, 2.0, D)
    X, y = la.sample_sequences(7, N, la.covariance(lam, rotate=True, rng=rng), rng)
    WV, WKQ = rng.standard_normal((2, H, D + 1, D + 1))
    naive = np.mean((y - la.attn_merged_predict(X, WV, WKQ)) ** 2)
    m = la.empirical_moments(X, y)
    model = la.MergedHeads(H)
    p = {"r": WV[None, :, D, :], "U": WKQ[None, :, :, :D]}
    assert abs(m.mse(model.theta(p))[0] - naive) <= 1e-10 * max(1.0, naive)
    g = model.pullback(p, m.grad_half(model.theta(p)), m)
    eps = 1e-6
    for name in p:
        idx = (0,) + tuple(int(rng.integers(0, n)) for n in p[name].shape[1:])
        hi = {k: v.copy() for k, v in p.items()}
        lo = {k: v.copy() for k, v in p.items()}
        hi[name][idx] += eps
        lo[name][idx] -= eps
        fd = (m.mse(model.theta(hi))[0] - m.mse(model.theta(lo))[0]) / (4 * eps)
        # central difference of a polynomial: error O(eps²·|third derivative|)
        assert abs(fd - g[name][idx]) <= 1e-5 * max(1.0, abs(fd))


@given(sizes, st.integers(1, 3))
def test_separate_heads_match_naive_forward(args, R):
    D, N, H, seed = args
    rng = np.random.default_rng(seed)
    X, y = la.sample_sequences(5, N, np.eye(D), rng)
    WV = rng.standard_normal((H, D + 1, D + 1))
    WK, WQ = rng.standard_normal((2, H, R, D + 1))
    naive = la.attn_separate_predict(X, WV, WK, WQ)
    Z = la.query_features(X)
    theta = la.SeparateHeads(H, R).theta({"r": WV[None, :, D, :], "K": WK[None], "Q": WQ[None, :, :, :D]})
    assert np.allclose(Z @ theta[0], naive, rtol=1e-10, atol=1e-10)


def test_population_moments_match_formula():
    lam = np.array([0.4, 0.3, 0.2, 0.1])
    B = la.beta_moments(np.diag(lam), 31)
    c = 1 + (1 + lam.sum() / lam) / 31
    assert np.allclose(np.diag(B), lam**2 * c, rtol=1e-14)


def _run(cid, profile="quick", predict=None, **kw):
    claim = get_claim(cid)
    return run_check(claim, claim.setting(kw), profile=profile, predict=predict or {})


@pytest.mark.parametrize("cid", ["linattn.merged.equivalence", "linattn.merged.fixed-points",
                                 "linattn.merged.sigmoid"])
def test_claims_hold_on_defaults(cid):
    v = _run(cid)
    assert v.verdict == "holds", v.reasons
    assert all(c.passed for c in v.checks) and len(v.checks) >= 3


def test_fixed_points_constants_match_paper():
    c = get_claim("linattn.merged.fixed-points").constants(
        get_claim("linattn.merged.fixed-points").setting({}))
    assert c["loss_final_exact"] == "85873/631442"
    assert c["loss_initial"] == pytest.approx(1.0)
    assert c["M_star_diag"] == pytest.approx([2.246377, 2.924528, 4.189189, 7.380952], abs=1e-6)


def test_negative_controls_fail():
    fp = get_claim("linattn.merged.fixed-points")
    s = fp.setting({})
    wrong_n = fp.constants(fp.setting({"N": 32}))  # N+1 in place of N
    assert _run("linattn.merged.fixed-points", predict={"loss_final": str(wrong_n["loss_final"])}).verdict == "fails"
    lam = np.array(s.lambdas)
    wrong_sign = lam**2 - (lam**2 + lam.sum() * lam) / s.N  # a wrong sign in E[ββᵀ]
    v = _run("linattn.merged.fixed-points", predict={"beta_second_moment_diag": ",".join(map(str, wrong_sign))})
    assert v.verdict == "fails"
    assert _run("linattn.merged.equivalence", predict={"beta_divisor": "32"}).verdict == "fails"
    assert _run("linattn.merged.sigmoid", predict={"sigma_inf": str(32 / 37)}).verdict == "fails"
    th = get_claim("linattn.merged.sigmoid").constants(get_claim("linattn.merged.sigmoid").setting({}))["t_half"]
    assert _run("linattn.merged.sigmoid", predict={"t_half": str(th * 1.2)}).verdict == "fails"


def test_other_settings_hold():
    """Not the paper's numbers: another scale λ, size, heads and spectrum."""
    assert _run("linattn.merged.sigmoid", D=3, N=12, H=2, lambdas="0.25,0.25,0.25", w_init=0.01,
                P=3000).verdict == "holds"
    assert _run("linattn.merged.fixed-points", lambdas="1.5,0.7,0.05", N=9, H=3).verdict == "holds"


def test_divergence_is_inconclusive():
    v = _run("linattn.merged.sigmoid", lr=1.0, steps=3000)
    assert v.verdict == "inconclusive" and any("diverged at step" in r for r in v.reasons)
    v = _run("linattn.merged.sigmoid", lr=5.0)  # horizon reached in a handful of steps
    assert v.verdict == "inconclusive" and any("too coarse" in r for r in v.reasons)


def test_determinism():
    a = _run("linattn.merged.fixed-points", seed=3).measured
    b = _run("linattn.merged.fixed-points", seed=3).measured
    assert a == b


@pytest.mark.parametrize("lam", ["1e-4", "30"])
def test_sigmoid_holds_far_from_unit_scale(lam):
    """Times scale like 1/λ²: tolerances must be in the claim's own units, not absolute."""
    assert _run("linattn.merged.sigmoid", lambdas=",".join([lam] * 4)).verdict == "holds"
    th = get_claim("linattn.merged.sigmoid").constants(
        get_claim("linattn.merged.sigmoid").setting({"lambdas": ",".join([lam] * 4)}))["t_half"]
    v = _run("linattn.merged.sigmoid", lambdas=",".join([lam] * 4), predict={"t_half": str(th * 1.001)})
    assert v.verdict == "fails"
