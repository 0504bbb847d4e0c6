"""Planted errors several claims share: errors in the helpers that the theory and the
experiments each rely on everywhere (c_d, β's moments, the eigen-order)."""

from __future__ import annotations

from icltheory.core import PlantedError

__all__ = ["THEORY", "EXPERIMENTS", "C_N_PLUS_1", "MOMENTS_N_PLUS_1", "EIGEN_ORDER_REVERSED", "contexts_n_plus_1"]

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
