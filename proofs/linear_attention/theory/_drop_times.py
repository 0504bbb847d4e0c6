r"""Drop times of ATTN_S predicted from a seed's initial weights (beyond the paper).

Derived once (SymPy, every step verified), then integrated with SciPy:

* For a **diagonal** $M$ the residual $E=\Lambda^2-\mathbb E[\beta\beta^\top]M\Lambda$ is diagonal
  with $E_{dd}=e_d=\lambda_d^2(1-\lambda_dc_dM_{dd})$.
* Keeping only this diagonal residual, the flow of head $i$ (rank 1; SeparateDynamics' chain
  rule) is an ODE in its **initial overlaps** $(v_i,\ k_{id}=k_i\cdot e_d,\ q_{id}=q_i\cdot e_d)$:
  $\tau\dot v_i=\sum_de_dk_{id}q_{id}$, $\tau\dot k_{id}=v_ie_dq_{id}$, $\tau\dot q_{id}=v_ie_dk_{id}$,
  heads coupled only through the $D$ scalars $M_{dd}=\sum_iv_ik_{id}q_{id}$.  While $M$ is
  small this is the exact flow to first order (the off-diagonal residual is quadratic in the
  off-diagonal $M$), so it predicts the **first drop**: the time the first $M_{dd}$ reaches
  half its learned value $1/(\lambda_dc_d)$.
* After a head has learned a direction its off-diagonal residual keeps it from taking a
  second one, which the diagonal reduction does not see.  For the **later drops** the
  *decoupled* reduction gives each direction its own copy of the value weights (heads compete
  for a direction only through its residual): an informational estimate.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

from icltheory.core import Derivation, NumericalTrouble, cached

from . import _population as popm
from ._paper import paper

__all__ = ["DropTimeOde", "drop_time_ode", "residual_diagonal", "first_drop_times", "decoupled_drop_times",
           "ODE_RTOL"]

#: relative tolerance of the DOP853 integration of the per-head ODE
ODE_RTOL = 1e-10
#: the informational decoupled estimate needs less
DECOUPLED_RTOL = 1e-8


def residual_diagonal(lam, c, m):
    r"""$e_d=\lambda_d^2(1-\lambda_dc_dM_{dd})$ (the derivation checks this expression)."""
    return lam**2 * (1 - lam * c * m)


class DropTimeOde:
    """The diagonal reduction of ATTN_S's flow (see the module docstring)."""

    def __init__(self) -> None:
        pop = paper().population
        D = popm.DSYM
        d = Derivation("ATTN_S drop times from the initial overlaps: the diagonal reduction of the flow")
        ms = sp.symbols(f"m_1:{D + 1}", real=True)
        Mdiag = sp.diag(*ms)
        E = pop.at(pop.Lam**2 - pop.B * pop.M * pop.Lam, Mdiag)
        d.step("E = Λ² − E[ββᵀ]MΛ is diagonal for diagonal M, E_dd = λ_d²(1 − λ_d c_d M_dd)", E,
               sp.diag(*[residual_diagonal(pop.lams[i], pop.c[i], ms[i]) for i in range(D)]),
               "E[ββᵀ] is diagonal in Λ's eigenbasis (population section)")
        v = sp.Symbol("v", real=True)
        k = sp.Matrix(D, 1, lambda i, j: sp.Symbol(f"k_{i}", real=True))
        q = sp.Matrix(D, 1, lambda i, j: sp.Symbol(f"q_{i}", real=True))
        es = sp.symbols(f"e_1:{D + 1}", real=True)
        Ed = sp.diag(*es)
        d.step("τv̇ = ⟨E, k qᵀ⟩ = Σ_d e_d k_d q_d for diagonal E", (Ed.T * k * q.T).trace(),
               sum(es[i] * k[i] * q[i] for i in range(D)), "SeparateDynamics: τv̇ = ⟨E, KᵀQ⟩, rank 1")
        d.step("τk̇ = v E q: τk̇_d = v e_d q_d", v * Ed * q, sp.Matrix([v * es[i] * q[i] for i in range(D)]),
               "SeparateDynamics: τK̇ = v Q Eᵀ (E diagonal)")
        d.step("τq̇ = v E k: τq̇_d = v e_d k_d", v * Ed * k, sp.Matrix([v * es[i] * k[i] for i in range(D)]),
               "SeparateDynamics: τQ̇ = v K E")
        lam, c, m = sp.symbols("lambda c m", positive=True)
        d.step("e_d vanishes at the learned value M_dd = 1/(λ_d c_d)", residual_diagonal(lam, c, 1 / (lam * c)), 0,
               "so a direction's drop is M_dd reaching half of 1/(λc)")
        d.say("Off-diagonal entries of M enter E only through E[ββᵀ] M Λ, so dropping them changes the "
              "flow by terms of second order in the off-diagonal weights: exact to first order while the "
              "weights are small (the first plateau and its escape).")
        self.derivation = d
        self._e = sp.lambdify((lam, c, m), residual_diagonal(lam, c, m), "numpy")

    def residual(self, lam, c, m):
        return self._e(lam, c, m)


