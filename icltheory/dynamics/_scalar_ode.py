r"""The scalar plateau ODE of separate key/query linear attention and its closed-form integral.

On the $(m+1)$-th plateau one head learns the eigen-direction $e=e_{m+1}$ with balanced weights
$v=\lVert k\rVert=\lVert q\rVert$, $k,q\parallel e$ (the one-head ansatz of Zhang et al. 2025).
Its output is $v^3f$ with the feature $f=(e^\top\beta)(e^\top x_q)$, $\mathbb E[y_qf]=\lambda^2$,
$\mathbb E[f^2]=\lambda^3c$, $c=1+(1+\operatorname{tr}\Lambda/\lambda)/N$, so under
$\tau\dot\theta=-\partial L_{1/2}/\partial\theta$ each of the three balanced factors obeys

$$\tau\dot v=\lambda^2v^2-\lambda^3c\,v^5,\qquad v_\star=(\lambda c)^{-1/3}.$$

With $b=\lambda c$ and $u=b^{1/3}v\in(0,1)$ this is $\tau\dot u=\lambda^2b^{-1/3}u^2(1-u^3)$, whose
integral is

$$t-t_0=\frac{\tau\,b^{1/3}}{\lambda^2}\big[G(u)-G(u_0)\big],\qquad
G(u)=-\frac1u-\frac13\ln(1-u)+\frac16\ln(u^2+u+1)-\frac1{\sqrt3}\arctan\frac{2u+1}{\sqrt3},$$

$G'(u)=1/(u^2(1-u^3))$.  The *escape time* is the time from $v_0$ to $v_\star/2$ ($u=1/2$).
Three independent evaluations are provided: the closed form, SciPy's ODE solver with an event
(tight tolerances: SciPy's defaults, rtol 1e-3 and atol 1e-6, are wrong here because the
state starts far below atol and the escape time is a long integral), and adaptive quadrature
of $\int dv/\dot v$.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import quad, solve_ivp

from ..core import NumericalTrouble

__all__ = ["G", "G_prime", "v_star", "scalar_rhs", "escape_time", "escape_time_ode",
           "escape_time_quad", "transit_time", "scalar_trajectory"]

_SQ3 = math.sqrt(3.0)


def G(u):
    """The closed-form antiderivative of 1/(u²(1−u³)) on (0, 1)."""
    u = np.asarray(u, dtype=float)
    return (-1.0 / u - np.log1p(-u) / 3.0 + np.log(u * u + u + 1.0) / 6.0
            - np.arctan((2.0 * u + 1.0) / _SQ3) / _SQ3)


def G_prime(u):
    u = np.asarray(u, dtype=float)
    return 1.0 / (u * u * (1.0 - u**3))


def v_star(lam: float, c: float) -> float:
    """Fixed point $(\\lambda c)^{-1/3}$ (the cube root of the PCR coefficient $1/(\\lambda c)$)."""
    return (lam * c) ** (-1.0 / 3.0)


def scalar_rhs(lam: float, c: float):
    return lambda t, v: lam**2 * v**2 - lam**3 * c * v**5


def transit_time(lam: float, c: float, u_from: float, u_to: float) -> float:
    """Time (in τ) for u = b^{1/3} v to go from ``u_from`` to ``u_to`` (both in (0, 1))."""
    b = lam * c
    return float(b ** (1.0 / 3.0) / lam**2 * (G(u_to) - G(u_from)))


def escape_time(lam: float, c: float, v0: float, frac: float = 0.5) -> float:
    """Closed form: time from ``v0`` to ``frac``·v* (default v*/2), in units of τ."""
    u0 = (lam * c) ** (1.0 / 3.0) * v0
    if not 0.0 < u0 < frac < 1.0:
        raise ValueError(f"need 0 < v0 < {frac:g}·v* (v0 = {v0:g}, v* = {v_star(lam, c):g})")
    return transit_time(lam, c, u0, frac)


def escape_time_ode(lam: float, c: float, v0: float, frac: float = 0.5, *,
                    rtol: float = 1e-13, atol: float | None = None):
    """SciPy (DOP853) with a terminal event at v = frac·v*; returns (time, accepted steps).

    ``atol`` defaults to 1e-6·v0·rtol^½, far below the initial state (the default atol of
    SciPy, 1e-6, would be comparable to v0 and lets the solver take wildly wrong steps)."""
    vs = v_star(lam, c)
    target = frac * vs
    if atol is None:
        atol = 1e-6 * v0 * math.sqrt(rtol)
    t_guess = 4.0 * escape_time(lam, c, v0, frac) + 10.0

    def hit(t, y):
        return y[0] - target

    hit.terminal = True
    hit.direction = 1
    rhs = scalar_rhs(lam, c)
    sol = solve_ivp(lambda t, y: [rhs(t, y[0])], (0.0, t_guess), [v0], method="DOP853",
                    rtol=rtol, atol=atol, events=hit)
    if not sol.success or len(sol.t_events[0]) == 0:
        raise NumericalTrouble(f"scalar ODE did not reach v*·{frac:g}: {sol.message}")
    return float(sol.t_events[0][0]), int(sol.nfev // 12)


def escape_time_quad(lam: float, c: float, v0: float, frac: float = 0.5) -> tuple[float, float]:
    r"""Adaptive quadrature of $\int_{v_0}^{frac\,v_\star}dv/(\lambda^2v^2-\lambda^3cv^5)$ in the
    variable $s=1/v$ (the integrand is then smooth and bounded); returns (value, error estimate)."""
    vs = v_star(lam, c)
    b = lam * c
    # t = ∫ dv / (λ² v² (1 − b v³)); with s = 1/v, dv = −ds/s²: t = ∫_{s1}^{s0} ds / (λ²(1 − b/s³))
    f = lambda s: 1.0 / (lam**2 * (1.0 - b / s**3))  # noqa: E731
    val, err = quad(f, 1.0 / (frac * vs), 1.0 / v0, epsabs=0.0, epsrel=1e-13, limit=500)
    return float(val), float(err)


def scalar_trajectory(lam: float, c: float, v0: float, t: np.ndarray) -> np.ndarray:
    """v(t) from the closed form, by inverting G with bisection (vectorised, to 1e-15 in u)."""
    b = lam * c
    u0 = b ** (1.0 / 3.0) * v0
    target = G(u0) + np.asarray(t, float) * lam**2 / b ** (1.0 / 3.0)
    lo = np.full(target.shape, u0)
    hi = np.full(target.shape, 1.0 - 1e-16)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = G(mid) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi) / b ** (1.0 / 3.0)
