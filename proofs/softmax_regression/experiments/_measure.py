r"""The experiments: numeric instances, the seeded counterexample search and the certified (arb)
evaluation of witnesses.  Nothing here imports the theory: the softmax is
``scipy.special.softmax`` (in :mod:`._model`), gradients are the numeric model's own closed form or
finite differences, and a witness's ratio is re-evaluated in ball arithmetic at its exact float
inputs.  Every function returns plain measured numbers (natural logs where values may be huge
or tiny)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from icltheory.bounds import maximize_log

from . import _model as model

__all__ = ["search_worst_pair", "certified_lower", "lemma_observations", "measure_vectorization",
           "measure_gradient", "measure_lipschitz", "measure_shift", "witness_record",
           "witness_pair", "measure_data_move", "data_move_ratio"]


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def _log_diff_exp(l2, delta):
    """log|e^{l2 + delta} − e^{l2}| from the difference delta itself (no cancellation)."""
    return l2 + np.maximum(delta, 0.0) + _log(-np.expm1(-np.abs(delta)))


def _max_log_ratio(log_num, log_den) -> float:
    """max of log_num − log_den over entries with a non-zero denominator (−inf if none)."""
    ok = np.isfinite(log_den)
    if not np.any(ok):
        return -math.inf
    return float(np.max(np.asarray(log_num)[ok] - np.asarray(log_den)[ok]))


def _needs_stable(R: float) -> bool:
    """Search objectives use the cancellation-free differences for R < 1e-2 (plain subtraction
    loses ~eps/‖ΔM‖ relative there); every bound observation uses them at any R."""
    return R < 1e-2


# --------------------------------------------------------------------------- search + arb


def search_worst_pair(n: int, d: int, R: float, loss: str, *, samples: int, refine: int,
                      maxiter: int, rng: np.random.Generator):
    """Seeded search for the worst ‖∇L(x) − ∇L(y)‖/‖x − y‖ inside the assumptions: random
    pairs, then BFGS refinements on a smooth parametrisation onto the set.  Returns
    (SearchResult, worst pair, the random pairs)."""
    box = model.Assumptions(n, d, R)
    pts = box.sample(rng, samples)
    ratio = model.log_gradient_ratio_stable if _needs_stable(R) else model.log_gradient_ratio

    def objective(theta):
        p = box.decode(theta)
        return ratio(p.A1, p.A2, p.B, p.X, p.Y, loss)

    res = maximize_log(objective, box.encode(pts), refine=refine, maxiter=maxiter)
    return res, box.decode(res.theta[None, :])[0], pts


def certified_lower(ball) -> float:
    """A float ≤ every point of the ball (its lower end, rounded down; 0 if it reaches below)."""
    lo = float(ball.lower())
    return max(0.0, float(np.nextafter(lo, -np.inf)))


def certified_upper(ball) -> float:
    return float(np.nextafter(float(ball.upper()), np.inf))


def witness_record(point, loss: str, ball=None, inside: bool | None = None) -> dict[str, Any]:
    out = {"loss": loss, **point.as_lists()}
    if ball is not None:
        out["ratio_arb"] = ball.str(12, radius=True)
    if inside is not None:
        out["inside_assumptions_certified"] = bool(inside)
    return out


def _ratio_ball(point, loss: str, prec: int = 128):
    import flint

    old = flint.ctx.prec
    try:
        flint.ctx.prec = prec
        return model.gradient_ratio_arb(point.A1, point.A2, point.B, point.X, point.Y, loss)
    finally:
        flint.ctx.prec = old


# --------------------------------------------------------------------------- lemma observations


def lemma_observations(p, loss: str) -> dict[str, float]:
    """Max over the sample of each lemma's observed ratio (natural logs); for ``alpha_lower``
    the log of the *smallest* α."""
    Mx, My = model.logits(p.A1, p.A2, p.X), model.logits(p.A1, p.A2, p.Y)
    ldx = model.log_norm(p.X - p.Y)
    m = np.maximum(Mx.max(axis=(-2, -1)), My.max(axis=(-2, -1)))
    dlse, dF, Uy, dU = model.softmax_differences(p.A1, p.A2, p.X, p.Y)  # no cancellation
    lx, ly = logsumexp(Mx, axis=-1), logsumexp(My, axis=-1)
    out = {
        "logit_bound": float(np.log(max(np.abs(Mx).max(), np.abs(My).max(), 1e-300))),
        "u_lipschitz": float(np.max(m + model.log_norm(dU) - ldx)),
        "alpha_upper": float(np.max(np.maximum(lx, ly))),
        "alpha_lipschitz": float(np.max(np.max(_log_diff_exp(ly, dlse[..., 0]), axis=-1) - ldx)),
    }
    if loss == "normalized":
        Fx = model.row_softmax(Mx)
        C = Fx - p.B
        nn = Fx.shape[-1]
        S = Fx[..., :, None] * np.eye(nn) - Fx[..., :, None] * Fx[..., None, :]
        out.update({
            "alpha_lower": float(np.min(np.minimum(lx, ly))),
            "inv_alpha_lipschitz": float(np.max(np.max(_log_diff_exp(-ly, -dlse[..., 0]),
                                                       axis=-1) - ldx)),
            "f_lipschitz": float(np.max(model.log_norm(dF) - ldx)),
            "f_lipschitz_sharp": float(np.max(model.log_norm(dF) - ldx)),
            "softmax_jacobian_norm": float(_log(np.abs(np.linalg.eigvalsh(S)).max())),
            "residual_bound": float(np.log(max(np.sqrt(np.sum(C * C, axis=-1)).max(),
                                               np.abs(C).max()))),
            "g_factor": _max_log_ratio(model.log_norm(model.normalized_P_difference(Fx, dF, p.B)),
                                       model.log_norm(dF)),
        })
    else:
        Ux = np.exp(Mx - m[:, None, None])
        Rx = Ux - Ux.sum(-1, keepdims=True) * p.B
        dR = dU - dU.sum(-1, keepdims=True) * p.B
        out.update({
            "u_sup": float(max(Mx.max(), My.max())),
            "r_lipschitz": float(np.max(m + np.max(model.log_norm(dR, axes=-1), axis=-1) - ldx)),
            "r_sup": float(np.max(m + _log(np.abs(Rx).max(axis=(-2, -1))))),
            "r_norm_bound": float(np.max(m + np.max(model.log_norm(Rx, axes=-1), axis=-1))),
        })
    return out


# --------------------------------------------------------------------------- per claim


def measure_vectorization(n: int, d: int, k: int, rng: np.random.Generator) -> dict[str, Any]:
    """Numeric tensor-trick identities on k random Gaussian instances (errors relative to
    Σ|A||X|), the design's shape, and the loss as a sum of per-block softmax losses."""
    A1 = rng.standard_normal((k, n, d))
    A2 = rng.standard_normal((k, n, d))
    X = rng.standard_normal((k, d, d))
    M = model.logits(A1, A2, X)
    K = model.kron_design(A1, A2)
    vr = np.einsum("kab,kb->ka", K, X.reshape(k, -1))
    # each instance's errors relative to its own Σ|A||X| (a shared scale would let an instance
    # with a tiny X, e.g. |x| = 5e-7 at d = 1, pass off the wrong pairing's O(1) relative
    # violation as round-off)
    scale = (np.abs(K) @ np.abs(X.reshape(k, -1, 1)))[..., 0].max(axis=1, keepdims=True)
    Xc = np.swapaxes(X, -1, -2).reshape(k, -1)
    K21 = model.kron_design(A2, A1)
    Mc = np.swapaxes(M, -1, -2).reshape(k, -1)
    wrong = (np.abs(np.einsum("kab,kb->ka", K, Xc) - Mc) / scale).max(axis=1)
    blocks_ok = all(np.array_equal(K[i, j * n:(j + 1) * n], np.kron(A1[i, j:j + 1], A2[i]))
                    for i in range(min(k, 10)) for j in range(n))
    B = model.Assumptions(n, d, 1.0).sample(rng, k).B
    whole = model.normalized_loss(A1, A2, B, X)
    per_block = []
    for j in range(n):
        Aj = K[:, j * n:(j + 1) * n, :]
        z = np.einsum("kab,kb->ka", Aj, X.reshape(k, -1))
        f = model.row_softmax(z[:, None, :])[:, 0]
        per_block.append(0.5 * np.sum((f - B[:, j]) ** 2, axis=-1))
    return {
        "k": k,
        "err_row": float((np.abs(vr - M.reshape(k, -1)) / scale).max()),
        "err_col": float((np.abs(np.einsum("kab,kb->ka", K21, Xc) - Mc) / scale).max()),
        "wrong_pairing_min_err": float(wrong.min()),
        "blocks_equal": bool(blocks_ok),
        "kron_norm": np.linalg.norm(K, 2, axis=(-2, -1)).tolist(),
        "norm_product": (np.linalg.norm(A1, 2, axis=(-2, -1))
                         * np.linalg.norm(A2, 2, axis=(-2, -1))).tolist(),
        "loss_whole": whole.tolist(),
        "loss_blocks": np.sum(per_block, axis=0).tolist(),
        "blocks": len(per_block),
        "design_shape": [int(K.shape[1]), int(K.shape[2])],
    }


