"""Backends: one array namespace; the trainer kernel written once runs on numpy and on torch."""

from __future__ import annotations

import numpy as np
import pytest

from icltheory.backends import NumpyBackend, TorchBackend, get_backend
from icltheory.core import SettingError, get_claim
from proofs.linear_attention.experiments import _data as data
from proofs.linear_attention.experiments import _models as models
from proofs.linear_attention.experiments import _training as training


def _problem(seed=0, D=3, H=2, R=2, separate=False):
    rng = np.random.default_rng(seed)
    X, y = data.sample_sequences(400, 6, np.diag([1.0, 0.5, 0.2][:D]), rng)
    m = models.empirical_moments(X, y)
    if separate:
        model = models.SeparateHeads(H, R)
        p = {"r": 0.3 * rng.standard_normal((2, H, D + 1)), "K": 0.3 * rng.standard_normal((2, H, R, D + 1)),
             "Q": 0.3 * rng.standard_normal((2, H, R, D))}
    else:
        model = models.MergedHeads(H)
        p = {"r": 0.3 * rng.standard_normal((2, H, D + 1)), "U": 0.3 * rng.standard_normal((2, H, D + 1, D))}
    return model, m, p


def test_unknown_backend_is_a_setting_error():
    with pytest.raises(SettingError, match="valid values"):
        get_backend("jax")


def test_missing_torch_is_a_setting_error(monkeypatch):
    monkeypatch.setattr(TorchBackend, "available", classmethod(lambda cls: (False, "needs PyTorch")))
    claim = get_claim("linattn.merged.sigmoid")
    with pytest.raises(SettingError) as e:
        claim.setting({"backend": "torch"})
    assert e.value.key == "backend"


def test_numpy_namespace():
    xp = NumpyBackend()
    a = np.arange(6.0).reshape(2, 3)
    b = xp.asarray(a)
    b[0, 0] = 7.0
    assert a[0, 0] == 0.0 and b.dtype == xp.float64 and xp.device == "cpu"
    assert np.array_equal(xp.to_numpy(xp.einsum("ij,kj->ik", b, b)), b @ b.T)


def test_the_kernel_matches_a_plain_numpy_loop():
    """train_quadratic (written against the namespace) = θ ← θ − η ∂L_{1/2}/∂θ spelled out."""
    model, m, p = _problem(separate=True)
    trace, final = training.train_quadratic(model, m, p, lr=0.01, steps=50, record_every=10)
    q = {k: v.copy() for k, v in p.items()}
    for _ in range(50):
        g = model.pullback(q, m.grad_half(model.theta(q)), m)
        q = {k: q[k] - 0.01 * g[k] for k in q}
    for k in q:
        assert np.allclose(final[k], q[k], rtol=1e-12, atol=1e-15)
    assert np.allclose(trace["loss"][-1], m.mse(model.theta(q)), rtol=1e-12)


@pytest.mark.parametrize("separate", [False, True])
def test_torch_matches_numpy(separate):
    pytest.importorskip("torch")
    if not TorchBackend.available()[0]:
        pytest.skip("torch present but not importable")
    model, m, p = _problem(separate=separate)
    a, pa = training.train_quadratic(model, m, p, lr=0.01, steps=300, record_every=10, xp=NumpyBackend())
    b, pb = training.train_quadratic(model, m, p, lr=0.01, steps=300, record_every=10, xp=TorchBackend())
    assert np.array_equal(a.steps, b.steps)
    # the same kernel in float64, different summation order: 300 steps amplify 1e-16 by ≲ 1e3
    assert np.allclose(a["loss"], b["loss"], rtol=1e-10, atol=1e-12)
    for k in p:
        assert np.allclose(pa[k], pb[k], rtol=1e-9, atol=1e-12)


