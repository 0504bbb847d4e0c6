"""Timings of the softmax-regression checks on this machine.

Prints
* certified (arb) evaluations of the gradient-difference ratio per second at n=4, d=3, for
  both losses, and the float64 batched rate for comparison;
* the search's local optimiser: ``scipy.optimize.minimize`` with BFGS (used) against
  L-BFGS-B on the same refinement (L-BFGS-B's Fortran core calls multithreaded BLAS on tiny
  vectors: slow on a loaded machine);
* the SymPy structured gradient derivation (exact collapse) for d = 2..5;
* the certified band [lower, upper] of the gradient's Lipschitz constant, its wall and CPU time
  and box count per (loss, n, d, R) for n ≤ 6, d ≤ 4, R ∈ {1, 2} (``--band``; branch and bound,
  see ``proofs/softmax_regression/theory/_bnb.py``; 60 s cap each, about 20 minutes in all);
* the wall time of each claim's default check (standard profile).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import best_of, check_claim  # noqa: E402

from proofs.softmax_regression.experiments import _model as sr  # noqa: E402
from proofs.softmax_regression.theory import _symbolic as sym  # noqa: E402


def arb_rates(n=4, d=3, K=200):
    pts = sr.Assumptions(n, d, 2.0).sample(np.random.default_rng(0), K)
    print(f"certified ratio evaluations (arb) at n={n}, d={d}, R=2:")
    for loss in sr.LOSSES:
        def run():
            return [sr.gradient_ratio_arb(pts.A1[i], pts.A2[i], pts.B[i], pts.X[i], pts.Y[i], loss)
                    for i in range(K)]
        t, _ = best_of(run, repeat=2)
        print(f"  {loss:<10} {K / t:9.0f} pairs/s")
    big = sr.Assumptions(n, d, 2.0).sample(np.random.default_rng(1), 20000)
    t, _ = best_of(lambda: sr.log_gradient_ratio(big.A1, big.A2, big.B, big.X, big.Y, "normalized"))
    print(f"  float64 batched (normalized): {20000 / t:9.0f} pairs/s")


def optimiser(n=4, d=3):
    from scipy.optimize import minimize

    box = sr.Assumptions(n, d, 1.0)
    start = box.encode(box.sample(np.random.default_rng(2), 1))[0]
    eye = np.eye(box.dim) * 1e-7

    def fg(th):
        st = np.concatenate([th[None, :], th + eye])
        p = box.decode(st)
        v = sr.log_gradient_ratio(p.A1, p.A2, p.B, p.X, p.Y, "normalized")
        if not np.all(np.isfinite(v)):
            return 1e300, np.zeros(box.dim)
        return -float(v[0]), -(v[1:] - v[0]) / 1e-7

    print(f"one search refinement (n={n}, d={d}, dim {box.dim}, 150 iterations at most):")
    for method in ("BFGS", "L-BFGS-B"):
        t0 = time.process_time()
        r = minimize(fg, start, jac=True, method=method, options={"maxiter": 150})
        print(f"  {method:<9} {time.process_time() - t0:6.2f} s CPU  ratio {np.exp(-r.fun):.5f}"
              f"  iterations {r.nit}")


def derivations():
    print("SymPy structured gradient derivation (exact collapse, both losses):")
    for dd in (2, 3, 4, 5):
        t0 = time.perf_counter()
        si = sym.instance(4, dd)
        ok = all(sym.is_zero_matrix(sym.structured_collapse_residual(si, loss)) for loss in sr.LOSSES)
        print(f"  n=4, d={dd}: {time.perf_counter() - t0:6.2f} s  verified={ok}")


def bands(settings=None, seconds=60.0):
    """The certified band per (loss, n, d, R): lower = an explicit pair's ratio (arb, the
    experiments), upper = the branch and bound (theory; the eigen bound for the normalized
    loss, the ratio form for the rescaled one), its wall and CPU time, and whether it reached
    upper ≤ 1.0995 × its best point value (so ≤ 1.10 × the witness) within the cap."""
    from proofs.softmax_regression.experiments import _measure as experiments
    from proofs.softmax_regression.theory import _bnb as bnb

    settings = settings or [(n, d, R) for R in (1.0, 2.0) for n, d in
                            ((2, 2), (3, 2), (4, 3), (5, 4), (6, 4))]
    print(f"certified band of the gradient's Lipschitz constant: lower = an explicit pair's ratio "
          f"(arb), upper = branch and bound ({seconds:g} s cap, target upper ≤ 1.0995 × best)")
    print(f"{'loss':<11} {'n':>2} {'d':>2} {'R':>4} {'lower':>12} {'upper':>12} {'ratio':>7} "
          f"{'wall s':>7} {'cpu s':>7} {'boxes':>9}  status")
    for loss in ("normalized", "rescaled"):
        for n, d, R in settings:
            if loss == "normalized":
                bnb._lowered_delta(n)  # derive and lower once (not timed)
            else:
                bnb._lowered(loss, n)
            c0 = time.process_time()
            band = bnb.certified_band(loss, n, d, R, seconds=seconds, target=1.0995)
            cpu = time.process_time() - c0
            w = experiments.witness_pair(loss, n, d, R, np.random.default_rng(0), starts=6)
            lower = w["witness_lower"]
            print(f"{loss:<11} {n:>2} {d:>2} {R:>4g} {lower:12.7g} {band.upper:12.7g} "
                  f"{band.upper / lower if lower > 0 else float('inf'):7.4f} "
                  f"{band.seconds:7.1f} {cpu:7.1f} {band.boxes:9d}  {band.status}", flush=True)


def claims():
    print(f"{'claim (standard profile, defaults)':<34} {'verdict':<13} {'seconds':>8}")
    for cid in ("softmaxreg.vectorization", "softmaxreg.gradient", "softmaxreg.lipschitz",
                "softmaxreg.rescaled-lipschitz", "softmaxreg.candidate", "softmaxreg.icl-shift"):
        t, v = best_of(lambda: check_claim(cid), repeat=1)
        print(f"{cid:<34} {v.verdict:<13} {t:8.2f}")


if __name__ == "__main__":
    parts = sys.argv[1:] or ["--arb", "--optimiser", "--derivations", "--claims"]
    for flag, fn in (("--arb", arb_rates), ("--optimiser", optimiser),
                     ("--derivations", derivations), ("--band", bands), ("--claims", claims)):
        if flag in parts:
            fn()
