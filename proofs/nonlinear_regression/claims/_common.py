"""What the nonlinear-regression claims share: provenance strings, the lazily bound theory,
experiments and rules, the L-sweep measurement and its slope checks, guards, figures."""

from __future__ import annotations

import numpy as np

from icltheory.backends import get_backend
from icltheory.core import Check, PlantedError, Plot, Series, lazy_module

theory = lazy_module("proofs.nonlinear_regression.theory")
runs = lazy_module("proofs.nonlinear_regression.experiments.runs")
rules = lazy_module("proofs.nonlinear_regression.rules")
summary_runs = lazy_module("proofs.nonlinear_regression.experiments.summary_runs")
dynamics = lazy_module("icltheory.dynamics")

ARXIV = "arXiv 2507.20443 (Li, Duan, Liang; ICLR 2026 submission)"
SUMMARY = "a third-party blog summary (in Chinese) of arXiv 2507.20443, \"可证明ICL非线性回归学习\""
PKG = "proofs.nonlinear_regression"

#: fewer GD steps than this cannot resolve a rate (GD is far from its flow)
MIN_STEPS_FOR_RATE = 20

__all__ = ["theory", "runs", "rules", "summary_runs", "ARCH", "ARCH_SHORT", "record_architecture",
           "summary_ok", "summary_step_cost", "ARXIV", "SUMMARY", "PKG", "MIN_STEPS_FOR_RATE",
           "measure_sweeps", "judge_sweeps", "slope_checks", "sweep_plots", "descends",
           "wrong_scale_in", "sqrt_gradient_factor", "PLANT_GRADIENT_FACTOR",
           "PLANT_COVARIANCE_SCALE", "PLANT_LABEL_SCALE", "model_a_step_cost",
           "model_b_step_cost"]


# ----------------------------------------------------------------------------- architectures

#: the model each value of the ``architecture`` key names, as the verdicts say it
ARCH = {"paper": "the paper's model (one softmax layer, only the key–query matrix Q trained, "
                 "values = the labels)",
        "summary": "the summary's model (W_Q, W_K, W_V, output w and bias b trained, values "
                   "W_V z_j, full-batch GD on finite prompts)"}
ARCH_SHORT = {"paper": "paper's model", "summary": "summary's model"}


def record_architecture(ctx, s) -> None:
    """State which architecture was judged (a measured value and the evidence), and that a
    verdict here says nothing about the other architecture."""
    a = s.architecture
    other = "summary" if a == "paper" else "paper"
    ctx.measure("architecture", a)
    ctx.evidence["architecture"] = ARCH[a]
    ctx.evidence["scope"] = (f"judged in {ARCH_SHORT[a]} only; {ARCH_SHORT[other]} is judged "
                             f"with --set architecture={other}")


def summary_ok(ctx, m: dict, label: str = "the summary's model") -> bool:
    """A run of the summary's model must descend and stay well inside GD's stability limit
    (η × sharpness < 2); report it as inconclusive otherwise."""
    if not descends(ctx, m, label):
        return False
    es = m.get("eta_sharpness")
    if es is not None and not es <= rules.SUMMARY_MAX_SHARPNESS:
        ctx.inconclusive(f"{label}: η × the loss's sharpness reached {es:.3g} at the end of the "
                         f"run (> {rules.SUMMARY_MAX_SHARPNESS:g}; gradient descent diverges "
                         "above 2): lower step_fraction or η")
        return False
    return True


def summary_step_cost(M: int, N: int, d: int, R: int = 1) -> float:
    """Flop-equivalents of one step of the summary's model (scores, softmax, attended tokens,
    their gradient: about 14 passes over the M·N·(d+1) token entries) plus loop overhead
    (≈ 40 µs per step, measured)."""
    return R * M * N * (d + 1) * 14.0 + 4e4


# ----------------------------------------------------------------------------- planted errors

def sqrt_gradient_factor(orig):
    """Planted theory error: the gradient factor ρ(L) = L² taken as L (a chain-rule factor
    forgotten)."""
    return lambda scaled, unit: orig(scaled, unit) ** 0.5


