r"""Two trainings side by side (numpy only; no theory): the whole ATTN_M layer and a two-layer
linear network on the cubic feature, each by full-batch GD on the same sequences.

* **ATTN_M** (:func:`train_attention`): every entry of every $W^V_i,W^{KQ}_i\in\mathbb
  R^{(D+1)\times(D+1)}$ is a parameter; the prediction is the bottom-right entry of
  $X+\sum_i\frac1NW^V_iXX^\top W^{KQ}_iX$ with $XX^\top$ summed over all $N+1$ tokens (the
  query included), and its gradient is back-propagated by hand through that product — no
  feature map, no reduction.
* **Two-layer network** (:func:`train_network`): $\hat y=w_2^\top W_1z$ with
  $z=\operatorname{vec}(\beta x_q^\top)$ (row-major) and $\beta=\frac1N\sum_{n\le N}y_nx_n$
  computed from the context tokens alone.
* :func:`network_from_attention` reads the network's weights off the attention's: $w_2$ = the
  value's label→label entries, the rows of $W_1$ = the key-query's input blocks, flattened
  row-major; the value's input→label entries and the key-query's label row must be zero.
* :func:`sign_paired`: the sequences together with copies whose labels (task vectors) are
  negated — a training set closed under $w\to-w$, as the task distribution is.

Both trainers run GD on $L_{1/2}=\frac1{2P}\sum_p(\hat y_p-y_p)^2$ at step $\eta$ through
:func:`icltheory.dynamics.run_gd`, recording the training loss (plain MSE) at every step and
the weights every ``keep_every`` steps.
"""

from __future__ import annotations

import numpy as np

from icltheory.core import NumericalTrouble
from icltheory.dynamics import run_gd

__all__ = ["sign_paired", "network_features", "network_from_attention", "attention_grad", "train_attention",
           "train_network", "irrelevant_gradient_ratio"]


def sign_paired(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) followed by the same sequences with every label negated (task w → −w)."""
    D = X.shape[1] - 1
    Xn = X.copy()
    Xn[:, D, :] = -Xn[:, D, :]
    return np.concatenate([X, Xn]), np.concatenate([y, -y])


def network_features(X: np.ndarray) -> np.ndarray:
    r"""$z=\operatorname{vec}(\beta x_q^\top)$, row-major, $\beta=\frac1N\sum_{n\le N}y_nx_n$: (P, D²)."""
    D, N = X.shape[1] - 1, X.shape[2] - 1
    ctx = X[:, :D, :N]
    beta = np.einsum("pdn,pn->pd", ctx, X[:, D, :N]) / N
    xq = X[:, :D, N]
    return (beta[:, :, None] * xq[:, None, :]).reshape(len(X), D * D)


def network_from_attention(WV: np.ndarray, WKQ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w2 (H,), W1 (H, D²)) of the two-layer network the attention weights correspond to."""
    D = WV.shape[1] - 1
    return WV[:, D, D].copy(), WKQ[:, :D, :D].reshape(WKQ.shape[0], D * D).copy()


def attention_grad(S: np.ndarray, xt: np.ndarray, y: np.ndarray, WV: np.ndarray, WKQ: np.ndarray,
                   N: int) -> tuple[float, np.ndarray, np.ndarray]:
    r"""Plain MSE of the whole ATTN_M layer and the gradients of $L_{1/2}$ with respect to every
    entry of ``WV`` and ``WKQ`` (H, D+1, D+1).  ``S`` = $XX^\top$ (P, D+1, D+1) over all tokens,
    ``xt`` = the query token (P, D+1) (its label slot is 0, but the layer reads it as given).

    The prediction $\hat y_p=\tilde y_{q,p}+\frac1N\sum_i(W^V_i)_{D+1,:}S_pW^{KQ}_i\tilde x_{q,p}$
    is evaluated as $\frac1N\langle S_p,T_p\rangle$ with $T_p=\sum_i(W^V_i)_{D+1,:}^\top
    (W^{KQ}_i\tilde x_{q,p})^\top$ (the same sum, associated so that every product is one
    matrix multiplication over all sequences); the gradients are its adjoint."""
    P = len(y)
    H, D1, _ = WV.shape
    v = WV[:, D1 - 1, :]  # the value's label row (H, D+1): the only row the prediction reads
    Q = (xt @ WKQ.reshape(H * D1, D1).T).reshape(P, H, D1)  # W^KQ_i x̃_q
    T = (np.swapaxes(Q, 1, 2).reshape(P * D1, H) @ v).reshape(P, D1, D1)  # T[p, b, a]
    Sf = S.reshape(P, D1 * D1)
    yhat = xt[:, D1 - 1] + np.einsum("pk,pk->p", Sf, np.swapaxes(T, 1, 2).reshape(P, D1 * D1)) / N
    r = yhat - y
    e = r / P
    R = S * e[:, None, None]  # e_p S_p (symmetric in its last two axes)
    gV = np.zeros_like(WV)
    gV[:, D1 - 1, :] = np.tensordot(Q, R, axes=([0, 2], [0, 2])) / N  # Σ_p e_p (S_p W^KQ_i x̃_q)ᵀ
    Wr = (R.reshape(P * D1, D1) @ v.T).reshape(P, D1, H)  # e_p S_p (W^V_i)_{D+1,:}ᵀ
    gK = np.transpose(np.tensordot(Wr, xt, axes=([0], [0])), (1, 0, 2)) / N  # ⊗ x̃_q, summed over p
    return float(np.mean(r * r)), gV, gK


