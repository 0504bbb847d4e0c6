r"""Measurements with the blog summary's architecture (:mod:`.summary_model`: W_Q, W_K, W_V, w
and b trained), and the two-architecture measurements of the summary's experiment table and of
its early-phase lemma.  Each recipe takes plain numbers (sizes, steps, generators) and returns
measured numbers; nothing here reads a prediction or imports the theory.

Problems of the summary's architecture:

* :func:`orthonormal_prompts` — noiseless tokens on ``K`` orthonormal features of
  :math:`\mathbb R^K`, labels of tasks :math:`f=L\,g/\sqrt{\bar\gamma}` normalised like model A
  (:math:`\bar\gamma`: the mean semivariogram of ``g`` over distinct features, so that at
  :math:`L=1` a label has unit semivariogram, as in model A);
* model B's prompts (:func:`.runs.prompt_problem`: random unit features, noisy tokens).
"""

from __future__ import annotations

import numpy as np

from icltheory.dynamics import threshold_times

from . import population, prompts, summary_model, tasks
from .runs import curve, loss_rise

__all__ = ["orthonormal_prompts", "initial_weights", "summary_sweep", "summary_run",
           "end_sharpness", "early_phase_paper", "early_phase_summary", "step_rate",
           "table_paper", "table_summary", "label_scale"]


def label_scale(task: str, V: np.ndarray, rng, draws: int) -> float:
    """1/√γ̄ for the task family on the features ``V`` (γ̄: the mean semivariogram over
    distinct features; relu: a Monte Carlo covariance with ``draws`` draws)."""
    C = tasks.task_covariance(task, V, rng, draws)
    return float(np.sqrt(np.trace(tasks.normalised_covariance(C)) / np.trace(C)))


def orthonormal_prompts(task: str, K: int, N: int, M: int, draws: int, rng_cov,
                        rng_prompts) -> prompts.PromptBatch:
    """``M`` noiseless prompts of ``N`` tokens on ``K`` orthonormal features, labels normalised
    to a unit mean semivariogram (see the module docstring)."""
    V = tasks.orthonormal_features(K, K)
    scale = label_scale(task, V, rng_cov, draws)
    b = prompts.make_prompts(V, M, N, 0.0, task, rng_prompts)
    b.g, b.gq = b.g * scale, b.gq * scale
    return b


def initial_weights(rng, R: int, d: int, width: int, init_scale: float
                    ) -> summary_model.Weights:
    """``R`` draws of the summary's initial weights (token dimension d + 1)."""
    return summary_model.init_weights(rng, R, d + 1, width, init_scale)


def end_sharpness(batch_arrays: dict, L, eta, weights: summary_model.Weights) -> np.ndarray:
    """η × the loss's sharpness (largest Hessian eigenvalue) at ``weights``, per run."""
    sim = summary_model.SummaryGD(batch_arrays, L, eta, weights)
    return np.asarray(eta) * summary_model.sharpness(sim)


def summary_run(batch: prompts.PromptBatch, L: float, eta: float, steps: int, thresholds,
                weights: summary_model.Weights, late_from: float | None = None,
                tick=None) -> dict:
    """The summary's model at one L from ``weights`` until its mean relevant attention has
    reached every threshold (or ``steps``): crossing times, the late exponent of 1 − α fitted
    from the crossing of ``late_from`` to the end, η × the final sharpness, the initial
    attention, curves."""
    from icltheory.dynamics import loglog_fit

    P = summary_model.stack_prompts([batch])
    top = float(np.max(thresholds))

    def stop(tr) -> bool:
        return bool(tr["attn"][-1, 0] >= top)

    tr = summary_model.run_summary(P, [L], eta, weights, steps, stop=stop, tick=tick)
    t, a = tr.steps.astype(float), tr["attn"][:, 0]
    out = {"T": threshold_times(t, a, thresholds), "steps_run": tr.n_steps,
           "loss_rise": loss_rise(tr["loss"]), "attn_start": float(a[0]),
           "attn_end": float(a[-1]), "curve": curve(t, a), "loss_curve": curve(t, tr["loss"][:, 0]),
           "eta_sharpness": float(end_sharpness(P, [L], eta, tr.extra["weights"])[0])}
    out["late_exponent"] = float("nan")
    if late_from is not None:
        T0 = float(threshold_times(t, a, [late_from])[0])
        use = (t >= T0) & (a < 1.0)
        if np.isfinite(T0) and use.sum() >= 10 and t[use][-1] > 2 * t[use][0]:
            out["late_exponent"] = loglog_fit(t[use], 1 - a[use]).slope
    return out


