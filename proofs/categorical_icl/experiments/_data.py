r"""Data: covariates, tasks, labels, prompts, random orthogonal maps and step matrices.

Classes :math:`c=1..C`, embeddings :math:`W_e\in\mathbb R^{d'\times C}`, latent
:math:`f:\mathbb R^d\to\mathbb R^{d'}`, :math:`p(y=c\mid x,f)=\operatorname{softmax}_c(W_e^\top f(x))`.
A prompt holds ``N`` context pairs and a query (position ``N``, the last one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import softmax

__all__ = ["X_DISTS", "sample_x", "anisotropic_std", "sample_labels", "linear_task", "rbf_bump_task",
           "Dataset", "synthetic_dataset", "PromptBatch", "draw_linear_task_prompts", "haar",
           "signed_perm", "random_gammas", "min_sqdist", "embeddings"]

X_DISTS = ("cube", "gaussian", "sphere", "anisotropic")


def anisotropic_std(d: int) -> np.ndarray:
    """Per-coordinate standard deviations of the anisotropic law: geometric from 2 to 1/2."""
    return np.geomspace(2.0, 0.5, d) if d > 1 else np.array([2.0])


def sample_x(rng: np.random.Generator, dist: str, shape: tuple[int, ...], d: int,
             *, unit_variance: bool = False) -> np.ndarray:
    """Covariates of shape ``shape + (d,)``.

    ``cube``: :math:`U[-1,1]^d` (or :math:`U[-\\sqrt3,\\sqrt3]^d` with ``unit_variance``);
    ``gaussian``: :math:`N(0,I)`; ``sphere``: uniform on the unit sphere;
    ``anisotropic``: :math:`N(0,\\operatorname{diag}(\\sigma^2))` with :func:`anisotropic_std`.
    """
    if dist == "cube":
        half = np.sqrt(3.0) if unit_variance else 1.0
        return rng.uniform(-half, half, size=shape + (d,))
    g = rng.standard_normal(shape + (d,))
    if dist == "gaussian":
        return g
    if dist == "sphere":
        return g / np.linalg.norm(g, axis=-1, keepdims=True)
    if dist == "anisotropic":
        return g * anisotropic_std(d)
    raise ValueError(f"unknown x_dist {dist!r}; valid: {', '.join(X_DISTS)}")


def sample_labels(rng: np.random.Generator, logits: np.ndarray) -> np.ndarray:
    """Categorical draws from ``softmax(logits)`` by inverse CDF (common random numbers)."""
    p = softmax(logits, -1)
    u = rng.uniform(size=logits.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, -1) < u).sum(-1), logits.shape[-1] - 1)


def linear_task(rng: np.random.Generator, B: int, d: int, dp: int, scale: float) -> np.ndarray:
    r"""Task matrices :math:`A\sim N(0,\tau^2/d)^{d'\times d}` (rotation-invariant prior), shape ``(B,d',d)``."""
    return rng.standard_normal((B, dp, d)) * (scale / np.sqrt(d))


def rbf_bump_task(rng: np.random.Generator, X: np.ndarray, W_e: np.ndarray, *, bumps: int = 5,
                  amplitude: float = 3.0) -> np.ndarray:
    r"""The paper's synthetic generator: logits :math:`W_e^\top f(x)` for every position.

    Per prompt choose ``bumps`` distinct classes, centres :math:`\mu_j\sim N(0,I_d)`, widths
    :math:`\sigma_j^2=-\delta_j/\ln 0.1` (:math:`\delta_j` the squared distance to the nearest
    other centre), :math:`f(x)=\lambda\sum_j e^{-\lVert x-\mu_j\rVert^2/\sigma_j^2}w_{e,c_j}`.
    """
    B, T, d = X.shape
    C = W_e.shape[1]
    m = min(bumps, C)
    cls = np.argsort(rng.uniform(size=(B, C)), axis=1)[:, :m]
    mu = rng.standard_normal((B, m, d))
    dmu = np.sum((mu[:, :, None] - mu[:, None]) ** 2, -1)
    dmu[:, np.arange(m), np.arange(m)] = np.inf
    near = dmu.min(-1) if m > 1 else np.ones((B, 1))
    sig2 = -near / np.log(0.1)
    dist = np.sum((X[:, :, None, :] - mu[:, None]) ** 2, -1)  # (B,T,m)
    with np.errstate(under="ignore"):
        w = amplitude * np.exp(-dist / sig2[:, None, :])
    f = np.einsum("btm,bmd->btd", w, W_e.T[cls])
    return f @ W_e


@dataclass
class PromptBatch:
    """Antithetic pairs: rows ``[:n]`` use ``X``, rows ``[n:]`` use ``-X`` with the same
    task and the same label uniforms (common random numbers)."""

    X: np.ndarray
    labels: np.ndarray
    target: np.ndarray

    @property
    def pairs(self) -> int:
        return self.X.shape[0] // 2

    def chunks(self, size: int):
        n = self.pairs
        for s in range(0, n, size):
            e = min(n, s + size)
            idx = np.r_[s:e, n + s:n + e]
            yield PromptBatch(self.X[idx], self.labels[idx], self.target[idx])


def draw_linear_task_prompts(rng: np.random.Generator, n: int, *, d: int, dp: int, N: int,
                             W_e: np.ndarray, x_dist: str, task_scale: float) -> PromptBatch:
    r"""``n`` antithetic pairs from the rotation-invariant prior :math:`f(x)=Ax`,
    :math:`A_{ab}\sim N(0,\tau^2/d)`; query target = the exact label distribution."""
    A = linear_task(rng, n, d, dp, task_scale)
    X = sample_x(rng, x_dist, (n, N + 1), d, unit_variance=True)
    u = rng.uniform(size=(n, N, 1))
    Xs = np.concatenate([X, -X])
    As = np.concatenate([A, A])
    us = np.concatenate([u, u])
    logits = np.einsum("btd,bed,ec->btc", Xs, As, W_e)
    p = softmax(logits[:, :N], -1)
    labels = np.minimum((np.cumsum(p, -1) < us).sum(-1), W_e.shape[1] - 1)
    return PromptBatch(Xs, labels, softmax(logits[:, N], -1))


@dataclass
class Dataset:
    X: np.ndarray  # (B, N+1, d)
    labels: np.ndarray  # (B, N)
    y_query: np.ndarray  # (B,) sampled query label
    p_query: np.ndarray  # (B, C) true query label distribution

    def __len__(self):
        return self.X.shape[0]

    def take(self, idx) -> "Dataset":
        return Dataset(self.X[idx], self.labels[idx], self.y_query[idx], self.p_query[idx])


def synthetic_dataset(rng: np.random.Generator, B: int, *, d: int, N: int, W_true: np.ndarray,
                      amplitude: float, x_dist: str = "cube") -> Dataset:
    """Prompts from :func:`rbf_bump_task` (the paper's synthetic generator)."""
    X = sample_x(rng, x_dist, (B, N + 1), d)
    logits = rbf_bump_task(rng, X, W_true, amplitude=amplitude)
    labels = sample_labels(rng, logits)
    return Dataset(X, labels[:, :N], labels[:, N], softmax(logits[:, N], -1))



def haar(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-distributed orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    Z = rng.standard_normal((d, d))
    Q, R = np.linalg.qr(Z)
    return Q * np.sign(np.diag(R))


def signed_perm(rng: np.random.Generator, d: int) -> np.ndarray:
    """A uniformly random signed permutation matrix."""
    P = np.eye(d)[rng.permutation(d)]
    return P * rng.choice([-1.0, 1.0], size=d)[:, None]


def random_gammas(rng: np.random.Generator, K: int, dp: int, form: str) -> list[np.ndarray]:
    """Per-block step matrices Γ_k (``scalar``, ``diag`` or ``full``)."""
    out = []
    for _ in range(K):
        if form == "scalar":
            out.append(rng.uniform(0.3, 1.2) * np.eye(dp))
        elif form == "diag":
            out.append(np.diag(rng.uniform(0.3, 1.2, dp)))
        else:
            out.append(np.diag(rng.uniform(0.3, 1.2, dp)) + 0.3 * rng.standard_normal((dp, dp)) / np.sqrt(dp))
    return out


def embeddings(rng: np.random.Generator, dp: int, C: int, *, centred: bool = False,
               shift: float = 0.0) -> np.ndarray:
    """Embedding columns ``W_e`` (``d' × C``), standard normal; ``centred``: mean column removed
    (w̄_e = 0); ``shift`` added to every entry."""
    W = rng.standard_normal((dp, C)) + shift
    return W - W.mean(1, keepdims=True) if centred else W


def min_sqdist(X: np.ndarray) -> float:
    """The smallest squared distance between two distinct points of any prompt (``X``: (B, n, d))."""
    G = np.sum((X[:, :, None] - X[:, None]) ** 2, -1)
    n = X.shape[1]
    G[:, np.arange(n), np.arange(n)] = np.inf
    return float(G.min())
