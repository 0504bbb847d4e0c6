r"""The stationarity experiment: the model with free update-head parameters (exact δ erase and
exact cross-attention, the theorem's assumptions), per-pair Monte Carlo gradients of the query
loss by hand-written backprop, and the sample-average minimisation over the GD-structured set.

Flat gradient order (shared *format*, not code, with the theory's component table): block by
block, ``Q`` (``d × D``), ``K`` (``d × D``), ``V_f`` (``d' × D``), row-major.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ._data import PromptBatch
from ._model import Block, Head, Layout, Model, backward, erase_head, exact_cross, forward, query_loss

__all__ = ["StructuredPoint", "FreeParams", "stationarity_model", "pair_gradients",
           "flatten_gradients", "raw_gradient_names", "structured_objective", "fit_structured",
           "GAMMA_FORMS", "in_structure_direction", "off_structure_direction"]


@dataclass
class StructuredPoint:
    r"""A point of the GD-structured set :math:`S`: per block :math:`Q_k=b_kS_x`,
    :math:`K_k=c_kS_x`, value :math:`\Gamma_k(u-v)` into the ``f`` slot."""

    b: np.ndarray
    c: np.ndarray
    gammas: list

    def vector(self) -> np.ndarray:
        return np.concatenate([self.b, self.c] + [G.ravel() for G in self.gammas])

    @classmethod
    def from_vector(cls, vec: np.ndarray, K: int, dp: int) -> "StructuredPoint":
        b, c = vec[:K], vec[K:2 * K]
        rest = vec[2 * K:]
        return cls(b.copy(), c.copy(), [rest[k * dp * dp:(k + 1) * dp * dp].reshape(dp, dp).copy()
                                        for k in range(K)])


@dataclass
class FreeParams:
    r"""The free self-attention parameters of the update head of every block:
    ``Q[k]``, ``K[k]`` (``d × D``) and ``V[k]`` (``d' × D``, the rows written into ``f``)."""

    Q: list
    K: list
    V: list

    @classmethod
    def from_point(cls, lay: Layout, pt: StructuredPoint) -> "FreeParams":
        Sx = lay.selector("x")
        Qs, Ks, Vs = [], [], []
        for b, c, G in zip(pt.b, pt.c, pt.gammas):
            V = np.zeros((lay.dp, lay.D))
            V[:, lay.u] = G
            V[:, lay.v] = -G
            Qs.append(b * Sx)
            Ks.append(c * Sx)
            Vs.append(V)
        return cls(Qs, Ks, Vs)

    def vector(self) -> np.ndarray:
        return np.concatenate([a.ravel() for a in self.Q + self.K + self.V])

    def shifted(self, direction: "FreeParams", eps: float) -> "FreeParams":
        return FreeParams([a + eps * b for a, b in zip(self.Q, direction.Q)],
                          [a + eps * b for a, b in zip(self.K, direction.K)],
                          [a + eps * b for a, b in zip(self.V, direction.V)])


def stationarity_model(lay: Layout, W_e: np.ndarray, kernel: str, fp: FreeParams) -> Model:
    """Update head with free ``Q, K, V_f``; exact δ erase; exact cross-attention (the theorem's assumptions)."""
    blocks = []
    for Q, K, Vf in zip(fp.Q, fp.K, fp.V):
        V = np.zeros((lay.D, lay.D))
        V[lay.f] = Vf
        erase = replace(erase_head(lay, "delta", 1.0), frozen=True)
        blocks.append(Block([Head(Q, K, V, kernel), erase], replace(exact_cross(lay), frozen=True)))
    # W_e is centred for this claim, so the v slot starts at exactly w̄_e = 0 (W_v = 0 makes
    # that exact in floating point rather than ~1e-17).
    return Model(lay, W_e, np.zeros_like(W_e), W_e, W_e, blocks)


def pair_gradients(lay: Layout, W_e: np.ndarray, kernel: str, fp: FreeParams,
                   batch: PromptBatch, chunk: int = 4096):
    """Per-pair (antithetic average) loss and gradients of the free parameters.

    Returns ``loss (n,)`` and a list per block of ``(gQ (n,d,D), gK (n,d,D), gV (n,d',D))``.
    """
    model = stationarity_model(lay, W_e, kernel, fp)
    losses, per_block = [], [[[], [], []] for _ in fp.Q]
    for ch in batch.chunks(chunk):
        logits, _, cache = forward(model, ch.X, ch.labels, logits_only=True)
        g = backward(model, ch.X, ch.labels, ch.target, logits, cache, embeddings=False)  # W_e is fixed
        m = ch.pairs
        loss = query_loss(logits, ch.target)
        losses.append(0.5 * (loss[:m] + loss[m:]))
        for k, gb in enumerate(g["blocks"]):
            h = gb["heads"][0]
            for slot, arr in enumerate((h["Q"], h["K"], h["V"][:, lay.f, :])):
                per_block[k][slot].append(0.5 * (arr[:m] + arr[m:]))
    out = [tuple(np.concatenate(s) for s in blk) for blk in per_block]
    return np.concatenate(losses), out


def flatten_gradients(grads) -> np.ndarray:
    """Per-pair gradients of :func:`pair_gradients` (or a mask from :func:`structural_zero_mask`,
    without the pair axis) as one flat vector per pair: block by block, ``Q``, ``K``, ``V_f``, row-major."""
    lead = grads[0][0].ndim == 3
    parts = [a.reshape(a.shape[0], -1) if lead else a.reshape(-1) for blk in grads for a in blk]
    return np.concatenate(parts, axis=-1)


def raw_gradient_names(lay: Layout, K: int) -> list[str]:
    """Names of the entries of :func:`flatten_gradients`, e.g. ``Q1[2,u0]`` (row 2, column ``u_0``)."""
    cols = [f"{blk}{j}" for blk in ("x", "u", "v", "f")
            for j in range(getattr(lay, blk).stop - getattr(lay, blk).start)]
    names = []
    for k in range(1, K + 1):
        for label, rows in (("Q", lay.d), ("K", lay.d), ("V", lay.dp)):
            names += [f"{label}{k}[{r},{c}]" for r in range(rows) for c in cols]
    return names


GAMMA_FORMS = ("full", "diag", "fixed")


def structured_objective(lay: Layout, W_e: np.ndarray, kernel: str, batch: PromptBatch,
                         gamma: str, fixed: StructuredPoint):
    """Mean loss, its gradient in the in-S coordinates (b, c and Γ: ``full`` matrix,
    ``diag`` diagonal, or ``fixed`` at ``fixed.gammas``) and the standard errors of that
    gradient (from the per-pair spread)."""
    K = len(fixed.b)
    dp = lay.dp

    def unpack(vec):
        b, c, rest = vec[:K].copy(), vec[K:2 * K].copy(), vec[2 * K:]
        if gamma == "full":
            return StructuredPoint.from_vector(vec, K, dp)
        if gamma == "diag":
            return StructuredPoint(b, c, [np.diag(rest[k * dp:(k + 1) * dp]) for k in range(K)])
        return StructuredPoint(b, c, fixed.gammas)

    def pack(pt):
        if gamma == "full":
            return pt.vector()
        if gamma == "diag":
            return np.concatenate([pt.b, pt.c] + [np.diag(G) for G in pt.gammas])
        return np.concatenate([pt.b, pt.c])

    def fun(vec):
        pt = unpack(vec)
        loss, grads = pair_gradients(lay, W_e, kernel, FreeParams.from_point(lay, pt), batch)
        cols = [np.einsum("nii->n", gQ[:, :, lay.x]) for gQ, _, _ in grads]
        cols += [np.einsum("nii->n", gK[:, :, lay.x]) for _, gK, _ in grads]
        for _, _, gV in grads:
            gG = gV[:, :, lay.u] - gV[:, :, lay.v]
            if gamma == "full":
                cols += list(gG.reshape(len(loss), -1).T)
            elif gamma == "diag":
                cols += list(np.einsum("nii->ni", gG).T)
        per = np.stack(cols, axis=1)
        se = per.std(0, ddof=1) / np.sqrt(len(loss))
        return float(loss.mean()), per.mean(0), se

    return fun, unpack, pack


def fit_structured(lay: Layout, W_e: np.ndarray, kernel: str, batch: PromptBatch,
                   start: StructuredPoint, gamma: str, *, warm_pairs: int = 600,
                   rel_tol: float = 0.05, max_newton: int = 30):
    r"""Minimise the sample-average loss over the in-S coordinates (SAA).

    1. L-BFGS on a ``warm_pairs`` sub-sample; 2. Hessian there by forward differences of the
    analytic gradient (a preconditioner only; for dot-product kernels only
    :math:`b_kc_k\Gamma_k` or :math:`b_kc_k` matters, a flat direction; curvatures enter by
    magnitude, floored at 1e-3 of the largest); 3. quasi-Newton steps on the whole sample (BFGS
    updates of that Hessian, step-length control, backtracking) until every gradient coordinate
    is below ``rel_tol`` × its Monte Carlo standard error, so the optimisation error shifts a
    z-score by at most ``rel_tol``.  Returns ``(point, info)``.
    """
    from scipy.optimize import minimize

    fun, unpack, pack = structured_objective(lay, W_e, kernel, batch, gamma, start)
    n = batch.pairs
    m = min(warm_pairs, n)
    idx = np.r_[0:m, n:n + m]
    small = PromptBatch(batch.X[idx], batch.labels[idx], batch.target[idx])
    f_small, _, _ = structured_objective(lay, W_e, kernel, small, gamma, start)

    def safe(f, v):
        try:
            out = f(v)
        except FloatingPointError:
            return np.inf, None, None
        return out if np.isfinite(out[0]) else (np.inf, None, None)

    def for_scipy(v):
        loss, g, _ = safe(f_small, v)
        return (1e10, np.zeros_like(v)) if g is None else (loss, g)

    res = minimize(for_scipy, pack(start), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-6, "ftol": 1e-12, "maxiter": 40})
    x = res.x
    h = 1e-4
    H = np.zeros((len(x), len(x)))
    g_small = f_small(x)[1]
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        H[:, i] = (f_small(x + e)[1] - g_small) / h
    H = 0.5 * (H + H.T)
    loss, g, se = fun(x)
    it = 0
    while it < max_newton and np.max(np.abs(g) / np.maximum(se, 1e-300)) > rel_tol:
        w, Vh = np.linalg.eigh(H)
        # modified Newton: a curvature the sub-sample reads as ≤ 0 (flat or saddle-like
        # directions) is replaced by its magnitude, floored at 1e-3 of the largest, so that every
        # direction is stepped along (dropping them left their gradient in place for ever);
        # the backtracking below keeps each step a descent
        wm = np.maximum(np.abs(w), 1e-3 * max(float(np.abs(w).max()), 1e-300))
        step = -(Vh / wm) @ (Vh.T @ g)
        cap = 0.5 * max(1.0, float(np.linalg.norm(x)))
        if np.linalg.norm(step) > cap:
            step *= cap / np.linalg.norm(step)
        t = 1.0
        while True:
            loss_new, g_new, se_new = safe(fun, x + t * step)
            if g_new is not None and loss_new <= loss + 1e-12 * abs(loss):
                break
            t *= 0.5
            if t < 1e-4:
                break
        if g_new is None or t < 1e-4:
            break
        sv, yv = t * step, g_new - g
        if yv @ sv > 1e-12 * np.linalg.norm(yv) * np.linalg.norm(sv):
            Hs = H @ sv
            H = H + np.outer(yv, yv) / (yv @ sv) - np.outer(Hs, Hs) / (sv @ Hs)
        x, loss, g, se = x + sv, loss_new, g_new, se_new
        it += 1
    ratio = float(np.max(np.abs(g) / np.maximum(se, 1e-300)))
    return unpack(x), {"warm_iterations": int(res.nit), "newton_iterations": it,
                       "max_grad_over_stderr": ratio, "converged": ratio <= rel_tol,
                       "rel_tol": rel_tol, "loss": loss}