def summary_sweep(batch: prompts.PromptBatch, Ls, eta: float, caps, thetas,
                  weights: summary_model.Weights, tick=None) -> dict:
    """The crossing time of each θ per L (``nan`` when not reached) of the summary's model,
    one run per L from the same initial weights, each until it has reached max(θ) or its cap;
    η × the final sharpness of each run."""
    T, curves, rise, steps_run, sharp = [], [], None, 0, []
    for L, cap in zip(Ls, caps):
        m = summary_run(batch, float(L), eta, int(cap), thetas, weights, tick=tick)
        T.append(m["T"])
        curves.append(m["curve"])
        rise = m["loss_rise"] if rise is None else rise
        steps_run = max(steps_run, m["steps_run"])
        sharp.append(m["eta_sharpness"])
    return {"T": np.asarray(T), "steps_run": steps_run, "loss_rise": rise, "curves": curves,
            "eta_sharpness": sharp}


# ----------------------------------------------------------------------------- early phase


def step_rate(series: np.ndarray, t: int) -> tuple[float, float]:
    """The per-step rate of a recorded series at step ``t`` ≥ 1 (recorded every step): the
    central difference (y_{t+1} − y_{t−1})/2, and its resolution |f − b|/|f + b| (f, b the
    forward and backward differences: the relative spread of the one-sided rates)."""
    f = float(series[t + 1] - series[t])
    b = float(series[t] - series[t - 1])
    c = 0.5 * (f + b)
    res = abs(f - b) / abs(f + b) if f + b != 0 else float("inf")
    return c, res


def _judged_steps(alpha: np.ndarray, theta_end: float, fractions) -> list[int]:
    """The first recorded step at which the mean attention has covered each fraction of the way
    from its initial value to ``theta_end`` (at least step 1; at most the second-to-last)."""
    a0 = float(alpha[0])
    out = []
    for f in fractions:
        level = a0 + float(f) * (theta_end - a0)
        hit = np.nonzero(alpha >= level)[0]
        k = int(hit[0]) if hit.size else len(alpha) - 2
        out.append(int(min(max(k, 1), len(alpha) - 2)))
    return out


def _early_summary(alpha_mean, probes, eta, theta_end, fractions, steps_run) -> dict:
    judged = _judged_steps(alpha_mean, theta_end, fractions)
    points = []
    for t in [1] + judged:
        rate, res = step_rate(alpha_mean, t)
        points.append({"step": t, "alpha": float(alpha_mean[t]), "rate": rate,
                       "resolution": res, "alpha_i": probes[t]["alpha"],
                       "gap_i": probes[t]["gap"]})
    return {"start": points[0], "points": points[1:], "reached": bool(alpha_mean[-2] >= theta_end),
            "steps_run": steps_run, "eta": float(eta), "curve": curve(np.arange(len(alpha_mean)),
                                                                        alpha_mean)}


def early_phase_paper(C: np.ndarray, L: float, eta: float, max_steps: int, theta_end: float,
                      fractions, tick=None) -> dict:
    """Model A (exact population GD, paper's architecture) through its early phase: every step
    until the mean target attention has reached ``theta_end`` (one step beyond), recording per
    query feature k the attention α_k = a_k[k] and the logit gap Δ_k = B[k,k] − mean_{n≠k}
    B[k,n]; the rate of the mean attention at the judged steps (see :func:`_judged_steps`)."""
    sim = population.PopulationGD(population.scaled_covariance(C, L), eta)
    K = sim.K
    off = ~np.eye(K, dtype=bool)
    alpha, probes = [], []
    for k in range(max_steps + 1):
        B, A = sim.B[0], sim.A[0]
        a = np.diagonal(A).copy()
        gap = np.diagonal(B) - np.where(off, B, 0.0).sum(axis=1) / (K - 1)
        alpha.append(float(a.mean()))
        probes.append({"alpha": a.tolist(), "gap": gap.tolist()})
        if (len(alpha) >= 3 and alpha[-2] >= theta_end) or k == max_steps:
            break
        sim.step(k)
        if tick is not None and k % 1000 == 0:
            tick(k / max_steps, "model A's early phase")
    if not np.all(np.isfinite(alpha)):
        from icltheory.core import NumericalTrouble
        raise NumericalTrouble("model A produced non-finite numbers in its early phase")
    return _early_summary(np.asarray(alpha), probes, eta, theta_end, fractions, len(alpha) - 1)


