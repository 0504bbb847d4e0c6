r"""Softmax attention for in-context regression (the reference code's ``--softmax``).

For the query column head $i$ attends over all $N+1$ tokens (no causal mask, the query attends
to itself, no $1/\sqrt d$):

$$a_{i,n}=\operatorname{softmax}_n\big(X_n^\top A_i\tilde x_q\big),\qquad
\hat y_q=\sum_i\sum_{n=1}^{N+1}a_{i,n}\,r_i^\top X_n,$$

$r_i$ the label row of $W^V_i$, $A_i=W^{KQ}_i$ (merged) or $(W^K_i)^\top W^Q_i$ (separate), on the
input columns.  The softmax is ``scipy.special.softmax``.  Gradients of the full-batch
$L_{1/2}=\frac1{2P}\sum_p(\hat y_p-y_p)^2$ are written out:
$\partial\hat y/\partial r_i=\sum_na_{i,n}X_n$ and $\partial\hat y/\partial s_{i,n}=a_{i,n}(u_{i,n}-\bar u_i)$
with $u_{i,n}=r_i^\top X_n$, $\bar u_i=\sum_na_{i,n}u_{i,n}$ (the tests compare with finite
differences).  Training is :func:`icltheory.dynamics.run_gd`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icltheory.core import NumericalTrouble
from icltheory.dynamics import run_gd

__all__ = ["SoftmaxAttention", "attention_weights", "softmax_train", "softmax_init"]


def attention_weights(scores: np.ndarray) -> np.ndarray:
    """Softmax over the token axis (the last)."""
    from scipy.special import softmax

    return softmax(scores, axis=-1)


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
        qv = (xq @ self.A(p).reshape(-1, D).T).reshape(X.shape[0], self.H, D + 1)
        a = attention_weights(qv @ X)  # (P, H, N+1): softmax_n of X_nᵀ A_i x̃_q
        u = np.matmul(p["r"][None], X)  # (P, H, N+1): r_iᵀ X_n
        return np.einsum("phn,phn->p", a, u), a, u

    def predict(self, p: dict, X: np.ndarray) -> np.ndarray:
        return self.forward(p, X)[0]

    def loss_and_grad(self, p: dict, X: np.ndarray, y: np.ndarray):
        """(plain MSE, gradient of L_1/2)."""
        P, D1, _ = X.shape
        yhat, a, u = self.forward(p, X)
        res = yhat - y
        delta = res / P
        Xt = np.swapaxes(X, 1, 2)
        g_r = (delta[:, None, None] * a @ Xt).sum(axis=0)
        ubar = np.einsum("phn,phn->ph", a, u)
        gs = delta[:, None, None] * a * (u - ubar[:, :, None])
        G_A = np.tensordot(gs @ Xt, X[:, : D1 - 1, -1], axes=([0], [0]))  # (H, D+1, D)
        out = {"r": g_r}
        if self.merged:
            out["A"] = G_A
        else:
            out["K"] = np.einsum("hrb,hab->hra", p["Q"], G_A)
            out["Q"] = np.einsum("hra,hab->hrb", p["K"], G_A)
        return float(np.mean(res * res)), out


def softmax_init(model: SoftmaxAttention, D: int, w: float, rng: np.random.Generator) -> dict:
    """Every weight N(0, w²); the value's x→label entries and the key's label column zero."""
    p = {"r": w * rng.standard_normal((model.H, D + 1))}
    p["r"][:, :D] = 0.0
    if model.merged:
        p["A"] = w * rng.standard_normal((model.H, D + 1, D))
        p["A"][:, D, :] = 0.0
    else:
        p["K"] = w * rng.standard_normal((model.H, model.R, D + 1))
        p["K"][:, :, D] = 0.0
        p["Q"] = w * rng.standard_normal((model.H, model.R, D))
    return p


def softmax_train(model: SoftmaxAttention, p: dict, X: np.ndarray, y: np.ndarray, *, lr: float,
                  steps: int, record_every: int = 1, tick=None):
    """Full-batch GD on L_1/2; returns (steps, plain-MSE losses, final params)."""
    p = {k: np.array(v, dtype=float, copy=True) for k, v in p.items()}
    cache = {}

    def step(_k: int) -> None:
        _, g = cache.pop("grad", None) or model.loss_and_grad(p, X, y)
        for name in p:
            p[name] -= lr * g[name]

    def observe() -> dict:
        cache["grad"] = model.loss_and_grad(p, X, y)
        return {"loss": cache["grad"][0]}

    trace = run_gd(step, observe, max_steps=steps, record_every=record_every, check_every=max(steps, 1),
                   tick=tick, what="softmax-attention gradient descent")
    if trace.stopped == "diverged":
        raise NumericalTrouble(f"softmax-attention GD diverged at step {trace.diverged_at} (lr={lr:g})")
    return trace.steps, trace["loss"], p
