"""The measurements of the claims, as recipes over the two simulators: each takes plain
numbers (sizes, steps, generators) and returns measured numbers — crossing times, fits, peaks,
curves for the figures.  Nothing here reads a prediction."""

from __future__ import annotations

import numpy as np

from icltheory.dynamics import threshold_times

from . import population, prompts, tasks

__all__ = ["orthonormal_problem", "prompt_problem", "held_out", "sweep", "sweep_caps", "loss_rise", "curve",
           "isotropic_run", "settle_run", "gradient_exponent"]


def orthonormal_problem(task: str, K: int, draws: int, rng) -> np.ndarray:
    """Model A's normalised task covariance on K orthonormal features."""
    return tasks.population_covariance(task, tasks.orthonormal_features(K, K), rng, draws)


def prompt_problem(task: str, K: int, d: int, N: int, noise: float, M: int, rng_features,
                   rng_prompts) -> prompts.PromptBatch:
    """Model B's prompts on K random unit features in R^d."""
    V = tasks.random_unit_features(K, d, rng_features)
    return prompts.make_prompts(V, M, N, noise, task, rng_prompts)


def held_out(V: np.ndarray, n: int, N: int, noise: float, task: str, rng) -> prompts.PromptBatch:
    """Fresh prompts from the training prompts' distribution (the same features)."""
    return prompts.make_prompts(V, n, N, noise, task, rng)


def loss_rise(loss: np.ndarray) -> int | None:
    """The first recorded index at which a loss (records × runs) rose above its initial value
    (GD far outside its small-step regime), or ``None``."""
    loss = np.asarray(loss)
    bad = np.nonzero(loss > loss[:1] * (1 + 1e-9) + 1e-300)
    return int(bad[0].min()) if bad[0].size else None


def curve(t: np.ndarray, y: np.ndarray, k: int = 400) -> tuple[list, list]:
    """At most ~k points of a recorded curve, evenly spaced in log time (for figures)."""
    n = len(t)
    idx = np.arange(n) if n <= k else np.unique(np.geomspace(1, n - 1, k).astype(int))
    if n > k:
        idx = np.concatenate([[0], idx])
    return np.asarray(t)[idx].tolist(), np.asarray(y)[idx].tolist()


def sweep_caps(Ls, steps: int) -> list[int]:
    """Model B's step cap at each L: ``steps`` is the smallest L's, the others scale as 1/L (the
    times scale as 1/L²: the runs stop long before their caps, which leave room for a slower
    simulator than expected)."""
    Lmin = float(np.min(Ls))
    return [int(np.ceil(steps * Lmin / float(L))) + 50 for L in Ls]


def sweep(model: str, problem, Ls, eta: float, steps: int, thetas, tick=None, xp=None) -> dict:
    """The crossing time of each θ per L (``nan`` when not reached) of the mean same-feature
    attention at one η.  Model A runs every L in one batch until all have reached max(θ) or
    ``steps``; model B runs one L at a time (caps from :func:`sweep_caps`), each until it has
    reached max(θ)."""
    Ls = np.asarray(Ls, dtype=float)
    th_max = float(np.max(thetas))
    key = "p_mean" if model == "A" else "attn"

    def stop(tr) -> bool:
        return bool(np.all(tr[key].max(axis=0) >= th_max))

    if model == "A":
        trs = [population.run_population(population.scaled_covariance(problem, Ls), eta, steps,
                                         stop=stop, tick=tick)]
    else:
        trs = [prompts.run_prompts(problem, [L], eta, cap, stop=stop, check_every=20, tick=tick,
                                   record_every="geometric", xp=xp or prompts.NUMPY)
               for L, cap in zip(Ls, sweep_caps(Ls, steps))]
    T, curves, rise = [], [], None
    for tr in trs:
        y = tr[key].T  # (runs, records)
        T.append(threshold_times(tr.steps, y, thetas))
        curves += [curve(tr.steps, row) for row in y]
        r = loss_rise(tr["loss"])
        rise = r if rise is None else rise
    return {"T": np.concatenate(T), "steps_run": max(tr.n_steps for tr in trs),
            "loss_rise": rise, "curves": curves}


