r"""Lockstep integration of a batch of independent stiff systems: one adaptive implicit
multistep method per row, all rows advanced together.

Many independent copies of one gradient flow (seeds, ranks, and each run's accuracy re-solve)
cost mostly interpreter overhead when each is stepped by its own solver: the arithmetic per
step is small, the steps many.  :func:`integrate_batch` keeps every row's own step size,
order, history and error control, but takes the steps of all rows in the same vectorised
operations, so the number of Python-level iterations is that of the hardest row, not the sum.

The method is the variable-order (1–5), variable-step **numerical differentiation formulas**
(NDF) of Shampine & Reichelt (SIAM J. Sci. Comput. 18, 1997) in backward-difference form: the
BDFs with the κ corrections that enlarge their steps at orders 1–4.  Per row and step: predict
from the differences, solve the corrector by a simplified Newton iteration with the row's
factorisation of $I-cJ$ ($c=h/((1-\kappa_k)\gamma_k)$), estimate the local error from the
corrector's difference, accept or shrink the step; after $k+1$ accepted steps at one step size,
choose the order among $k-1,k,k+1$ and a new step size.

The linear algebra is the caller's (:class:`DenseNewton` inverts dense Jacobians; a field with
structure supplies its own, e.g. block-diagonal plus low rank): ``newton.factor(rows, t, y, c)``
prepares $I-cJ(t,y)$ for those rows (returning False if it is singular), ``newton.solve(rows, r)``
solves with it.  A factorisation is kept while the row's $c$ stays within 30 % of the $c$ it was
made for (:data:`_REUSE`); a Newton failure with an old Jacobian (or a factorisation kept for
another $c$) re-factorises at the current point, one with a fresh Jacobian halves the step.

Error control is per row on the RMS over the row's own ``sizes[b]`` components (rows may be
zero-padded to a common width; padded components must stay exactly zero): each step's local
error estimate is kept below ``atol + rtol·|y|`` in that norm.  Work is counted in
flop-equivalents from the counters (iterations, right-hand-side rows, factorisations, solves,
at the costs the caller gives); the run stops when a budget is spent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["integrate_batch", "batch_work", "BatchRun", "BatchWork", "DenseNewton", "NDF_KAPPA",
           "ITERATION_OVERHEAD", "BLAS3_WORK"]

MAX_ORDER = 5
#: the NDF corrections κ_k, k = 1..5 (Shampine & Reichelt, Table 1; κ_5 = 0: BDF5)
NDF_KAPPA = np.array([0.0, -0.1850, -1.0 / 9.0, -0.0823, -0.0415, 0.0])
_GAMMA = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, MAX_ORDER + 1))])
_ALPHA = (1.0 - NDF_KAPPA) * _GAMMA
#: local error constant of order k (index k = 1..6; 0 unused): κ_kγ_k + 1/(k+1)
_ERR = np.concatenate([NDF_KAPPA * _GAMMA + 1.0 / np.arange(1, MAX_ORDER + 2), [1.0 / (MAX_ORDER + 2)]])
_NEWTON_MAXITER = 4
#: the corrector is iterated until its remaining change is below this fraction of the local error
#: tolerance (in the error norm)
_NEWTON_TOL = 0.03
_MIN_FACTOR, _MAX_FACTOR = 0.2, 10.0
#: a row's factorisation of I − c_f J is kept for a step with another c while |c/c_f − 1| is at
#: most this (the rule of Hindmarsh's LSODE/VODE): the corrector's fixed point does not depend
#: on the iteration matrix, only its contraction, whose factor is then up to |c/c_f − 1| (for a
#: symmetric dissipative J) — folded into the row's convergence-rate estimate, so a corrector
#: that does not converge fast enough is refactorised as before.  Measured on Figs. 3 and 4's
#: flows: 2.8× fewer factorisations for 4–5 % more steps (benchmarks/bench_flows.py)
_REUSE = 0.3
#: flop-equivalents of one lockstep iteration's interpreter and numpy-call overhead (predictor,
#: corrector iterations, error control, order and step changes, dense output): ≈ 0.2–0.35 ms of
#: CPU an iteration on the project machine (0.16 ms on a trivial field; Fig. 3's two simulators
#: 0.24 and 0.38 ms with their small fields and solves), at its ≈ 3e9 flop-equivalents per
#: second (:data:`icltheory.core.WORK_RATE`) ≈ 1e6
ITERATION_OVERHEAD = 1e6
#: flop-equivalents per flop of a batched BLAS-3 kernel (matrix products of many rows at once, a
#: batched inverse): such kernels run ≈ 20× faster than the ≈ 1e9 flop-equivalents per second the
#: budgets assume (measured on the finite-sample flow's Jacobian and inverse, D = 4 … 7)
BLAS3_WORK = 0.05

#: states at record times observed in one call (a few hundred: the call's overhead shared, the
#: states kept meanwhile a small multiple of one iteration's)
_OBSERVE_BATCH = 256

_K = MAX_ORDER + 1  # differences 0..k used by the predictor and the dense output
_J = np.arange(_K)
_INV_J = 1.0 / np.arange(1, _K)
# per order k: the predictor's weights (Σ_{j≤k} ∇^j y) and ψ's (Σ_{1≤j≤k} γ_j ∇^j y / α_k)
_PW = np.zeros((_K, 2, _K))
for _k in range(1, _K):
    _PW[_k, 0, :_k + 1] = 1.0
    _PW[_k, 1, 1:_k + 1] = _GAMMA[1:_k + 1] / _ALPHA[_k]
_C_OF = np.zeros(_K)
_C_OF[1:] = 1.0 / _ALPHA[1:]
# signed binomials (−1)^m C(j, m): values at unit spacing → backward differences
_BINOM = np.array([[(-1.0) ** m * math.comb(j, m) if m <= j else 0.0 for m in range(_K)] for j in range(_K)])


#: per accepted row step, as seen on gradient flows (Figs. 3 and 4 and the held-out spectra of
#: benchmarks/bench_flows.py): right-hand sides (and solves) ≈ 2.1, factorisations ≈ 0.065 (kept
#: while c moves less than :data:`_REUSE`); lockstep iterations ≈ 1.05 × the most steps any row takes
_PER_STEP = {"fun": 2.1, "factor": 0.065, "iterations": 1.05}


def batch_work(steps, *, fun_cost, factor_cost, solve_cost) -> float:
    """A priori work (flop-equivalents) of :func:`integrate_batch` on rows expected to take
    ``steps`` accepted steps each (sequences of per-row costs allowed), counted as the run counts
    it (:data:`_PER_STEP`)."""
    steps = np.asarray(steps, float)
    per_row = (_PER_STEP["fun"] * (np.asarray(fun_cost, float) + np.asarray(solve_cost, float))
               + _PER_STEP["factor"] * np.asarray(factor_cost, float))
    return float(_PER_STEP["iterations"] * steps.max() * ITERATION_OVERHEAD + np.sum(steps * per_row))


def _newton_basis(s: np.ndarray) -> np.ndarray:
    """C_j(s) = s(s+1)…(s+j−1)/j!, j = 0..5 (the Newton backward-difference basis): shape
    np.shape(s) + (6,)."""
    s = np.asarray(s, float)
    out = np.empty(s.shape + (_K,))
    out[..., 0] = 1.0
    # C_j = C_{j−1}·(s + j − 1)/j: a running product of (s + j − 1)/j, j = 1..5
    np.cumprod((s[..., None] + _J[:-1]) * _INV_J, axis=-1, out=out[..., 1:])
    return out


class DenseNewton:
    """Dense linear algebra for :func:`integrate_batch`: ``jac(t, y)`` ((r,), (r, n) → (r, n,
    n)); the factorisation is the explicit inverse of I − cJ (batched), kept per row."""

    def __init__(self, jac: Callable, rows: int, n: int, jac_cost: float = 0.0):
        self.jac = jac
        self.inv = np.zeros((rows, n, n))
        self.n = n
        self.rows = np.arange(rows)
        #: flop-equivalents per row of one factorisation (its Jacobian included) and one solve
        self.factor_cost = jac_cost + BLAS3_WORK * 2.0 * n**3
        self.solve_cost = 2.0 * n * n

    def select(self, rows: np.ndarray, cols: np.ndarray | None = None) -> None:
        """The working rows of the next factorisations and solves (all columns)."""
        if cols is not None:
            raise ValueError("DenseNewton works on all columns")
        self.rows = rows

    def factor(self, pos: np.ndarray, t: np.ndarray, y: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Factorise I − cJ(t, y) for the working rows at positions ``pos``; per row: not singular."""
        A = np.eye(self.n)[None] - c[:, None, None] * self.jac(t, y)
        ok = np.ones(pos.size, bool)
        try:
            self.inv[self.rows[pos]] = np.linalg.inv(A)
        except np.linalg.LinAlgError:
            for i in range(pos.size):
                try:
                    self.inv[self.rows[pos[i]]] = np.linalg.inv(A[i])
                except np.linalg.LinAlgError:
                    ok[i] = False
        return ok

    def solve(self, r: np.ndarray) -> np.ndarray:
        """Solve with every working row's factorisation."""
        return np.einsum("rij,rj->ri", self.inv[self.rows], r)


