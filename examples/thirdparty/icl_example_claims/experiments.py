"""The experiment: Monte Carlo over sequences (numpy only; imports nothing from the theory)."""

from __future__ import annotations

import numpy as np

__all__ = ["context_mean", "sample_features"]


def context_mean(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """β = Σ_n y_n x_n / N for a batch: x (m, N, D), y (m, N) → (m, D)."""
    return np.einsum("mn,mnd->md", y, x) / x.shape[1]


def sample_features(D: int, N: int, lam: float, P: int, rng: np.random.Generator,
                    chunk: int = 20_000, tick=None) -> tuple[np.ndarray, np.ndarray]:
    """Draw P sequences; return f = βᵀx_q and the target y_q (each of length P)."""
    f = np.empty(P)
    yq = np.empty(P)
    sd = np.sqrt(lam)
    for k in range(0, P, chunk):
        m = min(chunk, P - k)
        w = rng.standard_normal((m, D))
        x = sd * rng.standard_normal((m, N + 1, D))
        y = np.einsum("mnd,md->mn", x, w)
        beta = context_mean(x[:, :N], y[:, :N])
        f[k:k + m] = np.einsum("md,md->m", beta, x[:, N])
        yq[k:k + m] = y[:, N]
        if tick is not None:
            tick((k + m) / P, "sampling sequences")
    return f, yq
