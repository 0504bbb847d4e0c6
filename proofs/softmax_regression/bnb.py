r"""A certified upper bound on the gradient's Lipschitz constant by branch and bound (theory side).

The bound is $R^2\sup\psi$ over the reduced domain of :mod:`.theory_hessian` (the derived
forms, lowered to interval arithmetic; nothing else is typed here).  Domains use the symmetries
of $\psi$ (a simultaneous permutation of the logits, the direction and the target; $v\mapsto-v$;
for the normalized loss shifts of $z$, $v$ and $b$ along $\mathbf 1$):

* normalized, ``method="eigen"`` (default): $z_0\ge\dots\ge z_{n-1}=0$ with centred norm
  $\le\rho=R^2$ and the target $b=(c,-\sum c)\perp\mathbf 1$ near the unit sphere; the sup over
  the direction is the largest $|\lambda|$ of the pencil $(K(f,b),G)$ of
  :func:`theory_hessian.reduced_matrix`, bounded per box by :class:`_EigenProblem`;
* normalized, ``method="ratio"``: $z$ as above and $v$ with $v_{n-1}=0$ on a face $v_i=1$ of the
  cube $[-1,1]^{n-1}$ ($\psi$ is 0-homogeneous in $v$), $\psi$ in closed form (sup over $b$);
* rescaled: $z_0\ge\dots\ge z_{n-1}$, $\|z\|\le\rho$; $v$ on a face $v_i=1$ of $[-1,1]^n$
  (the ratio form).

Over a box the softmax weights are enclosed exactly per coordinate ($f_k$ increases with
$z_k$ and decreases with the others) with $e^{z}$ enclosed in arb at the box corners; the rest is
outward-rounded interval arithmetic (:mod:`icltheory.bounds._interval`), and the float
eigenvectors used by the eigen bound enter only through quantities bounded in that arithmetic
(their non-orthonormality included), so a wrong eigenvector loosens the bound but cannot
invalidate it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from icltheory.bounds._interval import (Dual, Interval, _down, _up, branch_and_bound, centred_upper,
                                        dual_gradient,
                                        exp_interval, lambdify_interval)
from icltheory.core import cached

from . import theory_hessian

__all__ = ["Band", "certified_band", "certified_upper", "reduced_value"]


@dataclass(frozen=True)
class Band:
    """``upper``: certified upper bound on the gradient's Lipschitz constant; ``best``: the
    largest value of R²ψ found at a point of the domain (a float, not a certificate: the
    certified lower end comes from an explicit pair in the experiments); ``argmax``: that
    point, (z, v) for the ratio form or (z, b) for the eigen bound; ``status``: "target",
    "time" or "boxes"; ``seconds``: wall time, the start search included."""

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
def _lowered_delta(n: int):
    rm = theory_hessian.reduced_matrix(n)
    args = list(rm.x) + list(rm.c)
    return (rm, lambdify_interval(args, sp.Tuple(*rm.delta)),
            sp.lambdify(args, sp.Tuple(*rm.delta), "numpy"))


def _numeric_K(d_num, f: np.ndarray, c: np.ndarray) -> np.ndarray:
    """K = (TE)ᵀ diag(δ) (TE) at points (float), TE_{ki} = [k=i] − [k=n−1] − (f_i − f_{n−1})."""
    n = f.shape[1]
    with np.errstate(all="ignore"):
        dl = np.stack([np.broadcast_to(np.asarray(t, float), (len(f),))
                       for t in d_num(*f.T, *c.T)], 1)
    E = np.vstack([np.eye(n - 1), -np.ones((1, n - 1))])  # n × (n−1)
    TE = E[None, :, :] - (f[:, :-1] - f[:, -1:])[:, None, :]
    return np.einsum("bki,bk,bkj->bij", TE, dl, TE)




class _EigenProblem:
    r"""Normalized loss by the pencil (K, G) of :func:`theory_hessian.reduced_matrix`: boxes
    over (z_0..z_{n−2}; c) with z_0 ≥ … ≥ z_{n−1} = 0 (centred norm ≤ ρ) and b = (c, −Σc),
    ‖b‖ ≤ 1; boxes inside the ball ‖b‖ < 1 are dropped (K is affine in b, so λ_max(±K) is convex
    in b and its sup over the ball is on the sphere).  ψ = max_s λ_max(sK, G) over the box:

    * every quadratic form y₁ᵀKy₂ is evaluated through the verified diagonal form
      Σ_k δ_k(f, b)(TEy₁)_k(TEy₂)_k, TEy = Ey − ⟨f, Ey⟩𝟏 (low interval dependency; f enclosed
      exactly per coordinate);
    * in the G-orthonormal eigenbasis (x, Q) of K at the box centre (float; its departure
      F = QᵀGQ − I from orthonormality is bounded in interval arithmetic and enters as
      1/(1 − ‖F‖)), λ_max(sQᵀKQ) ≤ λ_max([[a, βᵀ], [β, dI]]) = (a+d)/2 + √(((a−d)/2)² + ‖β‖²)
      with a the mean-value (centred) form of s·xᵀKx — its gradient in the box's own
      coordinates, z by the chain rule ∂f_k/∂z_j = f_k([k=j] − f_j), so the bound is second
      order at an interior maximiser — β_j = s·xᵀKq_j, and d a Gershgorin bound of the rest."""

    def __init__(self, n: int, rho: float):
        self.n, self.rho, self.m = n, rho, n - 1
        _, self.d_int, self.d_num = _lowered_delta(n)
        self.G = np.eye(self.m) + 1.0
        w, V = np.linalg.eigh(self.G)
        self.Gih = V @ np.diag(w ** -0.5) @ V.T  # float: only for the centre's eigenbasis
        self.score_width = 1.0

    def initial(self):
        m = self.m
        zmax = self.rho * math.sqrt(2.0)
        lo = np.concatenate([np.zeros(m), np.full(m, -1.0)])
        hi = np.concatenate([np.full(m, zmax), np.full(m, 1.0)])
        return lo[None, :], hi[None, :], np.concatenate([np.full(m, zmax), np.full(m, 2.0)])

    def _bnorm(self, lo, hi) -> Interval:
        cs = [Interval(lo[:, self.m + k], hi[:, self.m + k]) for k in range(self.m)]
        tot, sq = cs[0], cs[0].square()
        for c in cs[1:]:
            tot = tot + c
            sq = sq + c.square()
        return sq + tot.square()

    def infeasible(self, lo, hi):
        """Certainly outside the domain (unsorted, centred norm > ρ, ‖b‖ > 1) or certainly
        inside the open ball ‖b‖ < 1 (dominated by the sphere)."""
        zl, zh = lo[:, :self.m], hi[:, :self.m]
        unsorted = np.any(zl[:, 1:] > zh[:, :-1], axis=1)
        zl0 = np.concatenate([zl, np.zeros((len(zl), 1))], axis=1)
        zh0 = np.concatenate([zh, np.zeros((len(zh), 1))], axis=1)
        c = 0.5 * (zl0 + zh0).mean(axis=1, keepdims=True)  # Σ(z − mean z)² ≤ Σ(z − c)²
        inside = np.maximum((zl0 - c) ** 2, (zh0 - c) ** 2).sum(axis=1) < self.rho ** 2 * 0.999
        far = np.zeros(len(lo), bool)
        if not np.all(inside):
            far[~inside] = _centred_min_sq(zl0[~inside], zh0[~inside]) > self.rho ** 2 * (1 + 1e-9)
        bb = self._bnorm(lo, hi)
        return unsorted | far | (bb.lo > 1.0) | (bb.hi < 1.0)

    def _K(self, pts, unit: bool):
        m = self.m
        z = np.concatenate([pts[:, :m], np.zeros((len(pts), 1))], axis=1)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        f = e / e.sum(axis=1, keepdims=True)
        c = pts[:, m:]
        if unit:
            bn = np.sqrt((c ** 2).sum(1) + c.sum(1) ** 2)
            c = c / np.where(bn > 0, bn, 1.0)[:, None]
        return _numeric_K(self.d_num, f, c)

    def value(self, pts):
        """ψ at the points with b scaled to the unit sphere (−inf outside the domain)."""
        m = self.m
        z = np.concatenate([pts[:, :m], np.zeros((len(pts), 1))], axis=1)
        c = pts[:, m:]
        ok = (((z - z.mean(1, keepdims=True)) ** 2).sum(1) <= self.rho ** 2) & \
            (((c ** 2).sum(1) + c.sum(1) ** 2) > 0)
        with np.errstate(all="ignore"):
            K = np.nan_to_num(self._K(pts, unit=True))
            w = np.linalg.eigvalsh(self.Gih @ K @ self.Gih)
        out = np.maximum(w[:, -1], -w[:, 0])
        return np.where(ok & np.isfinite(out), out, -np.inf)

    def polish(self, x0, lo, hi):
        from scipy.optimize import minimize

        def neg(y):
            v = self.value(np.clip(y, lo, hi)[None, :])[0]
            return -v if np.isfinite(v) else 0.0

        r = minimize(neg, np.asarray(x0, float), method="Nelder-Mead",
                     options={"maxiter": 800, "xatol": 1e-10, "fatol": 1e-14})
        x = np.clip(r.x, lo, hi)
        return float(self.value(x[None, :])[0]), x

    def start(self, rng: np.random.Generator, k: int = 4096):
        """A good feasible value to prune with from the start: the best of k random points,
        polished twice."""
        lo, hi, _ = self.initial()
        pts = rng.uniform(lo[0], hi[0], size=(k, lo.shape[1]))
        pts[:, :self.m] = -np.sort(-pts[:, :self.m], axis=1)
        v = self.value(pts)
        x = pts[int(np.argmax(v))]
        val = float(v.max())
        for _ in range(2):
            val2, x2 = self.polish(x, lo[0], hi[0])
            if val2 > val:
                val, x = val2, x2
        return val, x

    def _te(self, xs, y):
        """TEy (Intervals, or Duals when xs are): y a float batch (B, m)."""
        m = self.m
        ey = [Interval(y[:, k]) for k in range(m)]
        last = Interval(np.zeros(y.shape[0]))
        for k in range(m):
            last = last - ey[k]
        ey.append(last)  # E y = (y, −Σy)
        if isinstance(xs[0], Interval):  # y_k exact floats: cheaper products
            mean = xs[0].scale(y[:, 0])
            for k in range(1, m):
                mean = mean + xs[k].scale(y[:, k])
        else:
            mean = xs[0] * ey[0]
            for k in range(1, m):
                mean = mean + xs[k] * ey[k]
        mean = mean + xs[m] * last
        return [(-mean) + e for e in ey]

    def _congruence(self, Q, B):
        """An upper bound on ‖QᵀGQ − I‖_F (G = I + 𝟏𝟏ᵀ, so QᵀGQ = QᵀQ + (𝟏ᵀQ)ᵀ(𝟏ᵀQ)): the
        float product plus the standard bound on its rounding error, entrywise
        γ(|Q|ᵀ|Q| + |Q|ᵀ𝟏𝟏ᵀ|Q|) with γ = 4(m+2)u (generous: sums of m + 2 terms), the diagonal
        subtraction of 1 being exact (Sterbenz); the norm rounded up."""
        m = self.m
        s1 = Q.sum(axis=1)  # 𝟏ᵀQ
        P = np.einsum("bki,bkj->bij", Q, Q) + s1[:, :, None] * s1[:, None, :]
        aQ = np.abs(Q)
        as1 = aQ.sum(axis=1)
        err = np.einsum("bki,bkj->bij", aQ, aQ) + as1[:, :, None] * as1[:, None, :]
        gamma = 4.0 * (m + 2) * 2.0 ** -53
        F = np.abs(P - np.eye(m)[None]) + gamma * err * (1 + 1e-6)
        return _up(np.sqrt((F ** 2).sum(axis=(1, 2))) * (1 + 1e-12))

    def upper(self, lo, hi, threshold=np.inf):
        n, m, B = self.n, self.m, len(lo)
        mid = 0.5 * (lo + hi)
        # the z part is expanded about the exact midpoint (lo + hi)/2, whose exponential is
        # √(e^lo·e^hi): no new arb call (box corners are shared by siblings and cached)
        e_lo = exp_interval(lo[:, :m], lo[:, :m])
        e_hi = exp_interval(hi[:, :m], hi[:, :m])
        xs = _softmax_enclosure(Interval(e_lo.lo, e_hi.hi), n)
        xc = _softmax_enclosure((e_lo * e_hi).sqrt(), n)
        hz = _up(0.5 * (hi[:, :m] - lo[:, :m]))  # |z − centre| ≤ hz
        cs = [Interval(lo[:, m + k], hi[:, m + k]) for k in range(m)]
        cc = [Interval(mid[:, m + k]) for k in range(m)]
        nv = n + m  # Dual variables: f_0..f_{n−1}, c_0..c_{m−1}
        one = Interval(np.ones(B))
        fd = [Dual(xs[k], [None] * k + [one] + [None] * (nv - k - 1)) for k in range(n)]
        cd = [Dual(cs[k], [None] * (n + k) + [one] + [None] * (nv - n - k - 1))
              for k in range(m)]
        with np.errstate(all="ignore"):
            dl_box = self.d_int(*xs, *cs)
            dl_c = self.d_int(*xc, *cc)
            dl_d = self.d_int(*fd, *cd)
            Kc = np.nan_to_num(self._K(mid, unit=False))
            _, U = np.linalg.eigh(self.Gih @ Kc @ self.Gih)
        Q = self.Gih @ U  # columns G-orthonormal up to rounding (bounded by Fn below)
        Fn = self._congruence(Q, B)
        zero = Interval(np.zeros(B))
        te = [self._te(xs, Q[:, :, i]) for i in range(m)]
        pair = {}
        for i in range(m):
            for j in range(i, m):
                acc = None
                for k in range(n):
                    t = dl_box[k] * (te[i][k].square() if i == j else te[i][k] * te[j][k])
                    acc = t if acc is None else acc + t
                pair[i, j] = pair[j, i] = acc
        ub = np.full(B, -np.inf)
        score = np.zeros((B, 2 * m))
        for s, col in ((1.0, m - 1), (-1.0, 0)):
            x = Q[:, :, col]
            tc = self._te(xc, x)
            a = None
            for k in range(n):
                t = dl_c[k] * tc[k].square()
                a = t if a is None else a + t
            with np.errstate(all="ignore"):
                td = self._te(fd, x)
                g = None
                for k in range(n):
                    t = dl_d[k] * (td[k] ** 2)
                    g = t if g is None else g + t
                grads = [zero if gk is None else gk for gk in g.grad]
                for j in range(m):  # z_j by the chain rule
                    dj = None
                    for k in range(n):
                        t = grads[k] * (xs[k] * ((1.0 if k == j else 0.0) - xs[j]))
                        dj = t if dj is None else dj + t
                    a = a + dj * Interval(-hz[:, j], hz[:, j])
                    score[:, j] = np.maximum(score[:, j], np.maximum(np.abs(dj.lo), np.abs(dj.hi))
                                             * (hi[:, j] - lo[:, j]))
                for k in range(m):
                    gk = grads[n + k]
                    a = a + gk * Interval(_down(lo[:, m + k] - mid[:, m + k]),
                                          _up(hi[:, m + k] - mid[:, m + k]))
                    score[:, m + k] = np.maximum(score[:, m + k],
                                                 np.maximum(np.abs(gk.lo), np.abs(gk.hi))
                                                 * (hi[:, m + k] - lo[:, m + k]))
            plain = pair[col, col]
            a_hi = np.minimum(a.hi, plain.hi) if s > 0 else np.minimum(-a.lo, -plain.lo)
            a_hi = np.where(np.isnan(a_hi), np.inf, a_hi)
            others = [j for j in range(m) if j != col]
            beta2 = np.zeros(B)
            for j in others:
                bj = pair[col, j]
                beta2 = _up(beta2 + _up(np.maximum(np.abs(bj.lo), np.abs(bj.hi)) ** 2))
            d = np.full(B, -np.inf)
            for i in others:
                r = pair[i, i].hi if s > 0 else -pair[i, i].lo
                for j in others:
                    if j != i:
                        o = pair[i, j]
                        r = _up(r + np.maximum(np.abs(o.lo), np.abs(o.hi)))
                d = np.maximum(d, r)
            if m == 1:
                d = a_hi
            lam = (Interval(a_hi) + Interval(d)) * 0.5 + \
                ((Interval(a_hi) - Interval(d)).square() * 0.25 + Interval(beta2)).sqrt()
            bound = (Interval(np.maximum(lam.hi, 0.0)) / (1.0 - Interval(Fn))).hi
            ub = np.maximum(ub, np.where((Fn < 0.5) & np.isfinite(bound), bound, np.inf))
        scale = np.concatenate([np.full(m, self.rho * math.sqrt(2.0)), np.full(m, 2.0)])
        score = np.where(np.isfinite(score), score, 1e300) + \
            self.score_width * 1e-3 * (hi - lo) / scale
        return ub, score



@cached
def certified_upper(loss: str, n: int, R: float, boxes: int) -> Band:
    """The deterministic form used by the claims: a budget of boxes, no clock."""
    return certified_band(loss, n, 2, R, seconds=math.inf, max_boxes=boxes)


def certified_band(loss: str, n: int, d: int, R: float, *, seconds: float = 60.0,
                   target: float = 1.10, max_boxes: int = 50_000_000,
                   method: str = "eigen") -> Band:
    """Branch and bound for sup ψ at ρ = R² (scaled by R²); see the module docstring.  ``d``
    only matters through the reduction (for d = 1 the band is an upper bound, not tight).
    ``method``: "eigen" (the pencil bound, normalized loss) or "ratio" (ψ's closed form over
    (z, v) boxes; the rescaled loss always)."""
    import time

    if n == 1 and loss == "normalized":  # one logit: softmax is constant, the Hessian is 0
        return Band(loss, n, R, 0.0, 0.0, None, "target", 0.0, 0)
    if method not in ("eigen", "ratio"):
        raise ValueError(f"unknown method {method!r}")
    t0 = time.perf_counter()
    rho = float(R) * float(R)
    start = {}
    if loss == "normalized" and method == "eigen":
        pb = _EigenProblem(n, rho)
        val, x = pb.start(np.random.default_rng(0))
        if np.isfinite(val):
            start = {"lower": val, "argmax": x}
    else:
        pb = _Problem(loss, n, rho)
    lo, hi, scale = pb.initial()
    glo, ghi = lo.min(axis=0), hi.max(axis=0)
    res = branch_and_bound(pb.upper, pb.value, lo, hi, infeasible_fn=pb.infeasible,
                           target=target, seconds=seconds - (time.perf_counter() - t0),
                           max_boxes=max_boxes, scale=scale,
                           polish=lambda x: pb.polish(x, glo, ghi), **start,
                           probe=2000 if isinstance(pb, _EigenProblem) else None)
    r2 = Interval(np.float64(R)) * Interval(np.float64(R))
    upper = float((r2 * Interval(np.float64(res.upper))).hi)
    arg = None
    if res.argmax is not None:
        if isinstance(pb, _EigenProblem):
            c = res.argmax[pb.m:]
            b = np.concatenate([c, [-c.sum()]])
            arg = (tuple(np.concatenate([res.argmax[:pb.m], [0.0]])),
                   tuple(b / np.linalg.norm(b)))
        else:
            z, v = pb._zv(res.argmax[None, :])
            arg = (tuple(z[0]), tuple(v[0]))
    return Band(loss, n, float(R), upper, res.lower * rho, arg, res.status,
                time.perf_counter() - t0, res.boxes)
