r"""The theory of the nonlinear-regression claims, derived once in SymPy and lowered to numbers.

:func:`theory` builds one :class:`NonlinearTheory`: every named term is derived symbolically,
every step verified (:class:`~icltheory.core.Derivation`), and the numeric views used by the
claims (``constants``) and by the settings (step-size rules and horizons) are lowered from those
terms with ``lambdify`` — this module is the only source of predicted numbers.

1. **Rescaling** (derived here; reference §6.1).  A prediction linear in the labels,
   :math:`\hat y=\sum_ia_i(s)\,y_i`, with squared loss and tasks :math:`f=L\,g`: the gradient
   scales by :math:`\rho(L)=L^2`, so GD at :math:`(\eta,L)` is GD at
   :math:`(\eta\rho(L)/\rho(L'),L')` and every threshold time is :math:`\tau_\theta/(\eta L^2)`
   in the small-step regime (slope −2 in :math:`L`, −1 in :math:`\eta`).
2. **Isotropic population dynamics** (:math:`C=cI`, orthonormal features; reference §6.2–6.3).
   The logit gap :math:`z` of one query row grows by
   :math:`\dot z=\eta cK\,p(1-p)^2/(K-1)^2` per step, so the flow time to attention
   :math:`\theta` is :math:`\frac{(K-1)^2}{K\eta c}[F(\theta)-F(1/K)]`, the late phase is
   :math:`1-p\approx(K-1)/\sqrt{2K\eta ct}` and :math:`\ell t\to(K-1)/(4\eta)`.
3. **The blog summary's statements**: :math:`T_{\rm fast}\propto1/(\eta L)`,
   :math:`L^\star=\sqrt{d/n}`, and the lemma :math:`\dot\alpha=r(1-\alpha)` (one exponential
   phase: equal times for equal ratios of :math:`1-\alpha`), lowered as the time
   :math:`G(\theta)-G(1/K)` from an antiderivative :math:`G` of :math:`1/\dot\alpha`.

Stated constants of the claims (thresholds and bands from the reference's claim list, §8) are
not derived; they live here too (:data:`STATED`) so that every predicted number has one source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp

from icltheory.core import Derivation, derived
from icltheory.symbolic import lowered

__all__ = ["NonlinearTheory", "theory", "STATED", "gradient_scaling", "gap_rate",
           "flow_antiderivative", "summary_fast_time", "lemma_rate_equation",
           "lemma_attention_rate", "summary_table"]

#: Constants stated by the claims (reference §8 and the blog summary), not derived.
STATED = {
    "slope_tol": 0.1,             # C-L-SCALING: slope −2 ± 0.1
    "phase_ratio_max": 0.1,       # C-TWO-PHASE: T(0.5) ≪ T(1−δ)
    "slope_band": (-2.1, -1.85),  # C-TWO-PHASE: local slope of log T(δ) vs log δ
    "loss_t_rtol": 0.05,          # C-TWO-PHASE: ℓ·t → (K−1)/(4η) within 5 %
    "asymptote_rtol": 0.05,       # C-ASYMPTOTE: within 5 %
    "k_ratio_band": (1.0, 1.5),   # C-K-SCALING
    "k_ratio_band_K": (4, 32),    # C-K-SCALING: the K the band is stated for
    "peak_min": 0.3,              # C-OSCILLATE
    "slow_decay_min": 5.0,
    "slowdown_min": 50.0,
    "attn_min": 0.95,             # C-FINAL-ATTENTION (mean over prompts)
    "loss_ratio_max": 3e-3,
    "lemma_band": 3.0,            # "∼": the lemma's time ratios up to a factor 3
    # the lemma's "≈" for the rate itself: the summary gives no number; read, as loosely as
    # its "∼" for times, as within a factor 3 either way (the default fails by a factor 20–30)
    "lemma_rate_band": 3.0,
    "final_delta": 0.05,          # α ≥ 1 − δ with probability ≥ 1 − δ (blog; δ as in §8's 0.95)
}

L, Lp, eta, etap, tau = sp.symbols("L L' eta eta' tau", positive=True)
q = sp.Symbol("q", real=True)
p, c, K, t, delta, r = sp.symbols("p c K t delta r", positive=True)
d_sym, n_sym = sp.symbols("d n", positive=True)


# ----------------------------------------------------------------------------- the pieces

def gradient_scaling(grad_scaled: sp.Expr, grad_unit: sp.Expr) -> sp.Expr:
    """The factor by which scaling the task by L scales the loss gradient."""
    return sp.factor(sp.simplify(grad_scaled / grad_unit))


def gap_rate(p_, c_, K_, eta_) -> sp.Expr:
    """Per-step growth of the logit gap of one query row, from the row gradients (isotropic)."""
    q_ = (1 - p_) / (K_ - 1)
    ar = p_ * (p_ - 1) + (K_ - 1) * q_**2  # aᵀr
    g_target = c_ / K_ * (p_ * (p_ - 1) - p_ * ar)
    g_other = c_ / K_ * (q_ * q_ - q_ * ar)
    return sp.factor(-eta_ * (g_target - g_other))


def flow_antiderivative(p_) -> sp.Expr:
    """An antiderivative of 1/(p²(1−p)³) (verified by differentiation in the derivation)."""
    return -1 / p_ + 3 * sp.log(p_ / (1 - p_)) + 1 / (2 * (1 - p_) ** 2) + 2 / (1 - p_)


def summary_fast_time(eta_, L_) -> sp.Expr:
    """The blog summary's fast-phase time, T_fast ∝ 1/(ηL) (unit constant)."""
    return 1 / (eta_ * L_)


