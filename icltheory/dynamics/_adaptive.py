r"""Adaptive, stiff-aware integration of gradient flows through plateaus.

A gradient flow from a small initialisation spends almost all its time on plateaus near
saddles, where it moves slowly, and leaves each of them in a short drop; after a drop the
learned directions sit in wells of curvature $\kappa$.  A fixed step must stay below $2/\kappa$
for the whole run, so its work grows like the plateau lengths ($\propto 1/(\lambda^2w)$ for a
cubic model).  An implicit multistep method (SciPy's BDF, or Radau/LSODA) is stable at any step
on the wells and takes steps that grow with the slow timescale on the plateaus, so its work
grows roughly like the logarithm of the plateau lengths.

:func:`integrate_adaptive` steps a SciPy :class:`~scipy.integrate.OdeSolver` itself (rather
than calling ``solve_ivp``) so that

* the run can **stop on a condition** of the state seen so far (``stop(t, y)`` after every
  accepted step), not only at a fixed horizon ``t_max``;
* **events** (e.g. a learned fraction crossing ½ — a plateau's exit) are located on the
  solver's dense output by bracketing root-finding between accepted steps, to the solver's
  accuracy, and returned as times (first upward crossing of each component of ``events``);
* the trajectory is **recorded** on a caller-given time grid from the dense output (e.g. a
  geometric grid: a log-time axis for plateau detection);
* the **work is counted** in flop-equivalents from the solver's own counters — right-hand side
  evaluations × their cost, Jacobians × theirs, LU factorisations × $\tfrac23n^3$ (scaled by :data:`LU_EFFICIENCY`) — and the run
  stops with ``stopped="budget"`` when a given budget is spent (the caller says
  ``inconclusive``, naming it).  Budgets are in work, never in steps.

The solver controls only its *local* error (each step's estimate below ``atol + rtol·|y|``
componentwise); the error of what a caller reads — an event time after a long plateau, a curve
through a drop — is that local error propagated through the flow, and is not known from the
tolerances.  So a run's accuracy is **measured after the fact**: ``extra["refine"](factor)``
re-solves the same problem over the same window (to the run's end, no stop rule) at
``factor`` × tighter tolerances, and :func:`compare_solutions` gives the differences in the
event times (in ln t) and in any observable on the record grid — an estimate of the coarser
run's error (the finer one's is ``factor`` × smaller while the error shrinks with the
tolerance).  ``rtol`` and ``atol`` are recorded in the solution as the solver received them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..core._threads import one_blas_thread

__all__ = ["AdaptiveSolution", "SolverWork", "integrate_adaptive", "adaptive_work", "STEP_OVERHEAD",
           "compare_solutions", "RunDifference"]

#: flop-equivalents of one Python-level call into the solver's step (interpreter overhead of
#: a SciPy step ≈ 50–100 µs at the ≈ 1e9 flop-equivalents per second the budgets assume)
STEP_OVERHEAD = 5e4
#: flop-equivalents of one Python-level right-hand side or Jacobian call (≈ 20 µs)
CALL_OVERHEAD = 2e4
#: an LU factorisation (LAPACK, blocked, one thread) runs ≈ 20× the flop rate the budgets
#: assume for numpy-level work, so its ⅔n³ flops count for this fraction
LU_EFFICIENCY = 0.05


#: per solver, as seen on gradient flows (benchmarks/bench_adaptive.py): right-hand sides per
#: accepted step, accepted steps per LU factorisation, accepted steps per Jacobian, and accepted
#: steps relative to BDF at the same tolerances.  LSODA refactorises only with a new Jacobian and
#: takes Adams steps (no factorisation) while the flow is not stiff — the more so the larger the
#: system (its stiffness switch weighs the cost of a factorisation): its steps per Jacobian grow
#: like n/15 beyond 300 states (measured: every 15–25 steps at n ≤ 600, 35–110 at n = 1161)
_SOLVER_RATIOS = {"BDF": (3.0, 5.0, 50.0, 1.0), "LSODA": (2.0, 20.0, 20.0, 1.8)}


def adaptive_work(n: int, steps: float, fun_cost: float, jac_cost: float, lu_flops: float | None = None,
                  method: str = "BDF") -> float:
    """A priori work (flop-equivalents) of ``steps`` accepted BDF steps' worth of an implicit
    solver on n states, counted as :func:`integrate_adaptive` counts it, with the ratios the
    solver shows on gradient flows (:data:`_SOLVER_RATIOS`; BDF: ≈ 3 right-hand sides per step, a
    factorisation every 5 steps, a Jacobian every 50); ``lu_flops``: one factorisation (default
    a dense LU ⅔n³)."""
    fun_per, lu_every, jac_every, more_steps = _SOLVER_RATIOS[method]
    if method == "LSODA":
        lu_every = jac_every = max(lu_every, n / 15.0)
    lu = (2.0 / 3.0) * n**3 if lu_flops is None else lu_flops
    return more_steps * steps * (STEP_OVERHEAD + fun_per * (fun_cost + CALL_OVERHEAD)
                                 + (jac_cost + CALL_OVERHEAD) / jac_every + LU_EFFICIENCY * lu / lu_every)


@dataclass
class SolverWork:
    """The solver's own counters and the work they amount to (flop-equivalents)."""

    steps: int = 0
    nfev: int = 0
    njev: int = 0
    nlu: int = 0
    flops: float = 0.0

    def as_dict(self) -> dict:
        return {"steps": self.steps, "nfev": self.nfev, "njev": self.njev, "nlu": self.nlu,
                "work": self.flops}


