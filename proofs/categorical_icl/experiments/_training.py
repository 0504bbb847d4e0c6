r"""Training by hand-written backprop: the GD model (the construction with learned embeddings, steps
and kernel scale) and a freely trained Transformer of the same topology; Adam with clipping and
early stopping; evaluation on test prompts.

The trainer and the evaluation are written once against an array namespace ``xp``
(:mod:`icltheory.backends`, numpy by default, torch float64 optional): the data and the
parameters move onto ``xp`` when :func:`train` starts, every step (forward, backprop, the
learner's gradient map, Adam) runs there, and the learner's parameters come back as numpy
arrays.  The minibatch indices are drawn on the host by the caller's numpy generator, so both
backends see the same batches."""

from __future__ import annotations


import numpy as np

from . import _model
from ._data import Dataset
from ._model import (NUMPY, Block, Cross, Head, Layout, Model, backward, erase_head, exact_cross,
                     forward, query_loss, update_value)

__all__ = ["GDLearner", "TFLearner", "evaluate", "test_scores", "train", "relative_distance_to_scaled_identity"]


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


class _GenericPasses:
    """A learner's training and evaluation passes through its :meth:`model` (the generic
    forward pass and hand-written backprop of :mod:`._model`, the last block on the query row
    alone) and its :meth:`grads` map."""

    def logits(self, p, X, labels, xp=NUMPY):
        """The query logits (B, C) of the model at parameters ``p`` (arrays of ``xp``)."""
        return forward(self.model(p, xp), X, labels, logits_only=True, xp=xp)[0]

    def loss_and_grads(self, p, X, labels, target, xp=NUMPY):
        """The mean query cross-entropy against ``target`` (a float) and the learner's
        parameter gradients of it, at parameters ``p``."""
        model = self.model(p, xp)
        logits, _, cache = forward(model, X, labels, logits_only=True, xp=xp)
        loss = float(xp.mean(query_loss(logits, target, xp)))
        return loss, self.grads(backward(model, X, labels, target, logits, cache, xp, mean=True), xp)