def _unit(fp: FreeParams) -> FreeParams:
    nrm = np.linalg.norm(fp.vector())
    return FreeParams([q / nrm for q in fp.Q], [k / nrm for k in fp.K], [v / nrm for v in fp.V])


def off_structure_direction(rng: np.random.Generator, lay: Layout, K: int) -> FreeParams:
    """A random unit direction that leaves the GD set: traceless x-blocks of Q, K and an x → f value."""
    Qs, Ks, Vs = [], [], []
    for _ in range(K):
        Q, Kk, V = np.zeros((lay.d, lay.D)), np.zeros((lay.d, lay.D)), np.zeros((lay.dp, lay.D))
        A = rng.standard_normal((lay.d, lay.d))
        Q[:, lay.x] = A - np.trace(A) / lay.d * np.eye(lay.d)
        Kk[:, lay.x] = A.T - np.trace(A) / lay.d * np.eye(lay.d)
        V[:, lay.x] = rng.standard_normal((lay.dp, lay.d))
        Qs.append(Q)
        Ks.append(Kk)
        Vs.append(V)
    return _unit(FreeParams(Qs, Ks, Vs))


def in_structure_direction(rng: np.random.Generator, lay: Layout, K: int, diag: bool) -> FreeParams:
    """A random unit direction inside the GD set: Γ (full or diagonal) and the query scale."""
    Qs, Ks, Vs = [], [], []
    for _ in range(K):
        Q, Kk, V = np.zeros((lay.d, lay.D)), np.zeros((lay.d, lay.D)), np.zeros((lay.dp, lay.D))
        G = rng.standard_normal((lay.dp, lay.dp))
        G = np.diag(np.diag(G)) if diag else G
        V[:, lay.u], V[:, lay.v] = G, -G
        Q[:, lay.x] = rng.standard_normal() * np.eye(lay.d)
        Qs.append(Q)
        Ks.append(Kk)
        Vs.append(V)
    return _unit(FreeParams(Qs, Ks, Vs))
