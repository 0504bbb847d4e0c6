"""Probe: ATTN_S (rank-1 heads) from the reference code's random initialisation at growing scale σ.

Run:  python scripts/probe_random_large_init.py

The paper's Fig. 6 says the largest initialisations decay exponentially, "the lazy regime".  A
lazy (linearised, NTK) limit needs the weights to move little relative to their size.  This
probe integrates the exact population gradient flow of the relevant block (the project's
simulator (a)) from the paper-era code's random initialisation — value N(0, σ²), key and query
N(0, σ²/(D+1)) (reference notes §6.5) — at σ = 1, 3, 10, 30, 100 and prints, per σ (median over
seeds):

* ``|M(0)|``: the largest entry of the initial relevant block M = Σ_h v_h k_h q_hᵀ (∝ σ³);
* ``move``: ‖θ(T) − θ(0)‖ / ‖θ(0)‖, the weights' relative change by the end T;
* ``slope``: d ln(L − L*) / d ln t at the first time the excess loss has fallen by half a decade
  from its start (a power law has a constant slope; an exponential's steepens without bound);
* ``excess(1τ)``: L − L* at t = 1 τ (after the random output is undone);
* ``last (τ)``: the time the last direction is learned (its learned fraction crosses ½), within
  ``T`` = 1e5 τ (``inf``: not by then).

Scaling (why no lazy limit with this initialisation): with θ = σθ̃, M(θ) = σ³M(θ̃), and in the
time s = σ⁴t the flow of θ̃ is the flow of ½ M̃ᵀCM̃ (the zero-target problem) up to O(σ⁻³): its
path does not depend on σ, so the relative change of the weights tends to that flow's own (an
O(1) number), not to 0.  The random output M(0) must first be undone, and that is a nonlinear
flow, not a linearisation.
"""

from __future__ import annotations

import numpy as np

from icltheory._cli import _one_blas_thread, _portable_arithmetic

_one_blas_thread()
_portable_arithmetic()

from proofs.linear_attention.experiments import _flows as flows  # noqa: E402
from proofs.linear_attention.experiments import _training as training  # noqa: E402

LAM = np.array([0.4, 0.3, 0.2, 0.1])  # Fig. 3's spectrum
N, H, SEEDS = 31, 5, 3
SIGMAS = (1.0, 3.0, 10.0, 30.0, 100.0)


def _flat(p: dict, k: int) -> np.ndarray:
    return np.concatenate([np.ravel(p["r"][k]), np.ravel(p["K"][k]), np.ravel(p["Q"][k])])


def main() -> None:
    D = LAM.size
    c = 1.0 + (1.0 + LAM.sum() / LAM) / N
    l_star = LAM.sum() - np.sum(LAM / c)  # plain MSE at the global minimum (Eq. 19, m = D)
    print(f"ATTN_S relevant block, D = {D}, N = {N}, H = {H}, λ = {LAM.tolist()}, {SEEDS} seeds; "
          "population gradient flow (simulator (a))")
    print(f"{'σ':>6} {'|M(0)|':>10} {'move':>6} {'slope':>6} {'excess(1τ)':>11} {'last (τ)':>9}")
    for sigma in SIGMAS:
        p0 = training.init_separate(np.random.default_rng(11), SEEDS, H, 1, D, sigma)
        run = flows.separate_population_flow(LAM, N, p0, t_max=1e5, t_first=1e-9, n_learn=D, settle=1.0,
                                             rtol=1e-8, atol_rel=1e-3, budget=1e13, check=None)
        M0 = np.abs(training.relevant_block(p0)).max(axis=(1, 2))
        move, slope, excess, last = [], [], [], []
        for k in range(SEEDS):
            a, b = _flat(p0, k), _flat(run.params, k)
            move.append(np.linalg.norm(b - a) / np.linalg.norm(a))
            ex = np.maximum(run.loss[k] - l_star, 1e-300)
            t = run.t
            i = int(np.argmax(ex <= ex[0] / 10**0.5)) if np.any(ex <= ex[0] / 10**0.5) else len(t) - 1
            lo, hi = max(i - 3, 1), min(i + 3, len(t) - 1)
            slope.append((np.log(ex[hi]) - np.log(ex[lo])) / (np.log(t[hi]) - np.log(t[lo])))
            excess.append(float(np.interp(0.0, np.log(np.maximum(t, 1e-300)), ex)))
            ev = run.solver["events"][k]
            last.append(float(np.max(ev)) if np.all(np.isfinite(ev)) else np.inf)
        print(f"{sigma:6g} {np.median(M0):10.3g} {np.median(move):6.2f} {np.median(slope):6.2f} "
              f"{np.median(excess):11.3g} {np.median(last):9.3g}")


if __name__ == "__main__":
    main()
