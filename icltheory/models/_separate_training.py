r"""Training drivers for separate key/query linear attention (ATTN_S) in the paper's units.

**Units.**  Models carry the paper's $1/N$; losses are plain MSE; GD runs on $L_{1/2}=L/2$ with
step $\eta$, so step $k$ is time $t/\tau=\eta k$ of the flow $\tau\dot\theta=-\partial
L_{1/2}/\partial\theta$.  The reference code (``yedizhang/linattn-icl``) omits the $1/N$ and runs
PyTorch SGD with rate $\eta_{\rm code}$ on the plain MSE.  Its output is homogeneous of degree
$p$ in the weights ($p=3$ for ATTN_S, $p=2$ for ATTN_M), so the code at weights $\theta$ equals
the paper model at weights $N^{1/p}\theta$, and one code step is

$$\frac{dt}{\tau}=2\,\eta_{\rm code}\,N^{2/p}\qquad(\text{ATTN_S, }N=31,\ \eta_{\rm code}=0.02:\ 0.3947\,\tau),$$

with paper-unit weights $=N^{1/p}\times$ code weights ($3.141\times$ for ATTN_S at $N=31$).
:func:`code_to_paper` applies this map; the claims' defaults are the code's ``--lr 0.02`` and
``--init`` mapped this way, so a run of ``k`` steps here is ``k`` epochs of the code.

**Initialisation** (the May-2025, paper-era code, one module per head): value weights
$\mathcal N(0,\text{init}^2)$, key and query $\mathcal N(0,\text{init}^2/(R(D+1)))$; the key's label
column and the value's $x\to$label entries are zero.  :func:`init_separate` draws the relevant
block (value label→label, keys/queries on inputs) and, for the full model, embeds the *same*
draws with the irrelevant entries at zero, so the population run (simulator a) and the
finite-sample run (simulator b) of one seed start from identical relevant weights.

**Rank embedding.**  A rank-$R$ head is a rank-$R_{\max}$ head whose key/query pairs $r\ge R$
are zero: their gradient is $\partial_{K_r}\propto Q_r$, $\partial_{Q_r}\propto K_r$, so they stay
exactly zero.  This lets runs with different ranks share one vectorised seed axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core import NumericalTrouble
from . import _linear_attention as la

__all__ = ["code_to_paper", "typical_scale", "init_separate", "SeparateRun", "train_separate",
           "learned_fractions", "learning_times"]


def code_to_paper(N: int, lr_code: float, init_code: float, p: int = 3) -> tuple[float, float]:
    """(η in τ per step, paper-unit init scale) for the reference code's ``--lr`` and ``--init``."""
    return 2.0 * lr_code * N ** (2.0 / p), init_code * N ** (1.0 / p)


def typical_scale(w_init: float, R: int, D: int) -> float:
    r"""Balanced-equivalent initial scale $(\sigma_v\sigma_k\sigma_q)^{1/3}=w\,(R(D+1))^{-1/3}$ of one
    head's product $v\,k_dq_d$ along an eigen-direction (the $v_0$ of the scalar ODE)."""
    return w_init * (R * (D + 1)) ** (-1.0 / 3.0)


def init_separate(rng: np.random.Generator, S: int, H: int, ranks, D: int, w_init: float, *,
                  full: bool = False) -> dict:
    """May-2025 initialisation in paper units (see the module docstring).

    ``ranks``: one rank per seed-axis entry (length S) or an int.  Key/query std uses each
    entry's own rank; pairs beyond it are zero.  ``full=True`` returns full-model shapes
    (value row of width D+1, key of width D+1) with the irrelevant entries zero."""
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


def _geometric_stride(k: int, per_octave: int = 256) -> int:
    """Recording stride at step k: every step up to ``per_octave``, then a power of two growing
    with k, so that each doubling of the step count gets ~``per_octave`` records (log-time plots
    and the log-time plateau detector see every plateau, however early)."""
    if k < per_octave:
        return 1
    return 1 << max(0, int(math.log2(k / per_octave)))


def learned_fractions(M: np.ndarray, lam: np.ndarray, c: np.ndarray) -> np.ndarray:
    r"""Fraction of each eigen-direction learned: $M_{dd}\lambda_dc_d$ (1 at the PCR coefficient)."""
    return np.diagonal(M, axis1=-2, axis2=-1) * lam * c


def learning_times(t: np.ndarray, frac: np.ndarray, level: float = 0.5) -> np.ndarray:
    """First time each direction's learned fraction reaches ``level`` (linear interpolation;
    nan if never).  ``frac`` (S, T, D) → (S, D)."""
    S, T, D = frac.shape
    out = np.full((S, D), np.nan)
    for s in range(S):
        for d in range(D):
            f = frac[s, :, d]
            idx = np.flatnonzero(f >= level)
            if idx.size == 0:
                continue
            k = int(idx[0])
            if k == 0:
                out[s, d] = t[0]
            else:
                a = (level - f[k - 1]) / (f[k] - f[k - 1])
                out[s, d] = t[k - 1] + a * (t[k] - t[k - 1])
    return out


@dataclass
class SeparateRun:
    """A (possibly chunked) GD run: step grid, plain-MSE loss (S, T), relevant block M (S, T, D, D)."""

    steps: np.ndarray
    loss: np.ndarray
    M: np.ndarray
    params: dict
    lr: float

    @property
    def t(self) -> np.ndarray:
        return self.steps * self.lr


def _relevant(theta: np.ndarray, m: la.QuadraticMoments) -> np.ndarray:
    S = theta.shape[0]
    th = theta.reshape(S, m.A, m.B, m.D)
    if m.A == 1:
        return th[:, 0]
    D = m.D
    return th[:, D, :D, :]


