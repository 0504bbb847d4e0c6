"""Planted errors several claims share: errors in the helpers that the theory and the
experiments each rely on everywhere (c_d, β's moments, the eigen-order)."""

from __future__ import annotations

from icltheory.core import PlantedError

__all__ = ["THEORY", "EXPERIMENTS", "C_N_PLUS_1", "MOMENTS_N_PLUS_1", "EIGEN_ORDER_REVERSED", "contexts_n_plus_1",
           "C_SLIGHTLY_LARGE", "MOMENTS_SLIGHTLY_LARGE", "FLOW_CURVATURE_LARGE", "STATISTIC_SLIGHTLY_LARGE"]

THEORY = "proofs.linear_attention.theory"
EXPERIMENTS = "proofs.linear_attention.experiments"


def _c_with_n_plus_1(orig):
    return lambda lam, trace, n: orig(lam, trace, n + 1)


def _moments_with_n_plus_1(orig):
    return lambda lam, N: orig(lam, N + 1)


def contexts_n_plus_1(orig):
    """The Monte Carlo contexts' β divided by N + 1."""
    def contexts(Lam, N, n, rng, chunk):
        for sl, w, beta in orig(Lam, N, n, rng, chunk):
            yield sl, w, beta * N / (N + 1)

    return contexts


#: planted errors shared by several claims: c with N+1 (theory), β's moments with N+1 (experiment)
C_N_PLUS_1 = PlantedError("theory", "c_d with N + 1 in place of N (the shared theory helper)",
                          f"{THEORY}._population:c_coefficient", _c_with_n_plus_1)
MOMENTS_N_PLUS_1 = PlantedError("measurement", "E[ββᵀ] with N + 1 in place of N (the experiments' moments)",
                                f"{EXPERIMENTS}._population:beta_second_moment", _moments_with_n_plus_1)


#: the shared theory helper's eigen-order reversed (increasing eigenvalue)
EIGEN_ORDER_REVERSED = PlantedError("theory", "the eigen-order helper sorts by increasing eigenvalue",
                                    f"{THEORY}._population:eigen_order",
                                    lambda orig: (lambda lambdas: orig(lambdas)[::-1]))


def _c_slightly_large(orig):
    """c_d 1e-9 too large (exactly, on SymPy expressions too)."""
    import sympy as sp

    def c(lam, trace, n):
        out = orig(lam, trace, n)
        return out * (sp.Rational(1_000_000_001, 1_000_000_000) if isinstance(out, sp.Basic) else 1 + 1e-9)

    return c


#: errors of the size the float64 checks resolve (1e-10 relative): c_d and E[ββᵀ] 1e-9 too large
C_SLIGHTLY_LARGE = PlantedError("theory", "c_d 1e-9 too large (the shared theory helper)",
                                f"{THEORY}._population:c_coefficient", _c_slightly_large)
MOMENTS_SLIGHTLY_LARGE = PlantedError("measurement", "E[ββᵀ] 1e-9 too large (the experiments' moments)",
                                      f"{EXPERIMENTS}._population:beta_second_moment",
                                      lambda orig: (lambda lam, N: orig(lam, N) * (1 + 1e-9)))


def _curvature_large(orig):
    """The separate-head population flow with its curvature term E[ββᵀ]·Λ 10 % too large."""
    class Curvature(orig):
        def __init__(self, lam, N, H, R, rows):
            super().__init__(lam, N, H, R, rows)
            self.W = self.W * 1.1
            self.w = self.W.ravel()

    return Curvature


#: an error in the dynamics only (the static moments, the saddles' losses and the loss read-out
#: stay right): the flow's plateaus then sit at its own saddles, off Eq. 19's levels
FLOW_CURVATURE_LARGE = PlantedError("measurement", "the population flow's curvature term E[ββᵀ]·Λ 10 % too "
                                    "large (the flow only)", f"{EXPERIMENTS}._flows:SeparateHeadsNewton",
                                    _curvature_large)


def _statistic_slightly_large(orig):
    """The in-context statistic β 3e-10 too large (exactly, as a fraction)."""
    import sympy as sp

    return lambda x, y, n: orig(x, y, n) * sp.Rational(10_000_000_003, 10_000_000_000)


#: the theory's in-context statistic β = Σ y_n x_n / N off by 3e-10 of itself: an error of the
#: size the claims' 1e-10 identities resolve, where the normalisation d of β is read from it
STATISTIC_SLIGHTLY_LARGE = PlantedError("theory", "β's normalisation 3e-10 too large in the symbolic reduction",
                                        f"{THEORY}._equivalence:context_statistic", _statistic_slightly_large)
