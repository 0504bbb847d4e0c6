"""The samplers' laws: every measurement is only as good as the draws it is built on, so each
random sampler of the experiments is checked against the law its docstring states.

Monte Carlo checks use fixed seeds (so the tests are deterministic) and the z-tests and
χ²/Kolmogorov–Smirnov tests a researcher would use, each at level ``ALPHA`` = 1e-4 (Bonferroni
over the moments of one check); the sample sizes put the standard errors of the checked moments
at ≲ 0.5 % of their values, so an error of 2–3 % in a moment (a label temperature off by 3 %, a
variance off by 3 %) fails.  Exact properties (antithetic pairs, orthogonality) are checked
exactly."""

from __future__ import annotations

import numpy as np
from scipy import special, stats

ALPHA = 1e-4


def _z_ok(sample, target) -> bool:
    """Two-sided z-tests of the sample's column means against ``target``, Bonferroni over the
    columns at level ALPHA."""
    s = np.asarray(sample, float).reshape(len(sample), -1)
    se = s.std(0, ddof=1) / np.sqrt(len(s))
    z = (s.mean(0) - np.ravel(target)) / se
    return bool(np.max(np.abs(z)) < stats.norm.isf(ALPHA / (2 * z.size)))


def test_categorical_labels_follow_the_softmax():
    """``sample_labels`` draws class c with probability softmax(logits)_c: a χ² test at fixed
    logits, and with logits varying per draw a z-test of 1{y = c} − p_c; a class of probability
    0 is never drawn.  Power: at 200 000 draws a temperature 3 % off gives χ² p < 1e-10."""
    from proofs.categorical_icl.experiments import _data as D

    rng = np.random.default_rng(101)
    logits = 2.0 * rng.standard_normal(7)
    y = D.sample_labels(rng, np.broadcast_to(logits, (200_000, 7)))
    p = special.softmax(logits)
    assert stats.chisquare(np.bincount(y, minlength=7), 200_000 * p).pvalue > ALPHA
    hot = np.bincount(D.sample_labels(rng, np.broadcast_to(1.03 * logits, (200_000, 7))), minlength=7)
    assert stats.chisquare(hot, 200_000 * p).pvalue < 1e-10  # the test's power, shown
    varying = 2.0 * rng.standard_normal((200_000, 7))
    yv = D.sample_labels(rng, varying)
    assert _z_ok(np.eye(7)[yv] - special.softmax(varying, -1), np.zeros(7))
    extreme = np.broadcast_to(np.array([0.0, -800.0, 50.0, 49.0]), (50_000, 4))
    assert not np.isin(D.sample_labels(rng, extreme), [0, 1]).any()


def test_categorical_covariate_laws():
    """``sample_x``: mean 0, independent coordinates and the stated variances — U[−1, 1]
    (1/3; with ``unit_variance`` U[−√3, √3]: 1), N(0, I), the unit sphere (1/d, norms exactly
    1), N(0, diag σ²) with σ geometric from 2 to 1/2."""
    from proofs.categorical_icl.experiments import _data as D

    rng = np.random.default_rng(102)
    d, n = 4, 200_000
    iu = np.triu_indices(d, 1)
    for dist, unit, var in (("cube", False, np.full(d, 1 / 3)), ("cube", True, np.ones(d)),
                            ("gaussian", False, np.ones(d)), ("sphere", False, np.full(d, 1 / d)),
                            ("anisotropic", False, np.geomspace(2.0, 0.5, d) ** 2)):
        X = D.sample_x(rng, dist, (n,), d, unit_variance=unit)
        cross = (X[:, :, None] * X[:, None, :])[:, iu[0], iu[1]]
        assert _z_ok(np.concatenate([X, X * X, cross], 1), np.concatenate([np.zeros(d), var, np.zeros(iu[0].size)])), dist
        if dist == "sphere":
            assert np.allclose(np.linalg.norm(X, axis=1), 1.0, rtol=0, atol=1e-14)


