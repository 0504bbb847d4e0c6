r"""``linattn.separate.drop-times`` (beyond the paper): each seed's drop times
of ATTN_S predicted from its own initial weights and checked against that seed's training.

Prediction (:mod:`..theory._drop_times`): the per-head ODE in the initial overlaps
$(v_i, k_i\cdot e_d, q_i\cdot e_d)$ with the diagonal residual $e_d=\lambda_d^2(1-\lambda_dc_dM_{dd})$
— exact to first order while the weights are small — gives the first drop, for GD at the run's
step η through the ODE's explicit Euler map (GD on the reduction, so GD's lag behind its flow,
≈ 0.4–0.6 % at Fig. 3's step, is part of the prediction and the check resolves ≈ 1.5 %); the sequential
reduction (each drop's winning head leaves the competition for the other directions) gives
the later ones, for information.
Measurement (:mod:`..experiments._drop_times`): full-batch GD of the whole model on P sampled
sequences, and population GD of the relevant block from the same weights."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from icltheory.core import Claim, Cost, NumericalTrouble, PlantedError, Prediction, lazy_module

from ..settings_init import DropTimesSetting, initial_heads
from ._common import ARXIV, SOLVER_MARGIN, loss_plot, steps_work
from ._planted import C_N_PLUS_1, EXPERIMENTS, THEORY

dt_theory = lazy_module("proofs.linear_attention.theory._drop_times")
dt_ex = lazy_module("proofs.linear_attention.experiments._drop_times")
ex = lazy_module("proofs.linear_attention.experiments")
theory = lazy_module("proofs.linear_attention.theory")

__all__ = ["DropTimes"]

#: the reduction's error in a first drop is of relative order (w_init/v*)², v* = (λc)^(-1/3) the learned
#: scale of the direction (the neglected off-diagonal residual is second order in the initial overlaps
#: against it); measured at Fig. 3's spectrum for w_init = 0.03 … 0.3 the worst seed's error is 0.9–1.3 ×
#: this order, so the claim is judged only where this many × the order is within pop_rel_tol
_REDUCTION_ORDER_MARGIN = 3.0

def _init_order(w_init: float, optimum: np.ndarray) -> float:
    """(w_init/v*)² for the smallest learned scale v* = (M*_dd)^(1/3) of the optimum M*."""
    return float((w_init / np.min(np.cbrt(np.diagonal(optimum)))) ** 2)


def _down3(x: float) -> float:
    """``x`` rounded down to three significant digits (a suggested bound that is still a bound)."""
    unit = 10.0 ** (math.floor(math.log10(x)) - 2)
    return math.floor(x / unit) * unit


#: the sampling spread of a drop time is taken as this many × the relative standard error of
#: its direction's growth rate (T ∝ 1/rate to leading order; ×2 for the other moments entering)
_SPREAD_FACTOR = 2.0


def _embed_code_units_twice(orig):
    """The code-to-paper weight map N^(1/3) applied to weights already in paper units."""
    def embed(heads, D):
        rel, full = orig(heads, D)
        f = 31.0 ** (1.0 / 3.0)
        return ({k: v * f for k, v in rel.items()}, {k: v * f for k, v in full.items()})

    return embed


def _values_slightly_large(orig):
    """The value weights of both trained models scaled by 32/31 (≈ 3 %)."""
    def embed(heads, D):
        rel, full = orig(heads, D)
        f = 32.0 / 31.0
        return ({**rel, "r": rel["r"] * f}, {**full, "r": full["r"] * f})

    return embed


#: flop-equivalents of one step of the prediction's Euler map (interpreter and numpy-call
#: overhead at the ≈ 1e9 flop-equivalents per second the profiles' budgets assume)
_EULER_STEP_WORK = 8e4
#: the same for one step of the finite-sample trainer on the quadratic features
_FS_STEP_WORK = 1.2e5


class DropTimes(Claim):
    id = "linattn.separate.drop-times"
    title = "Each seed's first drop time of ATTN_S follows from its initial weights (per-head ODE in the overlaps)"
    source = f"{ARXIV}, §5 (flow of ATTN_S); the per-seed prediction is derived here (beyond the paper)"
    provenance = "derived here"
    statement = (
        r"\tau\dot v_i=\sum_de_dk_{id}q_{id},\ \tau\dot k_{id}=v_ie_dq_{id},\ \tau\dot q_{id}=v_ie_dk_{id},\ "
        r"e_d=\lambda_d^2(1-\lambda_dc_d\textstyle\sum_iv_ik_{id}q_{id});\ T_1=\min\{t:\max_d M_{dd}(t)\lambda_dc_d"
        r"=\tfrac12\}\ \text{for GD at step }\eta\text{ on this reduction: within 1.5\% of population GD's first drop, "
        r"10\% of finite-sample training's, wherever the residual it leaves out moves }T_1\text{ by less than a third of that}"
    )
    setting_type = DropTimesSetting
    predictions = {
        "first_drop_times": Prediction(
            "per seed: the time (τ) at which the first direction reaches half its learned value 1/(λc), for GD at "
            "the run's step η on the per-head reduction in that seed's initial overlaps (shared value weights, "
            "diagonal residual): the ODE's explicit Euler map, so GD's own lag behind the flow is predicted",
            r"T_1=\min\{t:\max_dM_{dd}(t)\lambda_dc_d=\tfrac12\}"),
        "later_drop_times": Prediction(
            "per seed, drops 2..min(D, H) (τ, flattened seed by seed): the sequential reduction — the same ODE "
            "from drop to drop, each drop's winning head taken out of the competition for the other directions "
            "(its other overlaps decay: derived) — an estimate, not claimed", informational=True),
        "reduction_neglect": Prediction(
            "per seed: how far (relative) the first drop moves when GD runs on the same overlaps with the full "
            "residual Λ² − E[ββᵀ]MΛ, off-diagonal entries kept — what the reduction leaves out, estimated on the "
            "theory's side (inf where that map diverges); a seed where this many × it exceeds pop_rel_tol is outside the "
            "claim's scope", informational=True),
        "first_drop_interpolation_error": Prediction(
            "per seed: how far (relative) the predicted first drop moves when the crossing of ½ is "
            "interpolated by a parabola through the last three GD steps instead of a line through the last "
            "two — the prediction's own accuracy, judged against the claim's tolerances", informational=True),
    }
    planted_errors = (
        C_N_PLUS_1,
        PlantedError("theory", "the diagonal residual grows the overlaps at λ_d (Λ in place of Λ²)",
                     f"{THEORY}._drop_times:residual_diagonal",
                     lambda orig: (lambda lam, c, m: orig(lam, c, m) / lam)),
        # an error of the size the check resolves (≈ 1.5 %), not only gross ones
        PlantedError("measurement", "the trained model's value weights 32/31 of the heads' (≈ 3 % "
                     "too large)", f"{EXPERIMENTS}._drop_times:embed_heads", _values_slightly_large),
        PlantedError("measurement", "the trained model's initial weights mapped from code to paper units twice "
                     "(× N^(1/3))", f"{EXPERIMENTS}._drop_times:embed_heads", _embed_code_units_twice),
    )

    def _heads(self, s) -> dict:
        return initial_heads(s.seed, s.seeds, s.H, s.D, s.w_init)

    def constants(self, s) -> dict:
        heads = self._heads(s)
        horizon = s.steps * s.lr
        rows = dt_theory.drop_times(s.lambdas, s.N, heads, 4 * horizon)
        n = min(s.D, s.H)
        padded = [list(r) + [math.inf] * (n - len(r)) for r in rows]
        first, interp = dt_theory.first_drop_gd_with_error(s.lambdas, s.N, heads, s.lr, 4 * s.steps)
        try:
            full = dt_theory.first_drop_gd_full_residual(s.lambdas, s.N, heads, s.lr, 4 * s.steps)
        except NumericalTrouble:
            full = [math.inf] * len(first)
        neglect = [0.0 if a == b else abs(b / a - 1.0) if math.isfinite(a) and math.isfinite(b) and a > 0 else math.inf
                   for a, b in zip(first, full)]
        return {"first_drop_times": first, "first_drop_interpolation_error": interp, "reduction_neglect": neglect,
                "later_drop_times": [float(x) for r in padded for x in r[1:n]]}

    def derive(self, s):
        return theory.paper().view("ATTN_S drop times from the initial overlaps",
                                   dt_theory.drop_time_ode().derivation)

    def estimate(self, s) -> Cost:
        F = (s.D + 1) ** 2 * s.D
        data = 2.0 * s.P * F * F + 4.0 * s.P * (s.D + 1) * (s.N + 1) * (s.D + 1)
        # full-batch GD on the quadratic features: ≈ 120 µs of interpreter and numpy calls a step
        # at small D (measured), whatever its flops
        fs = s.steps * max(4.0 * s.seeds * F * F, _FS_STEP_WORK)
        pop = steps_work(s.steps, 2 * s.seeds * s.H * s.D * s.D * 4)
        # the prediction: GD's explicit Euler map on the per-head reduction, step by step up to the
        # first drop (≈ the horizon), ≈ 25 numpy calls a step (≈ 70 µs measured)
        euler = 2 * s.steps * _EULER_STEP_WORK  # the reduction and its full-residual counterpart
        # tokens X (P, D+1, N+1) plus the inputs, their Gaussian draw and the labels while sampling
        mem = 8.0 * (s.P * (s.N + 1) * (3 * s.D + 2) + F * F * 2 + s.seeds * 4000 * F)
        # plus ≈ 0.3 s whatever the size (setup, the per-seed predictions, the judge: measured at
        # the smallest settings on the reference machine)
        return Cost(work=data + fs + pop + euler + 1e9, memory=mem,
                    what=f"P={s.P} sequences, {s.steps} GD steps × {s.seeds} seeds (finite-sample and population)")

    def measure(self, s, run) -> dict:
        # the claim's scope, before anything is trained: the reduction's error is of relative order
        # (w_init/v*)², v* the learned scale (M*_dd)^(1/3) of the population optimum M* (its normal
        # equations, solved numerically); an init beyond it (e.g. λ ~ 1e6 at the default init, where
        # GD at the derived step leaves the small-weight regime at once) is not trained
        order = _init_order(s.w_init, ex.population.population_optimum(s.lam, s.N))
        if _REDUCTION_ORDER_MARGIN * order > s.pop_rel_tol:
            return {"init_order": order, "trained": False}
        heads = self._heads(s)
        out = dt_ex.train_drop_times(s.lam, s.N, s.P, heads, lr=s.lr, steps=s.steps, rng=run.rng(31),
                                     tick=run.tick)
        return {**out, "init_order": order, "trained": True}

    def judge(self, s, pred, m, ctx) -> None:
        order = float(m["init_order"])
        ctx.evidence["reduction_error_order"] = order
        if not m["trained"]:
            ctx.inconclusive(f"the init is not small enough for the claimed accuracy: the per-head reduction leaves "
                             f"out terms of relative order (w_init/v*)² = {order:.3g} (v* = (M*_dd)^(1/3) = "
                             f"(λc)^(-1/3), the learned scale), and {_REDUCTION_ORDER_MARGIN:g} × that exceeds "
                             f"pop_rel_tol = {s.pop_rel_tol:g} (found before training: nothing was trained); "
                             f"w_init ≤ {_down3(s.w_init * math.sqrt(s.pop_rel_tol / (_REDUCTION_ORDER_MARGIN * order))):.3g} "
                             "would do, or claim less (raise pop_rel_tol)")
            return
        why_not = s.unstable_lr(s.lr)
        if why_not:
            ctx.inconclusive(why_not)
            return
        tol = s.rel_tol
        horizon = m["horizon"]
        sharpest = min(tol, s.pop_rel_tol)
        interp = [float(x) for x in pred["first_drop_interpolation_error"]]
        interp_ok = all(SOLVER_MARGIN * e <= sharpest for e in interp)
        ctx.condition(f"the prediction's measured interpolation error is {SOLVER_MARGIN:g}× below the claimed accuracy",
                      True if interp_ok else None, predicted=sharpest / SOLVER_MARGIN, measured=interp,
                      why="each seed's crossing of ½ between two GD steps of the reduction, a line through the last "
                          "two steps against a parabola through the last three (relative to the drop time), against "
                          f"the claim's sharpest relative tolerance {sharpest:g} ÷ {SOLVER_MARGIN:g}")
        if not interp_ok:
            ctx.inconclusive(f"the predicted first drops are interpolated between GD steps to only {max(interp):.3g} "
                             f"relative, not {SOLVER_MARGIN:g}× below the claimed accuracy {sharpest:g} (lower lr)")
            return
        # the flow (DOP853) gives the informational flow times and later drops; its error is recorded
        flow, ode_err = dt_theory.first_drop_flow(s.lambdas, s.N, self._heads(s), 4 * s.steps * s.lr)
        ctx.evidence["flow_first_drop_solver_error"] = [float(e) if math.isfinite(e) else None for e in ode_err]
        first = [float(x) for x in pred["first_drop_times"]]
        neglect = [float(x) for x in pred["reduction_neglect"]]
        # the claim's scope: a seed whose first drop the left-out residual moves by more than a third
        # of pop_rel_tol (the theory's own estimate: the same map with it kept) is outside it — a few
        # heads growing along nearly tied directions at once; inside it the population check tests
        # the theory's numbers against an independent population run, and the finite-sample check
        # the reduction against training
        outside = [k for k in range(s.seeds) if _REDUCTION_ORDER_MARGIN * neglect[k] > s.pop_rel_tol]
        if outside:
            ctx.inconclusive(f"seed(s) {outside} outside the claim's scope: the off-diagonal residual the per-head "
                             "reduction leaves out (−E[β_d²]λ_e M_de, kept on the theory's side) moves their first "
                             "drop by " + ", ".join(f"{100 * neglect[k]:.2g} %" for k in outside)
                             + f", more than a third of pop_rel_tol = {s.pop_rel_tol:g} (a few heads growing along nearly "
                             "tied directions at once); not judged")
        fs_t = m["fs_times"]
        budget = 1e-3 / (2 * s.seeds)
        fs_first, pop_first, errors, pop_errors = [], [], [], []
        for k in range(s.seeds):  # T_1: the first time any direction reaches half its learned value
            tf = float(m["fs_first"][k]) if math.isfinite(m["fs_first"][k]) else math.inf
            tp = float(m["pop_first"][k]) if math.isfinite(m["pop_first"][k]) else math.inf
            fs_first.append(tf)
            pop_first.append(tp)
            label = f"seed {k}"
            if k in outside:
                continue
            # a missing population drop is deterministic: judged here; a missing finite-sample drop
            # (the population run has one) is judged below with the training set's sampling spread
            if not math.isfinite(tp):
                if first[k] * (1 + tol) <= horizon:
                    ctx.condition(f"{label}: the first drop happens by (1 + {tol:g}) × the predicted time",
                                  False, judges=("first_drop_times",), predicted=first[k], measured=None,
                                  why="the run lasted past the latest time the claim allows")
                elif not math.isfinite(first[k]):
                    ctx.inconclusive(f"{label}: no drop within the horizon {horizon:.4g} τ, and the per-head ODE from "
                                     "this seed's initial overlaps reaches none within 4 × the horizon either: too "
                                     "short a horizon (raise steps or horizon_factor)")
                else:
                    ctx.inconclusive(f"{label}: no drop within the horizon {horizon:.4g} τ, and the predicted first "
                                     f"drop {first[k]:.4g} τ (+{tol:g}) is beyond it: too short a horizon (raise "
                                     "steps or horizon_factor)")
                continue
            if math.isfinite(tf):
                errors.append((tf - first[k]) / first[k])
            pop_errors.append((tp - first[k]) / first[k])
            ctx.close(f"{label}: population GD's first drop (no sampling error)", judges=("first_drop_times",),
                      predicted=first[k], measured=tp, rtol=s.pop_rel_tol,
                      why=f"the claim: GD on the per-head reduction gives population GD's first drop within "
                          f"{s.pop_rel_tol:.2g} (what the reduction leaves out: the off-diagonal residual); "
                          f"population GD of the relevant block at η = {s.lr:.3g} τ/step from the same weights "
                          "(deterministic)")
            d = int(m["fs_first_direction"][k])
            share = float(m["fs_route_share"][k])
            if share > 0.5:
                ctx.inconclusive(f"{label}: the finite-sample model learned through its value-input × key-label "
                                 f"weights ({share:.0%} of the learned block at the end; first drop at {tf:.4g} τ), "
                                 "which start at zero and grow only from sampling noise — a route the relevant "
                                 "block's per-head ODE does not have (the population run, without it: "
                                 f"{tp:.4g} τ against the predicted {first[k]:.4g} τ); raise P or N")
                continue
            # the spread of the direction the finite-sample run learned first; a run with no drop
            # (d = -1) is given the widest of the directions' spreads (none was seen to lead)
            spread = float(m["spread"][d]) if d >= 0 else float(np.max(m["spread"]))
            sig = _SPREAD_FACTOR * spread * tp
            margin = tol * first[k] - abs(tp - first[k])
            if margin <= 0:
                if abs(tp - first[k]) > s.pop_rel_tol * first[k]:
                    continue  # the population check above has already failed
                ctx.inconclusive(f"{label}: the population run is {abs(tp - first[k]) / first[k]:.2g} from the "
                                 f"prediction, which leaves no room within rel_tol = {tol:g} for the finite-sample "
                                 "run's sampling spread (rel_tol below pop_rel_tol?)")
                continue
            ff = 2.0 * NormalDist().cdf(-margin / sig) if sig > 0 else 0.0
            if ff > budget:
                ctx.inconclusive(f"{label}: P = {s.P} sequences leave a sampling spread {sig:.3g} τ of the first drop "
                                 f"against the margin {margin:.3g} τ (false-fail {ff:.2g} > {budget:.2g}): too few "
                                 "sequences to judge the finite-sample run (raise P)")
                continue
            ctx.close(f"{label}: finite-sample training's first drop (P = {s.P})", judges=("first_drop_times",),
                      predicted=first[k], measured=tf, rtol=tol, false_fail=ff,
                      why=f"the claim's {tol:.0%}; the training set moves the drop from the population run's by "
                          f"≈ N(0, {sig:.3g} τ) ({_SPREAD_FACTOR:g} × the relative standard error "
                          f"{spread:.3g} of {f'direction {d}' if d >= 0 else 'the widest direction'}'s growth rate E[y_q β_d x_q,d] in the data, "
                          f"× the drop time); the {margin:.3g} τ left by the population run's error is "
                          f"{margin / sig:.3g} of it: false-fail {ff:.2g}")
        ctx.evidence["first_drop_times_flow"] = flow
        ctx.note("GD's lag behind its flow, predicted: the per-head ODE's own first drops (the flow, "
                 "`first_drop_times_flow`) come before GD's at step η by "
                 + ", ".join(f"{100 * (a / r - 1):.2g} %" for a, r in zip(first, flow) if r and math.isfinite(a))
                 + " (seed by seed); the prediction is GD's.")
        ctx.measure("first_drop_times_finite_sample", fs_first)
        ctx.measure("first_drop_times_population", pop_first)
        ctx.measure("first_drop_relative_errors", [round(e, 5) for e in errors])
        ctx.measure("first_drop_population_relative_errors", [round(e, 6) for e in pop_errors])
        n = min(s.D, s.H)
        later = [float(x) for x in pred["later_drop_times"]]
        rows = []
        for k in range(s.seeds):
            meas = sorted(float(x) for x in fs_t[k] if np.isfinite(x))[1:n]
            p = later[k * (n - 1):(k + 1) * (n - 1)]
            rows.append({"seed": k, "predicted": [round(x, 3) for x in p], "measured": [round(x, 3) for x in meas],
                         "relative_error": [round((a - b) / b, 4) for a, b in zip(meas, p)],
                         "not_reached": (n - 1) - len(meas)})
        ctx.measure("later_drops", rows)
        ctx.note("Later drops (informational): the sequential reduction, against the finite-sample run — see "
                 "`later_drops` for each seed's errors (drops after the first are not claimed).")
        ctx.plot(loss_plot(f"ATTN_S finite-sample training (P = {s.P}) from each seed's initial weights",
                           m["fs_t"], m["fs_loss"], theory.paper().plateau_levels(s.lambdas, s.N),
                           [f"seed {k}" for k in range(s.seeds)],
                           "Training loss; the first drop is predicted per seed from its initial overlaps.",
                           [(first[k], float(np.interp(first[k], m["fs_t"], m["fs_loss"][k])), f"T₁ seed {k}")
                            for k in range(s.seeds) if first[k] <= m["fs_t"][-1]]))
