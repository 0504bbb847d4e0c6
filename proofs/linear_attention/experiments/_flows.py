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
from icltheory.dynamics import BLAS3_WORK, compare_solutions, integrate_flow

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
    as (rhs, jac, split, costs); ``jac.rows(y)`` gives the Jacobians (r, n, n) of any number of
    rows y (r, n).  A row's state is $(v\in\mathbb R^H,K\in\mathbb R^{HR\times D},
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

    def split(y):  # rows (r, n): the first B rows, or any number (a flat state: B rows)
        y = y.reshape(-1, n)
        r = y.shape[0]
        return y[:, :H], y[:, H:H + P * D].reshape(r, P, D), y[:, H + P * D:].reshape(r, P, D)

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

    def jac_rows(y):  # the rows' Jacobians (r, n, n)
        v, K, Q, vr, E = field(y)
        r = v.shape[0]
        KE = K @ E
        QEt = Q @ np.swapaxes(E, 1, 2)
        J = np.zeros((r, n, n))
        hp = head[:, None]
        J[:, hp, iK] = QEt
        J[:, hp, iQ] = KE
        J[:, iK, hp] = QEt
        J[:, iQ, hp] = KE
        J[:, iK[:, :, None], iQ[:, None, :]] = vr[:, :, None, None] * E[:, None]
        J[:, iQ[:, :, None], iK[:, None, :]] = vr[:, :, None, None] * np.swapaxes(E, 1, 2)[:, None]
        A = np.empty((r, n, D * D))
        A[:, :H] = np.einsum("spa,spb->spab", K, Q).reshape(r, H, R, D * D).sum(2)
        A[:, H:H + P * D] = (vr[:, :, None, None, None] * eye[None, None, :, :, None]
                             * Q[:, :, None, None, :]).reshape(r, P * D, D * D)
        A[:, H + P * D:] = (vr[:, :, None, None, None] * K[:, :, None, :, None]
                            * eye[None, None, :, None, :]).reshape(r, P * D, D * D)
        J -= (A * w) @ np.swapaxes(A, 1, 2)
        return J

    def jac(_t, y):
        J = jac_rows(y)
        if B == 1:
            return J[0]
        out = np.zeros((B * n, B * n))
        for b in range(B):
            out[b * n:(b + 1) * n, b * n:(b + 1) * n] = J[b]
        return out

    # the Gauss–Newton product runs in BLAS-3 (counted at 5% like an LU), the fills at full cost
    costs = (6.0 * B * P * D * D, B * (0.1 * n * n * D * D + 4.0 * n * n) + (B * n) ** 2)
    jac.rows = jac_rows  # type: ignore[attr-defined]
    return rhs, jac, split, costs


#: the accuracy re-solve of an adaptive flow runs at tolerances this many times tighter
CHECK_FACTOR = 10.0


