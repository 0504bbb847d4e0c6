r"""The theory, derived once per (D, N) in SymPy and lowered to numbers.

With $\mathbb E[\beta w^\top]=\Lambda$ and $\mathbb E[\beta\beta^\top]=\Lambda^2+(\Lambda^2+
\operatorname{tr}(\Lambda)\Lambda)/N$ (Isserlis), $\Lambda=\lambda I$:

$$L(\eta)=\mathbb E[(y_q-\eta\beta^\top x_q)^2]=\lambda D-2\eta\lambda^2D+\eta^2\lambda^3Dc,
\qquad c=1+\frac{1+D}{N},\qquad \eta_\star=\frac1{\lambda c},\qquad L_\star=\lambda D(1-1/c).$$
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from icltheory.core import Derivation, cached

__all__ = ["OneStepTheory", "theory", "c_coefficient"]

eta, lam = sp.symbols("eta lambda", positive=True)


def c_coefficient(D, N):
    """c = 1 + (1 + D)/N: E[ββᵀ] = λ²c·I for Λ = λI."""
    return 1 + sp.Integer(1 + D) / N


@dataclass(frozen=True)
class OneStepTheory:
    """Named terms (SymPy) and their numeric views."""

    D: int
    N: int
    c: sp.Expr
    loss: sp.Expr  # L(η) as a function of η and λ
    eta_star: sp.Expr
    loss_star: sp.Expr
    derivation: Derivation

    def loss_at(self, etas, lam_value) -> list[float]:
        f = sp.lambdify((eta, lam), self.loss, "mpmath")
        return [float(f(sp.Float(e, 30), sp.Float(lam_value, 30))) for e in etas]

    def value(self, expr, lam_value) -> float:
        return float(expr.subs(lam, sp.Rational(repr(float(lam_value)))).evalf(30))


@cached
def theory(D: int, N: int) -> OneStepTheory:
    """Derive once per (D, N); every step verified."""
    d = Derivation("one gradient step from zero as an in-context learner (Λ = λI)")
    c = c_coefficient(D, N)
    d.define("c", c, "E[ββᵀ] = λ²c I")
    loss = lam * D - 2 * eta * lam**2 * D + eta**2 * lam**3 * D * c
    d.define("L(η)", loss, "λ tr E[(w − ηβ)(w − ηβ)ᵀ] with E[βwᵀ] = λI, E[ββᵀ] = λ²cI")
    eta_star = sp.solve(sp.diff(loss, eta), eta)[0]
    d.step("η* is stationary", sp.diff(loss, eta).subs(eta, eta_star), 0, "dL/dη = 0 at η*")
    d.step("η* = 1/(λc)", eta_star, 1 / (lam * c), "solve the linear equation dL/dη = 0")
    loss_star = loss.subs(eta, eta_star)
    d.step("L(η*) = λD(1 − 1/c)", loss_star, lam * D * (1 - 1 / c), "substitute η*")
    return OneStepTheory(D, N, c, loss, eta_star, loss_star, d)