def _diverged(trace, what: str) -> None:
    if trace.stopped == "diverged":
        raise NumericalTrouble(f"{what} diverged at step {trace.diverged_at} (lower lr)")


def _full_batch_gd(params: dict, loss_and_grads, *, lr: float, steps: int, keep_every: int, tick,
                   what: str) -> dict:
    """Full-batch GD on the named arrays ``params``: ``loss_and_grads(params)`` returns the plain
    MSE and the gradient of $L_{1/2}$ per name.  The gradient computed to record a step's loss is
    the one its update uses.  Returns the loss at every step (steps + 1,), the steps kept
    (``k``: every ``keep_every``-th and the last) and each parameter at those steps."""
    st = {name: np.array(v, float, copy=True) for name, v in params.items()}
    last: dict = {"g": None}
    kept: dict = {"k": [], **{name: [] for name in st}}

    def keep(k: int) -> None:
        kept["k"].append(k)
        for name, v in st.items():
            kept[name].append(v.copy())

    def observe() -> dict:
        loss, g = loss_and_grads(st)
        last["g"] = g  # the gradient at these weights: the next step uses it
        return {"loss": loss}

    def step(k: int) -> None:
        if k % keep_every == 0:
            keep(k)
        g = last["g"] if last["g"] is not None else loss_and_grads(st)[1]
        for name in st:
            st[name] -= lr * g[name]
        last["g"] = None

    trace = run_gd(step, observe, max_steps=steps, record_every=1, check_every=max(steps // 20, 1), tick=tick,
                   what=f"GD of {what}")
    _diverged(trace, f"GD of {what}")
    keep(int(trace.n_steps))
    return {"loss": trace["loss"], **{name: np.array(v) for name, v in kept.items()}}


def train_attention(X: np.ndarray, y: np.ndarray, WV: np.ndarray, WKQ: np.ndarray, *, lr: float, steps: int,
                    keep_every: int, tick=None) -> dict:
    """Full-batch GD of the whole ATTN_M layer; returns the loss at every step (steps + 1,) and
    the weights ``WV``, ``WKQ`` at every ``keep_every``-th step (and the last), with those steps ``k``."""
    N = X.shape[2] - 1
    S = np.einsum("pan,pbn->pab", X, X)
    xt = np.ascontiguousarray(X[:, :, N])

    def loss_and_grads(w: dict) -> tuple[float, dict]:
        loss, gV, gK = attention_grad(S, xt, y, w["WV"], w["WKQ"], N)
        return loss, {"WV": gV, "WKQ": gK}

    return _full_batch_gd({"WV": WV, "WKQ": WKQ}, loss_and_grads, lr=lr, steps=steps, keep_every=keep_every,
                          tick=tick, what="the whole ATTN_M layer")


def train_network(Z: np.ndarray, y: np.ndarray, w2: np.ndarray, W1: np.ndarray, *, lr: float, steps: int,
                  keep_every: int, tick=None) -> dict:
    """Full-batch GD of the two-layer network w₂ᵀW₁z on features ``Z`` (P, F); returns the loss
    at every step and the weights ``w2``, ``W1`` at every ``keep_every``-th step (and the last)."""
    P = len(y)

    def loss_and_grads(w: dict) -> tuple[float, dict]:
        h = Z @ w["W1"].T  # hidden units (P, H)
        r = h @ w["w2"] - y
        e = r / P
        return float(np.mean(r * r)), {"w2": h.T @ e, "W1": np.outer(w["w2"], Z.T @ e)}

    return _full_batch_gd({"w2": w2, "W1": W1}, loss_and_grads, lr=lr, steps=steps, keep_every=keep_every,
                          tick=tick, what="the two-layer network")


def irrelevant_gradient_ratio(X: np.ndarray, y: np.ndarray, WV: np.ndarray, WKQ: np.ndarray) -> float:
    """At the given weights: the largest gradient entry of the value's input→label entries and
    the key-query's label row, over the largest gradient entry of the relevant ones (the
    label→label value entries and the key-query's input blocks)."""
    N = X.shape[2] - 1
    D = X.shape[1] - 1
    S = np.einsum("pan,pbn->pab", X, X)
    _, gV, gK = attention_grad(S, np.ascontiguousarray(X[:, :, N]), y, WV, WKQ, N)
    irr = max(float(np.max(np.abs(gV[:, D, :D]))), float(np.max(np.abs(gK[:, D, :D]))))
    rel = max(float(np.max(np.abs(gV[:, D, D]))), float(np.max(np.abs(gK[:, :D, :D]))))
    return irr / max(rel, 1e-300)
