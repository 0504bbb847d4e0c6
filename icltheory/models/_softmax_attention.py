r"""Softmax attention for in-context linear regression (the reference code's ``--softmax``).

For the query column, head $i$ attends over all $N+1$ tokens (no causal mask, the query attends
to itself, no $1/\sqrt d$ scaling):

$$a_{i,n}=\operatorname{softmax}_n\big(X_n^\top A_i\tilde x_q\big),\qquad
\hat y_q=\sum_i\sum_{n=1}^{N+1}a_{i,n}\,r_i^\top X_n,$$

with $r_i$ the label row of $W^V_i$ and $A_i=W^{KQ}_i$ (merged) or $(W^K_i)^\top W^Q_i$
(separate), restricted to the input columns ($\tilde x_q$ has a zero label).  Gradients of the
full-batch $L_{1/2}=\frac1{2P}\sum_p(\hat y_p-y_p)^2$ are written out by hand:
$\partial\hat y/\partial r_i=\sum_na_{i,n}X_n$ and
$\partial\hat y/\partial s_{i,n}=a_{i,n}(u_{i,n}-\bar u_i)$ with $u_{i,n}=r_i^\top X_n$,
$\bar u_i=\sum_na_{i,n}u_{i,n}$; the tests compare them with finite differences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import NumericalTrouble

__all__ = ["SoftmaxAttention", "softmax_train"]


def _softmax(s: np.ndarray) -> np.ndarray:
    z = s - s.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class SoftmaxAttention:
    """``merged``: params r (H, D+1), A (H, D+1, D).  Separate: r, K (H, R, D+1), Q (H, R, D)."""

    H: int
    merged: bool
    R: int = 1

    def A(self, p: dict) -> np.ndarray:
        return p["A"] if self.merged else np.einsum("hra,hrb->hab", p["K"], p["Q"])

    def forward(self, p: dict, X: np.ndarray):
        D = X.shape[1] - 1
        xq = X[:, :D, -1]
        A = self.A(p)
        qv = xq @ A.reshape(-1, D).T  # (P, H·(D+1)): A_i x̃_q for every head
        qv = qv.reshape(X.shape[0], self.H, D + 1)
        s = qv @ X  # (P, H, N+1): scores X_nᵀ A_i x̃_q
        a = _softmax(s)
        u = np.matmul(p["r"][None], X)  # (P, H, N+1): r_iᵀ X_n
        yhat = np.einsum("phn,phn->p", a, u)
        return yhat, a, u

    def predict(self, p: dict, X: np.ndarray) -> np.ndarray:
        return self.forward(p, X)[0]

    def loss_and_grad(self, p: dict, X: np.ndarray, y: np.ndarray):
        """(plain MSE, gradient of L_1/2)."""
        P, D1, _ = X.shape
        D = D1 - 1
        yhat, a, u = self.forward(p, X)
        res = yhat - y
        delta = res / P
        Xt = np.swapaxes(X, 1, 2)
        g_r = (delta[:, None, None] * a @ Xt).sum(axis=0)  # Σ_p δ_p Σ_n a_{pn} X_n
        ubar = np.einsum("phn,phn->ph", a, u)
        gs = delta[:, None, None] * a * (u - ubar[:, :, None])
        xq = X[:, :D, -1]
        T = gs @ Xt  # (P, H, D+1): Σ_n g_{pn} X_n
        G_A = np.tensordot(T, xq, axes=([0], [0]))  # (H, D+1, D)
        out = {"r": g_r}
        if self.merged:
            out["A"] = G_A
        else:
            out["K"] = np.einsum("hrb,hab->hra", p["Q"], G_A)
            out["Q"] = np.einsum("hra,hab->hrb", p["K"], G_A)
        return float(np.mean(res * res)), out


def softmax_train(model: SoftmaxAttention, p: dict, X: np.ndarray, y: np.ndarray, *, lr: float,
                  steps: int, record_every: int = 1):
    """Full-batch GD on L_1/2; returns (steps, plain-MSE losses, final params)."""
    p = {k: np.array(v, dtype=float, copy=True) for k, v in p.items()}
    rec_s, rec_l = [], []
    first = None
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(steps + 1):
            loss, g = model.loss_and_grad(p, X, y)
            if first is None:
                first = loss
            if not np.isfinite(loss) or loss > 1e6 * max(first, 1e-300):
                raise NumericalTrouble(f"softmax-attention GD diverged at step {k} (lr={lr:g})")
            if k % record_every == 0 or k == steps:
                rec_s.append(k)
                rec_l.append(loss)
            if k == steps:
                break
            for name in p:
                p[name] -= lr * g[name]
    return np.asarray(rec_s), np.asarray(rec_l), p