@cached
def drop_time_ode() -> DropTimeOde:
    return DropTimeOde()


def _c(lambdas, N):
    lam = np.asarray(lambdas, float)
    return lam, np.asarray(popm.c_coefficient(lam, float(lam.sum()), float(N)), float)


def _solve(rhs, y0, horizon, event, rtol, args=None):
    event.terminal = True
    event.direction = 1
    sol = solve_ivp(rhs, (0.0, horizon), y0, method="DOP853", rtol=rtol, atol=1e-14 * max(1.0, np.abs(y0).max()),
                    events=[event], args=args)
    if sol.status < 0:
        raise NumericalTrouble(f"the per-head ODE integration failed: {sol.message}")
    return float(sol.t_events[0][0]) if len(sol.t_events[0]) else math.inf


def first_drop_times(lambdas, N: int, heads: dict, horizon: float) -> list[float]:
    """Per seed row: the time (τ) at which the first M_dd reaches half of 1/(λ_dc_d) under the
    diagonal reduction with shared value weights (inf if not within ``horizon``)."""
    lam, c = _c(lambdas, N)
    ode = drop_time_ode()
    mstar = 1.0 / (lam * c)
    out = []
    H, D = heads["K"].shape[1:]

    def rhs(t, y):
        v, k, q = y[:H], y[H:H + H * D].reshape(H, D), y[H + H * D:].reshape(H, D)
        e = ode.residual(lam, c, np.einsum("h,hd,hd->d", v, k, q))
        return np.concatenate([(k * q * e).sum(1), (v[:, None] * e * q).ravel(), (v[:, None] * e * k).ravel()])

    def event(t, y):
        v, k, q = y[:H], y[H:H + H * D].reshape(H, D), y[H + H * D:].reshape(H, D)
        return float(np.max(np.einsum("h,hd,hd->d", v, k, q) / mstar)) - 0.5

    for s in range(heads["v"].shape[0]):
        y0 = np.concatenate([heads["v"][s], heads["K"][s].ravel(), heads["Q"][s].ravel()])
        out.append(_solve(rhs, y0, horizon, event, ODE_RTOL))
    return out


def decoupled_drop_times(lambdas, N: int, heads: dict, horizon: float) -> list[list[float]]:
    """Per seed row: every direction's time to half its learned value when each direction has
    its own copy of the value weights, sorted (the m-th drop; inf if not within ``horizon``)."""
    lam, c = _c(lambdas, N)
    ode = drop_time_ode()
    mstar = 1.0 / (lam * c)
    out = []
    H, D = heads["K"].shape[1:]

    def rhs(t, y, d):
        v, k, q = y[:H], y[H:2 * H], y[2 * H:]
        e = ode.residual(lam[d], c[d], float(np.sum(v * k * q)))
        return np.concatenate([k * q * e, v * e * q, v * e * k])

    def event(t, y, d):
        return float(np.sum(y[:H] * y[H:2 * H] * y[2 * H:])) / mstar[d] - 0.5

    for s in range(heads["v"].shape[0]):
        v0, K0, Q0 = heads["v"][s], heads["K"][s], heads["Q"][s]
        times = [_solve(rhs, np.concatenate([v0, K0[:, d], Q0[:, d]]), horizon, event, DECOUPLED_RTOL, (d,))
                 for d in range(D)]
        out.append(sorted(times))
    return out
