r"""The checker's own arithmetic: vectorised intervals rounded outward by one ulp, forward-mode
derivatives over them, and exponentials enclosed by python-flint ``arb``.

:class:`Iv` holds numpy arrays ``lo``, ``hi`` (one interval per box).  ``+ − × ÷`` and
``sqrt`` are correctly rounded in IEEE 754, so the exact result of each operation on the end
points lies within half an ulp of the rounded one: every result is widened outward by a few
ulps (see ``_REL``).  A NaN anywhere stands for "no bound" and is turned into
the whole line by :meth:`Iv.upper` (nothing is ever certified from it).

:func:`exp_enclosure` takes each distinct float through ``arb`` (``exp`` of an exact binary
number), rounded outward to floats by comparing in arb; no exponential from the float library is
trusted.

:class:`Dual` carries an interval value and interval partial derivatives with respect to the box
coordinates, so that one evaluation over a box encloses the gradient there (the mean-value
form of :mod:`._softmax` is built from it).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["Iv", "Dual", "exp_enclosure", "arb_to_float"]

_INF = np.inf
#: outward margin: the exact result r* of one correctly rounded operation with result r has
#: |r* − r| ≤ ½ulp(r) (at least 2⁻¹⁰⁷⁵ below the normal range); 2⁻⁵²|r| is at least one ulp of
#: r, so r − (2⁻⁵²|r| + 2⁻¹⁰⁷⁴), rounded to nearest, is at most r − ulp(r) ≤ r* (and the same
#: upward).  Cheaper than numpy.nextafter, and at most one ulp wider.
_REL = 2.0 ** -52
_ABS = 2.0 ** -1074


def _dn(x):
    return x - (np.abs(x) * _REL + _ABS)


def _up(x):
    return x + (np.abs(x) * _REL + _ABS)


def _nan_to_line(lo, hi):
    bad = np.isnan(lo) | np.isnan(hi)
    if np.any(bad):
        lo = np.where(bad, -_INF, lo)
        hi = np.where(bad, _INF, hi)
    return lo, hi


class Iv:
    """A batch of closed intervals ``[lo, hi]`` (numpy float64 arrays of one shape)."""

    __slots__ = ("lo", "hi")
    __array_priority__ = 1000

    def __init__(self, lo: Any, hi: Any = None):
        self.lo = np.asarray(lo, dtype=float)
        self.hi = self.lo if hi is None else np.asarray(hi, dtype=float)

    @staticmethod
    def of(x: Any) -> "Iv":
        """An interval, or an exactly representable constant as a point."""
        if isinstance(x, Iv):
            return x
        v = float(x)
        if v != x:
            raise ValueError(f"{x!r} is not exactly representable")
        return Iv(np.float64(v))

    def __add__(self, o: Any) -> "Iv":
        o = Iv.of(o)
        return Iv(_dn(self.lo + o.lo), _up(self.hi + o.hi))

    __radd__ = __add__

    def __neg__(self) -> "Iv":
        return Iv(-self.hi, -self.lo)

    def __sub__(self, o: Any) -> "Iv":
        o = Iv.of(o)
        return Iv(_dn(self.lo - o.hi), _up(self.hi - o.lo))

    def __rsub__(self, o: Any) -> "Iv":
        return Iv.of(o) - self

    def __mul__(self, o: Any) -> "Iv":
        o = Iv.of(o)
        a, b, c, d = self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi
        lo = np.minimum(np.minimum(a, b), np.minimum(c, d))
        hi = np.maximum(np.maximum(a, b), np.maximum(c, d))
        return Iv(_dn(lo), _up(hi))

    __rmul__ = __mul__

    def scale(self, p: np.ndarray) -> "Iv":
        """self × p for an array p of floats (each an exact number)."""
        a, b = self.lo * p, self.hi * p
        pos = p >= 0
        return Iv(_dn(np.where(pos, a, b)), _up(np.where(pos, b, a)))

    def recip(self) -> "Iv":
        """1/x; the whole line where the interval holds 0."""
        zero = (self.lo <= 0) & (self.hi >= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            lo, hi = _dn(1.0 / self.hi), _up(1.0 / self.lo)
        return Iv(np.where(zero, -_INF, lo), np.where(zero, _INF, hi))

    def __truediv__(self, o: Any) -> "Iv":
        return self * Iv.of(o).recip()

    def __rtruediv__(self, o: Any) -> "Iv":
        return Iv.of(o) * self.recip()

    def sqr(self) -> "Iv":
        a, b = self.lo * self.lo, self.hi * self.hi
        zero = (self.lo <= 0) & (self.hi >= 0)
        return Iv(np.where(zero, 0.0, np.maximum(_dn(np.minimum(a, b)), 0.0)),
                  _up(np.maximum(a, b)))

    def sqrt(self) -> "Iv":
        """√x (x's negative part dropped: callers take roots of nonnegative quantities; a
        negative upper end gives NaN, i.e. no bound)."""
        with np.errstate(invalid="ignore"):
            hi = _up(np.sqrt(self.hi))
            lo = np.maximum(_dn(np.sqrt(np.maximum(self.lo, 0.0))), 0.0)
        return Iv(lo, hi)

    def __abs__(self) -> "Iv":
        zero = (self.lo <= 0) & (self.hi >= 0)
        a, b = np.abs(self.lo), np.abs(self.hi)
        return Iv(np.where(zero, 0.0, np.minimum(a, b)), np.maximum(a, b))

    def mag(self) -> np.ndarray:
        """max |x| (NaN → inf)."""
        m = np.maximum(np.abs(self.lo), np.abs(self.hi))
        return np.where(np.isnan(m), _INF, m)

    def upper(self) -> np.ndarray:
        """The upper ends, NaN read as +inf."""
        return np.where(np.isnan(self.hi) | np.isnan(self.lo), _INF, self.hi)

    def lower(self) -> np.ndarray:
        return np.where(np.isnan(self.hi) | np.isnan(self.lo), -_INF, self.lo)

    def meet(self, o: "Iv") -> "Iv":
        """The intersection of two enclosures of the same quantity."""
        lo, hi = _nan_to_line(self.lo, self.hi)
        olo, ohi = _nan_to_line(o.lo, o.hi)
        return Iv(np.maximum(lo, olo), np.minimum(hi, ohi))

    def __getitem__(self, k: Any) -> "Iv":
        return Iv(self.lo[k], self.hi[k])

    def __repr__(self) -> str:
        return f"Iv({self.lo!r}, {self.hi!r})"


def iv_sum(terms: Sequence[Iv]) -> Iv:
    acc = terms[0]
    for t in terms[1:]:
        acc = acc + t
    return acc


# ----------------------------------------------------------------------------- exp by arb

_EXP: dict[float, tuple[float, float]] = {}


def arb_to_float(x: Any, up: bool) -> float:
    """An arb number (exact point, e.g. ``ball.upper()``) rounded to a float in the given
    direction (a comparison in arb decides every step)."""
    import flint

    f = float(x)
    if math.isnan(f):
        return _INF if up else -_INF
    if up:
        while flint.arb(f) < x:
            f = math.nextafter(f, _INF)
    else:
        while flint.arb(f) > x:
            f = math.nextafter(f, -_INF)
    return f


def _exp_point(x: float) -> tuple[float, float]:
    got = _EXP.get(x)
    if got is None:
        import flint

        if not math.isfinite(x):
            got = (0.0, 0.0) if x == -_INF else (0.0, _INF)
        elif x > 709.0:
            got = (float(np.finfo(float).max), _INF)
        else:
            e = flint.arb(x).exp()
            got = (max(arb_to_float(e.lower(), up=False), 0.0), arb_to_float(e.upper(), up=True))
        if len(_EXP) < 4_000_000:
            _EXP[x] = got
    return got


def exp_enclosure(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) with lo ≤ e^x ≤ hi for every float of the array ``x`` (arb per distinct
    value; NaN gives [0, inf])."""
    x = np.asarray(x, dtype=float)
    flat = np.where(np.isnan(x), _INF, x).ravel()
    uniq, inv = np.unique(flat, return_inverse=True)
    enc = np.array([_exp_point(float(v)) for v in uniq], dtype=float).reshape(-1, 2)
    return enc[inv, 0].reshape(x.shape), enc[inv, 1].reshape(x.shape)