def early_phase_summary(batch: prompts.PromptBatch, L: float, eta: float, max_steps: int,
                        theta_end: float, fractions, weights: summary_model.Weights,
                        tick=None) -> dict:
    """The summary's model through its early phase (as :func:`early_phase_paper`): per prompt
    with tokens of both kinds, the relevant attention α_m and the gap s⁺ − s⁻ of its scores."""
    sim = summary_model.SummaryGD(summary_model.stack_prompts([batch]), [L], eta, weights)
    alpha, probes = [], []
    for k in range(max_steps + 1):
        pr = sim.probe()
        ok = np.isfinite(pr["gap"][0])
        a, gap = pr["alpha"][0][ok], pr["gap"][0][ok]
        alpha.append(float(a.mean()))
        probes.append({"alpha": a.tolist(), "gap": gap.tolist()})
        if (len(alpha) >= 3 and alpha[-2] >= theta_end) or k == max_steps:
            break
        sim.step(k)
        if tick is not None and k % 1000 == 0:
            tick(k / max_steps, "the summary's model's early phase")
    if not np.all(np.isfinite(alpha)):
        from icltheory.core import NumericalTrouble
        raise NumericalTrouble("the summary's model produced non-finite numbers in its early "
                               "phase")
    out = _early_summary(np.asarray(alpha), probes, eta, theta_end, fractions, len(alpha) - 1)
    out["eta_sharpness"] = float(np.asarray(eta) * summary_model.sharpness(sim)[0])
    return out


# ----------------------------------------------------------------------------- the table


def _table_result(attn: np.ndarray, steps: np.ndarray, theta: float, n_seeds: int, nL: int,
                  loss: np.ndarray) -> dict:
    """Per seed and L: the final attention, the crossing time of θ (``nan``: not reached)."""
    T = threshold_times(steps, attn.T, [theta])[:, 0]
    return {"final_attention": attn[-1].reshape(n_seeds, nL).tolist(),
            "start_attention": attn[0].reshape(n_seeds, nL).tolist(),
            "T": T.reshape(n_seeds, nL).tolist(),
            "loss_ratio": (loss[-1] / loss[0]).reshape(n_seeds, nL).tolist(),
            "loss_rise": loss_rise(loss)}


def table_paper(batches: list[prompts.PromptBatch], Ls, eta: float, steps: int, theta: float,
                tick=None, xp=None) -> dict:
    """The paper's architecture (model B: Q only) on each seed's prompts, every L of the table at
    one step η for ``steps`` steps (runs of one seed share its prompts; ``xp``: model B's array
    backend)."""
    attn, loss, t = [], [], None
    for i, b in enumerate(batches):
        tr = prompts.run_prompts(b, Ls, eta, steps, record_every=max(1, steps // 500),
                                 xp=xp or prompts.NUMPY)
        attn.append(tr["attn"])
        loss.append(tr["loss"])
        t = tr.steps
        if tick is not None:
            tick((i + 1) / len(batches), "the table's runs (paper's architecture)")
    out = _table_result(np.concatenate(attn, axis=1), t, theta, len(batches), len(Ls),
                        np.concatenate(loss, axis=1))
    out["curves"] = [curve(t, row) for row in np.concatenate(attn, axis=1).T[:len(Ls)]]
    return out


def table_summary(batches: list[prompts.PromptBatch], Ls, eta: float, steps: int,
                  theta: float, weights: summary_model.Weights, tick=None) -> dict:
    """The summary's architecture on each seed's prompts from each seed's initial weights
    (``weights`` has one row per seed), every L of the table at one step η for ``steps``
    steps; all seeds and L in one vectorised run.  Also η × the final sharpness of the largest
    L's runs (max over seeds)."""
    nL, n = len(Ls), len(batches)
    P = summary_model.stack_prompts([b for b in batches for _ in Ls])
    W = weights.take(np.repeat(np.arange(n), nL))
    Lr = np.tile(np.asarray(Ls, dtype=float), n)
    tr = summary_model.run_summary(P, Lr, eta, W, steps, check_every=max(steps // 20, 1),
                                   tick=tick, record_every=max(1, steps // 500))
    out = _table_result(tr["attn"], tr.steps, theta, n, nL, tr["loss"])
    out["curves"] = [curve(tr.steps, row) for row in tr["attn"].T[:nL]]
    top = np.arange(n) * nL + int(np.argmax(Ls))
    Wf = tr.extra["weights"].take(top)
    Pt = {k: v[top] for k, v in P.items()}
    out["eta_sharpness"] = float(np.max(end_sharpness(Pt, Lr[top], eta, Wf)))
    return out
