"""Benchmark: the torch backend on the trainers whose cost grows with data (GPU-ready).

Run:  python benchmarks/bench_torch.py        (needs ``pip install torch==2.13.0`` or a CUDA build)

1. Fig. 3's finite-sample simulator (b) at the paper's P = 80000: the O(P F²) moments of the
   whole ATTN_S model over the sequences and 10001 full-batch GD steps, on numpy and on torch,
   with the device torch ran on (CUDA when the machine has one; this project's machine has none,
   so the torch row is a CPU row there).  The two runs' losses are compared (float64 on both).
2. The nonlinear paper's model B (finite prompts) at 4000 prompts, 500 GD steps, both backends.
3. The softmax-attention variant at P = 2000, 300 steps, both backends.
4. The categorical-ICL trainer (the trained Transformer of ``catgd.training``, d = 10, d' = 5,
   C = 25, N = 10, batch 128): time per Adam step on both backends, and the reason for the gap
   measured: one small array call (an elementwise exp over a batch of attention scores) on each
   backend, and how many such calls the gap amounts to per step.

Each row prints torch ÷ numpy against the target of 1.5 on a CPU.

Torch runs the small per-step kernels on one CPU thread (its thread pool costs more than it
gains at these sizes); on a GPU the moments and the prompt trainer are where it pays.
"""

from __future__ import annotations

import time

import numpy as np

from icltheory.backends import NumpyBackend, TorchBackend


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def fig3_simulator_b(xp, P=80_000, steps=10_001):
    from proofs.linear_attention.experiments import _data as data
    from proofs.linear_attention.experiments import _models as models
    from proofs.linear_attention.experiments import _training as training
    from proofs.linear_attention.settings import code_to_paper

    N, D, H = 31, 4, 5
    lam = np.array([0.4, 0.3, 0.2, 0.1])
    eta, w = code_to_paper(N, 0.02, 0.01, 3)
    X, y = data.sample_sequences(P, N, np.diag(lam), np.random.default_rng(0))
    p = training.init_separate(np.random.default_rng(1), 1, H, 1, D, w, full=True)
    mom, t_mom = _timed(lambda: models.empirical_moments(X, y, xp=xp))
    run, t_gd = _timed(lambda: training.finite_sample_separate(mom, p, lam, N, H=H, lr=eta, steps=steps, xp=xp))
    return run.loss[0], t_mom, t_gd


def model_b(xp, prompts=4000, steps=500):
    from proofs.nonlinear_regression.experiments import prompts as pr
    from proofs.nonlinear_regression.experiments import tasks

    rng = np.random.default_rng(2)
    batch = pr.make_prompts(tasks.random_unit_features(8, 16, rng), prompts, 64, 0.02, "sin", rng)
    tr, t = _timed(lambda: pr.run_prompts(batch, [1.0], [50.0], steps, record_every="geometric", xp=xp))
    return tr["loss"][:, 0], t


def softmax_variant(xp, P=2000, steps=300):
    from proofs.linear_attention.experiments import _data as data
    from proofs.linear_attention.experiments import _softmax as sm

    rng = np.random.default_rng(3)
    X, y = data.sample_sequences(P, 31, np.diag([0.4, 0.3, 0.2, 0.1]), rng)
    model = sm.SoftmaxAttention(5, merged=False)
    p = sm.softmax_init(model, 4, 0.03, rng)
    (_, loss, _), t = _timed(lambda: sm.softmax_train(model, p, X, y, lr=1.0, steps=steps, record_every=10, xp=xp))
    return loss, t


def categorical_step(xp, steps=150):
    """Seconds per Adam step of the categorical trainer's Transformer (best of three runs)."""
    from proofs.categorical_icl.experiments import _data, _model, _training

    rng = np.random.default_rng(4)
    lay = _model.layout(10, 5)
    data = _data.synthetic_dataset(rng, 4096, d=10, N=10, W_true=rng.standard_normal((5, 25)), amplitude=10.0)
    best, curve = np.inf, None
    for _ in range(3):
        learner = _training.TFLearner(np.random.default_rng(1), lay, 25, 1)
        curve, t = _timed(lambda lrn=learner: _training.train(lrn, data, data.take(slice(0, 128)),
                                                              np.random.default_rng(1), steps=steps, batch=128,
                                                              lr=1e-3, clip=10.0, eval_every=10 * steps, xp=xp))
        best = min(best, t / steps)
    return np.array([c[1] for c in curve]), best


