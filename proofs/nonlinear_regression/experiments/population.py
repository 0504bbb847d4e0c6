r"""Model A: exact population gradient descent (infinite prompts, noiseless tokens on features
:math:`v_1..v_K`, :math:`p_k=1/K`), vectorised over a leading axis of runs.

Only :math:`B[k,n]=v_n^\top Qv_k` matters; the query of feature :math:`k` puts attention
:math:`a_k=\operatorname{softmax}(B[k,:])` on feature :math:`n`, and with
:math:`r_k=a_k-e_k` and the task covariance :math:`C` (already scaled by :math:`L^2`)

.. math::
    \ell=\frac1{2K}\sum_kr_k^\top Cr_k,\qquad
    \nabla_{B[k,:]}\ell=\frac1K(\operatorname{diag}a_k-a_ka_k^\top)Cr_k,\qquad
    B\leftarrow B-\eta\,G(\nabla_B\ell)G,\quad G=VV^\top,

since :math:`\nabla_Q\ell=V^\top(\nabla_B\ell)^\top V`.  The loop is
:func:`icltheory.dynamics.run_gd`; records are kept on a fine geometric grid (every step for
the first ~900 steps, then a relative spacing of 0.115 %), so crossing times interpolate to a
small fraction of a step.
"""

from __future__ import annotations

import numpy as np

from icltheory.backends import NumpyBackend
from icltheory.core import NumericalTrouble
from icltheory.dynamics import Trace, run_gd

__all__ = ["attention", "scaled_covariance", "PopulationGD", "run_population", "PER_DECADE"]

#: records per decade of steps (geometric grid)
PER_DECADE = 2000


_NP = NumpyBackend()


def attention(B: np.ndarray) -> np.ndarray:
    """Row-wise softmax of the logits (the numpy backend's: SciPy's arithmetic, without its
    per-call dispatch)."""
    return _NP.softmax(B, axis=-1)


def scaled_covariance(C: np.ndarray, L) -> np.ndarray:
    """The covariance of the tasks f = L·g: ``C`` times L² (per run when ``L`` is a vector)."""
    L = np.asarray(L, dtype=float)
    return np.asarray(C, dtype=float) * (L**2).reshape(L.shape + (1, 1))


class PopulationGD:
    """State and step map of model A for ``R`` runs: ``C`` of shape ``(R, K, K)``, ``eta`` of
    shape ``(R,)``; ``G`` the feature Gram matrix (``None``: identity)."""

    def __init__(self, C, eta, *, G=None, track=(), rows: bool = False):
        self.C = np.asarray(C, dtype=float)
        if self.C.ndim == 2:
            self.C = self.C[None]
        R, K, _ = self.C.shape
        self.K = K
        self.eta = np.broadcast_to(np.asarray(eta, dtype=float), (R,)).copy()[:, None, None]
        self.G = None if G is None else np.asarray(G, dtype=float)
        self.B = np.zeros((R, K, K))
        self.eye = np.eye(K)
        self.rows = rows
        self.ti = np.array([k for k, _ in track], dtype=int)
        self.tn = np.array([n for _, n in track], dtype=int)
        self._refresh()

    def _refresh(self) -> None:
        self.A = attention(self.B)
        self.Rm = self.A - self.eye
        self.CR = self.Rm @ self.C  # row k is (C r_k)ᵀ (C symmetric)

    def gradient(self) -> np.ndarray:
        """The step direction G(∇_B ℓ)G at the current logits (one per run)."""
        A, CR = self.A, self.CR
        g = A * (CR - np.sum(A * CR, axis=2, keepdims=True))
        g /= self.K
        if self.G is not None:
            g = self.G @ g @ self.G
        return g

    def set_logits(self, B: np.ndarray) -> None:
        self.B = np.array(np.broadcast_to(B, self.B.shape), dtype=float)
        self._refresh()

    def step(self, k: int) -> None:
        self.B -= self.eta * self.gradient()
        self._refresh()

    def observe(self) -> dict:
        p = np.diagonal(self.A, axis1=1, axis2=2)
        out = {"p_mean": p.mean(axis=1), "p_min": p.min(axis=1),
               "loss": np.einsum("rkn,rkn->r", self.Rm, self.CR) / (2 * self.K)}
        if self.rows:
            out["p"] = p
        if self.ti.size:
            out["tracked"] = self.A[:, self.ti, self.tn]
        return out


def run_population(C, eta, max_steps: int, *, G=None, track=(), rows: bool = False, stop=None,
                   check_every: int = 1000, tick=None) -> Trace:
    """Run model A from B = 0 for at most ``max_steps`` steps (see :class:`PopulationGD`);
    ``stop(trace)`` may end it earlier.  Non-finite numbers raise :class:`NumericalTrouble`."""
    sim = PopulationGD(C, eta, G=G, track=track, rows=rows)
    tr = run_gd(sim.step, sim.observe, max_steps=max_steps, record_every="geometric",
                per_decade=PER_DECADE, stop=stop, check_every=check_every, blowup_key=None,
                tick=tick, what="population gradient descent (model A)")
    if tr.stopped == "diverged" or not np.all(np.isfinite(sim.B)):
        raise NumericalTrouble(f"model A produced non-finite numbers by step {tr.n_steps}")
    tr.extra["B"] = sim.B
    return tr