#: the exact-identity tolerance: 1e-10 of the terms' size (float64 round-off ≈ 1e-16 of it)
_IDENTITY_RTOL = 1e-10


def _complex_step_gradient(A1, A2, B, X, loss: str):
    """(gradient by complex steps, its tolerance) at one instance; the rescaled loss is scaled
    by e^{-2m}, m the largest logit.  Both losses are analytic in X, so ∂L/∂X_pq =
    Im L(X + ih e_pq)/h + O(h²|L‴|) with no cancellation: at h = 1e-100 the derivative is exact
    to float64 round-off of the loss's terms.  The tolerance is 1e-10 of their size, 2aS (a =
    ‖A1‖‖A2‖ bounds the map X ↦ M, S the loss's scale ½Σ(|f| + |b|)², which bounds
    ‖∂L/∂M‖), the tolerance of an exact identity.  The model's own loss takes a complex X as it is
    (squares, not moduli; the row softmax's shift by a row's largest entry is a shift, which the
    softmax does not see)."""
    a = float(np.linalg.norm(A1, 2) * np.linalg.norm(A2, 2))
    h = 1e-100
    M = model.logits(A1, A2, X)
    if loss == "normalized":
        def fun(Z):
            return model.normalized_loss(A1, A2, B, Z)

        S = 0.5 * float(np.sum((model.row_softmax(M) + np.abs(B)) ** 2))
    else:
        m = float(M.max())

        def fun(Z):
            U = np.exp(model.logits(A1, A2, Z) - m)
            return 0.5 * np.sum((U - U.sum(axis=-1, keepdims=True) * B) ** 2)

        U = np.exp(M - m)
        S = 0.5 * float(np.sum((U + U.sum(-1, keepdims=True) * np.abs(B)) ** 2))
    G = np.zeros_like(X)
    for idx in np.ndindex(*X.shape):
        Z = X.astype(complex)
        Z[idx] += 1j * h
        G[idx] = fun(Z).imag / h
    return G, _IDENTITY_RTOL * 2 * a * S