@dataclass
class AdaptiveSolution:
    """A recorded run: ``t`` (record times reached, then the end time), ``y`` (len(t), n),
    first event crossing times (nan: none), why it stopped and the work it took.
    ``extra["resume"](until)`` continues the same solver (no stop rule) to time ``until`` and
    returns the extended solution (record times beyond the old end are filled in);
    ``extra["refine"](factor, budget)`` re-solves the same problem from 0 to ``t_end`` (no stop
    rule, the same record times and events) with rtol and atol divided by ``factor``."""

    t: np.ndarray
    y: np.ndarray
    events: np.ndarray
    t_end: float
    stopped: str  # "stop" | "t_max" | "budget"
    work: SolverWork
    method: str
    rtol: float
    atol: float
    extra: dict = field(default_factory=dict)


def _root(f: Callable[[float], float], a: float, b: float, fa: float, fb: float) -> float:
    """A sign change of f in [a, b] (fa < 0 ≤ fb at the accepted steps), by Brent's method to
    ~1e-14 relative on f (the dense output); where the dense output does not reproduce the sign
    change at the ends (a loose tolerance: the interpolant and the steps disagree), the linear
    interpolation of the step values."""
    if fb == 0.0:
        return b
    from scipy.optimize import brentq

    ga, gb = f(a), f(b)
    if not (ga < 0.0 <= gb):
        return a + (b - a) * (-fa) / (fb - fa)
    if gb == 0.0:
        return b
    return float(brentq(f, a, b, xtol=1e-14 * max(abs(b), 1e-300), rtol=4 * np.finfo(float).eps, maxiter=200))


