"""Claims whose statements cannot be decided with what is known (the summary's threshold and
error bounds; the paper's flat/sharp regimes): each reports what its computable part shows — a
real check that can fail — and stays ``inconclusive`` on the rest."""

from __future__ import annotations

import numpy as np

from icltheory.core import Check, Claim, Cost, Prediction

from ..settings import RegimesSetting, ThresholdSetting
from ._common import (ARXIV, PLANT_COVARIANCE_SCALE, PLANT_GRADIENT_FACTOR, SUMMARY, descends,
                      model_a_step_cost, record_architecture, runs, slope_checks, sweep_plots,
                      theory)

__all__ = ["SummaryThreshold", "Regimes"]


class SummaryThreshold(Claim):
    """The summary's regime threshold and error bounds: undecidable in either architecture.

    ``architecture=paper`` (default: the summary attributes the regimes to the paper's
    theorems) also runs the computable part, the slope of the threshold times across L* in
    model A (the rescaling identity, −2).  ``architecture=summary`` runs nothing: no identity
    relates its runs at different L, and a sweep across L* = √(d/n) at one step η (capped by the
    summary loss's bias curvature 2, whatever L) would take ~10⁵ steps at L = L*/2; the
    summary's own L-exponent in its own model is judged by ``nonlinear.summary-fast-rate
    --set architecture=summary``."""

    id = "nonlinear.summary-threshold"
    title = "The summary's regime threshold L* ~ √(d/n) and error bounds ε + O(d/n), ε + O(L²d/n)"
    source = f"{SUMMARY}; the paper's confirmed threshold is Θ(1/(Δδ)) ({ARXIV}, abstract)"
    provenance = "summary's claim"
    statement = (r"L^\star\sim\sqrt{d/n},\qquad \mathrm{err}\le\varepsilon+O(d/n)\ (L<L^\star),"
                 r"\qquad \mathrm{err}\le\varepsilon+O(L^2d/n)\ (L>L^\star)")
    setting_type = ThresholdSetting
    expected_default = "inconclusive"
    predictions = {
        "L_star": Prediction("the summary's threshold √(d/n) (sets the sweep's L values; no "
                             "computation can judge it)", formula=r"\sqrt{d/n}",
                             informational=True),
        "slope_identity": Prediction("slope of log T_θ vs log L across L* (the rescaling "
                                     "identity)", formula="-2"),
    }
    planted_errors = (PLANT_GRADIENT_FACTOR, PLANT_COVARIANCE_SCALE)

    def constants(self, s: ThresholdSetting) -> dict:
        th = theory.theory()
        return {"L_star": th.summary_L_star(s.d, s.N), "slope_identity": th.time_slope_L}

    def derive(self, s):
        return theory.theory().summary

    def estimate(self, s) -> Cost:
        if s.architecture == "summary":
            return Cost(0.0, 0.0, "nothing runs in the summary's model")
        R = len(s.Ls)
        return Cost(s.steps * model_a_step_cost(s.K, R) + 40.0 * s.cov_draws * s.K,
                    8.0 * R * 40_000, f"model A at {R} values of L")

    def measure(self, s: ThresholdSetting, run) -> dict:
        if s.architecture == "summary":
            return {}
        C = runs.orthonormal_problem(s.task, s.K, s.cov_draws, run.rng(1))
        return runs.sweep("A", C, s.Ls, s.eta, s.steps, [s.theta], tick=run.tick)

    def judge(self, s: ThresholdSetting, predicted, m, ctx) -> None:
        record_architecture(ctx, s)
        if s.architecture == "summary":
            ctx.note("In the summary's model nothing is run: no rescaling identity relates its "
                     "runs at different L, and a sweep across L* = √(d/n) = "
                     f"{predicted['L_star']:.4g} at one step η (capped by the bias's curvature "
                     "2 in the summary's loss, whatever L) would take ~10⁵ steps at L*/2. The "
                     "summary's L-exponent in its own model is judged by nonlinear.summary-"
                     "fast-rate --set architecture=summary.")
        elif descends(ctx, m, "model A"):
            th = theory.theory()
            stiff = np.array([th.stiffness(s.K, s.eta * L**2) for L in s.Ls])
            slope_checks(ctx, K=s.K, Ls=s.Ls, thetas=[s.theta], T=m["T"], stiff=stiff,
                         key="slope_identity",
                         name="slope of log T_θ vs log L across L*",
                         why="as in nonlinear.l-scaling (at most ±0.1): the rescaling identity, on both "
                             "sides of the summary's L*")
            T = np.asarray(m["T"])[:, 0]
            if not np.any(np.isnan(T)):
                L2T = T * np.asarray(s.Ls) ** 2
                ctx.measure("L_values", list(s.Ls))
                ctx.measure("L2_times_T", L2T.tolist())
                ctx.note(f"At fixed η, L²·T_θ across the summary's L* = √(d/n) = "
                         f"{predicted['L_star']:.4g}: {np.round(L2T, 1).tolist()}. The dynamics "
                         "depend on η and L only through ηL², so no regime change can appear at "
                         "an L* that does not involve η.")
            sweep_plots(ctx, "paper's model A", s.Ls, [s.theta], m, s.eta)
        ctx.add(Check("threshold L* ~ √(d/n)", "regime change at √(d/n)", "undecidable", None,
                      "the paper's confirmed threshold is Θ(1/(Δδ)), with no d or n; Δ and δ are "
                      "not defined in the available text, and with η fixed the rescaling identity "
                      "forbids any change at an η-independent L*", None,
                      "the summary gives no constants that a computation could refute"))
        ctx.add(Check("error bounds ε + O(d/n), ε + O(L²d/n)", "sample-size error floor",
                      "undecidable", None,
                      "the paper trains on the population loss (reviews) and claims near-zero "
                      "error; no sample size n appears in the available text", None,
                      "no n in the analysed model: the bound has nothing to be compared with"))
        ctx.inconclusive("the summary's threshold and error bounds cannot be tested: the paper's "
                         "threshold is Θ(1/(Δδ)) (no d/n) and its loss is population-level; the "
                         "summary's formulas appear nowhere in the available paper text")