def measure_gradient(A1, A2, B, X) -> dict[str, Any]:
    """Complex-step gradients of both losses at the instance, their tolerances, and the
    numeric model's block form Σ_j A_jᵀ S_j c_j against its matrix form A1ᵀPA2."""
    out = {}
    for loss in ("normalized", "rescaled"):
        grad, tol = _complex_step_gradient(A1, A2, B, X, loss)
        out[f"cs_{loss}"] = grad.ravel().tolist()
        out[f"tol_{loss}"] = tol
    n = A1.shape[0]
    K = model.kron_design(A1, A2)
    F = model.row_softmax(model.logits(A1, A2, X))
    blocks = sum(K[j * n:(j + 1) * n].T @ ((np.diag(F[j]) - np.outer(F[j], F[j])) @ (F[j] - B[j]))
                 for j in range(n))
    gm = model.normalized_gradient(A1, A2, B, X).ravel()
    out["block_form_error"] = float(np.abs(blocks - gm).max())
    out["block_form_scale"] = float(1 + np.abs(gm).max())
    return out


def measure_lipschitz(n, d, R, loss, *, samples, refine, maxiter, rng, grid_rng=None,
                      tick=None, witness_starts: int = 0, witness_rng=None,
                      premise_rng=None) -> dict[str, Any]:
    """Random pairs (lemma observations, local Hessian norms), the searched worst pair and its
    certified (arb) ratio, membership of the witness, and (if ``grid_rng``) the worst ratio on
    a grid of R' ≤ R."""
    res, worst, pts = search_worst_pair(n, d, R, loss, samples=samples, refine=refine,
                                        maxiter=maxiter, rng=rng)
    if tick:
        tick(0.6, "search")
    obs = lemma_observations(pts, loss)
    lh = model.log_hessian_norm(pts.A1, pts.A2, pts.B, pts.X, loss)
    lh_w = model.log_hessian_norm(np.stack([worst.A1] * 2), np.stack([worst.A2] * 2),
                                  np.stack([worst.B] * 2), np.stack([worst.X, worst.Y]), loss)
    ball = _ratio_ball(worst, loss)
    inside = model.contains_arb(worst, R)
    out = {
        "samples": int(pts.X.shape[0]), "evaluated": int(res.evaluated),
        "refinements": len(res.refinements),
        "log_worst_ratio": float(res.log_value), "log_random_best": float(res.random_best),
        "log_hessian_max": float(max(lh.max(), lh_w.max())),
        "witness_lower": certified_lower(ball) if inside else 0.0,
        "witness_upper": certified_upper(ball),
        "witness_inside": bool(inside),
        "witness": witness_record(worst, loss, ball, inside),
        "lemmas": obs,
    }
    if witness_starts:  # an explicit pair built from the logits: the sharper witness
        w = witness_pair(loss, n, d, R, witness_rng, starts=witness_starts)
        if tick:
            tick(0.8, "explicit witness")
        out["search_witness_lower"] = out["witness_lower"]
        if w is not None and w["witness_lower"] > out["witness_lower"]:
            out.update({k: w[k] for k in ("witness_lower", "witness_inside", "witness")})
            out["witness_from"] = "explicit pair (one block realising the logit Hessian's sup)"
        else:
            out["witness_from"] = "the search's worst pair"
    if premise_rng is not None and loss == "normalized" and n >= 2:
        out.update(premise_witness(premise_rng))
    if loss == "normalized":  # the closed form needs no ball: x, y pushed 10× outside
        far = model.log_gradient_ratio_stable(pts.A1, pts.A2, pts.B, 10 * pts.X, 10 * pts.Y, loss)
        out["log_far_ratio"] = float(np.max(far))
    if grid_rng:
        grid = [R * (i + 1) / len(grid_rng) for i in range(len(grid_rng))]
        worst_logs = []
        for i, Rg in enumerate(grid):
            r_, _, _ = search_worst_pair(n, d, Rg, loss, samples=max(50, samples // 4), refine=1,
                                         maxiter=maxiter, rng=grid_rng[i])
            worst_logs.append(float(r_.log_value))
        out["grid"] = {"R": grid, "log_worst": worst_logs}
    return out


def measure_shift(n, d, R, eta, *, samples, refine, maxiter, rng) -> dict[str, Any]:
    """The ICL target-shift identities and ratios on random moves and GD steps, and the searched
    worst ‖ΔF‖/‖ΔX‖ with its certified (arb) value."""
    box = model.Assumptions(n, d, R)
    p = box.sample(rng, samples)
    out: dict[str, Any] = {"samples": samples}
    Bt = model.shifted_target_normalized(p.A1, p.A2, p.B, p.X, p.Y)
    out["loss_moved"] = model.normalized_loss(p.A1, p.A2, p.B, p.Y).tolist()
    out["loss_shifted"] = model.normalized_loss(p.A1, p.A2, Bt, p.X).tolist()
    out["rowsum_error"] = float(np.abs(Bt.sum(-1) - p.B.sum(-1)).max())
    ldx = model.log_norm(p.X - p.Y)
    dF = model.softmax_differences(p.A1, p.A2, p.Y, p.X)[1]
    out["shift_identity_error"] = float(np.abs(Bt - p.B + dF).max())
    out["log_shift_ratio"] = _max_log_ratio(model.log_norm(dF), ldx)
    # rescaled (rows scaled by e^{-max}): residual identity and the shift ratio
    Btr = model.shifted_target_rescaled(p.A1, p.A2, p.B, p.X, p.Y)
    M0, M1 = model.logits(p.A1, p.A2, p.X), model.logits(p.A1, p.A2, p.Y)
    m = np.maximum(M0.max(-1, keepdims=True), M1.max(-1, keepdims=True))
    W0, W1 = np.exp(M0 - m), np.exp(M1 - m)
    lhs = W1 - W1.sum(-1, keepdims=True) * p.B
    rhs = W0 - W0.sum(-1, keepdims=True) * Btr
    out["rescaled_residual_error"] = float(np.abs(lhs - rhs).max())
    prob = np.all(np.abs(p.B.sum(-1) - 1) < 1e-12, axis=-1) & np.all(p.B >= 0, axis=(-2, -1))
    if prob.any():
        log_growth = np.logaddexp(0.0, _log(W1.sum(-1)) - _log(W0.sum(-1)))
        err = np.exp(_log(np.abs(Btr.sum(-1) - p.B.sum(-1))) - math.log(n) - log_growth)
        out["rescaled_rowsum_error"] = float(err[prob].max())
    dM = model.logits(p.A1, p.A2, p.Y - p.X)
    small = np.abs(dM).max(-1, keepdims=True) <= 1.0
    a0, a1 = W0.sum(-1, keepdims=True), W1.sum(-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        dW = W0 * np.expm1(np.where(small, dM, 0.0))
        dBr = np.where(small, dW.sum(-1, keepdims=True) * p.B - dW,
                       (W0 - a0 * p.B) - (W1 - a1 * p.B)) / a0
        row_scale = 1.0 + a1 / a0
    out["rescaled_shift_identity_error"] = float((np.abs(Btr - p.B - dBr) / row_scale).max())
    out["log_rescaled_shift_ratio"] = _max_log_ratio(model.log_norm(dBr), ldx)
    # a GD step on the normalized loss
    G = model.normalized_gradient(p.A1, p.A2, p.B, p.X)
    X1 = p.X - eta * G
    Bg = model.shifted_target_normalized(p.A1, p.A2, p.B, p.X, X1)
    out["gd_loss_moved"] = model.normalized_loss(p.A1, p.A2, p.B, X1).tolist()
    out["gd_loss_shifted"] = model.normalized_loss(p.A1, p.A2, Bg, p.X).tolist()
    F0 = model.row_softmax(M0)
    dFg = model.softmax_differences(p.A1, p.A2, X1, p.X)[1]
    out["log_gd_ratio"] = _max_log_ratio(model.log_norm(dFg) - math.log(eta),
                                         model.log_norm(F0 - p.B))

    def objective(theta):
        q = box.decode(theta)
        if _needs_stable(R):
            dq = model.softmax_differences(q.A1, q.A2, q.X, q.Y)[1]
        else:
            dq = (model.row_softmax(model.logits(q.A1, q.A2, q.X))
                  - model.row_softmax(model.logits(q.A1, q.A2, q.Y)))
        return model.finite_diff_log(model.log_norm(dq), model.log_norm(q.X - q.Y))

    res = maximize_log(objective, box.encode(p), refine=refine, maxiter=maxiter)
    w = box.decode(res.theta[None, :])[0]
    import flint

    old = flint.ctx.prec
    try:
        flint.ctx.prec = 128
        ball = model.shift_ratio_arb(w.A1, w.A2, w.X, w.Y)
    finally:
        flint.ctx.prec = old
    inside = model.contains_arb(w, R)
    out.update({"log_search_shift": float(res.log_value), "evaluated": int(res.evaluated),
                "witness_lower": certified_lower(ball) if inside else 0.0,
                "witness_inside": bool(inside),
                "witness": witness_record(w, "normalized", ball, inside)})
    return out


# --------------------------------------------------------------------------- explicit witness pair


def _single_block_form(z, v, b, loss):
    """vᵀJv for one block with logits z and target b (the numeric model's logit Hessian,
    through a one-row instance A1 = e₀, A2 = I, X with row 0 = z)."""
    n = len(z)
    A1 = np.zeros((n, n))
    A1[0, 0] = 1.0
    X = np.zeros((n, n))
    X[0] = z
    B = np.zeros((n, n))
    B[0] = b
    J = model.block_hessians(A1, np.eye(n), B, X, loss)[0]
    return float(v @ J @ v)


def _unit(x):
    nx = np.linalg.norm(x)
    return x / nx if nx > 0 else x


def witness_pair(loss: str, n: int, d: int, R: float, rng: np.random.Generator, *,
                 starts: int = 12, maxiter: int | None = None, eps: float = 1e-6):
    """An explicit pair inside the assumptions whose gradient-difference ratio is close to the
    supremum: maximise |vᵀJ(z, b)v| over logits ‖z‖ ≤ R², unit v and ‖b‖ ≤ 1 (numeric model,
    BFGS from random starts), then build one block that realises it (A1 = √a e₀e₀ᵀ,
    A2 = √a[Q 0] with Q orthonormal spanning z and v, X with row 0 = Qᵀz/a) and the pair
    X ∓ (ε/2)·(direction of v).  Its ratio is certified in arb.  For d = 1, z ∥ v."""
    from scipy.optimize import minimize

    if n < 2:
        return None
    maxiter = maxiter or max(40, 1600 // n)  # each iteration costs ~3n model evaluations
    rho = R * R

    def unpack(t):
        if d >= 2:
            z, v, b = t[:n], t[n:2 * n], t[2 * n:]
        else:
            v, b = t[:n], t[n:]
            z = np.tanh(t[-1]) * _unit(v) * 2  # rescaled below
            b = b[:-1]
        v = _unit(v)
        zn = np.linalg.norm(z)
        z = rho * np.tanh(zn) * z / zn if zn > 0 else z
        return z, v, _unit(b) * (1 - 1e-12)  # the sup over ‖b‖ ≤ 1 is on the sphere

    def neg(t):
        z, v, b = unpack(t)
        return -abs(_single_block_form(z, v, b, loss))

    best = None
    size = 3 * n if d >= 2 else 2 * n + 1
    for _ in range(starts):
        t0 = rng.standard_normal(size)
        r = minimize(neg, t0, method="BFGS", options={"maxiter": maxiter, "gtol": 1e-10})
        if best is None or r.fun < best.fun:
            best = r
    z, v, b = unpack(best.x)
    a = R * (1 - 1e-9)
    k = min(n, d)
    basis = [z, v] if d >= 2 else [v]
    Q = []
    for vec in basis + list(np.eye(n)):
        w = vec - sum(np.dot(vec, q) * q for q in Q)
        if np.linalg.norm(w) > 1e-8 and len(Q) < k:
            Q.append(_unit(w))
    Q = np.array(Q).T  # n × k, orthonormal columns, span ⊇ {z, v}
    A1 = np.zeros((n, d))
    A1[0, 0] = np.sqrt(a)
    A2 = np.zeros((n, d))
    A2[:, :Q.shape[1]] = np.sqrt(a) * Q
    X0 = np.zeros((d, d))
    X0[0, :Q.shape[1]] = Q.T @ z * (1 - 4e-6) / a
    D = np.zeros((d, d))
    D[0, :Q.shape[1]] = Q.T @ v
    step = eps * R
    X, Y = X0 - 0.5 * step * D, X0 + 0.5 * step * D
    B = np.zeros((n, n))
    B[0] = b
    pair = model.Pairs(A1, A2, B, X, Y)
    ball = _ratio_ball(pair, loss)
    inside = model.contains_arb(pair, R)
    return {"value_float": float(abs(_single_block_form(z, v, b, loss)) * a * a),
            "witness_lower": certified_lower(ball) if inside else 0.0,
            "witness_inside": bool(inside), "witness": witness_record(pair, loss, ball, inside)}


def premise_witness(rng: np.random.Generator, *, starts: int = 3, R: float = 3.0) -> dict:
    """A certified lower bound on sup over all logits z and ‖b‖ ≤ 1 of
    ‖∇²_z ½‖softmax(z) − b‖²‖₂ (the Hessian norm that closed-form Lipschitz bounds rest on):
    :func:`witness_pair` at two logits and radius R builds an explicit pair, inside the
    assumptions, whose certified gradient-difference ratio is at most ‖A‖²·that supremum with
    ‖A‖ ≤ R, so ratio/R² bounds it below (more logits only raise the supremum: extra logits
    far below the others reproduce two)."""
    from fractions import Fraction

    w = witness_pair("normalized", 2, 2, R, rng, starts=starts)
    if w is None or not w["witness_inside"] or not w["witness_lower"] > 0:
        return {"premise_witness": 0.0}
    exact = Fraction(w["witness_lower"]) / Fraction(R) ** 2
    v = float(exact)
    if Fraction(v) > exact:
        v = float(np.nextafter(v, -np.inf))
    return {"premise_witness": v, "premise_witness_pair": w["witness"]}


# --------------------------------------------------------------------------- data moves


def _data_move(box, p, rng, k):
    """A second data pair (A1', A2') inside the set: half near moves, half fresh draws."""
    q = box.sample(rng, k)
    near = rng.random(k) < 0.5
    scale = 10.0 ** rng.uniform(-4, -1, k)[:, None, None]
    A1n = p.A1 + scale * np.sqrt(box.R) * rng.standard_normal(p.A1.shape) / np.sqrt(p.A1[0].size)
    A2n = p.A2 + scale * np.sqrt(box.R) * rng.standard_normal(p.A2.shape) / np.sqrt(p.A2[0].size)
    a = np.linalg.norm(A1n, 2, axis=(-2, -1)) * np.linalg.norm(A2n, 2, axis=(-2, -1))
    shrink = np.minimum(1.0, box.R * (1 - 1e-9) / a)[:, None, None] ** 0.5
    A1n, A2n = A1n * shrink, A2n * shrink
    sel = near[:, None, None]
    return np.where(sel, A1n, q.A1), np.where(sel, A2n, q.A2)


def _delta_design(A1, A2, A1b, A2b):
    """(log ‖A'⊗ − A⊗‖₂, whether it is resolved): the difference is ΔA1⊗A2' + A1⊗ΔA2; a move
    whose two parts cancel to below 1e-5 of their size (e.g. A1 → cA1, A2 → A2/c) cannot be
    resolved in float64 and gives no observation."""
    d1, d2 = A1b - A1, A2b - A2
    K1, K2 = model.kron_design(d1, A2b), model.kron_design(A1, d2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ldA = np.log(np.linalg.norm(K1 + K2, 2, axis=(-2, -1)))
        size = np.log(np.linalg.norm(K1, 2, axis=(-2, -1)) + np.linalg.norm(K2, 2, axis=(-2, -1)))
        ok = np.isfinite(ldA) & (ldA - size > math.log(1e-5))
    return ldA, ok


def data_move_ratio(A1, A2, A1b, A2b, X):
    """(log ‖F(A') − F(A)‖_F − log ‖A'⊗ − A⊗‖₂ (−inf for unresolved moves), ΔF) batched: the
    logit change ΔM = ΔA1·X·A2'ᵀ + A1·X·ΔA2ᵀ is formed from the moves themselves."""
    d1, d2 = A1b - A1, A2b - A2
    dM = d1 @ X @ np.swapaxes(A2b, -1, -2) + A1 @ X @ np.swapaxes(d2, -1, -2)
    dF = model.logit_differences(model.logits(A1b, A2b, X), model.logits(A1, A2, X), dM)[1]
    ldA, ok = _delta_design(A1, A2, A1b, A2b)
    return np.where(ok, model.finite_diff_log(model.log_norm(dF), ldA), -np.inf), dF


def _data_ratio_arb(A1, A2, A1b, A2b, X, prec: int = 128):
    """Certified ‖F(A') − F(A)‖_F / ‖A'⊗ − A⊗‖_F (a lower bound of the spectral-norm ratio)."""
    import flint

    old = flint.ctx.prec
    try:
        flint.ctx.prec = prec
        D = model.row_softmax_arb(A1b, A2b, X) - model.row_softmax_arb(A1, A2, X)
        num = sum((D[i, j] ** 2 for i in range(D.nrows()) for j in range(D.ncols())),
                  flint.arb(0))
        den = flint.arb(0)
        for j in range(A1.shape[0]):
            for p_ in range(A1.shape[1]):
                for k in range(A2.shape[0]):
                    for q in range(A2.shape[1]):
                        t = (flint.arb(float(A1b[j, p_])) * flint.arb(float(A2b[k, q]))
                             - flint.arb(float(A1[j, p_])) * flint.arb(float(A2[k, q])))
                        den += t * t
        return model.sqrt_nonneg(num / den)
    finally:
        flint.ctx.prec = old


def measure_data_move(n, d, R, *, samples, refine, maxiter, rng) -> dict[str, Any]:
    """Random data moves A → A' (X fixed, both inside the set): the target-shift identity, the
    ratio ‖F(A') − F(A)‖_F/‖ΔA‖₂ (and the rescaled one), and a searched worst move certified
    in arb (Frobenius denominator)."""
    box = model.Assumptions(n, d, R)
    p = box.sample(rng, samples)
    A1b, A2b = _data_move(box, p, rng, samples)
    lr, dF = data_move_ratio(p.A1, p.A2, A1b, A2b, p.X)
    Bt = p.B - dF
    out = {"samples": samples,
           "loss_moved": model.normalized_loss(A1b, A2b, p.B, p.X).tolist(),
           "loss_shifted": model.normalized_loss(p.A1, p.A2, Bt, p.X).tolist(),
           "log_data_ratio": float(np.max(lr))}
    # rescaled: rows (Δu_j − Δα_j b_j)/α_j(A), scaled by the row max
    M0, M1 = model.logits(p.A1, p.A2, p.X), model.logits(A1b, A2b, p.X)
    m = np.maximum(M0.max(-1, keepdims=True), M1.max(-1, keepdims=True))
    W0, W1 = np.exp(M0 - m), np.exp(M1 - m)
    dW = W1 - W0
    dBr = (dW - dW.sum(-1, keepdims=True) * p.B) / W0.sum(-1, keepdims=True)
    ldA, ok = _delta_design(p.A1, p.A2, A1b, A2b)
    ldA = np.where(ok, ldA, -np.inf)
    out["log_rescaled_data_ratio"] = _max_log_ratio(model.log_norm(dBr), ldA) if R >= 1e-2 \
        else -math.inf  # tiny R: the direct difference is rounding noise (no observation)
    th0 = np.concatenate([box.encode(p), box.encode(model.Pairs(A1b, A2b, p.B, p.X, p.Y))], 1)
    half = th0.shape[1] // 2

    def objective(theta):
        q1 = box.decode(theta[:, :half])
        q2 = box.decode(theta[:, half:])
        return data_move_ratio(q1.A1, q1.A2, q2.A1, q2.A2, q1.X)[0]

    res = maximize_log(objective, th0, refine=refine, maxiter=maxiter)
    w1, w2 = box.decode(res.theta[None, :half])[0], box.decode(res.theta[None, half:])[0]
    ball = _data_ratio_arb(w1.A1, w1.A2, w2.A1, w2.A2, w1.X)
    inside = model.contains_arb(w1, R) and model.contains_arb(w2, R)
    rec = {"A1": w1.A1.tolist(), "A2": w1.A2.tolist(), "A1_moved": w2.A1.tolist(),
           "A2_moved": w2.A2.tolist(), "X": w1.X.tolist(), "ratio_arb": ball.str(12, radius=True),
           "inside_assumptions_certified": bool(inside)}
    out.update({"log_search_ratio": float(res.log_value), "evaluated": int(res.evaluated),
                "witness_lower": certified_lower(ball) if inside else 0.0,
                "witness_inside": bool(inside), "witness": rec})
    return out