def lemma_rate_equation(alpha, r_) -> sp.Expr:
    """The blog summary's early-phase lemma, dα/dt = r(1 − α) with r ∼ ηΔ."""
    return r_ * (1 - alpha)


def lemma_attention_rate(eta_, gap, alpha) -> sp.Expr:
    """The blog summary's key lemma as printed: dα_{q,+}/dt ≈ η σ′(s⁺ − s⁻)(s⁺ − s⁻)(1 − α_{q,+}),
    σ the logistic sigmoid, ``gap`` = s⁺ − s⁻."""
    sig = 1 / (1 + sp.exp(-gap))
    return eta_ * sp.diff(sig, gap) * gap * (1 - alpha)


def summary_table() -> tuple[tuple, tuple, tuple]:
    """The blog summary's experiment table (its "结果分析"): L, final attention, final loss."""
    return ((sp.Rational(1, 2), 1, 2, 5),
            (sp.Rational("0.2341"), sp.Rational("0.6823"), sp.Rational("0.8956"),
             sp.Rational("0.9723")),
            (sp.Rational("0.0892"), sp.Rational("0.0234"), sp.Rational("0.0089"),
             sp.Rational("0.0031")))


# ----------------------------------------------------------------------------- the object


@dataclass(frozen=True)
class NonlinearTheory:
    """Named terms (SymPy) and their numeric views (numpy, lowered with ``lambdify``)."""

    rescaling: Derivation
    isotropic: Derivation
    summary: Derivation
    lemma: Derivation
    table: Derivation
    eta_exponent: float        # η' = η (L/L')^eta_exponent
    trajectory_difference: float  # GD step at (η, L) minus GD step at (η', L'): 0
    time_slope_L: float        # d log T / d log L at fixed η
    time_slope_eta: float      # d log T / d log η at fixed L
    summary_slope_L: float     # the summary's d log T_fast / d log L
    table_Ls: tuple            # the L values of the summary's table
    attention_trend: float     # sign of d(final attention)/dL stated by the table (+1, −1, 0)
    speed_trend: float         # sign of d(convergence speed)/dL stated by the summary
    late_exponent: float       # d log(1 − p) / d log t as t → ∞
    late_loss_exponent: float  # d log ℓ / d log t as t → ∞
    _fns: dict

    # -- rescaling ------------------------------------------------------------------------
    def equivalent_step(self, eta_, L_, Lp_) -> float:
        """The step η' at scale L' that reproduces GD at (η, L) exactly."""
        return float(self._fns["eta_prime"](eta_, L_, Lp_))

    def loss_ratio(self, L_, Lp_) -> float:
        """ℓ_L / ℓ_L' on identical weights."""
        return float(self._fns["loss_ratio"](L_, Lp_))

    # -- isotropic flow -------------------------------------------------------------------
    def flow_time(self, theta, K_, eta_c):
        """Flow time (in GD steps) for p to rise from 1/K to θ (0 for θ ≤ 1/K)."""
        th = np.asarray(theta, dtype=float)
        F = self._fns["F"]
        val = (K_ - 1) ** 2 / (K_ * eta_c) * (F(np.maximum(th, 1.0 / K_)) - F(1.0 / K_))
        return np.where(th <= 1.0 / K_, 0.0, val)

    def asymptotic_time(self, delta_, K_, eta_c):
        """Leading term (K−1)²/(2Kηcδ²) of the time to p ≥ 1 − δ."""
        return self._fns["T_asym"](np.asarray(delta_, dtype=float), K_, eta_c)

    def initial_rate(self, K_, eta_c) -> float:
        """Logit-gap growth of the first step from B = 0: ηc/K²."""
        return float(self._fns["rate0"](K_, eta_c))

    def step_rate(self, p_, K_, eta_c):
        """Per-step growth of the logit gap at attention p."""
        return self._fns["rate"](np.asarray(p_, dtype=float), K_, eta_c)

    def euler_lag(self, theta, K_):
        """½|ln(ż(θ)/ż(1/K))|: how many steps GD's crossing may sit from the flow time."""
        th = np.asarray(theta, dtype=float)
        return 0.5 * np.abs(np.log(self.step_rate(th, K_, 1.0) / self.step_rate(1.0 / K_, K_, 1.0)))

    def stiffness(self, K_, eta_c) -> float:
        """max over p ∈ [1/K, 1] of |∂ż/∂z| (at the exact critical points and on a grid): GD
        follows the flow only while this is well below 1."""
        pts = np.concatenate([np.linspace(1.0 / K_, 1.0, 2001),
                              [x for x in self._fns["stiff_crit"] if 1.0 / K_ < x < 1.0]])
        vals = np.broadcast_to(self._fns["stiff"](pts, K_, eta_c), pts.shape)
        return float(np.max(np.abs(vals)))

    def loss_t_limit(self, K_, eta_) -> float:
        """lim ℓ(t)·t = (K−1)/(4η)."""
        return float(self._fns["loss_t"](K_, eta_))

    def k_ratio(self, K_) -> float:
        """ηc·T(0.5)/K² of the exact flow."""
        return float(self.flow_time(0.5, K_, 1.0)) / K_**2

    def local_late_exponent(self, delta_) -> float:
        """d log(1 − p)/d log t of the flow at 1 − p = δ, to first order in δ."""
        return float(self._fns["late_local"](delta_))

    def interval_ratio(self, times) -> float:
        """(T₃ − T₂)/(T₂ − T₁) for the times T₁ < T₂ < T₃ of three levels."""
        t1, t2, t3 = (float(x) for x in times)
        return (t3 - t2) / (t2 - t1)

    # -- the summary ----------------------------------------------------------------------
    def lemma_time(self, theta, K_) -> float:
        """The lemma's time (r = 1) from α = 1/K to α = θ."""
        G = self._fns["lemma_G"]
        with np.errstate(all="ignore"):
            return float(np.real(G(complex(theta)) - G(complex(1.0 / K_))))

    def summary_L_star(self, d_, n_) -> float:
        """The summary's regime threshold √(d/n)."""
        return float(self._fns["L_star"](d_, n_))

    def lemma_rate(self, eta_, gap, alpha) -> np.ndarray:
        """The lemma's dα/dt = ησ′(Δ)Δ(1 − α) at the given gaps Δ and attentions α."""
        gap = np.asarray(gap, dtype=float)
        with np.errstate(over="ignore"):
            return np.asarray(self._fns["lemma_rate"](float(eta_), gap,
                                                      np.asarray(alpha, dtype=float)),
                              dtype=float) * np.ones_like(gap)


