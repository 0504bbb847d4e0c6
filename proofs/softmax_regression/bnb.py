r"""A certified upper bound on the gradient's Lipschitz constant by branch and bound (theory side).

The bound is $R^2\sup\psi$ over the reduced domain of :mod:`.theory_hessian` (the derived
$\psi$, lowered to interval arithmetic; nothing else is typed here).  Domain, using the
symmetries of $\psi$ (a simultaneous permutation of the logits and the direction; $v\mapsto-v$;
for the normalized loss shifts of $z$ and $v$ along $\mathbf 1$):

* normalized: $z_0\ge z_1\ge\dots\ge z_{n-1}=0$ with centred norm $\le\rho=R^2$; $v$ with
  $v_{n-1}=0$ on a face $v_i=1$ of the cube $[-1,1]^{n-1}$ ($\psi$ is 0-homogeneous in $v$);
* rescaled: $z_0\ge\dots\ge z_{n-1}$, $\|z\|\le\rho$; $v$ on a face $v_i=1$ of $[-1,1]^n$.

Over a box the softmax weights are enclosed exactly per coordinate ($f_k$ increases with
$z_k$ and decreases with the others) with $e^{z}$ enclosed in arb at the box corners; the rest is
outward-rounded interval arithmetic (:mod:`icltheory.bounds._interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from icltheory.bounds._interval import (Dual, Interval, branch_and_bound, centred_upper, dual_gradient,
                                        exp_interval, lambdify_interval)
from icltheory.core import cached

from . import theory_hessian

__all__ = ["Band", "certified_band", "certified_upper", "reduced_value"]


@dataclass(frozen=True)
class Band:
    """``upper``: certified upper bound on the gradient's Lipschitz constant; ``best``: the
    largest value of R²ψ found at a point of the domain (a float, not a certificate: the
    certified lower end comes from an explicit pair in the experiments); ``argmax``: that
    point (z, v); ``status``: "target", "time" or "boxes"."""

    loss: str
    n: int
    R: float
    upper: float
    best: float
    argmax: tuple | None
    status: str
    seconds: float
    boxes: int


@cached
def _lowered(loss: str, n: int):
    rh = theory_hessian.reduced_hessian(loss, n)
    args = list(rh.x) + list(rh.v)
    value = lambdify_interval(args, rh.psi)
    return rh, value, sp.lambdify(args, rh.psi, "numpy"), dual_gradient(value)


def reduced_value(loss: str, z: np.ndarray, v: np.ndarray) -> np.ndarray:
    """ψ at points (rows of z, v), float (the theory's own lowering; f or u from z by exp)."""
    z, v = np.atleast_2d(z), np.atleast_2d(v)
    n = z.shape[1]
    _, _, fn, _ = _lowered(loss, n)
    e = np.exp(z - z.max(axis=1, keepdims=True)) if loss == "normalized" else np.exp(z)
    x = e / e.sum(axis=1, keepdims=True) if loss == "normalized" else e
    with np.errstate(all="ignore"):
        out = fn(*x.T, *v.T)
    return np.where(np.isfinite(out), out, -np.inf)


def _centred_min_sq(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min over the box of Σ (z_k − mean z)² = min_c Σ dist(c, [lo_k, hi_k])² (exact: the
    minimiser is a breakpoint or the stationary point of one quadratic piece)."""
    ends = np.sort(np.concatenate([lo, hi], axis=1), axis=1)
    cands = [ends]
    for s in range(ends.shape[1] - 1):
        a, b = ends[:, s:s + 1], ends[:, s + 1:s + 2]
        mid = 0.5 * (a + b)
        below = lo > mid  # c < lo_k on this piece
        above = hi < mid
        cnt = below.sum(1, keepdims=True) + above.sum(1, keepdims=True)
        tot = (lo * below).sum(1, keepdims=True) + (hi * above).sum(1, keepdims=True)
        c = np.where(cnt > 0, tot / np.maximum(cnt, 1), mid)
        cands.append(np.clip(c, a, b))
    c = np.concatenate(cands, axis=1)[:, :, None]  # (B, C, 1)
    dist = np.maximum(lo[:, None, :] - c, 0.0) + np.maximum(c - hi[:, None, :], 0.0)
    return (dist ** 2).sum(axis=2).min(axis=1)


def _softmax_enclosure(E: Interval, n: int) -> list:
    """f = softmax(z) over boxes, from the enclosure E of e^{z_0..z_{n−2}} (e^{z_{n−1}} = 1):
    exact per coordinate up to rounding (f_k increases with z_k and decreases with the
    others, so its extremes are at opposite corners)."""
    ones = np.ones((E.lo.shape[0], 1))
    E = Interval(np.concatenate([E.lo, ones], 1), np.concatenate([E.hi, ones], 1))
    xs = []
    for k in range(n):
        s_lo = Interval(np.zeros(E.lo.shape[0]))
        s_hi = Interval(np.zeros(E.lo.shape[0]))
        for j in range(n):
            if j != k:
                s_lo = s_lo + Interval(E.lo[:, j])
                s_hi = s_hi + Interval(E.hi[:, j])
        e_lo, e_hi = Interval(E.lo[:, k]), Interval(E.hi[:, k])
        f_lo = (e_lo / (e_lo + Interval(s_hi.hi))).lo
        f_hi = (e_hi / (e_hi + Interval(s_lo.lo))).hi
        xs.append(Interval(np.maximum(f_lo, 0.0), np.minimum(f_hi, 1.0)))
    return xs


class _Problem:
    """Boxes over (z free coordinates, v coordinates) for one loss and n."""

    def __init__(self, loss: str, n: int, rho: float):
        self.loss, self.n, self.rho = loss, n, rho
        self.nz = n - 1 if loss == "normalized" else n
        self.nv = n - 1 if loss == "normalized" else n
        _, self.f_int, _, self.g_int = _lowered(loss, n)

    def initial(self):
        zmax = self.rho * math.sqrt(2.0) if self.loss == "normalized" else self.rho
        zlo = 0.0 if self.loss == "normalized" else -self.rho
        los, his = [], []
        for face in range(self.nv):
            lo = np.concatenate([np.full(self.nz, zlo), np.full(self.nv, -1.0)])
            hi = np.concatenate([np.full(self.nz, zmax), np.full(self.nv, 1.0)])
            lo[self.nz + face] = hi[self.nz + face] = 1.0
            los.append(lo)
            his.append(hi)
        scale = np.concatenate([np.full(self.nz, zmax - zlo), np.full(self.nv, 2.0)])
        return np.array(los), np.array(his), scale

    def _zv(self, pts):
        z, v = pts[:, :self.nz], pts[:, self.nz:]
        if self.loss == "normalized":
            z = np.concatenate([z, np.zeros((len(z), 1))], axis=1)
            v = np.concatenate([v, np.zeros((len(v), 1))], axis=1)
        return z, v

    def infeasible(self, lo, hi):
        zl, zh = lo[:, :self.nz], hi[:, :self.nz]
        unsorted = np.any(zl[:, 1:] > zh[:, :-1], axis=1)
        if self.loss == "normalized":
            zl = np.concatenate([zl, np.zeros((len(zl), 1))], axis=1)
            zh = np.concatenate([zh, np.zeros((len(zh), 1))], axis=1)
            m = _centred_min_sq(zl, zh)
        else:
            m = (np.maximum(zl, 0.0) ** 2 + np.maximum(-zh, 0.0) ** 2).sum(axis=1)
        return unsorted | (m > self.rho ** 2 * (1 + 1e-9))

    def value(self, pts):
        z, v = self._zv(pts)
        if self.loss == "normalized":
            ok = ((z - z.mean(1, keepdims=True)) ** 2).sum(1) <= self.rho ** 2
        else:
            ok = (z ** 2).sum(1) <= self.rho ** 2
        return np.where(ok, reduced_value(self.loss, z, v), -np.inf)

    def polish(self, x0, lo, hi):
        """Nelder–Mead on ψ from x0 within the initial box bounds (the face stays fixed)."""
        from scipy.optimize import minimize

        free = lo < hi
        base = np.asarray(x0, dtype=float).copy()

        def neg(y):
            x = base.copy()
            x[free] = np.clip(y, lo[free], hi[free])
            v = self.value(x[None, :])[0]
            return -v if np.isfinite(v) else 0.0

        r = minimize(neg, base[free], method="Nelder-Mead",
                     options={"maxiter": 400, "xatol": 1e-9, "fatol": 1e-13})
        x = base.copy()
        x[free] = np.clip(r.x, lo[free], hi[free])
        return float(self.value(x[None, :])[0]), x

    def _monotone(self, lo, hi, xs, grads):
        """Boxes that cannot contain a maximiser: ψ strictly monotone along a coordinate in
        which every point of the box can move (inside the domain) in the increasing
        direction.  (If a maximiser x* lay in such a box, x* + εe_k would be feasible and
        larger.)  Needs the box strictly inside the norm ball and off the sortedness and face
        walls in that coordinate."""
        nz, n = self.nz, self.n
        zl, zh = lo[:, :nz], hi[:, :nz]
        if self.loss == "normalized":
            zl0 = np.concatenate([zl, np.zeros((len(zl), 1))], 1)
            zh0 = np.concatenate([zh, np.zeros((len(zh), 1))], 1)
            m = 0.5 * (zl0 + zh0).mean(axis=1, keepdims=True)
            big = (np.maximum((zl0 - m) ** 2, (zh0 - m) ** 2)).sum(axis=1)
        else:
            big = np.maximum(zl ** 2, zh ** 2).sum(axis=1)
        inside = big < self.rho ** 2 * (1 - 1e-9)
        gx, gv = grads[:n], grads[n:]
        drop = np.zeros(len(lo), bool)
        for j in range(nz):
            if self.loss == "normalized":
                dj = None
                for k in range(n):
                    t = gx[k] * (xs[k] * ((1.0 if k == j else 0.0) - xs[j]))
                    dj = t if dj is None else dj + t
            else:
                dj = gx[j] * xs[j]
            up_ok = np.ones(len(lo), bool) if j == 0 else zh[:, j] < zl[:, j - 1]
            if j + 1 < nz:
                down_ok = zl[:, j] > zh[:, j + 1]
            else:
                down_ok = zl[:, j] > 0 if self.loss == "normalized" else np.ones(len(lo), bool)
            drop |= inside & (((dj.lo > 0) & up_ok) | ((dj.hi < 0) & down_ok))
        for k in range(self.nv):
            c = nz + k
            if np.all(lo[:, c] == hi[:, c]):
                continue
            free = lo[:, c] < hi[:, c]
            g = gv[k]
            drop |= free & (((g.lo > 0) & (hi[:, c] < 1.0)) | ((g.hi < 0) & (lo[:, c] > -1.0)))
        return drop

    def upper(self, lo, hi, threshold=np.inf):
        zl, zh = lo[:, :self.nz], hi[:, :self.nz]
        vs = [Interval(lo[:, self.nz + k], hi[:, self.nz + k]) for k in range(self.nv)]
        E = exp_interval(zl, zh)
        if self.loss == "normalized":
            vs.append(Interval(np.zeros(len(lo))))
            xs = _softmax_enclosure(E, self.n)
        else:
            xs = [Interval(E.lo[:, k], E.hi[:, k]) for k in range(self.n)]
        if self.loss == "normalized":  # v_{n−1} = 0 is fixed: a degenerate interval
            vs[-1] = Interval(np.zeros(len(lo)))
        info: dict = {}
        ub, sc = centred_upper(self.f_int, self.g_int, xs + vs, need=lambda h: h > threshold,
                               out=info)
        if "sel" in info and np.any(info["sel"]):
            sel = info["sel"]
            drop = self._monotone(lo[sel], hi[sel], [Interval(x.lo[sel], x.hi[sel]) for x in xs],
                                  info["grads"])
            idx = np.flatnonzero(sel)[drop]
            ub[idx] = -np.inf
        # split scores back on the box's coordinates: z_j moves every f_k (|∂f_k/∂z_j| ≤ f_k)
        n = self.n
        if self.loss == "normalized":
            fmax = np.stack([x.hi for x in xs], axis=1)
            zs = (sc[:, :n] / np.maximum(fmax - np.stack([x.lo for x in xs], 1), 1e-300)
                  * fmax).sum(axis=1, keepdims=True) * (hi[:, :self.nz] - lo[:, :self.nz])
            score = np.concatenate([zs, sc[:, n:n + self.nv]], axis=1)
        else:
            score = np.concatenate([sc[:, :n], sc[:, n:]], axis=1)
        return ub, score


@cached
def _lowered_pencil(n: int):
    rm = theory_hessian.reduced_matrix(n)
    args = list(rm.x) + list(rm.c)
    entries = [rm.K[i][j] for i in range(n - 1) for j in range(i, n - 1)]
    return (rm, lambdify_interval(args, sp.Tuple(*entries)),
            sp.lambdify(args, sp.Tuple(*entries), "numpy"))


def _sym(entries, m: int, shape) -> np.ndarray:
    """Upper-triangle entries (row-major) to a batch of symmetric m×m arrays."""
    out = np.empty(tuple(shape) + (m, m))
    t = 0
    for i in range(m):
        for j in range(i, m):
            out[..., i, j] = out[..., j, i] = entries[t]
            t += 1
    return out


def _ldl_positive(A: list) -> np.ndarray:
    """Whether every symmetric matrix in the interval matrix A (rows of Intervals) is
    positive definite: interval LDLᵀ with every pivot certainly > 0 (inclusion monotonicity:
    each member's exact pivots lie in the computed intervals)."""
    m = len(A)
    L = [[None] * m for _ in range(m)]
    D = []
    ok = np.ones_like(A[0][0].lo, dtype=bool)
    for j in range(m):
        dj = A[j][j]
        for k in range(j):
            dj = dj - L[j][k].square() * D[k]
        ok &= dj.lo > 0
        dj = Interval(np.where(dj.lo > 0, dj.lo, 1.0), np.where(dj.lo > 0, dj.hi, 1.0))
        D.append(dj)
        for i in range(j + 1, m):
            a = A[i][j]
            for k in range(j):
                a = a - L[i][k] * L[j][k] * D[k]
            L[i][j] = a / dj
    return ok


class _PencilProblem:
    r"""Normalized loss, boxes over (z_0..z_{n−2}; c_0..c_{n−2}) with z_{n−1} = 0 and
    b = (c, −Σc) ⟂ 𝟏: the bound on a box is max_s λ_max(sK_mid, G) + ‖ΔK‖₂ (Weyl, G ⪰ I),
    K enclosed entrywise in interval arithmetic and the centre's eigenvalue certified by an
    interval LDLᵀ of μG − sK_mid.  Boxes inside the ball ‖b‖ < 1 are dropped (λ_max(±K) is
    convex in b: its sup over the ball is on the sphere)."""

    def __init__(self, n: int, rho: float):
        self.n, self.rho, self.m = n, rho, n - 1
        _, self.k_int, self.k_num = _lowered_pencil(n)
        m = self.m
        self.G = np.eye(m) + 1.0
        w, V = np.linalg.eigh(self.G)
        self.Gih = V @ np.diag(w ** -0.5) @ V.T  # float: only used for the numeric λ̃

    def initial(self):
        zmax = self.rho * math.sqrt(2.0)
        lo = np.concatenate([np.zeros(self.m), np.full(self.m, -1.0)])
        hi = np.concatenate([np.full(self.m, zmax), np.full(self.m, 1.0)])
        return lo[None, :], hi[None, :], np.concatenate([np.full(self.m, zmax),
                                                         np.full(self.m, 2.0)])

    def _bnorm(self, lo, hi) -> Interval:
        cs = [Interval(lo[:, self.m + k], hi[:, self.m + k]) for k in range(self.m)]
        tot = cs[0]
        sq = cs[0].square()
        for c in cs[1:]:
            tot = tot + c
            sq = sq + c.square()
        return sq + tot.square()

    def infeasible(self, lo, hi):
        zl, zh = lo[:, :self.m], hi[:, :self.m]
        unsorted = np.any(zl[:, 1:] > zh[:, :-1], axis=1)
        zl0 = np.concatenate([zl, np.zeros((len(zl), 1))], axis=1)
        zh0 = np.concatenate([zh, np.zeros((len(zh), 1))], axis=1)
        far = _centred_min_sq(zl0, zh0) > self.rho ** 2 * (1 + 1e-9)
        bb = self._bnorm(lo, hi)
        return unsorted | far | (bb.lo > 1.0) | (bb.hi < 1.0)

    def _eig(self, K):
        """(λ̃_min, λ̃_max) of the pencil (K, G), float."""
        w = np.linalg.eigvalsh(self.Gih @ K @ self.Gih)
        return w[..., 0], w[..., -1]

    def value(self, pts):
        z = np.concatenate([pts[:, :self.m], np.zeros((len(pts), 1))], axis=1)
        c = pts[:, self.m:]
        bn = np.sqrt((c ** 2).sum(1) + c.sum(1) ** 2)
        ok = (((z - z.mean(1, keepdims=True)) ** 2).sum(1) <= self.rho ** 2) & (bn > 0)
        c = c / np.where(bn > 0, bn, 1.0)[:, None]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        f = e / e.sum(axis=1, keepdims=True)
        with np.errstate(all="ignore"):
            ent = self.k_num(*f.T, *c.T)
        K = _sym([np.broadcast_to(np.asarray(t, float), (len(pts),)) for t in ent], self.m,
                 (len(pts),))
        lmin, lmax = self._eig(K)
        out = np.maximum(lmax, -lmin)
        return np.where(ok & np.isfinite(out), out, -np.inf)

    def polish(self, x0, lo, hi):
        from scipy.optimize import minimize

        def neg(y):
            v = self.value(np.clip(y, lo, hi)[None, :])[0]
            return -v if np.isfinite(v) else 0.0

        r = minimize(neg, np.asarray(x0, float), method="Nelder-Mead",
                     options={"maxiter": 600, "xatol": 1e-10, "fatol": 1e-14})
        x = np.clip(r.x, lo, hi)
        return float(self.value(x[None, :])[0]), x

    def upper(self, lo, hi, threshold=np.inf):
        m, B = self.m, len(lo)
        E = exp_interval(lo[:, :m], hi[:, :m])
        xs = _softmax_enclosure(E, self.n)
        cs = [Interval(lo[:, m + k], hi[:, m + k]) for k in range(m)]
        ent = self.k_int(*xs, *cs)
        ent = [e if isinstance(e, Interval) else Interval(np.full(B, float(e))) for e in ent]
        elo = np.stack([np.broadcast_to(e.lo, (B,)) for e in ent], 1)
        ehi = np.stack([np.broadcast_to(e.hi, (B,)) for e in ent], 1)
        mid = 0.5 * (elo + ehi)
        rad = np.maximum(_up(ehi - mid), _up(mid - elo))
        Kmid = _sym(mid.T, m, (B,))
        Rad = _sym(rad.T, m, (B,))
        # ‖ΔK‖₂ ≤ min(max row sum, Frobenius) of the radius matrix (rounded up)
        rs = Rad.sum(axis=2).max(axis=1)
        rs = _up(_up(rs) * (1 + 4 * m * 2.0 ** -52))
        fro = _up(np.sqrt(_up((Rad ** 2).sum(axis=(1, 2)) * (1 + 4 * m * m * 2.0 ** -52))))
        dnorm = np.minimum(rs, fro)
        with np.errstate(all="ignore"):
            lmin, lmax = self._eig(Kmid)
        ub = np.full(B, -np.inf)
        for s, lam in ((1.0, lmax), (-1.0, -lmin)):
            mu = _up(lam + 1e-12 * (1.0 + np.abs(lam)) + 1e-300)
            A = [[Interval(mu) * Interval(np.float64(self.G[i, j])) - Interval(s * Kmid[:, i, j])
                  for j in range(m)] for i in range(m)]
            cert = _ldl_positive(A) & np.isfinite(mu)
            # fallback: Gershgorin on sK (G ⪰ I, so λ_max(sK, G) ≤ max(0, λ_max(sK)))
            gl = _gershgorin(s * Kmid)
            bound = np.where(cert, mu, np.maximum(gl, 0.0))
            ub = np.maximum(ub, _up(bound + dnorm))
        return ub


@cached
def _lowered_eigen(n: int):
    """K of :func:`theory_hessian.reduced_matrix` in u = e^z (u_{n−1} = 1; f = u/Σu) and the
    face coordinates c of b = Ec/‖Ec‖ (so K is stationary at an interior maximiser in every box
    coordinate), lowered to intervals with forward-mode gradients, and to numpy."""
    rm = theory_hessian.reduced_matrix(n)
    u = sp.symbols(f"u0:{n - 1}", positive=True)
    c = sp.symbols(f"c0:{n - 1}", real=True)
    uu = list(u) + [sp.Integer(1)]
    S = sum(uu)
    nrm = sp.sqrt(sum(ck ** 2 for ck in c) + sum(c) ** 2)
    sub = {**{x: uk / S for x, uk in zip(rm.x, uu)}, **{ck: cn / nrm for ck, cn in zip(rm.c, c)}}
    entries = [rm.K[i][j].xreplace(sub) for i in range(n - 1) for j in range(i, n - 1)]
    args = list(u) + list(c)
    value = lambdify_interval(args, sp.Tuple(*entries))
    return rm, value, sp.lambdify(args, sp.Tuple(*entries), "numpy")


class _EigenProblem:
    r"""Normalized loss, boxes over (z_0..z_{n−2}; c) with z_{n−1} = 0, c on a face
    c_i = ±1 of the cube and b = Ec/‖Ec‖ (unit, ⟂ 𝟏).  Bound on a box, for s = ±1: in the
    G-orthonormal eigenbasis (x, Q) of sK at the box centre, λ_max(sK, G) ≤ λ_max of
    [[a, βᵀ], [β, dI]] = (a+d)/2 + √(((a−d)/2)² + ‖β‖²), with a the mean-value (centred)
    upper bound of s·xᵀK x over the box (second order at a stationary point), β_j = s·xᵀK q_j
    and d a Gershgorin bound of sQᵀKQ (interval entries); the congruence's departure from
    G-orthonormality F = QᵀGQ − I enters as the factor 1/(1 − ‖F‖)."""

    def __init__(self, n: int, rho: float):
        self.n, self.rho, self.m = n, rho, n - 1
        _, self.k_int, self.k_num = _lowered_eigen(n)
        self.G = np.eye(self.m) + 1.0
        w, V = np.linalg.eigh(self.G)
        self.Gih = V @ np.diag(w ** -0.5) @ V.T

    def initial(self):
        m = self.m
        zmax = self.rho * math.sqrt(2.0)
        los, his = [], []
        for face in range(m):
            for sign in (1.0, -1.0):
                lo = np.concatenate([np.zeros(m), np.full(m, -1.0)])
                hi = np.concatenate([np.full(m, zmax), np.full(m, 1.0)])
                lo[m + face] = hi[m + face] = sign
                los.append(lo)
                his.append(hi)
        return np.array(los), np.array(his), np.concatenate([np.full(m, zmax),
                                                             np.full(m, 2.0)])

    def infeasible(self, lo, hi):
        zl, zh = lo[:, :self.m], hi[:, :self.m]
        unsorted = np.any(zl[:, 1:] > zh[:, :-1], axis=1)
        zl0 = np.concatenate([zl, np.zeros((len(zl), 1))], axis=1)
        zh0 = np.concatenate([zh, np.zeros((len(zh), 1))], axis=1)
        return unsorted | (_centred_min_sq(zl0, zh0) > self.rho ** 2 * (1 + 1e-9))

    def _numK(self, pts):
        u = np.exp(pts[:, :self.m])
        with np.errstate(all="ignore"):
            ent = self.k_num(*u.T, *pts[:, self.m:].T)
        return _sym([np.broadcast_to(np.asarray(t, float), (len(pts),)) for t in ent], self.m,
                    (len(pts),))

    def value(self, pts):
        z = np.concatenate([pts[:, :self.m], np.zeros((len(pts), 1))], axis=1)
        ok = ((z - z.mean(1, keepdims=True)) ** 2).sum(1) <= self.rho ** 2
        w = np.linalg.eigvalsh(self.Gih @ self._numK(pts) @ self.Gih)
        out = np.maximum(w[:, -1], -w[:, 0])
        return np.where(ok & np.isfinite(out), out, -np.inf)

    def polish(self, x0, lo, hi):
        from scipy.optimize import minimize

        free = lo < hi
        base = np.asarray(x0, dtype=float).copy()
        free[self.m + np.argmax(np.abs(base[self.m:]))] = False  # stay on the face

        def neg(y):
            x = base.copy()
            x[free] = np.clip(y, lo[free], hi[free])
            v = self.value(x[None, :])[0]
            return -v if np.isfinite(v) else 0.0

        r = minimize(neg, base[free], method="Nelder-Mead",
                     options={"maxiter": 800, "xatol": 1e-10, "fatol": 1e-14})
        x = base.copy()
        x[free] = np.clip(r.x, lo[free], hi[free])
        return float(self.value(x[None, :])[0]), x

    def upper(self, lo, hi, threshold=np.inf):
        m, B = self.m, len(lo)
        mid = 0.5 * (lo + hi)
        # exact float centre values (the centred form's expansion point) and the box
        E = exp_interval(lo[:, :m], hi[:, :m])
        Ec = exp_interval(mid[:, :m], mid[:, :m])
        box = [Interval(E.lo[:, k], E.hi[:, k]) for k in range(m)] + \
              [Interval(lo[:, m + k], hi[:, m + k]) for k in range(m)]
        cen = [Interval(Ec.lo[:, k], Ec.hi[:, k]) for k in range(m)] + \
              [Interval(mid[:, m + k]) for k in range(m)]
        nvar = 2 * m
        duals = [Dual(b, [None] * k + [Interval(np.ones(B))] + [None] * (nvar - k - 1))
                 for k, b in enumerate(box)]
        with np.errstate(all="ignore"):
            dv = self.k_int(*duals)
            kc = self.k_int(*cen)
        ne = len(dv)

        def full(x):
            return x if isinstance(x, Interval) else Interval(np.full(B, float(x)))

        Kbox = [full(e.val) if isinstance(e, Dual) else full(e) for e in dv]
        Kgrad = [[(e.grad[k] if isinstance(e, Dual) and e.grad[k] is not None
                   else Interval(np.zeros(B))) for k in range(nvar)] for e in dv]
        Kc = [full(e) for e in kc]
        Kmid = _sym([0.5 * (e.lo + e.hi) for e in Kc], m, (B,))
        with np.errstate(all="ignore"):
            w, U = np.linalg.eigh(self.Gih @ np.nan_to_num(Kmid) @ self.Gih)
        Q = self.Gih @ U  # columns G-orthonormal (in float)
        # F = QᵀGQ − I in interval arithmetic: its norm bounds the congruence error
        Fn = np.zeros(B)
        for i in range(m):
            for j in range(m):
                acc = Interval(np.zeros(B))
                for k in range(m):
                    for l2 in range(m):
                        if self.G[k, l2] != 0:
                            acc = acc + Interval(Q[:, k, i]) * Interval(Q[:, l2, j]) * \
                                Interval(np.float64(self.G[k, l2]))
                if i == j:
                    acc = acc - 1.0
                Fn = _up(Fn + _up(np.maximum(np.abs(acc.lo), np.abs(acc.hi)) ** 2))
        Fn = _up(np.sqrt(Fn))
        idx = [[0] * m for _ in range(m)]
        t = 0
        for i in range(m):
            for j in range(i, m):
                idx[i][j] = idx[j][i] = t
                t += 1

        def quad(x, y, ents):
            """Σ_ij x_i E_ij y_j in interval arithmetic (x, y float batches, E intervals)."""
            acc = Interval(np.zeros(B))
            for i in range(m):
                for j in range(m):
                    acc = acc + Interval(x[:, i] * 1.0) * ents[idx[i][j]] * Interval(y[:, j] * 1.0)
            return acc

        widths = hi - lo
        ub = np.full(B, -np.inf)
        for s, col in ((1.0, m - 1), (-1.0, 0)):
            x = Q[:, :, col]
            a_c = quad(x, x, Kc)
            a = a_c
            for k in range(nvar):
                g = quad(x, x, [Kgrad[e][k] for e in range(ne)])
                half = Interval(-0.5 * widths[:, k], 0.5 * widths[:, k])
                if k < m:  # the u-box is not centred at e^{mid}: use [u_lo − u_c, u_hi − u_c]
                    half = box[k] - cen[k]
                a = a + g * half
            a_hi = np.minimum(s * (a.hi if s > 0 else -a.lo), np.inf)
            a_hi = np.where(np.isnan(a_hi), np.inf, a_hi)
            # plain evaluation as well (take the smaller upper end)
            a_plain = quad(x, x, Kbox)
            a_hi = np.minimum(a_hi, a_plain.hi if s > 0 else -a_plain.lo)
            others = [j for j in range(m) if j != col]
            beta2 = np.zeros(B)
            for j in others:
                bj = quad(x, Q[:, :, j], Kbox)
                beta2 = _up(beta2 + _up(np.maximum(np.abs(bj.lo), np.abs(bj.hi)) ** 2))
            # d: Gershgorin on s·Q_restᵀ K Q_rest
            d = np.full(B, -np.inf)
            for i in others:
                row = quad(Q[:, :, i], Q[:, :, i], Kbox)
                r = row.hi if s > 0 else -row.lo
                for j in others:
                    if j != i:
                        o = quad(Q[:, :, i], Q[:, :, j], Kbox)
                        r = _up(r + np.maximum(np.abs(o.lo), np.abs(o.hi)))
                d = np.maximum(d, r)
            if m == 1:
                d = a_hi
            half_sum = Interval(a_hi) + Interval(d)
            half_diff = Interval(a_hi) - Interval(d)
            lam = half_sum * 0.5 + (half_diff.square() * 0.25 + Interval(beta2)).sqrt()
            lam_hi = np.maximum(lam.hi, 0.0)
            den = Interval(np.ones(B)) - Interval(Fn)
            bound = (Interval(lam_hi) / den).hi
            bound = np.where((Fn < 0.5) & np.isfinite(bound), bound, np.inf)
            ub = np.maximum(ub, bound)
        return ub


def _up(x):
    return np.nextafter(x, np.inf)


def _gershgorin(K: np.ndarray) -> np.ndarray:
    """An upper bound on λ_max of each symmetric float matrix (rounded up)."""
    m = K.shape[1]
    absum = np.abs(K).sum(axis=2)
    diag = np.diagonal(K, axis1=1, axis2=2)
    rows = diag + (absum - np.abs(diag))
    # each float row sum is within 4m·eps·Σ|K_ij| of the exact one
    return _up(rows.max(axis=1) + 4 * m * 2.0 ** -52 * absum.max(axis=1) + 1e-300)


@cached
def certified_upper(loss: str, n: int, R: float, boxes: int) -> Band:
    """The deterministic form used by the claims: a budget of boxes, no clock."""
    return certified_band(loss, n, 2, R, seconds=math.inf, max_boxes=boxes)


def certified_band(loss: str, n: int, d: int, R: float, *, seconds: float = 60.0,
                   target: float = 1.10, max_boxes: int = 50_000_000,
                   method: str = "pencil") -> Band:
    """Branch and bound for sup ψ at ρ = R² (scaled by R²); see the module docstring.  ``d``
    only matters through the reduction (for d = 1 the band is an upper bound, not tight)."""
    if n == 1 and loss == "normalized":  # one logit: softmax is constant, the Hessian is 0
        return Band(loss, n, R, 0.0, 0.0, None, "target", 0.0, 0)
    rho = float(R) * float(R)
    if loss == "normalized" and method == "pencil":
        pb = _PencilProblem(n, rho)
    elif loss == "normalized" and method == "eigen":
        pb = _EigenProblem(n, rho)
    else:
        pb = _Problem(loss, n, rho)
    lo, hi, scale = pb.initial()
    glo, ghi = lo.min(axis=0), hi.max(axis=0)
    res = branch_and_bound(pb.upper, pb.value, lo, hi, infeasible_fn=pb.infeasible,
                           target=target, seconds=seconds, max_boxes=max_boxes, scale=scale,
                           polish=lambda x: pb.polish(x, glo, ghi))
    r2 = Interval(np.float64(R)) * Interval(np.float64(R))
    upper = float((r2 * Interval(np.float64(res.upper))).hi)
    arg = None
    if res.argmax is not None:
        if isinstance(pb, _EigenProblem):
            c = res.argmax[pb.m:]
            b = np.concatenate([c, [-c.sum()]])
            arg = (tuple(np.concatenate([res.argmax[:pb.m], [0.0]])), tuple(b / np.linalg.norm(b)))
        elif isinstance(pb, _PencilProblem):
            c = res.argmax[pb.m:]
            b = np.concatenate([c, [-c.sum()]])
            arg = (tuple(np.concatenate([res.argmax[:pb.m], [0.0]])), tuple(b))
        else:
            z, v = pb._zv(res.argmax[None, :])
            arg = (tuple(z[0]), tuple(v[0]))
    return Band(loss, n, float(R), upper, res.lower * rho, arg, res.status, res.seconds,
                res.boxes)
