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
from icltheory.dynamics import compare_solutions, integrate_flow

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


# ----------------------------------------------------------------------------- ATTN_S, adaptive


def separate_head_field(lam, N: int, H: int, R: int, B: int = 1):
    r"""The population gradient flow of $B$ independent seed rows of $H$ rank-$R$ separate heads,
    as (rhs, jac, split, costs).  A row's state is $(v\in\mathbb R^H,K\in\mathbb R^{HR\times D},
    Q\in\mathbb R^{HR\times D})$ (piece $p$ of head $\lfloor p/R\rfloor$), rows concatenated;
    with $M=\sum_pv_{h(p)}K_p^\top Q_p$, $E=\Lambda^2-W\circ M$ ($W_{ab}=\mathbb E[\beta\beta^\top]_{aa}
    \lambda_b$) the field is $\dot v_h=\sum_{p\in h}K_pEQ_p^\top$, $\dot K_p=v_{h(p)}EQ_p$,
    $\dot Q_p=v_{h(p)}E^\top K_p$ (the iterates of :func:`~._training.separate_population_gd`
    divided by η).  The Jacobian is analytic and block diagonal over rows: per row the explicit
    factors (E held fixed) plus the Gauss–Newton coupling through M, $-A\,\mathrm{diag}(W)A^\top$
    with $A=\partial f/\partial E=(\partial M/\partial y)^\top$ (n × D²)."""
    lam = np.asarray(lam, float)
    D = lam.size
    W = np.diag(pop.beta_second_moment(lam, N))[:, None] * lam[None, :]
    w = W.ravel()
    L2 = np.diag(lam**2)
    P = H * R
    head = np.repeat(np.arange(H), R)
    n = H + 2 * P * D
    iK = H + np.arange(P * D).reshape(P, D)
    iQ = H + P * D + np.arange(P * D).reshape(P, D)
    eye = np.eye(D)

    def split(y):
        y = y.reshape(B, n)
        return y[:, :H], y[:, H:H + P * D].reshape(B, P, D), y[:, H + P * D:].reshape(B, P, D)

    def field(y):
        v, K, Q = split(y)
        vr = v[:, head]
        M = np.swapaxes(vr[:, :, None] * K, 1, 2) @ Q
        return v, K, Q, vr, L2 - W * M

    def rhs(_t, y):
        v, K, Q, vr, E = field(y)
        KE = K @ E
        QEt = Q @ np.swapaxes(E, 1, 2)
        gv = (KE * Q).sum(-1).reshape(B, H, R).sum(-1)
        return np.concatenate([gv, (vr[:, :, None] * QEt).reshape(B, -1), (vr[:, :, None] * KE).reshape(B, -1)],
                              axis=1).ravel()

    def jac(_t, y):
        v, K, Q, vr, E = field(y)
        KE = K @ E
        QEt = Q @ np.swapaxes(E, 1, 2)
        J = np.zeros((B, n, n))
        hp = head[:, None]
        J[:, hp, iK] = QEt
        J[:, hp, iQ] = KE
        J[:, iK, hp] = QEt
        J[:, iQ, hp] = KE
        J[:, iK[:, :, None], iQ[:, None, :]] = vr[:, :, None, None] * E[:, None]
        J[:, iQ[:, :, None], iK[:, None, :]] = vr[:, :, None, None] * np.swapaxes(E, 1, 2)[:, None]
        A = np.empty((B, n, D * D))
        A[:, :H] = np.einsum("spa,spb->spab", K, Q).reshape(B, H, R, D * D).sum(2)
        A[:, H:H + P * D] = (vr[:, :, None, None, None] * eye[None, None, :, :, None]
                             * Q[:, :, None, None, :]).reshape(B, P * D, D * D)
        A[:, H + P * D:] = (vr[:, :, None, None, None] * K[:, :, None, :, None]
                            * eye[None, None, :, None, :]).reshape(B, P * D, D * D)
        J -= (A * w) @ np.swapaxes(A, 1, 2)
        if B == 1:
            return J[0]
        out = np.zeros((B * n, B * n))
        for b in range(B):
            out[b * n:(b + 1) * n, b * n:(b + 1) * n] = J[b]
        return out

    # the Gauss–Newton product runs in BLAS-3 (counted at 5% like an LU), the fills at full cost
    costs = (6.0 * B * P * D * D, B * (0.1 * n * n * D * D + 4.0 * n * n) + (B * n) ** 2)
    return rhs, jac, split, costs


