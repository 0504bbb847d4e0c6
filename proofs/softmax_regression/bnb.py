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

from icltheory.bounds._interval import (Interval, branch_and_bound, centred_upper, dual_gradient,
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
            ones = np.ones((len(lo), 1))
            E = Interval(np.concatenate([E.lo, ones], 1), np.concatenate([E.hi, ones], 1))
            vs.append(Interval(np.zeros(len(lo))))
            xs = []
            for k in range(self.n):
                others = [j for j in range(self.n) if j != k]
                s_lo = Interval(np.zeros(len(lo)))
                s_hi = Interval(np.zeros(len(lo)))
                for j in others:
                    s_lo = s_lo + Interval(E.lo[:, j])
                    s_hi = s_hi + Interval(E.hi[:, j])
                e_lo, e_hi = Interval(E.lo[:, k]), Interval(E.hi[:, k])
                f_lo = (e_lo / (e_lo + Interval(s_hi.hi))).lo
                f_hi = (e_hi / (e_hi + Interval(s_lo.lo))).hi
                xs.append(Interval(f_lo, np.minimum(f_hi, 1.0)))
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
def certified_upper(loss: str, n: int, R: float, boxes: int) -> Band:
    """The deterministic form used by the claims: a budget of boxes, no clock."""
    return certified_band(loss, n, 2, R, seconds=math.inf, max_boxes=boxes)


def certified_band(loss: str, n: int, d: int, R: float, *, seconds: float = 60.0,
                   target: float = 1.10, max_boxes: int = 50_000_000) -> Band:
    """Branch and bound for sup ψ at ρ = R² (scaled by R²); see the module docstring.  ``d``
    only matters through the reduction (for d = 1 the band is an upper bound, not tight)."""
    if n == 1 and loss == "normalized":  # one logit: softmax is constant, the Hessian is 0
        return Band(loss, n, R, 0.0, 0.0, None, "target", 0.0, 0)
    rho = float(R) * float(R)
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
        z, v = pb._zv(res.argmax[None, :])
        arg = (tuple(z[0]), tuple(v[0]))
    return Band(loss, n, float(R), upper, res.lower * rho, arg, res.status, res.seconds,
                res.boxes)
