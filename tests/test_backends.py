"""Backends: torch (autograd) reproduces the numpy trainer (hand-written gradients)."""

from __future__ import annotations

import numpy as np
import pytest

from icltheory.backends import NumpyBackend, TorchBackend, get_backend
from icltheory.core import SettingError, get_claim
from icltheory.models import linear_attention as la


def _problem(seed=0, D=3, H=2, R=2, separate=False):
    rng = np.random.default_rng(seed)
    X, y = la.sample_sequences(400, 6, la.covariance([1.0, 0.5, 0.2][:D]), rng)
    m = la.empirical_moments(X, y)
    if separate:
        model = la.SeparateHeads(H, R)
        p = {"r": 0.3 * rng.standard_normal((2, H, D + 1)), "K": 0.3 * rng.standard_normal((2, H, R, D + 1)),
             "Q": 0.3 * rng.standard_normal((2, H, R, D))}
    else:
        model = la.MergedHeads(H)
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


@pytest.mark.parametrize("separate", [False, True])
def test_torch_autograd_matches_numpy_pullbacks(separate):
    pytest.importorskip("torch")
    if not TorchBackend.available()[0]:
        pytest.skip("torch present but not importable")
    model, m, p = _problem(separate=separate)
    a = NumpyBackend().train_quadratic(model, m, p, lr=0.01, steps=300, record_every=10)
    b = TorchBackend().train_quadratic(model, m, p, lr=0.01, steps=300, record_every=10)
    assert np.array_equal(a.steps, b.steps)
    # same iterates up to float64 rounding (different summation order): 300 steps of a
    # contraction-free map amplify 1e-16 by at most ~1e3
    assert np.allclose(a.loss, b.loss, rtol=1e-10, atol=1e-12)
    for k in p:
        assert np.allclose(a.params[k], b.params[k], rtol=1e-9, atol=1e-12)