def exp_iv(x: Iv) -> Iv:
    """e^x over intervals (increasing: the end points' enclosures)."""
    return Iv(exp_enclosure(x.lo)[0], exp_enclosure(x.hi)[1])


# ----------------------------------------------------------------------------- derivatives


class Dual:
    """An interval value with interval partial derivatives (``None`` for a zero one) with
    respect to ``len(grad)`` box coordinates, enclosing value and gradient over a box."""

    __slots__ = ("val", "grad")
    __array_priority__ = 1001

    def __init__(self, val: Iv, grad: list):
        self.val, self.grad = val, grad

    @staticmethod
    def const(x: Any, D: int) -> "Dual":
        return Dual(Iv.of(x), [None] * D)

    def _lift(self, o: Any) -> "Dual":
        return o if isinstance(o, Dual) else Dual(Iv.of(o), [None] * len(self.grad))

    def __add__(self, o: Any) -> "Dual":
        o = self._lift(o)
        g = [a if b is None else (b if a is None else a + b) for a, b in zip(self.grad, o.grad)]
        return Dual(self.val + o.val, g)

    __radd__ = __add__

    def __neg__(self) -> "Dual":
        return Dual(-self.val, [None if a is None else -a for a in self.grad])

    def __sub__(self, o: Any) -> "Dual":
        return self + (-self._lift(o))

    def __rsub__(self, o: Any) -> "Dual":
        return self._lift(o) + (-self)

    def __mul__(self, o: Any) -> "Dual":
        o = self._lift(o)
        g = []
        for a, b in zip(self.grad, o.grad):
            ta = None if a is None else a * o.val
            tb = None if b is None else b * self.val
            g.append(ta if tb is None else (tb if ta is None else ta + tb))
        return Dual(self.val * o.val, g)

    __rmul__ = __mul__

    def scale(self, p: np.ndarray) -> "Dual":
        return Dual(self.val.scale(p), [None if a is None else a.scale(p) for a in self.grad])

    def recip(self) -> "Dual":
        r = self.val.recip()
        d = -(r.sqr())
        return Dual(r, [None if a is None else a * d for a in self.grad])

    def __truediv__(self, o: Any) -> "Dual":
        return self * self._lift(o).recip()

    def __rtruediv__(self, o: Any) -> "Dual":
        return self._lift(o) * self.recip()

    def sqr(self) -> "Dual":
        d = self.val * 2.0
        return Dual(self.val.sqr(), [None if a is None else a * d for a in self.grad])

    def sqrt(self) -> "Dual":
        r = self.val.sqrt()
        half = (r * 2.0).recip()  # unbounded where the root may vanish
        return Dual(r, [None if a is None else a * half for a in self.grad])

    def __abs__(self) -> "Dual":
        v = self.val
        sg = Iv(np.where(v.lo > 0, 1.0, -1.0), np.where(v.hi < 0, -1.0, 1.0))
        return Dual(abs(v), [None if a is None else a * sg for a in self.grad])
