r"""Training by numpy backprop: the GD model (the construction with learned embeddings, steps and
kernel scale) and a freely trained Transformer of the same topology; Adam with clipping and early
stopping; evaluation on test prompts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.special import log_softmax

from ._data import Dataset
from ._model import (Block, Cross, Head, Layout, Model, backward, erase_head, exact_cross, forward,
                     query_loss, update_head)

__all__ = ["GDLearner", "TFLearner", "evaluate", "train", "relative_distance_to_scaled_identity"]


def relative_distance_to_scaled_identity(M: np.ndarray) -> float:
    r""":math:`\lVert M-(\operatorname{tr}M/d)I\rVert_F/\lVert M\rVert_F`."""
    d = M.shape[0]
    nrm = np.linalg.norm(M)
    if nrm == 0:
        return 0.0
    return float(np.linalg.norm(M - np.trace(M) / d * np.eye(d)) / nrm)


def _onehot(y: np.ndarray, C: int) -> np.ndarray:
    out = np.zeros((len(y), C))
    out[np.arange(len(y)), y] = 1.0
    return out


class GDLearner:
    r"""The GD model: the construction with learned :math:`W_e` (tied everywhere), per-block
    diagonal steps :math:`\Gamma_k=\operatorname{diag}(\alpha_k)` and one kernel scale
    :math:`r` (:math:`Q=K=rS_x`); exact δ erase and exact cross-attention (frozen)."""

    def __init__(self, rng, lay: Layout, C: int, K: int, kernel: str):
        self.lay, self.kernel, self.K = lay, kernel, K
        self.params = {"W": rng.standard_normal((lay.dp, C)),
                       "alpha": np.full((K, lay.dp), 1.0),
                       "r": np.array([1.0 / np.sqrt(lay.d)])}

    def model(self, p=None) -> Model:
        p = p or self.params
        lay = self.lay
        blocks = []
        for k in range(self.K):
            h = update_head(lay, self.kernel, 1.0, np.diag(p["alpha"][k]))
            h = replace(h, Q=p["r"][0] * h.Q, K=p["r"][0] * h.K)
            erase = replace(erase_head(lay, "delta", 1.0), frozen=True)
            blocks.append(Block([h, erase], replace(exact_cross(lay), frozen=True)))
        W = p["W"]
        return Model(lay, W, W, W, W, blocks)

    def grads(self, g: dict) -> dict:
        lay = self.lay
        gW = (g["W_u"] + g["W_v"] + g["W_x"] + g["W_ro"]).mean(0)
        ga = np.stack([np.diagonal(b["heads"][0]["V"].mean(0)[lay.f, lay.u])
                       - np.diagonal(b["heads"][0]["V"].mean(0)[lay.f, lay.v]) for b in g["blocks"]])
        gr = sum(np.trace(b["heads"][0]["Q"].mean(0)[:, lay.x]) + np.trace(b["heads"][0]["K"].mean(0)[:, lay.x])
                 for b in g["blocks"])
        return {"W": gW, "alpha": ga, "r": np.array([gr])}


class TFLearner:
    r"""A freely trained Transformer of the same topology: per block two softmax self-attention
    heads with free ``Q, K`` (``D × D``) and ``V`` (``D × D``), a free cross-attention
    (``Q_c, K_c, V_c``) over the label embedding :math:`E`; the constant-slot embedding
    :math:`E_2` is learned separately; readout and cross-attention use :math:`E`."""

    def __init__(self, rng, lay: Layout, C: int, K: int, init: float = 0.05):
        D, dp = lay.D, lay.dp
        self.lay, self.K = lay, K
        p = {"E": rng.standard_normal((dp, C)), "E2": rng.standard_normal((dp, C))}
        for k in range(K):
            for h in (1, 2):
                p[f"Q{h}_{k}"] = init * rng.standard_normal((D, D))
                p[f"K{h}_{k}"] = init * rng.standard_normal((D, D))
                p[f"V{h}_{k}"] = init * rng.standard_normal((D, D))
            p[f"Qc_{k}"] = init * rng.standard_normal((dp, D))
            p[f"Kc_{k}"] = init * rng.standard_normal((dp, dp))
            p[f"Vc_{k}"] = init * rng.standard_normal((D, dp))
        self.params = p

    def model(self, p=None) -> Model:
        p = p or self.params
        blocks = []
        for k in range(self.K):
            heads = [Head(p[f"Q{h}_{k}"], p[f"K{h}_{k}"], p[f"V{h}_{k}"], "softmax") for h in (1, 2)]
            blocks.append(Block(heads, Cross(p[f"Qc_{k}"], p[f"Kc_{k}"], p[f"Vc_{k}"])))
        return Model(self.lay, p["E"], p["E2"], p["E"], p["E"], blocks)

    def grads(self, g: dict) -> dict:
        out = {"E": (g["W_u"] + g["W_x"] + g["W_ro"]).mean(0), "E2": g["W_v"].mean(0)}
        for k, b in enumerate(g["blocks"]):
            for h in (1, 2):
                for m in "QKV":
                    out[f"{m}{h}_{k}"] = b["heads"][h - 1][m].mean(0)
            for m in ("Qc", "Kc", "Vc"):
                out[f"{m}_{k}"] = b["cross"][m].mean(0)
        return out

    def qk_x(self, p=None):
        """:math:`Q_x^\\top K_x` of every head (the x-block of the bilinear score)."""
        p = p or self.params
        sl = self.lay.x
        return {f"block {k + 1} head {h}": p[f"Q{h}_{k}"][:, sl].T @ p[f"K{h}_{k}"][:, sl]
                for k in range(self.K) for h in (1, 2)}


def evaluate(learner, data: Dataset, params=None, chunk: int = 1024):
    """Per-prompt NLL of the sampled query label, correctness of the top-1 prediction, and the
    NLL against the exact label distribution."""
    model = learner.model(params)
    nll, correct, nll_exact = [], [], []
    for s in range(0, len(data), chunk):
        part = data.take(slice(s, s + chunk))
        logits = forward(model, part.X, part.labels)[0]
        ls = log_softmax(logits, axis=-1)
        nll.append(-ls[np.arange(len(part)), part.y_query])
        nll_exact.append(-np.sum(part.p_query * ls, -1))
        correct.append((np.argmax(logits, -1) == part.y_query).astype(float))
    return np.concatenate(nll), np.concatenate(correct), np.concatenate(nll_exact)


def train(learner, train_set: Dataset, val_set: Dataset, rng: np.random.Generator, *,
          steps: int, batch: int, lr: float, clip: float, eval_every: int):
    """Adam on the mean query cross-entropy (sampled labels, like the paper's code) with
    global-norm clipping; keeps the parameters with the best validation loss (early stopping).
    Returns the curve ``[(step, train_loss, val_loss)]``."""
    p = learner.params
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v2 = {k: np.zeros_like(v) for k, v in p.items()}
    b1, b2, eps = 0.9, 0.999, 1e-8
    C = train_set.p_query.shape[1]
    best = (np.inf, {k: a.copy() for k, a in p.items()})
    curve = []
    run = []
    for t in range(1, steps + 1):
        idx = rng.integers(0, len(train_set), batch)
        part = train_set.take(idx)
        model = learner.model()
        target = _onehot(part.y_query, C)
        logits, _, cache = forward(model, part.X, part.labels)
        run.append(float(query_loss(logits, target).mean()))
        g = learner.grads(backward(model, part.X, part.labels, target, logits, cache))
        gn = np.sqrt(sum(float(np.sum(a * a)) for a in g.values()))
        if not np.isfinite(gn):
            raise FloatingPointError(f"non-finite gradient at step {t}")
        sc = min(1.0, clip / gn) if gn > 0 else 1.0
        for k in p:
            gk = g[k] * sc
            m[k] = b1 * m[k] + (1 - b1) * gk
            v2[k] = b2 * v2[k] + (1 - b2) * gk * gk
            p[k] = p[k] - lr * (m[k] / (1 - b1 ** t)) / (np.sqrt(v2[k] / (1 - b2 ** t)) + eps)
        if t % eval_every == 0 or t == steps:
            val = float(evaluate(learner, val_set)[0].mean())
            curve.append((t, float(np.mean(run)), val))
            run = []
            if val < best[0]:
                best = (val, {k: a.copy() for k, a in p.items()})
    learner.params = best[1]
    return curve