@dataclass
class BatchWork:
    """Counters of a batch run and the work they amount to (flop-equivalents)."""

    iterations: int = 0
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0, int))  # accepted steps per row
    nfev: int = 0  # right-hand-side rows evaluated
    nfactor: int = 0  # row factorisations
    nsolve: int = 0  # row solves
    flops: float = 0.0

    def as_dict(self) -> dict:
        return {"iterations": self.iterations, "steps": int(self.steps.sum()), "nfev": self.nfev,
                "nfactor": self.nfactor, "nsolve": self.nsolve, "work": self.flops}


@dataclass
class BatchRun:
    """A batch run: the record times ``t``; per row the observed values there (``obs`` (B, T,
    ...), nan after the row's end), first event crossings (``events`` (B, ne), nan: none; with
    ``latest`` the crossing after which the component stayed ≥ 0), the crossings undone (per
    row (component, time)), the end time and state of each row, whether the budget stopped it,
    the counters, the tolerances."""

    t: np.ndarray
    obs: np.ndarray
    events: np.ndarray
    undone: list
    t_end: np.ndarray
    y: np.ndarray
    budget_hit: bool
    work: BatchWork
    rtol: np.ndarray


def _root(f: Callable[[float], float], a: float, b: float, fa: float, fb: float) -> float:
    """A sign change of f in [a, b] (fa < 0 ≤ fb), by the Illinois variant of regula falsi
    (bisection when it stalls), to 1e-14 relative in t."""
    if fb == 0.0:
        return b
    side = 0
    for _ in range(200):
        if b - a <= 1e-14 * max(abs(b), 1e-300):
            break
        x = b - fb * (b - a) / (fb - fa)
        if not a < x < b:
            x = 0.5 * (a + b)
        fx = f(x)
        if fx >= 0.0:
            b, fb = x, fx
            if side == 1:
                fa *= 0.5
            side = 1
        else:
            a, fa = x, fx
            if side == -1:
                fb *= 0.5
            side = -1
    return b


