r"""Population quantities of the data model, computed here independently of the theory.

$\mathbb E[\beta\beta^\top]$ is assembled from the data model itself: with $y_n=w^\top x_n$ and
$w\sim\mathcal N(0,I)$, $\mathbb E_w[y_ny_m]=x_n^\top x_m$, so
$N^2\,\mathbb E[\beta_a\beta_b]=\sum_{n\ne m}\mathbb E[x_{na}x_n^\top x_mx_{mb}]
+\sum_n\mathbb E[(x_n^\top x_n)x_{na}x_{nb}]$; for a diagonal $\Lambda$ the pairs $n\ne m$ give
$N(N-1)\lambda_a^2\delta_{ab}$ and the diagonal pairs
$N\delta_{ab}\big(\lambda_a\sum_{c\ne a}\lambda_c+\mu_4\lambda_a^2\big)$ with the standard-normal
fourth moment $\mu_4$ integrated numerically from the density (the trapezoidal rule, exact to float64
for this integrand).  Everything else (the population loss, its
minimiser, each direction's drop) is computed numerically from these moments.
"""

from __future__ import annotations

import numpy as np

from icltheory.core import cached

__all__ = ["standard_normal_moment", "beta_second_moment", "population_mse", "population_optimum",
           "direction_drops", "cross_moment_rse", "decreasing"]


@cached
def standard_normal_moment(k: int) -> float:
    """E[z^k] for z ~ N(0, 1): ∫ z^k e^{−z²/2} dz over ∫ e^{−z²/2} dz, both by the trapezoidal rule
    on [−40, 40] with step h = ¼, summed with correct rounding (math.fsum).  For integrands analytic
    in the whole plane and decaying like a Gaussian the rule converges faster than any power of
    the step (its error is of order exp(−2π²/h²) ≈ 1e-137; the tails beyond ±40 are below 1e-340):
    the moment to float64 rounding, from the density itself (no closed form)."""
    import math

    z = np.arange(-160, 161) * 0.25
    density = np.exp(-0.5 * z * z)
    return float(math.fsum((z**k * density).tolist()) / math.fsum(density.tolist()))


def beta_second_moment(lam, N: int) -> np.ndarray:
    """E[ββᵀ] for Λ = diag(lam) (see the module docstring), a D×D matrix."""
    lam = np.asarray(lam, dtype=float)
    total = float(lam.sum())
    pairs = (N - 1) * lam**2
    same = lam * (total - lam) + standard_normal_moment(4) * lam**2
    return np.diag((pairs + same) / N)


def population_mse(M: np.ndarray, lam, N: int) -> np.ndarray:
    r"""Plain population MSE of $\hat y_q=\beta^\top Mx_q$, Λ = diag(lam), for M of shape (..., D, D):
    $\mathbb E[y_q^2]-2\mathbb E[y_q\beta^\top Mx_q]+\mathbb E[(\beta^\top Mx_q)^2]$ with
    $\mathbb E[y_q^2]=\sum\lambda$, $\mathbb E[\beta w^\top]=\Lambda$."""
    lam = np.asarray(lam, dtype=float)
    B = beta_second_moment(lam, N)
    cross = np.einsum("...ab,a,b,ab->...", M, lam, lam, np.eye(lam.size))
    quad = np.einsum("...ab,b,...cb,ac->...", M, lam, M, B)
    return float(lam.sum()) - 2.0 * cross + quad


def population_optimum(lam, N: int) -> np.ndarray:
    """The minimiser of :func:`population_mse` over all D×D matrices M, by solving the normal
    equations E[ββᵀ] M Λ = Λ² numerically (a D²×D² linear system; memoised per spectrum — the
    adaptive flows ask for it at every step)."""
    out = _optimum(tuple(float(x) for x in np.asarray(lam, dtype=float)), int(N))
    return out.copy()


@cached
def _optimum(lam: tuple, N: int) -> np.ndarray:
    lam = np.asarray(lam, dtype=float)
    D = lam.size
    C = np.kron(beta_second_moment(lam, N), np.diag(lam))
    g = np.diag(lam**2).reshape(-1)
    return np.linalg.solve(C, g).reshape(D, D)


def direction_drops(lam, N: int) -> np.ndarray:
    """Per eigen-direction d: L(0) − L(m*_d e_d e_dᵀ), the loss drop when only d is learned."""
    lam = np.asarray(lam, dtype=float)
    opt = np.diagonal(population_optimum(lam, N))
    Ms = np.einsum("d,de,df->def", opt, np.eye(lam.size), np.eye(lam.size))
    return population_mse(np.zeros((lam.size, lam.size)), lam, N) - population_mse(Ms, lam, N)


def cross_moment_rse(lam, N: int, P: int) -> np.ndarray:
    r"""Per eigen-direction d: the relative standard error with which a training set of ``P``
    sequences estimates the moment that drives the direction's learning, $\mathbb E[y_qf_d]=
    \lambda_d^2$ for the feature $f_d=\beta_dx_{q,d}$: $\sqrt{\operatorname{Var}(y_qf_d)/P}/\lambda_d^2$.

    Conditioning on the task $w$ (so $x_q$ and the context are independent Gaussians, $a=w^\top
    \Lambda w$): $\mathbb E[y_q^2x_{q,d}^2\mid w]=a\lambda_d+2\lambda_d^2w_d^2$ and $\mathbb E[\beta_d^2
    \mid w]=(a\lambda_d+2\lambda_d^2w_d^2)/N+(1-1/N)\lambda_d^2w_d^2$ (Isserlis per pair of tokens);
    averaging their product over $w\sim\mathcal N(0,I)$ with $\mathbb E[w_d^4]=3$, $\mathbb E[aw_d^2]=
    T+2\lambda_d$, $\mathbb E[a^2]=T^2+2Q$ ($T=\operatorname{tr}\Lambda$, $Q=\operatorname{tr}\Lambda^2$):

    $$\mathbb E[y_q^2f_d^2]=\tfrac1N\big[\lambda_d^2(T^2+2Q)+4\lambda_d^3(T+2\lambda_d)+12\lambda_d^4\big]
    +\big(1-\tfrac1N\big)\big[\lambda_d^3(T+2\lambda_d)+6\lambda_d^4\big].$$

    For a small $\lambda_d$ the first term dominates: the error is about $T/(\lambda_d\sqrt{NP})$, so
    the directions far below the trace are the ones a finite training set cannot resolve."""
    lam = np.asarray(lam, dtype=float)
    T, Q = float(lam.sum()), float(np.sum(lam**2))
    inv = 1.0 / N
    second = (inv * (lam**2 * (T * T + 2 * Q) + 4 * lam**3 * (T + 2 * lam) + 12 * lam**4)
              + (1.0 - inv) * (lam**3 * (T + 2 * lam) + 6 * lam**4))
    return np.sqrt(np.maximum(second - lam**4, 0.0) / P) / lam**2


def decreasing(values) -> np.ndarray:
    """Indices sorting ``values`` in decreasing order (stable)."""
    return np.argsort(-np.asarray(values, dtype=float), kind="stable")
