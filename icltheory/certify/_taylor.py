r"""Second-order Taylor models over boxes with ball coefficients (the checker's own).

A :class:`TM` over a box with centre $m$ and half-widths $h$ encloses a function as
$x(\varepsilon)\in c+\sum_ia_i\varepsilon_i+\sum_{i\le j}q_{ij}\varepsilon_i\varepsilon_j+[-r,r]$,
$\varepsilon\in[-1,1]^D$ ($\theta=m+h\circ\varepsilon$), float coefficients (vectorised over
boxes) and a ball of radius $r$ around them — a ball in the style of arb, whose radius takes
every term dropped and every rounding.  Products keep the second-order part exactly and move
third- and fourth-order terms into $r$ using $|\varepsilon_i|\le1$; ``exp`` and ``recip`` use Taylor's theorem to second order
with the exact remainder ($e^{y}$: $|R|\le e^{\sup y}|y|^3/6$; $1/(c+y)$:
$|R|=|y|^3/(c^3(c+y))$).  :meth:`TM.range` encloses the form over the box: each coordinate's
$a_i\varepsilon+q_{ii}\varepsilon^2$ exactly (its ends and its vertex), the cross terms by
$\sum_{i<j}|q_{ij}|$, plus $r$.

Rounding: a float operation's result $\hat y$ is within $2^{-52}|\hat y|$ (plus $2^{-1074}$ in
the subnormal range) of the exact value; since $|\varepsilon_i|\le1$ a coefficient's error adds
at most itself to the value, so those errors go to $r$; every radius — a float sum or product
of nonnegative numbers — is inflated by the relative $2^{-40}$ (which covers the rounding of up
to $2^{11}$ such operations) plus $2^{-1060}$.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intervals import Iv, exp_enclosure

__all__ = ["TM"]

_U = 2.0 ** -52
_INF = np.inf


def _up(x):
    """A float ≥ the exact value of a nonnegative quantity computed as ``x`` by at most 2¹¹
    float operations on nonnegative numbers."""
    return x * (1.0 + 2.0 ** -40) + 2.0 ** -1060


_PACKS: dict[int, tuple] = {}


def _pack(D: int) -> tuple:
    """(I, J, diag, half): the packed index pairs i ≤ j, the diagonal's positions, and ½ on
    the diagonal (a product's ε_iε_i coefficient is a_i b_i, not a_i b_i + a_i b_i)."""
    got = _PACKS.get(D)
    if got is None:
        I, J = np.triu_indices(D)
        diag = np.flatnonzero(I == J)
        half = np.where(I == J, 0.5, 1.0)[:, None]
        got = _PACKS[D] = (I, J, diag, half)
    return got


class TM:
    """Float coefficients — constant ``c`` (B,), linear ``a`` (D, B), quadratic ``q``
    (D(D+1)/2, B) packed by :func:`numpy.triu_indices` — and a bound ``r`` (B,) on everything
    else: the terms dropped, the constants' uncertainty and every rounding."""

    __slots__ = ("c", "a", "q", "r", "D")

    def __init__(self, c, a, q, r, D: int):
        self.c, self.a, self.q, self.r, self.D = c, a, q, r, D

    # ------------------------------------------------------------------ construction
    @staticmethod
    def variable(mid: np.ndarray, half: np.ndarray, k: int, D: int) -> "TM":
        """θ_k = mid + half·ε_k (``half`` ≥ the coordinate's distance from mid to its ends)."""
        B = len(mid)
        a = np.zeros((D, B))
        a[k] = half
        return TM(np.asarray(mid, float).copy(), a, np.zeros((D * (D + 1) // 2, B)),
                  np.zeros(B), D)

    @staticmethod
    def const(x: Iv, D: int, B: int | None = None) -> "TM":
        lo, hi = np.asarray(x.lo, float), np.asarray(x.hi, float)
        B = B if B is not None else (np.shape(lo)[0] if np.ndim(lo) else 1)
        lo, hi = np.broadcast_to(lo, (B,)), np.broadcast_to(hi, (B,))
        m = 0.5 * (lo + hi)
        r = _up(np.maximum(hi - m, m - lo) + np.abs(m) * _U)
        return TM(m, np.zeros((D, B)), np.zeros((D * (D + 1) // 2, B)), r, D)

    def _lift(self, o: Any) -> "TM":
        if isinstance(o, TM):
            return o
        x = o if isinstance(o, Iv) else Iv.of(o)
        return TM.const(x, self.D, len(self.c))

    # ------------------------------------------------------------------ magnitudes
    def lin_mag(self) -> np.ndarray:
        return _up(np.abs(self.a).sum(axis=0))

    def quad_mag(self) -> np.ndarray:
        return _up(np.abs(self.q).sum(axis=0))

    def rad(self) -> np.ndarray:
        """≥ |x − c| over the box."""
        return _up(self.lin_mag() + self.quad_mag() + self.r)

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, o: Any) -> "TM":
        o = self._lift(o)
        c, a, q = self.c + o.c, self.a + o.a, self.q + o.q
        rnd = (np.abs(c) + np.abs(a).sum(axis=0) + np.abs(q).sum(axis=0)) * _U
        return TM(c, a, q, _up(self.r + o.r + rnd), self.D)

    __radd__ = __add__

    def __neg__(self) -> "TM":
        return TM(-self.c, -self.a, -self.q, self.r, self.D)

    def __sub__(self, o: Any) -> "TM":
        return self + (-self._lift(o))

    def __rsub__(self, o: Any) -> "TM":
        return self._lift(o) + (-self)

    def _times_ball(self, km: np.ndarray, kr: np.ndarray) -> "TM":
        """self × a constant ball (km ± kr), per box."""
        c, a, q = self.c * km, self.a * km, self.q * km
        reach = _up(np.abs(self.c) + self.lin_mag() + self.quad_mag())
        rnd = (np.abs(c) + np.abs(a).sum(axis=0) + np.abs(q).sum(axis=0)) * _U
        return TM(c, a, q, _up(reach * kr + self.r * (np.abs(km) + kr) + rnd), self.D)

    def times_iv(self, k: Iv) -> "TM":
        """self × an interval constant."""
        B = len(self.c)
        lo = np.broadcast_to(np.asarray(k.lo, float), (B,))
        hi = np.broadcast_to(np.asarray(k.hi, float), (B,))
        m = 0.5 * (lo + hi)
        return self._times_ball(m, _up(np.maximum(hi - m, m - lo) + np.abs(m) * _U))

    def scale(self, p: np.ndarray) -> "TM":
        """self × exact floats p."""
        return self._times_ball(np.asarray(p, float), np.zeros(len(self.c)))

    def __mul__(self, o: Any) -> "TM":
        if not isinstance(o, TM):
            return self.times_iv(o if isinstance(o, Iv) else Iv.of(o))
        x, y = self, o
        I, J, _, half = _pack(self.D)
        c = x.c * y.c
        t1, t2 = x.a * y.c, y.a * x.c
        a = t1 + t2
        p1, p2 = x.a[I] * y.a[J], x.a[J] * y.a[I]
        u1, u2 = x.q * y.c, y.q * x.c
        q = (p1 + p2) * half + u1 + u2
        Ax, Ay, Qx, Qy = x.lin_mag(), y.lin_mag(), x.quad_mag(), y.quad_mag()
        # each coefficient above is a few roundings of products and sums whose magnitudes are
        # counted here (at most three roundings touch any one of them: 4 units each covers it)
        rnd = (np.abs(c) + (np.abs(t1) + np.abs(t2) + np.abs(a)).sum(axis=0)
               + (np.abs(p1) + np.abs(p2) + np.abs(u1) + np.abs(u2) + np.abs(q)).sum(axis=0)
               ) * (4 * _U)
        r = _up(Ax * Qy + Qx * Ay + Qx * Qy
                + x.r * (np.abs(y.c) + Ay + Qy + y.r) + y.r * (np.abs(x.c) + Ax + Qx) + rnd)
        return TM(c, a, q, r, self.D)

    __rmul__ = __mul__

    def sqr(self) -> "TM":
        return self * self

    def _centred(self) -> "TM":
        """x − c."""
        return TM(np.zeros(len(self.c)), self.a, self.q, self.r, self.D)

    def exp(self) -> "TM":
        """e^x = e^c(1 + y + y²/2) + R, y = x − c, |R| ≤ e^{c + |y|}|y|³/6."""
        B = len(self.c)
        y = self._centred()
        ry = y.rad()
        e_lo, e_hi = exp_enclosure(self.c)
        em = 0.5 * (e_lo + e_hi)
        body = (y * y)._times_ball(np.full(B, 0.5), np.zeros(B)) + y + 1.0
        out = body._times_ball(em, _up(np.maximum(e_hi - em, em - e_lo) + np.abs(em) * _U))
        emax = exp_enclosure((Iv(self.c) + Iv(ry)).hi)[1]
        R = _up(emax * ry * ry * ry / 6.0)
        out.r = _up(out.r + R)
        return out

    def recip(self) -> "TM":
        """1/x for x > 0 on the box: (1/c)(1 − u + u²) + R, u = y/c, |R| ≤ |y|³/(c³(c − |y|));
        unbounded where x may not be positive."""
        y = self._centred()
        ry = y.rad()
        c = self.c
        with np.errstate(all="ignore"):
            ic = 1.0 / c
            icr = _up(np.abs(ic) * _U)
            u = y._times_ball(ic, icr)
            out = ((u * u) - u + 1.0)._times_ball(ic, icr)
            low = (c - ry) * (1.0 - 2.0 ** -50)  # below the smallest value of x
            ok = (c > 0) & (low > 0)
            R = _up(ry * ry * ry / (c * c * c) / low)
        out.r = np.where(ok, _up(out.r + np.where(np.isnan(R), _INF, R)), _INF)
        return out

    def tighten(self, known: Iv) -> "TM":
        """Where ``known`` (another enclosure of the same quantity) is narrower than half the
        form's reach, the constant form of ``known`` instead."""
        lo, hi = np.asarray(known.lo, float), np.asarray(known.hi, float)
        kr = 0.5 * (hi - lo)
        reach = self.rad()
        use = np.isfinite(lo) & np.isfinite(hi) & ((kr < 0.5 * reach) | ~np.isfinite(reach))
        if not np.any(use):
            return self
        k = TM.const(Iv(np.where(use, lo, 0.0), np.where(use, hi, 0.0)), self.D, len(self.c))
        return TM(np.where(use, k.c, self.c), np.where(use, 0.0, self.a),
                  np.where(use, 0.0, self.q), np.where(use, k.r, self.r), self.D)

    # ------------------------------------------------------------------ range
    def range(self) -> Iv:
        """An enclosure of the form's values over the box."""
        I, J, diag, _ = _pack(self.D)
        a_lo, a_hi = self.a, self.a
        q_lo, q_hi = self.q[diag], self.q[diag]
        # a_i ε + q_ii ε² on [−1, 1]: its ends ε = ±1, and its vertex ε = −a/(2q) where that
        # may lie inside (|a| ≤ 2|q| for some coefficients of the balls)
        e_lo = np.minimum(q_lo + a_lo, q_lo - a_hi)
        e_hi = np.maximum(q_hi + a_hi, q_hi - a_lo)
        amin = np.where((a_lo <= 0) & (a_hi >= 0), 0.0, np.minimum(np.abs(a_lo), np.abs(a_hi)))
        amag = np.maximum(np.abs(a_lo), np.abs(a_hi))
        qmag = np.maximum(np.abs(q_lo), np.abs(q_hi))
        vertex = amin <= 2.0 * qmag
        pos, neg = q_lo > 0, q_hi < 0
        with np.errstate(all="ignore"):
            v_pos = -(amag * amag) / (4.0 * np.where(pos, q_lo, 1.0))  # min when q > 0
            v_neg = (amag * amag) / (4.0 * np.where(neg, -q_hi, 1.0))  # max when q < 0
        reach = amag + qmag  # q may vanish: |aε + qε²| ≤ |a| + |q|
        t_lo = np.where(~vertex, e_lo, np.where(pos, np.minimum(e_lo, v_pos),
                                                 np.where(neg, e_lo, np.minimum(e_lo, -reach))))
        t_hi = np.where(~vertex, e_hi, np.where(neg, np.maximum(e_hi, v_neg),
                                                 np.where(pos, e_hi, np.maximum(e_hi, reach))))
        off = I != J
        cross = np.abs(self.q[off]).sum(axis=0) if np.any(off) else 0.0
        # every value above came from at most a few roundings of numbers no larger than those
        # summed here: 16 units of roundoff of their total covers them
        slack = (np.abs(self.c) + np.abs(t_lo).sum(axis=0) + np.abs(t_hi).sum(axis=0)) * 16 * _U
        spread = _up(cross + self.r + slack)
        lo = self.c + t_lo.sum(axis=0) - spread
        hi = self.c + t_hi.sum(axis=0) + spread
        lo = lo - (np.abs(lo) * (2 * _U) + 2.0 ** -1074)  # the last two roundings
        hi = hi + (np.abs(hi) * (2 * _U) + 2.0 ** -1074)
        bad = np.isnan(lo) | np.isnan(hi)
        return Iv(np.where(bad, -_INF, lo), np.where(bad, _INF, hi))

