r"""Sampling the in-context regression data (numpy only).

A task $w\sim\mathcal N(0,I_D)$ per sequence, inputs $x_n,x_q\sim\mathcal N(0,\Lambda)$, labels
$y_n=w^\top x_n$; the tokens are the columns of the $(D+1)\times(N+1)$ matrix
$X=[x_1\ \cdots\ x_N\ x_q;\ y_1\ \cdots\ y_N\ 0]$.
"""

from __future__ import annotations

import numpy as np

__all__ = ["haar_rotation", "covariance", "sample_sequences", "beta_and_query",
           "bilinear_predictor_losses", "beta_outer_samples"]


def haar_rotation(D: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random orthogonal D×D matrix (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((D, D)))
    return q * np.sign(np.diag(r))


def covariance(lambdas, rotation: np.ndarray | None = None) -> np.ndarray:
    r"""$\Lambda=U\operatorname{diag}(\lambda)U^\top$ (U = ``rotation``, or the identity)."""
    lam = np.asarray(lambdas, dtype=float)
    if rotation is None:
        return np.diag(lam)
    return (rotation * lam) @ rotation.T


def _sqrtm(A: np.ndarray) -> np.ndarray:
    ev, U = np.linalg.eigh(A)
    return (U * np.sqrt(np.clip(ev, 0, None))) @ U.T


def sample_sequences(P: int, N: int, Lam: np.ndarray, rng: np.random.Generator):
    """Draw ``P`` sequences: tokens ``X`` of shape (P, D+1, N+1) and targets ``y_q`` (P,)."""
    D = Lam.shape[0]
    root = _sqrtm(Lam)
    w = rng.standard_normal((P, D))
    x = rng.standard_normal((P, N + 1, D)) @ root.T
    y = np.einsum("pnd,pd->pn", x, w)
    X = np.empty((P, D + 1, N + 1))
    X[:, :D, :] = np.transpose(x, (0, 2, 1))
    X[:, D, :N] = y[:, :N]
    X[:, D, N] = 0.0
    return X, y[:, N]


def beta_and_query(X: np.ndarray, divisor: float) -> tuple[np.ndarray, np.ndarray]:
    """(β, x_q) of token matrices X (P, D+1, N+1), with β = Σ_n y_n x_n / ``divisor``."""
    D, N = X.shape[1] - 1, X.shape[2] - 1
    beta = np.einsum("pn,pdn->pd", X[:, D, :N], X[:, :D, :N]) / divisor
    return beta, X[:, :D, N]


def _contexts(Lam: np.ndarray, N: int, n: int, rng: np.random.Generator, chunk: int):
    """Yield (slice, w, β) for ``n`` sampled contexts in chunks (β = Σ_n y_n x_n / N)."""
    D = Lam.shape[0]
    root = _sqrtm(Lam)
    for k in range(0, n, chunk):
        m = min(chunk, n - k)
        w = rng.standard_normal((m, D))
        x = rng.standard_normal((m, N, D)) @ root.T
        y = np.einsum("mnd,md->mn", x, w)
        yield slice(k, k + m), w, np.einsum("mn,mnd->md", y, x) / N


def bilinear_predictor_losses(M: np.ndarray, Lam: np.ndarray, N: int, n: int,
                              rng: np.random.Generator, *, chunk: int = 20000,
                              tick=None) -> np.ndarray:
    r"""Per-sequence losses of $\hat y_q=\beta^\top Mx_q$ over ``n`` sampled contexts.

    Rao–Blackwellised over the query: given $(w,x_1..x_N)$ the expected squared error over
    $x_q\sim\mathcal N(0,\Lambda)$ is exactly $(w-M^\top\beta)^\top\Lambda(w-M^\top\beta)$ (same
    mean as sampling $x_q$, smaller variance)."""
    out = np.empty(n)
    for sl, w, beta in _contexts(Lam, N, n, rng, chunk):
        r = w - beta @ M
        out[sl] = np.einsum("md,de,me->m", r, Lam, r)
        if tick is not None:
            tick(sl.stop / n, "Monte Carlo over contexts")
    return out


def beta_outer_samples(Lam: np.ndarray, N: int, n: int, rng: np.random.Generator,
                       *, chunk: int = 20000) -> np.ndarray:
    """Samples of vec(β βᵀ) (n, D²)."""
    D = Lam.shape[0]
    out = np.empty((n, D * D))
    for sl, _, beta in _contexts(Lam, N, n, rng, chunk):
        out[sl] = (beta[:, :, None] * beta[:, None, :]).reshape(len(beta), -1)
    return out
