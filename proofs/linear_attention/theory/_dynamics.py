r"""Dynamics derived once in general symbols: ATTN_M's saddle at zero and logistic σ(t), ATTN_S's
flow equations and per-direction plateau ODE with its closed-form integral, and the
initialisation-scale laws.

Conventions: plain-MSE losses; time in units of τ for the flow $\tau\dot\theta=-\partial
L_{1/2}/\partial\theta$, $L_{1/2}=L/2$.
"""

from __future__ import annotations

import sympy as sp

from icltheory.core import Derivation

from . import _population as popm
from ._population import DSYM, N, T, Population, lam

__all__ = ["MergedDynamics", "SeparateDynamics", "ScalarOde", "InitScale", "G_closed_form"]


def G_closed_form(u):
    r"""$G(u)=-\frac1u-\frac13\ln(1-u)+\frac16\ln(u^2+u+1)-\frac1{\sqrt3}\arctan\frac{2u+1}{\sqrt3}$,
    an antiderivative of $1/(u^2(1-u^3))$ on (0, 1) (derived here)."""
    return (-1 / u - sp.log(1 - u) / 3 + sp.log(u**2 + u + 1) / 6
            - sp.atan((2 * u + 1) / sp.sqrt(3)) / sp.sqrt(3))


class MergedDynamics:
    r"""ATTN_M: θ = 0 is a saddle; for Λ = λI the balanced aligned flow is logistic."""

    def __init__(self, pop: Population) -> None:
        d = Derivation("ATTN_M: the saddle at zero and the logistic time course for Λ = λI")
        G = pop.Lam**2
        s = sp.Symbol("s", real=True)
        curvature = {}
        for sign in (1, -1):
            path = sp.collect(sp.expand(pop.at(pop.loss, s * (sign * s) * G)), s)
            curvature[sign] = sp.diff(path, s, 2).subs(s, 0)
            d.step(f"curvature at θ = 0 along (v, U) = s(1, {'+' if sign > 0 else '−'}Λ²)",
                   sp.Subs(sp.Derivative(path, (s, 2)), s, 0), -sign * 4 * (G.multiply_elementwise(G)).trace(),
                   "second derivative at s = 0 of L along the path, L(M) at M = vU = ±s²Λ²")
        d.fact("θ = 0 is a saddle",
               bool(sp.expand(curvature[1]).is_negative and sp.expand(curvature[-1]).is_positive),
               "∇L(0) = 0 (L depends on θ through the product vU) and the curvature is −4‖Λ²‖²_F < 0 "
               "along (1, Λ²), +4‖Λ²‖²_F > 0 along (1, −Λ²)", "indefinite Hessian at a stationary point")
        Dd, w, t = sp.symbols("D w_init t", positive=True)
        c = popm.c_coefficient(lam, Dd * lam, N)
        r = 2 * lam**2 * sp.sqrt(Dd)
        sg, a, b = sp.symbols("sigma a b", positive=True)
        Lsig = Dd * lam - 2 * Dd * lam**2 * sg + Dd * lam**3 * c * sg**2
        d.define("L(σ)", Lsig, "plain-MSE population loss at M = σI, Λ = λI (c = c(λ, Dλ, N))")
        same = {l: lam for l in pop.lams}
        d.step(f"L(σI) from L(M) with Λ = λI (D = {DSYM})", pop.at(pop.loss, sg * sp.eye(DSYM)).xreplace(same),
               Lsig.subs(Dd, DSYM), "substitute M = σI and λ_d = λ into the general L(M)")
        Lhalf = (Lsig / 2).xreplace({sg: a * b / sp.sqrt(Dd)})
        adot, bdot = -sp.diff(Lhalf, a), -sp.diff(Lhalf, b)
        d.step("balance a² − b² is conserved",
               2 * a * -sp.Derivative(Lhalf, a) - 2 * b * -sp.Derivative(Lhalf, b), 0,
               "d/dt(a² − b²) = 2aȧ − 2bḃ with τȧ = −∂L_1/2/∂a, τḃ = −∂L_1/2/∂b: aligned two-layer "
               "network W₁ = a·r vec(I)ᵀ/√D, w₂ = b·r (‖r‖ = 1), σ = ab/√D")
        sdot = ((adot * b + a * bdot) / sp.sqrt(Dd)).xreplace({b: a})
        d.step("τσ̇ = 2λ²√D σ(1 − λcσ)", sdot,
               (2 * lam**2 * sp.sqrt(Dd) * sg * (1 - lam * c * sg)).xreplace({sg: a**2 / sp.sqrt(Dd)}),
               "chain rule σ̇ = (ȧb + aḃ)/√D on the balanced manifold a = b")
        sigma = sp.exp(r * t) / (lam * c * (sp.exp(r * t) - 1) + sp.sqrt(Dd) / w**2)
        d.define("σ(t)", sigma, "the closed form (logistic), rate r = 2λ²√D")
        d.step("σ(t) solves the ODE", sp.diff(sigma, t), r * sigma * (1 - lam * c * sigma),
               "differentiate the closed form")
        d.step("σ(0) = w²/√D", sp.Subs(sigma, t, 0), w**2 / sp.sqrt(Dd),
               "substitute t = 0: the aligned balanced init a = b = w")
        sig_inf = sp.limit(sigma, t, sp.oo)
        d.step("σ(∞) = 1/(λc)", sig_inf, 1 / (lam * c), "limit t → ∞")
        t_half = sp.log(sp.sqrt(Dd) / (lam * c * w**2) - 1) / r
        d.step("σ(t_half) = σ(∞)/2", sigma.subs(t, t_half), sig_inf / 2, "solve σ(t) = σ(∞)/2")
        d.step("L(σ(∞)) = Dλ(1 − 1/c)", Lsig.subs(sg, sig_inf), Dd * lam * (1 - 1 / c), "the final loss L*")
        d.say("Note: solving σ(t) = σ(∞)/2 exactly gives ln(√D/(λ c w²) − 1)/(2λ²√D); the "
              "approximate form τ/(2√D) ln(1 + √D/(c w²)) differs from it by O(w²) (neither is in "
              "the paper, which gives σ(t) only).")
        self.symbols = (Dd, N, lam, w)
        self.terms = {"sigma_inf": sig_inf, "t_half": t_half, "rate": r, "sigma_0": w**2 / sp.sqrt(Dd),
                      "loss_initial": Lsig.subs(sg, 0), "loss_final": Lsig.subs(sg, sig_inf), "c": c}
        self.derivation = d