def test_sigmoid_with_torch_backend():
    pytest.importorskip("torch")
    if not TorchBackend.available()[0]:
        pytest.skip("torch present but not importable")
    c = get_claim("linattn.merged.sigmoid")
    from icltheory.core import run_check

    v = run_check(c, c.setting({"backend": "torch", "profile": "quick"}))
    assert v.verdict == "holds" and v.measured["backend"] == "torch"


def _torch_or_skip():
    pytest.importorskip("torch")
    if not TorchBackend.available()[0]:
        pytest.skip("torch present but not importable")
    return TorchBackend()


def test_namespace_operations_agree():
    """The protocol's reductions and softmax mean the same on both backends."""
    tb = _torch_or_skip()
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5)) * 30.0  # large scores: the softmax must not overflow
    for xp in (NumpyBackend(), tb):
        b = xp.asarray(a)
        sm = xp.to_numpy(xp.softmax(b, axis=-1))
        assert np.allclose(sm.sum(-1), 1.0, atol=1e-14) and np.all(np.isfinite(sm))
        assert np.allclose(sm, np.exp(a - a.max(-1, keepdims=True))
                           / np.exp(a - a.max(-1, keepdims=True)).sum(-1, keepdims=True), rtol=1e-13)
        assert np.allclose(xp.to_numpy(xp.mean(b, axis=1)), a.mean(1), rtol=1e-14)
        assert np.array_equal(xp.to_numpy(xp.amin(b, axis=0)), a.min(0))
        assert np.array_equal(xp.to_numpy(xp.swapaxes(b, 0, 2)), np.swapaxes(a, 0, 2))
        assert xp.to_numpy(xp.zeros((2, 3))).shape == (2, 3)
        assert xp.all_finite(b) and not xp.all_finite(xp.asarray(np.where(a > 0, np.inf, a)))
        ls = xp.to_numpy(xp.log_softmax(b, axis=-1))
        assert np.all(np.isfinite(ls)) and np.allclose(np.exp(ls), sm, rtol=1e-13, atol=1e-300)
        assert np.allclose(ls, np.log(sm), rtol=1e-13, atol=1e-13)  # the same function, not just finite
        assert np.allclose(xp.to_numpy(xp.sum(b, axis=1)), a.sum(1), rtol=1e-14)
        assert xp.to_numpy(xp.sum(b, axis=-1, keepdims=True)).shape == (3, 4, 1)
        assert xp.to_numpy(xp.sum(b, keepdims=True)).shape == (1, 1, 1)
        assert np.isclose(float(xp.sum(b)), a.sum(), rtol=1e-13)
        small = a / 30.0
        assert np.allclose(xp.to_numpy(xp.exp(xp.asarray(small))), np.exp(small), rtol=1e-15)
        assert np.allclose(xp.to_numpy(xp.sqrt(xp.abs(b))), np.sqrt(np.abs(a)), rtol=1e-15)
        assert np.array_equal(xp.to_numpy(xp.sign(b)), np.sign(a))
        assert np.array_equal(xp.to_numpy(xp.diagonal(b[0])), np.diagonal(a[0]))
        assert np.array_equal(xp.to_numpy(xp.stack([b[0], b[1]], axis=1)), np.stack([a[0], a[1]], axis=1))
        assert xp.to_numpy(xp.stack([xp.sum(b), xp.sum(b)])).shape == (2,)
        rows = xp.asindex(np.array([2, 0, 2]))
        assert np.array_equal(xp.to_numpy(b[rows]), a[[2, 0, 2]])  # gather
        c = xp.zeros((3, 3))
        c[rows[:2], xp.asindex(np.array([1, 2]))] = 5.0  # scatter
        assert np.array_equal(xp.to_numpy(c), np.array([[0, 0, 5.0], [0, 0, 0], [0, 5.0, 0]]))
    from icltheory.backends import namespace_of

    assert namespace_of(tb.asarray(a)).name == "torch" and namespace_of(a).name == "numpy"


