r"""Gradient-flow integration with SciPy, with tolerances that suit plateau dynamics.

SciPy's defaults (rtol 1e-3, atol 1e-6) misstate escape times from small initial conditions
(atol larger than the state), so :func:`integrate_flow` takes explicit tolerances, requires
``atol`` to be far below the smallest initial state scale, and reports the number of accepted
steps so that callers can bound the accumulated error (≈ steps × rtol × scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import NumericalTrouble

__all__ = ["integrate_flow", "FlowSolution"]


@dataclass
class FlowSolution:
    t: np.ndarray
    y: np.ndarray  # (n_state, len(t))
    n_steps: int
    nfev: int
    rtol: float
    atol: float
    method: str


def integrate_flow(fun, y0, t_eval, *, rtol: float = 1e-12, atol: float | None = None,
                   method: str = "DOP853", jac=None) -> FlowSolution:
    from scipy.integrate import solve_ivp  # not at import: the command line starts without SciPy's ODE stack

    y0 = np.asarray(y0, dtype=float)
    scale = float(np.min(np.abs(y0[y0 != 0]))) if np.any(y0 != 0) else 1.0
    if atol is None:
        atol = 1e-6 * scale * rtol ** 0.5
    if atol > 1e-3 * scale:
        raise ValueError(f"atol={atol:g} is not far below the smallest initial state {scale:g}")
    t_eval = np.asarray(t_eval, dtype=float)
    kw = {"jac": jac} if jac is not None and method in ("Radau", "BDF", "LSODA") else {}
    with np.errstate(over="ignore", invalid="ignore"):
        sol = solve_ivp(fun, (float(t_eval[0]), float(t_eval[-1])), y0, method=method,
                        t_eval=t_eval, rtol=rtol, atol=atol, dense_output=False, **kw)
    if not sol.success or not np.all(np.isfinite(sol.y)):
        raise NumericalTrouble(f"ODE integration failed: {sol.message}")
    n_steps = int(sol.nfev // (12 if method == "DOP853" else 6))
    return FlowSolution(sol.t, sol.y, n_steps, int(sol.nfev), rtol, atol, method)