class SeparateDynamics:
    r"""ATTN_S: the flow equations of $M=\sum_iv_iK_i^\top Q_i$ by explicit differentiation
    (one head of rank 2 on the three symbolic directions), and the two roots of each direction's
    balanced flow."""

    def __init__(self, pop: Population) -> None:
        d = Derivation("ATTN_S flow equations and the per-direction fixed points")
        R = 2
        v = sp.Symbol("v", real=True)
        K = sp.Matrix(R, DSYM, lambda i, j: sp.Symbol(f"k_{i}{j}", real=True))
        Q = sp.Matrix(R, DSYM, lambda i, j: sp.Symbol(f"q_{i}{j}", real=True))
        Mth = v * K.T * Q
        L = pop.at(pop.loss, Mth)
        E = (pop.Lam**2 - pop.B * pop.M * pop.Lam)
        Eth = pop.at(E, Mth)
        d.define("E", E, "−½ ∂L/∂M = Λ² − E[ββᵀ] M Λ (the residual)")
        d.say(f"One head of rank {R} (two key/query pairs sharing a value v) on {DSYM} symbolic "
              "directions: heads enter M additively and so do the pairs of a head, so the chain "
              "rule below is the same for every head and rank.")
        d.step("τv̇ = −½ ∂L/∂v = ⟨E, KᵀQ⟩", -sp.diff(L, v) / 2, (Eth.T * K.T * Q).trace(),
               "chain rule through M = v KᵀQ")
        d.step("τK̇ = −½ ∂L/∂K = v Q Eᵀ", sp.Matrix(R, DSYM, lambda i, j: -sp.diff(L, K[i, j]) / 2),
               v * Q * Eth.T, "chain rule")
        d.step("τQ̇ = −½ ∂L/∂Q = v K E", sp.Matrix(R, DSYM, lambda i, j: -sp.diff(L, Q[i, j]) / 2),
               v * K * Eth, "chain rule")
        x, cc = sp.Symbol("v", positive=True), sp.Symbol("c", positive=True)
        rhs = lam**2 * x**2 - lam**3 * cc * x**5
        d.step("per-direction balanced flow τv̇ = λ²v² − λ³cv⁵", sp.factor(rhs),
               lam**2 * x**2 * (1 - lam * cc * x**3), "v = ‖k‖ = ‖q‖ along one direction")
        roots = sp.solve(rhs, x)
        d.fact("two fixed points per direction",
               len(roots) == 1 and sp.simplify(roots[0] - (lam * cc) ** sp.Rational(-1, 3)) == 0
               and sp.factor(rhs).subs(x, 0) == 0,
               f"besides v = 0 the only positive root is {sp.sstr(roots)} = (λc)^(-1/3): a direction is "
               "either unlearned or learned, 2^D combinations", "sympy.solve over the positive reals")
        self.derivation = d