def _lambdify(args, expr) -> Callable:
    return lowered(args, expr, "numpy")


def _number(expr) -> float:
    """A derived constant as a float (``nan`` when the derivation did not reduce it to a number,
    e.g. under a planted error: the refuted step then makes the verdict fail)."""
    try:
        return float(expr)
    except (TypeError, ValueError):
        return float("nan")


def _derive_rescaling() -> tuple[Derivation, dict, dict]:
    d = Derivation("Scaling the task by L scales the loss and its gradient by L²")
    d.say("A prediction linear in the labels, ŷ = Σᵢ aᵢ yᵢ with aᵢ = softmaxᵢ(sᵢ), and squared "
          "loss. The scores sᵢ(q) (= xᵢᵀQx_q here) are arbitrary functions of a trainable entry q "
          "of Q, so the identity holds for every entry and any score parametrisation. Three "
          "tokens suffice (more tokens or prompts add terms of the same form). After "
          "differentiating, e^{sᵢ} is written Eᵢ and dsᵢ/dq is written sᵢ'.")
    ys = sp.symbols("y1:4", real=True)
    yq = sp.Symbol("y_q", real=True)
    S = [sp.Function(f"s{i}", real=True)(q) for i in range(1, 4)]
    E = sp.symbols("E1:4", positive=True)
    Sp = sp.symbols("s1:4'", real=True)
    compact = {**{sp.exp(si): Ei for si, Ei in zip(S, E)},
               **{sp.Derivative(si, q): spi for si, spi in zip(S, Sp)}}

    def loss(scale):
        Z = sum(sp.exp(si) for si in S)
        yhat = sum(sp.exp(si) * scale * yi for si, yi in zip(S, ys)) / Z
        return sp.Rational(1, 2) * (yhat - scale * yq) ** 2

    def grad(scale):
        return sp.diff(loss(scale), q).xreplace(compact)

    d.define("loss_1", loss(1).xreplace(compact), "loss at scale 1")
    d.step("loss scales by L²", loss(L).xreplace(compact), L**2 * loss(1).xreplace(compact),
           "ŷ is linear in the labels")
    g1 = d.define("grad_1", grad(1), "∂ℓ₁/∂q by the chain rule through the scores")
    rho = d.define("rho(L)", gradient_scaling(grad(L), g1), "gradient factor ∇ℓ_L/∇ℓ₁")
    d.step("gradient scales by L²", grad(L), L**2 * g1,
           "differentiated symbolically: the scores do not depend on the labels")
    d.fact("ρ(L) = L², free of the labels and scores", sp.simplify(rho - L**2) == 0,
           "the factor used below, as computed from the two gradients, against the step above: the "
           "same for every prompt, so GD at (η, L) is GD at (ηL², 1)", "sympy.simplify(ρ − L²) == 0")
    sol = sp.solve(sp.Eq(q - eta * rho * g1, q - etap * rho.subs(L, Lp) * g1), etap)
    eta_p = d.define("eta'", sol[0], "the step at L' whose GD iterate equals GD at (η, L)")
    step_diff = sp.simplify((q - eta * grad(L)) - (q - eta_p * grad(Lp)))
    d.step("GD step at (η, L) = GD step at (η', L')", q - eta * grad(L),
           q - eta_p * grad(Lp), "so Q_t(η, L) = Q_t(η', L') for every t")
    expo = sp.simplify(L * sp.diff(sp.log(eta_p), L))
    d.define("exponent", expo, "η' = η (L/L')^exponent: d log η' / d log L")
    T = tau / (eta * rho)
    d.define("T", T, "crossing time in the small-step (flow) regime: flow time τ_θ over ηρ(L)")
    sL = sp.simplify(L * sp.diff(sp.log(T), L))
    sE = sp.simplify(eta * sp.diff(sp.log(T), eta))
    d.define("slope_L", sL, "d log T / d log L")
    d.define("slope_eta", sE, "d log T / d log η")
    fns = {"eta_prime": _lambdify((eta, L, Lp), eta_p),
           "loss_ratio": _lambdify((L, Lp), rho / rho.subs(L, Lp))}
    vals = {"eta_exponent": _number(expo), "time_slope_L": _number(sL), "time_slope_eta": _number(sE),
            "trajectory_difference": _number(step_diff)}
    return d, fns, vals