def _update_tables() -> np.ndarray:
    """Per order k, the map of an accepted step on the differences and the corrector's difference
    d (kept after them, :data:`_D_ROW`), D' = A_k D + b_k d: ∇^j y_{n+1} = d + Σ_{j≤i≤k} ∇^i y_n
    (j ≤ k), ∇^{k+1} y_{n+1} = d, ∇^{k+2} y_{n+1} = d − ∇^{k+1} y_n; as one matrix [A_k b_k] (its
    last row zero)."""
    A = np.zeros((_K, MAX_ORDER + 4, MAX_ORDER + 4))
    b = A[:, :, _D_ROW]
    for k in range(1, _K):
        for j in range(k + 1):
            A[k, j, j:k + 1] = 1.0
            b[k, j] = 1.0
        b[k, k + 1] = 1.0
        A[k, k + 2, k + 1] = -1.0
        b[k, k + 2] = 1.0
        for j in range(k + 3, MAX_ORDER + 3):
            A[k, j, j] = 1.0
    return A


#: where each row's array of differences keeps the corrector's difference d of the step being taken
_D_ROW = MAX_ORDER + 3
_UPD = _update_tables()
#: per order k, the entries (j, i ≤ k) a step-size change acts on; the identity elsewhere
_KEEP = (_J[None, :, None] <= _J[:, None, None]) & (_J[None, None, :] <= _J[:, None, None])
_EYE = np.eye(_K)