class ScalarOde:
    r"""One head on a plateau: $\tau\dot v=\lambda^2v^2-\lambda^3cv^5$, its fixed point, the loss
    drop, the stability curvature there, and the closed-form escape time."""

    def __init__(self, pop: Population) -> None:
        d = Derivation("scalar plateau ODE of ATTN_S and its closed-form integral")
        d.say("Λ holds the direction e being learned (eigenvalue λ) and the rest of the spectrum; "
              "only tr Λ enters, through c. One head (v, k = κe, q = ρe) on top of the learned "
              "directions; its output is vκρ·(eᵀβ)(eᵀx_q).")
        m = sp.Symbol("m", real=True)
        l1 = pop.lams[0]
        d.step("L(m e eᵀ) = tr Λ − 2λ²m + λ³c m²", pop.at(pop.loss, sp.diag(m, *[0] * (DSYM - 1))),
               pop.tr - 2 * l1**2 * m + l1**3 * pop.c[0] * m**2,
               "the population loss restricted to the learned direction e = e_1")
        vv, ka, rh = sp.symbols("v kappa rho", real=True)
        c, u, b, v0, s = sp.symbols("c u b v_0 s", positive=True)
        L = sp.Symbol("L_0") - 2 * lam**2 * vv * ka * rh + lam**3 * c * (vv * ka * rh) ** 2
        dv, dk = (-sp.diff(L, x) / 2 for x in (vv, ka))
        d.step("balance v² − κ² is conserved", 2 * vv * dv - 2 * ka * dk, 0, "d/dt(v²) = d/dt(κ²) = d/dt(ρ²)")
        rhs = lam**2 * vv**2 - lam**3 * c * vv**5
        d.step("τv̇ on the balanced manifold", sp.Subs(-sp.Derivative(L, vv) / 2, (ka, rh), (vv, vv)), rhs,
               "substitute κ = ρ = v into −½∂L/∂v")
        v_star = (lam * c) ** sp.Rational(-1, 3)
        d.step("v* = (λc)^(-1/3) is a fixed point", sp.Subs(rhs, vv, v_star), 0,
               "substitute v = v*: λ²v*²(1 − λcv*³) = 0")
        at = (vv, ka, rh)
        drop = sp.Subs(L, at, (0, 0, 0)) - sp.Subs(L, at, (v_star,) * 3)
        d.step("loss drop λ/c", drop, lam / c, "L(0) − L(v*) = 2λ²/(λc) − λ³c/(λc)²")
        kappa = sp.Subs(sp.Derivative(L.subs({vv: s, ka: s, rh: s}) / 2, (s, 2)), s, v_star)
        d.step("curvature of L_1/2 along the balanced direction at v*", kappa,
               9 * lam ** sp.Rational(5, 3) * c ** sp.Rational(-1, 3),
               "d²/ds² L_1/2(s, s, s) at s = v*: GD on it is stable for η < 2/κ")
        Gu = G_closed_form(u)
        d.define("G(u)", Gu, "closed-form integral (derived here)")
        d.step("G'(u) = 1/(u²(1 − u³))", sp.diff(Gu, u), 1 / (u**2 * (1 - u**3)), "differentiate G")
        udot = b ** sp.Rational(1, 3) * sp.Subs(rhs, (vv, c), (u / b ** sp.Rational(1, 3), b / lam))
        d.step("τu̇ = λ² b^(−1/3) u²(1 − u³) with u = b^(1/3)v, b = λc", udot,
               lam**2 * b ** sp.Rational(-1, 3) * u**2 * (1 - u**3),
               "change of variable: τu̇ = b^(1/3) τv̇ at v = u b^(−1/3), c = b/λ")
        d.step("dt/du = τ b^(1/3) G'(u)/λ²", b ** sp.Rational(1, 3) / lam**2 * sp.diff(Gu, u),
               1 / (lam**2 * b ** sp.Rational(-1, 3) * u**2 * (1 - u**3)),
               "so t − t₀ = τ b^(1/3)[G(u) − G(u₀)]/λ²")
        u0, u1 = sp.symbols("u_0 u_1", positive=True)
        transit = (lam * c) ** sp.Rational(1, 3) / lam**2 * (Gu.subs(u, u1) - Gu.subs(u, u0))
        d.define("transit(u₀ → u₁)", transit, "time for u to go from u₀ to u₁")
        offset = sp.limit(Gu + 1 / u, u, 0, "+")
        d.step("lim_{u→0} G(u) + 1/u = −π/(6√3)", sp.Limit(sp.UnevaluatedExpr(Gu) + 1 / u, u, 0, "+"),
               -sp.pi / (6 * sp.sqrt(3)),
               "G's only singular term at 0 is −1/u (the others are continuous there): so the escape time is "
               "τ/(λ²v₀) + τ b^(1/3)[G(½) + π/(6√3)]/λ² + o(1) as v₀ → 0")
        self.terms = {"c": popm.c_coefficient(lam, T, N), "v_star": v_star, "drop": lam / c,
                      "kappa": 9 * lam ** sp.Rational(5, 3) * c ** sp.Rational(-1, 3),
                      "transit": transit, "naive": 1 / (lam**2 * v0),
                      "offset": (lam * c) ** sp.Rational(1, 3) / lam**2
                      * sp.Abs(Gu.subs(u, sp.Rational(1, 2)) - offset)}
        self.symbols = {"lam": lam, "c": c, "u0": u0, "u1": u1, "v0": v0, "T": T, "N": N}
        self.derivation = d