class GDLearner(_GenericPasses):
    r"""The GD model: the construction with learned :math:`W_e` (tied everywhere), per-block
    diagonal steps :math:`\Gamma_k=\operatorname{diag}(\alpha_k)` and one kernel scale
    :math:`r` (:math:`Q=K=rS_x`); exact δ erase and exact cross-attention (frozen: their own
    maps fixed; the table they read is :math:`W_e`).  :meth:`model` builds it as a Transformer;
    training and evaluation run its function in closed form (:meth:`loss_and_grads`)."""

    def __init__(self, rng, lay: Layout, C: int, K: int, kernel: str):
        self.lay, self.kernel, self.K = lay, kernel, K
        self.params = {"W": rng.standard_normal((lay.dp, C)),
                       "alpha": np.full((K, lay.dp), 1.0),
                       "r": np.array([1.0 / np.sqrt(lay.d)])}
        self._fixed_parts: dict = {}

    def _fixed(self, xp):
        """The parameter-free parts on ``xp`` (made once per namespace): the selector S_x, the
        frozen δ erase head and the frozen exact cross-attention, and the index pairs of the
        value's Γ(u − v) entries."""
        key = (xp.name, str(xp.device))
        if key not in self._fixed_parts:
            self._fixed_parts[key] = self._make_fixed(xp)
        return self._fixed_parts[key]

    def _make_fixed(self, xp):
        lay = self.lay
        erase, cross = erase_head(lay, "delta", 1.0), exact_cross(lay)
        return {"Sx": xp.asarray(lay.selector("x")),
                "erase": Head(xp.asarray(erase.Q), xp.asarray(erase.K), xp.asarray(erase.V), erase.kind,
                              frozen=True),
                "cross": Cross(xp.asarray(cross.Qc), xp.asarray(cross.Kc), xp.asarray(cross.Vc), frozen=True)}

    def model(self, p=None, xp=NUMPY) -> Model:
        r"""The model at parameters ``p`` (default: :attr:`params`), arrays of ``xp``: per block
        the update head :math:`Q=K=rS_x`, value :math:`\operatorname{diag}(\alpha_k)(u-v)` into
        the ``f`` slot (:func:`~._model.update_head` at scale 1), then the fixed parts."""
        p = p or self.params
        fx = self._fixed(xp)
        blocks = []
        for k in range(self.K):
            V = update_value(self.lay, p["alpha"][k], xp)
            h = Head(p["r"][0] * fx["Sx"], p["r"][0] * fx["Sx"], V, self.kernel)
            blocks.append(Block([h, fx["erase"]], fx["cross"]))
        W = p["W"]
        return Model(self.lay, W, W, W, W, blocks)

    def grads(self, g: dict, xp=NUMPY) -> dict:
        """The learner's parameter gradients from the model's mean gradients
        (:func:`~._model.backward` with ``mean=True``): ``W`` is tied into all four embeddings,
        ``α_k`` sits in block k's update value at ``[f, u]`` and (negated) ``[f, v]``, ``r`` in
        its query and key maps on the ``x`` columns."""
        lay = self.lay
        gW = g["W_u"] + g["W_v"] + g["W_x"] + g["W_ro"]
        ga = xp.stack([xp.diagonal(b["heads"][0]["V"][lay.f, lay.u]) - xp.diagonal(b["heads"][0]["V"][lay.f, lay.v])
                       for b in g["blocks"]])
        gr = sum(xp.sum(xp.diagonal(b["heads"][0]["Q"][:, lay.x])) + xp.sum(xp.diagonal(b["heads"][0]["K"][:, lay.x]))
                 for b in g["blocks"])
        return {"W": gW, "alpha": ga, "r": xp.stack([gr])}

    # The model's function in closed form: with the δ erase, the exact cross-attention and
    # Q = K = rS_x (reading x, which no block changes) every block attends with the same
    # weights a_ji = κ(r x_j, r x_i); only the f slot carries the prediction and only the
    # context rows' v slot feeds it back:
    #   f^k_j = f^{k-1}_j + α_k ⊙ Σ_i a_ji (u_i − v^{k-1}_i),  u_i = W e_{y_i},
    #   v^0_i = W 1/C,  v^k_i = W softmax(Wᵀ f^k_i),  logits = Wᵀ f^K_query.
    # The same function as :meth:`model`'s forward pass (tested to round-off), its gradient
    # by reverse mode through this recursion: O(N²d') per prompt and block instead of the
    # token-wide products of the generic pass.

    def _passes(self, p, X, labels, xp):
        """The recursion's forward pass: (logits, what the backward pass reads)."""
        N = labels.shape[1]
        W, alpha, r = p["W"], p["alpha"], p["r"][0]
        rows = X if self.K > 1 else X[:, N:]  # earlier blocks also need the context rows' f
        q, k = r * rows, r * X[:, :N]
        _, a = _model._scores(self.kernel, q, k, xp)  # (B, rows, N): the same in every block
        U = W.T[labels]  # (B, N, d')
        C = W.shape[1]
        v = W @ xp.asarray(np.full(C, 1.0 / C))  # v^0 (every context row)
        f = None
        steps, reads = [], []
        for blk in range(self.K):
            delta = U - v
            S = a @ delta
            f = alpha[blk] * S if f is None else f + alpha[blk] * S
            steps.append((delta, S))
            if blk < self.K - 1:
                P = xp.softmax(f[:, :N] @ W, axis=-1)  # the cross-attention's weights over the classes
                reads.append((f[:, :N], P))
                v = P @ W.T
        logits = f[:, -1] @ W
        return logits, {"q": q, "k": k, "a": a, "rows": rows, "U": U, "steps": steps, "reads": reads, "fq": f[:, -1]}

    def logits(self, p, X, labels, xp=NUMPY):
        return self._passes(p, X, labels, xp)[0]

    def loss_and_grads(self, p, X, labels, target, xp=NUMPY):
        """:meth:`_GenericPasses.loss_and_grads` by reverse mode through the recursion."""
        N = labels.shape[1]
        W, alpha = p["W"], p["alpha"]
        B, C = target.shape
        logits, c = self._passes(p, X, labels, xp)
        logp = xp.log_softmax(logits, -1)
        loss = float(xp.mean(-xp.sum(target * logp, axis=-1)))
        dlogits = (xp.exp(logp) * xp.sum(target, -1, keepdims=True) - target) / B
        gW = xp.swapaxes(c["fq"], 0, 1) @ dlogits  # the readout
        a, U = c["a"], c["U"]
        df = xp.zeros((B, a.shape[1], W.shape[0]))
        df[:, -1] = dlogits @ W.T
        da = xp.zeros(tuple(a.shape))
        dU = xp.zeros(tuple(U.shape))
        galpha = []
        for blk in reversed(range(self.K)):
            delta, S = c["steps"][blk]
            galpha.append(xp.sum(xp.sum(df * S, 0), 0))
            dS = df * alpha[blk]
            da = da + dS @ xp.swapaxes(delta, 1, 2)
            dv = -(xp.swapaxes(a, 1, 2) @ dS)  # the gradient of v^{blk}; U's is its negative
            dU = dU - dv
            if blk == 0:  # v^0 = W 1/C
                gW = gW + xp.einsum("d,c->dc", xp.sum(xp.sum(dv, 0), 0), xp.asarray(np.full(C, 1.0 / C)))
                continue
            fc, P = c["reads"][blk - 1]  # v = W softmax(Wᵀ f) on the context rows
            dP = dv @ W
            dz = P * (dP - xp.sum(P * dP, -1, keepdims=True))
            gW = (gW + xp.swapaxes(dv.reshape(-1, dv.shape[-1]), 0, 1) @ P.reshape(-1, C)
                  + xp.swapaxes(fc.reshape(-1, fc.shape[-1]), 0, 1) @ dz.reshape(-1, C))
            df[:, :N] = df[:, :N] + dz @ W.T
        onehot = xp.zeros((B, N, C))
        onehot[xp.asindex(np.arange(B))[:, None], xp.asindex(np.arange(N))[None, :], labels] = 1.0
        gW = gW + xp.swapaxes(dU.reshape(-1, dU.shape[-1]), 0, 1) @ onehot.reshape(-1, C)
        dg = _model._dscores(self.kernel, a, da, N, xp)
        dq, dk = _model._score_grads(self.kernel, dg, c["q"], c["k"], xp)
        gr = xp.sum(dq * c["rows"]) + xp.sum(dk * X[:, :N])  # q = r·x, k = r·x
        return loss, {"W": gW, "alpha": xp.stack(galpha[::-1]), "r": xp.stack([gr])}