def _rescale_matrices(order: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """Per row, the map of the first six differences for a step ``ratio`` × the old one (the
    interpolating polynomial of order ``order`` evaluated at the new spacing and differenced
    again; identity beyond the order)."""
    C = _newton_basis(-_J[None, :] * ratio[:, None])  # (r, m, i) = C_i(−mρ)
    return np.where(_KEEP[order], _BINOM @ C, _EYE)


def integrate_batch(fun: Callable, y0: np.ndarray, *, newton, t_bound: np.ndarray, rtol, atol, first_step,
                    sizes=None, record=None, observe: Callable | None = None, events: Callable | None = None,
                    control: Callable | None = None, layout: Callable | None = None, fun_cost=0.0,
                    budget: float = math.inf, latest: bool = False, tick=None,
                    what: str = "gradient flow") -> BatchRun:
    r"""Integrate the rows $\dot y_b=f(t,y_b)$ of ``y0`` (B, n) from t = 0, each up to its bound
    ``t_bound[b]`` (a (B,) array read every iteration: ``control`` may lower it to pause a row
    or raise it to continue one), in lockstep (see the module docstring); ends when no row is
    below its bound, or the budget is spent.

    ``fun(t, y)``: t (r,), y (r, n) → (r, n).  ``newton``: :class:`DenseNewton` or a structured
    solver with the same ``select``/``factor``/``solve`` methods and ``factor_cost`` /
    ``solve_cost``.  ``rtol`` (scalar or (B,)), ``atol`` (scalar, (B,) or (B, n)); ``sizes``:
    each row's number of real components (the error norm's denominator; default n).
    ``record``: increasing times at which ``observe(y)`` ((r, n) → (r, ...); default y) is kept
    for every row, from the dense output (``observe`` is called on the states of several steps
    and rows at once, so it must act on each row alone).  ``events(y)`` ((r, n) → (r, ne)): components whose
    first crossing from below 0 to ≥ 0 is located on the dense output (≥ 0 at t = 0: time 0);
    with ``latest`` a component falling back below 0 (at an accepted step) loses its time and
    may cross again.  ``control(rows, t, ev)`` is called, with the rows that accepted a step,
    their times and event times, whenever a step changed some row's event times or brought a row
    to its bound; it returns True when it changed ``t_bound``.  ``layout(rows)``:
    the columns the rows ``rows`` use (the others are zero padding in all of them), or None for
    all: whenever the working set of rows changes, the rows are integrated on those columns only
    (``fun``, ``observe``, ``events`` and ``newton`` then see that many columns).
    ``first_step``: scalar or (B,).  ``fun_cost``: flops of one row of ``fun`` (or a function of
    the number of working columns).  ``tick(fraction, what)`` every 200 iterations.  BLAS runs on one thread
    (the products are small; see :mod:`icltheory.core._threads`)."""
    from ..core._threads import one_blas_thread

    with one_blas_thread():
        return _integrate_batch(fun, y0, newton=newton, t_bound=t_bound, rtol=rtol, atol=atol, first_step=first_step,
                                sizes=sizes, record=record, observe=observe, events=events, control=control,
                                layout=layout, fun_cost=fun_cost, budget=budget, latest=latest, tick=tick,
                                what=what)


def _integrate_batch(fun, y0, *, newton, t_bound, rtol, atol, first_step, sizes, record, observe, events, control,
                     layout, fun_cost, budget, latest, tick, what) -> BatchRun:
    # a trial step too long may overflow or divide by zero: such a row's corrector fails (or its
    # error estimate is not finite) and the step is shortened
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _lockstep(fun, y0, newton=newton, t_bound=t_bound, rtol=rtol, atol=atol, first_step=first_step,
                         sizes=sizes, record=record, observe=observe, events=events, control=control, layout=layout,
                         fun_cost=fun_cost, budget=budget, latest=latest, tick=tick, what=what)


def _lockstep(fun, y0, *, newton, t_bound, rtol, atol, first_step, sizes, record, observe, events, control, layout,
              fun_cost, budget, latest, tick, what) -> BatchRun:
    y0 = np.asarray(y0, dtype=float)
    B, n = y0.shape
    rtol_f = np.broadcast_to(np.asarray(rtol, float), (B,)).copy()
    atol_f = np.asarray(atol, float)
    atol_f = np.broadcast_to(atol_f[:, None] if atol_f.ndim == 1 else atol_f, (B, n)).copy()
    sizes_f = np.full(B, float(n)) if sizes is None else np.asarray(sizes, float)
    ntol_f = np.maximum(10 * np.finfo(float).eps / rtol_f, _NEWTON_TOL)
    bound = t_bound
    rec = np.asarray(record if record is not None else [], float)
    rec_next = np.append(rec, np.inf)  # the record after index i (inf past the last)
    obs_fn = observe if observe is not None else (lambda y: y)
    first_obs = np.asarray(obs_fn(y0))
    obs = np.full((B, rec.size) + first_obs.shape[1:], np.nan)
    i0 = int(np.searchsorted(rec, 0.0, side="right"))
    obs[:, :i0] = first_obs[:, None]
    # the full state of every row (the working set's copies are written back when it changes)
    t_f = np.zeros(B)
    h_f = np.broadcast_to(np.asarray(first_step, float), (B,)).copy()
    D_f = np.zeros((B, MAX_ORDER + 4, n))  # the differences, then d (_D_ROW)
    D_f[:, 0] = y0
    D_f[:, 1] = h_f[:, None] * np.asarray(fun(t_f, y0))
    k_f = np.ones(B, int)
    ne_f = np.zeros(B, int)
    fc_f = np.full(B, np.nan)  # the c each row's factorisation is for (nan: none)
    fr_f = np.zeros(B, bool)  # the factorisation's Jacobian is at the row's current point
    cr_f = np.full(B, 0.7)  # each row's estimate of its corrector's convergence rate
    ir_f = np.full(B, i0)
    g_f = np.asarray(events(y0), float) if events is not None else np.zeros((B, 0))
    ev_f = np.where(g_f >= 0, 0.0, np.nan)
    work = BatchWork(steps=np.zeros(B, int))
    undone: list[list[tuple[int, float]]] = [[] for _ in range(B)]
    safety_of = 0.9 * (2 * _NEWTON_MAXITER + 1) / (2 * _NEWTON_MAXITER + np.arange(_NEWTON_MAXITER + 1))
    budget_hit = False
    names = ("t", "h", "D", "k", "ne", "fc", "fr", "cr", "ir", "g", "ev", "atol", "rtol", "sizes", "ntol")
    full = {"t": t_f, "h": h_f, "D": D_f, "k": k_f, "ne": ne_f, "fc": fc_f, "fr": fr_f, "cr": cr_f, "ir": ir_f,
            "g": g_f, "ev": ev_f, "atol": atol_f, "rtol": rtol_f, "sizes": sizes_f, "ntol": ntol_f}
    act = np.zeros(0, int)
    w: dict = {}
    # the states at record times wait here and are observed together (one ``obs_fn`` call per
    # :data:`_OBSERVE_BATCH` of them instead of one per step): before the working columns
    # change (``obs_fn`` sees the working width) and at the end
    pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    n_pending = [0]

    def observe_pending() -> None:
        if not pending:
            return
        rows_p = np.concatenate([r_ for r_, _, _ in pending])
        ii_p = np.concatenate([i_ for _, i_, _ in pending])
        y_p = pending[0][2] if len(pending) == 1 else np.concatenate([y_ for _, _, y_ in pending])
        obs[rows_p, ii_p] = np.asarray(obs_fn(y_p))
        pending.clear()
        n_pending[0] = 0

    last = [0, 0, 0, 0]  # the counters at the last accounting
    unit = [0.0, 0.0, 0.0]  # a row's right-hand side, factorisation and solve at the working set's width

    def account() -> None:  # the work since the last accounting, at the current width's costs
        now_ = (work.iterations, work.nfev, work.nfactor, work.nsolve)
        work.flops += ((now_[0] - last[0]) * ITERATION_OVERHEAD + (now_[1] - last[1]) * unit[0]
                       + (now_[2] - last[2]) * unit[1] + (now_[3] - last[3]) * unit[2])
        last[:] = now_

    cols: np.ndarray | None = None  # the working columns (None: all)

    def store() -> None:
        for k_ in ("t", "h", "k", "ne", "fc", "fr", "cr", "ir", "g", "ev"):
            full[k_][act] = w[k_]
        work.steps[act] += steps_w
        if cols is None:
            D_f[act] = w["D"]
        else:
            D_f[np.ix_(act, np.arange(MAX_ORDER + 4), cols)] = w["D"]

    recheck = True
    steps_w = np.zeros(0, int)
    orders_changed = True
    while True:
        if recheck:  # the working set: the rows below their bounds, and the columns they use
            t_cur = t_f.copy()
            if act.size:
                t_cur[act] = w["t"]
            now = np.flatnonzero(t_cur < bound)
            if now.size != act.size or np.any(now != act):
                account()
                observe_pending()
                if act.size:
                    store()
                act = now
                if not act.size:
                    break
                new_cols = layout(act) if layout is not None else None
                w = {k_: full[k_][act] for k_ in names if k_ not in ("D", "atol")}
                if new_cols is None:
                    w["D"], w["atol"] = D_f[act], atol_f[act]
                else:
                    w["D"] = D_f[np.ix_(act, np.arange(MAX_ORDER + 4), new_cols)]
                    w["atol"] = atol_f[np.ix_(act, new_cols)]
                cols = new_cols
                newton.select(act, cols)
                width = n if cols is None else len(cols)
                unit[:] = (fun_cost(width) if callable(fun_cost) else fun_cost, newton.factor_cost, newton.solve_cost)
                steps_w = np.zeros(act.size, int)
            if not act.size:
                break
            t, h, Dw, kr, fc, fresh, ne, crate = w["t"], w["h"], w["D"], w["k"], w["fc"], w["fr"], w["ne"], w["cr"]
            atol_w, rtol_w, sizes_w, ntol_w = w["atol"], w["rtol"], w["sizes"], w["ntol"]
            D_next = np.empty_like(Dw)  # the differences after a step every row accepts (then swapped)
            rtol_col, inv_sizes = rtol_w[:, None], 1.0 / sizes_w
            bw = bound[act]
            next_rec = rec_next[w["ir"]]
            recheck = False
            orders_changed = True
        if orders_changed:  # the tables of the rows' orders
            PWk, Ck, ERRk = _PW[kr], _C_OF[kr], _ERR[kr][:, None]
            orders_changed = False
        work.iterations += 1
        # the step, clipped at the bound (the differences re-expressed for it)
        t_new = t + h
        clip = t_new >= bw - 1e-12 * h
        if clip.any():
            ci = np.flatnonzero(clip)
            hb = bw[ci] - t[ci]
            Dw[ci, :_K] = _rescale_matrices(kr[ci], hb / h[ci]) @ Dw[ci, :_K]
            ne[ci] = 0
            h[ci] = hb
            t_new[ci] = bw[ci]
        yp = PWk @ Dw[:, :_K]
        y_pred, psi = yp[:, 0], yp[:, 1]
        c = h * Ck
        mismatch = np.abs(c / fc - 1.0)  # nan: no factorisation
        need = ~(mismatch <= _REUSE)
        # a factorisation kept for another c is not of this attempt's point: a Newton failure
        # with it refactorises before it halves the step
        fresh &= ~(mismatch > 0.0)
        if need.any():
            pi = np.flatnonzero(need)
            ok = newton.factor(pi, t_new[pi], y_pred[pi], c[pi])
            fc[pi] = np.where(ok, c[pi], np.nan)
            mismatch[pi] = np.where(ok, 0.0, np.nan)
            fresh[pi] = True  # a singular matrix at the current point: the step is halved
            crate[pi] = 0.7
            work.nfactor += pi.size
        # simplified Newton on the corrector; rows stop iterating as they converge or fail.  Its
        # convergence is judged from the contraction rate: measured from the second iteration on,
        # before that the row's last measured rate (so a corrector can converge in one iteration)
        y = y_pred.copy()
        d = Dw[:, _D_ROW]
        d[...] = 0.0
        live = np.isfinite(fc)
        # with a factorisation kept for another c the corrector's error contracts by a factor of
        # up to |c/c_f − 1| (J symmetric: on its dissipative directions, and on unstable ones while
        # c_f·λ ≤ ½): the rate estimate starts at least there (fmax: a row without a
        # factorisation keeps its rate)
        crate = np.fmax(crate, mismatch)
        conv = np.zeros(act.size, bool)
        n_iter = np.zeros(act.size, int)
        c_col = c[:, None]
        inv_scale = np.abs(y_pred)
        inv_scale *= rtol_col
        inv_scale += atol_w
        np.divide(1.0, inv_scale, out=inv_scale)
        dn_old = None
        for it in range(_NEWTON_MAXITER):
            res = np.multiply(c_col, fun(t_new, y))
            res -= psi
            res -= d
            dy = newton.solve(res)
            work.nfev += act.size
            work.nsolve += act.size
            q = dy * inv_scale
            dn = np.sqrt(np.einsum("rn,rn->r", q, q) * inv_sizes)
            if dn_old is None:
                step_ok = live & np.isfinite(dn)
                fin = dn * np.minimum(1.0, 2.0 * crate) < ntol_w
            else:
                rate = dn / dn_old
                crate = np.where(live, np.maximum(0.2 * crate, rate), crate)
                step_ok = live & (rate < 1.0) & (rate ** (_NEWTON_MAXITER - it) / (1.0 - rate) * dn <= ntol_w)
                fin = rate / (1.0 - rate) * dn < ntol_w
            if step_ok.all():
                y += dy
                d += dy
            else:
                upd = np.where(step_ok[:, None], dy, 0.0)
                y += upd
                d += upd
            n_iter += step_ok
            fin &= step_ok
            conv |= fin
            live &= step_ok & ~fin
            if not live.any():
                break
            dn_old = dn
        w["cr"] = crate
        # rows whose corrector did not converge: a fresh Jacobian, else half the step
        if not conv.all():
            fi = np.flatnonzero(~conv)
            halve = fi[fresh[fi]]
            fc[fi] = np.nan
            fresh[fi] = False
            if halve.size:
                if np.any(h[halve] <= 1e-13 * np.maximum(t[halve], 1e-300)):
                    from ..core import NumericalTrouble

                    raise NumericalTrouble(f"{what}: the step size fell below 1e-13 × t (the corrector does not "
                                           f"converge at t = {float(np.max(t[halve])):.4g})")
                Dw[halve, :_K] = _rescale_matrices(kr[halve], np.full(halve.size, 0.5)) @ Dw[halve, :_K]
                h[halve] *= 0.5
                ne[halve] = 0
        account()
        # the local error; rejected steps shrink
        e = np.abs(y)
        e *= rtol_col
        e += atol_w
        np.divide(ERRk, e, out=e)
        e *= d
        err = np.sqrt(np.einsum("rn,rn->r", e, e) * inv_sizes)
        safety = safety_of[n_iter]
        acc = conv & (err <= 1.0)
        rej = conv & ~acc
        if rej.any():
            ri = np.flatnonzero(rej)
            with np.errstate(divide="ignore"):
                factor = np.maximum(_MIN_FACTOR, safety[ri] * err[ri] ** (-1.0 / (kr[ri] + 1)))
            Dw[ri, :_K] = _rescale_matrices(kr[ri], factor) @ Dw[ri, :_K]
            h[ri] *= factor
            ne[ri] = 0
        if acc.any():
            all_acc = bool(acc.all())
            aidx = np.flatnonzero(acc)
            ai: slice | np.ndarray = slice(None) if all_acc else aidx
            rows = act if all_acc else act[aidx]
            kc = kr[ai].copy()
            t_old = t[ai].copy()
            t_rows = t_new[ai]
            t[ai] = t_rows
            steps_w[ai] += 1
            fresh[ai] = False
            ne[ai] += 1
            Dk = np.matmul(_UPD[kc], Dw, out=D_next) if all_acc else _UPD[kc] @ Dw[aidx]
            h_used = t_rows - t_old
            # records and events from the dense output of the step just taken (order k, the
            # differences at the new point before any change of step size)
            if (t_rows >= next_rec[ai]).any():
                irw = w["ir"]
                lo = irw[ai]
                hi = np.searchsorted(rec, t_rows, side="right")
                if (hi > lo).any():
                    wi = np.flatnonzero(hi > lo)
                    cnt = hi[wi] - lo[wi]
                    # the states at the record times: per recording row its records (padded to
                    # the most any row has) times its differences, in one einsum (its sums run
                    # in the same order whatever the number of rows and records, so a row's
                    # records do not depend on the rows recording beside it, bit for bit — a
                    # stacked matmul's do: one record takes BLAS's matrix-vector path)
                    span = _J[:1] if cnt.max() == 1 else np.arange(cnt.max())
                    valid = span < cnt[:, None]
                    ii = np.minimum(lo[wi][:, None] + span, rec.size - 1)
                    Cb = (_newton_basis((rec[ii] - t_rows[wi][:, None]) / h_used[wi][:, None])
                          * _PW[kc[wi], 0][:, None, :])
                    Y = np.einsum("wmk,wkn->wmn", Cb, Dk[:, :_K] if wi.size == Dk.shape[0] else Dk[wi, :_K])
                    if valid.all():
                        rr, ii, y_rec = np.repeat(wi, span.size), ii.ravel(), Y.reshape(-1, Y.shape[2])
                    else:
                        rr, ii, y_rec = np.broadcast_to(wi[:, None], valid.shape)[valid], ii[valid], Y[valid]
                    pending.append((rows[rr], ii, y_rec))
                    n_pending[0] += rr.size
                    if n_pending[0] >= _OBSERVE_BATCH:
                        observe_pending()
                    irw[aidx[wi]] = hi[wi]
                    next_rec[aidx[wi]] = rec_next[hi[wi]]
            ev_changed = False
            if events is not None:
                g_new = np.asarray(events(Dk[:, 0]), float)
                gp = w["g"][ai]
                evr = w["ev"][ai]
                flip = (gp < 0) & (g_new >= 0) & np.isnan(evr)
                if latest:
                    drop = (g_new < 0) & np.isfinite(evr)
                    if drop.any():
                        ev_changed = True
                        for j, m in zip(*np.nonzero(drop)):
                            undone[int(rows[j])].append((int(m), float(evr[j, m])))
                        evr = np.where(drop, np.nan, evr)
                if flip.any():
                    ev_changed = True
                    for j, m in zip(*np.nonzero(flip)):
                        coef = Dk[j, :kc[j] + 1].copy()
                        tn, hu = float(t_rows[j]), float(h_used[j])

                        def g_at(x: float, m=m, coef=coef, tn=tn, hu=hu) -> float:
                            yx = _newton_basis(np.array((x - tn) / hu))[:coef.shape[0]] @ coef
                            return float(np.asarray(events(yx[None]), float)[0, m])

                        evr[j, m] = _root(g_at, float(t_old[j]), tn, float(gp[j, m]), float(g_new[j, m]))
                w["ev"][ai] = evr
                w["g"][ai] = g_new
            # after k+1 steps at one step size: the order among k−1, k, k+1 and the step size
            sel = np.flatnonzero(ne[ai] > kc)
            if sel.size:
                sk = kc[sel]
                sar = np.arange(sel.size)
                ga = aidx[sel]
                inv_scl = 1.0 / (atol_w[ga] + rtol_w[ga, None] * np.abs(Dk[sel, 0]))
                ssz = sizes_w[ga]
                lo_e = Dk[sel, sk] * (_ERR[np.maximum(sk - 1, 1)][:, None] * inv_scl)
                hi_e = Dk[sel, sk + 2] * (_ERR[sk + 1][:, None] * inv_scl)
                e_lo = np.where(sk > 1, np.sqrt(np.einsum("rn,rn->r", lo_e, lo_e) / ssz), np.inf)
                e_hi = np.where(sk < MAX_ORDER, np.sqrt(np.einsum("rn,rn->r", hi_e, hi_e) / ssz), np.inf)
                fac = np.stack([e_lo, err[ga], e_hi], axis=1) ** (-1.0 / (sk[:, None] + _J[:3]))
                fac = np.where(np.isnan(fac), 0.0, fac)
                best = np.argmax(fac, axis=1)
                new_k = sk + best - 1
                factor = np.minimum(_MAX_FACTOR, safety[ga] * fac[sar, best])
                Dk[sel, :_K] = _rescale_matrices(new_k, factor) @ Dk[sel, :_K]
                if (new_k != sk).any():
                    kr[ga] = new_k
                    orders_changed = True
                h[ga] *= factor
                ne[ga] = 0
            if all_acc:
                D_next, Dw = Dw, Dk
                w["D"] = Dw
            else:
                Dw[aidx] = Dk
            at_bound = (t_rows >= bw[ai]).any()
            if control is not None and (ev_changed or at_bound) and control(rows, t_rows, w["ev"][ai]):
                recheck = True
            if at_bound:
                recheck = True
        if tick is not None and work.iterations % 200 == 0:
            tick(float(np.min(np.minimum(t / np.maximum(bw, 1e-300), 1.0))), what)
        if work.flops > budget:
            budget_hit = True
            break
    observe_pending()
    if act.size:
        store()
    account()
    return BatchRun(rec, obs, ev_f, undone, t_f.copy(), D_f[:, 0].copy(), budget_hit, work, rtol_f)
