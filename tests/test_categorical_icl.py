"""Categorical ICL (issue 5): backprop, construction, claims, negative controls, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from icltheory._cli import main as cli
from icltheory.core import get_claim, run_check
from icltheory.models import _categorical as M


def _check(cid, profile="standard", predict=None, **setting):
    claim = get_claim(cid)
    return run_check(claim, claim.setting(setting), profile=profile, predict=predict or {})


# ----------------------------------------------------------------------------- backprop


def _random_model(rng, lay, C, kinds, r=3):
    D = lay.D
    blocks = []
    for k1, k2 in kinds:
        heads = [M.Head(0.3 * rng.standard_normal((r, D)), 0.3 * rng.standard_normal((r, D)),
                        0.3 * rng.standard_normal((D, D)), kind) for kind in (k1, k2)]
        cross = M.Cross(0.3 * rng.standard_normal((4, D)), 0.3 * rng.standard_normal((4, lay.dp)),
                        0.3 * rng.standard_normal((D, lay.dp)))
        blocks.append(M.Block(heads, cross))
    W = [rng.standard_normal((lay.dp, C)) for _ in range(4)]
    return M.Model(lay, *W, blocks)


@pytest.mark.parametrize("kinds", [
    (("linear", "softmax"), ("exp", "softmax_negsq")),
    (("rbf", "laplacian"), ("softmax", "delta")),
])
def test_backward_matches_central_differences(kinds):
    """Hand-written per-prompt backprop vs central differences of the summed loss, for every
    parameter family (heads, cross-attention, embeddings, readout) and the covariates."""
    rng = np.random.default_rng(7)
    lay, C, N, B = M.layout(3, 2), 5, 6, 3
    model = _random_model(rng, lay, C, kinds)
    X = rng.standard_normal((B, N + 1, lay.d))
    y = rng.integers(0, C, (B, N))
    target = M.softmax(rng.standard_normal((B, C)))
    logits, _, cache = M.forward(model, X, y)
    g = M.backward(model, X, y, target, logits, cache)

    def total():
        return M.query_loss(M.forward(model, X, y)[0], target).sum()

    pairs = [(X, g["X"], False), (model.W_u, g["W_u"], True), (model.W_v, g["W_v"], True),
             (model.W_x, g["W_x"], True), (model.W_ro, g["W_ro"], True)]
    for blk, gb in zip(model.blocks, g["blocks"]):
        for h, gh in zip(blk.heads, gb["heads"]):
            pairs += [(h.Q, gh["Q"], True), (h.K, gh["K"], True), (h.V, gh["V"], True)]
        pairs += [(getattr(blk.cross, m), gb["cross"][m], True) for m in ("Qc", "Kc", "Vc")]
    eps = 1e-6
    for P, G, per_prompt in pairs:
        G = G.sum(0) if per_prompt else G
        for _ in range(4):
            idx = tuple(int(rng.integers(0, n)) for n in P.shape)
            old = P[idx]
            P[idx] = old + eps
            hi = total()
            P[idx] = old - eps
            lo = total()
            P[idx] = old
            fd = (hi - lo) / (2 * eps)
            # central differences: truncation O(eps²) plus cancellation ~1e-16/eps ≈ 1e-10;
            # the Laplacian kernel is smooth away from ties (none at random points)
            assert abs(fd - G[idx]) <= 1e-6 * max(1.0, abs(fd)), (P.shape, idx, fd, G[idx])


# ----------------------------------------------------------------------------- construction (C1)


@given(st.integers(2, 12), st.integers(1, 6), st.integers(1, 6), st.integers(2, 12),
       st.integers(1, 3), st.sampled_from(M.KERNELS), st.sampled_from(("diag", "full")),
       st.sampled_from(("delta", "rbf")), st.integers(0, 2**32 - 1))
def test_construction_equals_functional_gd(N, d, dp, C, K, kernel, form, erase, seed):
    rng = np.random.default_rng(seed)
    lay = M.layout(d, dp)
    W = rng.standard_normal((dp, C)) + rng.standard_normal((dp, 1))  # mean embedding ≠ 0 too
    X = M.sample_x(rng, "cube", (4, N + 1), d)
    y = rng.integers(0, C, (4, N))
    gam = [np.diag(rng.uniform(0.2, 1.0, dp)) + (0.3 * rng.standard_normal((dp, dp)) if form == "full" else 0)
           for _ in range(K)]
    dist = np.sum((X[:, :N, None] - X[:, None, :N]) ** 2, -1) + np.eye(N) * 1e9
    lam = float(np.sqrt(200.0 / dist.min()))
    fs, Es = M.functional_gd(kernel, X, y, W, gam, 0.7)
    _, hidden, _ = M.forward(M.gd_model(lay, W, kernel, 0.7, gam, erase=erase, lam=lam), X, y)
    size = 1.0 + max(np.abs(f).max() for f in fs)
    for k in range(K + 1):
        assert np.abs(hidden[k][:, :, lay.f] - fs[k]).max() <= 1e-10 * size
        assert np.abs(hidden[k][:, :N, lay.v] - Es[k]).max() <= 1e-10 * size


def test_dot_erase_exact_iff_every_point_wins_its_argmax():
    """The dot erase of block k corrupts the v slots after block k (k ≥ 2: before that all v
    slots equal w̄_e); the f slots, and so the prediction, go wrong from block 3 on."""
    rng = np.random.default_rng(3)
    lay, N, C, B = M.layout(5, 4), 10, 7, 400
    W = rng.standard_normal((4, C))
    X = M.sample_x(rng, "gaussian", (B, N + 1), 5)
    y = rng.integers(0, C, (B, N))
    gam = [np.eye(4)] * 3
    fs, Es = M.functional_gd("rbf", X, y, W, gam, 1.0)
    _, hid, _ = M.forward(M.gd_model(lay, W, "rbf", 1.0, gam, erase="dot", lam=300.0), X, y)
    err_v2 = np.abs(hid[2][:, :N, lay.v] - Es[2]).max((1, 2))
    err_f2 = np.abs(hid[2][:, :, lay.f] - fs[2]).max((1, 2))
    err_f3 = np.abs(hid[3][:, :, lay.f] - fs[3]).max((1, 2))
    wins = M.own_argmax_fraction(X[:, :N])
    assert 0 < wins.mean() < 0.5  # Gaussian x, N=10, d=5: about 0.05 in the reference
    assert err_f2.max() <= 1e-10
    assert np.median(err_v2[~wins]) > 1e-2 and np.median(err_f3[~wins]) > 1e-3
    gram = np.einsum("bjd,bid->bji", X[:, :N], X[:, :N])
    margin = np.diagonal(gram, axis1=1, axis2=2)[:, :, None] - gram + np.eye(N) * 1e9
    clear = wins & (margin.min((1, 2)) * 300.0**2 > 60)  # losing weight ≤ e^-60
    assert clear.any() and max(err_v2[clear].max(), err_f3[clear].max()) <= 1e-10


# ----------------------------------------------------------------------------- claims


def test_functional_gd_claim_and_planted_error():
    assert _check("catgd.functional-gd").verdict == "holds"
    assert _check("catgd.functional-gd", predict={"max_abs_error": "1e-3"}).verdict == "fails"


def test_cross_attention_claim_and_planted_error():
    v = _check("catgd.cross-attention")
    assert v.verdict == "holds" and v.measured["max_abs_error"] <= 1e-12
    assert _check("catgd.cross-attention", predict={"max_abs_error": "1e-3"}).verdict == "fails"


def test_construction_done_when():
    base = dict(d=5, dprime=8, C=25, N=10, K=3)
    v = _check("catgd.construction", **base)
    assert v.verdict == "holds" and v.measured["max_abs_error"] <= 1e-10
    bad = _check("catgd.construction", erase="dot", x_dist="gaussian", **base)
    assert bad.verdict == "fails"
    assert bad.evidence["fraction_prompts_point_loses_own_argmax"] > 0.5
    assert bad.evidence["error_quantiles_bad_prompts"][0.5] > 1e-2
    assert _check("catgd.construction", erase="dot", x_dist="sphere", **base).verdict == "holds"
    # K = 1: the dot erase acts on identical v slots (all w̄_e), so it is harmless
    assert _check("catgd.construction", erase="dot", x_dist="gaussian", K=1, prompts=200).verdict == "holds"
    # a small λ is not a δ: the rbf erase fails too
    assert _check("catgd.construction", lam=2.0, prompts=200).verdict == "fails"
    assert _check("catgd.construction", prompts=200, predict={"max_abs_error": "1e-3"}).verdict == "fails"
    assert len(v.plots) == 1 and len(v.plots[0].series) == 2


def test_single_step_claim_and_planted_error():
    v = _check("catgd.single-step", kernel="softmax")
    assert v.verdict == "holds" and v.measured["raw_embedding_error_when_mean_nonzero"] > 1e-6
    assert _check("catgd.single-step", predict={"max_abs_error": "1e-3"}).verdict == "fails"


@pytest.mark.parametrize("kernel", ["softmax", "laplacian", "rbf"])
def test_equivariance_claim(kernel):
    v = _check("catgd.equivariance", kernel=kernel)
    assert v.verdict == "holds" and v.measured["max_loss_change"] <= 1e-12
    if kernel == "laplacian":
        assert v.measured["laplacian_haar_change_min"] > 1e-8


def test_equivariance_planted_error():
    assert _check("catgd.equivariance", predict={"max_loss_change": "1e-3"}).verdict == "fails"


def test_stationarity_holds_and_negative_controls_fail():
    """Default: 20000 antithetic pairs per sample (standard).  The controls run at the quick
    profile (5000 pairs): at 20000 pairs they come out at |z| ≈ 17 (anisotropic, traceless
    diagonal at θ*) and |z| ≈ 109 (step=3, Γ direction), so 5000 pairs keep |z| ≈ 8 and 55,
    far above the Bonferroni threshold ≈ 3.8."""
    v = _check("catgd.stationarity")
    assert v.verdict == "holds", v.reasons
    assert v.measured["fit"]["converged"]
    aniso = _check("catgd.stationarity", profile="quick", x_dist="anisotropic")
    assert aniso.verdict == "fails"
    assert any("traceless" in c.name for c in aniso.checks if c.passed is False)
    step = _check("catgd.stationarity", profile="quick", step=3.0)
    assert step.verdict == "fails"
    assert any("Γ direction" in c.name for c in step.checks if c.passed is False)


def test_stationarity_planted_prediction():
    v = _check("catgd.stationarity", prompts=2000, predict={"off_structure_gradient": "0.05"})
    assert v.verdict == "fails"


def test_training_claim_standard_and_control():
    v = _check("catgd.training")
    assert v.verdict == "holds", v.reasons
    res = v.measured["results"]
    assert res["L=256"]["GD accuracy"] > res["L=256"]["TF accuracy"]
    tiny = dict(train_sizes=(32, 64), steps=20, N=5, prompts=256)
    bad = _check("catgd.training", predict={"min_gd_nll_advantage_small_L": "5"}, **tiny)
    assert bad.verdict == "fails"
    assert _check("catgd.training", profile="quick", **tiny).verdict == "inconclusive"


@pytest.mark.thorough
def test_stationarity_two_blocks_cube_rbf():
    v = _check("catgd.stationarity", K=2, kernel="rbf", x_dist="cube", prompts=20000)
    assert v.verdict == "holds", v.reasons


@pytest.mark.thorough
def test_training_thorough():
    assert _check("catgd.training", profile="thorough").verdict == "holds"


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("args", [
    ["check", "catgd.construction", "--set", "C=1"],
    ["check", "catgd.construction", "--set", "K=0"],
    ["check", "catgd.construction", "--set", "N=0"],
    ["check", "catgd.construction", "--set", "kernel=gauss"],
    ["check", "catgd.construction", "--set", "erase=cosine"],
    ["check", "catgd.construction", "--set", "x_dist=uniform"],
    ["check", "catgd.stationarity", "--set", "step=-1"],
    ["check", "catgd.stationarity", "--set", "K=9"],
    ["check", "catgd.training", "--set", "train_sizes=100,50"],
])
def test_bad_input_exits_2(args, capsys):
    assert cli(args) == 2
    err = capsys.readouterr().err
    if "kernel" in args[-1]:
        assert "linear, exp, rbf, laplacian, softmax" in err
