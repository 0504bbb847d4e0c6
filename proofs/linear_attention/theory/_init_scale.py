r"""The large-initialisation regime of ATTN_S, derived once (SymPy, every step verified).

One head per eigen-direction, balanced and aligned ($v=\lVert k\rVert=\lVert q\rVert=v_0$,
$k,q\parallel e_d$): each direction follows the scalar plateau ODE
$\tau\dot u=\lambda^2b^{-1/3}u^2(1-u^3)$, $u=b^{1/3}v$, $b=\lambda c$, and its share of the loss
above the minimum is $\ell=(\lambda/c)(1-u^3)^2$.

* **No plateau above $u_c=(2/5)^{1/3}$.**  $|\dot\ell|\propto u^4(1-u^3)^2$ is unimodal on
  $(0,1)$ with its maximum at $u^3=2/5$, and $u$ moves monotonically towards 1.  From
  $u_0<u_c$ the rate of decrease first *grows* (an accelerating escape from the saddle: a
  plateau followed by a sigmoidal drop); from $u_0\ge u_c$ it is largest at $t=0$ and falls
  monotonically (the loss is convex in $t$: no plateau).  In weight units
  $v_c=(2/(5\lambda c))^{1/3}$; with one head per direction and a common $v_0$ the loss has no
  plateau in any direction iff $v_0\ge\max_dv_{c,d}$ (the smallest eigenvalue's).
* **Exponential decay rate.**  Near $u=1$, $\delta=1-u$ obeys $\tau\dot\delta=-3\lambda^2b^{-1/3}
  \delta+O(\delta^2)$, so $\ell\simeq9(\lambda/c)\delta^2$ decays as $e^{-\rho t/\tau}$ with
  $\rho=6\lambda^{5/3}c^{-1/3}$; the whole loss gap decays at the slowest direction's rate
  $\min_d\rho_d$.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from icltheory.core import Derivation, derived
from icltheory.symbolic import lowered

from . import _population as popm

__all__ = ["LazyRegime", "lazy_regime", "lazy_constants", "U_CRIT_CUBED"]

#: the root u_c³ of d|ℓ̇|/du (a planted error replaces it; the derivation checks the true one)
U_CRIT_CUBED = sp.Rational(2, 5)


class LazyRegime:
    """The no-plateau threshold and the exponential decay rate (see the module docstring)."""

    def __init__(self) -> None:
        d = Derivation("ATTN_S from a large balanced init: no plateau above v_c, exponential decay at ρ")
        lam, c, b = sp.symbols("lambda c b", positive=True)
        u, dl = sp.symbols("u delta", positive=True)
        # the scalar ODE's weight, as the dynamics section declares it: one symbol "v" per set of
        # assumptions would not survive the disk cache (unpickled, both become the first one)
        v = sp.Symbol("v", real=True)
        m = sp.Symbol("m", real=True)
        Lm = sp.Symbol("L_0") - 2 * lam**2 * m + lam**3 * c * m**2
        Lstar = Lm.subs(m, 1 / (lam * c))
        ell = sp.factor(sp.expand((Lm - Lstar).subs(m, u**3 / (lam * c))))
        ell_closed = lam / c * (1 - u**3) ** 2
        d.step("ℓ = L(m e eᵀ) − L(m* e eᵀ) = (λ/c)(1 − u³)², m = u³/(λc)", ell, ell_closed,
               "the loss restricted to the direction (L₀ = tr Λ), m = v³ on the balanced ansatz, u = (λc)^(1/3) v")
        rhs_v = lam**2 * v**2 - lam**3 * c * v**5
        udot = lam**2 * b ** sp.Rational(-1, 3) * u**2 * (1 - u**3)
        d.step("τu̇ = λ² b^(−1/3) u²(1 − u³)",
               b ** sp.Rational(1, 3) * sp.Subs(rhs_v, (v, c), (u / b ** sp.Rational(1, 3), b / lam)), udot,
               "the scalar plateau ODE τv̇ = λ²v² − λ³cv⁵ in u = b^(1/3)v, b = λc: "
               "τu̇ = b^(1/3) τv̇ at v = u b^(−1/3), c = b/λ")
        d.step("|ℓ̇| = 6λ³ b^(−1/3)/c · u⁴(1 − u³)²", -sp.Derivative(ell_closed, u) * udot,
               6 * lam**3 * b ** sp.Rational(-1, 3) / c * u**4 * (1 - u**3) ** 2,
               "chain rule ℓ̇ = ℓ'(u) u̇ (ℓ decreases: u moves towards 1 from either side)")
        f = u**4 * (1 - u**3) ** 2
        fp = sp.factor(sp.diff(f, u))
        d.step("d/du [u⁴(1 − u³)²] = 2u³(1 − u³)(2 − 5u³)", fp, 2 * u**3 * (1 - u**3) * (2 - 5 * u**3),
               "differentiate")
        roots = sp.solve(sp.Eq(2 - 5 * u**3, 0), u)
        d.fact("the only critical point of |ℓ̇| in (0, 1) is u_c = (2/5)^(1/3)",
               len(roots) == 1 and sp.simplify(roots[0] ** 3 - sp.Rational(2, 5)) == 0,
               f"sympy.solve: {sp.sstr(roots)}; the factor 2u³(1 − u³) has no root in (0, 1)",
               "the remaining factor 2 − 5u³ is positive below u_c and negative above it")
        d.say("So |ℓ̇| increases while u < u_c and decreases for u_c < u < 1; for u > 1 the factor "
              "(1 − u³)(2 − 5u³) is positive while u decreases towards 1, so |ℓ̇| decreases too. "
              "From u₀ < u_c the escape accelerates (a plateau, then a sigmoidal drop); from "
              "u₀ ≥ u_c the rate of decrease is largest at t = 0 (no plateau).")
        uc3 = U_CRIT_CUBED
        v_c = (uc3 / (lam * c)) ** sp.Rational(1, 3)
        u_c = sp.UnevaluatedExpr(uc3) ** sp.Rational(1, 3)
        d.step("v_c = u_c (λc)^(−1/3) = (2/(5λc))^(1/3)", sp.Subs(u * (lam * c) ** sp.Rational(-1, 3), u, u_c),
               (sp.Rational(2, 5) / (lam * c)) ** sp.Rational(1, 3),
               "back to weight units v = u/(λc)^(1/3) at u = u_c")
        ddot = -udot.subs(u, 1 - dl)
        lin = sp.diff(ddot, dl).subs(dl, 0)
        d.step("τδ̇ = −3λ² b^(−1/3) δ + O(δ²) near u = 1 (δ = 1 − u)",
               sp.Subs(sp.Derivative(ddot, dl), dl, 0), -3 * lam**2 * b ** sp.Rational(-1, 3),
               "linearise the u-equation at its fixed point: τδ̇ = −τu̇ at u = 1 − δ, differentiated at "
               "δ = 0")
        ell_d = ell_closed.subs(u, 1 - dl)
        d.step("ℓ = 9(λ/c) δ² + O(δ³)", sp.Subs(sp.Derivative(ell_d, (dl, 2)), dl, 0) / 2, 9 * lam / c,
               "Taylor expansion of (λ/c)(1 − (1 − δ)³)²: half the second derivative at δ = 0 (ℓ and ℓ' "
               "vanish there)")
        t, d0 = sp.symbols("t delta_0", positive=True)
        d.step("ρ = 6λ^(5/3) c^(−1/3): ℓ ∝ e^(−ρt/τ)",
               sp.Subs(-sp.Derivative(sp.log(9 * lam / c * (d0 * sp.exp(lin * t)) ** 2), t), b, lam * c),
               6 * lam ** sp.Rational(5, 3) * c ** sp.Rational(-1, 3),
               "ρ = −d ln ℓ/dt with ℓ ≃ 9(λ/c)δ² and δ = δ₀e^(−3λ²b^(−1/3)t) (time in units of τ), "
               "at b = λc: twice δ's rate")
        d.say("With one head per direction (balanced, aligned, common v₀) the directions evolve "
              "independently (the population loss is a sum over eigen-directions on diagonal M), "
              "so the loss has no plateau iff v₀ ≥ max_d v_c,d, and its gap above L* decays at "
              "the slowest rate min_d ρ_d = ρ at the smallest eigenvalue.")
        self.symbols = {"lam": lam, "c": c}
        self.terms = {"v_c": v_c, "rho": 6 * lam ** sp.Rational(5, 3) * c ** sp.Rational(-1, 3),
                      "u_c": uc3 ** sp.Rational(1, 3)}
        self.derivation = d
        self._fns = {k: lowered((lam, c), e, "numpy") for k, e in self.terms.items()}

    def thresholds(self, lambdas, N: int) -> np.ndarray:
        """v_c,d per eigen-direction (balanced weight units)."""
        lam_ = np.asarray(lambdas, float)
        c = np.asarray(popm.c_coefficient(lam_, float(lam_.sum()), float(N)), float)
        return np.broadcast_to(np.asarray(self._fns["v_c"](lam_, c), float), lam_.shape).copy()

    def rates(self, lambdas, N: int) -> np.ndarray:
        """ρ_d per eigen-direction (per τ)."""
        lam_ = np.asarray(lambdas, float)
        c = np.asarray(popm.c_coefficient(lam_, float(lam_.sum()), float(N)), float)
        return np.broadcast_to(np.asarray(self._fns["rho"](lam_, c), float), lam_.shape).copy()


@derived
def lazy_regime() -> LazyRegime:
    """The derivation object (memoised)."""
    return LazyRegime()


def lazy_constants(lambdas, N: int) -> dict:
    """The lazy-regime predictions: per-direction thresholds and rates, the loss's threshold
    (largest v_c,d) and its asymptotic decay rate (smallest ρ_d)."""
    k = lazy_regime()
    vc, rho = k.thresholds(lambdas, N), k.rates(lambdas, N)
    return {"lazy_thresholds": [float(x) for x in vc], "lazy_threshold": float(vc.max()),
            "lazy_rates": [float(x) for x in rho], "lazy_rate": float(rho.min())}