def test_nonlinear_prompt_trainer_torch_matches_numpy():
    """Model B's full-batch GD (the nonlinear paper's finite-prompt trainer) on both backends."""
    tb = _torch_or_skip()
    from proofs.nonlinear_regression.experiments import prompts, tasks

    rng = np.random.default_rng(3)
    V = tasks.random_unit_features(4, 8, rng)
    batch = prompts.make_prompts(V, 60, 16, 0.02, "sin", rng)
    a = prompts.run_prompts(batch, [1.0, 2.0], [20.0, 5.0], 200, record_every=10, level=0.5)
    b = prompts.run_prompts(batch, [1.0, 2.0], [20.0, 5.0], 200, record_every=10, level=0.5, xp=tb)
    assert np.array_equal(a.steps, b.steps)
    # float64 on both, different reduction orders: 200 steps amplify ~1e-16 by far less than 1e4
    for key in ("attn", "attn_min", "loss"):
        assert np.allclose(a[key], b[key], rtol=1e-11, atol=1e-13), key
    assert np.array_equal(a["frac"], b["frac"])
    assert np.allclose(a.extra["Q"], b.extra["Q"], rtol=1e-10, atol=1e-12)
    assert a["attn"][-1, 0] > a["attn"][0, 0]  # the run learned something (not a trivial match)


def test_linear_attention_softmax_trainer_torch_matches_numpy():
    """The softmax-attention variants (merged and separate) on both backends."""
    tb = _torch_or_skip()
    from proofs.linear_attention.experiments import _softmax as sm

    rng = np.random.default_rng(4)
    X, y = data.sample_sequences(120, 8, np.diag([0.6, 0.3, 0.1]), rng)
    for model in (sm.SoftmaxAttention(3, merged=True), sm.SoftmaxAttention(2, merged=False, R=2)):
        p = sm.softmax_init(model, 3, 0.3, rng)
        ka, la, pa = sm.softmax_train(model, p, X, y, lr=0.5, steps=150, record_every=5)
        kb, lb, pb = sm.softmax_train(model, p, X, y, lr=0.5, steps=150, record_every=5, xp=tb)
        assert np.array_equal(ka, kb)
        assert np.allclose(la, lb, rtol=1e-11, atol=1e-14)
        for k in pa:
            assert np.allclose(pa[k], pb[k], rtol=1e-10, atol=1e-13), k
        assert la[-1] < la[0]


@pytest.mark.parametrize("claim_id", ["nonlinear.rescaling", "nonlinear.final-attention"])
def test_nonlinear_claims_same_verdict_on_torch(claim_id):
    _torch_or_skip()
    from icltheory.core import run_check

    c = get_claim(claim_id)
    vn = run_check(c, c.setting({"profile": "quick"}))
    vt = run_check(c, c.setting({"profile": "quick", "backend": "torch"}))
    assert vn.verdict == vt.verdict == "holds"
    for k, x in vn.measured.items():
        if isinstance(x, float):
            assert np.isclose(vt.measured[k], x, rtol=1e-9, atol=1e-12), k


def test_torch_backend_refused_where_nothing_uses_it():
    c = get_claim("nonlinear.rescaling")
    with pytest.raises(SettingError) as e:
        c.setting({"backend": "torch", "model": "A"})
    assert e.value.key == "backend"


def test_empirical_moments_torch_matches_numpy():
    """Simulator (b)'s O(P F²) moments — the part that grows with data — on both backends."""
    tb = _torch_or_skip()
    rng = np.random.default_rng(5)
    X, y = data.sample_sequences(9000, 6, np.diag([1.0, 0.5, 0.2]), rng)  # > one 4096 chunk
    a = models.empirical_moments(X, y)
    b = models.empirical_moments(X, y, xp=tb)
    assert np.allclose(a.C, b.C, rtol=1e-12, atol=1e-14) and np.allclose(a.g, b.g, rtol=1e-12, atol=1e-14)
    assert a.s == b.s and (a.A, a.B, a.D) == (b.A, b.B, b.D)
