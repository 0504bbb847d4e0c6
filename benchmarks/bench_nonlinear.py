"""Timings of the nonlinear-regression ICL simulators and claims on this machine (CPU seconds).

* Model A (exact population GD through ``icltheory.dynamics.run_gd``, SciPy softmax): 10⁴ steps
  for K = 4, 8, 16, 32 (one run) and for four L values at once (K = 8).
* Model B (finite prompts): the stated size — K = 8 features in R^16, N = 64, σ = 0.02, sin
  tasks, M = 2000 prompts — for 200 steps.
* Each claim's default check at the quick and standard profiles (caches cleared, then the
  theory derived once outside the timing, ≈ 0.8 s), with the standard/quick ratio.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import check_claim  # noqa: E402

from icltheory.core import clear_caches  # noqa: E402
from proofs.nonlinear_regression import CLAIMS, theory  # noqa: E402
from proofs.nonlinear_regression.experiments import population, prompts, runs  # noqa: E402

STEPS = 10_000
print(f"Model A: {STEPS} GD steps (population, orthonormal features, linear tasks, ηL² = 4)")
print(f"{'K':>4} {'runs':>5} {'cpu s':>7} {'µs/step':>8}")
for K, Ls in [(4, (1.0,)), (8, (1.0,)), (16, (1.0,)), (32, (1.0,)), (8, (0.5, 1.0, 2.0, 4.0))]:
    C = runs.orthonormal_problem("linear", K, 1000, None)
    t0 = time.process_time()
    population.run_population(population.scaled_covariance(C, np.asarray(Ls)), 4.0, STEPS)
    sec = time.process_time() - t0
    print(f"{K:>4} {len(Ls):>5} {sec:7.2f} {1e6 * sec / STEPS:8.1f}")

print("\nModel B: K=8, d=16, N=64, σ=0.02, sin, M=2000 prompts, η=100, L=1, 200 steps")
batch = runs.prompt_problem("sin", 8, 16, 64, 0.02, 2000, np.random.default_rng(0),
                            np.random.default_rng(1))
t0 = time.process_time()
prompts.run_prompts(batch, 1.0, 100.0, 200)
sec = time.process_time() - t0
print(f"  {sec:.2f} cpu s ({1e3 * sec / 200:.2f} ms/step)")

print("\nDefault checks (CPU seconds; the derivation excluded)")
print(f"{'claim':<30} {'verdict':<13} {'quick':>7} {'standard':>9} {'ratio':>6}")
for claim in CLAIMS:
    times, verdict = {}, ""
    for profile in ("quick", "standard"):
        clear_caches()
        theory.theory()
        t0 = time.process_time()
        verdict = check_claim(claim.id, profile).verdict
        times[profile] = time.process_time() - t0
    print(f"{claim.id:<30} {verdict:<13} {times['quick']:7.2f} {times['standard']:9.2f} "
          f"{times['standard'] / max(times['quick'], 1e-9):6.1f}")
