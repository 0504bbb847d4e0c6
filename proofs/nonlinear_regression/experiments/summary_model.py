r"""The blog summary's architecture, trained by full-batch gradient descent on finite prompts.

The summary defines a one-layer attention model with **every** weight trainable,
:math:`\theta=\{W_Q,W_K,W_V,w,b\}`:

.. math::
    \alpha_j=\operatorname{softmax}_j\big(\langle W_Qz_q,W_Kz_j\rangle\big),\qquad
    h=\sum_j\alpha_jW_Vz_j,\qquad \hat y=w^\top h+b,\qquad
    \mathcal L=\frac1M\sum_{m=1}^M(\hat y^{(m)}-y_q^{(m)})^2 .

Tokens.  The prompt is :math:`\{(x_1,y_1),\dots,(x_N,y_N),x_q\}`; a context token is embedded as
:math:`z_j=(x_j;y_j)\in\mathbb R^{d+1}` and the query as :math:`z_q=(x_q;0)`.  (A value
:math:`W_Vx_j` that never sees the labels could not learn a task from the prompt: the
prediction would be a fixed function of the inputs.)  The attention runs over the :math:`N`
context tokens.  (The summary's formula also sums over the query's own token; with labels
embedded, that token carries label 0 and has the same bilinear score as the query's
same-feature tokens up to a term linear in their labels, so it would cap the relevant attention
below 1 — a different model from the one whose attention the summary says converges to 1.)

Weights.  :math:`W_Q,W_K,W_V\in\mathbb R^{m\times(d+1)}`, :math:`w\in\mathbb R^m`,
:math:`b\in\mathbb R`, initialised like PyTorch's ``nn.Linear`` (the summary's code): entries
uniform on :math:`[-a,a]`, :math:`a=\text{scale}/\sqrt{\text{fan-in}}`.  A zero initialisation
would be a saddle (:math:`\partial\mathcal L/\partial W_Q\propto W_K`).

Gradients (written by hand; a test compares them with finite differences).  With
:math:`A=W_Q^\top W_K`, :math:`u=W_V^\top w`, :math:`\bar z=\sum_j\alpha_jz_j`,
:math:`c_j=u^\top z_j`, :math:`\beta_j=\alpha_j(c_j-\sum_k\alpha_kc_k)` and
:math:`g=2(\hat y-y_q)/M` per prompt:

.. math::
    \hat y=u^\top\bar z+b,\quad
    G_A=\sum_m g\,z_q\Big(\sum_j\beta_jz_j\Big)^{\!\top},\quad
    \nabla_{W_Q}=W_KG_A^\top,\ \nabla_{W_K}=W_QG_A,\quad
    \nabla_{W_V}=w\Big(\sum_mg\,\bar z\Big)^{\!\top},\ \nabla_w=W_V\sum_mg\,\bar z,\
    \nabla_b=\sum_mg .

Runs are vectorised over a leading axis: run ``r`` has its own label scale :math:`L_r`, step
:math:`\eta_r`, initial weights and (optionally) its own prompts.  Nothing here imports the
theory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icltheory.core import NumericalTrouble
from icltheory.dynamics import Trace, run_gd

from .prompts import PromptBatch

__all__ = ["Weights", "init_weights", "stack_prompts", "SummaryGD", "run_summary",
           "scaled_labels", "relevant_attention", "logit_gaps"]


@dataclass
class Weights:
    """Weights of ``R`` runs: ``WQ``, ``WK``, ``WV`` ``(R, m, d+1)``, ``w`` ``(R, m)``, ``b``
    ``(R,)``."""

    WQ: np.ndarray
    WK: np.ndarray
    WV: np.ndarray
    w: np.ndarray
    b: np.ndarray

    NAMES = ("WQ", "WK", "WV", "w", "b")

    def arrays(self) -> list[np.ndarray]:
        return [getattr(self, k) for k in self.NAMES]

    def copy(self) -> "Weights":
        return Weights(*(np.array(a, dtype=float, copy=True) for a in self.arrays()))

    def take(self, idx) -> "Weights":
        """The weights of the runs ``idx`` (an index array or slice)."""
        return Weights(*(np.array(a[idx], dtype=float) for a in self.arrays()))

    def flat(self) -> np.ndarray:
        """All weights of every run, ``(R, n_params)``."""
        R = self.b.shape[0]
        return np.concatenate([a.reshape(R, -1) for a in self.arrays()], axis=1)

    def with_flat(self, v: np.ndarray) -> "Weights":
        """Weights shaped like these from a flat ``(R, n_params)`` array."""
        out, k = [], 0
        for a in self.arrays():
            n = int(np.prod(a.shape[1:], dtype=int))
            out.append(np.array(v[:, k:k + n].reshape(a.shape), dtype=float))
            k += n
        return Weights(*out)


def init_weights(rng: np.random.Generator, R: int, p: int, m: int, scale: float) -> Weights:
    """PyTorch ``nn.Linear``-style initial weights for ``R`` runs: token dimension ``p`` (=
    d + 1), width ``m``; entries uniform on ±scale/√fan-in (fan-in p for W_Q, W_K, W_V; m for
    w and b)."""
    a, c = scale / np.sqrt(p), scale / np.sqrt(m)
    return Weights(WQ=rng.uniform(-a, a, (R, m, p)), WK=rng.uniform(-a, a, (R, m, p)),
                   WV=rng.uniform(-a, a, (R, m, p)), w=rng.uniform(-c, c, (R, m)),
                   b=rng.uniform(-c, c, (R,)))


def scaled_labels(g: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Labels of the tasks f = L·g, one scale per run: ``g`` ``(Rx, M, …)`` (Rx ∈ {1, R}),
    ``L`` ``(R,)``."""
    L = np.asarray(L, dtype=float)
    return L.reshape((-1,) + (1,) * (g.ndim - 1)) * g


