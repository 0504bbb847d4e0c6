"""The experiment: Monte Carlo over sequences (numpy only; imports nothing from the theory)."""

from __future__ import annotations

import numpy as np

__all__ = ["context_mean", "sample_features"]


def context_mean(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """β = Σ_n y_n x_n / N for a batch: x (m, N, D), y (m, N) → (m, D)."""
    return np.einsum("mn,mnd->md", y, x) / x.shape[1]


def sample_features(D: int, N: int, lam: float, P: int, rng: np.random.Generator,
                    chunk: int = 20_000, tick=None) -> tuple[np.ndarray, np.ndarray]:
    """Draw P sequences; return each one's context moment S = Σ_n x_n x_nᵀ / N as (P, D, D)
    and its second moment S² (P, D, D).

    Given S, the query x_q ~ N(0, λI) and the task w ~ N(0, I) (β = S w, f = βᵀx_q,
    y_q = wᵀx_q) average out exactly: E[(y_q − ηf)² | S] = λ‖I − ηS‖_F² and
    E[f(y_q − ηf) | S] = λ tr(S − ηS²) — the same means as the sampled squares, without their
    heavy tails (Rao–Blackwellisation)."""
    Ss = np.empty((P, D, D))
    sd = np.sqrt(lam)
    for k in range(0, P, chunk):
        m = min(chunk, P - k)
        x = sd * rng.standard_normal((m, N, D))
        # column e of S is the context mean of x weighted by its coordinate e (β for w = e_e)
        Ss[k:k + m] = np.stack([context_mean(x, x[:, :, e]) for e in range(D)], axis=-1)
        if tick is not None:
            tick((k + m) / P, "sampling sequences")
    return Ss, Ss @ Ss
