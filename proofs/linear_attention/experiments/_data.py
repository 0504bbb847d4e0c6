r"""Sampling the in-context regression data (numpy only).

A task $w\sim\mathcal N(0,I_D)$ per sequence, inputs $x_n,x_q\sim\mathcal N(0,\Lambda)$, labels
$y_n=w^\top x_n$; the tokens are the columns of the $(D+1)\times(N+1)$ matrix
$X=[x_1\ \cdots\ x_N\ x_q;\ y_1\ \cdots\ y_N\ 0]$.
"""

from __future__ import annotations

import numpy as np

__all__ = ["haar_rotation", "covariance", "sample_sequences", "sample_sequences_and_tasks", "sequence_chunks",
           "beta_and_query", "bilinear_predictor_losses", "beta_outer_samples",
           "query_averaged_losses"]


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
    X, y, _ = sample_sequences_and_tasks(P, N, Lam, rng)
    return X, y


def sample_sequences_and_tasks(P: int, N: int, Lam: np.ndarray, rng: np.random.Generator):
    """:func:`sample_sequences` (the same draws from the same generator) and each sequence's
    task vector w (P, D)."""
    D = Lam.shape[0]
    w = rng.standard_normal((P, D))
    X, y_q = _tokens(rng, _sqrtm(Lam), w, N, np.empty((P, D + 1, N + 1)))
    return X, y_q, w


def sequence_chunks(P: int, N: int, Lam: np.ndarray, rng: np.random.Generator, chunk: int):
    """:func:`sample_sequences` in consecutive chunks of ``chunk`` sequences: yields (X, y_q)
    for each, the same numbers from the same generator, without holding all ``P`` sequences
    (the tasks are drawn first, then the inputs chunk by chunk, in the order the one-piece draw
    takes them).  The next chunk overwrites the tokens' buffer: copy what is kept.  Fresh memory
    is slow to touch on some virtual machines (≈ 5 µs a page), so one reused chunk buffer is
    faster than an array of every sequence."""
    D = Lam.shape[0]
    root = _sqrtm(Lam)
    w = rng.standard_normal((P, D))
    X = np.empty((min(chunk, P), D + 1, N + 1))
    for k in range(0, P, chunk):
        m = min(chunk, P - k)
        yield _tokens(rng, root, w[k:k + m], N, X[:m])


def _tokens(rng: np.random.Generator, root: np.ndarray, w: np.ndarray, N: int, out: np.ndarray):
    """Draw the inputs of ``len(w)`` sequences with tasks ``w`` (x = Λ^{1/2} z) and write their
    tokens into ``out`` (len(w), D+1, N+1); returns (``out``, y_q)."""
    m, D = w.shape
    # one (m(N+1), D) × (D, D) product rather than m stacked ones (≈ 2× faster)
    x = (rng.standard_normal((m, N + 1, D)).reshape(-1, D) @ root.T).reshape(m, N + 1, D)
    y = np.einsum("pnd,pd->pn", x, w)
    out[:, :D, :] = np.transpose(x, (0, 2, 1))
    out[:, D, :N] = y[:, :N]
    out[:, D, N] = 0.0
    return out, y[:, N]


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


def query_averaged_losses(X: np.ndarray, w: np.ndarray, theta: np.ndarray,
                          Lam: np.ndarray) -> np.ndarray:
    r"""Per-sequence squared error of the whole model $\hat y_q=\Theta\cdot Z(X)$ (features
    $Z_{abc}=S_{ab}x_{q,c}/N$, S summed over all N + 1 tokens) averaged exactly over the query
    $x_q\sim\mathcal N(0,\Lambda)$ given the context and the task w: the Rao–Blackwellised
    version of $(w^	op x_q-\hat y_q)^2$ (same mean over sequences, the query's share of the
    variance removed).

    With $S=C+	ilde x	ilde x^	op$ ($	ilde x=(x_q,0)$; C the N context tokens) the prediction
    is $\ell^	op x_q+T(x_q,x_q,x_q)$, $\ell_c=\sum_{ab}\Theta_{abc}C_{ab}/N$ and
    $T_{abc}=\Theta_{abc}/N$ (a, b inputs).  With $u=w-\ell$ and Isserlis' theorem,
    $\mathbb E_{x_q}[(u^	op x_q-T(x_q))^2]=u^	op\Lambda u-2u^	op m+c_0$,
    $m_d=\sum T_{abc}(\Lambda_{da}\Lambda_{bc}+\Lambda_{db}\Lambda_{ac}+\Lambda_{dc}\Lambda_{ab})$,
    and in whitened coordinates ($T'=T(R\cdot,R\cdot,R\cdot)$, $R=\Lambda^{1/2}$, $S'$ its
    symmetrisation, $v_a=\sum_bS'_{abb}$) $c_0=6\lVert S'
Vert^2+9\lVert v
Vert^2$."""
    P, D1, N1 = X.shape
    D, N = D1 - 1, N1 - 1
    th = np.asarray(theta, dtype=float).reshape(D1, D1, D)
    ctx = X[:, :, :N]
    C = np.einsum("pan,pbn->pab", ctx, ctx)
    ell = np.einsum("abc,pab->pc", th, C) / N
    T = th[:D, :D, :] / N
    m = (np.einsum("abc,da,bc->d", T, Lam, Lam) + np.einsum("abc,db,ac->d", T, Lam, Lam)
         + np.einsum("abc,dc,ab->d", T, Lam, Lam))
    R = _sqrtm(Lam)
    Tw = np.einsum("ijk,ia,jb,kc->abc", T, R, R, R)
    Sw = (Tw + Tw.transpose(0, 2, 1) + Tw.transpose(1, 0, 2) + Tw.transpose(1, 2, 0)
          + Tw.transpose(2, 0, 1) + Tw.transpose(2, 1, 0)) / 6
    v = np.einsum("abb->a", Sw)
    c0 = 6 * float(np.sum(Sw * Sw)) + 9 * float(v @ v)
    u = w - ell
    return np.einsum("pd,de,pe->p", u, Lam, u) - 2 * (u @ m) + c0