class InitScale:
    r"""Initialisation-scale laws: ATTN_M escapes at rate $\lVert\Lambda^2\rVert_F$ (so its plateau
    grows like $\ln(1/w)/\lVert\Lambda^2\rVert_F$), ATTN_S's small-weight flow is homogeneous of
    degree 2 (so its plateau grows like $1/w$)."""

    def __init__(self, pop: Population) -> None:
        d = Derivation("plateau length against the initialisation scale")
        Dm = 2
        l = pop.lams[:Dm]
        L2 = sp.diag(*[x**2 for x in l])
        v = sp.Symbol("v", real=True)
        U = sp.Matrix(Dm, Dm, lambda i, j: sp.Symbol(f"U_{i}{j}", real=True))
        state = [v] + list(U)
        lin = [(L2.T * U).trace()] + list(v * L2)
        A = sp.Matrix([[sp.diff(f, x) for x in state] for f in lin])
        xs = sp.Symbol("x")
        g2 = sum(x**4 for x in l)
        d.say(f"Near θ = 0 the residual E = Λ² − E[ββᵀ]MΛ is Λ² to first order, so an ATTN_M head "
              f"(v, U) follows τv̇ = ⟨Λ², U⟩, τU̇ = vΛ² (shown at D = {Dm}).")
        d.step("characteristic polynomial of the linearised ATTN_M flow", A.charpoly(xs).as_expr(),
               xs ** (Dm * Dm - 1) * (xs**2 - g2), "eigenvalues ±‖Λ²‖_F and 0")
        w, K0, g = sp.symbols("w K_0 g", positive=True)
        T_m = (sp.log(K0) - sp.log(w)) / g
        d.step("dT/d ln(1/w) = 1/‖Λ²‖_F", -w * sp.Derivative(T_m, w), 1 / g,
               "the product grows like w²e^{2gt}: it reaches a fixed size at T = (ln K₀ − ln w)/g")
        a = sp.Symbol("a", positive=True)
        k = sp.Matrix(Dm, 1, lambda i, j: sp.Symbol(f"k_{i}", real=True))
        q = sp.Matrix(Dm, 1, lambda i, j: sp.Symbol(f"q_{i}", real=True))
        F = sp.Matrix([(k.T * L2 * q)[0]] + list(v * L2 * q) + list(v * L2 * k))
        Fa = F.xreplace({x: a * x for x in [v] + list(k) + list(q)})
        d.step("ATTN_S small-weight flow is homogeneous of degree 2", Fa, a**2 * F,
               "F(aθ) = a²F(θ): scaling the init by a scales the plateau's time by 1/a, so "
               "d ln T/d ln w = −1 up to the scale-free escape (the offset of linattn.separate.scalar-ode)")
        degree = sp.Poly(F[0], v, *k, *q).homogeneous_order()
        p, T0 = sp.Symbol("p", integer=True), sp.Symbol("T_0", positive=True)
        d.step("T ∝ w^(1 − degree): d ln T/d ln w",
               sp.Subs(w * sp.Derivative(sp.log(T0 * w ** (1 - p)), w), p, degree), -1,
               "a flow homogeneous of degree p runs (1/a)^(p−1) times faster from a·θ₀, so T = T₀w^(1−p); "
               "p is the flow's homogeneous order")
        self.terms = {"g_sq": lam**4, "attn_s_slope": sp.Integer(1 - degree)}
        self.derivation = d
