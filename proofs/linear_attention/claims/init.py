r"""``linattn.init-scale`` with the large-initialisation regime.

The small-init laws (ATTN_M's ln(1/w), ATTN_S's 1/w) are :class:`.scalar.InitScale`'s; this
subclass adds the regime above a derived init scale: with one balanced aligned head per
eigen-direction, no plateau (the loss's rate of decrease is largest at t = 0) iff
$v_0\ge v_c=\max_d(2/(5\lambda_dc_d))^{1/3}$, and the loss gap then decays exponentially at
$\rho=\min_d6\lambda_d^{5/3}c_d^{-1/3}$ — derived in :mod:`..theory._init_scale`, measured by
population GD of the whole relevant block over a grid of init scales
(:mod:`..experiments._init_regimes`)."""

from __future__ import annotations

import numpy as np

from icltheory.core import Cost, PlantedError, Plot, Prediction, Series, lazy_module

from ..settings_init import LAZY_WINDOW, LazyInitScaleSetting
from ._common import ROW_STEP_WORK, steps_work
from ._planted import EXPERIMENTS, THEORY
from .scalar import InitScale

lazy = lazy_module("proofs.linear_attention.theory._init_scale")
regimes = lazy_module("proofs.linear_attention.experiments._init_regimes")

__all__ = ["InitScaleWithLazy"]


#: the whole loss gap's rate is judged at a scale only where the faster directions' share 1 − s of
#: the gap in the fitting window can pull its slope by at most this much (relative), (1 − s) ×
#: (max ρ_d/min ρ_d − 1) ≤ this; elsewhere the window still shows faster modes, e.g. when the
#: scale sits near the slowest direction's learned value
_MIX_PULL = 0.01


def _gd_rate_allowance(lr: float, r: float) -> float:
    """What gradient descent at step ``lr`` (τ) adds to a fitted decay rate ``r`` (per τ), doubled:
    GD contracts a mode whose loss decays at ρ under the flow by (1 − lrρ/2)² per step, which
    reads as the rate −2 ln(1 − lrρ/2)/lr = ρ(1 + lrρ/4 + …) (absolute, per τ; evaluated at the
    measured rate, hence the factor 2)."""
    x = 0.5 * lr * r
    if not 0.0 <= x < 1.0:
        return float("inf")
    return 2.0 * (-2.0 * np.log1p(-x) / lr - r) if lr > 0 else 0.0


def _keys_queries_like_random_init(orig):
    """The aligned init with keys and queries scaled like the random init (÷√(D+1)): unbalanced."""
    def init(D, scales, eps, rng):
        p = orig(D, scales, eps, rng)
        return {"r": p["r"], "K": p["K"] / np.sqrt(D + 1), "Q": p["Q"] / np.sqrt(D + 1)}

    return init


def lazy_steps_scaled(factor: float):
    """A planted error's replacement of the large-init sweep: its GD takes steps ``factor`` times
    the step its time axis is counted in (every fitted decay rate reads ``factor`` times too high)."""
    def replace(orig):
        def sweep(lam, N, scales, *, lr, **kw):
            out = dict(orig(lam, N, scales, lr=lr * factor, **kw))
            out["t"] = out["t"] / factor
            return out

        return sweep

    return replace


