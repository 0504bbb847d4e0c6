r"""Each seed's drop times of ATTN_S, measured by training (numpy only; no theory).

From a seed's relevant initial weights (value label→label entry $v_i$, key and query input
rows $k_i, q_i$; every other weight zero, as in the paper-era code):

* **finite-sample run** — full-batch GD of the whole model (quadratic-feature form, exact for
  every weight that reaches $\hat y_q$) on $P$ sampled sequences; its relevant block is the
  label-block coefficient (value-label × key-input plus value-input × key-label: the same
  features), and ``fs_route_share`` is the second route's share at the end — it starts at zero
  and grows only from sampling noise;
* **population run** — GD on the exact population loss of the relevant block (the same
  iterates without sampling error), the reference that separates sampling from modelling.

A direction is learned when $M_{dd}$ reaches half its learned value (the population
minimiser, by a linear solve); the m-th drop is the m-th direction learned for good.  The
first drop is the first time any direction reaches half its learned value (the claim's
$T_1$) — the same as the first direction learned for good unless a few heads first grow
along two nearly tied directions at once and one of them falls back below half as they
specialise.  The sampling
spread of the growth rate of direction d is read from the data: the relative standard error
of the sample mean of $y_q\beta_dx_{q,d}$ (whose population mean is the direction's growth
rate $\lambda_d^2$).
"""

from __future__ import annotations

import numpy as np

from icltheory.dynamics import threshold_times

from ._data import beta_and_query, sequence_chunks
from ._models import SeparateHeads, moments_of_chunks
from ._training import finite_sample_separate, learned_fractions, learning_times, separate_population_gd

__all__ = ["embed_heads", "growth_rate_spread", "first_crossings", "train_drop_times"]


def embed_heads(heads: dict, D: int) -> tuple[dict, dict]:
    """(relevant-block params, whole-model params) of rank-1 heads ``heads`` = {v (S,H), K, Q (S,H,D)}."""
    v, K, Q = (np.asarray(heads[k], float) for k in ("v", "K", "Q"))
    S, H = v.shape
    rel = {"r": v[:, :, None].copy(), "K": K[:, :, None, :].copy(), "Q": Q[:, :, None, :].copy()}
    r = np.zeros((S, H, D + 1))
    r[:, :, D] = v
    Kf = np.zeros((S, H, 1, D + 1))
    Kf[:, :, 0, :D] = K
    return rel, {"r": r, "K": Kf, "Q": Q[:, :, None, :].copy()}


def growth_rate_spread(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per direction: relative standard error of the sample mean of y_q β_d x_q,d."""
    return _spread_of_terms(_growth_terms(X, y))


def _growth_terms(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    beta, xq = beta_and_query(X, X.shape[2] - 1)
    return y[:, None] * beta * xq


def _spread_of_terms(z: np.ndarray) -> np.ndarray:
    return z.std(axis=0, ddof=1) / (np.sqrt(z.shape[0]) * np.abs(z.mean(axis=0)))


def _moments_and_spread(lam: np.ndarray, N: int, P: int, rng: np.random.Generator, tick=None):
    """``(empirical_moments(X, y), growth_rate_spread(X, y))`` of ``sample_sequences(P, N,
    diag(lam), rng)`` (the same bytes), the sequences drawn and read chunk by chunk."""
    z = np.empty((P, lam.size))
    done = 0

    def chunks():
        nonlocal done
        for Xk, yk in sequence_chunks(P, N, np.diag(lam), rng, 4096):
            z[done:done + len(yk)] = _growth_terms(Xk, yk)
            done += len(yk)
            yield Xk, yk

    mom = moments_of_chunks(chunks(), P, tick=tick)
    return mom, _spread_of_terms(z)


def first_crossings(t: np.ndarray, frac: np.ndarray, level: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``frac`` (S, T, D): the first time any direction's learned fraction reaches
    ``level`` (interpolated linearly on the largest fraction between the bracketing records; nan
    if none does) and that direction (−1: none)."""
    frac = np.asarray(frac, float)
    top = frac.max(axis=2)
    times = threshold_times(t, top, [level])[:, 0]
    reached = top >= level
    first = np.where(reached.any(axis=1), np.argmax(reached, axis=1), -1)
    dirs = np.array([int(np.argmax(frac[s, j])) if j >= 0 else -1 for s, j in enumerate(first)])
    return times, dirs


def train_drop_times(lam, N: int, P: int, heads: dict, *, lr: float, steps: int, rng: np.random.Generator,
                     tick=None) -> dict:
    """Both runs from ``heads``; per row the directions' learning times (τ; nan if not learned)."""
    lam = np.asarray(lam, float)
    D = lam.size
    rel, full = embed_heads(heads, D)
    mom, spread = _moments_and_spread(lam, N, P, rng, tick=tick)
    H = rel["r"].shape[1]
    fs = finite_sample_separate(mom, full, lam, N, H=H, lr=lr, steps=steps, tick=tick)
    f_fs = learned_fractions(fs.M, lam, N)
    t_fs = learning_times(fs.t, f_fs)
    first_fs, dir_fs = first_crossings(fs.t, f_fs)
    th = SeparateHeads(H, 1).theta(fs.params).reshape(-1, D + 1, D + 1, D)
    own, other = (np.sqrt(np.sum(x * x, axis=(1, 2))) for x in (th[:, D, :D, :], th[:, :D, D, :]))
    route = other / np.maximum(own + other, 1e-300)  # the value-input × key-label route's share at the end
    pop = separate_population_gd(lam, N, rel, lr=lr, steps=steps, tick=tick)
    f_pop = learned_fractions(pop.M, lam, N)
    t_pop = learning_times(pop.t, f_pop)
    first_pop, _ = first_crossings(pop.t, f_pop)
    return {"fs_times": t_fs, "pop_times": t_pop, "fs_first": first_fs, "fs_first_direction": dir_fs,
            "pop_first": first_pop, "spread": spread, "horizon": steps * lr, "fs_route_share": route,
            "fs_t": fs.t, "fs_loss": fs.train_loss, "pop_t": pop.t, "pop_loss": pop.loss}