def test_antithetic_prompt_pairs():
    """``draw_linear_task_prompts``: the second half of the batch is exactly the first with x
    negated (same tasks), and every context label of either half follows the softmax of its
    logits W_eᵀAx (a z-test of 1{y = c} − p_c over all context tokens); the query target is that
    softmax at the query."""
    from proofs.categorical_icl.experiments import _data as D

    rng = np.random.default_rng(103)
    d, dp, N, C, n = 3, 2, 6, 5, 20_000
    W = rng.standard_normal((dp, C))
    draw = np.random.default_rng(104)
    batch = D.draw_linear_task_prompts(draw, n, d=d, dp=dp, N=N, W_e=W, x_dist="gaussian", task_scale=2.0)
    assert np.array_equal(batch.X[n:], -batch.X[:n])
    A = D.linear_task(np.random.default_rng(104), n, d, dp, 2.0)  # the same stream's first draw
    logits = np.einsum("btd,bed,ec->btc", batch.X, np.concatenate([A, A]), W)
    p = special.softmax(logits, -1)
    assert np.allclose(batch.target, p[:, N], rtol=0, atol=1e-15)
    hits = np.eye(C)[batch.labels] - p[:, :N]
    for half in (hits[:n], hits[n:]):
        assert _z_ok(half.reshape(-1, C), np.zeros(C))


def test_haar_rotations():
    """Both experiments' Haar samplers give orthogonal matrices (to 1e-14) distributed by Haar
    measure on O(d): E tr Q = 0, E (tr Q)² = 1 and E tr Q² = 1 (Diaconis–Shahshahani), and the
    two signs of the determinant equally often."""
    from proofs.categorical_icl.experiments import _data as D
    from proofs.linear_attention.experiments import _data as LA

    d, n = 4, 20_000
    for draw in (lambda g: D.haar(g, d), lambda g: LA.haar_rotation(d, g)):
        rng = np.random.default_rng(105)
        Q = np.stack([draw(rng) for _ in range(n)])
        assert np.max(np.abs(Q @ np.swapaxes(Q, 1, 2) - np.eye(d))) < 1e-14
        tr = np.trace(Q, axis1=1, axis2=2)
        tr2 = np.trace(Q @ Q, axis1=1, axis2=2)
        assert _z_ok(np.stack([tr, tr * tr, tr2, np.sign(np.linalg.det(Q))], 1), [0.0, 1.0, 1.0, 0.0])


def test_linear_attention_sequences_have_the_stated_covariance():
    """``sample_sequences`` with a rotated Λ: every token (context and query) has covariance Λ,
    the task w is N(0, I), and each context label is wᵀx exactly."""
    from proofs.linear_attention.experiments import _data as LA

    rng = np.random.default_rng(106)
    D = 3
    Lam = LA.covariance([0.9, 0.4, 0.1], LA.haar_rotation(D, rng))
    X, y, w = LA.sample_sequences_and_tasks(100_000, 4, Lam, np.random.default_rng(107))
    iu = np.triu_indices(D)
    for tok in (0, 3, 4):  # two context tokens and the query
        x = X[:, :D, tok]
        assert _z_ok((x[:, :, None] * x[:, None, :])[:, iu[0], iu[1]], Lam[iu]), tok
    assert _z_ok(np.concatenate([w, w * w], 1), np.concatenate([np.zeros(D), np.ones(D)]))
    assert np.allclose(X[:, D, :4], np.einsum("pd,pdn->pn", w, X[:, :D, :4]), rtol=0, atol=1e-12)


def test_nonlinear_prompts_draw_features_uniformly():
    """``make_prompts``: each token's feature index is uniform over the K features (χ²), the
    token is its feature plus N(0, σ²/d) noise per coordinate, and the ``same`` mask marks the
    tokens that share the query's feature."""
    from proofs.nonlinear_regression.experiments import prompts, tasks

    rng = np.random.default_rng(108)
    K, d, N, M, sigma = 5, 8, 6, 40_000, 0.3
    V = tasks.random_unit_features(K, d, rng)
    b = prompts.make_prompts(V, M, N, sigma, "linear", np.random.default_rng(109))
    P = np.concatenate([b.X, b.xq[:, None]], 1)
    dist = np.linalg.norm(P[:, :, None, :] - V[None, None], axis=-1)  # the nearest feature is the drawn one here
    feats = np.argmin(dist, -1)
    assert stats.chisquare(np.bincount(feats.ravel(), minlength=K)).pvalue > ALPHA
    noise = (P - V[feats]) * np.sqrt(d) / sigma
    assert _z_ok(np.concatenate([noise.reshape(-1, d), noise.reshape(-1, d) ** 2], 1),
                 np.concatenate([np.zeros(d), np.ones(d)]))
    assert np.array_equal(b.same, feats[:, :N] == feats[:, N:])
