r"""Model B: finite prompts, closer to the paper.  ``M`` fixed prompts of ``N`` noisy context
tokens :math:`x=v_k+\sigma\xi/\sqrt d` (feature :math:`k` uniform) and a query, labels
:math:`y=L\,g(x)` of one fresh task per prompt; full-batch GD on the merged key–query matrix
:math:`Q` from 0 (value path fixed, no residual):

.. math::
    \hat y_q=\sum_i y_i\operatorname{softmax}_i(x_i^\top Qx_q),\qquad
    \frac{\partial\ell}{\partial Q}=\frac1M\sum_m(\hat y-y_q)\sum_ia_i(y_i-\hat y)\,x_ix_q^\top .

Runs are vectorised over a leading axis (one label scale and step per run); the loop is
:func:`icltheory.dynamics.run_gd`.  The GD kernel (:class:`PromptGD`) is written once against
an array namespace ``xp`` (:mod:`icltheory.backends`): numpy by default, torch (float64, CUDA
when present) for large prompt sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from icltheory.backends import NumpyBackend
from icltheory.core import NumericalTrouble
from icltheory.dynamics import Trace, run_gd

from .tasks import TASKS, unit_rows

__all__ = ["PromptBatch", "same_feature_mask", "make_prompts", "attention", "scaled_labels", "PromptGD",
           "run_prompts", "first_step_attention_rate", "per_prompt_attention"]

NUMPY = NumpyBackend()


@dataclass
class PromptBatch:
    """``M`` prompts: context ``X`` ``(M,N,d)``, query ``xq`` ``(M,d)``, unscaled labels ``g``
    ``(M,N)`` and ``gq`` ``(M,)``, and ``same[m,i]`` = token ``i`` has the query's feature."""

    X: np.ndarray
    xq: np.ndarray
    g: np.ndarray
    gq: np.ndarray
    same: np.ndarray
    V: np.ndarray | None = None