#: what linattn.init-scale runs (the report's "What was run")
_INIT_SCALE_RUN = (
    "Three sweeps of population GD on the exact population loss (the experiment's own moments, no theory). ATTN_M: "
    "`H_merged` merged heads from `seeds` random directions, each at `w_init_merged` × $1,10^{-1},10^{-2},10^{-3}$, "
    "at step `lr_merged` until every run is within $10^{-3}$ of the drop $L(0)-L^\\star$ above $L^\\star$ (at most "
    "`steps_merged` steps); read: when the loss is halfway down to $L^\\star$, whose slope against $\\ln(1/w_{\\rm "
    "init})$ is compared with $1/\\lVert\\Lambda^2\\rVert_F$, and the plateaus a log-time detector finds, attributed "
    "to $M=0$ and $M_\\star$ (one drop predicted). ATTN_S: $H$ heads of rank $R$ from `seeds` random inits at "
    "`w_init` × $1,\\tfrac12,\\tfrac14,\\tfrac18$, at step `lr` for `steps_separate` steps; read: when the loss is "
    "halfway through the largest direction's drop, whose log-log slope against the scale is compared with $-1$. "
    "Large init: $D$ rank-1 heads, head $d$ balanced on $e_d$ at $v_0$ and every weight perturbed by Gaussian noise "
    "of standard deviation `lazy_eps` × $v_0$, for $v_0$ on a geometric grid (`lazy_per_octave` points per octave, "
    "three octaves up to $\\max_d\\lambda_d^{-1/3}$), at step `lr_lazy` for `steps_lazy` steps; read: per direction, "
    "whether its loss share's per-step decrease ever exceeds its first (a plateau), against $v_{c,d}$ and $v_c$, and "
    "the exponential rates of $L-L^\\star$ and of each share on the runs without a plateau, fitted where the gap is "
    "$10^{-10}$–$10^{-5}$ of its start, against $\\rho$ and $\\rho_d$.")


