r"""ATTN_S trained from a *large* balanced aligned initialisation (numpy only; no theory).

One head per eigen-direction ($D$ heads of rank 1): head $d$ starts at $v=k_d=q_d=v_0$, every
other weight at zero, then every weight of every head is perturbed by $\varepsilon v_0$ times
a standard normal draw (so the run leaves the ansatz and trains the whole relevant block).
The rows of one population-GD run are a geometric grid of $v_0$; the readings are

* per row and direction, whether the direction's loss share $\ell_d(t)=L(M_{dd}e_de_d^\top)-
  L(M^\star_{dd}e_de_d^\top)$ (population MSE of the diagonal entry alone, from this package's
  moments) *accelerates*: its per-step decrease exceeds the first step's (an escape from a
  plateau) — or falls monotonically (no plateau);
* per row, the exponential rate of the loss gap $L(t)-L^\star$ fitted on its late window.
"""

from __future__ import annotations

import numpy as np

from . import _population as pop
from ._training import separate_population_gd

__all__ = ["aligned_init", "direction_losses", "accelerates", "fit_decay_rate", "lazy_sweep"]


def aligned_init(D: int, scales, eps: float, rng: np.random.Generator) -> dict:
    """Rows = ``scales``: D rank-1 heads, head d balanced on e_d at that scale, plus ε·scale noise."""
    scales = np.asarray(scales, float)
    S = scales.size
    v = np.repeat(scales[:, None], D, axis=1)
    K = np.zeros((S, D, 1, D))
    idx = np.arange(D)
    K[:, idx, 0, idx] = scales[:, None]
    Q = K.copy()
    noise = eps * scales
    v = v + noise[:, None] * rng.standard_normal(v.shape)
    K = K + noise[:, None, None, None] * rng.standard_normal(K.shape)
    Q = Q + noise[:, None, None, None] * rng.standard_normal(Q.shape)
    return {"r": v[:, :, None], "K": K, "Q": Q}


def direction_losses(M: np.ndarray, lam, N: int) -> np.ndarray:
    """ℓ_d = L(M_dd e_d e_dᵀ) − L(M*_dd e_d e_dᵀ) for M of shape (S, T, D, D) → (S, T, D)."""
    lam = np.asarray(lam, float)
    D = lam.size
    opt = np.diagonal(pop.population_optimum(lam, N))
    out = np.empty(M.shape[:-2] + (D,))
    for d in range(D):
        E = np.zeros((D, D))
        E[d, d] = 1.0
        here = pop.population_mse(np.diagonal(M, axis1=-2, axis2=-1)[..., d, None, None] * E, lam, N)
        out[..., d] = here - float(pop.population_mse(opt[d] * E, lam, N))
    return out


def accelerates(ell: np.ndarray, rounding: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row and direction (``ell`` (S, T, D)): does the per-step decrease ever exceed the
    first step's by more than ``rounding``?  Also returns max decrease / first decrease."""
    dec = ell[:, :-1, :] - ell[:, 1:, :]
    first = dec[:, 0, :]
    peak = dec.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(first > 0, peak / first, np.inf)
    return peak > first + rounding, ratio


def decay_window(gap: np.ndarray, lo: float, hi: float) -> slice:
    """The stretch where lo·gap₀ ≤ gap ≤ hi·gap₀, after its last entry above hi·gap₀."""
    g0 = float(gap[0])
    above = np.nonzero(gap > hi * g0)[0]
    start = int(above[-1]) + 1 if above.size else 0
    below = np.nonzero(gap[start:] < lo * g0)[0]
    return slice(start, start + (int(below[0]) if below.size else gap.size - start))


def fit_decay_rate(t: np.ndarray, gap: np.ndarray, lo: float, hi: float) -> tuple[float, float, int]:
    """Least-squares rate of ln(gap) on :func:`decay_window`; returns (rate, |rate of first half −
    rate of second half|, points)."""
    win = decay_window(gap, lo, hi)
    tt, yy = t[win], gap[win]
    if tt.size < 8 or np.any(yy <= 0):
        return float("nan"), float("nan"), int(tt.size)
    ly = np.log(yy)
    rate = -float(np.polyfit(tt, ly, 1)[0])
    h = tt.size // 2
    r1 = -float(np.polyfit(tt[:h], ly[:h], 1)[0])
    r2 = -float(np.polyfit(tt[h:], ly[h:], 1)[0])
    return rate, abs(r1 - r2), int(tt.size)


def lazy_sweep(lam, N: int, scales, *, lr: float, steps: int, eps: float, rng: np.random.Generator,
               tick=None) -> dict:
    """Population GD from :func:`aligned_init` at every scale; the readings of the module docstring."""
    lam = np.asarray(lam, float)
    D = lam.size
    p0 = aligned_init(D, scales, eps, rng)
    run = separate_population_gd(lam, N, p0, lr=lr, steps=steps, record_every=1, tick=tick)
    ell = direction_losses(run.M, lam, N)
    L0 = float(np.sum(lam))
    acc, ratio = accelerates(ell, rounding=64 * np.finfo(float).eps * L0)
    Lstar = float(pop.population_mse(pop.population_optimum(lam, N), lam, N))
    gap = run.loss - Lstar
    off = np.abs(run.M[:, -1]).copy()
    idx = np.arange(D)
    off[:, idx, idx] = 0.0
    return {"t": run.t, "loss": run.loss, "gap": gap, "ell": ell, "accelerates": acc, "ratio": ratio,
            "Lstar": Lstar, "off_diagonal": off.max(axis=(-2, -1)), "steps": run.steps}
