"""Benchmark: the data-scaled trainers on a CUDA GPU against numpy on the CPU.

Run:  python benchmarks/gpu.py [--allow-cpu] [--steps N]

1. Fig. 3's finite-sample simulator (b) at the paper's P = 80000: the O(P F²) moments of the
   whole ATTN_S model over the sequences, then full-batch GD (10001 steps by default).
2. The categorical-ICL training (``catgd.training``'s trainer): the GD model and the freely
   trained Transformer, Adam with batch 128, at the standard profile's sizes (C = 25, d' = 5,
   d = 10, N = 10, L = 2048 prompts).

Each row prints the numpy time, the torch time on the GPU and their ratio, and how far the two
runs' losses are apart (float64 on both, so they agree to rounding).  Without CUDA the script
says so and exits 0; ``--allow-cpu`` runs the same rows with torch on the CPU (to try the script
on a machine without a GPU; the ratios are then not GPU figures).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from icltheory.backends import NumpyBackend, TorchBackend


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def fig3(xp, steps: int):
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from bench_torch import fig3_simulator_b

    loss, t_mom, t_gd = fig3_simulator_b(xp, P=80_000, steps=steps)
    return np.asarray(loss), t_mom + t_gd


def categorical(xp, steps: int):
    from proofs.categorical_icl.experiments import _data as data
    from proofs.categorical_icl.experiments import _model as model
    from proofs.categorical_icl.experiments import _training as tr

    C, dprime, d, N, K, L = 25, 5, 10, 10, 1, 2048
    rng = np.random.default_rng(0)
    gen = dict(d=d, N=N, W_true=rng.standard_normal((dprime, C)), amplitude=1.0, x_dist="cube")
    val = data.synthetic_dataset(np.random.default_rng(1), 512, **gen)
    train = data.synthetic_dataset(np.random.default_rng(2), L, **gen)
    lay = model.layout(d, dprime)
    curves = []
    t_total = 0.0
    for learner, lr in ((tr.GDLearner(np.random.default_rng(3), lay, C, K, "rbf"), 1e-2),
                        (tr.TFLearner(np.random.default_rng(3), lay, C, K), 3e-3)):
        curve, t = _timed(lambda learner=learner, lr=lr: tr.train(
            learner, train, val, np.random.default_rng(4), steps=steps, batch=128, lr=lr, clip=10.0,
            eval_every=max(1, steps // 10), xp=xp))
        curves.append([c[2] for c in curve])
        t_total += t
    return np.asarray(curves, dtype=float), t_total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--allow-cpu", action="store_true", help="run with torch on the CPU when there is no GPU")
    ap.add_argument("--steps", type=int, default=None, help="GD / Adam steps (default: 10001 and 300)")
    args = ap.parse_args(argv)
    ok, why = TorchBackend.available()
    if not ok:
        print(f"skipped: the torch backend is unavailable ({why})")
        return 0
    tb = TorchBackend()
    if str(tb.device) != "cuda" and not args.allow_cpu:
        print("skipped: torch sees no CUDA device on this machine (--allow-cpu runs the rows on the CPU)")
        return 0
    print(f"torch device: {tb.device}" + ("" if str(tb.device) == "cuda" else " (CPU: not a GPU figure)"))
    rows = (("Fig. 3 simulator (b), ATTN_S, H = 5, P = 80000", fig3, args.steps or 10_001),
            ("categorical training, GD model + Transformer, L = 2048", categorical, args.steps or 300))
    for name, fn, steps in rows:
        ref, t_np = fn(NumpyBackend(), steps)
        out, t_t = fn(tb, steps)
        diff = float(np.max(np.abs(ref - out)) / max(np.max(np.abs(ref)), 1e-300))
        print(f"== {name}, {steps} steps")
        print(f"   numpy {t_np:.2f} s; torch[{tb.device}] {t_t:.2f} s; numpy ÷ torch = {t_np / t_t:.2f}×; "
              f"max relative loss difference {diff:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