def _derive_isotropic() -> tuple[Derivation, dict, dict]:
    d = Derivation("Isotropic population dynamics (C = cI, orthonormal features)")
    d.say("Row k of the logits keeps the target logit and K−1 equal others; p = a_k[k], "
          "q = (1−p)/(K−1) the attention on each other feature, r = a − e_k, "
          "∇_B ℓ = (diag a − aaᵀ) C r / K; GD moves the gap z = B[k,k] − B[k,n] by "
          "−η(g_k − g_n) per step.")
    rate = d.define("z_dot", gap_rate(p, c, K, eta), "gap growth per step")
    d.step("gap rate per step", rate, eta * c * K * p * (1 - p) ** 2 / (K - 1) ** 2,
           "row gradients: g_k = −cp(1−p)²/(K−1), g_n = cp(1−p)²/(K−1)²")
    rate0 = rate.subs(p, 1 / K)
    d.step("initial rate at p = 1/K", rate0, eta * c / K**2, "early phase: the first step from B = 0")
    F = d.define("F", flow_antiderivative(p), "antiderivative")
    d.step("F' = 1/(p²(1−p)³)", sp.diff(F, p), 1 / (p**2 * (1 - p) ** 3),
           "dp/dt = p(1−p)·ż = ηcK p²(1−p)³/(K−1)², so t(θ) = (K−1)²/(ηcK)[F(θ) − F(1/K)]")
    Fd = F.subs(p, 1 - delta)
    form = sp.Limit(Fd * 2 * delta**2, delta, 0)
    lead = form.doit()
    d.step("leading term of F(1−δ)", form, 1, "F(1−δ) = 1/(2δ²)(1 + 4δ + …)")
    form = sp.Limit((Fd - 1 / (2 * delta**2)) * delta, delta, 0)
    nxt = form.doit()
    d.step("next term of F(1−δ)", form, 2, "so T(δ) = (K−1)²/(2Kηcδ²)·(1 + 4δ + O(δ² log 1/δ))")
    T_asym = d.define("T_asym", (K - 1) ** 2 / (K * eta * c) * lead / (2 * delta**2),
                      "leading term of the time to p = 1 − δ")
    T2 = T_asym * (1 + nxt * 2 * delta)
    slope = sp.simplify(delta * sp.diff(sp.log(T2), delta))
    d.step("local slope of log T(δ) vs log δ", slope, -2 + 4 * delta / (1 + 4 * delta),
           "from the two leading terms")
    form = sp.Limit(1 / slope, delta, 0)
    late = form.doit()
    d.step("late exponent of 1 − p(t)", form, -sp.Rational(1, 2),
           "1 − p = δ with log δ / log T → 1/slope → −½")
    loss_k = sp.Rational(1, 2) * c * ((1 - p) ** 2 + (K - 1) * ((1 - p) / (K - 1)) ** 2)
    d.step("loss of one query", loss_k, c * (1 - p) ** 2 * K / (2 * (K - 1)),
           "ℓ = (1/2K) Σ_k c|r_k|², all rows equal")
    one_minus_p_sq = sp.solve(sp.Eq(T_asym.subs(delta, sp.Symbol("u", positive=True)), t),
                              sp.Symbol("u", positive=True))[0] ** 2
    loss_t = sp.simplify(loss_k.subs(p, 1 - sp.sqrt(one_minus_p_sq)) * t)
    d.step("late loss × t", sp.Subs(loss_k * t, p, 1 - sp.sqrt(one_minus_p_sq)), (K - 1) / (4 * eta),
           "with (1−p)² = (K−1)²/(2Kηct) from the leading term")
    late_loss = sp.simplify(t * sp.diff(sp.log(loss_t / t), t))
    dzdz = sp.factor(sp.diff(rate, p) * p * (1 - p))  # ∂ż/∂z = (dż/dp)(dp/dz)
    d.step("stiffness ∂ż/∂z", dzdz, eta * c * K / (K - 1) ** 2 * p * (1 - p) ** 2 * (1 - 3 * p),
           "dp/dz = p(1−p)")
    crit = [float(x) for x in sp.solve(sp.diff(dzdz, p), p) if x.is_number and x.is_real]
    crit = [x for x in crit if 0 < x < 1]
    u = sp.Symbol("u", positive=True)
    fns = {"F": _lambdify(p, F), "T_asym": _lambdify((delta, K, u), T_asym.subs(eta, u / c)),
           "rate0": _lambdify((K, u), rate0.subs(eta, u / c)),
           "rate": _lambdify((p, K, u), rate.subs(eta, u / c)),
           "loss_t": _lambdify((K, eta), loss_t),
           "stiff": _lambdify((p, K, u), dzdz.subs(eta, u / c)), "stiff_crit": crit,
           "late_local": _lambdify(delta, 1 / slope)}
    return d, fns, {"late_exponent": _number(late), "late_loss_exponent": _number(late_loss)}