def isotropic_run(C: np.ndarray, L: float, eta: float, steps: int, thresholds,
                  late_from: float, tick=None) -> dict:
    """Model A at one L until the mean target attention p(t) has reached every threshold (or
    ``steps``): the crossing time of each threshold, the first step's logit gap, the late
    exponent of 1 − p(t) fitted from the crossing of ``late_from`` to the end, and ℓ·t at the
    end (the horizon H)."""
    from icltheory.dynamics import loglog_fit

    top = float(np.max(thresholds))

    def stop(tr) -> bool:
        return bool(tr["p_mean"][-1, 0] >= top)

    tr = population.run_population(population.scaled_covariance(C, L), eta, steps, stop=stop,
                                   tick=tick)
    t, p, loss = tr.steps.astype(float), tr["p_mean"][:, 0], tr["loss"][:, 0]
    K = C.shape[-1]
    out = {"T": threshold_times(t, p, thresholds), "steps_run": tr.n_steps, "H": float(t[-1]),
           "loss_rise": loss_rise(tr["loss"]), "p_end": float(p[-1]),
           "loss_t_end": float(loss[-1] * t[-1]), "curve": curve(t, p),
           "loss_curve": curve(t, loss)}
    out["gap_after_one_step"] = (float(np.log(p[1] * (K - 1) / (1 - p[1])))
                                 if len(t) > 1 and t[1] == 1 and p[1] < 1 else float("nan"))
    T0 = float(threshold_times(t, p, [late_from])[0])
    use = (t >= T0) & (p < 1.0)
    out["late_exponent"] = out["late_exponent_misfit"] = float("nan")
    if np.isfinite(T0) and use.sum() >= 10 and t[use][-1] > 2 * t[use][0]:
        fit = loglog_fit(t[use], 1 - p[use])
        res = np.log(1 - p[use]) - (fit.intercept + fit.slope * np.log(t[use]))
        out["late_exponent"] = fit.slope
        # the slope's first-order response to deviations as large as the fit's own residuals
        out["late_exponent_misfit"] = float(np.sum(np.abs(fit.weights) * np.abs(res)))
    return out


def settle_run(C: np.ndarray, G: np.ndarray, L: float, eta: float, steps: int, theta: float,
               tick=None) -> dict:
    """Model A on a near-duplicate geometry (query 0's wrong feature is 1): runs until query 0
    has reached θ and its wrong attention has halved from its peak, or ``steps``."""

    def stop(tr) -> bool:
        w = tr["tracked"][:, 0, 0]
        k = int(w.argmax())
        return bool(np.any(w[k:] <= w[k] / 2)) and bool(tr["p"][:, 0, 0].max() >= theta)

    tr = population.run_population(population.scaled_covariance(C, L), eta, steps, G=G,
                                   track=((0, 1),), rows=True, stop=stop, tick=tick)
    t = tr.steps.astype(float)
    wrong = tr["tracked"][:, 0, 0]
    rows = tr["p"][:, 0, :]  # (records, K): each query's attention on its own feature
    k = int(wrong.argmax())
    after = np.nonzero(wrong[k:] <= wrong[k] / 2)[0]
    Tq = threshold_times(t, rows.T, [theta])[:, 0]
    return {"peak": float(wrong[k]), "t_peak": float(t[k]),
            "t_half": float(t[k + after[0]]) if after.size else float("nan"),
            "T_close": float(Tq[0]), "T_far": float(np.mean(Tq[2:])),
            "wrong_end": float(wrong[-1]), "steps_run": tr.n_steps,
            "loss_rise": loss_rise(tr["loss"]), "wrong_curve": curve(t, wrong),
            "close_curve": curve(t, rows[:, 0]), "far_curve": curve(t, rows[:, 2])}


def _host(sim, a) -> np.ndarray:
    """A simulator's array on the host (model B may run on another backend)."""
    xp = getattr(sim, "xp", None)
    return np.asarray(a) if xp is None else xp.to_numpy(a)


def _norm(g) -> float:
    """‖g‖ scaled by its largest entry first, so that a gradient of size up to the float64 range
    (labels scaled by a large L) does not overflow in the sum of squares."""
    g = np.asarray(g, dtype=float)
    top = float(np.max(np.abs(g))) if g.size else 0.0
    return top * float(np.linalg.norm(g / top)) if top > 0 and np.isfinite(top) else top


def gradient_exponent(sim_L, sim_Lp, weights, L: float, Lp: float) -> list[tuple[float, float]]:
    """log(‖∇ℓ_L‖/‖∇ℓ_L'‖)/log(L/L') at each of ``weights``, from two simulators that differ only
    in their label scale, each with its cancellation ‖∇ℓ_L(weights[0])‖/‖∇ℓ_L(W)‖: the factor by
    which the gradient has shrunk below the size of the terms it is summed from (the first
    weights are the reference, e.g. zero logits), so float64 rounding of the norm is about
    that many units of 1e-16."""
    out = []
    ref = None
    for W in weights:
        for sim in (sim_L, sim_Lp):
            (sim.set_logits if hasattr(sim, "set_logits") else sim.set_weights)(W)
        g1, g2 = (_norm(_host(sim, sim.gradient())) for sim in (sim_L, sim_Lp))
        ref = g1 if ref is None else ref
        kappa = ref / g1 if g1 > 0 else float("inf")
        out.append((float(np.log(g1 / g2) / np.log(L / Lp)) if g1 > 0 and g2 > 0 else float("nan"),
                    float(kappa)))
    return out
