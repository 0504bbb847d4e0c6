r"""A certified upper bound on the gradient's Lipschitz constant by branch and bound (theory side).

The bound is $R^2\sup\psi$ over the reduced domain of :mod:`._hessian` (the derived
forms, lowered to interval arithmetic; nothing else is typed here).  Domains use the symmetries
of $\psi$ (a simultaneous permutation of the logits, the direction and the target; $v\mapsto-v$;
for the normalized loss shifts of $z$, $v$ and $b$ along $\mathbf 1$):

* normalized, ``method="eigen"`` (default): the sup over the direction is the largest
  $|\lambda|$ of the pencil $(K(f,b),G)$ of :func:`._hessian.reduced_matrix`; boxes over
  the sorted logits by their gaps $g_k=z_k-z_{k+1}\ge0$ ($z_{n-1}=0$; a box beyond the
  centred-norm ball $\le\rho=R^2$ dropped, one that crosses its sphere bounded whole) and the
  target $b\perp\mathbf 1$ on the unit sphere from a face of a cube — and
  :class:`_EigenProblem` bounds a box by a grid on the target patch (convexity in $b$) and
  second-order forms over the logits;
* normalized, ``method="ratio"``: $z_0\ge\dots\ge z_{n-1}=0$ in a box of the centred-norm ball
  and $v$ with $v_{n-1}=0$ on a face $v_i=1$ of the cube $[-1,1]^{n-1}$ ($\psi$ is
  0-homogeneous in $v$), $\psi$ in closed form (sup over $b$);
* rescaled: $z_0\ge\dots\ge z_{n-1}$, $\|z\|\le\rho$; $v$ on a face $v_i=1$ of $[-1,1]^n$
  (the ratio form).

Every enclosure is outward-rounded (:mod:`icltheory.bounds._interval`: intervals, second-order
Taylor forms :class:`~icltheory.bounds._interval.Quad`, exponentials from an arb table); the
float eigenvectors used by the eigen bound enter only through quantities bounded in that
arithmetic (their non-orthonormality included), so a wrong eigenvector loosens the bound but
cannot invalidate it, and the float point values that prune boxes never lower the certified
bound below themselves.

Every result carries its certificate (:class:`icltheory.certify.BoxCertificate`): the initial
boxes, every split, and every box left behind with the bound it was given (or marked outside
the domain), with the domain as an independent reader states it (the set covered, the
derivation's SymPy forms of the quantity).  :func:`icltheory.certify.check_certificate`
re-checks it with code of its own; the claims record that check in their verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from icltheory.bounds._interval import (Interval, Quad, _up, branch_and_bound,
                                        centred_upper, dual_gradient, exp_interval,
                                        exp_interval_fast, lambdify_interval)
from icltheory.certify import BoxCertificate, SoftmaxPencil, SoftmaxRatio
from icltheory.core import cached
from icltheory.symbolic import lambdify_modules

from . import _hessian as hessian

__all__ = ["Band", "certified_band", "certified_upper", "reduced_value"]


@dataclass(frozen=True)
class Band:
    """``upper``: certified upper bound on the gradient's Lipschitz constant; ``best``: the
    largest value of R²ψ found at a point of the domain (a float, not a certificate: the
    certified lower end comes from an explicit pair in the experiments); ``argmax``: that
    point, (z, v) for the ratio form or (z, b) for the eigen bound; ``status``: "target",
    "time" or "boxes"; ``seconds``: wall time, the start search included; ``certificate``:
    the boxes behind ``upper`` (:class:`icltheory.certify.BoxCertificate`: ψ's bound per box,
    ``upper`` ≥ R² × their largest), None where no boxes are needed (one logit)."""

    loss: str
    n: int
    R: float
    upper: float
    best: float
    argmax: tuple | None
    status: str
    seconds: float
    boxes: int
    certificate: Any = field(default=None, compare=False, repr=False)


@cached
def _lowered(loss: str, n: int):
    rh = hessian.reduced_hessian(loss, n)
    args = list(rh.x) + list(rh.v)
    value = lambdify_interval(args, rh.psi)
    return rh, value, sp.lambdify(args, rh.psi, lambdify_modules("numpy")), dual_gradient(value)


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

    @property
    def zmax(self) -> float:
        """The logits' range: the centred norm ≤ ρ bounds z_0 − z_{n−1} by ρ√2 (normalized;
        a hair more, so that the float holds it), and |z_k| by ρ (rescaled)."""
        return self.rho * math.sqrt(2.0) * (1 + 1e-12) if self.loss == "normalized" else self.rho

    def initial(self):
        zmax = self.zmax
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
        ub, sc = centred_upper(self.f_int, self.g_int, xs + vs, need=lambda h: h > threshold)
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
    rm = hessian.reduced_matrix(n)
    args = list(rm.x) + list(rm.c)
    return (rm, lambdify_interval(args, sp.Tuple(*rm.delta)),
            sp.lambdify(args, sp.Tuple(*rm.delta), lambdify_modules("numpy")))


def _numeric_K(d_num, f: np.ndarray, c: np.ndarray) -> np.ndarray:
    """K = (TE)ᵀ diag(δ) (TE) at points (float), TE_{ki} = [k=i] − [k=n−1] − (f_i − f_{n−1})."""
    n = f.shape[1]
    with np.errstate(all="ignore"):
        dl = np.stack([np.broadcast_to(np.asarray(t, float), (len(f),))
                       for t in d_num(*f.T, *c.T)], 1)
    E = np.vstack([np.eye(n - 1), -np.ones((1, n - 1))])  # n × (n−1)
    TE = E[None, :, :] - (f[:, :-1] - f[:, -1:])[:, None, :]
    return np.einsum("bki,bk,bkj->bij", TE, dl, TE)




def _congruence(Q: np.ndarray, m: int) -> np.ndarray:
    """An upper bound on ‖QᵀGQ − I‖_F (G = I + 𝟏𝟏ᵀ, so QᵀGQ = QᵀQ + (𝟏ᵀQ)ᵀ(𝟏ᵀQ)) for a batch
    Q (B, m, m): the float product plus the standard bound on its rounding error, entrywise
    γ(|Q|ᵀ|Q| + |Q|ᵀ𝟏𝟏ᵀ|Q|) with γ = 4(m+2)u (generous: sums of m + 2 terms), the diagonal
    subtraction of 1 being exact (Sterbenz); the norm rounded up."""
    s1 = Q.sum(axis=1)  # 𝟏ᵀQ
    P = np.einsum("bki,bkj->bij", Q, Q) + s1[:, :, None] * s1[:, None, :]
    aQ = np.abs(Q)
    as1 = aQ.sum(axis=1)
    err = np.einsum("bki,bkj->bij", aQ, aQ) + as1[:, :, None] * as1[:, None, :]
    gamma = 4.0 * (m + 2) * 2.0 ** -53
    F = np.abs(P - np.eye(m)[None]) + gamma * err * (1 + 1e-6)
    return _up(np.sqrt((F ** 2).sum(axis=(1, 2))) * (1 + 1e-12))


def _pencil_bound(Mlo: np.ndarray, Mhi: np.ndarray, Fn: np.ndarray) -> np.ndarray:
    """An upper bound on max(λ_max, −λ_min) of the pencil (K, G) when every entry of QᵀKQ lies in
    [Mlo, Mhi] (B, m, m) and ‖QᵀGQ − I‖_F ≤ Fn < ½: λ_max([[a, βᵀ], [β, C]]) ≤ the larger root
    of [[a, ‖β‖], [‖β‖, d]] (d ≥ λ_max(C) by Gershgorin), for the last column (λ_max) and the
    first (−λ_min), divided by 1 − Fn (a Rayleigh quotient in the basis Q)."""
    B, m, _ = Mlo.shape
    Mlo = np.where(np.isnan(Mlo), -np.inf, Mlo)
    Mhi = np.where(np.isnan(Mhi), np.inf, Mhi)
    Mmag = np.maximum(np.abs(Mlo), np.abs(Mhi))
    ub = np.full(B, -np.inf)
    for s, col in ((1.0, m - 1), (-1.0, 0)):
        a = Mhi[:, col, col] if s > 0 else -Mlo[:, col, col]
        others = [j for j in range(m) if j != col]
        beta2 = np.zeros(B)
        for j in others:
            beta2 = _up(beta2 + _up(Mmag[:, col, j] ** 2))
        d = np.full(B, -np.inf)
        for i in others:
            r = Mhi[:, i, i] if s > 0 else -Mlo[:, i, i]
            for j in others:
                if j != i:
                    r = _up(r + Mmag[:, i, j])
            d = np.maximum(d, r)
        if m == 1:
            d = a
        with np.errstate(all="ignore"):
            lam = (Interval(a) + Interval(d)) * 0.5 + \
                ((Interval(a) - Interval(d)).square() * 0.25 + Interval(beta2)).sqrt()
            bound = (Interval(np.maximum(lam.hi, 0.0)) / (1.0 - Interval(Fn))).hi
        ub = np.maximum(ub, np.where((Fn < 0.5) & np.isfinite(bound), bound, np.inf))
    return ub


class _Forms:
    r"""A stack of second-order forms over the same boxes, as arrays (leading axes ``...``,
    B boxes): ``c`` (..., B), ``a`` (..., D, B), ``q`` (..., P, B) (packed as
    :class:`~icltheory.bounds._interval.Quad`), ``e`` ≥ 0 (..., B) — so that linear
    combinations with interval weights over many forms are a few array contractions.  Each
    form stands for c + Σ a_i ε_i + Σ_{i≤j} q_ij ε_i ε_j + [−e, e] on ε ∈ [−1, 1]^D, as a Quad
    does."""

    def __init__(self, c, a, q, e):
        self.c, self.a, self.q = c, a, q
        self.e = np.where(np.isnan(e), np.inf, e)
        self._mag = None

    @property
    def mag(self) -> np.ndarray:
        """≥ |c| + Σ|a| + Σ|q| (a float sum of ≤ 2⁸ nonnegative terms, rounded up)."""
        if self._mag is None:
            self._mag = (np.abs(self.c) + np.abs(self.a).sum(axis=-2)
                         + np.abs(self.q).sum(axis=-2)) * (1.0 + 2.0 ** -40) + 2.0 ** -1000
        return self._mag

    @classmethod
    def of(cls, forms: list, D: int) -> "_Forms":
        """From a list (or a list of lists) of Quads over the same boxes, stacked along the
        leading axes; a missing linear or quadratic part is zero."""
        nested = isinstance(forms[0], list)
        flat = [x for row in forms for x in row] if nested else forms
        lead = (len(forms), len(forms[0])) if nested else (len(forms),)
        P = D * (D + 1) // 2
        B = max(np.size(x.c) for x in flat)
        c, e = np.empty((len(flat), B)), np.empty((len(flat), B))
        a, q = np.zeros((len(flat), D, B)), np.zeros((len(flat), P, B))
        for i, x in enumerate(flat):
            c[i], e[i] = x.c, x.e
            if x.a is not None:
                a[i] = x.a
            if x.q is not None:
                q[i] = x.q
        return cls(c.reshape(lead + (B,)), a.reshape(lead + (D, B)), q.reshape(lead + (P, B)),
                   e.reshape(lead + (B,)))

    def quad(self) -> Quad:
        """A (K, ...) stack as one Quad over K·B boxes (key-major)."""
        K, D, B = self.a.shape
        return Quad(self.c.reshape(-1), self.a.transpose(1, 0, 2).reshape(D, K * B),
                    self.q.transpose(1, 0, 2).reshape(-1, K * B), self.e.reshape(-1))


def _combine(X: _Forms, w: list) -> _Forms:
    """Σ_l w_l X_l for a stack X (L, K, …) and Intervals w_l (B,): the midpoints' combination
    in float, the weights' radii times |X_l|, the forms' errors, and the float sums' rounding
    (a dot product of L terms is within γ_L Σ|terms| of its value, γ_L ≤ (L + 1)·2⁻⁵² for
    L ≤ 2⁴⁰; each coefficient's error reaches the form through |ε| ≤ 1)."""
    L = len(w)
    wm = np.stack([0.5 * (x.lo + x.hi) for x in w])  # (L, B)
    wr = np.stack([np.maximum(x.hi - m_, m_ - x.lo) for x, m_ in zip(w, wm)]) * (1 + 2.0 ** -50)
    bad = ~np.isfinite(wm) | ~np.isfinite(wr)
    wm = np.where(bad, 0.0, wm)
    c = np.einsum("lkb,lb->kb", X.c, wm)
    a = np.einsum("lkdb,lb->kdb", X.a, wm)
    q = np.einsum("lkpb,lb->kpb", X.q, wm)
    with np.errstate(invalid="ignore", over="ignore"):
        e = (np.einsum("lb,lkb->kb", np.abs(wm), X.e + ((L + 1) * 2.0 ** -52) * X.mag)
             + np.einsum("lb,lkb->kb", np.where(bad, 0.0, wr), X.mag + X.e))
        e = np.where(np.any(bad, axis=0)[None, :], np.inf, e)
    return _Forms(c, a, q, e * (1.0 + 2.0 ** -40) + 2.0 ** -1000)


def _affine(A: _Forms, C: _Forms, t: np.ndarray) -> _Forms:
    """A + s·C for every s in [1, t] (t ≥ 1 exact floats (B,)) as one stack of forms: the
    midpoint s̄ of [1, t] combined in float, the half-width (rounded up: [s̄ − r, s̄ + r] ⊇
    [1, t]) times |C| into the error, and the combination's rounding (two roundings per
    coefficient, within 2⁻⁵¹ of |A's| + s̄|C's|; 2⁻⁵⁰ taken)."""
    with np.errstate(invalid="ignore", over="ignore"):
        sm = 0.5 * (1.0 + t)
        sr = _up(np.maximum(t - sm, sm - 1.0))
        c, a, q = A.c + sm * C.c, A.a + sm * C.a, A.q + sm * C.q
        e = A.e + sm * C.e + sr * (C.mag + C.e) + 2.0 ** -50 * (A.mag + sm * C.mag)
    return _Forms(c, a, q, e * (1.0 + 2.0 ** -40) + 2.0 ** -1000)


def _entry(d: list, w: list):
    """Σ_k d_k w_k: one entry of QᵀKQ from the softmax terms δ_k and the basis products w_k."""
    out = d[0] * w[0]
    for k in range(1, len(d)):
        out = out + d[k] * w[k]
    return out


class _EigenProblem:
    r"""Normalized loss by the pencil (K, G) of :func:`._hessian.reduced_matrix`, over
    boxes in θ = (g_0..g_{m−1}, c_0..c_{m−1}), m = n − 1:

    * the logits by their gaps g_k = z_k − z_{k+1} ≥ 0 (z_{n−1} = 0, so z is sorted and linear
      in g); the centred norm N(g) increases with every g, so a box lies outside the ball
      N ≤ ρ iff its lower corner does (dropped), and a box that crosses the sphere is bounded
      over all of it (a valid bound for its part inside: the excess is ψ just beyond ρ);
    * the target from c on a face c_i = ±1 of [−1, 1]^m: b = Ec/‖Ec‖ (unit, ⟂ 𝟏), entering
      the derived δ as c' = c/‖Ec‖ (the first m entries of b).

    Per box:

    * the target patch is reduced to a grid (:meth:`_target_grid`): cut in half along each of
      its k = m − 1 free coordinates, it is the union of 2^k sub-patches, and the face box of
      each is the hull of its corners, so every b on sub-patch s is y/‖y‖ with y a convex
      combination of its corners' unit targets b_v and ‖y‖ ≥ ν_s (ν_s ≤ ⟨b̂_s, b_v⟩ at every
      corner, b̂_s the unit target of its centre); K is affine in b and λ_max(±K, G) convex,
      so with t = 1/‖y‖ ∈ [1, 1/ν_s], K(f, b) = Σ_v λ_v K(f, t·b_v), and the bound over s is
      the largest over its corners, each with t over all of [1, 1/ν_s] (the entries are
      affine in t: one form per entry with t's range in its error term, second order in the
      patch's widths, as 1/ν_s − 1 is).  The sub-patches' corners are the 3^k points of the
      grid (each coordinate's two ends and its middle); a point that is a corner of several
      sub-patches is taken with t up to the largest of their 1/ν_s (rounded up).  The
      excess over the patch is second order in its widths; halving them inside the box costs
      only linear combinations: the entries are affine in b, A_ij + Σ_l b_l X^l_ij
      (:meth:`_target_split`), so their forms are computed once per box and each grid point
      is a linear combination of them (:func:`_combine`, :func:`_affine`);
    * over the logits, every entry of QᵀKQ (Q the G-orthonormal eigenbasis of K at the box
      centre — float, its departure from orthonormality bounded) is enclosed by a second-order
      form in g (:class:`~icltheory.bounds._interval.Quad`: the softmax relative to the largest
      logit, e^{−(z_0 − z_k)} with z_0 − z_k linear in g; the derived δ; TE·q_i; their
      products); then :func:`_pencil_bound`.  Plain intervals (the softmax exact per
      coordinate, b over the whole patch) bound every box first; the forms run on the boxes
      narrow enough for them that are still above the threshold, the smaller bound kept.

    ``upper`` also returns split scores: per gap, the first-order sensitivity of the extreme
    diagonal entries to it plus the forms' remainder spread over the gaps by width² (the
    remainder comes from the gaps alone: the target enters through the grid); per target
    coordinate, the spread between the grid's two ends along it, damped by
    ``target_split_weight``."""

    def __init__(self, n: int, rho: float):
        self.n, self.rho, self.m = n, rho, n - 1
        _, self.d_int, self.d_num = _lowered_delta(n)
        m = self.m
        G = np.eye(m) + 1.0
        w, V = np.linalg.eigh(G)
        self.Gih = V @ np.diag(w ** -0.5) @ V.T  # float: only for the centre's eigenbasis
        self.D = 2 * m
        self.gmax = self._gmax()
        # split widths: the gaps in absolute terms (e^{−g} is what the bound resolves), the
        # target coordinates over twice their range (tuned: the grid resolves them well)
        self.scale = np.concatenate([np.ones(m), np.full(m, 4.0)])

    # ------------------------------------------------------------------ domain
    def _gmax(self) -> np.ndarray:
        """The largest gap in the ball: g_k alone gives centred norm g_k·√((k+1)(n−k−1)/n)."""
        n, m = self.n, self.m
        k = np.arange(m)
        return _up(self.rho * np.sqrt(n / ((k + 1.0) * (n - k - 1.0))) * (1 + 1e-12))

    def initial(self):
        """The gaps' box × per face (c_j = ±1) the target face cut into its 2^{m−1} orthants."""
        import itertools

        m = self.m
        gmax = self.gmax
        los, his = [], []
        for cf in range(m):
            for sg in (1.0, -1.0):
                for half in itertools.product((0, 1), repeat=m - 1):
                    lo = np.concatenate([np.zeros(m), np.full(m, -1.0)])
                    hi = np.concatenate([gmax, np.ones(m)])
                    free = [k for k in range(m) if k != cf]
                    for k, bit in zip(free, half):
                        lo[m + k], hi[m + k] = (0.0, 1.0) if bit else (-1.0, 0.0)
                    lo[m + cf] = hi[m + cf] = sg
                    los.append(lo)
                    his.append(hi)
        return np.array(los), np.array(his), self.scale.copy()

    def infeasible(self, lo, hi):
        """Boxes whose lower corner (the smallest centred norm) is outside the ball."""
        n2 = self._norm2([Interval(lo[:, k]) for k in range(self.m)])
        return n2.lo > self.rho * self.rho * (1 + 1e-12)

    # ------------------------------------------------------------------ points (float)
    def _points(self, pts):
        """(f, c', feasible) at points θ (floats)."""
        m = self.m
        g, c = pts[:, :m], pts[:, m:]
        z = np.concatenate([np.cumsum(g[:, ::-1], axis=1)[:, ::-1],
                            np.zeros((len(pts), 1))], axis=1)
        N2 = ((z - z.mean(1, keepdims=True)) ** 2).sum(1)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        f = e / e.sum(axis=1, keepdims=True)
        bn = np.sqrt((c ** 2).sum(1) + c.sum(1) ** 2)
        cu = c / np.where(bn > 0, bn, 1.0)[:, None]
        ok = (N2 <= self.rho ** 2) & (bn > 0) & np.all(g >= 0, axis=1)
        return f, cu, ok

    def value(self, pts):
        """ψ = max|λ(K, G)| at the points (−inf outside the domain); float."""
        f, cu, ok = self._points(pts)
        with np.errstate(all="ignore"):
            K = np.nan_to_num(_numeric_K(self.d_num, f, cu))
            w = np.linalg.eigvalsh(self.Gih @ K @ self.Gih)
        out = np.maximum(w[:, -1], -w[:, 0])
        return np.where(ok & np.isfinite(out), out, -np.inf)

    def _into_ball(self, pts):
        """The points with their gaps scaled radially into the ball (centred norm ≤ ρ)."""
        m = self.m
        pts = np.array(pts, dtype=float)
        g = np.maximum(pts[:, :m], 0.0)
        z = np.concatenate([np.cumsum(g[:, ::-1], axis=1)[:, ::-1], np.zeros((len(g), 1))], 1)
        N = np.sqrt(((z - z.mean(1, keepdims=True)) ** 2).sum(1))
        sc = np.minimum(1.0, self.rho * (1 - 1e-15) / np.where(N > 0, N, 1.0))
        pts[:, :m] = g * sc[:, None]
        return pts

    def polish(self, x0, lo, hi, tol: float = 1e-10, batches: int = 400):
        """A local maximum of ψ from x0: a feasible point of the domain, searched in [lo, hi]
        (coordinates with lo = hi not searched) with the gaps then scaled into the ball (so the
        sphere, where the maximum often lies, is reached; the scaling can take gaps below lo).
        A compass search whose every round evaluates, in one batch, the steps ± s along each
        free coordinate, along each pair of them (the ridges towards the maximum run along the
        sphere and the faces g_k = 0, seldom along one axis) and along 2k seeded random
        directions (kinks of ψ, where two eigenvalues cross); an improving step is taken,
        then doubled while it improves (at most 60 times), and its coordinate's step size
        doubles; a round without improvement halves every step size.  It ends when the steps
        fall below ``tol`` × the ranges or after ``batches`` rounds.  Deterministic; the value
        returned is ψ at the point returned."""
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        free = np.flatnonzero(lo < hi)
        x = self._into_ball(np.clip(np.asarray(x0, float), lo, hi)[None, :])[0]
        fx = float(self.value(x[None, :])[0])
        if not free.size:
            return fx, x
        k = len(free)
        unit = np.eye(len(x))[free]
        dirs = [unit[i] for i in range(k)] + [unit[i] + sg * unit[j] for i in range(k)
                                              for j in range(i + 1, k) for sg in (1.0, -1.0)]
        owner = np.array(list(range(k)) + [i for i in range(k) for j in range(i + 1, k)
                                           for sg in (1, -1)])
        E = np.array(dirs)
        s = 0.25 * (hi - lo)[free]
        stop = tol * (hi - lo)[free]
        rounds = 0
        rng = np.random.default_rng(0)  # the random directions: the same for every call
        while rounds < batches and np.any(s > stop):
            step = s[owner][:, None] * E
            # and 2k random directions at the same scales: at a kink of ψ (two eigenvalues
            # crossing) no axis or pair of axes may ascend while another direction does
            rand = np.zeros((2 * k, len(x)))
            rand[:, free] = rng.standard_normal((2 * k, k)) * s / np.sqrt(2.0)
            step = np.concatenate([step, rand])
            cand = self._into_ball(np.clip(np.concatenate([x + step, x - step]), lo, hi))
            vals = self.value(cand)
            rounds += 1
            best = int(np.argmax(vals))
            if not vals[best] > fx:
                s *= 0.5
                continue
            d = cand[best] - x
            x, fx = cand[best], float(vals[best])
            if best % len(step) < len(E):
                s[owner[best % len(step)]] *= 2.0
            for _ in range(60):  # further along the improving step while it improves
                y = self._into_ball(np.clip((x + d)[None, :], lo, hi))
                vy = float(self.value(y)[0])
                if not vy > fx:
                    break
                x, fx, d = y[0], vy, 2.0 * d
        return fx, x

    def start(self, rng: np.random.Generator, k: int = 4096):
        """A good feasible value to prune with from the start: the best of k random points
        (scaled into the ball), polished (three times at most)."""
        lo, hi, _ = self.initial()
        glo, ghi = lo.min(axis=0), hi.max(axis=0)
        pts = self._into_ball(rng.uniform(glo, ghi, size=(k, lo.shape[1])))
        v = self.value(pts)
        x = pts[int(np.argmax(v))]
        val = float(v.max())
        for _ in range(3):
            val2, x2 = self.polish(x, glo, ghi)
            if not val2 > val:
                break
            val, x = val2, x2
        return val, x

    def point(self, x):
        """(z, b) at a point θ (floats)."""
        f, cu, _ = self._points(np.asarray(x, float)[None, :])
        z = np.log(f[0]) - np.log(f[0, -1])
        b = np.concatenate([cu[0], [-cu[0].sum()]])
        return tuple(z), tuple(b)

    # ------------------------------------------------------------------ enclosures
    def _norm2(self, g):
        """N(g)² = (1/n)Σ_{i<j}(z_i − z_j)² with z_i − z_j = g_i + … + g_{j−1} (Interval
        arithmetic; increasing in every g ≥ 0)."""
        m, n = self.m, self.n
        N2 = None
        for i in range(m):
            t = None
            for j in range(i + 1, n):
                t = g[j - 1] if t is None else t + g[j - 1]
                sq = t.square()
                N2 = sq if N2 is None else N2 + sq
        return N2 / n

    def _target_grid(self, lo, hi):
        """The target patch (the face box's free coordinates, all but the first flat one) on a
        grid of three values per free coordinate — its two ends and its middle — read as the
        corners of the patch's 2^k half-width sub-patches (k = m − 1).  Returns the grid
        points' unit targets (3^k lists of Intervals, point v = Σ_j d_j 3^j with digit d_j the
        level of free coordinate j), per point the largest 1/ν_s (rounded up; +inf where some
        ν_s ≤ 0) over the sub-patches s it is a corner of, ν_s ≤ ⟨b̂_s, u⟩ over the corners u
        of s (b̂_s the unit target of its centre), and the box columns of the free coordinates
        (B, k)."""
        import itertools

        m, n, B = self.m, self.n, len(lo)
        clo, chi = lo[:, m:], hi[:, m:]
        if not np.all(np.any(clo == chi, axis=1)):  # every box lies on a face (a split keeps it)
            raise ValueError("a target box off the faces of the cube: no coordinate is fixed")
        cf = np.argmax(clo == chi, axis=1)
        k = m - 1
        free = np.array([np.where(j >= cf, j + 1, j) for j in range(k)], dtype=int).T.reshape(B, k)
        rows = np.arange(B)[:, None]
        flo, fhi = clo[rows, free], chi[rows, free]
        fmid = 0.5 * (flo + fhi)
        levels = (flo, fmid, fhi, 0.5 * (flo + fmid), 0.5 * (fmid + fhi))  # ends, middle, quarters

        def unit(digits) -> list:
            c = clo.copy()
            for j, d in enumerate(digits):
                c[rows[:, 0], free[:, j]] = levels[d][:, j]
            return self._unit([Interval(c[:, i]) for i in range(m)])

        points = list(itertools.product(range(3), repeat=k))  # digit j of point v: v // 3^j % 3
        points = [p[::-1] for p in points]  # so that index v = Σ_j d_j 3^j
        units = [unit(p) for p in points]
        tmax = [np.ones(B) for _ in points]
        for s in itertools.product((0, 1), repeat=k):
            centre = unit([3 + sj for sj in s])  # the sub-patch's centre: the quarter points
            members = [sum((sj + e) * 3 ** j for j, (sj, e) in enumerate(zip(s, es)))
                       for es in itertools.product((0, 1), repeat=k)]
            nu = np.full(B, np.inf)
            for v in members:
                dot = centre[0] * units[v][0]
                for i in range(1, n):
                    dot = dot + centre[i] * units[v][i]
                nu = np.minimum(nu, dot.lo)
            t = np.where(nu > 0, _up(1.0 / np.where(nu > 0, nu, 1.0)), np.inf)
            for v in members:
                tmax[v] = np.maximum(tmax[v], t)
        return units, tmax, free

    @staticmethod
    def _unit(c: list) -> list:
        """b = Ec/‖Ec‖ = (c, −Σc)/‖Ec‖ from Intervals c (all n entries)."""
        tot, sq = c[0], c[0].square()
        for ck in c[1:]:
            tot = tot + ck
            sq = sq + ck.square()
        nb = (sq + tot.square()).sqrt()
        return [ck / nb for ck in c] + [(-tot) / nb]

    @staticmethod
    def _target_split(f: list, W: dict) -> tuple:
        """The entries of QᵀKQ split by their dependence on the target, as forms in the gaps:
        δ_k = α_k + β_k with α_k = f_k(2f_k − ‖f‖²) and β_k = f_k(⟨f, b⟩ − b_k) =
        Σ_l b_l f_k(f_l − [l = k]), so entry_ij = A_ij + Σ_l b_l X^l_ij with A_ij = Σ_k α_k W_ijk,
        X^l_ij = f_l(S_ij − W_ijl) and S_ij = Σ_k f_k W_ijk (W_ijk = u^i_k u^j_k).  Computed once
        per box, so that each target grid point costs only a linear combination."""
        n = len(f)
        f2 = f[0].square()
        for k in range(1, n):
            f2 = f2 + f[k].square()
        alpha = [f[k] * (f[k] * 2.0 - f2) for k in range(n)]
        A, X = {}, {}
        for key, Wk in W.items():
            S, a = f[0] * Wk[0], alpha[0] * Wk[0]
            for k in range(1, n):
                S = S + f[k] * Wk[k]
                a = a + alpha[k] * Wk[k]
            A[key] = a
            X[key] = [f[l] * (S - Wk[l]) for l in range(n)]
        return A, X

    #: the weight of the grid's end-to-end spread in a target coordinate's split score (tuned at
    #: n = 5: 0.15 resolved the band in 116k boxes, 0.08 in 121k and 0.3 in 169k)
    target_split_weight = 0.15

    #: second-order forms only on boxes whose gaps' widths are all below this fraction of their
    #: range (on wider boxes their remainders are no better than plain intervals, at many times
    #: the cost)
    quad_width = 0.3

    def upper(self, lo, hi, threshold=np.inf):
        """Plain intervals on every box; on boxes they leave above ``threshold`` and narrow
        enough, the second-order forms too (the smaller bound kept)."""
        ub, score = self._bound(lo, hi, quad=False)
        m = self.m
        small = np.max((hi[:, :m] - lo[:, :m]) / self.gmax, axis=1) <= self.quad_width
        sel = small & ~(ub <= threshold)
        if np.any(sel):
            ubq, scq = self._bound(lo[sel], hi[sel], quad=True)
            ub[sel] = np.minimum(ub[sel], ubq)
            score[sel] = scq
        return ub, score

    def _bound(self, lo, hi, quad: bool):
        n, m, B, D = self.n, self.m, len(lo), self.D
        mid = 0.5 * (lo + hi)
        rows = np.arange(B)
        with np.errstate(all="ignore"):
            # ---- the softmax over the gaps' box: Quad forms in g, and Intervals
            h = np.where(hi > lo, _up(np.maximum(hi - mid, mid - lo)), 0.0)
            gq = [Quad.variable(mid[:, k], h[:, k], k, m) for k in range(m)] if quad else None
            gi = [Interval(lo[:, k], hi[:, k]) for k in range(m)]
            zi, acc = [None] * m, None  # z_k = Σ_{j≥k} g_j (increasing in every g)
            for k in range(m - 1, -1, -1):
                acc = gi[k] if acc is None else acc + gi[k]
                zi[k] = acc
            fi = _softmax_enclosure(exp_interval_fast(np.stack([z.lo for z in zi], 1),
                                                      np.stack([z.hi for z in zi], 1)), n)
            # relative to the largest logit z_0: e^{−(z_0 − z_k)} ∈ (0, 1], their sum ∈ [1, n]
            f = None
            if quad:
                ez, dq, di = [], None, None
                for k in range(m):
                    dq = gq[k] if dq is None else dq + gq[k]
                    di = gi[k] if di is None else di + gi[k]
                    ez.append((-dq).exp(known=-di))
                tot = ez[0]
                for k in range(1, m):
                    tot = tot + ez[k]
                inv = (tot + 1.0).recip(known=Interval(np.ones(B), np.full(B, float(n))))
                f = [a.tighten(b) for a, b in zip([inv] + [ek * inv for ek in ez], fi)]
            # ---- the eigenbasis of K at the box centre (float)
            fmid, cmid, _ = self._points(mid)
            Kc = np.nan_to_num(_numeric_K(self.d_num, fmid, cmid))
            _, U = np.linalg.eigh(self.Gih @ Kc @ self.Gih)
        Q = self.Gih @ U
        Fn = _congruence(Q, m)
        with np.errstate(all="ignore"):
            # ---- u^i = TE q_i = E q_i − ⟨f, E q_i⟩𝟏 and the products u^i_k u^j_k
            us, usi = [], []
            for i in range(m):
                y = Q[:, :, i]
                last = Interval(np.zeros(B))
                for k in range(m):
                    last = last - Interval(y[:, k])  # (E y)_{n−1} = −Σ y
                doti = fi[m] * last
                for k in range(m):
                    doti = doti + fi[k].scale(y[:, k])
                ey = [Interval(y[:, k]) for k in range(m)] + [last]
                ui = [ey[k] - doti for k in range(n)]
                usi.append(ui)
                if quad:
                    dot = f[m] * Quad.of_interval(last)
                    for k in range(m):
                        dot = dot + f[k].scale(y[:, k])
                    us.append([(Quad.of_interval(ey[k]) - dot).tighten(ui[k])
                               for k in range(n)])
            W, Wi = {}, {}
            for i in range(m):
                for j in range(i, m):
                    if quad:
                        W[i, j] = [us[i][k].square() if i == j else us[i][k] * us[j][k]
                                   for k in range(n)]
                    else:  # the forms' path needs no plain products
                        Wi[i, j] = [usi[i][k].square() if i == j else usi[i][k] * usi[j][k]
                                    for k in range(n)]
            # ---- the target patch: its grid points' unit vectors b_v, each with its t ≤ 1/ν
            if quad:
                bvs, tvs, cends = self._target_grid(lo, hi)
                thi = np.max(np.stack(tvs), axis=0)
            else:  # plain intervals: b over the whole patch (first order in its size)
                bvs = [self._unit([Interval(lo[:, m + k], hi[:, m + k]) for k in range(m)])]
                thi, cends = np.ones(B), None
            # ---- per grid point: the entries of QᵀKQ and the bound
            # the forms' remainders come from the gaps alone (the target enters through the
            # grid): spread them over the gaps by width² (they are second order in the widths)
            wall = ((hi[:, :m] - lo[:, :m]) / self.scale[:m]) ** 2
            wall = wall / np.maximum(wall.sum(axis=1, keepdims=True), 1e-300)
            bounds, sens, cen = [], [], []
            if quad:
                A, X = self._target_split(f, W)
                keys = list(A)
                Af = _Forms.of([A[key] for key in keys], m)
                Xf = _Forms.of([[X[key][l] for key in keys] for l in range(n)], m)
            for v, bv in enumerate(bvs):
                if not quad:  # b over the whole patch: c' = b's first m entries
                    dli = self.d_int(*fi, *bv[:m])
                    Mlo = np.zeros((B, m, m))
                    Mhi = np.zeros((B, m, m))
                    cv = []
                    for i in range(m):
                        for j in range(i, m):
                            Pi = _entry(dli, Wi[i, j])
                            Mlo[:, i, j] = Mlo[:, j, i] = Pi.lo
                            Mhi[:, i, j] = Mhi[:, j, i] = Pi.hi
                            if i == j and i in (0, m - 1):
                                cv.append(0.5 * (Pi.lo + Pi.hi))
                    bounds.append(_pencil_bound(Mlo, Mhi, Fn))
                    sens.append(np.zeros((B, m)))
                    cen.append(np.stack(cv))
                    continue
                # K is affine in the target: at c' = t·b_v the entries are A + t·C(b_v), one
                # stack of forms for every t ∈ [1, 1/ν]
                wide_t = ~np.isfinite(tvs[v])
                tv = np.where(wide_t, 1.0, tvs[v])
                Cf = _combine(Xf, bv)
                sv = np.zeros((B, m))
                cv = []
                Pf = _affine(Af, Cf, tv)
                R = Pf.quad().range()
                Rlo, Rhi = R.lo.reshape(len(keys), B), R.hi.reshape(len(keys), B)
                Mlo = np.zeros((B, m, m))
                Mhi = np.zeros((B, m, m))
                for idx, (i, j) in enumerate(keys):
                    Mlo[:, i, j] = Mlo[:, j, i] = Rlo[idx]
                    Mhi[:, i, j] = Mhi[:, j, i] = Rhi[idx]
                    if i == j and i in (0, m - 1):  # the extreme diagonal entries
                        cv.append(Af.c[idx] + Cf.c[idx])  # at the grid point itself (t = 1)
                        # the gaps' sensitivity: the span over t is the target's, left out
                        pe = Af.e[idx] + 0.5 * (1.0 + tv) * Cf.e[idx]
                        pe = np.where(np.isfinite(pe), pe, 0.0)
                        sv = np.maximum(sv, np.abs(Pf.a[idx]).T + pe[:, None] * wall)
                best = _pencil_bound(Mlo, Mhi, Fn)
                bounds.append(np.where(wide_t, np.inf, best))
                sens.append(sv)
                cen.append(np.stack(cv))
        bounds = np.stack(bounds)  # (grid points, B)
        ub = bounds.max(axis=0)
        score = np.zeros((B, D))
        score[:, :m] = np.stack(sens)[np.argmax(bounds, axis=0), rows]
        for j in range(cends.shape[1] if quad else 0):  # a free target coordinate: the spread
            # of the extreme entries (at the logits' centre) between the patch's two ends along
            # it, damped — the grid bounds the target's patch almost exactly, so cutting it
            # mainly helps through 1/ν and the basis, less than cutting a gap does
            spread = np.zeros(B)
            for v in range(len(bvs)):
                if (v // 3 ** j) % 3 == 0:
                    spread = np.maximum(spread, np.abs(cen[v] - cen[v + 2 * 3 ** j]).max(axis=0))
            col = m + cends[:, j]
            score[rows, col] += self.target_split_weight * np.where(np.isfinite(spread), spread, 0.0)
        wscore = (hi - lo) / self.scale
        bad = ~np.isfinite(ub) | ~np.all(np.isfinite(score), axis=1) | (not quad)
        score = np.where(bad[:, None], wscore, score + 1e-3 * wscore)
        wide = ~np.isfinite(thi)  # the target patch spans too wide an angle: split it first
        score[:, m:] = np.where(wide[:, None], 1e6 * wscore[:, m:], score[:, m:])
        return ub, score


def _chunk(pb) -> int:
    """Boxes per batch: ≈ 100 MB of second-order forms for the eigen bound (their size grows
    like n⁴), 40 000 otherwise."""
    if not isinstance(pb, _EigenProblem):
        return 40_000
    n, m = pb.n, pb.m
    per_box = 8.0 * n * m * (m + 1) / 2 * (m * (m + 1) / 2 + m + 2)  # the u^i_k u^j_k forms
    return int(min(40_000, max(1_000, 1e8 // per_box)))


@cached(maxsize=8)  # a band holds its certificate (up to ~100 MB at the thorough profile)
def certified_upper(loss: str, n: int, R: float, boxes: int, stop: float | None = None) -> Band:
    """The deterministic form used by the claims: a budget of boxes, no clock.  ``stop``: a
    candidate constant — the search ends as soon as the certified upper bound is ≤ it, or as
    soon as a point value above it shows that it cannot be."""
    return certified_band(loss, n, 2, R, seconds=math.inf, max_boxes=boxes, stop=stop)


def certified_band(loss: str, n: int, d: int, R: float, *, seconds: float = 60.0,
                   target: float = 1.0995, max_boxes: int = 50_000_000,
                   method: str = "eigen", stop: float | None = None) -> Band:
    """Branch and bound for sup ψ at ρ = R² (scaled by R²); see the module docstring.  ``d``
    only matters through the reduction (for d = 1 the band is an upper bound, not tight).
    ``method``: "eigen" (the pencil bound, normalized loss) or "ratio" (ψ's closed form over
    (z, v) boxes; the rescaled loss always).  Without ``stop`` the search ends when the upper
    bound is ≤ ``target`` × the best point value (1.0995: the point value is a float a hair
    above the certified witness, so the band stays within 1.10 × the witness); with ``stop`` (a constant, in the units of
    the result) when it is ≤ ``stop`` (status "target") or a point value exceeds ``stop``
    (status "refuted": no certificate can reach it)."""
    import time

    if n == 1 and loss == "normalized":  # one logit: softmax is constant, the Hessian is 0
        return Band(loss, n, R, 0.0, 0.0, None, "target", 0.0, 0)
    if method not in ("eigen", "ratio"):
        raise ValueError(f"unknown method {method!r}")
    t0 = time.perf_counter()
    r2 = Interval(np.float64(R)) * Interval(np.float64(R))
    rho = float(r2.hi)  # ≥ R²: the domain covered contains the logits' ball
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
    # the result is R²·(the bound on ψ), rounded up: aim the bound on ψ a little below stop/R²
    psi_stop = None if stop is None else float((Interval(np.float64(stop)) / r2).lo) * (1 - 1e-12)
    record: dict = {}
    res = branch_and_bound(pb.upper, pb.value, lo, hi, infeasible_fn=pb.infeasible,
                           target=target, seconds=seconds - (time.perf_counter() - t0),
                           max_boxes=max_boxes, scale=scale,
                           polish=lambda x: pb.polish(x, glo, ghi), **start,
                           probe=2000 if isinstance(pb, _EigenProblem) else None,
                           stop=psi_stop, chunk=_chunk(pb), record=record)
    with np.errstate(all="ignore"):  # an unresolved box may leave the bound at +inf
        upper = float((r2 * Interval(np.float64(res.upper))).hi)
    upper = upper if upper == upper else math.inf
    cert = BoxCertificate.from_record(_domain(pb, loss, n, R, rho), record, res.upper, upper,
                                      Fraction(float(R)) ** 2)
    arg = None
    if res.argmax is not None:
        if isinstance(pb, _EigenProblem):
            arg = pb.point(res.argmax)
        else:
            z, v = pb._zv(res.argmax[None, :])
            arg = (tuple(z[0]), tuple(v[0]))
    return Band(loss, n, float(R), upper, res.lower * float(r2.lo), arg, res.status,
                time.perf_counter() - t0, res.boxes, cert)


def _domain(pb, loss: str, n: int, R: float, rho: float):
    """The certificate's domain: the set the boxes cover and the quantity (the derivation's
    SymPy forms), as the independent checker reads them."""
    if isinstance(pb, _EigenProblem):
        rm = hessian.reduced_matrix(n)
        return SoftmaxPencil(n, float(R), rho, pb.gmax, rm.delta, rm.K, rm.x, rm.c)
    rh = hessian.reduced_hessian(loss, n)
    return SoftmaxRatio(loss, n, float(R), rho, pb.zmax, rh.psi, rh.x, rh.v)