def wrong_scale_in(orig):
    """Planted measurement error: the simulator scales the task by √L instead of L."""
    return lambda x, L: orig(x, np.sqrt(np.asarray(L, dtype=float)))


PLANT_GRADIENT_FACTOR = PlantedError(
    "theory", "the gradient factor ρ(L) = L² taken as L (a chain-rule factor forgotten)",
    f"{PKG}.theory:gradient_scaling", sqrt_gradient_factor)
PLANT_COVARIANCE_SCALE = PlantedError(
    "measurement", "model A's simulator scales the task covariance by L, not L²",
    f"{PKG}.experiments.population:scaled_covariance", wrong_scale_in)
PLANT_LABEL_SCALE = PlantedError(
    "measurement", "model B's simulator scales the labels by √L instead of L",
    f"{PKG}.experiments.prompts:scaled_labels", wrong_scale_in)


# ----------------------------------------------------------------------------- costs

def model_a_step_cost(K: int, R: int = 1) -> float:
    """Flop-equivalents of one model-A step (softmax, two K×K products) plus loop overhead
    (≈ 80 µs per step, measured)."""
    return R * (6.0 * K**3 + 40.0 * K * K) + 8e4


def model_b_step_cost(M: int, N: int, d: int, R: int = 1) -> float:
    """Flop-equivalents of one model-B step (scores, softmax, gradient: M·N·d and M·d² terms)
    plus loop overhead."""
    return R * M * (N * (4.0 * d + 24.0) + 4.0 * d * d) + 2e4


# ----------------------------------------------------------------------------- guards

def descends(ctx, m: dict, label: str) -> bool:
    """GD far outside its small-step regime raises the loss: report it as inconclusive."""
    if m.get("loss_rise") is not None:
        ctx.inconclusive(f"{label}: the loss rose above its initial value at record "
                         f"{m['loss_rise']} — η·L² is too large for gradient descent to follow "
                         "its flow")
        return False
    return True


# ----------------------------------------------------------------------------- L sweeps

def measure_sweeps(s, run) -> dict:
    """Per model of a sweep setting: the threshold times over ``s.Ls`` at the model's η (model
    ``S``: the summary's architecture on model B's prompts, from one initial draw)."""
    out = {}
    for m in s.model_list:
        if m == "A":
            problem = runs.orthonormal_problem(s.task, s.K, s.cov_draws, run.rng(1))
        else:
            problem = runs.prompt_problem(s.task, s.K, s.d, s.N, s.noise, s.prompts,
                                          run.rng(10), run.rng(11))
        if m == "S":
            W = summary_runs.initial_weights(run.rng(20), 1, s.d, s.width, s.init_scale)
            out[m] = summary_runs.summary_sweep(problem, s.Ls, s.eta_S,
                                                runs.sweep_caps(s.Ls, s.steps_S), s.thetas_S,
                                                W, tick=run.tick)
            continue
        eta, steps, thetas = getattr(s, f"eta_{m}"), getattr(s, f"steps_{m}"), getattr(s, f"thetas_{m}")
        out[m] = runs.sweep(m, problem, s.Ls, eta, steps, thetas, tick=run.tick, xp=get_backend(s.backend))
        if m in ("A", "B"):  # the largest L's run again at half the step: GD's lag behind the flow, measured
            Lmax = float(np.max(s.Ls))
            cap = 2 * runs.sweep_caps(s.Ls, steps)[int(np.argmax(s.Ls))]
            half = runs.sweep(m, problem, [Lmax], eta / 2, cap, thetas, tick=run.tick, xp=get_backend(s.backend))
            out[m]["lag_at"] = Lmax
            out[m]["T_half_step"] = half["T"][0]
    return out


#: how the sweeps' models are named in check names
MODEL_NAME = {"A": "paper's model A", "B": "paper's model B", "S": "summary's model"}


def _stiffness(s, m: str, eta: float, Ls) -> np.ndarray:
    c_max = 1.0 if m == "A" else rules.pilot_B(s.K, s.d, s.N, s.noise, s.task, s.prompts,
                                                 s.seed)[1]
    th = theory.theory()
    return np.array([th.stiffness(s.K, eta * c_max * float(L) ** 2) for L in Ls])


