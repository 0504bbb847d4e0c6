r"""Gradient flows of the population loss, integrated with SciPy (no theory involved).

* :func:`merged_flow` — the whole $H$-head two-layer flow of ATTN_M's relevant block
  (:class:`~._models.MergedHeads` on the population moments), from a given initialisation;
* :func:`one_head_flow` — one separate head $(v,k,q)$ on the population loss, started on the
  aligned balanced ansatz $v=k_e=q_e=v_0$, until its product reaches a target (an event);
* :func:`balanced_rate` — the experiment's own right-hand side $\tau\dot v$ of that head on the
  ansatz, read off the model's gradient, with its positive root and the quadrature of
  $\int dv/\dot v$.
"""

from __future__ import annotations

import math

import numpy as np

from icltheory.core import NumericalTrouble
from icltheory.dynamics import integrate_flow

from . import _population as pop
from . import _models as models
from ._models import MergedHeads

__all__ = ["merged_flow", "balanced_rate", "balanced_fixed_point", "escape_quadrature", "one_head_flow"]


def merged_flow(lam, N: int, params: dict, t_eval: np.ndarray, *, rtol: float = 1e-12, tick=None):
    """Integrate τθ̇ = −∂L_{1/2}/∂θ for H merged heads (one seed row); returns (solution,
    M(t) of shape (T, D, D)).  ``tick`` (the watchdog) is called every 1000 evaluations."""
    mom = models.population_moments(lam, N)
    H = params["r"].shape[1]
    model = MergedHeads(H)
    shapes = [(k, params[k].shape) for k in ("r", "U")]
    sizes = [int(np.prod(sh)) for _, sh in shapes]
    D = mom.D

    def unpack(y):
        out, k0 = {}, 0
        for (name, sh), n in zip(shapes, sizes):
            out[name] = y[k0:k0 + n].reshape(sh)
            k0 += n
        return out

    calls = [0]

    def rhs(t, y):
        calls[0] += 1
        if tick is not None and calls[0] % 1000 == 0:
            tick(min(t / t_eval[-1], 1.0), "population flow")
        p = unpack(y)
        g = model.pullback(p, mom.grad_half(model.theta(p)), mom)
        return -np.concatenate([g["r"].ravel(), g["U"].ravel()])

    y0 = np.concatenate([params["r"].ravel(), params["U"].ravel()])
    sol = integrate_flow(rhs, y0, t_eval, rtol=rtol)
    M = np.array([model.theta(unpack(sol.y[:, k]))[0].reshape(D, D) for k in range(sol.y.shape[1])])
    return sol, M


def _head_gradient(lam, N: int):
    """(v, k, q) ↦ (τv̇, τk̇, τq̇) of one rank-1 head on the population L_{1/2} (Λ = diag(lam))."""
    lam = np.asarray(lam, float)
    W = np.diag(pop.beta_second_moment(lam, N))[:, None] * lam[None, :]
    L2 = np.diag(lam**2)

    def grad(v, k, q):
        E = L2 - W * (v * np.outer(k, q))
        return k @ E @ q, v * (E @ q), v * (E.T @ k)

    return grad


def balanced_rate(lam, N: int, direction: int = 0):
    """τv̇ of the head on the aligned balanced ansatz v = k_e = q_e (e = ``direction``), read off
    the model's gradient: a function of v."""
    grad = _head_gradient(lam, N)
    D = len(lam)

    def rate(v: float) -> float:
        e = np.zeros(D)
        e[direction] = v
        return float(grad(v, e, e)[0])

    return rate


def balanced_fixed_point(lam, N: int, direction: int = 0) -> float:
    """The positive root of :func:`balanced_rate` (brentq, bracketed by doubling)."""
    from scipy.optimize import brentq

    rate = balanced_rate(lam, N, direction)
    lo, hi = 1e-100, 1.0
    f = lambda v: rate(v) / (v * v)  # noqa: E731 - same sign as the rate, O(1) near 0
    for _ in range(2100):
        if f(hi) < 0:
            break
        lo, hi = hi, 2 * hi
    else:  # pragma: no cover - λ within the setting's bounds always brackets
        raise NumericalTrouble("no positive fixed point of the balanced head found")
    return float(brentq(f, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500))


def escape_quadrature(lam, N: int, v0: float, v1: float, direction: int = 0) -> tuple[float, float]:
    r"""$\int_{v_0}^{v_1}dv/\dot v$ by adaptive quadrature in $s=1/v$ (smooth and bounded there),
    one QUADPACK call per factor-10 piece of the range (a single call over many decades can stop
    early on an optimistic error estimate); returns (value, summed error estimates)."""
    from scipy.integrate import quad

    rate = balanced_rate(lam, N, direction)
    f = lambda s: 1.0 / (s * s * rate(1.0 / s))  # noqa: E731
    a, b = 1.0 / v1, 1.0 / v0
    cuts = np.geomspace(a, b, max(2, int(np.ceil(np.log10(b / a))) + 1))
    val = err = 0.0
    for lo, hi in zip(cuts, cuts[1:]):
        v, e = quad(f, lo, hi, epsabs=0.0, epsrel=1e-13, limit=200)
        val, err = val + v, err + e
    return float(val), float(err)


def one_head_flow(lam, N: int, v0: float, target: float, t_max: float, direction: int = 0,
                  *, rtol: float = 1e-13) -> tuple[float, int]:
    """Integrate one head (v, k, q ∈ ℝ^D) from the ansatz v = k_e = q_e = v0 with DOP853 until
    (v k_e q_e)^{1/3} = ``target``; returns (event time, accepted steps)."""
    from scipy.integrate import solve_ivp

    grad = _head_gradient(lam, N)
    D = len(lam)
    y0 = np.zeros(1 + 2 * D)
    y0[0] = y0[1 + direction] = y0[1 + D + direction] = v0

    def rhs(_t, y):
        gv, gk, gq = grad(y[0], y[1:1 + D], y[1 + D:])
        return np.concatenate([[gv], gk, gq])

    def hit(_t, y):
        return np.cbrt(y[0] * y[1 + direction] * y[1 + D + direction]) - target

    hit.terminal = True
    hit.direction = 1
    sol = solve_ivp(rhs, (0.0, t_max), y0, method="DOP853", rtol=rtol,
                    atol=1e-6 * v0 * math.sqrt(rtol), events=hit)
    if not sol.success or len(sol.t_events[0]) == 0:
        raise NumericalTrouble(f"the one-head flow did not reach {target:.3g}: {sol.message}")
    return float(sol.t_events[0][0]), int(sol.nfev // 12)
