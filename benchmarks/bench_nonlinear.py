"""Timings of the nonlinear-regression ICL simulators and checks (issue 6) on this machine.

* Model A (exact population GD, vectorised over runs): 10⁵ steps for K = 4, 8, 16, 32, one
  run, and 10⁵ steps of four L values at once (K = 8), with the time to attention 0.99.
* Model B (finite prompts, full-batch GD on Q from 0): the stated size — K = 8 features in
  R^16, N = 64, σ = 0.02, sin tasks, M = 2000 prompts, η = 100 — for ηL²t = 3·10⁵ (3000 steps),
  with the final mean relevant-token attention and loss ratio.
* Each claim's default check (standard profile) with its verdict.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import check_claim  # noqa: E402

from icltheory.dynamics._scaling import threshold_times  # noqa: E402
from icltheory.models import _nonlinear_icl as nl  # noqa: E402

STEPS = 100_000
print(f"Model A: {STEPS} GD steps (population, orthonormal features, linear tasks, ηL² = 4)")
print(f"{'K':>4} {'runs':>5} {'seconds':>8} {'µs/step':>8} {'T(0.99)':>10} {'flow T(0.99)':>13}")
for K, Ls in [(4, (1.0,)), (8, (1.0,)), (16, (1.0,)), (32, (1.0,)), (8, (0.5, 1.0, 2.0, 4.0))]:
    C = nl.normalised_covariance(nl.task_covariance("linear", nl.orthonormal_features(K, K)))
    L2 = np.asarray(Ls) ** 2
    # attention 0.99 needs T ≈ (K−1)²/(2K·10⁻⁴) steps; use ηL² = 4 so that K = 32 reaches it
    eta = 4.0
    t0 = time.perf_counter()
    tr = nl.run_population_gd(C[None] * L2[:, None, None], eta, STEPS)
    sec = time.perf_counter() - t0
    T = threshold_times(tr.t, tr.target_mean[0], [0.99])[0]
    flow = float(nl.isotropic_flow_time(0.99, K, eta * L2[0]))
    print(f"{K:>4} {len(Ls):>5} {sec:8.2f} {1e6 * sec / STEPS:8.1f} {T:10.1f} {flow:13.1f}")

print("\nModel B: K=8, d=16, N=64, σ=0.02, sin, M=2000 prompts, η=100, L=1, 3000 steps")
rng = np.random.default_rng(0)
V = nl.random_unit_features(8, 16, rng)
batch = nl.make_prompts(V, 2000, 64, 0.02, "sin", rng)
t0 = time.perf_counter()
tr = nl.run_prompt_gd(batch, 1.0, 100.0, 3000)
sec = time.perf_counter() - t0
Tb = threshold_times(tr.t, tr.attn, [0.5, 0.8, 0.9])
print(f"  {sec:.2f} s ({1e3 * sec / 3000:.2f} ms/step); T(0.5, 0.8, 0.9) = "
      f"{', '.join(f'{x:.0f}' for x in Tb)}; final mean attention {tr.attn[-1]:.4f}, "
      f"min {tr.attn_min[-1]:.3f}; loss ratio {tr.loss[-1] / tr.loss[0]:.2e}")

import proofs.nonlinear_regression as nlr  # noqa: E402

print("\nDefault checks (standard profile; caches cleared: cold timings)")
print(f"{'claim':<30} {'verdict':<13} {'seconds':>8}")
for cid in ("nonlinear.rescaling", "nonlinear.l-scaling", "nonlinear.summary-fast-rate",
            "nonlinear.summary-threshold", "nonlinear.two-phase", "nonlinear.asymptote",
            "nonlinear.oscillation", "nonlinear.final-attention", "nonlinear.regimes"):
    for cached in (nlr._population_sweep, nlr._isotropic_traj, nlr._orthonormal_cov,
                   nlr._rescaling_derivation, nlr._isotropic_derivation):
        cached.cache_clear()
    t0 = time.perf_counter()
    v = check_claim(cid)
    print(f"{cid:<30} {v.verdict:<13} {time.perf_counter() - t0:8.2f}")