def small_call(xp, repeat=2000):
    """Seconds of one small array call: exp over a batch of attention scores (128 × 11 × 10)."""
    a = xp.asarray(np.random.default_rng(5).standard_normal((128, 11, 10)))
    xp.exp(a)
    t0 = time.perf_counter()
    for _ in range(repeat):
        xp.exp(a)
    return (time.perf_counter() - t0) / repeat


def _ratio(t_torch: float, t_numpy: float) -> str:
    r = t_torch / t_numpy
    return f"torch ÷ numpy = {r:.2f} (target ≤ 1.5: {'met' if r <= 1.5 else 'not met'})"


def main() -> None:
    ok, why = TorchBackend.available()
    if not ok:
        print(f"torch backend unavailable: {why}")
        return
    tb = TorchBackend()
    print(f"torch device: {tb.device}" + ("" if str(tb.device) == "cuda" else " (no GPU on this machine)"))
    print("== Fig. 3 simulator (b): ATTN_S, H=5, P=80000, 10001 full-batch GD steps")
    ln, m_np, g_np = fig3_simulator_b(NumpyBackend())
    lt, m_t, g_t = fig3_simulator_b(tb)
    print(f"   numpy: moments {m_np:.2f} s + GD {g_np:.2f} s;  torch[{tb.device}]: moments {m_t:.2f} s + GD {g_t:.2f} s")
    print(f"   max |loss_numpy − loss_torch| / max loss = {np.max(np.abs(ln - lt)) / np.max(ln):.2e} (float64 both)")
    print(f"   GD: {_ratio(g_t, g_np)}")
    print("== nonlinear model B: 4000 prompts × 64 tokens, d=16, 500 GD steps")
    ln, t_np = model_b(NumpyBackend())
    lt, t_t = model_b(tb)
    print(f"   numpy {t_np:.2f} s; torch[{tb.device}] {t_t:.2f} s; max rel loss diff "
          f"{np.max(np.abs(ln - lt)) / np.max(ln):.2e}; {_ratio(t_t, t_np)}")
    print("== softmax-attention ATTN_S variant: P=2000, N=31, 300 GD steps")
    ln, t_np = softmax_variant(NumpyBackend())
    lt, t_t = softmax_variant(tb)
    print(f"   numpy {t_np:.2f} s; torch[{tb.device}] {t_t:.2f} s; max rel loss diff "
          f"{np.max(np.abs(ln - lt)) / np.max(ln):.2e}; {_ratio(t_t, t_np)}")
    print("== categorical-ICL trainer: Transformer, d=10, d'=5, C=25, N=10, K=1, batch 128, 150 Adam steps")
    ln, s_np = categorical_step(NumpyBackend())
    lt, s_t = categorical_step(tb)
    c_np, c_t = small_call(NumpyBackend()), small_call(tb)
    print(f"   numpy {1e3 * s_np:.2f} ms/step; torch[{tb.device}] {1e3 * s_t:.2f} ms/step; max rel loss diff "
          f"{np.max(np.abs(ln - lt)) / np.max(ln):.2e}; {_ratio(s_t, s_np)}")
    print(f"   why: one small array call (exp over 128 × 11 × 10 scores) takes {1e6 * c_np:.1f} µs on numpy, "
          f"{1e6 * c_t:.1f} µs on torch[{tb.device}]; the step's gap is ≈ "
          f"{(s_t - s_np) / max(c_t - c_np, 1e-9):.0f} such calls' extra cost (the step makes a few hundred "
          "array calls on arrays this small, where per-call overhead, not arithmetic, sets the time)")


if __name__ == "__main__":
    main()