def _inverses(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched inverses of A (..., k, k) and which exist (a singular one is left as the identity)."""
    try:
        return np.linalg.inv(A), np.ones(A.shape[0], bool)
    except np.linalg.LinAlgError:
        out = np.broadcast_to(np.eye(A.shape[-1]), A.shape).copy()
        ok = np.ones(A.shape[0], bool)
        for i in range(A.shape[0]):
            try:
                out[i] = np.linalg.inv(A[i])
            except np.linalg.LinAlgError:
                ok[i] = False
        return out, ok


class SeparateHeadsNewton:
    r"""The iteration matrices $I-cJ$ of rows of the separate-head population flow (H heads of
    rank R; a row's state is $v\in\mathbb R^H$ then the pieces $(K_p,Q_p)$, $p=hR+r$, each
    $2D$ numbers; rows of smaller rank are zero-padded), factorised by their structure.  With
    $E$ held fixed the field is linear in each piece: $J$ couples $(K_p,Q_p)$ by
    $v_h\begin{psmallmatrix}0&E\\E^\top&0\end{psmallmatrix}$ (one $2D\times2D$ block per head),
    couples $v_h$ with its pieces through $g_p=(EQ_p,E^\top K_p)$ (rank 2 per head), and adds the
    Gauss–Newton term $-A\,\mathrm{diag}(w)A^\top$, $A=\partial M/\partial y$ (rank ≤ D²).  So
    $I-cJ=B_0+UCU^\top$ with $B_0$ block diagonal and $U$ of $m=2H+D^2$ columns, and
    $(B_0+UCU^\top)^{-1}=B_0^{-1}-B_0^{-1}U(I+CU^\top B_0^{-1}U)^{-1}CU^\top B_0^{-1}$ (Woodbury).
    $U^\top B_0^{-1}U$ is assembled from each head's Gram matrices ($\sum_pK_pQ_p^\top$,
    $\sum_pK_pK_p^\top$, $\sum_pQ_pQ_p^\top$) and block inverse, never from $A$ itself: a
    factorisation costs $O(HD^4+m^3)$ and a solve $O(HRD^2+m^2)$ per row, against $O(n^3)$ and
    $O(n^2)$ dense ($n=H+2HRD$).  Also the field itself (:meth:`field`) and the layout helpers.

    States of at most :data:`DENSE_MAX` numbers are factorised densely instead (the analytic
    Jacobian, :meth:`dense_jacobian`; a batched inverse of $I-cJ$, each solve refined once on its
    residual where $c\lVert J\rVert_\infty$ > :data:`REFINE_ABOVE`): the Woodbury form is not
    backward stable — at $c\lVert J\rVert\approx10^{13}$ (λ_min = 1e-6) its solves carry backward
    errors ≈ 1e-11 where an LU's are ≈ 1e-22, enough to stall the corrector (6954 Newton failures
    and 10296 steps where the dense factorisation takes 3024; the inverse without the refinement
    step, 7088) — and at that size the dense factorisation costs no more."""

    #: the largest state (H + 2HRD numbers) factorised densely
    DENSE_MAX = 160
    #: a dense solve is refined once on its residual where c‖J‖∞ exceeds this: the inverse's
    #: solve errs by ≲ κ(I − cJ)·ε of the Newton update, and this flow's J is symmetric, so
    #: κ ≲ 1 + c‖J‖ and below the threshold the error is ≤ 2e-10 (the corrector tolerates a few
    #: per cent); above it (λ_min = 1e-6: c‖J‖ ≈ 1e13) the refinement keeps the corrector from
    #: stalling
    REFINE_ABOVE = 1e6

    def __init__(self, lam, N: int, H: int, R: int, rows: int):
        lam = np.asarray(lam, float)
        D = lam.size
        self.H, self.Rmax, self.D = H, R, D
        self.W = np.diag(pop.beta_second_moment(lam, N))[:, None] * lam[None, :]
        self.w = self.W.ravel()
        self.L2 = np.diag(lam**2)
        m = 2 * H + D * D
        self.m = m
        # per row: the heads' block inverses, g_p, the heads' Gram matrices Σ_p K_pᵀQ_p, the m×m
        # correction, v_h K_p and v_h Q_p (rank Rmax; the working rows' copies, on their rank's
        # pieces, are written back when the working set changes)
        self._full = (np.zeros((rows, H, 2 * D, 2 * D)), np.zeros((rows, H, R, 2 * D)), np.zeros((rows, 1, H, D * D)),
                      np.zeros((rows, m, m)), np.zeros((rows, H, R, D)), np.zeros((rows, H, R, D)))
        self._eye2D = np.eye(2 * D)
        self._eye_m = np.eye(m)
        # the diagonals of S's v–v and g–g blocks, in C S's order of rows (see factor)
        self._diag_v = (H + np.arange(H), np.arange(H))
        self._diag_g = (np.arange(H), H + np.arange(H))
        # C S (C = blockdiag([[0, −cI], [−cI, 0]], c·diag(w))) is S's rows with the first two blocks
        # swapped, times C's nonzero entries; F = (I + CS)⁻¹C is the inverse's columns so swapped,
        # times the same entries
        self._swap = np.concatenate([np.arange(H, 2 * H), np.arange(H), np.arange(2 * H, m)])
        self._cw = np.concatenate([-np.ones(2 * H), self.w])
        self._dirty = np.zeros(0, bool)  # the working rows factorised since the last select
        self._heads = {r: np.repeat(np.arange(H), r) for r in range(1, R + 1)}
        n = H + 2 * H * R * D
        self.dense = n <= self.DENSE_MAX
        self._lam, self._N = lam, N
        self._dense_jac: dict = {}  # rank → (the field's row Jacobians, its layout's permutation)
        self._dense_full = np.zeros((rows, 2, n, n) if self.dense else (0, 2, 0, 0))
        self._refine_full = np.zeros(rows if self.dense else 0, bool)  # per row: its solves are refined
        self.select(np.arange(rows))

    @staticmethod
    def costs(H: int, R: int, D: int, R_max: int | None = None) -> tuple[float, float, float]:
        """Flop-equivalents per row of rank R (the interpreter's per-call overhead is the
        integrator's): the field, a factorisation (block inverses, Gram assembly, the m×m inverse)
        and a solve (block solves, the low-rank correction) — batched small products counted at
        half their flops, the m×m inverse and the D⁴ assembly (BLAS-3) at ``BLAS3_WORK`` (measured:
        ``benchmarks/bench_adaptive.py`` prints the counted work against the time taken).
        ``R_max``: the largest rank of the batch (default R), which decides whether the rows are
        factorised densely."""
        n, m = H + 2 * H * R * D, 2 * H + D * D
        if H + 2 * H * (R if R_max is None else R_max) * D <= SeparateHeadsNewton.DENSE_MAX:
            # the dense Jacobian (its Gauss–Newton product), its inverse, a refined solve
            return 4.0 * H * R * D * D, BLAS3_WORK * (2.0 * n * n * D * D + 2.0 * n**3) + 6.0 * n * n, 6.0 * n * n
        return (4.0 * H * R * D * D,
                BLAS3_WORK * (2.0 * H * (2 * D) ** 3 + 8.0 * H * D**4 + 3.0 * m**3) + 4.0 * n * D,
                2.0 * H * R * (2 * D) ** 2 + 4.0 * n * D + 2.0 * m * m)

    @property
    def factor_cost(self) -> float:
        return self.costs(self.H, self.R, self.D, self.Rmax)[1]

    @property
    def solve_cost(self) -> float:
        return self.costs(self.H, self.R, self.D, self.Rmax)[2]

    def rank_of(self, width: int) -> int:
        """The rank R of a state of ``width`` columns (H + 2HRD)."""
        return (width - self.H) // (2 * self.H * self.D)

    def columns(self, R: int) -> np.ndarray:
        """The columns of the full (rank-Rmax) state that a rank-R state keeps: v, then the pieces
        r < R of every head."""
        H, Rm, D = self.H, self.Rmax, self.D
        piece = (np.arange(H)[:, None, None] * Rm + np.arange(R)[None, :, None]) * (2 * D) + np.arange(2 * D)
        return np.concatenate([np.arange(H), H + piece.ravel()])

    def layout(self, v, K, Q) -> np.ndarray:
        """States (rows, H + 2HRD) from v (rows, H), K, Q (rows, H, R, D)."""
        return np.concatenate([v, np.concatenate([K, Q], axis=-1).reshape(v.shape[0], -1)], axis=1)

    def split(self, y):
        """(v (r, H), pieces (r, H, R, 2D)) of states of rank R = :meth:`rank_of`."""
        H = self.H
        return y[:, :H], y[:, H:].reshape(y.shape[0], H, -1, 2 * self.D)

    def parts(self, y):
        """(v, K, Q (r, H, R, D), M = Σ_p v_h K_pᵀQ_p (r, D, D)) of states."""
        v, pc = self.split(y)
        D = self.D
        K, Q = pc[..., :D], pc[..., D:]
        r = y.shape[0]
        M = (v[:, :, None, None] * K).reshape(r, -1, D).swapaxes(1, 2) @ Q.reshape(r, -1, D)
        return v, K, Q, M

    def field(self, y):
        """τẏ of the rows: v̇_h = Σ_{p∈h} K_pEQ_pᵀ, K̇_p = v_hEQ_p, Q̇_p = v_hEᵀK_p."""
        v, K, Q, M = self.parts(y)
        E = self.L2 - self.W * M
        H, D = self.H, self.D
        r = y.shape[0]
        Kf, Qf = K.reshape(r, -1, D), Q.reshape(r, -1, D)
        KE = Kf @ E
        QEt = Qf @ E.swapaxes(1, 2)
        out = np.empty(y.shape)
        (KE * Qf).sum(-1).reshape(r, H, -1).sum(-1, out=out[:, :H])
        pieces = out[:, H:].reshape(K.shape[:-1] + (2 * D,))
        vv = v[:, :, None, None]
        np.multiply(QEt.reshape(K.shape), vv, out=pieces[..., :D])
        np.multiply(KE.reshape(K.shape), vv, out=pieces[..., D:])
        return out

    def select(self, rows, cols=None) -> None:
        """The working rows of the next factorisations and solves, on the columns ``cols`` of a
        rank-R state (None: rank Rmax)."""
        if self._dirty.any():  # the factorisations made since the last select, kept in the full layout
            done = np.flatnonzero(self._dirty)
            back = self.rows[done]
            if self.dense:
                # zero on the padded pieces (a row's padded components are zero and must stay so
                # when a wider working layout solves with it)
                keep = self.columns(self.R)
                full = np.zeros((done.size,) + self._dense_full.shape[1:])
                full[:, :, keep[:, None], keep[None, :]] = self._dense_work[done]
                self._dense_full[back] = full
                self._refine_full[back] = self._refine_work[done]
            else:
                for i, (whole, work) in enumerate(zip(self._full, self._work)):
                    if i in (1, 4, 5):
                        whole[back, :, :self.R] = work[done]
                    else:
                        whole[back] = work[done]
        self.rows = rows
        self.R = self.Rmax if cols is None else self.rank_of(len(cols))
        R = self.R
        self._dirty = np.zeros(rows.size, bool)
        if self.dense:  # the rows' inverses on the working layout's columns
            keep = self.columns(R)
            self._dense_work = self._dense_full[rows][:, :, keep[:, None], keep[None, :]]
            self._refine_work = self._refine_full[rows]
            return
        Ginv, g, Nf, F, Kv, Qv = (a[rows] for a in self._full)
        self._work = (Ginv, g[:, :, :R].copy(), Nf, F, Kv[:, :, :R].copy(), Qv[:, :, :R].copy())

    def dense_jacobian(self, y) -> np.ndarray:
        """J (r, n, n) of the rows' states y (r, n) of rank R = :meth:`rank_of`: the analytic
        Jacobian of :func:`separate_head_field` (E held fixed: the explicit factors; plus the
        Gauss–Newton coupling −A diag(w) Aᵀ, A = ∂M/∂y), its layout (v, all K, all Q) permuted to
        this one (v, then per piece K_p, Q_p)."""
        R = self.rank_of(y.shape[1])
        if R not in self._dense_jac:
            H, D = self.H, self.D
            P = H * R
            perm = np.concatenate([np.arange(H), np.stack([H + np.arange(P * D).reshape(P, D),
                                                           H + P * D + np.arange(P * D).reshape(P, D)], 1).ravel()])
            self._dense_jac[R] = (separate_head_field(self._lam, self._N, H, R)[1].rows, perm)
        rows, perm = self._dense_jac[R]
        yd = np.empty_like(y)
        yd[:, perm] = y
        return rows(yd)[:, perm[:, None], perm[None, :]]

    def factor(self, pos, _t, y, c) -> np.ndarray:
        """Factorise I − cJ(y) for the working rows at positions ``pos``; per row: not singular."""
        H, D = self.H, self.D
        r = pos.size
        if self.dense:
            n = y.shape[1]
            J = self.dense_jacobian(y)
            Mx = np.eye(n) - c[:, None, None] * J
            inv, ok = _inverses(Mx)
            self._dense_work[pos, 0] = inv
            self._dense_work[pos, 1] = Mx
            self._refine_work[pos] = c * np.abs(J).sum(-1).max(-1) > self.REFINE_ABOVE
            self._dirty[pos] = True
            return ok
        v, K, Q, M = self.parts(y)
        E = self.L2 - self.W * M
        A = (c[:, None] * v)[:, :, None, None] * E[:, None]
        G = np.zeros((r, H, 2 * D, 2 * D))
        G[..., :D, D:] = -A
        G[..., D:, :D] = -A.swapaxes(-1, -2)
        G += self._eye2D
        Ginv, ok = _inverses(G.reshape(r * H, 2 * D, 2 * D))
        Ginv = Ginv.reshape(r, H, 2 * D, 2 * D)
        ok = ok.reshape(r, H).all(1)
        X, Y, Z = Ginv[..., :D, :D], Ginv[..., :D, D:], Ginv[..., D:, D:]
        g = np.concatenate([Q @ E.swapaxes(1, 2)[:, None], K @ E[:, None]], axis=-1)  # (EQ_p, EᵀK_p)
        xg = Ginv @ g.swapaxes(-1, -2)  # (r, H, 2D, R)
        Kt, Qt = K.swapaxes(-1, -2), Q.swapaxes(-1, -2)
        Nh = Kt @ Q
        SK = Kt @ K
        SQ = Qt @ Q
        m, D2 = self.m, D * D
        # S = UᵀB₀⁻¹U, assembled with its first two blocks of rows swapped (as C S has them): rows
        # H..2H the v rows, rows 0..H the g rows
        CS = np.zeros((r, m, m))
        CS[(slice(None),) + self._diag_v] = 1.0
        Nf = Nh.reshape(r, H, D2)
        CS[:, H:2 * H, 2 * H:] = Nf
        CS[:, 2 * H:, :H] = Nf.swapaxes(1, 2)
        CS[(slice(None),) + self._diag_g] = np.einsum("rhsi,rhis->rh", g, xg)
        gA = (v[:, :, None, None] * (xg[:, :, :D, :] @ Q + Kt @ xg[:, :, D:, :].swapaxes(-1, -2))).reshape(r, H, D2)
        CS[:, :H, 2 * H:] = gA
        CS[:, 2 * H:, H:2 * H] = gA.swapaxes(1, 2)
        v2 = (v * v)[:, :, None]
        # Σ_h v_h² (X_h[a,c] SQ_h[b,d] + SK_h[a,c] Z_h[b,d]) and Σ_h v_h² Y_h[a,d] N_h[c,b], at [(a,b),(c,d)]
        T1 = (np.concatenate([v2 * X.reshape(r, H, D2), v2 * SK.reshape(r, H, D2)], 1).swapaxes(1, 2)
              @ np.concatenate([SQ.reshape(r, H, D2), Z.reshape(r, H, D2)], 1))
        Ty = ((v2 * Y.reshape(r, H, D2)).swapaxes(1, 2) @ Nf).reshape(r, D, D, D, D).transpose(0, 1, 4, 3, 2)
        T = np.add(T1.reshape(r, D, D, D, D).transpose(0, 1, 3, 2, 4), Ty, out=np.empty((r, D, D, D, D)))
        T += Ty.transpose(0, 3, 4, 1, 2)
        np.add(Nf.swapaxes(1, 2) @ Nf, T.reshape(r, D2, D2), out=CS[:, 2 * H:, 2 * H:])
        # C = blockdiag([[0, −cI], [−cI, 0]], c·diag(w)); F = (I + C S)⁻¹ C
        cdiag = self._cw[None] * c[:, None]
        CS *= cdiag[:, :, None]
        CS += self._eye_m
        inv, ok2 = _inverses(CS)
        F = inv[:, :, self._swap]
        F *= cdiag[:, None, :]
        vv = v[:, :, None, None]
        Ginv_w, g_w, Nf_w, F_w, Kv_w, Qv_w = self._work
        Ginv_w[pos] = Ginv
        g_w[pos] = g
        Nf_w[pos] = Nf[:, None]
        F_w[pos] = F
        Kv_w[pos] = vv * K
        Qv_w[pos] = vv * Q
        self._dirty[pos] = True
        return ok & ok2

    def solve(self, rhs):
        """Solve with every working row's factorisation."""
        if self.dense:  # with the inverse, then (at large c‖J‖) one step of refinement on the residual
            inv = self._dense_work[:, 0]
            x = (inv @ rhs[:, :, None])[:, :, 0]
            if self._refine_work.any():
                i = np.flatnonzero(self._refine_work)
                inv_i, Mx_i = inv[i], self._dense_work[i, 1]
                x[i] += (inv_i @ (rhs[i] - (Mx_i @ x[i][:, :, None])[:, :, 0])[:, :, None])[:, :, 0]
            return x
        H, D = self.H, self.D
        Ginv, g, Nf, F, Kv, Qv = self._work
        r = rhs.shape[0]
        rv = rhs[:, :H]
        GinvT = Ginv.swapaxes(-1, -2)
        yp = rhs[:, H:].reshape(r, H, -1, 2 * D) @ GinvT  # B0⁻¹ on pieces
        Kv = Kv.reshape(r, -1, D)
        Qv = Qv.reshape(r, -1, D)
        s_A = ((rv[:, None, :] @ Nf[:, 0]).reshape(r, D, D) + yp[..., :D].reshape(r, -1, D).swapaxes(1, 2) @ Qv
               + Kv.swapaxes(1, 2) @ yp[..., D:].reshape(r, -1, D))
        s_g = (g * yp).sum((-1, -2))
        z = (F @ np.concatenate([rv, s_g, s_A.reshape(r, D * D)], 1)[:, :, None])[:, :, 0]
        Zm = z[:, 2 * H:].reshape(r, D, D)
        w_v = z[:, :H] + (Nf[:, 0] @ z[:, 2 * H:, None])[:, :, 0]
        wp = np.empty(g.shape)
        wq = wp.reshape(r, -1, 2 * D)
        np.matmul(Qv, Zm.swapaxes(1, 2), out=wq[..., :D])
        np.matmul(Kv, Zm, out=wq[..., D:])
        wp += z[:, H:2 * H, None, None] * g
        out = np.empty_like(rhs)
        np.subtract(rv, w_v, out=out[:, :H])
        np.subtract(yp, wp @ GinvT, out=out[:, H:].reshape(yp.shape))
        return out


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


def _accuracy(*, diffs, rows_of, S: int, D: int, per_decade: int, check: float, n_rec: int) -> dict:
    """The measured accuracy of a flow, per row, from its groups' re-solves (``diffs``: one
    :class:`~icltheory.dynamics.RunDifference` per group, its values the per-row loss) on the
    run's first ``n_rec`` record times (a record the re-solve did not reach: nan)."""
    ev = np.zeros(S)
    delta = np.full((S, n_rec), np.nan)
    stopped = [""] * S
    for gi, rows in enumerate(rows_of):
        d, ref = diffs[gi]
        B = len(rows)
        ev[rows] = np.max(d.events.reshape(B, D), axis=1, initial=0.0)
        m = min(n_rec, d.values.shape[0])
        delta[rows, :m] = np.asarray(d.values[:m]).reshape(m, B).T
        for k in rows:
            stopped[k] = ref.stopped
    return _accuracy_record(check, min(ref.rtol for _, ref in diffs), ev, delta, per_decade, stopped,
                            float(sum(ref.work.flops for _, ref in diffs)))


def _accuracy_record(check: float, check_rtol: float, ev, delta, per_decade: int, stopped, work) -> dict:
    """``solver["accuracy"]``: per row the largest learning-time difference (ln t) and loss
    difference, the loss differences on the record grid (``loss_delta`` (rows, times), nan where
    the re-solve has no record), the record grid's spacing in ln t."""
    with np.errstate(invalid="ignore"):
        lmax = np.where(np.any(np.isnan(delta), axis=1), np.inf, np.max(np.abs(np.nan_to_num(delta)), axis=1, initial=0.0))
    return {"factor": check, "check_rtol": float(check_rtol), "event_error": [float(x) for x in ev],
            "loss_error": [float(x) for x in lmax], "loss_delta": delta,
            "record_spacing": math.log(10.0) / per_decade, "stopped": list(stopped), "work": work}


#: with SciPy's solvers, rows integrated together (one solver, sharing its steps and Python overhead; its Jacobian
#: block diagonal, factorised whole) up to this many states in all: that pays while the dense
#: factorisation stays small (Fig. 3's six rows of 45 states on LSODA: 0.7 s against 1.3 s one
#: row at a time)
_BATCH_STATES = 300


def separate_population_flow(lam, N: int, params: dict, *, t_max: float, t_first: float, n_learn,
                             settle: float, rtol: float, atol_rel: float, budget: float,
                             per_decade: int = 300, tick=None, method: str = "NDF",
                             check: float | None = CHECK_FACTOR):
    r"""The gradient flow $\tau\dot\theta=-\partial L_{1/2}/\partial\theta$ of ATTN_S's relevant
    block on the exact population loss, integrated adaptively until every row has learned its
    ``n_learn`` directions and gone on ``settle`` × its last learning time (or ``t_max``); then
    every row is continued to the latest such time, so the rows share one record grid: 0 and
    ``per_decade`` points per decade from ``t_first``.  A direction's *learning time* (its
    learned fraction M_dd/m*_d crossing ½: a plateau's exit) is an event located on the solver's
    dense output; a direction that falls back below ½ (a head moved on to another direction)
    loses it until it crosses again (``solver["undone"]``: per row, the (direction, time)
    crossings undone).

    ``method``: ``"NDF"`` (default: :func:`icltheory.dynamics.integrate_batch`, every row — and
    every row's accuracy re-solve — with its own adaptive NDF in one lockstep batch, rows of
    smaller rank zero-padded, the iteration matrices factorised by their structure,
    :class:`SeparateHeadsNewton`), or ``"LSODA"`` / ``"BDF"`` (SciPy's, one solver per group of
    rows of one rank with the dense analytic Jacobian of :func:`separate_head_field`: the tests'
    independent cross-checks).

    ``atol`` is ``atol_rel`` × the rms initial weight (per row; per group with SciPy).
    ``budget``: flop-equivalents for all rows together, counted from the solver's own work; a
    run that exhausts it stops (``solver["stopped"]``).  Returns a :class:`~._training.Run`
    (``lr`` nan, ``steps`` the accepted solver steps of all rows) with ``solver`` = the method,
    tolerances, work, per-row stop reasons and event times.

    ``check``: the run's accuracy is measured by re-solving every row over the same window (to
    the common end) at ``check`` × tighter tolerances (:data:`CHECK_FACTOR`; ``None``: not
    measured): ``solver["accuracy"]`` holds, per row, the largest difference of a learning time
    (in ln t; inf where one solve learned a direction the other did not) and of the population
    loss on the record grid, and the re-solve's tolerance; its work is counted in
    ``total_work`` and against ``budget``.  The record grid's spacing in ln t is
    ``record_spacing``."""
    if method != "NDF":
        return _scipy_population_flow(lam, N, params, t_max=t_max, t_first=t_first, n_learn=n_learn, settle=settle,
                                      rtol=rtol, atol_rel=atol_rel, budget=budget, per_decade=per_decade, tick=tick,
                                      method=method, check=check)
    from icltheory.dynamics import integrate_batch

    from . import _training as training
    from ._training import Run

    lam = np.asarray(lam, float)
    D = lam.size
    v0 = np.asarray(params["r"][:, :, 0], float)
    S, H = v0.shape
    K0 = np.asarray(params["K"], float)
    Q0 = np.asarray(params["Q"], float)
    n_learn = np.broadcast_to(np.asarray(n_learn), (S,))
    ranks = np.array([int(np.max(np.flatnonzero(np.any(K0[k] != 0, axis=(0, 2)) | np.any(Q0[k] != 0, axis=(0, 2))),
                                 initial=0)) + 1 for k in range(S)])
    R = int(ranks.max())
    field = SeparateHeadsNewton(lam, N, H, R, 2 * S if check is not None else S)
    y0 = field.layout(v0, K0[:, :, :R], Q0[:, :, :R])
    sizes = H + 2 * H * ranks * D
    rms = np.sqrt(np.sum(y0 * y0, axis=1) / sizes)
    rms = np.where(rms > 0, rms, 1.0)
    nb = 2 * S if check is not None else S
    Y0 = np.concatenate([y0, y0]) if check is not None else y0
    tol = np.concatenate([np.full(S, rtol), np.full(S, rtol / check)]) if check is not None else np.full(S, rtol)
    atol = np.concatenate([rms, rms])[:nb] * atol_rel * tol / rtol

    def events(y):
        return training.learned_fractions(field.parts(y)[3], lam, N) - 0.5

    def observe(y):
        v, K, Q, M = field.parts(y)
        heads = v[:, :, None] * (K * Q).sum(2)
        return np.concatenate([M.reshape(-1, D * D), heads.reshape(-1, H * D)], axis=1)

    row_rank = np.concatenate([ranks, ranks])[:nb]

    def layout(rows):  # the pieces the rows' highest rank uses (the others are zero in all of them)
        return field.columns(int(row_rank[rows].max()))

    # each main row runs until it has learned its directions and gone on settle × its last learning
    # time (its bound — and its re-solve's — is set to that time once they are learned, and lifted
    # again if one is undone); when every main row has stopped so (or reached t_max), every row —
    # the accuracy re-solves included — is continued to the latest such time T
    bound = np.full(nb, float(t_max))
    t_now = np.zeros(nb)
    released = [False]
    by_rule = np.zeros(S, bool)

    def control(rows, t, ev):
        t_now[rows] = t
        if released[0]:
            return False
        main = rows < S
        if not main.any():
            return False
        k, e, tm = rows[main], ev[main], t[main]
        done = np.isfinite(e)
        by_rule[k] = done.sum(1) >= n_learn[k]
        last = np.max(np.where(done, e, 0.0), axis=1)
        bound[k] = np.where(by_rule[k], np.maximum(tm, (1.0 + settle) * last), float(t_max))
        bound[S:] = bound[:nb - S]
        if np.all(t_now[:S] >= bound[:S]):
            released[0] = True
            bound[:] = float(np.max(t_now[:S]))
        return True

    grid = np.concatenate([[0.0], np.geomspace(t_first, t_max, max(2, int(math.ceil(per_decade * math.log10(t_max / t_first))) + 1))])
    run = integrate_batch(lambda _t, y: field.field(y), Y0, newton=field, t_bound=bound, rtol=tol, atol=atol,
                          first_step=min(t_first, t_max), sizes=np.concatenate([sizes, sizes])[:nb], record=grid,
                          observe=observe, events=events, control=control, layout=layout,
                          fun_cost=lambda w: field.costs(H, field.rank_of(w), D)[0], budget=budget, latest=True,
                          tick=tick, what="population gradient flow")
    T = float(np.max(run.t_end[:S]))
    n_rec = int(np.searchsorted(grid, T, side="right"))
    n_rec = min([n_rec] + [int(np.sum(np.isfinite(run.obs[k, :, 0]))) for k in range(S)])
    t = grid[:n_rec]
    obs = run.obs[:S, :n_rec]
    M = obs[..., :D * D].reshape(S, n_rec, D, D)
    heads = obs[..., D * D:].reshape(S, n_rec, H, D)
    v, K, Q, _ = field.parts(run.y[:S])
    Rmax = K0.shape[2]
    final = {"r": v[:, :, None].copy(), "K": np.zeros((S, H, Rmax, D)), "Q": np.zeros((S, H, Rmax, D))}
    final["K"][:, :, :R] = K
    final["Q"][:, :, :R] = Q
    short = run.budget_hit & (run.t_end < bound)  # rows the budget stopped before their end
    stopped = ["budget" if short[k] or (run.budget_hit and not released[0]) else "stop" if by_rule[k] else "t_max"
               for k in range(S)]
    loss = pop.population_mse(M, lam, N)
    solver = {"method": "NDF", "jacobian": "analytic (structured: per-head blocks + rank 2H + D²)",
              "rtol": float(run.rtol[0]), "atol_rel": atol_rel, "t_end": float(t[-1]), "rows": nb,
              "stopped": stopped, "work": [run.work.as_dict()], "total_work": run.work.flops,
              "events": run.events[:S].copy(), "undone": [list(u) for u in run.undone[:S]],
              "steps": [int(x) for x in run.work.steps]}
    if check is not None:
        ev_a, ev_b = run.events[:S], np.where(run.events[S:] <= T, run.events[S:], np.nan)
        fa, fb = np.isfinite(ev_a), np.isfinite(ev_b)
        with np.errstate(divide="ignore", invalid="ignore"):
            de = np.where(fa & fb, np.abs(np.log(ev_a) - np.log(ev_b)), np.where(fa != fb, np.inf, 0.0))
        de = np.where(fa & fb & (ev_a == ev_b), 0.0, de)
        Mb = run.obs[S:, :n_rec, :D * D].reshape(S, n_rec, D, D)
        with np.errstate(invalid="ignore"):
            delta = loss - pop.population_mse(Mb, lam, N)
        solver["accuracy"] = _accuracy_record(
            check, rtol / check, np.max(de, axis=1, initial=0.0), delta, per_decade,
            ["budget" if short[S + k] or (run.budget_hit and not released[0]) else "bound" for k in range(S)], None)
    return Run(t, loss, M, final, float("nan"), int(run.work.steps[:S].sum()), heads=heads, solver=solver)


def _scipy_population_flow(lam, N: int, params: dict, *, t_max: float, t_first: float, n_learn,
                           settle: float, rtol: float, atol_rel: float, budget: float,
                           per_decade: int = 300, tick=None, method: str = "LSODA",
                           check: float | None = CHECK_FACTOR):
    """:func:`separate_population_flow` with one SciPy solver (LSODA or BDF) per group of rows."""

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
                                       check=check, n_rec=n_rec)
        solver["total_work"] = spent
    return Run(t, pop.population_mse(M, lam, N), M, final, float("nan"),
               int(sum(sol.work.steps for sol in sols)), heads=heads, solver=solver)