#: the accuracy re-solve of an adaptive flow runs at tolerances this many times tighter
CHECK_FACTOR = 10.0


def _loss_of(lam, N: int, H: int, R: int, B: int):
    """y (T, B·n) of B rows of H rank-R heads ↦ each row's population loss (T, B)."""
    lam = np.asarray(lam, float)
    D = lam.size
    P = H * R
    head = np.repeat(np.arange(H), R)

    def loss(y):
        Y = np.asarray(y).reshape(y.shape[0], B, H + 2 * P * D)
        v = Y[..., :H][..., head]
        K = Y[..., H:H + P * D].reshape(y.shape[0], B, P, D)
        Q = Y[..., H + P * D:].reshape(y.shape[0], B, P, D)
        return pop.population_mse(np.einsum("tbp,tbpa,tbpc->tbac", v, K, Q), lam, N)

    return loss


def _accuracy(*, diffs, rows_of, S: int, D: int, per_decade: int, check: float) -> dict:
    """The measured accuracy of a flow, per row, from its groups' re-solves (``diffs``: one
    :class:`~icltheory.dynamics.RunDifference` per group, its values the per-row loss)."""
    ev = np.zeros(S)
    loss = np.zeros(S)
    stopped = [""] * S
    for gi, rows in enumerate(rows_of):
        d, ref = diffs[gi]
        B = len(rows)
        ev[rows] = np.max(d.events.reshape(B, D), axis=1, initial=0.0)
        loss[rows] = np.max(np.abs(d.values), axis=0, initial=0.0) if d.values.size else np.inf
        for k in rows:
            stopped[k] = ref.stopped
    return {"factor": check, "check_rtol": float(min(ref.rtol for _, ref in diffs)),
            "event_error": [float(x) for x in ev], "loss_error": [float(x) for x in loss],
            "record_spacing": math.log(10.0) / per_decade, "stopped": stopped,
            "work": float(sum(ref.work.flops for _, ref in diffs))}


#: rows integrated together (one solver, sharing its steps and Python overhead; its Jacobian
#: block diagonal, factorised whole) up to this many states in all: that pays while the dense
#: factorisation stays small (Fig. 3's six rows of 45 states on LSODA: 0.7 s against 1.3 s one
#: row at a time)
_BATCH_STATES = 300


