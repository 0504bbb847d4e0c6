r"""The theory of softmax regression in the tensor-trick form, derived once in SymPy.

:func:`theory` builds **one** :class:`SoftmaxTheory`: every constant of every claim is a named
SymPy term in the symbols $a=\lVert A\rVert_2$, $r$ (the radius of $x$), $n$, with
$\beta=ar$ and $E=e^\beta$, composed from a few primitive facts (:func:`softmax_jacobian_bound`,
:func:`residual_bound`, :func:`mean_value_factor`), and every step of the composition is
verified in a :class:`~icltheory.core.Derivation`.  Numbers are lowered from these terms in arb
(:meth:`SoftmaxTheory.ball`, exact at the float value of $R$): the only source of predicted
constants and of proved bounds (``softmaxreg.candidate`` certifies against the same term).

Size-dependent derivations (the tensor trick and the gradient at the setting's $n, d$, capped)
are :func:`tensor_trick` and :func:`gradient_theory`; the latter also lowers the derived
closed-form gradient to numpy (:meth:`GradientTheory.gradient`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from icltheory.bounds import arb_eval
from icltheory.core import Derivation, cached, derived, verify_identity
from icltheory.symbolic import lambdify_modules

from . import _symbolic as sym

__all__ = ["SoftmaxTheory", "theory", "tensor_trick", "gradient_theory", "GradientTheory",
           "softmax_jacobian_bound", "residual_bound", "mean_value_factor", "ASSUMPTIONS_TEXT",
           "hessian_norm_constant"]

a, r, n = sp.symbols("a r n", positive=True)

ASSUMPTIONS_TEXT = (
    "Assumptions: ‖A1⊗A2‖₂ = ‖A1‖₂‖A2‖₂ ≤ R; ‖x‖₂ = ‖X‖_F ≤ R and ‖y‖₂ ≤ R; every row of B has "
    "ℓ2 norm ≤ 1; logits are then bounded by β = R²."
)


# --------------------------------------------------------------------------- primitive facts


def softmax_jacobian_bound() -> sp.Expr:
    """‖diag f − f fᵀ‖₂ ≤ 1/2 (Popoviciu: vᵀSv = Var_f(v) ≤ (max v − min v)²/4 ≤ ½)."""
    return sp.Rational(1, 2)


def residual_bound() -> sp.Expr:
    """‖c‖₂, ‖c‖∞ ≤ 2 and |⟨f, c⟩| ≤ 2 for c = f − b, ‖f‖ ≤ 1, ‖b‖₂ ≤ 1."""
    return sp.Integer(2)


def mean_value_factor(beta: sp.Expr) -> sp.Expr:
    """|e^s − e^t| ≤ e^β|s − t| for |s|, |t| ≤ β (mean value theorem)."""
    return sp.exp(beta)


# --------------------------------------------------------------------------- the derivation


@dataclass(frozen=True)
class SoftmaxTheory:
    """Named terms (SymPy, in a, r, n) and the derivation that verifies them."""

    terms: dict[str, sp.Expr]
    derivation: Derivation
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def ball(self, name: str, n_value: int, R: float, *, a_value: float | None = None):
        """The term as an arb ball at a = r = R (or a = ``a_value``), n = ``n_value``; R is
        its exact float value."""
        import flint

        av = float(R if a_value is None else a_value)
        old = flint.ctx.prec
        try:
            flint.ctx.prec = 212
            return arb_eval(self.terms[name], {a: av, r: float(R), n: int(n_value)})
        finally:
            flint.ctx.prec = old

    def value(self, name: str, n_value: int, R: float) -> float:
        """The term as a float (the midpoint of its ball)."""
        return float(self.ball(name, n_value, R).mid())

    def upper(self, name: str, n_value: int, R: float) -> float:
        """The smallest float ≥ the term (certified: the ball's upper end rounded up)."""
        return _round(self.ball(name, n_value, R).upper(), up=True)

    def lower(self, name: str, n_value: int, R: float) -> float:
        """The largest float ≤ the term (certified)."""
        return _round(self.ball(name, n_value, R).lower(), up=False)

    def values(self, group: str, n_value: int, R: float) -> dict[str, float]:
        """Upper-bound terms of a group as floats rounded up (a valid bound as a float)."""
        return {k: self.upper(k, n_value, R) for k in self.groups[group]}


def _round(x, *, up: bool) -> float:
    """The exact arb point ``x`` rounded to a float in the given direction."""
    import flint

    f = float(x)
    if up and flint.arb(f) < x:
        f = float(np.nextafter(f, np.inf))
    if not up and flint.arb(f) > x:
        f = float(np.nextafter(f, -np.inf))
    return f


#: named lemma constants: the steps below show each constant as a formula in the earlier ones
#: with their values put in (unevaluated ``Subs``), verified after the substitution
_C1, _C3, _C4, _C5, _C7, _E, _AMIN, _KAPPA = sp.symbols("C_1 C_3 C_4 C_5 C_7 E alpha_min kappa",
                                                        positive=True)
#: the norms in the product rule's bound on g = f∘c − f⟨f,c⟩: ‖c‖∞, ‖f‖∞, |⟨f,c⟩|, ‖f‖₂, ‖c‖₂
_G_NORMS = tuple(sp.Symbol(name, nonnegative=True) for name in (
    r"\|c\|_\infty", r"\|f\|_\infty", r"|\langle f, c\rangle|", r"\|f\|", r"\|c\|"))
_G_FACTOR = _G_NORMS[0] + _G_NORMS[1] + _G_NORMS[2] + _G_NORMS[3] * (_G_NORMS[4] + _G_NORMS[3])


def _at(formula: sp.Expr, values: dict) -> sp.Subs:
    """``formula`` with ``values`` put in, unevaluated (a step shows both; ``doit`` carries it
    out)."""
    return sp.Subs(formula, tuple(values), tuple(values.values()))


def _normalized_chain(d: Derivation, t: dict) -> None:
    beta = a * r
    E = mean_value_factor(beta)
    s, c = softmax_jacobian_bound(), residual_bound()
    t["logit_bound"] = d.define("C0", beta, "‖A_j x‖∞ ≤ ‖Ax‖₂ ≤ a r = β")
    t["u_lipschitz"] = C1 = d.define("C1", a * E, "‖Δu‖ ≤ E‖AΔx‖ (mean value, |z| ≤ β)")
    t["alpha_lower"] = amin = d.define("alpha_min", n / E, "α_j ≥ n e^{-β}")
    t["alpha_upper"] = d.define("alpha_max", n * E, "α_j ≤ n e^{β}")
    t["alpha_lipschitz"] = C3 = d.define("C3", sp.sqrt(n) * C1, "|Δα| ≤ √n‖Δu‖")
    form = _at(_C3 / _AMIN ** 2, {_C3: C3, _AMIN: amin})
    C4 = form.doit()
    d.step("C4 = C3/α_min²", form, a * sp.exp(3 * a * r) / n ** sp.Rational(3, 2),
           "Δ(1/α) = −Δα/(α(x)α(y))")
    t["inv_alpha_lipschitz"] = C4
    form = _at(_C1 / _AMIN + _C4 * sp.sqrt(n) * _E, {_C1: C1, _AMIN: amin, _C4: C4, _E: E})
    C5 = form.doit()
    d.step("C5 = C1/α_min + C4·‖u‖₂ (‖u‖₂ ≤ √n E)", form,
           a * (sp.exp(2 * a * r) + sp.exp(4 * a * r)) / n, "Δf = Δu/α(x) + Δ(1/α)·u(y)")
    t["normalized_shift_factor_chain"] = C5
    C5b = 2 * a * E ** 4 / n
    tt = sp.Symbol("t", nonnegative=True)  # E² = 1 + t (E = e^β ≥ 1)
    slack = sp.expand(sp.powsimp(sp.expand(C5b - C5)).subs({E ** 4: (1 + tt) ** 2, E ** 2: 1 + tt}))
    d.fact("C5 ≤ 2aE⁴/n", not slack.has(sp.exp) and bool(slack.free_symbols <= {a, n, tt})
           and all(co.is_nonnegative for co in sp.Poly(slack, tt).coeffs()),
           "2aE⁴/n − C5 = a(E⁴ − E²)/n: with E² = 1+t it is a(t² + t)/n, coefficients ≥ 0",
           "exact polynomial check of the derived C5")
    t["f_lipschitz"] = C5b
    t["f_lipschitz_sharp"] = d.define("C5s", a * s, "‖ΔF‖_F ≤ s‖AΔx‖ ≤ s·a‖Δx‖: the mean value "
                                      "inequality with the softmax Jacobians' norm ≤ s (proved "
                                      "below for every n)")
    t["softmax_jacobian_norm"] = s
    t["residual_bound"] = c
    form = _at(_G_FACTOR, dict(zip(_G_NORMS, (c, 1, c, 1, c))))
    C7 = d.define("C7", form.doit(),
                  "‖c‖∞ + ‖f‖∞ + |⟨f,c⟩| + ‖f‖(‖c‖ + ‖f‖) with ‖c‖ ≤ 2, ‖f‖ ≤ 1")
    d.step("C7 = 8", form, sp.Integer(8),
           "product rule on g = f∘c − f⟨f,c⟩: its bound at ‖c‖∞, |⟨f,c⟩|, ‖c‖ ≤ 2 (the residual "
           "bound) and ‖f‖∞, ‖f‖ ≤ 1")
    t["g_factor"] = C7
    form = _at(a * _C7 * _C5, {_C7: C7, _C5: C5b})
    chain = d.define("lemma_chain", form.doit(), "‖Aᵀ‖ · C7 · C5")
    d.step("lemma chain = 16a²E⁴/n", form, 16 * a ** 2 * sp.exp(4 * a * r) / n,
           "∇L = Aᵀ g_stack: ‖Aᵀ‖ · C7 · C5 with C5 ≤ 2aE⁴/n")
    t["lemma_chain"] = chain
    C5p = _at(sp.sqrt(n) * _C1 * _E + (sp.sqrt(n) * sp.sqrt(n) * _C1 * _E ** 2) * sp.sqrt(n) * _E,
              {_C1: C1, _E: E})
    d.step("reconstructed paper-style C5 (√n in C1, α ≥ e^{-β})", C5p,
           sp.sqrt(n) * a * sp.exp(2 * a * r) + n ** sp.Rational(3, 2) * a * sp.exp(4 * a * r),
           "weaker per-step bounds, in the paper's lemma style (our reconstruction)")
    form = _at(a * _C7 * 2 * n ** sp.Rational(3, 2) * a * _E ** 4, {_C7: C7, _E: E})
    paper = d.define("paper_form", form.doit(),
                     "‖Aᵀ‖ · C7 · 2n^{3/2}aE⁴ = exp(O(R² + log n)) (our reconstruction)")
    d.step("paper form (reconstruction)", form,
           16 * n ** sp.Rational(3, 2) * a ** 2 * sp.exp(4 * a * r), "arithmetic")
    t["paper_form"] = paper
    H, Hs, _ = sym.normalized_logit_hessian_terms(3)
    st, tier, det = verify_identity(H, Hs)
    d.fact("logit Hessian structure (n=3)", st == "verified",
           "∇²_z ½‖softmax(z) − b‖² = SS + (diag c)S − ⟨f,c⟩S − f cᵀS", det, tier=tier or "exact")
    f = sp.Symbol("f", positive=True)
    d.step("Popoviciu at n=2: ½ − λmax(S) = (2f−1)²/2 ≥ 0", s - 2 * f * (1 - f),
           (2 * f - 1) ** 2 / 2, "S = f(1−f)[[1,−1],[−1,1]] has λmax = 2f(1−f); in general "
           "vᵀSv = Var_f(v) ≤ (max v − min v)²/4 ≤ ½ for unit v")
    _primitive_bounds(d, s, c)
    kappa = _hessian_norm_bound(d, s, c)
    closed_form = _at(a ** 2 * _KAPPA, {_KAPPA: kappa})
    closed = d.define("closed_form", closed_form.doit(),
                      "‖∇²L‖₂ ≤ ‖A‖² max_j ‖∇²_z ℓ_j‖₂ ≤ a²κ (vᵀ∇²Lv = Σ_j (A_jv)ᵀ∇²ℓ_j(A_jv) and "
                      "Σ_j‖A_jv‖² = ‖Av‖² ≤ a²‖v‖²; κ proved above for any logits), so by the "
                      "mean value theorem a Lipschitz constant of ∇L for every x, y")
    d.step("closed-form bound = 13/4 a²", closed_form, sp.Rational(13, 4) * a ** 2,
           "valid for every x, y (mean value theorem on the Hessian bound; no ball needed)")
    t["closed_form"] = closed
    gd = d.define("gd_shift_factor", a ** 2 * s ** 2,
                  "‖B̃ − B‖ ≤ ‖S‖a‖ΔX‖ and ‖ΔX‖ = η‖∇L‖ ≤ η a‖S‖‖F − B‖")
    t["gd_shift_factor"] = gd
    t["normalized_shift_factor"] = t["f_lipschitz_sharp"]
    t["data_shift_factor"] = d.define(
        "data move", r * s, "‖F(A') − F(A)‖_F ≤ s‖ΔM‖_F: the mean value inequality for the "
        "row-wise softmax, whose Jacobian is block-diagonal with blocks S_j of norm ≤ s (proved "
        "above for every n, any logits); and ‖vec ΔM‖ = ‖(A' − A)x‖ ≤ ‖A' − A‖₂ r (the "
        "operator norm), so M = r·s = R/2")


def _primitive_bounds(d: Derivation, s: sp.Expr, c: sp.Expr) -> None:
    """The premises of the closed forms, for every n: ‖S‖₂ ≤ s (Gershgorin) and ‖c‖₂ ≤ c."""
    f = sp.Symbol("f_i", nonnegative=True)  # one entry of softmax(z); the others sum to 1 − f_i
    others = sp.Symbol(r"\sum_{j \neq i} f_j", nonnegative=True)
    d.step("Gershgorin row i of S = diag f − ffᵀ: |f_i − f_i²| + Σ_{j≠i} f_i f_j",
           _at((f - f ** 2) + f * others, {others: 1 - f}), 2 * f * (1 - f),
           "Σ_{j≠i} f_j = 1 − f_i and every term is ≥ 0 (0 ≤ f_i ≤ 1, so |f_i − f_i²| = "
           "f_i − f_i²)")
    half = sp.Rational(1, 2)
    d.step("s − 2f_i(1 − f_i) = (s − ½) + (2f_i − 1)²/2", s - 2 * f * (1 - f),
           (s - half) + (2 * f - 1) ** 2 / 2, "expand")
    d.fact("‖S‖₂ ≤ s for every n and all logits", bool(s - half >= 0),
           f"S is symmetric, so ‖S‖₂ ≤ its largest row sum of |S_ij| (Gershgorin) = "
           f"max_i 2f_i(1 − f_i) ≤ s, since s − ½ = {s - half} ≥ 0 and (2f_i − 1)² ≥ 0",
           "exact: the sign of s − ½")
    d.fact("‖c‖₂ ≤ c, ‖c‖∞ ≤ c, |⟨f, c⟩| ≤ c for c = f − b", bool(c - 2 >= 0),
           f"‖f − b‖₂ ≤ ‖f‖₂ + ‖b‖₂ ≤ ‖f‖₁ + 1 = 2 (f ≥ 0 sums to 1; ‖b‖₂ ≤ 1 assumed), "
           f"‖c‖∞ ≤ ‖c‖₂ and |⟨f, c⟩| ≤ ‖f‖₂‖c‖₂ (Cauchy–Schwarz), and c − 2 = {c - 2} ≥ 0",
           "exact: the sign of c − 2")


def hessian_norm_constant(s: sp.Expr, c: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """(the norm bound of the logit Hessian as a polynomial in the factors' norms, κ: that
    bound at the proved primitive bounds) — both built from the identity's list of terms
    (:data:`._symbolic.NORMALIZED_HESSIAN_TERMS`)."""
    NS, Nci, Nfc, Nf, Nc = _NORMS
    norms = {"S": NS, "diag c": Nci, "<f,c> I": Nfc, "f c^T": Nf * Nc}
    bound = sp.Integer(0)
    for _, names in sym.NORMALIZED_HESSIAN_TERMS:
        term = sp.Integer(1)
        for name in names:
            term = term * norms[name]
        bound = bound + term
    return bound, bound.subs(dict(zip(_NORMS, _norm_values(s, c))))


_NORMS = sp.symbols("N_S N_c∞ N_fc N_f N_c", nonnegative=True)


def _norm_values(s: sp.Expr, c: sp.Expr) -> tuple:
    """The proved bounds on the norms ``_NORMS``: ‖S‖₂ ≤ s, ‖c‖∞, |⟨f,c⟩| ≤ c, ‖f‖₂ ≤ 1, ‖c‖₂ ≤ c."""
    return (s, c, c, sp.Integer(1), c)


def _hessian_norm_bound(d: Derivation, s: sp.Expr, c: sp.Expr) -> sp.Expr:
    """‖∇²_z ℓ‖₂ ≤ κ for every z and ‖b‖ ≤ 1, step by step; returns κ."""
    bound, kappa = hessian_norm_constant(s, c)
    coeffs = sp.Poly(bound, *_NORMS).coeffs()
    NS, Nci, Nfc, Nf, Nc = _NORMS
    stated = NS**2 + Nci * NS + Nfc * NS + Nf * Nc * NS  # what the fact's name says the terms give
    d.fact("‖∇²_z ℓ‖₂ ≤ N_S² + N_c∞N_S + N_fcN_S + N_fN_cN_S",
           sp.expand(bound - stated) == 0 and all(co >= 0 for co in coeffs),
           "the triangle inequality over the terms of the identity above (the same list of "
           "terms builds both) and ‖AB‖₂ ≤ ‖A‖₂‖B‖₂, with N_S = ‖S‖₂, N_c∞ = ‖diag c‖₂ = ‖c‖∞, "
           "N_fc = ‖⟨f,c⟩I‖₂ = |⟨f,c⟩|, ‖fcᵀ‖₂ = ‖f‖₂‖c‖₂ = N_fN_c; its coefficients are ≥ 0, "
           "so it grows with each norm and the proved bounds may be put in",
           "exact: the signs of the coefficients")
    d.step("κ = that bound at ‖S‖₂ ≤ s, ‖c‖∞, |⟨f,c⟩|, ‖c‖₂ ≤ c, ‖f‖₂ ≤ 1",
           _at(bound, dict(zip(_NORMS, _norm_values(s, c)))), sp.Rational(13, 4),
           "¼ + ½·2 + 2·½ + 1·2·½")
    return kappa


def _rescaled_chain(d: Derivation, t: dict) -> None:
    E = mean_value_factor(a * r)
    rn = sp.sqrt(n)
    t["u_sup"] = d.define("‖u‖∞", E, "|z| ≤ β")
    t["r_lipschitz"] = d.define("Δr", (1 + rn) * a * E, "‖Δr‖ ≤ ‖Δu‖ + |Δα|‖b‖")
    t["r_sup"] = d.define("‖r‖∞", (1 + n) * E, "‖u‖∞ + α‖b‖∞")
    t["r_norm_bound"] = d.define("‖r‖₂", (rn + n) * E, "‖u‖₂ + α‖b‖₂")
    terms = d.define("four product-rule terms",
                     (1 + n) * E * E + E * (1 + rn) * E + E * (rn + n) * E + rn * E * (1 + rn) * E,
                     "‖r‖∞‖Δu‖ + ‖u‖∞‖Δr‖ + ‖Δu‖‖b‖‖r‖ + ‖u‖₂‖b‖‖Δr‖ per unit ‖Δz‖")
    d.step("per-block factor", terms, (3 * n + 3 * rn + 2) * sp.exp(2 * a * r), "collect terms")
    t["rescaled_lemma_chain"] = d.define("rescaled lemma chain", a * a * terms,
                                         "‖Aᵀ‖ · factor · ‖AΔx‖/‖Δx‖")
    got, g = sym.logit_gradient_residual(3, "rescaled")
    d.step("∇_z ℓ_r structure (n=3)", got, g, "diff of ½‖u − αb‖²")
    t["rescaled_shift_factor"] = d.define(
        "rescaled shift", a * E ** 2 * (1 + rn) / n,
        "row j of B̃_r − B is (Δu_j − Δα_j b_j)/α_j(x_t): ≤ (1+√n)E‖AΔx‖/(n e^{-β})")
    t["rescaled_data_shift_factor"] = d.define(
        "rescaled data move", r * E ** 2 * (1 + rn) / n,
        "the same rows with ‖ΔM‖_F ≤ ‖A' − A‖₂ r (both data in the set: logits ≤ β)")


def _shift_identities(d: Derivation) -> None:
    m = 3
    B = sym.instance(m, 1).B
    # entry (j, k) of each residual; α_j (the rescaled loss's row sums) only scales row j
    ft, ft1, b, bt = sp.symbols(r"f_t f_{t+1} b \tilde{b}", real=True)
    d.step("normalized: residuals coincide", _at(ft - bt, {bt: b - (ft1 - ft)}), ft1 - b,
           "definition of B̃ = B − (F(X_{t+1}) − F(X_t)), entry by entry: F(X_t) − B̃ = "
           "F(X_{t+1}) − B")
    ut, ut1, at, at1 = sp.symbols(r"u_t u_{t+1} \alpha_t \alpha_{t+1}", positive=True)
    d.step("rescaled: residuals coincide", _at(ut - at * bt, {bt: (ut - ut1 + at1 * b) / at}),
           ut1 - at1 * b, "definition of B̃_r = D_t⁻¹(U_t − U_{t+1} + D_{t+1}B) (D the diagonal "
           "of row sums α), entry by entry: U_t − D_tB̃_r = U_{t+1} − D_{t+1}B")
    u0 = sp.Matrix(m, m, lambda j, k: sp.Symbol(f"u0_{j}_{k}", positive=True))
    u1 = sp.Matrix(m, m, lambda j, k: sp.Symbol(f"u1_{j}_{k}", positive=True))
    F0 = sp.Matrix(m, m, lambda j, k: u0[j, k] / sum(u0[j, :]))
    F1 = sp.Matrix(m, m, lambda j, k: u1[j, k] / sum(u1[j, :]))
    d.step("row sums of B̃ equal those of B (rows of F sum to 1)",
           (B - (F1 - F0)) * sp.ones(m, 1), B * sp.ones(m, 1), "exact")


_GROUPS = {
    "normalized": ("closed_form", "lemma_chain", "paper_form", "logit_bound", "u_lipschitz",
                   "alpha_lower", "alpha_upper", "alpha_lipschitz", "inv_alpha_lipschitz",
                   "f_lipschitz", "f_lipschitz_sharp", "softmax_jacobian_norm",
                   "residual_bound", "g_factor"),
    "rescaled": ("rescaled_lemma_chain", "logit_bound", "u_lipschitz", "u_sup",
                 "alpha_upper", "alpha_lipschitz", "r_lipschitz", "r_sup", "r_norm_bound"),
    "shift": ("normalized_shift_factor", "normalized_shift_factor_chain",
              "rescaled_shift_factor", "gd_shift_factor"),
    "data": ("data_shift_factor", "rescaled_data_shift_factor"),
}


@derived
def theory() -> SoftmaxTheory:
    """The one derivation of every constant (no setting enters: terms are in a, r, n)."""
    d = Derivation("Lipschitz constants and target shifts of softmax regression")
    d.say(ASSUMPTIONS_TEXT + " Write a = ‖A‖ ≤ R, β = ar, E = e^β ≥ 1. Each lemma holds per "
          "block with A_j (‖A_j‖ ≤ ‖A‖) and stacks without an extra √n because "
          "Σ_j‖A_jΔx‖² = ‖AΔx‖².")
    t: dict[str, sp.Expr] = {}
    _normalized_chain(d, t)
    _rescaled_chain(d, t)
    _shift_identities(d)
    d.say("Shift bounds: ‖B̃ − B‖_F = ‖F(X_{t+1}) − F(X_t)‖_F ≤ ‖S‖‖AΔx‖; for a GD step "
          "‖ΔX‖ = η‖∇L‖ ≤ η a‖S‖‖F − B‖_F. Rescaled: row sums of B̃_r equal those of B only "
          "when B's rows sum to 1: Σ_k (B̃_r)_{jk} = 1 + (α_{t+1}/α_t)(Σ_k b_{jk} − 1).")
    return SoftmaxTheory(t, d, dict(_GROUPS))


# --------------------------------------------------------------------------- tensor trick


@dataclass(frozen=True)
class TensorTrick:
    design_shape: tuple[int, int]
    blocks: int
    derivation: Derivation


def _exact_counterpoint(residual: sp.Matrix, tries: int = 5):
    """(entry index, value) of a non-zero entry at small seeded integers, or None."""
    import random

    rnd = random.Random(0)
    syms = sorted(residual.free_symbols, key=lambda v: v.name)
    for _ in range(tries):
        vals = residual.xreplace({v: sp.Integer(rnd.randint(-5, 5)) for v in syms})
        for i, v in enumerate(vals):
            if v != 0:
                return (i, int(v))
    return None


def tensor_trick(n_value: int, d_value: int) -> TensorTrick:
    """vec_row(A1XA2ᵀ) = (A1⊗A2)vec_row(X) and the loss as n softmax problems, verified (the
    symbolic steps at n ≤ 4, d ≤ 3; the design's shape at the setting's n, d)."""
    A = sp.KroneckerProduct(sp.MatrixSymbol("A_1", n_value, d_value),
                            sp.MatrixSymbol("A_2", n_value, d_value))
    shape = tuple(int(x) for x in A.shape)
    return TensorTrick(shape, shape[0] // n_value,
                       _tensor_trick_derivation(min(n_value, 4), min(d_value, 3), n_value * d_value > 1))


@derived
def _tensor_trick_derivation(n_value: int, d_value: int, pairing: bool) -> Derivation:
    d = Derivation("tensor trick (row-major vec pairs with A1⊗A2)")
    d.define("A", sp.KroneckerProduct(sp.MatrixSymbol("A_1", n_value, d_value),
                                      sp.MatrixSymbol("A_2", n_value, d_value)),
             "the design A1⊗A2")
    nd, dd = min(n_value, 2), min(d_value, 2)
    si = sym.instance(nd, dd)
    M = si.A1 * si.X * si.A2.T
    d.step("TT1 row-major vec", sym.vec_row(M), sym.kron(si.A1, si.A2) * sym.vec_row(si.X),
           "(A1⊗A2)_{(j,k),(p,q)} = A1[j,p]A2[k,q]")
    d.step("TT2 column-major vec", sym.vec_col(M), sym.kron(si.A2, si.A1) * sym.vec_col(si.X),
           "the classical identity vec(PXQ) = (Qᵀ⊗P)vec(X)")
    for j in range(nd):  # the rows of SymPy's Kronecker product against the block formula
        whole = sp.KroneckerProduct(sp.ImmutableMatrix(si.A1), sp.ImmutableMatrix(si.A2))
        d.step(f"TT3 block {j}", whole[j * nd:(j + 1) * nd, :], sym.block(si.A1, si.A2, j),
               "rows jn..(j+1)n−1 of A1⊗A2 are A1[j,:]⊗A2")
    ne, de = min(n_value, 4), min(d_value, 3)
    se = sym.instance(ne, de)
    Me = se.A1 * se.X * se.A2.T
    for name, lhs, rhs in [("TT1", sym.vec_row(Me), sym.kron(se.A1, se.A2) * sym.vec_row(se.X)),
                           ("TT2", sym.vec_col(Me), sym.kron(se.A2, se.A1) * sym.vec_col(se.X))]:
        st, tier, _ = verify_identity(lhs, rhs)
        d.fact(f"{name} at n={ne}, d={de}", st == "verified",
               f"{name} holds exactly at n={ne}, d={de}", "entrywise expand/cancel",
               tier=tier or "exact")
    if not d.ok:  # EQ rests on TT1–TT3: do not ask SymPy to refute a transcendental identity
        d.fact("EQ loss = Σ_j single-softmax losses", False, "not attempted",
               "an earlier step it relies on (TT1–TT3) is refuted", tier="exact")
        return d
    E = M.applyfunc(sp.exp)
    F = sp.Matrix(nd, nd, lambda j, k: E[j, k] / sum(E[j, :]))
    whole = sp.Rational(1, 2) * sum((F - si.B).applyfunc(lambda e: e ** 2))
    rows = sum(sp.Rational(1, 2) * sum((sym.softmax(
        sym.block(si.A1, si.A2, j) * sym.vec_row(si.X))[k] - si.B[j, k]) ** 2
        for k in range(nd)) for j in range(nd))
    st, tier, det = verify_identity(whole, rows)
    d.fact("EQ loss = Σ_j single-softmax losses", st == "verified",
           "½‖D⁻¹exp(M) − B‖²_F = Σ_j ½‖softmax(A_j x) − b_j‖²", det, tier=tier or "exact")
    if pairing:
        pt = _exact_counterpoint(sym.vec_col(Me) - sym.kron(se.A1, se.A2) * sym.vec_col(se.X))
        d.fact("wrong pairing rejected", pt is not None,
               "vec_col(A1XA2ᵀ) = (A1⊗A2)vec_col(X) is refuted (it would optimise over Xᵀ)",
               f"exact counter-point: entry {pt} ≠ 0 at integer values" if pt else
               "no counter-point found", tier="exact")
    return d


# --------------------------------------------------------------------------- gradients


@dataclass(frozen=True)
class GradientTheory:
    """The derived closed-form gradient, verified, and lowered to numpy per row."""

    n: int
    derivation: Derivation
    _rows: dict[str, Any]

    def gradient(self, A1, A2, B, X, loss: str, shift: float = 0.0) -> np.ndarray:
        """∇_X L = A1ᵀ P A2 with P's rows from the lowered structured formula (rescaled:
        times e^{-2·shift})."""
        M = A1 @ X @ A2.T
        P = np.stack([np.asarray(self._rows[loss](*(M[j] - shift), *B[j]), dtype=float).ravel()
                      for j in range(self.n)])
        return A1.T @ P @ A2


def gradient_theory(n_value: int, d_value: int) -> GradientTheory:
    """The gradient derivation (exact steps at n, d ≤ 3) and its numpy lowering at n."""
    return GradientTheory(n_value, _gradient_derivation(min(n_value, 3), min(d_value, 3)),
                          _gradient_rows(n_value))


@derived
def _gradient_derivation(n_value: int, d_value: int) -> Derivation:
    d = Derivation("structured gradient of both losses in d² form")
    d.say("Chain rule through the blocks: z_j = A_j x with A_j = A1[j,:]⊗A2, so "
          "∇_x L = Σ_j A_jᵀ ∇_z ℓ(z_j); the softmax rule ∂f/∂z = diag f − f fᵀ gives "
          "∇_z ℓ = (diag f − f fᵀ)(f − b); the sum collapses to vec_row(A1ᵀ P A2).")
    jac, rule = sym.softmax_jacobian_unevaluated(3)
    d.step("softmax Jacobian (n=3)", jac, rule, "differentiate exp(z_k)/Σexp(z_l)")
    for loss in ("normalized", "rescaled"):
        got, g = sym.logit_gradient_residual(3, loss)
        d.step(f"∇_z ℓ, {loss} (n=3)", got, g,
               "diff of ½‖f−b‖² (normalized) / ½‖u−αb‖² (rescaled) vs the structured g")
    nd, dd = n_value, d_value
    si = sym.instance(nd, dd)
    for loss in ("normalized", "rescaled"):
        ok = sym.is_zero_matrix(sym.structured_collapse_residual(si, loss))
        d.fact(f"collapse Σ_j A_jᵀ g_j = vec_row(A1ᵀPA2), {loss}, n={nd}, d={dd}", ok,
               "polynomial identity in free symbols a1, a2, f (or u), b", "exact expansion")
    for loss in ("normalized", "rescaled"):
        bf = sym.brute_force_gradient_check(min(n_value, 2), min(d_value, 2), loss)
        d.fact(f"brute force = structured, {loss}, n={bf['n']}, d={bf['d']}", bf["ok"],
               f"explicit diff of L(X) in all {bf['entries']} entries ({bf['ops']} ops) "
               "equals A1ᵀPA2 after exp(z_jk) → w_jk", "exact")
    naive, explicit = sym.matrixsymbol_silent_zero()
    d.fact("MatrixSymbol pitfall avoided",
           bool(getattr(naive, "is_ZeroMatrix", False) or naive == 0) and explicit != 0,
           "SymPy #17229: d/dX of an indexed MatrixSymbol expression returns 0 silently "
           f"({naive}) while the true derivative is {explicit}; explicit symbols are used",
           "reproduced")
    return d


@cached
def _gradient_rows(n_value: int) -> dict:
    """Row j of P as a numpy function of (z_j, b_j), lowered from the structured formula."""
    z = sp.symbols(f"z0:{n_value}", real=True)
    b = sp.symbols(f"b0:{n_value}", real=True)
    u = sp.Matrix(1, n_value, [sp.exp(v) for v in z])
    Bm = sp.Matrix(1, n_value, b)
    F = u / sum(u)
    return {"normalized": sp.lambdify(z + b, sym.normalized_P(F, Bm), lambdify_modules("numpy")),
            "rescaled": sp.lambdify(z + b, sym.rescaled_P(u, Bm), lambdify_modules("numpy"))}