def finite_sample_field(moments, H: int, R: int):
    r"""The gradient flow of the whole ATTN_S model (:class:`~._models.SeparateHeads`, H heads of
    rank R) on the quadratic form ``moments``, for rows of parameter vectors (r (H, A), K (H, R,
    B), Q (H, R, D) concatenated): (fun, theta, unpack) — ``fun(t, y)`` = −∂L_{1/2}/∂params (the
    model's pullback of CΘ − g, in batched matrix products), ``theta(y)`` the rows' Θ, ``unpack(y)``
    the parameter dict."""
    A_, B_, D = moments.A, moments.B, moments.D
    shapes = [(H, A_), (H, R, B_), (H, R, D)]
    sizes = [int(np.prod(sh)) for sh in shapes]
    C, gvec = moments.on()

    def unpack(y):
        out, k0 = {}, 0
        for name, sh, m in zip(("r", "K", "Q"), shapes, sizes):
            out[name] = y[:, k0:k0 + m].reshape((-1,) + sh)
            k0 += m
        return out

    def heads(y):
        p = unpack(y)
        KQ = np.swapaxes(p["K"], -1, -2) @ p["Q"]  # (r, H, B, D): K_iᵀQ_i
        theta = (np.swapaxes(p["r"], 1, 2) @ KQ.reshape(y.shape[0], H, -1)).reshape(y.shape[0], -1)
        return p, KQ, theta

    def fun(_t, y):
        p, KQ, theta = heads(y)
        r = y.shape[0]
        Gt = (theta @ C - gvec).reshape(r, A_, -1)  # ∂L/∂Θ as (A, B·D)
        g_r = KQ.reshape(r, H, -1) @ np.swapaxes(Gt, 1, 2)  # (r, H, A)
        Gr = (p["r"] @ Gt).reshape(r, H, B_, D)  # ∂L/∂(K_iᵀQ_i)
        g_K = p["Q"] @ np.swapaxes(Gr, -1, -2)
        g_Q = p["K"] @ Gr
        return -np.concatenate([g_r.reshape(r, -1), g_K.reshape(r, -1), g_Q.reshape(r, -1)], axis=1)

    return fun, (lambda y: heads(y)[2]), unpack