def integrate_adaptive(fun, y0, t_max: float, *, jac=None, method: str = "BDF", rtol: float = 1e-8,
                       atol: float | np.ndarray = 1e-12, record=None, events=None,
                       stop: Callable[[float, np.ndarray, np.ndarray], bool] | None = None,
                       fun_cost: float = 0.0, jac_cost: float = 0.0, budget: float = math.inf,
                       first_step: float | None = None, tick=None, latest: bool = False,
                       what: str = "gradient flow") -> AdaptiveSolution:
    r"""Integrate $\dot y=f(t,y)$ from 0 to at most ``t_max`` (see the module docstring).

    ``record``: increasing times at which y is kept (from the dense output; the end point is
    always appended).  ``events(t, y) -> array``: components whose first crossing from below
    0 to ≥ 0 is located (a component already ≥ 0 at t = 0 crosses at 0).  ``stop(t, y, ev)``
    (``ev``: the event times so far) ends the run after an accepted step.  ``latest``: a
    component that falls back below 0 (at an accepted step) loses its time (nan) and may cross
    again, so ``ev`` holds, for the components ≥ 0 now, the crossing after which they stayed;
    the crossings undone are kept as (component, time) in ``extra["undone"]``.  ``fun_cost`` and
    ``jac_cost``: flops of one call of each beyond the call overhead.  ``tick(fraction, what)``
    is called every 200 steps.  Where y holds several independent systems (a block-diagonal
    Jacobian), the error control is on the RMS over all of them, so one system's local error is
    at most √(number of systems) × (atol + rtol·|y|) in RMS."""
    from scipy.integrate import BDF, LSODA, RK45, DOP853, Radau

    solvers = {"BDF": BDF, "Radau": Radau, "LSODA": LSODA, "RK45": RK45, "DOP853": DOP853}
    if method not in solvers:
        raise ValueError(f"unknown method {method!r}")
    y0 = np.asarray(y0, dtype=float)
    y_init = y0.copy()  # for a re-solve (the solver may hold y0 itself)
    n = y0.size
    rec = np.asarray(record if record is not None else [], dtype=float)
    kw = {"jac": jac} if jac is not None and method in ("BDF", "Radau", "LSODA") else {}
    if first_step is not None:
        kw["first_step"] = first_step
    cls = solvers[method]
    solver = cls(fun, 0.0, y0, t_max, rtol=rtol, atol=atol, **kw)
    ts: list[float] = []
    ys: list[np.ndarray] = []
    i_rec = 0
    while i_rec < rec.size and rec[i_rec] <= 0.0:
        ts.append(float(rec[i_rec]))
        ys.append(y0.copy())
        i_rec += 1
    g0 = np.asarray(events(0.0, y0), float) if events is not None else np.zeros(0)
    ev = np.where(g0 >= 0, 0.0, np.nan)
    work = SolverWork()
    lu_cost = LU_EFFICIENCY * (2.0 / 3.0) * n**3

    def account() -> None:
        work.nfev = int(solver.nfev)
        work.njev = int(getattr(solver, "njev", 0))
        work.nlu = int(getattr(solver, "nlu", 0))
        work.flops = (work.steps * STEP_OVERHEAD + work.nfev * (fun_cost + CALL_OVERHEAD)
                      + work.njev * (jac_cost + CALL_OVERHEAD) + work.nlu * lu_cost)

    state: dict[str, Any] = {"i_rec": i_rec, "g_prev": g0}
    undone: list[tuple[int, float]] = []

    def advance(until: float, stop_fn) -> str:
        stopped = "t_max"
        with np.errstate(under="ignore"), one_blas_thread():
            while solver.status == "running" and solver.t < until:
                t_old = solver.t
                msg = solver.step()
                work.steps += 1
                account()
                if solver.status == "failed":
                    from ..core import NumericalTrouble

                    raise NumericalTrouble(f"{what}: the {method} solver failed at t = {t_old:.4g}: {msg}")
                t_new, y_new = solver.t, solver.y
                if not np.all(np.isfinite(y_new)):
                    from ..core import NumericalTrouble

                    raise NumericalTrouble(f"{what}: the state became non-finite at t = {t_new:.4g}")
                dense = None
                i = state["i_rec"]
                if i < rec.size and rec[i] <= t_new:
                    dense = solver.dense_output()
                    j = int(np.searchsorted(rec, t_new, side="right"))
                    block = rec[i:j]
                    ts.extend(block.tolist())
                    ys.extend(np.asarray(dense(block)).T)
                    state["i_rec"] = j
                if events is not None:
                    g_prev = state["g_prev"]
                    g_new = np.asarray(events(t_new, y_new), float)
                    if latest:
                        for c in np.flatnonzero(np.isfinite(ev) & (g_new < 0)):
                            undone.append((int(c), float(ev[c])))
                            ev[c] = np.nan
                    for c in np.flatnonzero(np.isnan(ev) & (g_prev < 0) & (g_new >= 0)):
                        dense = dense or solver.dense_output()
                        f = lambda s, c=c, dn=dense: float(np.asarray(events(s, dn(s)), float)[c])  # noqa: E731
                        ev[c] = _root(f, t_old, t_new, float(g_prev[c]), float(g_new[c]))
                    state["g_prev"] = g_new
                if tick is not None and work.steps % 200 == 0:
                    tick(min(t_new / t_max, 1.0), what)
                if work.flops > budget:
                    return "budget"
                if stop_fn is not None and stop_fn(t_new, y_new, ev):
                    return "stop"
        return stopped

    def finish(stopped: str) -> AdaptiveSolution:
        tt, yy = list(ts), list(ys)
        if not tt or tt[-1] < solver.t:
            tt.append(float(solver.t))
            yy.append(np.array(solver.y, copy=True))
        sol = AdaptiveSolution(np.asarray(tt), np.asarray(yy).reshape(len(tt), n), ev.copy(), float(solver.t),
                               stopped, work, method, float(rtol), float(np.max(atol)))
        sol.extra["resume"] = lambda until: finish(_resumed(stopped, advance(until, None)))
        sol.extra["undone"] = list(undone)
        t_end = float(solver.t)
        sol.extra["refine"] = lambda factor, budget=math.inf: integrate_adaptive(
            fun, y_init, t_end, jac=jac, method=method, rtol=rtol / factor, atol=np.asarray(atol) / factor,
            record=rec[rec <= t_end], events=events, fun_cost=fun_cost, jac_cost=jac_cost, budget=budget,
            first_step=first_step, tick=tick, latest=latest, what=f"{what} (re-solved at {factor:g}× tighter tolerances)")
        return sol

    return finish(advance(t_max, stop))