def _derive_summary(rescaling_T: sp.Expr) -> tuple[Derivation, dict, dict]:
    d = Derivation("The blog summary's statements, made explicit")
    Tf = d.define("T_fast", summary_fast_time(eta, L), "the summary: T_fast ∝ 1/(ηL)")
    s = sp.simplify(L * sp.diff(sp.log(Tf), L))
    d.define("summary slope", s, "d log T_fast / d log L")
    Ls = d.define("L*", sp.sqrt(d_sym / n_sym), "the summary's regime threshold √(d/n)")
    a = sp.Symbol("alpha", positive=True)
    rate = d.define("alpha_dot", lemma_rate_equation(a, r),
                    "the summary's lemma: dα/dt = r(1 − α) with r ∼ ηΔ (one exponential phase)")
    G = d.define("G", sp.integrate(1 / rate, a),
                 "an antiderivative of 1/α̇: from α(0) = 1/K, α is reached at t = G(α) − G(1/K)")
    d.step("G' = 1/α̇", sp.diff(G, a), 1 / rate, "differentiated symbolically")
    d.say("For α̇ = r(1 − α) this gives 1 − α(t) = (1 − 1/K)e^{−rt}: equal times for equal "
          "ratios of 1 − α, and T(θ) ∝ log((1 − 1/K)/(1 − θ)) for every θ (a single phase).")
    fns = {"L_star": _lambdify((d_sym, n_sym), Ls), "lemma_G": _lambdify(a, G.subs(r, 1))}
    return d, fns, {"summary_slope_L": _number(s)}


