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