def train_separate(moments: la.QuadraticMoments, params: dict, *, H: int, lr: float, steps: int,
                   record_every: int | None = None, until=None, max_steps: int | None = None,
                   chunk: int | None = None) -> SeparateRun:
    """Full-batch GD on $L_{1/2}$ (``gd_train``), recording loss and the relevant block.

    Runs ``steps`` steps; if ``until(run)`` is given and returns False, keeps going in chunks of
    ``chunk`` steps up to ``max_steps``.  Divergence raises :class:`NumericalTrouble` naming the
    step at which the loss blew up."""
    Rmax = params["K"].shape[2]
    model = la.SeparateHeads(H, Rmax)
    max_steps = max(max_steps or steps, steps)
    p = params
    done = 0
    S_all, L_all, M_all = [], [], []
    target = steps
    while True:
        # within [done, target]: geometric chunks (stride doubles with the step count) unless a
        # fixed record_every is given
        while done < target:
            if record_every:
                every, end = record_every, target
            else:
                every = _geometric_stride(max(done, 1))
                end = min(target, max(2 * done, 256))
                end = done + max(every, (end - done) // every * every)
                end = min(end, target)
            res = la.gd_train(model, moments, p, lr=lr, steps=end - done, record_every=every, keep_theta=True)
            if res.diverged_at is not None:
                raise NumericalTrouble(f"gradient descent diverged at step {done + res.diverged_at} "
                                       f"(lr={lr:g} τ per step is too large)")
            keep = slice(0, None) if done == 0 else slice(1, None)
            S_all.append(res.steps[keep] + done)
            L_all.append(res.loss[:, keep])
            M_all.append(np.stack([_relevant(h, moments) for h in res.history], axis=1)[:, keep])
            p = res.params
            done = end
        run = SeparateRun(np.concatenate(S_all), np.concatenate(L_all, axis=1),
                          np.concatenate(M_all, axis=1), p, lr)
        if until is None or until(run) or done >= max_steps:
            return run
        target = min(done + (chunk or steps), max_steps)


def population_gd(lam: np.ndarray, N: int, params: dict, *, lr: float, steps: int,
                  record_every: int | None = None, until=None, max_steps: int | None = None,
                  check_every: int | None = None) -> SeparateRun:
    r"""Simulator (a), fast path: GD on the exact population $L_{1/2}$ of the relevant block,
    $\Lambda=\operatorname{diag}(\lambda)$, vectorised over the seed axis.

    With $E=\Lambda^2-\mathbb E[\beta\beta^\top]M\Lambda$ (elementwise here, both diagonal) the
    step is $v_i\mathrel{+}=\eta\langle E,K_i^\top Q_i\rangle$, $K_i\mathrel{+}=\eta v_iQ_iE^\top$,
    $Q_i\mathrel{+}=\eta v_iK_iE$ — the same iterates as :func:`gd_train` with
    :class:`SeparateHeads` on :func:`population_moments` (the tests check this), in two batched
    matrix products per step instead of generic einsums.  Stops early when ``until(run)`` holds
    (checked every ``check_every`` steps) and raises :class:`NumericalTrouble` at divergence."""
    lam = np.asarray(lam, float)
    D = lam.size
    c = 1.0 + (1.0 + lam.sum() / lam) / N
    Bd = lam**2 * c
    L2 = np.diag(lam**2)
    W = Bd[:, None] * lam[None, :]
    tr = float(lam.sum())
    v = np.array(params["r"][:, :, 0], dtype=float, copy=True)
    S, H = v.shape
    R = params["K"].shape[2]
    K = np.array(params["K"], dtype=float).reshape(S, H * R, D).copy()
    Q = np.array(params["Q"], dtype=float).reshape(S, H * R, D).copy()
    max_steps = max(max_steps or steps, steps)
    check_every = check_every or steps
    rec_s, rec_l, rec_M = [], [], []

    def loss_of(M):
        # plain MSE: tr Λ − 2 tr(MᵀΛ²) + Σ_ab B_a λ_b M_ab²
        return tr - 2.0 * np.einsum("sdd,d->s", M, lam**2) + np.einsum("sab,ab->s", M * M, W)

    limit = None
    k = 0
    with np.errstate(over="ignore", invalid="ignore"):
        while True:
            vr = np.repeat(v, R, axis=1)[:, :, None]
            M = np.swapaxes(vr * K, 1, 2) @ Q
            if (k % (record_every or _geometric_stride(k)) == 0 or k == max_steps
                    or (until is not None and k % check_every == 0)):
                loss = loss_of(M)
                if limit is None:
                    limit = 1e6 * max(float(np.max(loss)), 1e-300)
                if not np.all(np.isfinite(loss)) or float(np.max(loss)) > limit:
                    raise NumericalTrouble(f"gradient descent diverged at step {k} "
                                           f"(lr={lr:g} τ per step is too large)")
                if not rec_s or rec_s[-1] != k:
                    rec_s.append(k)
                    rec_l.append(loss)
                    rec_M.append(M.copy())
            if k >= steps and (until is None or k % check_every == 0 or k >= max_steps):
                run = SeparateRun(np.asarray(rec_s), np.asarray(rec_l).T, np.stack(rec_M, axis=1),
                                  {"r": v[:, :, None].copy(), "K": K.reshape(S, H, R, D).copy(),
                                   "Q": Q.reshape(S, H, R, D).copy()}, lr)
                if until is None or k >= max_steps or until(run):
                    return run
            E = L2 - W * M
            KE = K @ E
            QEt = Q @ np.swapaxes(E, 1, 2)
            gv = (KE * Q).sum(-1).reshape(S, H, R).sum(-1)
            K += lr * vr * QEt
            Q += lr * vr * KE
            v += lr * gv
            k += 1