def _task_values(task: str, P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One random task per prompt, evaluated on the points ``P`` of shape ``(M, n, d)``."""
    M, _, d = P.shape
    W = unit_rows(rng, M, d)
    proj = np.einsum("mnd,md->mn", P, W)
    if task == "linear":
        return proj
    if task == "sin":
        phi = rng.uniform(0.0, 2.0 * np.pi, size=(M, 1))
        return np.sin(3.0 * proj + phi) / 3.0
    if task == "relu":
        b = rng.uniform(-0.5, 0.5, size=(M, 1))
        return np.maximum(proj + b, 0.0)
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")


def same_feature_mask(feats: np.ndarray) -> np.ndarray:
    """``mask[m, i]`` = context token ``i`` of prompt ``m`` has the query's feature (features of
    shape ``(M, N + 1)``, the query last)."""
    return (feats[:, :-1] == feats[:, -1:]).astype(float)


def make_prompts(V: np.ndarray, M: int, N: int, noise: float, task: str,
                 rng: np.random.Generator) -> PromptBatch:
    """``M`` prompts of ``N`` context tokens and a query on the features ``V`` (rows)."""
    K, d = V.shape
    feats = rng.integers(0, K, size=(M, N + 1))
    P = V[feats] + noise * rng.standard_normal((M, N + 1, d)) / np.sqrt(d)
    G = _task_values(task, P, rng)
    return PromptBatch(X=np.ascontiguousarray(P[:, :N]), xq=np.ascontiguousarray(P[:, N]),
                       g=np.ascontiguousarray(G[:, :N]), gq=np.ascontiguousarray(G[:, N]),
                       same=same_feature_mask(feats), V=V)


def attention(scores: np.ndarray) -> np.ndarray:
    """Softmax over the context tokens (last axis; SciPy)."""
    return special.softmax(scores, axis=-1)


def scaled_labels(g: np.ndarray, L) -> np.ndarray:
    """Labels of the tasks f = L·g (``L`` per run: the result gets a leading run axis)."""
    L = np.asarray(L, dtype=float)
    return L.reshape(L.shape + (1,) * g.ndim) * g


class PromptGD:
    """State and step map of model B for ``R`` runs (label scales ``L``, steps ``eta``), on the
    array namespace ``xp`` (the batch is converted once; :meth:`observe` returns numpy)."""

    def __init__(self, batch: PromptBatch, L, eta, level: float | None = None, xp=NUMPY):
        L = np.atleast_1d(np.asarray(L, dtype=float))
        self.b = batch
        self.xp = xp
        self.X, self.xq, self.same = xp.asarray(batch.X), xp.asarray(batch.xq), xp.asarray(batch.same)
        self.Y = xp.asarray(scaled_labels(batch.g, L))     # (R, M, N)
        self.yq = xp.asarray(scaled_labels(batch.gq, L))   # (R, M)
        R = len(L)
        M, _, d = batch.X.shape
        self.M = M
        self.eta = xp.asarray(np.broadcast_to(np.asarray(eta, dtype=float), (R,))[:, None, None])
        self.Q = xp.zeros((R, d, d))
        self.level = level
        self._refresh()

    def _refresh(self) -> None:
        xp = self.xp
        u = self.xq @ xp.swapaxes(self.Q, 1, 2)               # (R, M, d): Q x_q per prompt
        s = (self.X @ u[..., None])[..., 0]                   # (R, M, N): scores x_iᵀ Q x_q
        self.a = xp.softmax(s, axis=-1)
        self.yhat = xp.einsum("rmn,rmn->rm", self.a, self.Y)
        self.err = self.yhat - self.yq
        self.pa = xp.einsum("rmn,mn->rm", self.a, self.same)  # same-feature attention

    def gradient(self):
        """∂ℓ/∂Q at the current weights (one per run)."""
        coef = (self.err / self.M)[..., None] * self.a * (self.Y - self.yhat[..., None])
        Z = (coef[..., None, :] @ self.X)[..., 0, :]          # (R, M, d)
        return self.xp.swapaxes(Z, 1, 2) @ self.xq             # (R, d, d)

    def set_weights(self, Q: np.ndarray) -> None:
        R, d, _ = self.Q.shape
        self.Q = self.xp.asarray(np.broadcast_to(np.asarray(Q, dtype=float), (R, d, d)))
        self._refresh()

    def step(self, k: int) -> None:
        self.Q -= self.eta * self.gradient()
        self._refresh()

    def weights(self) -> np.ndarray:
        """The current Q of every run, on the host."""
        return np.array(self.xp.to_numpy(self.Q))

    def observe(self) -> dict:
        xp = self.xp
        out = {"attn": xp.mean(self.pa, axis=-1), "attn_min": xp.amin(self.pa, axis=-1),
               "loss": 0.5 * xp.mean(self.err * self.err, axis=-1)}
        out = {k: np.array(xp.to_numpy(v)) for k, v in out.items()}
        if self.level is not None:  # the fraction of prompts attending ≥ level (on the host)
            out["frac"] = np.mean(xp.to_numpy(self.pa) >= self.level, axis=-1)
        return out


def run_prompts(batch: PromptBatch, L, eta, max_steps: int, *, stop=None, check_every: int = 20,
                tick=None, record_every: int | str = 1, level: float | None = None,
                xp=NUMPY) -> Trace:
    """Full-batch GD on Q from 0 for each (L, η) run; ``stop(trace)`` may end it earlier
    (``level``: also record the fraction of prompts attending ≥ level; ``xp``: the array
    backend).  Non-finite numbers raise :class:`NumericalTrouble`; the final ``Q`` is in
    ``extra``."""
    sim = PromptGD(batch, L, eta, level, xp=xp)
    tr = run_gd(sim.step, sim.observe, max_steps=max_steps, record_every=record_every,
                per_decade=2000, stop=stop, check_every=check_every, blowup_key=None, tick=tick,
                what="full-batch gradient descent on prompts (model B)")
    if tr.stopped == "diverged" or not xp.all_finite(sim.Q):
        raise NumericalTrouble(f"model B produced non-finite numbers by step {tr.n_steps}")
    tr.extra["Q"] = sim.weights()
    return tr


def first_step_attention_rate(batch: PromptBatch) -> float:
    r"""Exact :math:`\frac{d}{d\eta}\bar a\big|_{\eta=0}` of the mean same-feature attention
    for one GD step from :math:`Q=0` at :math:`L=1`: at :math:`Q=0` every token gets
    :math:`1/N`; the step moves the scores by :math:`\dot s_i=-x_i^\top G_0x_q` and the
    attention by :math:`\dot a_i=a_i(\dot s_i-\sum_ja_j\dot s_j)`."""
    X, xq = batch.X, batch.xq
    M, N, _ = X.shape
    a = np.full(N, 1.0 / N)
    yhat = batch.g @ a
    err = yhat - batch.gq
    coef = (err / M)[:, None] * a * (batch.g - yhat[:, None])
    grad = np.einsum("mn,mnd->md", coef, X).T @ xq
    s_dot = -np.einsum("mnd,de,me->mn", X, grad, xq)
    a_dot = a * (s_dot - (s_dot @ a)[:, None])
    return float(np.mean(np.sum(a_dot * batch.same, axis=1)))


def per_prompt_attention(batch: PromptBatch, Q: np.ndarray) -> np.ndarray:
    """Each prompt's attention on the tokens with the query's feature, under weights ``Q``."""
    s = np.einsum("mnd,de,me->mn", batch.X, Q, batch.xq)
    return np.einsum("mn,mn->m", attention(s), batch.same)
