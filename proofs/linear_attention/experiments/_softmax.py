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
differences).  Training is :func:`icltheory.dynamics.run_gd`; the model is written once against
an array namespace ``xp`` (:mod:`icltheory.backends`: numpy by default, torch for large P).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icltheory.backends import NumpyBackend, namespace_of
from icltheory.core import NumericalTrouble
from icltheory.dynamics import run_gd

__all__ = ["SoftmaxAttention", "attention_weights", "softmax_train", "softmax_init"]

NUMPY = NumpyBackend()


def attention_weights(scores):
    """Softmax over the token axis (the last), on the scores' own backend."""
    return namespace_of(scores).softmax(scores, axis=-1)


@dataclass(frozen=True)
class SoftmaxAttention:
    """``merged``: params r (H, D+1), A (H, D+1, D).  Separate: r, K (H, R, D+1), Q (H, R, D)."""

    H: int
    merged: bool
    R: int = 1

    def A(self, p: dict, xp=NUMPY):
        return p["A"] if self.merged else xp.einsum("hra,hrb->hab", p["K"], p["Q"])

    def forward(self, p: dict, X, xp=NUMPY):
        D = X.shape[1] - 1
        xq = X[:, :D, -1]
        qv = (xq @ xp.swapaxes(self.A(p, xp).reshape(-1, D), 0, 1)).reshape(X.shape[0], self.H, D + 1)
        a = attention_weights(qv @ X)  # (P, H, N+1): softmax_n of X_nᵀ A_i x̃_q
        u = p["r"][None] @ X  # (P, H, N+1): r_iᵀ X_n
        return xp.einsum("phn,phn->p", a, u), a, u

    def predict(self, p: dict, X: np.ndarray) -> np.ndarray:
        return self.forward(p, X)[0]

    def loss_and_grad(self, p: dict, X, y, xp=NUMPY):
        """(plain MSE, gradient of L_1/2), on the namespace ``xp`` of the arrays."""
        P, D1, _ = X.shape
        yhat, a, u = self.forward(p, X, xp)
        res = yhat - y
        delta = res / P
        Xt = xp.swapaxes(X, 1, 2)
        g_r = xp.einsum("pha->ha", (delta[:, None, None] * a) @ Xt)
        ubar = xp.einsum("phn,phn->ph", a, u)
        gs = delta[:, None, None] * a * (u - ubar[:, :, None])
        G_A = xp.einsum("pha,pd->had", gs @ Xt, X[:, : D1 - 1, -1])  # (H, D+1, D)
        out = {"r": g_r}
        if self.merged:
            out["A"] = G_A
        else:
            out["K"] = xp.einsum("hrb,hab->hra", p["Q"], G_A)
            out["Q"] = xp.einsum("hra,hab->hrb", p["K"], G_A)
        return float(xp.mean(res * res)), out


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
                  steps: int, record_every: int = 1, tick=None, xp=NUMPY):
    """Full-batch GD on L_1/2 on the array backend ``xp``; returns (steps, plain-MSE losses,
    final params as numpy arrays)."""
    p = {k: xp.asarray(v) for k, v in p.items()}
    X, y = xp.asarray(X), xp.asarray(y)
    cache = {}

    def step(_k: int) -> None:
        _, g = cache.pop("grad", None) or model.loss_and_grad(p, X, y, xp)
        for name in p:
            p[name] -= lr * g[name]

    def observe() -> dict:
        cache["grad"] = model.loss_and_grad(p, X, y, xp)
        return {"loss": cache["grad"][0]}

    trace = run_gd(step, observe, max_steps=steps, record_every=record_every, check_every=max(steps, 1),
                   tick=tick, what="softmax-attention gradient descent")
    if trace.stopped == "diverged":
        raise NumericalTrouble(f"softmax-attention GD diverged at step {trace.diverged_at} (lr={lr:g}): the step is "
                               f"beyond this model's stability limit: try a smaller lr (e.g. lr={lr / 4:.3g}; the default "
                               "steps follow it, keeping steps × lr)")
    return trace.steps, trace["loss"], {k: np.array(xp.to_numpy(v)) for k, v in p.items()}