def slope_checks(ctx, *, K: int, Ls, thetas, T, stiff, key: str, name: str,
                 why: str, cap_key: str = "steps", flow_lag: bool = True, lag_run=None) -> list[float]:
    """Fit log T_θ vs log L per θ (runs in GD's small-step regime only) and compare with the
    predicted slope ``ctx.predicted[key]``; returns the fitted slopes (nan: not fitted).

    GD's lag behind its flow, in steps, is to first order the same at every small step (so at
    every L: the runs differ only in the step ηL²).  It is measured with ``lag_run`` = (L,
    crossings of the run at L repeated at half the step): T(η/2) − 2T(η) steps (Euler's error is
    first order in the step); the larger of that and the population flow's ½|ln(rate ratio)|
    (:meth:`theory.euler_lag`, which the finite prompts of model B exceed) is allowed."""
    Ls, T = np.asarray(Ls, dtype=float), np.asarray(T, dtype=float)
    th = theory.theory()
    tol = float(th_stated("slope_tol"))
    slopes = []
    for j, theta in enumerate(thetas):
        Tj = T[:, j]
        if np.any(np.isnan(Tj)):
            missing = ", ".join(f"{L:g}" for L, x in zip(Ls, Tj) if np.isnan(x))
            ctx.inconclusive(f"{name}: θ={theta:g} not reached within the step cap at L={missing} "
                             f"(raise {cap_key}: T_θ grows like L⁻²); the slope is fitted without them")
        reached = ~np.isnan(Tj)
        Tj = np.where(reached, Tj, 0.0)
        use = reached & (Tj >= MIN_STEPS_FOR_RATE) & (stiff <= rules.MAX_STIFFNESS)
        if len(set(Ls[use])) < 2:
            ctx.add(Check(f"{name}, θ={theta:g}", ctx.predicted[key], None, tol,
                          f"needs ≥ 2 L values in GD's small-step regime (T ≥ "
                          f"{MIN_STEPS_FOR_RATE} steps, stiffness ≤ {rules.MAX_STIFFNESS:g}); "
                          "outside it GD does not follow the flow whose times scale as 1/(ηL²)",
                          None, f"T = {np.round(Tj, 2).tolist()}, stiffness = "
                          f"{np.round(stiff, 3).tolist()}: lower η", (key,)))
            slopes.append(float("nan"))
            continue
        fit = dynamics.loglog_fit(Ls[use], Tj[use])
        # the paper's model: GD's Euler lag behind its flow + 1 step of interpolation; the
        # summary's model is judged as GD itself (the statement is about GD steps): 1 step
        lag = (float(th.euler_lag(theta, K)) + 1.0) if flow_lag else 1.0
        measured_lag = None
        if flow_lag and lag_run is not None:
            L_at, T_half = lag_run
            at = int(np.argmin(np.abs(Ls - L_at)))
            if np.isnan(T_half[j]) or not reached[at]:
                ctx.inconclusive(f"{name}: θ={theta:g} not reached at L={L_at:g} at half the step, where GD's "
                                 f"lag behind its flow is measured (raise {cap_key})")
                slopes.append(float("nan"))
                continue
            measured_lag = float(half_step_lag(Tj[at], T_half[j]))
            lag = max(lag, measured_lag + 1.0)
            ctx.measured.setdefault("gd_lag_steps_measured", {})[f"{name}, θ={theta:g}"] = round(measured_lag, 4)
        allow = dynamics.slope_allowance(fit, Tj[use], lag)
        # what no power law explains (higher-order step effects): the same first-order effect on
        # the slope of deviations as large as the fit's own residuals
        resid = np.log(Tj[use]) - (fit.intercept + fit.slope * np.log(Ls[use]))
        misfit = float(np.sum(np.abs(fit.weights) * np.abs(resid)))
        resolution = allow + misfit
        how = ("GD's lag behind its flow: the larger of ½|ln(rate ratio)| and the measured T(η/2) − 2T(η), "
               "+ 1 step of interpolation" if measured_lag is not None
               else "GD's Euler lag ½|ln(rate ratio)| + 1 step of interpolation" if flow_lag
               else "1 step of interpolation between recorded steps")
        c = ctx.close(f"{name}, θ={theta:g}", key=key, measured=fit.slope, atol=resolution,
                      why=f"the check's resolution {resolution:.3g} = {allow:.3g}, the first-order effect "
                          f"of ±{lag:.2g} steps on each T ({how}), + {misfit:.3g}, the same effect of "
                          f"the log-log fit's residuals (what no power law explains); "
                          f"{int(use.sum())} L values in the small-step regime; {why}")
        if c.passed and resolution > tol:
            # the step-rounding uncertainty alone exceeds the claim's tolerance: agreement is
            # not evidence; only a miss decides
            c.passed, c.margin = None, None
            c.detail += (f"; undecided: the resolution {resolution:.3g} exceeds the claim's "
                         f"tolerance {tol:g} (spread the L values or lower η)")
        slopes.append(float(fit.slope))
    return slopes