def _resumed(before: str, now: str) -> str:
    """A run that had stopped on its condition and was continued keeps that reason unless the
    continuation itself ran out of budget."""
    return now if now == "budget" or before != "stop" else "stop"


@dataclass
class RunDifference:
    """Two solutions of the same problem compared: per event component, |ln t_a − ln t_b|
    (0 where both are nan, or both 0; inf where only one solution has the event); per record
    time both reached, the observable's difference (``values``: (times, ...)); ``times``: those
    record times."""

    events: np.ndarray
    values: np.ndarray
    times: np.ndarray

    @property
    def event_error(self) -> float:
        return float(np.max(self.events, initial=0.0))

    @property
    def value_error(self) -> float:
        return float(np.max(np.abs(self.values), initial=0.0))


def compare_solutions(a: AdaptiveSolution, b: AdaptiveSolution, observe=None) -> RunDifference:
    """The differences between two solutions of one problem on the same record times (e.g. a run
    and its ``extra["refine"]`` re-solve): event times in ln t, and ``observe(y)`` (y: (times,
    n); default y itself) at the record times both solutions reached (their appended end points
    excluded unless they coincide)."""
    ea, eb = np.asarray(a.events, float), np.asarray(b.events, float)
    fa, fb = np.isfinite(ea), np.isfinite(eb)
    ev = np.zeros(ea.shape)
    ev[fa != fb] = np.inf
    both = fa & fb
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.abs(np.log(ea[both]) - np.log(eb[both]))
    ev[both] = np.where(ea[both] == eb[both], 0.0, d)
    n = 0
    while n < min(a.t.size, b.t.size) and a.t[n] == b.t[n]:
        n += 1
    obs = observe if observe is not None else (lambda y: y)
    values = (np.asarray(obs(a.y[:n])) - np.asarray(obs(b.y[:n]))) if n else np.zeros((0,))
    return RunDifference(ev, values, a.t[:n].copy())