def stack_prompts(batches: list[PromptBatch]) -> dict:
    """Prompt arrays with a leading run axis (one batch per run, or one shared batch)."""
    return {"X": np.stack([b.X for b in batches]), "xq": np.stack([b.xq for b in batches]),
            "g": np.stack([b.g for b in batches]), "gq": np.stack([b.gq for b in batches]),
            "same": np.stack([b.same for b in batches])}


def relevant_attention(a: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Each prompt's attention mass on the context tokens of the query's feature."""
    return np.sum(a * same, axis=-1)


def logit_gaps(s: np.ndarray, same: np.ndarray) -> np.ndarray:
    """s⁺ − s⁻ per prompt: the mean score of the query's same-feature tokens minus the mean
    score of the other tokens (``nan`` where either group is empty)."""
    n_pos = same.sum(axis=-1)
    n_neg = same.shape[-1] - n_pos
    with np.errstate(invalid="ignore", divide="ignore"):
        sp = np.sum(s * same, axis=-1) / n_pos
        sn = np.sum(s * (1.0 - same), axis=-1) / n_neg
    return np.where((n_pos > 0) & (n_neg > 0), sp - sn, np.nan)


class SummaryGD:
    """State and step map of the summary's model for ``R`` runs.

    ``prompts``: arrays from :func:`stack_prompts` with a leading axis of 1 (shared by every
    run) or ``R``; ``L`` and ``eta`` per run (broadcast); ``weights``: the initial weights.
    Each run's tokens are held as one array ``Z`` ``(R, M, N, d+1)`` (inputs and labels), the
    queries as ``zq`` ``(R, M, d+1)`` with a zero label slot."""

    def __init__(self, prompts: dict, L, eta, weights: Weights):
        self.Wt = weights.copy()
        R = self.Wt.b.shape[0]
        self.R = R
        L = np.broadcast_to(np.asarray(L, dtype=float), (R,))
        self.eta = np.broadcast_to(np.asarray(eta, dtype=float), (R,)).copy()
        M, N, d = prompts["X"].shape[1:]
        self.M, self.N, self.d = M, N, d
        self.Z = np.empty((R, M, N, d + 1))
        self.Z[..., :d] = prompts["X"]
        self.Z[..., d] = scaled_labels(prompts["g"], L)
        self.zq = np.zeros((R, M, d + 1))
        self.zq[..., :d] = prompts["xq"]
        self.yq = np.array(np.broadcast_to(scaled_labels(prompts["gq"], L), (R, M)))
        self.same = np.array(np.broadcast_to(prompts["same"], (R, M, N)))
        self.has_relevant = self.same.sum(axis=-1) > 0
        self.n_relevant = np.maximum(self.has_relevant.sum(axis=-1), 1)
        self._refresh()

    # -- forward ---------------------------------------------------------------------------
    def scores(self) -> np.ndarray:
        """⟨W_Q z_q, W_K z_j⟩ for every context token ``(R, M, N)``."""
        W = self.Wt
        A = np.swapaxes(W.WQ, 1, 2) @ W.WK                      # (R, p, p)
        r = self.zq @ A                                         # (R, M, p): z_qᵀA
        return (self.Z @ r[..., None])[..., 0]

    def _refresh(self) -> None:
        W = self.Wt
        s = self.scores()
        self.s = s
        a = np.exp(s - s.max(axis=-1, keepdims=True))
        a /= a.sum(axis=-1, keepdims=True)
        self.a = a
        self.zbar = (a[..., None, :] @ self.Z)[..., 0, :]       # (R, M, p)
        self.u = (np.swapaxes(W.WV, 1, 2) @ W.w[..., None])     # (R, p, 1) = W_Vᵀ w
        self.ucore = (self.zbar @ self.u)[..., 0]               # (R, M) = uᵀ z̄
        self.yhat = self.ucore + W.b[:, None]
        self.err = self.yhat - self.yq

    # -- backward --------------------------------------------------------------------------
    def gradient(self) -> Weights:
        """∂ℒ/∂θ at the current weights, for every run (see the module docstring)."""
        W, R = self.Wt, self.R
        g = (2.0 / self.M) * self.err                                 # (R, M)
        c = (self.Z.reshape(R, -1, self.d + 1) @ self.u).reshape(self.a.shape)  # uᵀ z_j
        beta = self.a * (c - self.ucore[..., None])                   # (R, M, N)
        zb = (beta[..., None, :] @ self.Z)[..., 0, :]                 # (R, M, p): Σ_j β_j z_j
        GA = np.swapaxes(g[..., None] * self.zq, 1, 2) @ zb           # (R, p, p)
        ub = (g[:, None, :] @ self.zbar)[:, 0, :]                     # (R, p): Σ_m g z̄
        return Weights(WQ=W.WK @ np.swapaxes(GA, 1, 2), WK=W.WQ @ GA,
                       WV=W.w[..., None] * ub[:, None, :], w=(W.WV @ ub[..., None])[..., 0],
                       b=g.sum(axis=-1))

    def set_weights(self, weights: Weights) -> None:
        self.Wt = weights.copy()
        self._refresh()

    def step(self, k: int) -> None:
        grad = self.gradient()
        for name in Weights.NAMES:
            a = getattr(self.Wt, name)
            e = self.eta.reshape((-1,) + (1,) * (a.ndim - 1))
            a -= e * getattr(grad, name)
        self._refresh()

    # -- observations ----------------------------------------------------------------------
    def loss(self) -> np.ndarray:
        """The summary's loss (1/M) Σ (ŷ − y)² per run."""
        return np.mean(self.err * self.err, axis=-1)

    def relevant(self) -> np.ndarray:
        """Each prompt's attention on the context tokens of the query's feature ``(R, M)``."""
        return relevant_attention(self.a, self.same)

    def observe(self) -> dict:
        pa = self.relevant()
        has = self.has_relevant
        return {"attn": np.sum(np.where(has, pa, 0.0), axis=-1) / self.n_relevant,
                "attn_min": np.min(np.where(has, pa, np.inf), axis=-1),
                "loss": self.loss()}

    def probe(self) -> dict:
        """Per prompt (prompts with a token of the query's feature and one of another): the
        relevant attention α and the logit gap s⁺ − s⁻ ``(R, M)`` (``nan`` elsewhere)."""
        gap = logit_gaps(self.s, self.same)
        return {"alpha": np.where(np.isfinite(gap), self.relevant(), np.nan), "gap": gap}


def run_summary(prompts: dict, L, eta, weights: Weights, max_steps: int, *, stop=None,
                check_every: int = 20, tick=None, record_every: int | str = "geometric") -> Trace:
    """Full-batch GD on every weight of the summary's model from ``weights``; ``stop(trace)``
    may end it earlier.  Non-finite numbers raise :class:`NumericalTrouble`; the final weights
    are in ``extra["weights"]``."""
    sim = SummaryGD(prompts, L, eta, weights)
    tr = run_gd(sim.step, sim.observe, max_steps=max_steps, record_every=record_every,
                per_decade=2000, stop=stop, check_every=check_every, blowup_key=None, tick=tick,
                what="full-batch gradient descent on the summary's model")
    if tr.stopped == "diverged" or not all(np.all(np.isfinite(a)) for a in sim.Wt.arrays()):
        raise NumericalTrouble(f"the summary's model produced non-finite numbers by step "
                               f"{tr.n_steps}")
    tr.extra["weights"] = sim.Wt.copy()
    return tr


def sharpness(sim: SummaryGD, iters: int = 40, h: float = 1e-5,
              rng: np.random.Generator | None = None) -> np.ndarray:
    """The largest Hessian eigenvalue of the loss at the current weights, per run: power
    iteration on Hessian–vector products from central differences of the gradient (step ``h``
    along a unit direction).  GD with step η is stable only while η·sharpness < 2."""
    W = sim.Wt.copy()
    f0 = W.flat()
    rng = rng or np.random.default_rng(0)
    v = rng.standard_normal(f0.shape)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    lam = np.zeros(f0.shape[0])
    for _ in range(iters):
        sim.set_weights(W.with_flat(f0 + h * v))
        gp = sim.gradient().flat()
        sim.set_weights(W.with_flat(f0 - h * v))
        gm = sim.gradient().flat()
        Hv = (gp - gm) / (2 * h)
        lam = np.sum(Hv * v, axis=1)
        v = Hv / np.maximum(np.linalg.norm(Hv, axis=1, keepdims=True), 1e-300)
    sim.set_weights(W)
    return lam
