"""Timings of the categorical-ICL checks (the package proofs/categorical_icl) on this machine.

Prints
* the constructed Transformer against functional GD over 1000 and 10000 prompts
  (d=5, d'=8, C=25, N=10, K=3; target: seconds);
* per-prompt gradients (hand-written backprop, antithetic pairs) for 1e5 pairs, and the full
  ``catgd.stationarity`` check with 1e5 pairs per sample (target < 1 min);
* Adam steps per second of the two training models;
* the wall time of each claim's default check (standard profile).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import best_of, check_claim  # noqa: E402

from proofs.categorical_icl import theory  # noqa: E402
from proofs.categorical_icl.experiments import _data, _model, _stationarity, _training  # noqa: E402

P = theory.paper()

d, dp, C, N, K = 5, 8, 25, 10, 3
lay = _model.layout(d, dp)
rng = np.random.default_rng(0)
W = rng.standard_normal((dp, C))
gam = [np.diag(rng.uniform(0.3, 1.2, dp)) for _ in range(K)]
print(f"construction vs functional GD (d={d}, d'={dp}, C={C}, N={N}, K={K}, rbf kernel, rbf erase):")
for B in (1000, 10000):
    X = _data.sample_x(rng, "cube", (B, N + 1), d)
    y = rng.integers(0, C, (B, N))

    def run():
        fs, _ = P.functional_gd_states("rbf", X, y, W, gam, 1.0)
        _, hid, _ = _model.forward(_model.gd_model(lay, W, "rbf", 1.0, gam, erase="rbf", lam=300.0), X, y)
        return max(float(np.abs(h[:, :, lay.f] - f).max()) for h, f in zip(hid, fs))

    t, err = best_of(run, repeat=2)
    print(f"  {B:6d} prompts: {t:6.3f} s  (max |error| {err:.1e})")

sd, sdp, sC, sN = 4, 3, 6, 8
slay = _model.layout(sd, sdp)
Ws = rng.standard_normal((sdp, sC))
Ws -= Ws.mean(1, keepdims=True)
pairs = 100_000
batch = _data.draw_linear_task_prompts(rng, pairs, d=sd, dp=sdp, N=sN, W_e=Ws, x_dist="gaussian", task_scale=2.0)
fp = _stationarity.FreeParams.from_point(slay, _stationarity.StructuredPoint(np.ones(1), np.ones(1), [np.eye(sdp)]))
t, _ = best_of(lambda: _stationarity.pair_gradients(slay, Ws, "softmax", fp, batch), repeat=1)
print(f"per-prompt gradients, {pairs} antithetic pairs ({2 * pairs} prompts, d={sd}, d'={sdp}, "
      f"C={sC}, N={sN}, K=1): {t:.2f} s")
t0 = time.perf_counter()
v = check_claim("catgd.stationarity", prompts=pairs)
print(f"catgd.stationarity with {pairs} pairs per sample (fit + test + 2 perturbations): "
      f"{time.perf_counter() - t0:.1f} s  verdict={v.verdict}")

tl = _model.layout(10, 5)
data = _data.synthetic_dataset(rng, 512, d=10, N=20, W_true=rng.standard_normal((5, 25)), amplitude=10.0)
print("training (d=10, d'=5, C=25, N=20, K=1, batch 128):")
for name, learner in (("GD model", _training.GDLearner(rng, tl, 25, 1, "softmax")), ("Transformer", _training.TFLearner(rng, tl, 25, 1))):
    t0 = time.perf_counter()
    _training.train(learner, data, data.take(slice(0, 128)), np.random.default_rng(1), steps=100, batch=128,
            lr=1e-3, clip=10.0, eval_every=1000)
    print(f"  {name:<12} {100 / (time.perf_counter() - t0):7.1f} Adam steps/s")

print("default checks (standard profile):")
for cid in ("catgd.functional-gd", "catgd.cross-attention", "catgd.construction", "catgd.single-step",
            "catgd.equivariance", "catgd.stationarity", "catgd.training", "catgd.depth"):
    t0 = time.perf_counter()
    v = check_claim(cid)
    print(f"  {cid:<24} {time.perf_counter() - t0:6.2f} s  {v.verdict}")
