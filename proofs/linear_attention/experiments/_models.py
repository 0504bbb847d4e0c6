r"""Linear-attention models for in-context regression, in the paper's form (with the $1/N$).

* merged key-query  $\mathrm{ATTN}_M(X)=X+\sum_i\frac1N W^V_iXX^\top W^{KQ}_iX$;
* separate key/query $\mathrm{ATTN}_S(X)=X+\sum_i\frac1N W^V_iXX^\top (W^K_i)^\top W^Q_iX$.

**Exact quadratic-feature form.**  With $S=XX^\top$ and $\tilde x_q=(x_q,0)$ the prediction
(bottom-right output entry) is $\hat y_q=\langle\Theta,Z\rangle$,
$Z_{abc}=\tfrac1NS_{ab}x_{q,c}$, $\Theta_{abc}=\sum_i(W^V_i)_{D,a}(W^{KQ}_i)_{bc}$ ($a,b\le D$,
$c<D$; for ATTN_S replace $W^{KQ}_i$ by $(W^K_i)^\top W^Q_i$).  Every other weight has zero
gradient and never moves, so carrying only these entries is exact.  The MSE over $P$
sequences is the quadratic $\tfrac12\Theta^\top C\Theta-g^\top\Theta+\tfrac12s$
(:class:`QuadraticMoments`), so full-batch GD costs $O(F^2)$ per step, $F=(D+1)^2D$,
independent of $P$ and $N$ (tests compare with the naive forward pass).

The *population* loss of the relevant block (value label→label entry, key/query on inputs)
has features $\operatorname{vec}(\beta x_q^\top)$, $C=\mathbb E[\beta\beta^\top]\otimes\Lambda$,
$g=\operatorname{vec}(\Lambda^2)$, $s=\operatorname{tr}\Lambda$ (moments from :mod:`._population`).

The parametrisations' ``theta`` and ``pullback`` (hand-written gradients) take an array
namespace ``xp`` (:mod:`icltheory.backends`), so one kernel runs on numpy or torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icltheory.backends import NumpyBackend

from . import _population as pop
from ._data import sequence_chunks

__all__ = ["attn_merged_predict", "attn_separate_predict", "query_features", "label_block", "QuadraticMoments",
           "population_moments", "empirical_moments", "sampled_moments", "moments_of_chunks", "MergedHeads", "SeparateHeads", "NUMPY"]

NUMPY = NumpyBackend()


def attn_merged_predict(X: np.ndarray, WV: np.ndarray, WKQ: np.ndarray) -> np.ndarray:
    """Naive ATTN_M forward pass (full matrices); the bottom-right output entries."""
    D1, N1 = X.shape[1], X.shape[2]
    S = np.einsum("pan,pbn->pab", X, X)
    out = X[:, D1 - 1, N1 - 1].copy()
    for i in range(WV.shape[0]):
        out += np.einsum("b,pbc,cd,pd->p", WV[i][D1 - 1], S, WKQ[i], X[:, :, N1 - 1]) / (N1 - 1)
    return out


def attn_separate_predict(X: np.ndarray, WV: np.ndarray, WK: np.ndarray, WQ: np.ndarray) -> np.ndarray:
    """Naive ATTN_S forward pass; ``WK, WQ`` of shape (H, R, D+1)."""
    return attn_merged_predict(X, WV, np.einsum("hra,hrb->hab", WK, WQ))


def query_features(X: np.ndarray) -> np.ndarray:
    """The cubic features $Z_{abc}=S_{ab}x_{q,c}/N$, flattened row-major: (P, (D+1)²D)."""
    P, D1, N1 = X.shape
    S = np.einsum("pan,pbn->pab", X, X)
    xq = X[:, : D1 - 1, N1 - 1]
    return (S[:, :, :, None] * xq[:, None, None, :]).reshape(P, -1) / (N1 - 1)


def label_block(theta: np.ndarray, D: int) -> np.ndarray:
    r"""The whole model's coefficient on the features $(\sum_n y_nx_{n,a})\,x_{q,b}/N$, the only
    ones correlated with the target: $M_{ab}=\Theta_{D,a,b}+\Theta_{a,D,b}$ — S is symmetric,
    so the value-label × key-input entry and the value-input × key-label entry multiply the
    same feature (a model can learn the task through either).  ``theta`` (..., (D+1)²D) →
    (..., D, D)."""
    th = np.asarray(theta).reshape(np.shape(theta)[:-1] + (D + 1, D + 1, D))
    return th[..., D, :D, :] + th[..., :D, D, :]


@dataclass(frozen=True)
class QuadraticMoments:
    r"""$L_{1/2}(\Theta)=\tfrac12\Theta^\top C\Theta-g^\top\Theta+\tfrac12 s$ (plain MSE $=2L_{1/2}$)
    for $\Theta\in\mathbb R^{A\times B\times D}$: (1, D, D) for the relevant block, (D+1, D+1, D)
    for the whole model."""

    C: np.ndarray
    g: np.ndarray
    s: float
    A: int
    B: int
    D: int

    def on(self, xp=NUMPY) -> tuple:
        """(C, g) as arrays of the namespace ``xp`` (convert once, before a loop)."""
        return xp.asarray(self.C), xp.asarray(self.g)

    def mse(self, theta, xp=NUMPY, Cg: tuple | None = None):
        """Plain MSE for Θ of shape (S, F) (``Cg``: the converted moments, see :meth:`on`)."""
        C, g = Cg if Cg is not None else self.on(xp)
        return xp.einsum("si,ij,sj->s", theta, C, theta) - 2.0 * xp.einsum("si,i->s", theta, g) + self.s

    def mse_change(self, theta, theta2) -> np.ndarray:
        """mse(Θ₂) − mse(Θ) per row, as 2Δ·(CΘ − g) + ΔᵀCΔ (Δ = Θ₂ − Θ): the change itself,
        not the difference of two O(L) floats, which rounding swamps when the change is small
        against L (a direction with a small eigenvalue, a second-order move from a saddle)."""
        d = np.asarray(theta2) - np.asarray(theta)
        return 2.0 * np.einsum("si,si->s", d, self.grad_half(theta)) + np.einsum("si,ij,sj->s", d, self.C, d)

    def grad_half(self, theta, xp=NUMPY, Cg: tuple | None = None):
        r"""$\partial L_{1/2}/\partial\Theta=C\Theta-g$."""
        C, g = Cg if Cg is not None else self.on(xp)
        return xp.einsum("si,ij->sj", theta, C) - g


def population_moments(lam, N: int) -> QuadraticMoments:
    """Exact population moments of the relevant block (Λ = diag(lam))."""
    lam = np.asarray(lam, dtype=float)
    D = lam.size
    B = pop.beta_second_moment(lam, N)
    return QuadraticMoments(C=np.kron(B, np.diag(lam)), g=np.diag(lam**2).reshape(-1),
                            s=float(lam.sum()), A=1, B=D, D=D)


def empirical_moments(X: np.ndarray, y: np.ndarray, *, chunk: int = 4096, tick=None, xp=NUMPY) -> QuadraticMoments:
    """Moments of the whole model's features over the given sequences (chunked, O(P F²); the
    products run on the array backend ``xp``, the result is numpy)."""
    P = X.shape[0]
    return moments_of_chunks(((X[k:k + chunk], y[k:k + chunk]) for k in range(0, P, chunk)), P,
                              tick=tick, xp=xp)


def sampled_moments(P: int, N: int, Lam: np.ndarray, rng: np.random.Generator, *, chunk: int = 4096,
                    tick=None, xp=NUMPY) -> QuadraticMoments:
    """:func:`empirical_moments` of ``sample_sequences(P, N, Lam, rng)`` (the same bytes), the
    sequences drawn chunk by chunk (:func:`._data.sequence_chunks`) and never held at once."""
    return moments_of_chunks(sequence_chunks(P, N, Lam, rng, chunk), P, tick=tick, xp=xp)


def moments_of_chunks(chunks, P: int, *, tick=None, xp=NUMPY) -> QuadraticMoments:
    """:func:`empirical_moments` of ``P`` sequences given as consecutive chunks (X, y_q)."""
    C = g = None
    y_q = np.empty(P)
    done = 0
    for Xk, yk in chunks:
        D1 = Xk.shape[1]
        if C is None:
            F = D1 * D1 * (D1 - 1)
            C, g = xp.zeros((F, F)), xp.zeros((F,))
        Z = xp.asarray(query_features(Xk))
        C += xp.swapaxes(Z, 0, 1) @ Z
        g += xp.swapaxes(Z, 0, 1) @ xp.asarray(yk)
        y_q[done:done + len(yk)] = yk
        done += len(yk)
        if tick is not None:
            tick(done / P, "moments of the training set")
    if C is None or done != P:
        raise ValueError(f"moments_of_chunks: the chunks held {done} sequences, not P = {P}")
    return QuadraticMoments(C=np.array(xp.to_numpy(C)) / P, g=np.array(xp.to_numpy(g)) / P,
                            s=float(np.mean(y_q * y_q)), A=D1, B=D1, D=D1 - 1)


@dataclass(frozen=True)
class MergedHeads:
    r"""$H$ merged heads, $\Theta=\sum_ir_i\otimes U_i$ — on the relevant block the two-layer
    network $w_2^\top W_1z$.  Parameters ``r`` (S, H, A), ``U`` (S, H, B, D) (S: seeds)."""

    H: int

    def theta(self, p: dict, xp=NUMPY):
        S = p["r"].shape[0]
        return xp.einsum("sha,shbd->sabd", p["r"], p["U"]).reshape(S, -1)

    def pullback(self, p: dict, G, m: QuadraticMoments, xp=NUMPY) -> dict:
        Gt = G.reshape(G.shape[0], m.A, m.B, m.D)
        return {"r": xp.einsum("sabd,shbd->sha", Gt, p["U"]),
                "U": xp.einsum("sabd,sha->shbd", Gt, p["r"])}


@dataclass(frozen=True)
class SeparateHeads:
    r"""$H$ heads of rank $R$, $\Theta=\sum_ir_i\otimes K_i^\top Q_i$.  Parameters ``r`` (S,H,A),
    ``K`` (S,H,R,B), ``Q`` (S,H,R,D)."""

    H: int
    R: int

    def theta(self, p: dict, xp=NUMPY):
        S = p["r"].shape[0]
        KQ = xp.einsum("shrb,shrd->shbd", p["K"], p["Q"])
        return xp.einsum("sha,shbd->sabd", p["r"], KQ).reshape(S, -1)

    def pullback(self, p: dict, G, m: QuadraticMoments, xp=NUMPY) -> dict:
        Gt = G.reshape(G.shape[0], m.A, m.B, m.D)
        KQ = xp.einsum("shrb,shrd->shbd", p["K"], p["Q"])
        Gr = xp.einsum("sabd,sha->shbd", Gt, p["r"])  # ∂/∂(K_iᵀQ_i)
        return {"r": xp.einsum("sabd,shbd->sha", Gt, KQ),
                "K": xp.einsum("shbd,shrd->shrb", Gr, p["Q"]),
                "Q": xp.einsum("shbd,shrb->shrd", Gr, p["K"])}