def separate_population_flow(lam, N: int, params: dict, *, t_max: float, t_first: float, n_learn,
                             settle: float, rtol: float, atol_rel: float, budget: float,
                             per_decade: int = 300, tick=None, method: str = "LSODA",
                             check: float | None = CHECK_FACTOR):
    r"""The gradient flow $\tau\dot\theta=-\partial L_{1/2}/\partial\theta$ of ATTN_S's relevant
    block on the exact population loss, integrated adaptively
    (:func:`icltheory.dynamics.integrate_adaptive` with the analytic Jacobian of
    :func:`separate_head_field`) until every row has learned its ``n_learn`` directions and gone
    on ``settle`` × its last learning time (or ``t_max``); then every group is continued to the
    latest such time, so the rows share one record grid: 0 and ``per_decade`` points per decade
    from ``t_first``.  A direction's *learning time* (its learned fraction M_dd/m*_d crossing ½:
    a plateau's exit) is an event located on the solver's dense output; a direction that falls
    back below ½ (a head moved on to another direction) loses it until it crosses again
    (``solver["undone"]``: per row, the (direction, time) crossings undone).

    Rows of the same rank share one solver while they fit in :data:`_BATCH_STATES` states.
    ``method``: ``"LSODA"`` (default: Adams steps while the flow is not stiff — on the plateaus
    and the drops — and BDF steps with the analytic Jacobian in the wells, switched by the
    solver's own stiffness detection; 2–3× faster than BDF alone on these flows,
    ``benchmarks/bench_adaptive.py``) or ``"BDF"`` (SciPy's, the tests' independent
    cross-check).  LSODA's solvers are resumed after others ran: SciPy ≥ 1.17 (earlier versions
    hold one LSODA problem at a time).

    ``atol`` is ``atol_rel`` × the rms initial weight of the group.  ``budget``: flop-equivalents
    for all rows together, counted from the solver's own work; a group that exhausts it stops
    (``solver["stopped"]``).  Returns a :class:`~._training.Run` (``lr`` nan, ``steps`` the
    accepted solver steps of all groups) with ``solver`` = the method, tolerances, per-group
    work, per-row stop reasons and event times.

    ``check``: the run's accuracy is measured by re-solving every group over the same window (to
    the common end) at ``check`` × tighter tolerances (:data:`CHECK_FACTOR`; ``None``: not
    measured): ``solver["accuracy"]`` holds, per row, the largest difference of a learning time
    (in ln t; inf where one solve learned a direction the other did not) and of the population
    loss on the record grid, the re-solve's tolerance and work (counted in ``total_work``, and
    against ``budget``).  The record grid's spacing in ln t is ``record_spacing``."""
    from icltheory.dynamics import integrate_adaptive

    from . import _training as training
    from ._training import Run

    lam = np.asarray(lam, float)
    D = lam.size
    v0 = np.asarray(params["r"][:, :, 0], float)
    S, H = v0.shape
    K0 = np.asarray(params["K"], float)
    Q0 = np.asarray(params["Q"], float)
    n_learn = np.broadcast_to(np.asarray(n_learn), (S,))
    ranks = [int(np.max(np.flatnonzero(np.any(K0[k] != 0, axis=(0, 2)) | np.any(Q0[k] != 0, axis=(0, 2))),
                        initial=0)) + 1 for k in range(S)]
    if method not in ("LSODA", "BDF"):
        raise ValueError(f"unknown method {method!r}")
    groups: list[list[int]] = []
    for k in range(S):
        n_row = H + 2 * H * ranks[k] * D
        g = next((g for g in groups if ranks[g[0]] == ranks[k] and (len(g) + 1) * n_row <= _BATCH_STATES),
                 None)
        if g is None:
            groups.append([k])
        else:
            g.append(k)
    grid = np.concatenate([[0.0], np.geomspace(t_first, t_max, max(2, int(math.ceil(per_decade * math.log10(t_max / t_first))) + 1))])
    sols, fields = [], []
    spent = 0.0
    for gi, rows in enumerate(groups):
        R, B = ranks[rows[0]], len(rows)
        rhs, jac, split, (fc, jc) = separate_head_field(lam, N, H, R, B)
        y0 = np.concatenate([np.concatenate([v0[k], K0[k, :, :R].reshape(-1), Q0[k, :, :R].reshape(-1)]) for k in rows])
        fields.append((R, split))

        def events(_t, y, split=split, R=R):
            v, K, Q = split(y)
            M = np.swapaxes(np.repeat(v, R, axis=1)[:, :, None] * K, 1, 2) @ Q
            return (training.learned_fractions(M, lam, N) - 0.5).ravel()

        def stop(t, _y, ev, m=n_learn[rows], B=B):
            ev = ev.reshape(B, D)
            done = np.isfinite(ev)
            if np.any(done.sum(1) < m):
                return False
            return t >= (1.0 + settle) * float(np.max(np.where(done, ev, 0.0)))

        scale = float(np.sqrt(np.mean(y0 * y0))) or 1.0
        sol = integrate_adaptive(rhs, y0, t_max, jac=jac, method=method, rtol=rtol, atol=atol_rel * scale,
                                 record=grid, events=events, stop=stop, latest=True, fun_cost=fc, jac_cost=jc,
                                 budget=budget - spent, first_step=min(t_first, t_max),
                                 tick=(lambda f, w, gi=gi: tick((gi + f) / len(groups), w)) if tick else None,
                                 what=f"population gradient flow (rows {rows})")
        spent += sol.work.flops
        sols.append(sol)
    T = max(sol.t_end for sol in sols)
    for gi, sol in enumerate(sols):
        if sol.t_end < T and sol.stopped == "stop":
            before = sol.work.flops
            sols[gi] = sol = sol.extra["resume"](T)
            spent += sol.work.flops - before
    n_rec = int(np.searchsorted(grid, T, side="right"))
    n_rec = min([n_rec] + [int(np.searchsorted(sol.t, grid[n_rec - 1], side="right")) for sol in sols])
    t = grid[:n_rec]
    Rmax = K0.shape[2]
    M = np.zeros((S, n_rec, D, D))
    heads = np.zeros((S, n_rec, H, D))
    final = {"r": np.zeros((S, H, 1)), "K": np.zeros((S, H, Rmax, D)), "Q": np.zeros((S, H, Rmax, D))}
    events = np.full((S, D), np.nan)
    undone: list[list[tuple[int, float]]] = [[] for _ in range(S)]
    stopped = [""] * S
    for gi, rows in enumerate(groups):
        sol, (R, split) = sols[gi], fields[gi]
        B = len(rows)
        for i in range(n_rec):
            v, K, Q = split(sol.y[i])
            Kh, Qh = K.reshape(B, H, R, D), Q.reshape(B, H, R, D)
            heads[rows, i] = np.einsum("sh,shrd,shrd->shd", v, Kh, Qh)
            M[rows, i] = np.einsum("sh,shra,shrb->sab", v, Kh, Qh)
            if i == n_rec - 1:
                final["r"][rows, :, 0] = v
                final["K"][rows, :, :R] = Kh
                final["Q"][rows, :, :R] = Qh
        events[rows] = sol.events.reshape(B, D)
        for c, t_up in sol.extra["undone"]:
            undone[rows[c // D]].append((c % D, t_up))
        for k in rows:
            stopped[k] = sol.stopped
    solver = {"method": method, "jacobian": "analytic", "rtol": float(max(sol.rtol for sol in sols)),
              "atol_rel": atol_rel, "t_end": float(t[-1]), "groups": groups, "stopped": stopped,
              "work": [sol.work.as_dict() for sol in sols], "total_work": spent, "events": events, "undone": undone}
    if check is not None:  # the accuracy re-solves: every group again at check × tighter tolerances
        diffs = []
        for gi, rows in enumerate(groups):
            R, split = fields[gi]
            ref = sols[gi].extra["refine"](check, max(budget - spent, 0.0))
            spent += ref.work.flops
            diffs.append((compare_solutions(sols[gi], ref, _loss_of(lam, N, H, R, len(rows))), ref))
        solver["accuracy"] = _accuracy(diffs=diffs, rows_of=groups, S=S, D=D, per_decade=per_decade,
                                       check=check)
        solver["total_work"] = spent
    return Run(t, pop.population_mse(M, lam, N), M, final, float("nan"),
               int(sum(sol.work.steps for sol in sols)), heads=heads, solver=solver)


def finite_sample_separate_flow(moments, params: dict, lam, N: int, *, H: int, t_end: float, t_first: float,
                                rtol: float, atol_rel: float, budget: float, per_decade: int = 300,
                                method: str = "BDF", n_learn: int | None = None, settle: float = 1.0,
                                tick=None, check: float | None = CHECK_FACTOR):
    r"""The gradient flow of the whole ATTN_S model on the training loss of the sequences behind
    ``moments`` (the O(F²) quadratic form of :class:`~._models.QuadraticMoments`), from the
    full-model ``params`` (one seed row) to ``t_end``, adaptively (BDF; its Jacobian by SciPy's
    finite differences: n evaluations of an O(F²) field, n = H(D+1)(1+R)+HRD).  With
    ``n_learn``: each direction's learning time (learned fraction of the relevant block M
    crossing ½) is an event, and the run stops once ``n_learn`` directions are learned and it
    has gone on ``settle`` × the last learning time (``solver["stopped"]`` is then ``"stop"``;
    ``t_end`` is only the horizon) — this run's own horizon, not another simulator's.  Records
    on the grid of :func:`separate_population_flow`; returns a :class:`~._training.Run` with the
    training loss and the relevant block M(t) (:func:`~._models.label_block`: the coefficient
    on the label × input features), whose population loss is the run's ``loss``; ``check``: as in
    :func:`separate_population_flow` (the re-solve's loss difference is the relevant block's
    population loss)."""
    from icltheory.dynamics import integrate_adaptive

    from . import _training as training
    from ._models import SeparateHeads, label_block
    from ._training import Run

    model = SeparateHeads(H, params["K"].shape[2])
    names = ("r", "K", "Q")
    shapes = [params[k].shape[1:] for k in names]
    sizes = [int(np.prod(sh)) for sh in shapes]
    Cg = moments.on()

    def unpack(y):
        out, k0 = {}, 0
        for name, sh, n in zip(names, shapes, sizes):
            out[name] = y[k0:k0 + n].reshape((1,) + sh)
            k0 += n
        return out

    def rhs(_t, y):
        p = unpack(y)
        g = model.pullback(p, moments.grad_half(model.theta(p), Cg=Cg), moments)
        return -np.concatenate([g[k].ravel() for k in names])

    y0 = np.concatenate([np.asarray(params[k], float)[0].ravel() for k in names])
    F = moments.C.shape[0]
    D = moments.D
    events = stop = None
    if n_learn is not None:
        def events(_t, y):
            M = label_block(model.theta(unpack(y))[0], D)
            return training.learned_fractions(M, lam, N) - 0.5

        def stop(t, _y, ev):
            done = np.isfinite(ev)
            return int(done.sum()) >= n_learn and t >= (1.0 + settle) * float(np.max(np.where(done, ev, 0.0)))
    grid = np.concatenate([[0.0], np.geomspace(t_first, t_end, max(2, int(math.ceil(per_decade * math.log10(t_end / t_first))) + 1))])
    scale = float(np.sqrt(np.mean(y0[y0 != 0] ** 2))) if np.any(y0 != 0) else 1.0
    sol = integrate_adaptive(rhs, y0, t_end, method=method, rtol=rtol, atol=atol_rel * scale, record=grid,
                             events=events, stop=stop, latest=True, fun_cost=4.0 * F * F, budget=budget,
                             first_step=min(t_first, t_end), tick=tick, what="finite-sample gradient flow")
    thetas = np.array([model.theta(unpack(y))[0] for y in sol.y])
    M = label_block(thetas, D)[None]
    train = np.asarray(moments.mse(thetas, Cg=Cg))[None]
    final = {k: v for k, v in unpack(sol.y[-1]).items()}
    solver = {"method": method, "rtol": rtol, "atol_rel": atol_rel, "t_end": float(sol.t_end),
              "stopped": [sol.stopped], "work": [sol.work.as_dict()], "total_work": sol.work.flops,
              "jacobian": "finite differences (SciPy)"}
    if n_learn is not None:
        solver["events"] = np.asarray(sol.events, float).reshape(1, D)
        solver["undone"] = [list(sol.extra["undone"])]
    if check is not None:
        ref = sol.extra["refine"](check, max(budget - sol.work.flops, 0.0))

        def pop_loss(y):
            return pop.population_mse(label_block(np.array([model.theta(unpack(x))[0] for x in y]), D), lam, N)[:, None]

        diff = compare_solutions(sol, ref, pop_loss)
        solver["accuracy"] = _accuracy(diffs=[(diff, ref)], rows_of=[[0]], S=1, D=D if n_learn is not None else 0,
                                       per_decade=per_decade, check=check)
        solver["total_work"] = sol.work.flops + ref.work.flops
    return Run(sol.t, pop.population_mse(M, lam, N), M, final, float("nan"), int(sol.work.steps),
               train_loss=train, solver=solver)