class TFLearner(_GenericPasses):
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

    def model(self, p=None, xp=NUMPY) -> Model:
        """The model at parameters ``p`` (default: :attr:`params`); every parameter is free, so
        the model holds ``p``'s own arrays (of whichever namespace ``xp`` they are)."""
        p = p or self.params
        blocks = []
        for k in range(self.K):
            heads = [Head(p[f"Q{h}_{k}"], p[f"K{h}_{k}"], p[f"V{h}_{k}"], "softmax") for h in (1, 2)]
            blocks.append(Block(heads, Cross(p[f"Qc_{k}"], p[f"Kc_{k}"], p[f"Vc_{k}"])))
        return Model(self.lay, p["E"], p["E2"], p["E"], p["E"], blocks)

    def grads(self, g: dict, xp=NUMPY) -> dict:
        """The learner's parameter gradients from the model's mean gradients
        (:func:`~._model.backward` with ``mean=True``): ``E`` is tied into the label embedding,
        the cross-attention table and the readout; the rest are the model's own."""
        out = {"E": g["W_u"] + g["W_x"] + g["W_ro"], "E2": g["W_v"]}
        for k, b in enumerate(g["blocks"]):
            for h in (1, 2):
                for m in "QKV":
                    out[f"{m}{h}_{k}"] = b["heads"][h - 1][m]
            for m in ("Qc", "Kc", "Vc"):
                out[f"{m}_{k}"] = b["cross"][m]
        return out

    def qk_x(self, p=None):
        """:math:`Q_x^\\top K_x` of every head (the x-block of the bilinear score)."""
        p = p or self.params
        sl = self.lay.x
        return {f"block {k + 1} head {h}": p[f"Q{h}_{k}"][:, sl].T @ p[f"K{h}_{k}"][:, sl]
                for k in range(self.K) for h in (1, 2)}


def _scored_chunks(learner, data: Dataset, params, chunk: int, xp):
    """The learner's model over ``data`` in chunks: per chunk the prompts, their logits and
    log-probabilities (numpy; the forward pass and the log-softmax run on ``xp``)."""
    if params is None:
        params = {k: xp.asarray(v) for k, v in learner.params.items()}
    for s in range(0, len(data), chunk):
        part = data.take(slice(s, s + chunk))
        logits = learner.logits(params, xp.asarray(part.X), xp.asindex(part.labels), xp)
        yield part, xp.to_numpy(logits), xp.to_numpy(xp.log_softmax(logits, -1))


def evaluate(learner, data: Dataset, params=None, chunk: int = 1024, xp=NUMPY):
    """Per-prompt NLL of the sampled query label, correctness of the top-1 prediction, and the
    NLL against the exact label distribution (numpy arrays).  The forward pass and the log-softmax
    run on ``xp`` (``params``, if given, are arrays of ``xp``; default: the learner's numpy
    parameters, moved onto ``xp``)."""
    nll, correct, nll_exact = [], [], []
    for part, logits, ls in _scored_chunks(learner, data, params, chunk, xp):
        nll.append(-ls[np.arange(len(part)), part.y_query])
        nll_exact.append(-np.sum(part.p_query * ls, -1))
        correct.append((np.argmax(logits, -1) == part.y_query).astype(float))
    return np.concatenate(nll), np.concatenate(correct), np.concatenate(nll_exact)


