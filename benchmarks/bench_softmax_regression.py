"""Timings of the softmax-regression checks (issue 4) on this machine.

Prints
* certified (arb) evaluations of the gradient-difference ratio per second at n=4, d=3 (target
  ≥ 100/s), for both losses, and the float64 batched rate for comparison;
* the SymPy structured gradient derivation (the collapse Σ_j A_jᵀg_j = vec(A1ᵀPA2), exact) for
  d = 2..6 (target < 5 s);
* brute-force verification (explicit diff of L(X), exact comparison) at d = 3 (target < 30 s);
* the wall time of each claim's full default check (standard profile).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import best_of, check_claim  # noqa: E402

from icltheory.models import _softmax_regression as sr  # noqa: E402
from icltheory.symbolic import _softmax as sym  # noqa: E402

n, d, K = 4, 3, 300
pts = sr.Assumptions(n, d, 2.0).sample(np.random.default_rng(0), K)
print(f"certified ratio evaluations (arb, 53-bit balls) at n={n}, d={d}, R=2:")
for loss in sr.LOSSES:
    def run():
        return [sr.gradient_ratio_arb(pts.A1[i], pts.A2[i], pts.B[i], pts.X[i], pts.Y[i], loss)
                for i in range(K)]
    t, balls = best_of(run, repeat=2)
    worst_rad = max(float(b.rad()) / float(b.mid()) for b in balls if float(b.mid()) > 0)
    print(f"  {loss:<10} {K / t:9.0f} pairs/s   (worst relative radius {worst_rad:.1e})")
big = sr.Assumptions(n, d, 2.0).sample(np.random.default_rng(1), 20000)
t, _ = best_of(lambda: sr.log_gradient_ratio(big.A1, big.A2, big.B, big.X, big.Y, "normalized"))
print(f"  float64 batched (normalized): {20000 / t:9.0f} pairs/s")
t, _ = best_of(lambda: sr.log_gradient_ratio_stable(big.A1, big.A2, big.B, big.X, big.Y, "normalized"))
print(f"  float64 batched, cancellation-free differences (normalized): {20000 / t:9.0f} pairs/s")

print("SymPy structured gradient derivation (exact collapse, both losses):")
for dd in (2, 3, 4, 5, 6):
    t0 = time.perf_counter()
    si = sym.instance(n, dd)
    ok = all(sym.is_zero_matrix(sym.structured_collapse_residual(si, loss)) for loss in sr.LOSSES)
    print(f"  n={n}, d={dd}: {time.perf_counter() - t0:6.2f} s  verified={ok}")

print("brute-force verification (explicit diff of L(X), exact rational comparison):")
for nn in (2, 3, 4):
    for loss in sr.LOSSES:
        r = sym.brute_force_gradient_check(nn, 3, loss)
        print(f"  n={nn}, d=3, {loss:<10}: {r['seconds']:6.2f} s  ops={r['ops']:6d}  ok={r['ok']}")

print(f"{'claim (standard profile, defaults)':<34} {'verdict':<13} {'seconds':>8}")
for cid in ("softmaxreg.vectorization", "softmaxreg.gradient", "softmaxreg.lipschitz",
            "softmaxreg.rescaled-lipschitz", "softmaxreg.candidate", "softmaxreg.icl-shift"):
    t, v = best_of(lambda: check_claim(cid), repeat=1)
    print(f"{cid:<34} {v.verdict:<13} {t:8.2f}")
