r"""Trainers (numpy; the quadratic-form trainer also on torch) — every loop is
:func:`icltheory.dynamics.run_gd`.

**Units.**  GD runs on $L_{1/2}=L/2$ with step $\eta$, so step $k$ is time $t/\tau=\eta k$ of the
flow $\tau\dot\theta=-\partial L_{1/2}/\partial\theta$; losses are plain MSE.

**Initialisation** (the paper-era reference code, one module per head): value weights
$\mathcal N(0,w^2)$, key and query $\mathcal N(0,w^2/(R(D+1)))$; the key's label column and the
value's $x\to$label entries are zero.  :func:`init_separate` draws the relevant block and, for
the whole model, embeds the *same* draws with the irrelevant entries at zero, so a population
run and a finite-sample run of one seed start from identical relevant weights.  A rank-$R$ head
is a rank-$R_{\max}$ head whose pairs $r\ge R$ are zero (they stay zero: $\partial_{K_r}\propto
Q_r$, $\partial_{Q_r}\propto K_r$), so runs of different ranks share one vectorised seed axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icltheory.core import NumericalTrouble, cached
from icltheory.dynamics import run_gd, threshold_times

from . import _population as pop
from ._models import NUMPY, QuadraticMoments, SeparateHeads, label_block

__all__ = ["relevant_block", "init_separate", "swap_directions", "scaled_copies", "Run", "train_quadratic", "separate_population_gd",
           "finite_sample_separate", "learned_fractions", "learning_times"]


def init_separate(rng: np.random.Generator, S: int, H: int, ranks, D: int, w_init: float, *,
                  full: bool = False) -> dict:
    """Paper-era initialisation (see the module docstring); ``ranks``: one per seed row or an int."""
    ranks = np.broadcast_to(np.asarray(ranks, dtype=int), (S,))
    Rmax = int(ranks.max())
    v = w_init * rng.standard_normal((S, H))
    K = rng.standard_normal((S, H, Rmax, D))
    Q = rng.standard_normal((S, H, Rmax, D))
    for s in range(S):
        sd = w_init / math.sqrt(ranks[s] * (D + 1))
        K[s] *= sd
        Q[s] *= sd
        K[s, :, ranks[s]:, :] = 0.0
        Q[s, :, ranks[s]:, :] = 0.0
    if not full:
        return {"r": v[:, :, None], "K": K, "Q": Q}
    r = np.zeros((S, H, D + 1))
    r[:, :, D] = v
    Kf = np.zeros((S, H, Rmax, D + 1))
    Kf[:, :, :, :D] = K
    return {"r": r, "K": Kf, "Q": Q}


def relevant_block(params: dict) -> np.ndarray:
    r"""$M=\sum_{h,r}v_hK_{h,r}^\top Q_{h,r}$ (rows, D, D): the relevant block of ATTN_S's
    seed rows at weights ``params`` (as :func:`init_separate` makes them, value ``r[..., 0]``)."""
    v = np.asarray(params["r"][:, :, 0], float)
    S, H = v.shape
    K = np.asarray(params["K"], float)
    Q = np.asarray(params["Q"], float)
    R, D = K.shape[2], K.shape[3]
    vr = np.repeat(v, R, axis=1)[:, :, None]
    return np.swapaxes(vr * K.reshape(S, H * R, D), 1, 2) @ Q.reshape(S, H * R, D)


def swap_directions(params: dict, rows, pairs) -> dict:
    """New seed rows: row ``rows[k]`` of ``params`` with input coordinates ``pairs[k] = (i, j)``
    of every key and query exchanged (the init of the two eigen-directions swapped)."""
    out = {name: np.array(v[list(rows)], copy=True) for name, v in params.items()}
    for k, (i, j) in enumerate(pairs):
        for name in ("K", "Q"):
            a = out[name][k]
            a[..., [i, j]] = a[..., [j, i]]
    return out


def scaled_copies(params: dict, scales) -> dict:
    """Seed row k × scale j → row k·len(scales) + j: every weight of row k multiplied by scales[j]
    (the same random direction at several initialisation scales)."""
    scales = np.asarray(scales, dtype=float)
    out = {}
    for name, v in params.items():
        rows = v[:, None] * scales.reshape((1, -1) + (1,) * (v.ndim - 1))
        out[name] = rows.reshape((v.shape[0] * scales.size,) + v.shape[1:])
    return out


@dataclass
class Run:
    """A GD run: record times t (τ), population loss (S, T), relevant block M (S, T, D, D), the
    final parameters, and (finite-sample runs) the training loss (S, T)."""

    t: np.ndarray
    loss: np.ndarray
    M: np.ndarray
    params: dict
    lr: float
    steps: int
    train_loss: np.ndarray | None = None
    heads: np.ndarray | None = None  # (S, T, H, D): each head's v_i Σ_r K_ird Q_ird
    #: adaptive runs (:mod:`._flows`): the integrator, its tolerances and work per row, and why
    #: each row stopped (``None`` for GD)
    solver: dict | None = None


def _diverged(trace, lr: float) -> None:
    if trace.stopped == "diverged":
        raise NumericalTrouble(f"gradient descent diverged at step {trace.diverged_at} "
                               f"(lr={lr:g} τ per step is too large)")


def train_quadratic(model, moments: QuadraticMoments, params: dict, *, lr: float, steps: int,
                    xp=NUMPY, record_every: int | str = 1, keep_theta: bool = False, stop=None,
                    check_every: int = 1000, tick=None, what: str = "gradient descent"):
    """Full-batch GD on $L_{1/2}$ of a quadratic-feature model: θ ← θ − η ∂L_{1/2}/∂θ, written
    once against the array namespace ``xp``.  Returns the :class:`~icltheory.dynamics.Trace`
    (``loss`` (S,) per record, ``theta`` (S, F) with ``keep_theta``) and the final parameters."""
    Cg = moments.on(xp)
    p = {k: xp.asarray(v) for k, v in params.items()}

    def step(_k: int) -> None:
        grads = model.pullback(p, moments.grad_half(model.theta(p, xp), xp, Cg), moments, xp)
        for name in p:
            p[name] -= lr * grads[name]

    def observe() -> dict:
        theta = model.theta(p, xp)
        out = {"loss": xp.to_numpy(moments.mse(theta, xp, Cg))}
        if keep_theta:
            out["theta"] = xp.to_numpy(theta)
        return out

    trace = run_gd(step, observe, max_steps=steps, record_every=record_every, stop=stop,
                   check_every=check_every, tick=tick, what=what)
    _diverged(trace, lr)
    return trace, {k: np.array(xp.to_numpy(v)) for k, v in p.items()}


def separate_population_gd(lam, N: int, params: dict, *, lr: float, steps: int, stop=None,
                           check_every: int | None = None, record_every: int | str = "geometric",
                           per_decade: int = 300, tick=None) -> Run:
    r"""GD on the exact population $L_{1/2}$ of ATTN_S's relevant block, Λ = diag(lam),
    vectorised over seed rows.  With $E=\Lambda^2-\mathbb E[\beta\beta^\top]M\Lambda$ the step is
    $v_i\mathrel{+}=\eta\langle E,K_i^\top Q_i\rangle$, $K_i\mathrel{+}=\eta v_iQ_iE^\top$,
    $Q_i\mathrel{+}=\eta v_iK_iE$ (the same iterates as :func:`train_quadratic` with
    :class:`SeparateHeads` on the population moments; the tests check this) in two batched
    matrix products.  ``stop(run)`` is asked every ``check_every`` steps."""
    lam = np.asarray(lam, float)
    D = lam.size
    W = np.diag(pop.beta_second_moment(lam, N))[:, None] * lam[None, :]
    L2 = np.diag(lam**2)
    v = np.array(params["r"][:, :, 0], dtype=float, copy=True)
    S, H = v.shape
    R = params["K"].shape[2]
    K = np.array(params["K"], dtype=float).reshape(S, H * R, D).copy()
    Q = np.array(params["Q"], dtype=float).reshape(S, H * R, D).copy()
    state = {}

    def relevant():
        vr = np.repeat(v, R, axis=1)[:, :, None]
        state["vr"] = vr
        state["M"] = np.swapaxes(vr * K, 1, 2) @ Q

    def step(_k: int) -> None:
        vr = state["vr"]
        E = L2 - W * state["M"]
        KE = K @ E
        QEt = Q @ np.swapaxes(E, 1, 2)
        gv = (KE * Q).sum(-1).reshape(S, H, R).sum(-1)
        K[...] += lr * vr * QEt
        Q[...] += lr * vr * KE
        v[...] += lr * gv
        relevant()

    def observe() -> dict:
        per_head = np.einsum("sh,shrd,shrd->shd", v, K.reshape(S, H, R, D), Q.reshape(S, H, R, D))
        return {"loss": pop.population_mse(state["M"], lam, N), "M": state["M"], "heads": per_head}

    def params_now() -> dict:
        return {"r": v[:, :, None].copy(), "K": K.reshape(S, H, R, D).copy(),
                "Q": Q.reshape(S, H, R, D).copy()}

    def as_run(trace) -> Run:
        return Run(trace.steps * lr, trace["loss"].T, np.swapaxes(trace["M"], 0, 1), params_now(),
                   lr, int(trace.n_steps), heads=np.swapaxes(trace["heads"], 0, 1))

    relevant()
    trace = run_gd(step, observe, max_steps=steps, record_every=record_every, per_decade=per_decade,
                   stop=(lambda tr: stop(as_run(tr))) if stop is not None else None,
                   check_every=check_every or max(steps, 1), tick=tick,
                   what="population gradient descent")
    _diverged(trace, lr)
    return as_run(trace)


def finite_sample_separate(moments: QuadraticMoments, params: dict, lam, N: int, *, H: int,
                           lr: float, steps: int, xp=NUMPY, stop=None, check_every: int | None = None,
                           tick=None) -> Run:
    """Full-batch GD of the whole ATTN_S model on the sequences behind ``moments`` (from the
    full-model ``params``); records the training loss and the relevant block M(t)
    (:func:`~._models.label_block`), whose population loss is the run's ``loss``.  ``stop(run)`` (e.g. :func:`~._analysis.settled`)
    is asked every ``check_every`` steps on the run so far."""
    model = SeparateHeads(H, params["K"].shape[2])
    D = moments.D

    def as_run(trace, final=None) -> Run:
        M = np.swapaxes(label_block(trace["theta"], D), 0, 1)  # (S, T, D, D)
        return Run(trace.steps * lr, pop.population_mse(M, lam, N), M, final, lr, int(trace.n_steps),
                   train_loss=trace["loss"].T)

    trace, final = train_quadratic(model, moments, params, lr=lr, steps=steps, xp=xp,
                                   record_every="geometric", keep_theta=True,
                                   stop=(lambda tr: stop(as_run(tr))) if stop is not None else None,
                                   check_every=check_every or max(steps // 20, 1), tick=tick,
                                   what="finite-sample gradient descent")
    return as_run(trace, final)


def tied_eigenspaces(lam) -> list[list[int]]:
    """Groups of ≥ 2 indices whose eigenvalues are equal (to 1e-12 relative): there the
    eigen-directions are not unique."""
    lam = np.asarray(lam, float)
    groups: list[list[int]] = []
    for i in np.argsort(-lam, kind="stable"):
        if groups and abs(lam[groups[-1][0]] - lam[i]) <= 1e-12 * abs(lam[i]):
            groups[-1].append(int(i))
        else:
            groups.append([int(i)])
    return [sorted(g) for g in groups if len(g) > 1]


@cached
def _fraction_constants(lam: tuple, N: int) -> tuple[np.ndarray, list[list[int]]]:
    """The learned values (the population optimum's diagonal) and the tied eigenspaces of a
    spectrum, memoised (the adaptive flows ask at every step)."""
    opt = np.diagonal(pop.population_optimum(lam, N)).copy()
    opt.flags.writeable = False
    return opt, tied_eigenspaces(lam)


def learned_fractions(M: np.ndarray, lam, N: int) -> np.ndarray:
    """Per eigen-direction: M_dd over its learned value (the minimiser of the population loss).
    Inside an eigenspace of tied eigenvalues a head learns an arbitrary unit vector of it, so
    coordinates are not directions there: its fractions are the eigenvalues of the symmetric
    part of M restricted to it, over the (common) learned value, in decreasing order (the
    directions M itself has learned; equal to the diagonal once those are coordinates)."""
    opt, ties = _fraction_constants(tuple(np.asarray(lam, float).ravel().tolist()), int(N))
    frac = np.diagonal(M, axis1=-2, axis2=-1) / opt
    if not ties:
        return frac
    frac = np.array(frac, copy=True)
    for g in ties:
        sub = np.asarray(M)[..., g, :][..., :, g]
        ev = np.linalg.eigvalsh(0.5 * (sub + np.swapaxes(sub, -1, -2)))[..., ::-1]
        frac[..., g] = ev / opt[g[0]]
    return frac


def learning_times(t: np.ndarray, frac: np.ndarray, level: float = 0.5) -> np.ndarray:
    """When each direction was learned for good: the crossing of ``level`` after which its
    fraction stays ≥ ``level`` to the last record (nan if it is below at the end — never
    learned, or learned only for a while: a head moved on).  ``frac`` (S, T, D) → (S, D)."""
    frac = np.asarray(frac, float)
    out = threshold_times(t, np.swapaxes(frac, 1, 2), [level])[..., 0]
    below = ~(frac >= level)
    for s, d in zip(*np.nonzero(np.isfinite(out) & np.any(below, axis=1))):
        if below[s, -1, d]:
            out[s, d] = np.nan
            continue
        k = int(np.flatnonzero(below[s, :, d])[-1])  # the last record below: it crossed after it
        out[s, d] = threshold_times(t[k:], frac[s, k:, d][None], [level])[0, 0]
    return out