def _derive_lemma() -> tuple[Derivation, dict, dict]:
    d = Derivation("The summary's key lemma, as printed")
    d.say("The summary: early in training dα_{q,+}/dt ≈ η σ′(s⁺ − s⁻)(s⁺ − s⁻)(1 − α_{q,+}), with "
          "s⁺ the query's mean score on the tokens of its feature, s⁻ on the others, σ the "
          "logistic sigmoid (t counts GD steps: η is the step).")
    gap, a = sp.Symbol("Delta", real=True), sp.Symbol("alpha", positive=True)
    sig = 1 / (1 + sp.exp(-gap))
    d.step("σ′ = σ(1 − σ)", sp.diff(sig, gap), sig * (1 - sig), "differentiated symbolically")
    rate = d.define("alpha_dot", lemma_attention_rate(eta, gap, a),
                    "the lemma's rate at gap Δ = s⁺ − s⁻ and attention α")
    d.define("alpha_dot at Δ = 0", sp.simplify(rate.subs(gap, 0)),
             "the lemma's rate from uniform attention (Q = 0, the paper's initialisation): for "
             "the printed lemma 0, no rise at all")
    fns = {"lemma_rate": _lambdify((eta, gap, a), rate)}
    return d, fns, {}


def _derive_table() -> tuple[Derivation, dict, dict]:
    d = Derivation("The summary's experiment table, as stated")
    Ls, attn, loss = summary_table()
    d.say("The summary's table (final attention and loss after training, for L = "
          + ", ".join(str(x) for x in Ls) + ") and its two observations: the larger L, the more "
          "concentrated the final attention; convergence also speeds up as L grows.")
    diffs = [attn[i + 1] - attn[i] for i in range(len(attn) - 1)]
    signs = sorted({int(sp.sign(x)) for x in diffs})
    trend = signs[0] if len(signs) == 1 else 0
    t = d.define("attention_trend", sp.Integer(trend),
                 "the common sign of the table's successive attention differences (+1: "
                 "increasing in L; 0: not monotone)")
    gaps = sp.symbols(f"Delta_1:{len(diffs) + 1}", real=True)  # the differences, put in below

    def sign_of(extreme):  # the sign of the smallest (largest) difference, unevaluated
        return sp.Subs(sp.sign(extreme(*gaps)), gaps, tuple(diffs))

    d.step("the table is monotone in L", sign_of(sp.Min), sign_of(sp.Max),
           "the successive attention differences share one sign: "
           + ", ".join(str(x) for x in diffs))
    spd = d.define("speed_trend", sp.Integer(1), "the summary's text: convergence speeds up "
                   "as L grows (stated, no numbers)")
    fns: dict = {}
    vals = {"table_Ls": tuple(float(x) for x in Ls), "attention_trend": float(t),
            "speed_trend": float(spd)}
    return d, fns, vals


@derived
def theory() -> NonlinearTheory:
    """Derive once; every step verified."""
    d1, f1, v1 = _derive_rescaling()
    d2, f2, v2 = _derive_isotropic()
    d3, f3, v3 = _derive_summary(d1.terms["T"])
    d4, f4, v4 = _derive_lemma()
    d5, f5, v5 = _derive_table()
    return NonlinearTheory(rescaling=d1, isotropic=d2, summary=d3, lemma=d4, table=d5,
                           _fns={**f1, **f2, **f3, **f4, **f5}, **v1, **v2, **v3, **v4, **v5)