class InitScaleWithLazy(InitScale):
    id = "linattn.init-scale"
    #: its estimate ÷ the work measured on the reference machine (benchmarks/bench_estimates.py)
    work_calibration = 1.9
    title = ("Plateau length grows like ln(1/w_init) for ATTN_M and like 1/(λ² w_init) for ATTN_S; above a "
             "derived init scale there is no plateau and the loss decays exponentially")
    statement = InitScale.statement + (
        r";\quad v_0\ge v_c=\max_d\Big(\frac{2}{5\lambda_dc_d}\Big)^{1/3}\Rightarrow\text{no plateau},\ "
        r"L-L^\star\propto e^{-\rho t/\tau},\ \rho=\min_d 6\lambda_d^{5/3}c_d^{-1/3}"
    )
    setting_type = LazyInitScaleSetting
    predictions = {
        **InitScale.predictions,
        "lazy_threshold": Prediction(
            "ATTN_S, one balanced aligned head per direction: the init v0 above which no direction has a plateau",
            r"v_c=\max_d(2/(5\lambda_dc_d))^{1/3}"),
        "lazy_thresholds": Prediction("per direction d: the init v0 above which its loss share has no plateau",
                                      r"v_{c,d}=(2/(5\lambda_dc_d))^{1/3}"),
        "lazy_rate": Prediction("exponential decay rate (per τ) of the loss gap L − L* above the threshold",
                                r"\rho=\min_d6\lambda_d^{5/3}c_d^{-1/3}"),
        "lazy_rates": Prediction("per direction d: exponential decay rate of its loss share",
                                 r"\rho_d=6\lambda_d^{5/3}c_d^{-1/3}"),
    }
    planted_errors = InitScale.planted_errors + (
        PlantedError("theory", "the critical point of |ℓ̇| taken at u³ = 1/5 (wrong no-plateau threshold)",
                     f"{THEORY}._init_scale:U_CRIT_CUBED", lambda orig: orig / 2),
        PlantedError("theory", "the decay rate of δ = 1 − u taken for the loss's (ℓ ∝ δ², so half the rate)",
                     f"{THEORY}._init_scale:lazy_constants",
                     lambda orig: (lambda lam, N: {**orig(lam, N), "lazy_rate": orig(lam, N)["lazy_rate"] / 2,
                                                   "lazy_rates": [x / 2 for x in orig(lam, N)["lazy_rates"]]})),
        PlantedError("measurement", "the aligned large init scales keys and queries like the random init "
                     "(÷√(D+1): unbalanced heads)", f"{EXPERIMENTS}._init_regimes:aligned_init",
                     _keys_queries_like_random_init),
        # an error about three times what the decay-rate checks resolve (≈ 2.6 % of ρ, 2.8 % of ρ_d at
        # the quick profile); at 0.8 % either way both checks hold
        PlantedError("measurement", "the large-init sweep's GD steps 8 % longer than its time axis counts",
                     f"{EXPERIMENTS}._init_regimes:lazy_sweep", lazy_steps_scaled(1.08)),
    )

    def constants(self, s) -> dict:
        out = super().constants(s)
        out.update(lazy.lazy_constants(s.lambdas, s.N))
        return out

    def derive(self, s):
        d = super().derive(s)
        part = lazy.lazy_regime().derivation
        d.text.append(f"**{part.title}.**")
        d.text.extend(part.text)
        d.terms.update(part.terms)
        d.steps.extend(part.steps)
        return d

    def estimate(self, s) -> Cost:
        base = super().estimate(s)
        rows = len(s.lazy_scales)
        work = steps_work(s.steps_lazy, rows * max(ROW_STEP_WORK, s.D * s.D * s.D * 16))
        mem = 8.0 * rows * s.steps_lazy * (s.D**2 * 2 + s.D + 2)
        return Cost(work=base.work + work, memory=base.memory + mem,
                    what=base.what + f"; {s.steps_lazy} GD steps × {rows} large-init scales")

    def measure(self, s, run) -> dict:
        out = super().measure(s, run)
        out["lazy"] = regimes.lazy_sweep(s.lam, s.N, s.lazy_scales, lr=s.lr_lazy, steps=s.steps_lazy,
                                         eps=s.lazy_eps, rng=run.rng(9), tick=run.tick)
        return out

    def judge(self, s, pred, m, ctx) -> None:
        ctx.note(_INIT_SCALE_RUN)
        super().judge(s, pred, m, ctx)
        self._judge_lazy(s, pred, m["lazy"], ctx)

    def _judge_lazy(self, s, pred, lz, ctx) -> None:
        scales = s.lazy_scales
        q = 2.0 ** (1.0 / s.lazy_per_octave)
        acc = lz["accelerates"]  # (rows, D)
        why_band = (f"grid of v0 (ratio {q:.4g}) judged outside a factor 1 + ηκ of the threshold: closer to "
                    "it the first step's decrease and the later peak differ by less than GD's O(ηκ) "
                    "discretisation; the plateau test compares the largest per-step decrease with the first "
                    "(64 ulp of tr Λ for rounding)")
        widen = 1.0 + s.lr_lazy * s.kappa_max()
        # a row whose loss gap fell to the fitting window's top ran past where a plateau would
        # have ended: only there does a missing plateau speak (a shorter run may still be on it)
        gap = np.asarray(lz["gap"])
        through = gap[:, -1] <= LAZY_WINDOW[1] * gap[:, 0]

        def split(p, acc_col):
            above, below = scales >= p * widen, scales <= p / widen
            seen = below & (acc_col | through)  # below: a plateau shown, or the run went past one
            if acc_col[above].any() or not acc_col[seen].all():
                return False  # a side the grid reaches contradicts the prediction
            if (below & ~seen).any():
                return None  # a run below the threshold too short to show its plateau
            return True if above.any() and below.any() else None  # None: one side not reached

        pv = [float(x) for x in pred["lazy_thresholds"]]
        verdicts = [split(p, acc[:, d]) for d, p in enumerate(pv)]
        if False not in verdicts and None in verdicts:
            ctx.inconclusive(f"large init: the grid {scales[0]:.3g}–{scales[-1]:.3g} does not reach both sides of "
                             f"every direction's predicted threshold {[round(p, 4) for p in pv]}, or a run below "
                             f"one ended before its loss gap fell to {LAZY_WINDOW[1]:g} of its start, still able "
                             "to be on its plateau (raise steps_lazy)")
            return
        ctx.condition("large init: per direction, no plateau above v_c,d and a plateau below it", all(verdicts),
                      judges=("lazy_thresholds",), predicted=pv,
                      measured=[[float(x) for x in scales[acc[:, d]]] for d in range(s.D)],
                      why=why_band + "; measured: the scales at which the direction's decrease accelerates (a "
                      "plateau) — every grid scale below the predicted threshold must, none above it may",
                      detail="" if all(verdicts) else
                      f"violated for directions {[d for d, v in enumerate(verdicts) if not v]}")
        row_acc = acc.any(axis=1)
        pth = float(pred["lazy_threshold"])
        whole = split(pth, row_acc)
        if whole is None and all(verdicts):
            ctx.inconclusive(f"large init: the grid {scales[0]:.3g}–{scales[-1]:.3g} does not reach both sides of "
                             f"the predicted threshold {pth:.4g}")
            return
        ctx.condition("large init: no plateau above v_c, a plateau below it", whole,
                      judges=("lazy_threshold",), predicted=pth, measured=[float(x) for x in scales[row_acc]],
                      why=why_band + "; measured: the scales at which some direction's decrease accelerates")
        ctx.measure("lazy_scales", [float(x) for x in scales])
        ctx.measure("lazy_accelerates", acc.astype(int).tolist())
        ctx.measure("lazy_peak_over_first_decrease", np.round(np.where(np.isfinite(lz["ratio"]), lz["ratio"], -1), 6).tolist())
        lo_w, hi_w = LAZY_WINDOW
        rows = [i for i in range(len(scales)) if not row_acc[i]]
        if not rows:
            ctx.inconclusive("large init: no grid scale is free of a plateau — no exponential decay to fit")
            return
        rates, tols, judged, shares = [], [], [], []
        pr = [float(x) for x in pred["lazy_rates"]]
        nonpositive = tuple(k for k, v in (("lazy_rate", [float(pred["lazy_rate"])]), ("lazy_rates", pr))
                            if not min(v) > 0)
        if nonpositive:  # a rate ≤ 0 predicts no decay: judged against the fitted rate of the first such row
            r0 = regimes.fit_decay_rate(lz["t"], lz["gap"][rows[0]], lo_w, hi_w)[0]
            ctx.condition("large init: the predicted decay rates are positive", False if r0 > 0 else None,
                          judges=nonpositive, predicted=[float(pred["lazy_rate"])] + pr, measured=float(r0),
                          why=f"L − L* is measured to fall at v0 = {scales[rows[0]]:.4g} (the slope of ln(L − L*) over "
                              f"its {lo_w:g}–{hi_w:g} window); a rate ≤ 0 predicts no decay")
            return
        slowest = np.flatnonzero(np.asarray(pr) <= min(pr) * (1 + 1e-9))  # (tied eigenvalues: all of them)
        slow = ",".join(str(int(d)) for d in slowest)
        mix = max(pr) / min(pr) - 1.0  # a share 1 − s of faster modes moves the slope by ≤ (1 − s)·mix·ρ
        for i in rows:
            r, spread, n = regimes.fit_decay_rate(lz["t"], lz["gap"][i], lo_w, hi_w)
            if not np.isfinite(r):
                ctx.inconclusive(f"large init v0 = {scales[i]:.4g}: the loss gap did not reach {lo_w:g} of its "
                                 f"initial value within {lz['steps']} steps (raise steps_lazy)")
                return
            win = regimes.decay_window(lz["gap"][i], lo_w, hi_w)
            ell_w = lz["ell"][i][win]
            share = float(np.min(ell_w[:, slowest].sum(axis=1) / np.maximum(ell_w.sum(axis=1), 1e-300)))
            shares.append(share)
            if (1.0 - share) * mix > _MIX_PULL:
                continue
            judged.append(i)
            rates.append(r)
            tols.append(_gd_rate_allowance(s.lr_lazy, r) + 2 * spread + 10 * float(lz["off_diagonal"][i])
                        + (1.0 - share) * mix * float(pred["lazy_rate"]))
        ctx.measure("lazy_slowest_direction_share", [round(x, 6) for x in shares])
        need = 1.0 - _MIX_PULL / mix if mix > 0 else 0.0
        left = [float(scales[i]) for i, sh in zip(rows, shares) if (1.0 - sh) * mix > _MIX_PULL]
        if left:
            ctx.note(f"large init: the whole gap's rate is not judged at v0 = {[round(x, 4) for x in left]}: there the "
                     f"slowest direction(s) e_{slow} carry less than {need:.4g} of the gap in the fitting window (its "
                     "initial gap is small: v0 near its learned scale), so the window shows faster modes; each "
                     "direction's own rate is judged below")
        if not judged:
            ctx.inconclusive(f"large init: at no grid scale without a plateau do the slowest direction(s) e_{slow} carry "
                             f"{need:.4g} of the gap in the fitting window — the whole gap's asymptotic rate is not "
                             "reached there (a wider grid, or a deeper window)")
        rt = max(tols, default=0.0) / float(pred["lazy_rate"])
        if judged:
            ctx.close("large init: L − L* decays exponentially at ρ = min_d ρ_d", judges=("lazy_rate",),
                      predicted=[float(pred["lazy_rate"])] * len(judged), measured=rates, rtol=rt,
                      why=f"least-squares slope of ln(L − L*) where it is {lo_w:g}–{hi_w:g} of its initial value, at "
                          f"the scales where the others' share 1 − s of it there (measured) can move the slope by ≤ "
                          f"(1 − s)(max ρ_d/min ρ_d − 1)·ρ ≤ {_MIX_PULL:g}·ρ (added); GD contracts a mode of rate ρ by (1 − ηρ/2)² per step, which reads as the rate −2 ln(1 − ηρ/2)/η = ρ(1 + ηρ/4 + …): twice that bias (added); the "
                          "fit's curvature (first half vs second half of the window, ×2); 10× the off-ansatz weights "
                          f"left by the ε = {s.lazy_eps:g} noise — largest over the rows: {rt:.3g} relative")
        per_dir, tol_d = [], []
        top = rows[0]
        ell = lz["ell"][top]
        for d in range(s.D):
            r, spread, n = regimes.fit_decay_rate(lz["t"], ell[:, d], lo_w, hi_w)
            per_dir.append(r)
            tol_d.append((_gd_rate_allowance(s.lr_lazy, r) + 2 * spread + 10 * float(lz["off_diagonal"][top]))
                         / max(r, 1e-300))
        if not np.all(np.isfinite(per_dir)):
            ctx.inconclusive("large init: a direction's loss share did not decay through the fitting window")
            return
        ctx.close(f"large init v0 = {scales[top]:.4g}: each direction's loss share decays at ρ_d",
                  judges=("lazy_rates",), predicted=[float(x) for x in pred["lazy_rates"]], measured=per_dir,
                  rtol=max(tol_d), why="as for the whole gap, per direction (ℓ_d from M_dd alone)")
        ctx.measure("lazy_rate", rates)
        ctx.measure("lazy_rates", per_dir)
        sel = [0, rows[0], len(scales) - 1]
        ctx.plot(Plot(title="ATTN_S, balanced aligned init: plateau below v_c, exponential decay above",
                      xlabel="t / τ", ylabel="L − L* (plain MSE)",
                      series=[Series(lz["t"][ok], lz["gap"][i, ok], f"v0 = {scales[i]:.3g}")
                              for i in sorted(set(sel)) for ok in [lz["gap"][i] > 1e-13 * lz["Lstar"]]],
                      logy=True, caption=f"predicted v_c = {pth:.4g}, ρ = {float(pred['lazy_rate']):.4g} per τ"))
