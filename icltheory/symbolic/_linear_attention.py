r"""Symbolic derivations for linear-attention ICL (Zhang, Singh, Latham, Saxe 2025).

Everything is derived with explicit-symbol matrices (never by differentiating an indexed
``MatrixSymbol``, which SymPy silently turns into 0) and every step is verified by
:class:`~icltheory.core.Derivation`.

* :func:`moments_derivation` — $\mathbb E[(x^\top x)xx^\top]=2\Sigma^2+\operatorname{tr}(\Sigma)\Sigma$
  by Isserlis for a symbolic symmetric $\Sigma$, then $\mathbb E[\beta w^\top]=\Sigma$ and
  $\mathbb E[\beta\beta^\top]=\Sigma^2+(\Sigma^2+\operatorname{tr}(\Sigma)\Sigma)/N$.
* :class:`PopulationLoss` — the population loss of the bilinear predictor
  $\hat y_q=\beta^\top Mx_q$ in the eigenbasis of $\Lambda$,
  $L(M)=\operatorname{tr}\Lambda-2\operatorname{tr}(M^\top\Lambda^2)+\operatorname{tr}(M\Lambda M^\top B)$,
  its gradient, its stationary points and their losses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

import sympy as sp

from ..core import Derivation
from ._exact import exact_list
from ._gaussian import beta_moments_symbolic, fourth_moment_contracted, symmetric_matrix

__all__ = ["moments_derivation", "PopulationLoss", "c_coefficients", "subset_losses"]


def moments_derivation(d: Derivation, D: int) -> None:
    """Record the Gaussian-moment steps for a symbolic D×D covariance (D ≤ 3 suffices:
    the identities are entrywise polynomial identities checked at that size)."""
    Dm = max(1, min(D, 3))
    Sig = symmetric_matrix("Sigma", Dm)
    N = sp.Symbol("N", positive=True, integer=True)
    d.define("Sigma", Sig, f"a symbolic symmetric {Dm}×{Dm} covariance (identities are entrywise)")
    fourth = fourth_moment_contracted(Sig)
    d.step("Gaussian fourth moment (Isserlis)", fourth, 2 * Sig * Sig + Sig.trace() * Sig,
           "E[(xᵀx) x xᵀ] summed over Isserlis pairings equals 2Σ² + tr(Σ)Σ")
    E_bw, E_bb = beta_moments_symbolic(Sig, N)
    d.step("E[β wᵀ]", E_bw, Sig, "β = (1/N)Σ_n x_n x_nᵀ w with E[w wᵀ] = I")
    d.step("E[β βᵀ]", E_bb, Sig * Sig + (Sig * Sig + Sig.trace() * Sig) / N,
           "N(N−1) pairs n≠m factorise into Σ²; the N pairs n=m need the fourth moment")


def c_coefficients(lambdas, N) -> list:
    r"""$c_d=1+(1+\operatorname{tr}\Lambda/\lambda_d)/N$ (exact)."""
    lam = exact_list(lambdas)
    tr = sum(lam)
    return [1 + (1 + tr / l) / sp.Integer(N) for l in lam]


def subset_losses(lambdas, N, subsets) -> list:
    r"""$L(S)=\operatorname{tr}\Lambda-\sum_{d\in S}\lambda_d/c_d$ for each subset (exact)."""
    lam = exact_list(lambdas)
    c = c_coefficients(lambdas, N)
    return [sum(lam) - sum((lam[i] / c[i] for i in S), sp.Integer(0)) for S in subsets]


@dataclass
class PopulationLoss:
    r"""$L(M)$ for $\hat y_q=\beta^\top Mx_q$ with $\Lambda=\operatorname{diag}(\lambda)$ (exact rationals).

    Views: ``M`` (symbols), ``Lam``, ``B`` ($\mathbb E[\beta\beta^\top]$), ``loss``,
    ``gradient`` (SymPy ``jacobian``), ``gradient_matrix_form``, ``stationary_point(S)``.
    """

    lambdas: tuple
    N: int
    derivation: Derivation = field(default_factory=lambda: Derivation("population loss"))

    def __post_init__(self):
        D = len(self.lambdas)
        lam = exact_list(self.lambdas)
        self.Lam = sp.diag(*lam)
        Nn = sp.Integer(self.N)
        self.B = self.Lam**2 + (self.Lam**2 + self.Lam.trace() * self.Lam) / Nn
        self.M = sp.Matrix(D, D, lambda i, j: sp.Symbol(f"M_{i}{j}", real=True))
        self.loss = sp.expand(
            self.Lam.trace() - 2 * (self.M.T * self.Lam**2).trace()
            + (self.M * self.Lam * self.M.T * self.B).trace()
        )

    @property
    def D(self) -> int:
        return len(self.lambdas)

    @cached_property
    def symbols(self) -> list:
        return list(self.M)

    @cached_property
    def gradient(self) -> sp.Matrix:
        """∂L/∂M by explicit differentiation of the scalar loss (row-major symbols)."""
        g = sp.Matrix([self.loss]).jacobian(self.symbols)
        return sp.Matrix(self.D, self.D, list(g))

    @cached_property
    def gradient_matrix_form(self) -> sp.Matrix:
        return -2 * self.Lam**2 + 2 * self.B * self.M * self.Lam

    def stationary_point(self, S) -> sp.Matrix:
        """$M_S=\\sum_{d\\in S}e_de_d^\\top/(\\lambda_dc_d)$."""
        M = sp.zeros(self.D, self.D)
        for i in S:
            M[i, i] = self.Lam[i, i] ** 2 / (self.B[i, i] * self.Lam[i, i])
        return M

    def at(self, expr, M: sp.Matrix):
        return expr.xreplace(dict(zip(self.symbols, list(M))))

    def record_core_steps(self) -> None:
        d = self.derivation
        d.define("Lambda", self.Lam, "covariance of the inputs in its eigenbasis")
        d.define("B", self.B, "E[β βᵀ] = Λ² + (Λ² + tr(Λ)Λ)/N")
        d.define("L(M)", self.loss, "E[(y_q − βᵀ M x_q)²] = trΛ − 2tr(MᵀΛ²) + tr(MΛMᵀB)")
        d.step("gradient ∂L/∂M", self.gradient, self.gradient_matrix_form,
               "explicit differentiation of L in the D² entries of M equals −2Λ² + 2BMΛ")

    def hessian_is_positive_definite(self) -> bool:
        """L is a quadratic in vec(M) with Hessian 2(B ⊗ Λ) (diagonal here): exact check."""
        H = sp.hessian(self.loss, self.symbols)
        return all(H[i, j] == 0 for i in range(H.rows) for j in range(H.cols) if i != j) and all(
            H[i, i] > 0 for i in range(H.rows)
        )

    def subsets(self):
        for m in range(self.D + 1):
            yield from combinations(range(self.D), m)