class Regimes(Claim):
    id = "nonlinear.regimes"
    title = "The paper's flat vs sharp curvature regimes split at L = Θ(1/(Δδ))"
    source = f"{ARXIV}, abstract (confirmed); Theorems 1–2 not available"
    provenance = "confirmed paper text"
    statement = (r"L\lesssim\Theta(1/(\Delta\delta)):\ \text{flat (larger }\eta\text{ allowed)};\quad "
                 r"L\gtrsim\Theta(1/(\Delta\delta)):\ \text{sharp (smaller }\eta\text{ needed)}")
    setting_type = RegimesSetting
    expected_default = "inconclusive"
    predictions = {
        "collapse_deviation": Prediction("max over t of the spread of the mean target attention "
                                         "across runs with the same ηL² (identical trajectories)",
                                         formula="0"),
        "late_loss_exponent": Prediction("d log ℓ / d log t late in the isotropic flow (reported "
                                         "with the measured exponents, not judged)",
                                         formula="-1", informational=True),
    }
    planted_errors = (PLANT_GRADIENT_FACTOR, PLANT_COVARIANCE_SCALE)

    def constants(self, s) -> dict:
        th = theory.theory()
        return {"collapse_deviation": th.trajectory_difference,
                "late_loss_exponent": th.late_loss_exponent}

    def derive(self, s):
        return theory.theory().rescaling

    def estimate(self, s) -> Cost:
        R = len(s.collapse_Ls) + len(s.etaL2s)
        return Cost(s.steps * model_a_step_cost(s.K, R) + 40.0 * s.cov_draws * s.K,
                    8.0 * R * 40_000, f"{R} model-A runs of {s.steps} steps")

    def measure(self, s: RegimesSetting, run) -> dict:
        pop = runs.population
        C = runs.orthonormal_problem(s.task, s.K, s.cov_draws, run.rng(1))
        tr = pop.run_population(pop.scaled_covariance(C, s.collapse_Ls), s.collapse_etas,
                                s.steps, tick=run.tick)
        p = tr["p_mean"]
        out = {"deviation": float(np.max(np.abs(p - p[:, :1]))),
               "loss_rise": runs.loss_rise(tr["loss"])}
        prods = np.asarray(s.etaL2s)
        tr2 = pop.run_population(np.broadcast_to(C, (len(prods),) + C.shape), prods, s.steps,
                                 tick=run.tick)
        t, loss = tr2.steps.astype(float), tr2["loss"]
        i1 = len(t) - 1
        i0 = int(np.searchsorted(t, t[-1] / 4))
        ok = i1 > i0 and np.all(loss[[i0, i1]] >= np.finfo(float).tiny)
        out["late_exponents"] = (np.log(loss[i1] / loss[i0]) / np.log(t[i1] / t[i0])).tolist() \
            if ok else [float("nan")] * len(prods)
        out["loss_times_t"] = (loss[-1] * t[-1] * prods).tolist()
        return out

    def judge(self, s, predicted, m, ctx) -> None:
        ctx.measure("max_attention_spread_at_fixed_etaL2", m["deviation"])
        ctx.close("attention at fixed ηL² is independent of L", key="collapse_deviation",
                  measured=m["deviation"], atol=1e-10,
                  why="exact identity (rescaling); float64 rounding only")
        ctx.measure("late_loss_exponent", dict(zip([f"{x:g}" for x in s.etaL2s],
                                                    m["late_exponents"])))
        ctx.measure("loss_times_t_times_etaL2", dict(zip([f"{x:g}" for x in s.etaL2s],
                                                          m["loss_times_t"])))
        ctx.note(f"Late loss decays like t^(exponent); measured over the last ¾ of {s.steps} "
                 f"steps at ηL² = {', '.join(f'{x:g}' for x in s.etaL2s)}: "
                 f"{', '.join(f'{e:.3f}' for e in m['late_exponents'])} (the isotropic flow gives "
                 f"{predicted['late_loss_exponent']:g}: polynomial convergence; an exponential "
                 "regime would make them grow without bound). Reported, not asserted.")
        ctx.note("Procedure once Theorems 1–2 are read: take Δ (feature separation) and δ "
                 "(accuracy or non-degeneracy) as defined there; sweep L across Θ(1/(Δδ)) with η "
                 "set by each theorem's step-size rule (flat: η independent of L; sharp: η ≲ 1/L²); "
                 "measure T(ε) for ε ∈ {1e-2, 1e-3, 1e-4}; test log(1/ε) against poly(1/ε) "
                 "scaling on each side. The rescaling identity (checked above) implies that with η "
                 "fixed all runs lie on one curve in ηL², so a regime split can only come from the "
                 "step-size caps (or from a task shape that changes with L).")
        ctx.add(Check("flat vs sharp regimes of Theorems 1–2", "split at L = Θ(1/(Δδ))",
                      "not testable", None,
                      "the theorem constants Δ, δ and the step-size conditions are not stated in "
                      "the available text", None, "blocked until the paper body is read"))
        ctx.inconclusive("Theorems 1–2 (Δ, δ, step-size conditions) are not available; the report "
                         "gives the procedure and what the rescaling identity implies")
