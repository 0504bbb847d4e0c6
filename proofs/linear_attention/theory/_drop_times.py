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
* After a head has learned a direction $d$ its overlaps with a smaller direction $d'$ *decay*:
  linearised at the learned head ($v=k_d=q_d=v_\star$), the off-diagonal residual gives the
  pair $(k_{d'},q_{d'})$ a Jacobian with negative trace and determinant
  $v_\star^2\lambda_{d'}^3(\lambda_dc_{d'}/c_d-\lambda_{d'})>0$ — stable whenever
  $\lambda_dc_{d'}/c_d>\lambda_{d'}$.  The diagonal reduction does not see this, so for the
  **later drops** the *sequential* reduction integrates it from drop to drop and, at each drop,
  takes the head with the largest share of the learned direction out of the competition for
  the others (its other overlaps set to zero): an informational estimate.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.integrate import solve_ivp

from icltheory.core import Derivation, NumericalTrouble, derived
from icltheory.symbolic import lowered

from . import _population as popm
from ._paper import paper

__all__ = ["DropTimeOde", "drop_time_ode", "residual_diagonal", "drop_times", "first_drop_gd",
           "first_drop_gd_with_error", "first_drop_gd_full_residual", "first_drop_flow", "learned_scales",
           "ODE_RTOL"]

#: relative tolerance of the DOP853 integration of the per-head ODE
ODE_RTOL = 1e-10


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
        I = sp.ImmutableMatrix
        d.step("τv̇ = ⟨E, k qᵀ⟩ = Σ_d e_d k_d q_d for diagonal E",
               sp.UnevaluatedExpr(sp.Trace(sp.MatMul(I(Ed.T), I(k), I(q.T), evaluate=False))),
               sum(es[i] * k[i] * q[i] for i in range(D)),
               "SeparateDynamics: τv̇ = ⟨E, KᵀQ⟩ = tr(Eᵀ kqᵀ), rank 1, E = diag(e)")
        # products of explicit matrices, unevaluated (wrapped: the verifier multiplies them out with
        # doit(), much faster than forming each entry as a symbolic sum)
        d.step("τk̇ = v E q: τk̇_d = v e_d q_d", sp.UnevaluatedExpr(sp.MatMul(v, I(Ed), I(q), evaluate=False)),
               sp.Matrix([v * es[i] * q[i] for i in range(D)]), "SeparateDynamics: τK̇ = v Q Eᵀ (E diagonal)")
        d.step("τq̇ = v E k: τq̇_d = v e_d k_d", sp.UnevaluatedExpr(sp.MatMul(v, I(Ed), I(k), evaluate=False)),
               sp.Matrix([v * es[i] * k[i] for i in range(D)]), "SeparateDynamics: τQ̇ = v K E")
        lam, c, m = sp.symbols("lambda c m", positive=True)
        d.step("e_d vanishes at the learned value M_dd = 1/(λ_d c_d)",
               sp.Subs(residual_diagonal(lam, c, m), m, 1 / (lam * c)), 0,
               "substitute M_dd = 1/(λc): so a direction's drop is M_dd reaching half of 1/(λc)")
        d.say("Off-diagonal entries of M enter E only through E[ββᵀ] M Λ, so dropping them changes the "
              "flow by terms of second order in the off-diagonal weights: exact to first order while the "
              "weights are small (the first plateau and its escape).")
        l1, l2 = pop.lams[0], pop.lams[1]
        c1, c2, w = sp.symbols("c_1 c_2 w", positive=True)
        ka, rh, k2, q2 = sp.symbols("kappa rho k_2 q_2", real=True)
        kk, qq = sp.Matrix([ka, k2]), sp.Matrix([rh, q2])
        Lam2 = sp.diag(l1, l2)
        Ef = Lam2**2 - sp.diag(l1**2 * c1, l2**2 * c2) * (v * kk * qq.T) * Lam2
        kdot, qdot = v * Ef * qq, v * Ef.T * kk
        J = sp.Matrix([[sp.diff(kdot[1], k2), sp.diff(kdot[1], q2)],
                       [sp.diff(qdot[1], k2), sp.diff(qdot[1], q2)]]).subs({k2: 0, q2: 0}).subs({v: w, ka: w, rh: w})
        J = J.subs(c1, 1 / (l1 * w**3))
        vs = w
        d.say("A head that has learned e_1 (v = k_1 = q_1 = w with w³λ_1c_1 = 1, so c_1 = 1/(λ_1w³)) with "
              "small overlaps (k_2, q_2) on e_2: the full residual E = Λ² − E[ββᵀ]MΛ (off-diagonal entries "
              "included; E[ββᵀ] = diag(λ_d²c_d) from the population section) linearised in (k_2, q_2).")
        d.step("trace of the (k_2, q_2) Jacobian: −w(λ_1λ_2²c_2w³ + λ_1λ_2) < 0", J.trace(),
               -w * (l1 * l2**2 * c2 * w**3 + l1 * l2), "τk̇ = vEq, τq̇ = vEᵀk with E_21 = −E[ββᵀ]_22 M_21 λ_1, "
               "E_12 = −E[ββᵀ]_11 M_12 λ_2, E_22 = λ_2²")
        d.step("its determinant: w²λ_2³(λ_1c_2/c_1 − λ_2)", J.det(), vs**2 * l2**3 * (l1 * c2 * l1 * w**3 - l2),
               "2×2 determinant (c_1 = 1/(λ_1w³))")
        C1, C2 = pop.c[0], pop.c[1]
        d.step("λ_1c_2 − λ_2c_1 = (λ_1 − λ_2)(1 + (1 + tr Λ(λ_1 + λ_2)/(λ_1λ_2))/N)", l1 * C2 - l2 * C1,
               (l1 - l2) * (1 + (1 + pop.tr * (l1 + l2) / (l1 * l2)) / popm.N),
               "expand c_d: the determinant is positive iff λ_1 > λ_2")
        d.say("So the learned head's overlaps with a smaller direction (λ_2 < λ_1) decay: it leaves the "
              "competition for the others. The sequential reduction integrates the diagonal reduction "
              "from drop to drop and, at each drop, zeroes the winning head's other overlaps.")
        self.derivation = d
        self._e = lowered((lam, c, m), residual_diagonal(lam, c, m), "numpy")

    def residual(self, lam, c, m):
        return self._e(lam, c, m)


@derived
def drop_time_ode() -> DropTimeOde:
    return DropTimeOde()


def _c(lambdas, N):
    lam = np.asarray(lambdas, float)
    return lam, np.asarray(popm.c_coefficient(lam, float(lam.sum()), float(N)), float)


def learned_scales(lambdas, N: int) -> np.ndarray:
    r"""$v_\star=(\lambda_dc_d)^{-1/3}$ per direction: the balanced head's scale once it has learned
    direction $d$ ($v\,k_d\,q_d=1/(\lambda_dc_d)$)."""
    lam, c = _c(lambdas, N)
    return (lam * c) ** (-1.0 / 3.0)


def drop_times(lambdas, N: int, heads: dict, horizon: float, n_drops: int | None = None,
               rtol: float | None = None) -> list[list[float]]:
    """Per seed row: the sequential reduction's drop times (τ, increasing; at most min(H, D)
    and ``n_drops``, fewer if the horizon ends first); the first is the claimed prediction.
    ``rtol``: the integration's relative tolerance (default :data:`ODE_RTOL`)."""
    lam, c = _c(lambdas, N)
    ode = drop_time_ode()
    mstar = 1.0 / (lam * c)
    H, D = heads["K"].shape[1:]

    def unpack(y):
        return y[:H], y[H:H + H * D].reshape(H, D), y[H + H * D:].reshape(H, D)

    def rhs(t, y, free, done):
        v, k, q = unpack(y)
        e = ode.residual(lam, c, np.einsum("h,hd,hd->d", v, k, q))
        return np.concatenate([(k * q * e).sum(1), (free * v[:, None] * e * q).ravel(),
                               (free * v[:, None] * e * k).ravel()])

    def event(t, y, free, done):
        v, k, q = unpack(y)
        f = np.einsum("h,hd,hd->d", v, k, q) / mstar
        return float(np.max(np.where(done, -1.0, f))) - 0.5

    out = []
    for s in range(heads["v"].shape[0]):
        y = np.concatenate([heads["v"][s], heads["K"][s].ravel(), heads["Q"][s].ravel()])
        free = np.ones((H, D))
        done = np.zeros(D, bool)
        t0, times = 0.0, []
        while len(times) < min(H, D, n_drops if n_drops is not None else D):
            t1, y1 = _segment(rhs, y, t0, horizon, event, (free, done), ODE_RTOL if rtol is None else rtol)
            if y1 is None:
                break
            v, k, q = unpack(y1)
            f = np.where(done, -1.0, np.einsum("h,hd,hd->d", v, k, q) / mstar)
            d = int(np.argmax(f))
            i = int(np.argmax(v * k[:, d] * q[:, d]))
            done = done.copy()
            done[d] = True
            k, q = k.copy(), q.copy()
            others = np.arange(D) != d
            k[i, others] = 0.0
            q[i, others] = 0.0
            free = free.copy()
            free[i, others] = 0.0
            y = np.concatenate([v, k.ravel(), q.ravel()])
            t0 = t1
            times.append(t1)
        out.append(times)
    return out


def first_drop_gd(lambdas, N: int, heads: dict, lr: float, max_steps: int) -> list[float]:
    r"""Per seed: the first drop of **GD at step** ``lr`` (τ per step) on the same diagonal reduction —
    its explicit Euler map $y_{n+1}=y_n+\eta f(y_n)$, which is what gradient descent on the reduced
    model does — as a time $t=n\eta$, linearly interpolated between the two steps around the
    crossing $\max_dM_{dd}\lambda_dc_d=\tfrac12$ (inf: none within ``max_steps``).  Against the
    flow's time (:func:`drop_times`) this carries GD's own lag behind its flow, which grows with
    the step; what is left against a trained model is the reduction's error."""
    return _first_drop_gd(lambdas, N, heads, lr, max_steps)[0]


def first_drop_gd_with_error(lambdas, N: int, heads: dict, lr: float,
                             max_steps: int) -> tuple[list[float], list[float]]:
    """:func:`first_drop_gd` and, per seed, its measured interpolation error, relative — how far
    the crossing moves when the last three steps' values are interpolated by a parabola instead
    of the last two by a line (0 where there is no drop or fewer than three steps) — from one run
    of the map (a step-by-step loop)."""
    return _first_drop_gd(lambdas, N, heads, lr, max_steps)


def first_drop_gd_full_residual(lambdas, N: int, heads: dict, lr: float, max_steps: int) -> list[float]:
    r"""Per seed: the first drop of GD at step ``lr`` on the same overlaps with the **full** residual
    $E=\Lambda^2-\mathbb E[\beta\beta^\top]M\Lambda$ — its off-diagonal entries
    $-\mathbb E[\beta_d^2]\lambda_eM_{de}$ kept, which the diagonal reduction leaves out (the
    derivation's first step; the diagonal is the reduction's own $e_d$).  How far this moves a
    seed's first drop from :func:`first_drop_gd` is the reduction's error estimated on the
    theory's side: small while the heads grow along separate directions, larger where a few
    heads grow along two nearly tied directions at once (their off-diagonal $M_{de}$ then grows
    with the diagonal)."""
    return _first_drop_gd(lambdas, N, heads, lr, max_steps, full=True)[0]


def _first_drop_gd(lambdas, N, heads, lr, max_steps, full: bool = False):
    lam, c = _c(lambdas, N)
    ode = drop_time_ode()
    mstar = 1.0 / (lam * c)
    v, k, q = (np.array(heads[x], dtype=float) for x in ("v", "K", "Q"))  # (S, H), (S, H, D) × 2
    S = v.shape[0]
    if full:  # −E[β_d²]λ_e: the off-diagonal residual's factor (the population section's numbers)
        off = -np.asarray(paper().beta_diag(lambdas, N), float)[:, None] * lam[None, :]
        idx = np.arange(lam.size)
    out, err = np.full(S, np.inf), np.zeros(S)
    live = np.ones(S, bool)
    f1 = np.full(S, np.nan)  # f one step back
    f2 = np.full(S, np.nan)  # two steps back
    with np.errstate(over="ignore", invalid="ignore"):
        for n in range(int(max_steps) + 1):
            if full:
                Mf = np.einsum("sid,sie->sde", v[:, :, None] * k, q)  # (S, D, D)
                m = np.diagonal(Mf, axis1=1, axis2=2)
            else:
                m = (v[:, :, None] * k * q).sum(1)  # (S, D): the diagonal M_dd
            f = np.max(m / mstar, axis=1)
            if not np.all(np.isfinite(f[live])):
                raise NumericalTrouble("GD on the per-head " + ("overlaps (full residual)" if full else "reduction")
                                       + " diverged before the first drop: lower lr")
            for s_ in np.flatnonzero(live & (f >= 0.5)):
                if n == 0:
                    out[s_] = 0.0
                else:
                    lin = (0.5 - f1[s_]) / (f[s_] - f1[s_])
                    out[s_] = (n - 1 + lin) * lr
                    if n >= 2:  # the parabola through (n-2, n-1, n): its root in [n-1, n]
                        a = 0.5 * (f[s_] - 2.0 * f1[s_] + f2[s_])
                        b = 0.5 * (f[s_] - f2[s_])
                        roots = np.roots([a, b, f1[s_] - 0.5]) if a != 0.0 else np.array([lin])
                        roots = roots[np.isreal(roots)].real
                        roots = roots[(roots >= -1e-12) & (roots <= 1.0 + 1e-12)]
                        if roots.size:
                            err[s_] = abs(float(roots[0]) - lin) * lr / max(out[s_], lr)
                live[s_] = False
            if not live.any():
                break
            if full:
                E = off * Mf
                E[:, idx, idx] = ode.residual(lam, c, m)
                dv = np.einsum("sid,sde,sie->si", k, E, q)  # τv̇ = kᵀEq, τk̇ = vEq, τq̇ = vEᵀk
                dk = v[:, :, None] * np.einsum("sde,sie->sid", E, q)
                dq = v[:, :, None] * np.einsum("sde,sid->sie", E, k)
            else:
                e = ode.residual(lam, c, m)[:, None, :]  # (S, 1, D)
                dv = (k * q * e).sum(2)
                dk = v[:, :, None] * e * q
                dq = v[:, :, None] * e * k
            v, k, q = v + lr * dv, k + lr * dk, q + lr * dq
            f2, f1 = f1, f
    return [float(x) for x in out], [float(x) for x in err]


def first_drop_flow(lambdas, N: int, heads: dict, horizon: float,
                    factor: float = 10.0) -> tuple[list[float | None], list[float]]:
    """Each seed's first drop time of the flow (the per-head ODE at :data:`ODE_RTOL`; None where
    it does not drop within the horizon) and its measured numerical error: |ln(T₁/T₁′)|, T₁′ from
    the same ODE re-solved at ``factor`` × tighter tolerances (0 where neither drops within the
    horizon, inf where one does and the other does not)."""
    a = drop_times(lambdas, N, heads, horizon, n_drops=1)
    b = drop_times(lambdas, N, heads, horizon, n_drops=1, rtol=ODE_RTOL / factor)
    err = []
    for x, y in zip(a, b):
        err.append(0.0 if not x and not y else float("inf") if not x or not y else abs(float(np.log(x[0] / y[0]))))
    return [float(x[0]) if x else None for x in a], err


#: the most right-hand sides one segment of the per-head ODE may take (DOP853: 12 a step; at the
#: defaults and 40 random settings at most 9641 were taken, measured): a stiff start — an init
#: far above its learned scale — would otherwise step on for minutes
MAX_RHS = 60_000


class _TooStiff(Exception):
    pass


def _segment(rhs, y0, t0, horizon, event, args, rtol):
    event.terminal = True
    event.direction = 1
    calls = [0]

    def counted(t, y, *a):
        calls[0] += 1
        if calls[0] > MAX_RHS:
            raise _TooStiff
        return rhs(t, y, *a)

    try:
        with np.errstate(over="ignore", invalid="ignore"):  # a trial step too long overflows; it is rejected
            sol = solve_ivp(counted, (t0, horizon), y0, method="DOP853", rtol=rtol,
                            atol=1e-14 * max(1.0, np.abs(y0).max()) * (rtol / ODE_RTOL), events=[event], args=args)
    except _TooStiff:
        raise NumericalTrouble(f"the per-head ODE took {MAX_RHS} right-hand sides before t = {horizon:.3g} τ (a "
                               "stiff start: an init far above its learned scale has no plateau to predict)") from None
    if sol.status < 0 or not np.all(np.isfinite(sol.y[:, -1])):
        raise NumericalTrouble(f"the per-head ODE integration failed: {sol.message}")
    if not len(sol.t_events[0]):
        return horizon, None
    return float(sol.t_events[0][0]), sol.y_events[0][0].copy()