def finite_sample_separate_flow(moments, params: dict, lam, N: int, *, H: int, t_end: float, t_first: float,
                                rtol: float, atol_rel: float, budget: float, per_decade: int = 300,
                                method: str = "NDF", n_learn: int | None = None, settle: float = 1.0,
                                tick=None, check: float | None = CHECK_FACTOR):
    r"""The gradient flow of the whole ATTN_S model on the training loss of the sequences behind
    ``moments`` (the O(F²) quadratic form of :class:`~._models.QuadraticMoments`), from the
    full-model ``params`` (one seed row) to ``t_end``, adaptively: ``method`` ``"NDF"``
    (default: :func:`icltheory.dynamics.integrate_batch`, the run and its accuracy re-solve in
    one lockstep batch, the Jacobian by finite differences of the batched field: n evaluations
    of an O(F²) field, n = H(D+1)(1+R)+HRD) or ``"BDF"`` (SciPy's, its own finite differences).
    With ``n_learn``: each direction's learning time (learned fraction of the relevant block M
    crossing ½) is an event, and the run stops once ``n_learn`` directions are learned and it
    has gone on ``settle`` × the last learning time (``solver["stopped"]`` is then ``"stop"``;
    ``t_end`` is only the horizon) — this run's own horizon, not another simulator's.  Records
    on the grid of :func:`separate_population_flow` and at its end; returns a
    :class:`~._training.Run` with the training loss and the relevant block M(t)
    (:func:`~._models.label_block`: the coefficient on the label × input features), whose
    population loss is the run's ``loss``; ``check``: as in :func:`separate_population_flow`
    (the re-solve's loss difference is the relevant block's population loss)."""
    if method != "NDF":
        return _scipy_finite_sample_flow(moments, params, lam, N, H=H, t_end=t_end, t_first=t_first, rtol=rtol,
                                         atol_rel=atol_rel, budget=budget, per_decade=per_decade, method=method,
                                         n_learn=n_learn, settle=settle, tick=tick, check=check)
    from icltheory.dynamics import DenseNewton, integrate_batch

    from . import _training as training
    from ._models import label_block
    from ._training import Run

    names = ("r", "K", "Q")
    Cg = moments.on()
    D = moments.D
    F = moments.C.shape[0]
    fun, theta_of, unpack = finite_sample_field(moments, H, params["K"].shape[2])
    y0 = np.concatenate([np.asarray(params[k], float)[0].ravel() for k in names])
    n = y0.size
    scale = float(np.sqrt(np.mean(y0[y0 != 0] ** 2))) if np.any(y0 != 0) else 1.0

    def jac(t, y):
        """Forward differences of the batched field, one perturbed state per coordinate."""
        r = y.shape[0]
        hstep = np.sqrt(np.finfo(float).eps) * np.maximum(np.abs(y), scale)  # (r, n)
        Y = np.repeat(y[:, None, :], n + 1, axis=1)
        idx = np.arange(n)
        Y[:, idx + 1, idx] += hstep
        f = fun(None, Y.reshape(r * (n + 1), n)).reshape(r, n + 1, n)
        return np.swapaxes((f[:, 1:] - f[:, :1]) / hstep[:, :, None], 1, 2)

    events = None
    if n_learn is not None:
        def events(y):
            return training.learned_fractions(label_block(theta_of(y), D), lam, N) - 0.5

    def observe(y):
        th = theta_of(y)
        return np.concatenate([th, np.asarray(moments.mse(th, Cg=Cg))[:, None]], axis=1)

    nb = 2 if check is not None else 1
    tol = np.array([rtol, rtol / check])[:nb] if check is not None else np.array([rtol])
    bound = np.full(nb, float(t_end))
    t_now = np.zeros(nb)
    by_rule = [False]

    def control(rows, t, ev):
        t_now[rows] = t
        if n_learn is None or by_rule[0] or rows[0] != 0:
            return False
        done = np.isfinite(ev[0])
        if done.sum() < n_learn:
            bound[0] = float(t_end)
            return True
        bound[0] = max(float(t[0]), (1.0 + settle) * float(np.max(ev[0][done])))
        if t[0] >= bound[0]:
            by_rule[0] = True
            bound[1:] = bound[0]
        return True

    grid = np.concatenate([[0.0], np.geomspace(t_first, t_end, max(2, int(math.ceil(per_decade * math.log10(t_end / t_first))) + 1))])
    run = integrate_batch(fun, np.repeat(y0[None], nb, axis=0),
                          newton=DenseNewton(jac, nb, n, jac_cost=BLAS3_WORK * (n + 1) * 4.0 * F * F), t_bound=bound, rtol=tol, atol=atol_rel * scale * tol / rtol, first_step=min(t_first, t_end),
                          record=grid, observe=observe, events=events, control=control, fun_cost=4.0 * F * F,
                          budget=budget, latest=True, tick=tick, what="finite-sample gradient flow")
    T = float(run.t_end[0])
    n_rec = int(np.searchsorted(grid, T, side="right"))
    t = grid[:n_rec]
    end = observe(run.y)
    obs = run.obs[:, :n_rec]
    if t[-1] < T:
        t = np.concatenate([t, [T]])
        obs = np.concatenate([obs, end[:, None]], axis=1)
    thetas = obs[0, :, :F]
    M = label_block(thetas, D)[None]
    train = obs[0, :, F][None]
    final = {k: v for k, v in unpack(run.y[:1]).items()}
    stopped = "budget" if run.budget_hit and run.t_end[0] < bound[0] else "stop" if by_rule[0] else "t_max"
    loss = pop.population_mse(M, lam, N)
    solver = {"method": "NDF", "rtol": float(rtol), "atol_rel": atol_rel, "t_end": T, "stopped": [stopped],
              "work": [run.work.as_dict()], "total_work": run.work.flops,
              "jacobian": "finite differences (batched)"}
    if n_learn is not None:
        solver["events"] = run.events[:1].copy()
        solver["undone"] = [list(run.undone[0])]
    if check is not None:
        ea, eb = run.events[0], np.where(run.events[1] <= T, run.events[1], np.nan)
        fa, fb = np.isfinite(ea), np.isfinite(eb)
        with np.errstate(divide="ignore", invalid="ignore"):
            de = np.where(fa & fb, np.abs(np.log(ea) - np.log(eb)), np.where(fa != fb, np.inf, 0.0))
        de = np.where(fa & fb & (ea == eb), 0.0, de)
        with np.errstate(invalid="ignore"):
            delta = loss - pop.population_mse(label_block(obs[1, :, :F], D), lam, N)[None]
        short = run.budget_hit and run.t_end[1] < bound[1]
        solver["accuracy"] = _accuracy_record(check, rtol / check, [float(np.max(de, initial=0.0))], delta, per_decade,
                                              ["budget" if short else "bound"], None)
    return Run(t, loss, M, final, float("nan"), int(run.work.steps[0]), train_loss=train, solver=solver)


def _scipy_finite_sample_flow(moments, params: dict, lam, N: int, *, H: int, t_end: float, t_first: float,
                              rtol: float, atol_rel: float, budget: float, per_decade: int, method: str,
                              n_learn: int | None, settle: float, tick, check: float | None):
    """:func:`finite_sample_separate_flow` with SciPy's solver (its own finite-difference Jacobian)."""
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
                                       per_decade=per_decade, check=check, n_rec=sol.t.size)
        solver["total_work"] = sol.work.flops + ref.work.flops
    return Run(sol.t, pop.population_mse(M, lam, N), M, final, float("nan"), int(sol.work.steps),
               train_loss=train, solver=solver)