def test_scores(learner, data: Dataset, chunk: int = 1024, xp=NUMPY):
    r"""Per-prompt scores of the learner's trained model on test prompts, both against the exact
    label distribution :math:`p` of each query: the NLL :math:`-\sum_c p_c\log\hat p_c` and the
    expected top-1 accuracy :math:`p_{\arg\max\hat p}` (the probability that the model's top
    class is the sampled label: the sampled 0/1 correctness averaged over the label's draw, so
    its mean is the same accuracy with a smaller variance).  numpy arrays."""
    nll, acc = [], []
    for part, _, ls in _scored_chunks(learner, data, None, chunk, xp):
        nll.append(-np.sum(part.p_query * ls, -1))
        acc.append(part.p_query[np.arange(len(part)), np.argmax(ls, -1)])
    return np.concatenate(nll), np.concatenate(acc)


def train(learner, train_set: Dataset, val_set: Dataset, rng: np.random.Generator, *,
          steps: int, batch: int, lr: float, clip: float, eval_every: int, patience: int | None = None,
          min_delta: float = 0.0, smooth: int = 1, cosine: bool = False, xp=NUMPY):
    """Adam on the mean query cross-entropy (sampled labels, like the paper's code) with
    global-norm clipping; keeps the parameters with the best validation loss (early stopping).
    With ``patience``, training stops once that many validation looks in a row brought no
    improvement by more than ``min_delta`` on the value that last counted as one, the values
    being the mean validation NLL of the last ``smooth`` looks (the curve then ends before
    ``steps``; the kept parameters are still the best seen).  With ``cosine`` the step size follows
    a cosine decay from ``lr`` at the first step to 0 after ``steps`` (the last steps average out
    the minibatch noise, so the run ends near its training-set minimum rather than wherever the
    noise left it).  Runs on the array namespace ``xp``;
    ``learner.params`` (numpy) is replaced by the kept parameters (numpy).  Returns the curve
    ``[(step, train_loss, val_loss)]``."""
    # Adam runs on one flat vector of every parameter (a few whole-vector operations a step,
    # elementwise the same arithmetic as per parameter); the parameters are views into it.  Every
    # update makes a new vector (none is changed in place), so the kept best parameters can be
    # views of an old one
    keys = list(learner.params)
    shapes = [tuple(np.shape(learner.params[k])) for k in keys]
    ends = np.cumsum([int(np.prod(sh)) for sh in shapes]).tolist()
    starts = [0] + ends[:-1]

    def unflat(vec) -> dict:
        return {k: vec[a:b].reshape(sh) for k, a, b, sh in zip(keys, starts, ends, shapes)}

    theta = xp.asarray(np.concatenate([np.ravel(learner.params[k]) for k in keys]))
    p = unflat(theta)
    m = xp.zeros((ends[-1],))
    v2 = xp.zeros((ends[-1],))
    b1, b2, eps = 0.9, 0.999, 1e-8
    C = train_set.p_query.shape[1]
    X_all, labels_all = xp.asarray(train_set.X), xp.asindex(train_set.labels)
    best = (np.inf, p)
    curve = []
    run = []
    ref, stalled = np.inf, 0
    for t in range(1, steps + 1):
        idx = rng.integers(0, len(train_set), batch)
        rows = xp.asindex(idx)
        X, labels = X_all[rows], labels_all[rows]
        target = xp.asarray(_onehot(train_set.y_query[idx], C))
        loss, g = learner.loss_and_grads(p, X, labels, target, xp)
        run.append(loss)
        gflat = xp.concatenate([g[k].reshape(-1) for k in keys])
        gn = float(xp.sqrt(xp.sum(gflat * gflat)))
        if not np.isfinite(gn):
            raise FloatingPointError(f"non-finite gradient at step {t}")
        gk = gflat * (min(1.0, clip / gn) if gn > 0 else 1.0)
        m = b1 * m + (1 - b1) * gk
        v2 = b2 * v2 + (1 - b2) * gk * gk
        lr_t = lr * 0.5 * (1.0 + np.cos(np.pi * (t - 1) / steps)) if cosine else lr
        theta = theta - lr_t * (m / (1 - b1 ** t)) / (xp.sqrt(v2 / (1 - b2 ** t)) + eps)
        p = unflat(theta)
        if t % eval_every == 0 or t == steps:
            val = float(evaluate(learner, val_set, p, xp=xp)[0].mean())
            curve.append((t, float(np.mean(run)), val))
            run = []
            if val < best[0]:
                best = (val, p)
            recent = [c[2] for c in curve[-smooth:]]
            level = sum(recent) / len(recent)
            if level < ref - min_delta:
                ref, stalled = level, 0
            else:
                stalled += 1
                if patience is not None and stalled >= patience:
                    break
    learner.params = {k: np.array(xp.to_numpy(a)) for k, a in best[1].items()}
    return curve