def half_step_lag(T, T_half):
    """GD's lag behind its flow, measured: a run's crossing times T repeated at half the step
    (T_half, in those steps) lag by |T(η/2) − 2T(η)| steps (Euler's error is first order in the
    step); NaN where either did not cross."""
    return np.abs(np.asarray(T_half, float) - 2.0 * np.asarray(T, float))


def th_stated(name: str):
    return theory.STATED[name]


def judge_sweeps(s, measured, ctx, key: str, name: str, why: str) -> dict:
    """Slope checks and figures for every model of a sweep; returns {model: slopes}."""
    out = {}
    for m in s.model_list:
        sw = measured[m]
        eta = getattr(s, f"eta_{m}")
        label = MODEL_NAME[m]
        if m == "S":
            sw = dict(sw, eta_sharpness=max(sw["eta_sharpness"]))
            if not summary_ok(ctx, sw, label):
                continue
            stiff = np.zeros(len(s.Ls))
        else:
            if not descends(ctx, sw, label):
                continue
            stiff = _stiffness(s, m, eta, s.Ls)
        out[m] = slope_checks(ctx, K=s.K, Ls=s.Ls, thetas=getattr(s, f"thetas_{m}"), T=sw["T"],
                              stiff=stiff, key=key, cap_key=f"steps_{m}",
                              name=f"{label}: {name}", why=why, flow_lag=m != "S",
                              lag_run=(sw["lag_at"], sw["T_half_step"]) if "lag_at" in sw else None)
        ctx.measured.setdefault("T", {})[m] = np.round(
            np.asarray(sw["T"]), 4).tolist()
        ctx.measured.setdefault("steps_run", {})[m] = sw["steps_run"]
        if m == "S":
            ctx.measured.setdefault("eta_times_sharpness", {})[m] = sw["eta_sharpness"]
        sweep_plots(ctx, label, s.Ls, getattr(s, f"thetas_{m}"), sw, eta)
    return out


def sweep_plots(ctx, model: str, Ls, thetas, sw: dict, eta: float) -> None:
    ser, ser2 = [], []
    for L, (t, a) in zip(Ls, sw["curves"]):
        t = np.maximum(np.asarray(t), 0.5)
        ser.append(Series(t, a, f"L={L:g}"))
        ser2.append(Series(t * eta * L**2, a, f"L={L:g}"))
    hl = [(float(th), f"θ={th:g}") for th in thetas]
    ctx.plot(Plot(f"{model}: relevant-token attention for several L, η={eta:.4g}",
                  "GD step t", "mean attention on same-feature tokens", ser, hlines=hl, logx=True,
                  caption="Larger L trains faster."))
    ctx.plot(Plot(f"{model}: the same curves against ηL²t", "η L² t",
                  "mean attention on same-feature tokens", ser2, hlines=hl, logx=True,
                  caption="In the paper's model every phase is a function of ηL²·t, so times "
                          "scale as 1/(ηL²)."))
    T = np.asarray(sw["T"], dtype=float)
    ctx.plot(Plot(f"{model}: threshold times against L (log–log)", "L", "T_θ (GD steps)",
                  [Series(list(Ls), T[:, j], f"T(θ={th:g})", "points")
                   for j, th in enumerate(thetas)], logx=True, logy=True,
                  caption="Slope −2 expected from the rescaling identity (paper's model)."))
