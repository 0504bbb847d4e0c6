r"""Vectorised interval arithmetic with outward rounding, and a branch-and-bound driver.

:class:`Interval` holds arrays ``lo``, ``hi`` (one interval per box of a batch).  Every
operation rounds outward by one ulp (``numpy.nextafter``) after IEEE round-to-nearest, which
encloses the exact result of ``+ − × ÷`` and ``sqrt`` (all correctly rounded in IEEE 754).
Transcendental functions are not taken from the float library: :func:`exp_interval` encloses
``exp`` at the (exact float) endpoints with python-flint ``arb`` (memoised per endpoint value, so
a bisection grid costs one arb call per distinct endpoint); :func:`exp_bounds` encloses it at
any float array without a per-value arb call (e^{k/2⁸} from an arb table, the rest by its
Taylor series with every rounding bounded).

:class:`Quad` carries second-order Taylor forms in a box's coordinates (the quadratic part
exact, third-order terms and rounding in an error radius): on small boxes their ranges are far
tighter than plain intervals (no dependency problem to second order).

:func:`lambdify_interval` lowers a SymPy expression (sums, products, integer powers, ``Abs``,
``sqrt``, dyadic rational constants) to a function of Intervals (or Duals, or Quads).

:func:`branch_and_bound` certifies an upper bound on ``sup f`` over a union of boxes: a box is
discarded once its interval upper bound is below a value of ``f`` at a feasible point (times
``1 − 1e-9``; such a value only ever raises the result, so its float error cannot invalidate
it), or once it is certainly infeasible; boxes are bisected along their widest (scaled, or
most sensitive) side until every remaining box's upper bound is within ``target`` × the best
value found (or below an absolute ``stop``), the time budget ends, or ``max_boxes`` is
reached.  The certified upper bound is the largest upper bound among the remaining boxes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

__all__ = ["Interval", "Dual", "Quad", "dual_gradient", "exp_interval", "exp_bounds",
           "exp_interval_fast", "lambdify_interval", "centred_upper", "branch_and_bound",
           "BnBResult"]

_INF = np.inf


_REL = 2.0 ** -51  # four units of roundoff: covers one rounding of the op and one of the shift
_TINY = 2.0 ** -1073  # covers the absolute rounding error in the subnormal range


def _down(x):
    """A float ≤ every real that rounds to x (x the round-to-nearest result of one IEEE
    operation): x − (|x|·2⁻⁵¹ + 2⁻¹⁰⁷³) evaluated in floats, which is at least one ulp below x
    (faster than ``numpy.nextafter``).  −inf stays; +inf becomes NaN, which every consumer
    treats as unbounded (comparisons with NaN are false, so nothing is certified from it)."""
    return x - (np.abs(x) * _REL + _TINY)


def _up(x):
    """A float ≥ every real that rounds to x (see :func:`_down`)."""
    return x + (np.abs(x) * _REL + _TINY)


class Interval:
    """A batch of closed intervals [lo, hi] (numpy arrays of one shape)."""

    __slots__ = ("lo", "hi")
    __array_priority__ = 1000

    def __init__(self, lo, hi=None):
        lo = np.asarray(lo, dtype=float)
        self.lo = lo
        self.hi = lo if hi is None else np.asarray(hi, dtype=float)

    @staticmethod
    def _of(x) -> "Interval":
        if isinstance(x, Interval):
            return x
        v = float(x)
        if v != x:  # a constant that float64 cannot hold exactly
            raise ValueError(f"constant {x!r} is not exactly representable")
        return Interval(np.float64(v))

    def __add__(self, o):
        o = Interval._of(o)
        return Interval(_down(self.lo + o.lo), _up(self.hi + o.hi))

    __radd__ = __add__

    def __neg__(self):
        return Interval(-self.hi, -self.lo)

    def __sub__(self, o):
        return self + (-Interval._of(o))

    def __rsub__(self, o):
        return Interval._of(o) + (-self)

    def __mul__(self, o):
        o = Interval._of(o)
        p = (self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi)
        return Interval(_down(np.minimum(np.minimum(p[0], p[1]), np.minimum(p[2], p[3]))),
                        _up(np.maximum(np.maximum(p[0], p[1]), np.maximum(p[2], p[3]))))

    __rmul__ = __mul__

    def scale(self, p) -> "Interval":
        """self × p for an array p of exact floats (one rounding per end, no four-way min)."""
        a, b = self.lo * p, self.hi * p
        pos = p >= 0
        return Interval(_down(np.where(pos, a, b)), _up(np.where(pos, b, a)))

    def __truediv__(self, o):
        o = Interval._of(o)
        zero = (o.lo <= 0) & (o.hi >= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = Interval(_down(1.0 / o.hi), _up(1.0 / o.lo))
            out = self * inv
        # a denominator that may vanish: the quotient is unbounded (the box must be split)
        return Interval(np.where(zero, -_INF, out.lo), np.where(zero, _INF, out.hi))

    def __rtruediv__(self, o):
        return Interval._of(o) / self

    def __pow__(self, k):
        if not (isinstance(k, (int, np.integer)) or float(k).is_integer()):
            raise ValueError("only integer powers")
        k = int(k)
        if k < 0:
            return 1.0 / (self ** (-k))
        if k == 0:
            return Interval(np.ones_like(self.lo))
        if k == 1:
            return self
        if k % 2 == 0:
            half = self.square()
            return half ** (k // 2) if k > 2 else half
        return self * (self ** (k - 1))

    def square(self) -> "Interval":
        a, b = self.lo * self.lo, self.hi * self.hi
        zero = (self.lo <= 0) & (self.hi >= 0)
        return Interval(np.where(zero, 0.0, _down(np.minimum(a, b))), _up(np.maximum(a, b)))

    def __abs__(self):
        zero = (self.lo <= 0) & (self.hi >= 0)
        return Interval(np.where(zero, 0.0, np.minimum(np.abs(self.lo), np.abs(self.hi))),
                        np.maximum(np.abs(self.lo), np.abs(self.hi)))

    def sqrt(self) -> "Interval":
        return Interval(np.maximum(_down(np.sqrt(np.maximum(self.lo, 0.0))), 0.0),
                        _up(np.sqrt(np.maximum(self.hi, 0.0))))

    def __repr__(self):
        return f"Interval({self.lo!r}, {self.hi!r})"


_EXP_CACHE: dict[float, tuple[float, float]] = {}


def _exp_endpoint(x: float) -> tuple[float, float]:
    got = _EXP_CACHE.get(x)
    if got is None:
        import flint

        old = flint.ctx.prec
        try:
            flint.ctx.prec = 80
            e = flint.arb(x).exp()
            lo, hi = e.lower(), e.upper()
            flo, fhi = float(lo), float(hi)
            if flint.arb(flo) > lo:
                flo = math.nextafter(flo, -math.inf)
            if flint.arb(fhi) < hi:
                fhi = math.nextafter(fhi, math.inf)
        finally:
            flint.ctx.prec = old
        got = (flo, fhi)
        if len(_EXP_CACHE) < 2_000_000:
            _EXP_CACHE[x] = got
    return got


def exp_interval(lo, hi) -> Interval:
    """exp over [lo, hi] (monotone), each endpoint enclosed by arb."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    vals = np.concatenate([lo.ravel(), hi.ravel()])
    uniq, inv = np.unique(vals, return_inverse=True)
    enc = np.array([_exp_endpoint(float(x)) for x in uniq]).reshape(-1, 2)
    low = enc[inv[: lo.size], 0].reshape(lo.shape)
    high = enc[inv[lo.size:], 1].reshape(hi.shape)
    return Interval(low, high)


_EXP_BITS = 8  # range reduction x = k/2^8 + t, 0 ≤ t < 2^-8
_EXP_KMAX = 1 << 18  # |k| beyond this (|x| > 1024): the enclosure is [0, ∞) / overflow rules
_EXP_TAB: dict[str, Any] = {"k0": 0, "lo": np.zeros(0), "hi": np.zeros(0)}
#: 1/i! rounded to nearest (relative error ≤ 2⁻⁵³ each; all terms of the series are positive)
_EXP_COEF = tuple(float(Fraction(1, math.factorial(i))) for i in range(7))


def _exp_table(kmin: int, kmax: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Enclosures of e^{k/2^8} for kmin ≤ k ≤ kmax (arb, outward to floats; grown on demand)."""
    t = _EXP_TAB
    k0, n = t["k0"], len(t["lo"])
    if n and k0 <= kmin and kmax < k0 + n:
        return k0, t["lo"], t["hi"]
    a = min(kmin, k0) if n else kmin
    b = max(kmax, k0 + n - 1) if n else kmax
    lo, hi = np.empty(b - a + 1), np.empty(b - a + 1)
    for k in range(a, b + 1):
        if n and k0 <= k < k0 + n:
            lo[k - a], hi[k - a] = t["lo"][k - k0], t["hi"][k - k0]
        else:
            lo[k - a], hi[k - a] = _exp_endpoint(math.ldexp(float(k), -_EXP_BITS))
    t.update(k0=a, lo=lo, hi=hi)
    return a, lo, hi


def _exp_series(t: np.ndarray) -> np.ndarray:
    """Σ_{i≤6} tⁱ/i! by Horner in floats (t ≥ 0: every term positive, so the computed value is
    within a relative 2⁻⁴⁹ of the exact truncated series: 13 roundings and 7 rounded
    coefficients)."""
    c = _EXP_COEF
    p = np.full_like(t, c[6])
    for i in range(5, -1, -1):
        p = p * t + c[i]
    return p


def exp_bounds(x) -> tuple[np.ndarray, np.ndarray]:
    """Certified ``(lo, hi)`` with lo ≤ e^x ≤ hi for every float of the array ``x``, vectorised
    (no arb call per value): x = k/2⁸ + t with k = ⌊2⁸x⌋ (2⁸x is exact, t ∈ [0, 2⁻⁸) is enclosed
    by one outward step), e^{k/2⁸} from an arb table, e^t from its degree-6 Taylor series in
    floats (positive terms: relative rounding error < 2⁻⁴⁹) with the remainder
    t⁷e^t/7! < 2⁻⁶⁸ added; both widened by a relative 2⁻⁴⁶ and the final product rounded
    outward.  Values with |x| > 1024 or not finite get the conservative [0, ∞] unless
    x < −1024 (then [0, 2⁻¹⁰⁷⁴]) ."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x) & (np.abs(x) <= 1024.0)
    xs = np.where(ok, x, 0.0)
    X = np.ldexp(xs, _EXP_BITS)
    k = np.floor(X)
    d = X - k  # may round when X < 0 (cancellation-free otherwise): enclose it
    small = k == 0  # then d = X exactly and t = x exactly
    t_lo = np.where(small, xs, np.ldexp(np.maximum(_down(d), 0.0), -_EXP_BITS))
    t_hi = np.where(small, xs, np.ldexp(np.minimum(_up(d), 1.0), -_EXP_BITS))
    ki = k.astype(np.int64)
    k0, tlo, thi = _exp_table(int(ki.min()) if ki.size else 0, int(ki.max()) if ki.size else 0)
    e_lo, e_hi = tlo[ki - k0], thi[ki - k0]
    p_lo = _exp_series(t_lo) * (1.0 - 2.0 ** -46)
    p_hi = _exp_series(t_hi) * (1.0 + 2.0 ** -46) + 2.0 ** -66
    with np.errstate(over="ignore", invalid="ignore"):
        prod = e_lo * p_lo  # a product that overflows is above the largest float
        lo = np.where(np.isfinite(prod), np.maximum(_down(prod), 0.0), np.finfo(float).max)
        hi = _up(e_hi * p_hi)
    lo = np.where(ok, lo, 0.0)
    hi = np.where(ok, hi, np.where(x < -1024.0, 2.0 ** -1074, np.inf))
    return lo, hi


def exp_interval_fast(lo, hi) -> Interval:
    """exp over [lo, hi] by :func:`exp_bounds` (monotone; vectorised, no per-value arb call)."""
    return Interval(exp_bounds(lo)[0], exp_bounds(hi)[1])


class Dual:
    """Forward-mode derivatives over intervals: ``val`` an Interval, ``grad`` a list of
    Intervals (∂/∂ each argument), so that a function lowered by :func:`lambdify_interval`
    yields enclosures of its value and gradient over a box in one pass (no symbolic diff).
    ``abs`` takes the sign interval of its argument as the derivative (which covers both
    one-sided derivatives at 0), ``sqrt`` an unbounded one at 0."""

    __slots__ = ("val", "grad")
    __array_priority__ = 1001

    def __init__(self, val, grad):
        self.val, self.grad = val, grad

    @staticmethod
    def _of(x, m):
        if isinstance(x, Dual):
            return x
        return Dual(Interval._of(x), [None] * m)

    def _lin(self, o, fa, fb):
        out = []
        for a, b in zip(self.grad, o.grad):
            ta = None if a is None else (a if fa is None else a * fa)
            tb = None if b is None else (b if fb is None else b * fb)
            out.append(ta if tb is None else (tb if ta is None else ta + tb))
        return out

    def __add__(self, o):
        o = Dual._of(o, len(self.grad))
        return Dual(self.val + o.val, self._lin(o, None, None))

    __radd__ = __add__

    def __neg__(self):
        return Dual(-self.val, [None if g is None else -g for g in self.grad])

    def __sub__(self, o):
        return self + (-Dual._of(o, len(self.grad)))

    def __rsub__(self, o):
        return Dual._of(o, len(self.grad)) + (-self)

    def __mul__(self, o):
        o = Dual._of(o, len(self.grad))
        return Dual(self.val * o.val, self._lin(o, o.val, self.val))

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = Dual._of(o, len(self.grad))
        q = self.val / o.val
        inv = 1.0 / o.val
        grad = []
        for a, b in zip(self.grad, o.grad):  # (a − q·b)/o
            if a is None and b is None:
                grad.append(None)
            elif b is None:
                grad.append(a * inv)
            else:
                grad.append(((-(q * b)) if a is None else a - q * b) * inv)
        return Dual(q, grad)

    def __rtruediv__(self, o):
        return Dual._of(o, len(self.grad)) / self

    def __pow__(self, k):
        k = int(k)
        if k < 0:
            return 1.0 / (self ** (-k))
        if k == 0:
            return Dual(Interval(np.ones_like(self.val.lo)), [None] * len(self.grad))
        if k == 1:
            return self
        if k == 2:
            d = 2.0 * self.val
            return Dual(self.val.square(), [None if g is None else g * d for g in self.grad])
        d = k * self.val ** (k - 1)
        return Dual(self.val ** k, [None if g is None else g * d for g in self.grad])

    def __abs__(self):
        sg = _isign(self.val)
        return Dual(abs(self.val), [None if g is None else g * sg for g in self.grad])

    def sqrt(self):
        r = self.val.sqrt()
        half_inv = 0.5 / r  # unbounded when r may vanish
        return Dual(r, [None if g is None else g * half_inv for g in self.grad])


def dual_gradient(value_fn):
    """A gradient function for :func:`centred_upper` from a lowered value function: evaluates
    it once on :class:`Dual` arguments."""
    def grads(*boxes):
        m = len(boxes)
        args = [Dual(b, [None] * k + [Interval(np.ones_like(b.lo))] + [None] * (m - k - 1))
                for k, b in enumerate(boxes)]
        out = value_fn(*args)
        zero = Interval(np.zeros_like(boxes[0].lo))
        return tuple(zero if g is None else g for g in out.grad)
    return grads


def _iabs(x):
    return abs(x) if isinstance(x, Interval) else np.abs(x)


def _isqrt(x):
    return x.sqrt() if isinstance(x, Interval) else np.sqrt(x)


def _isign(x):
    if not isinstance(x, Interval):
        return np.sign(x)
    return Interval(np.where(x.lo > 0, 1.0, np.where(x.hi < 0, -1.0, np.where(x.lo < 0, -1.0, 0.0))),
                    np.where(x.hi < 0, -1.0, np.where(x.lo > 0, 1.0, np.where(x.hi > 0, 1.0, 0.0))))


def lambdify_interval(args, expr):
    """``expr`` (SymPy) as a function of Intervals (or floats) for the symbols ``args``."""
    import sympy as sp

    bad = [c for c in expr.atoms(sp.Rational) if not c.is_Integer and int(c.q) & (int(c.q) - 1)]
    if bad:
        raise ValueError(f"non-dyadic constants {bad[:3]} cannot be held exactly")
    if expr.atoms(sp.exp, sp.log, sp.Float):
        raise ValueError("lambdify_interval lowers algebraic expressions only")
    expr = expr.replace(sp.sign, sp.Function("isgn"))  # the math printer inlines sign
    return sp.lambdify(args, expr, modules=[{"Abs": _iabs, "sqrt": _isqrt, "isgn": _isign},
                                            "math"], cse=True)


def centred_upper(value_fn, gradient_fn, boxes: list, need=None, out: dict | None = None):
    """Upper ends of the mean-value (centred) form f(c) + Σ_k ∂_k f(box)·(x_k − c_k) over the
    boxes (``boxes``: one Interval per argument), intersected with the plain evaluation, and
    per-argument split scores |∂_k f(box)|·width_k.  ``value_fn``/``gradient_fn`` are
    lambdified with :func:`lambdify_interval` (the gradient as a tuple of expressions).  With
    ``need`` (a function of the plain upper ends returning a mask), the centred form is only
    computed for the boxes it selects; ``out`` (a dict) receives the selection ``"sel"`` and
    the gradient intervals ``"grads"`` on those boxes (for monotonicity tests)."""
    naive = value_fn(*boxes)
    hi = np.array(naive.hi, dtype=float)
    widths = np.stack([b.hi - b.lo for b in boxes], axis=1)
    scores = widths.copy()
    sel = np.ones(len(hi), bool) if need is None else need(hi)
    if not np.any(sel):
        return hi, scores
    sub = [Interval(b.lo[sel], b.hi[sel]) for b in boxes]
    centres = [Interval(0.5 * (b.lo + b.hi)) for b in sub]
    at_c = value_fn(*centres)
    grads = gradient_fn(*sub)
    acc = at_c
    for k, (g, b, c) in enumerate(zip(grads, sub, centres)):
        if not isinstance(g, Interval):
            g = Interval(np.full_like(b.lo, float(g)))
        acc = acc + g * (b - c)
        mag = np.maximum(np.abs(g.lo), np.abs(g.hi))
        scores[sel, k] = np.where(np.isfinite(mag), mag, 1e300) * (b.hi - b.lo)
    hi_c = np.where(np.isnan(acc.hi), np.inf, acc.hi)
    hi[sel] = np.minimum(hi[sel], hi_c)
    if out is not None:
        out["sel"], out["grads"] = sel, [g if isinstance(g, Interval) else
                                         Interval(np.full(int(sel.sum()), float(g)))
                                         for g in grads]
    return hi, scores


@dataclass
class BnBResult:
    """``upper``: certified sup bound over the domain (max over the remaining boxes);
    ``lower``: the best value found at a feasible point (float, not certified); ``boxes``:
    boxes evaluated; ``status``: "target" (upper ≤ target·lower, or ≤ stop), "time", "boxes"
    or "refuted" (a point value above stop)."""

    upper: float
    lower: float
    argmax: np.ndarray | None
    boxes: int
    rounds: int
    seconds: float
    status: str


def branch_and_bound(upper_fn: Callable, value_fn: Callable, lo: np.ndarray, hi: np.ndarray, *,
                     infeasible_fn: Callable | None = None, target: float = 1.1,
                     seconds: float = 60.0, max_boxes: int = 2_000_000, chunk: int = 40_000,
                     scale=None, lower: float = 0.0, argmax=None,
                     polish: Callable | None = None, frontier: dict | None = None,
                     probe: int | None = None, stop: float | None = None,
                     record: dict | None = None) -> BnBResult:
    """Certify sup f ≤ upper over the union of the boxes [lo_i, hi_i] (see module docstring).

    ``upper_fn(lo, hi, threshold) -> array`` (or ``(array, scores)``): a certified upper bound
    of f on each box (batched; boxes whose cheap bound is already ≤ ``threshold`` need no
    refinement), with optional per-dimension split scores;
    ``value_fn(points) -> array``: f at points (−inf where infeasible); ``infeasible_fn(lo,
    hi) -> bool array``: boxes certainly outside the domain; ``scale``: per-dimension widths
    used to choose the split side; ``lower``/``argmax``: a known value to start from;
    ``polish(x) -> (value, x)``: a local maximisation from the best centre (a better value
    prunes more; it must be a value of f at a feasible point); ``frontier`` (a dict) receives
    the unresolved boxes and their bounds at the end (``lo``, ``hi``, ``ub``); ``probe``: look
    for better values only at the centres of the ``probe`` boxes of each chunk with the largest
    parent bounds (default: every box); ``stop``: an absolute level instead of the relative
    target — boxes are retired once their bound is ≤ ``stop``, and the search ends (status
    "refuted") as soon as a point value exceeds ``stop`` (no certificate can reach it).

    Boxes whose upper bound is already within ``target`` × the best value are retired (only
    the largest such bound is kept), so memory holds the unresolved frontier only; the frontier
    is processed in chunks of ``chunk`` boxes, largest upper bound first; under a finite
    ``seconds`` a chunk holds no more boxes than the time left allows at the larger of the
    average cost per box so far and the last round's (later boxes are narrower and cost more),
    so a clock cap is overrun by about a box's cost, not a chunk's.

    ``record`` (a dict) receives the certificate.  Boxes carry ids (the initial ones 0, 1, …;
    the halves of the s-th split ``n₀ + 2s`` (lower) and ``n₀ + 2s + 1`` (upper)):
    ``record["roots"]`` = (lo, hi) of the initial boxes; ``record["splits"]``: arrays (parent
    id, coordinate, cut value) per batch, in order; ``record["leaves"]``: every box the search
    leaves behind, as tuples ``(kind, ids, lo, hi, bound)`` of arrays — ``"bounded"`` (retired
    with its upper bound), ``"pruned"`` (its upper bound below a value found), ``"outside"``
    (certainly infeasible; bound NaN) and, at the end, ``"frontier"`` (unprocessed, with its
    parent's bound).  The leaves partition the initial boxes."""
    t0 = time.perf_counter()
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    scale = np.ones(lo.shape[1]) if scale is None else np.asarray(scale, dtype=float)
    best, best_x = float(lower), argmax
    retired = -np.inf  # largest upper bound among boxes retired (resolved to the target)
    ub_all = np.full(len(lo), np.inf)  # parents' bounds (for the processing order)
    evaluated, rounds, status, polished = 0, 0, "target", 0
    last_cost = 0.0  # seconds per box of the last round that evaluated any
    ids = np.arange(len(lo))  # box ids (the certificate's names for them)
    next_id = len(lo)
    if record is not None:
        record.update(roots=(lo.copy(), hi.copy()), splits=[], leaves=[])
    while len(lo):
        rounds += 1
        if stop is not None and best > stop:
            status = "refuted"
            break
        if time.perf_counter() - t0 > seconds:
            status = "time"
            break
        if evaluated > max_boxes:
            status = "boxes"
            break
        n_take = chunk
        if seconds < np.inf and evaluated:  # the last rounds sized to the time left (at the
            # costlier of the average and the last round's cost per box: later boxes are
            # narrower, bounded with more work), so that a clock cap is not overrun by a chunk
            spent = time.perf_counter() - t0
            per_box = max(spent / evaluated, last_cost)
            n_take = int(min(chunk, max(1.0, (seconds - spent) / per_box)))
        t_round, n_round = time.perf_counter(), evaluated
        order = np.argsort(-ub_all, kind="stable")
        take, rest = order[:n_take], order[n_take:]
        clo, chi, cid = lo[take], hi[take], ids[take]
        lo, hi, ub_all, ids = lo[rest], hi[rest], ub_all[rest], ids[rest]
        if infeasible_fn is not None:
            keep = ~infeasible_fn(clo, chi)
            if record is not None and not np.all(keep):
                record["leaves"].append(("outside", cid[~keep], clo[~keep], chi[~keep],
                                         np.full(int((~keep).sum()), np.nan)))
            clo, chi, cid = clo[keep], chi[keep], cid[keep]
        if not len(clo):
            continue
        look = slice(None) if probe is None else slice(0, probe)  # chunk sorted by bound
        vals = value_fn(0.5 * (clo[look] + chi[look]))
        i = int(np.argmax(vals))
        if vals[i] > best:
            best, best_x = float(vals[i]), (0.5 * (clo[look][i] + chi[look][i])).copy()
            if polish is not None and polished < 5:  # a few polishes: the value settles fast
                polished += 1
                pv, px = polish(best_x)
                if pv > best:
                    best, best_x = float(pv), np.asarray(px, dtype=float)
        level = best * target if stop is None else stop
        with np.errstate(all="ignore"):
            got = upper_fn(clo, chi, level)
        ub, score = (got if isinstance(got, tuple) else (got, None))
        ub = np.asarray(ub, dtype=float)
        ub = np.where(np.isnan(ub), np.inf, ub)
        evaluated += len(clo)
        last_cost = (time.perf_counter() - t_round) / max(evaluated - n_round, 1)
        live = ub >= best * (1 - 1e-9)  # below a value found: cannot hold the supremum
        done = live & (ub <= level) & ((best > 0) | (stop is not None))
        if np.any(done):
            retired = max(retired, float(ub[done].max()))
        if record is not None:
            if not np.all(live):
                record["leaves"].append(("pruned", cid[~live], clo[~live], chi[~live], ub[~live]))
            if np.any(done):
                record["leaves"].append(("bounded", cid[done], clo[done], chi[done], ub[done]))
        split = live & ~done
        clo, chi, ub, cid = clo[split], chi[split], ub[split], cid[split]
        if not len(clo):
            continue
        w = (chi - clo) / scale
        if score is not None:  # split where the bound is most sensitive (never a flat side)
            w = np.where(chi > clo, score[split] + 1e-300 * w, -1.0)
        k = np.argmax(w, axis=1)
        rows = np.arange(len(k))
        m = 0.5 * (clo[rows, k] + chi[rows, k])
        a_hi, b_lo = chi.copy(), clo.copy()
        a_hi[rows, k] = m
        b_lo[rows, k] = m
        lo = np.concatenate([lo, clo, b_lo])
        hi = np.concatenate([hi, a_hi, chi])
        ub_all = np.concatenate([ub_all, ub, ub])
        new = next_id + 2 * rows
        ids = np.concatenate([ids, new, new + 1])
        next_id += 2 * len(rows)
        if record is not None:
            record["splits"].append((cid, k, m))
    if frontier is not None:
        frontier.update(lo=lo, hi=hi, ub=ub_all)
    if record is not None and len(lo):
        record["leaves"].append(("frontier", ids, lo, hi, ub_all))
    # frontier boxes left unprocessed carry their parent's bound (a valid upper bound)
    pending = float(ub_all.max()) if len(ub_all) else -np.inf
    upper = max(retired, pending, best)
    return BnBResult(upper, best, best_x, evaluated, rounds, time.perf_counter() - t0, status)


# ----------------------------------------------------------------------------- Taylor forms

_AERR = 2.0 ** -52  # ≥ twice the unit roundoff: bounds one rounding relative to its result
_ATINY = 2.0 ** -1070  # absolute slack covering subnormal rounding (per term)


def _eup(e: np.ndarray) -> np.ndarray:
    """An error radius accumulated as a float sum/product of ≤ 16 nonnegative terms, rounded
    up (its relative rounding error is < 16·2⁻⁵³ = 2⁻⁴⁹)."""
    return e * (1.0 + 2.0 ** -45) + _ATINY


def _rsum(x: np.ndarray) -> np.ndarray:
    """Σ over the first axis of nonnegative floats, rounded up (relative error of a float sum
    of k ≤ 2⁸ nonnegative terms < 2⁻⁴⁵)."""
    return x.sum(axis=0) * (1.0 + 2.0 ** -44) + _ATINY


# ----------------------------------------------------------------------------- quadratic forms


_PACK: dict[int, tuple] = {}


def _pack(D: int) -> tuple:
    """Index arrays of the packed quadratic part: the pairs i ≤ j (I, J), the positions of the
    diagonal, and the weights ½ (diagonal) / 1 of a symmetrised product and 1 / 2 of a
    square."""
    got = _PACK.get(D)
    if got is None:
        I, J = np.triu_indices(D)
        diag = np.flatnonzero(I == J)
        half = np.where(I == J, 0.5, 1.0)[:, None]
        two = np.where(I == J, 1.0, 2.0)[:, None]
        got = _PACK[D] = (I, J, diag, half, two)
    return got


class Quad:
    r"""A batch of second-order Taylor forms x = c + Σ_i a_i ε_i + Σ_{i≤j} q_ij ε_i ε_j + [−e, e]
    (ε ∈ [−1, 1]^D the box coordinates; ``c`` (B,), ``a`` (D, B), ``q`` (D(D+1)/2, B) the
    coefficients of ε_iε_j for i ≤ j (packed as :func:`numpy.triu_indices`), either may be
    ``None`` for 0; ``e`` ≥ 0 (B,)).  Products and smooth functions carry the quadratic part
    exactly; third-order terms, the error terms' propagation and every rounding error go to e.
    Univariate functions use Taylor's theorem to second order with the Lagrange remainder
    ⅙g‴(ξ)δ³ bounded over the form's range."""

    __slots__ = ("c", "a", "q", "e", "_A", "_Q")
    __array_priority__ = 1003

    def __init__(self, c, a, q, e):
        self.c, self.a, self.q, self.e = c, a, q, e
        self._A = self._Q = None

    @staticmethod
    def variable(c: np.ndarray, h: np.ndarray, k: int, D: int) -> "Quad":
        """c + h·ε_k (c, h (B,), h ≥ 0 with [c − h, c + h] covering the coordinate's range)."""
        a = np.zeros((D, len(c)))
        a[k] = h
        return Quad(np.asarray(c, float).copy(), a, None, np.zeros(len(c)))

    @staticmethod
    def of_interval(x: Interval) -> "Quad":
        lo, hi = np.asarray(x.lo, float), np.asarray(x.hi, float)
        c = 0.5 * (lo + hi)
        e = _up(np.maximum(hi - c, c - lo))
        return Quad(c, None, None, np.where(np.isfinite(e), e, np.inf))

    @staticmethod
    def _of(x) -> "Quad":
        if isinstance(x, Quad):
            return x
        if isinstance(x, Interval):
            return Quad.of_interval(x)
        v = float(x)
        if v != x:
            raise ValueError(f"constant {x!r} is not exactly representable")
        return Quad(np.float64(v), None, None, np.float64(0.0))

    # ------------------------------------------------------------ magnitudes
    def A(self):
        """≥ Σ|a_i| (the linear part's reach)."""
        if self._A is None:
            self._A = 0.0 if self.a is None else _rsum(np.abs(self.a))
        return self._A

    def Qm(self):
        """≥ Σ|q_ij| (the quadratic part's reach)."""
        if self._Q is None:
            self._Q = 0.0 if self.q is None else _rsum(np.abs(self.q))
        return self._Q

    def rad(self):
        """≥ |x − c| over the box."""
        return _eup(self.A() + self.Qm() + self.e)

    def range(self) -> Interval:
        """c + Σ_i (a_iε_i + q_iiε_i²) (each term's exact range on [−1, 1]) ± Σ_{i<j}|q_ij| ± e."""
        c = self.c
        if self.q is None:
            r = self.rad()
            lo, hi = _down(c - r), _up(c + r)
        else:
            D = int(round((np.sqrt(8 * self.q.shape[0] + 1) - 1) / 2))
            diag = _pack(D)[2]
            a = self.a if self.a is not None else np.zeros((D,) + np.shape(c))
            d = self.q[diag]
            p, m_ = d + a, d - a  # values at ε_i = ±1
            with np.errstate(all="ignore"):
                vert = np.where(np.abs(a) <= 2.0 * np.abs(d), -a * a / (4.0 * d), 0.0)
            vert = np.where(d != 0, vert, 0.0)
            tmax = np.maximum(np.maximum(p, m_), np.where(d < 0, vert, -np.inf))
            tmin = np.minimum(np.minimum(p, m_), np.where(d > 0, vert, np.inf))
            sabs = np.abs(p) + np.abs(m_) + np.abs(vert)
            off = _rsum(np.abs(self.q)) - np.abs(d).sum(axis=0)  # Σ_{i<j}|q_ij| (+ rounding)
            slack = _rsum(sabs) * 2.0 ** -48 + np.abs(c) * _AERR + _ATINY
            r = _eup(np.maximum(off, 0.0) + _rsum(np.abs(d)) * 2.0 ** -48 + self.e + slack)
            lo = _down(c + tmin.sum(axis=0) - r)
            hi = _up(c + tmax.sum(axis=0) + r)
        return Interval(np.where(np.isnan(lo), -_INF, lo), np.where(np.isnan(hi), _INF, hi))

    def tighten(self, known: Interval) -> "Quad":
        """Per box, the form or — where ``known`` (another enclosure of the same quantity) is
        less than half as wide as the form's reach — the constant form of ``known``."""
        r = self.rad()
        klo, khi = np.asarray(known.lo, float), np.asarray(known.hi, float)
        kc = 0.5 * (klo + khi)
        kr = _up(np.maximum(khi - kc, kc - klo))
        use = ((kr < 0.5 * r) | ~np.isfinite(r)) & np.isfinite(kr)
        if not np.any(use):
            return self
        return Quad(np.where(use, kc, self.c),
                    None if self.a is None else np.where(use, 0.0, self.a),
                    None if self.q is None else np.where(use, 0.0, self.q),
                    np.where(use, kr, self.e))

    # ------------------------------------------------------------ arithmetic
    def __neg__(self):
        out = Quad(-self.c, None if self.a is None else -self.a,
                   None if self.q is None else -self.q, self.e)
        out._A, out._Q = self._A, self._Q
        return out

    def __add__(self, o):
        o = Quad._of(o)
        c = self.c + o.c
        a = self.a if o.a is None else (o.a if self.a is None else self.a + o.a)
        q = self.q if o.q is None else (o.q if self.q is None else self.q + o.q)
        e = self.e + o.e + (np.abs(c) + self.A() + o.A() + self.Qm() + o.Qm()) * _AERR + _ATINY
        return Quad(c, a, q, _eup(e))

    __radd__ = __add__

    def __sub__(self, o):
        return self + (-Quad._of(o))

    def __rsub__(self, o):
        return Quad._of(o) + (-self)

    def _cmul(self, k: "Quad") -> "Quad":
        """self × a constant form k (no a, no q)."""
        kc = k.c
        c = self.c * kc
        a = None if self.a is None else self.a * kc
        q = None if self.q is None else self.q * kc
        akc = np.abs(kc)
        R = self.A() + self.Qm()
        e = (akc * self.e + k.e * (np.abs(self.c) + R + self.e)
             + (np.abs(c) + akc * R) * (2 * _AERR) + _ATINY)
        return Quad(c, a, q, _eup(e))

    def __mul__(self, o):
        o = Quad._of(o)
        x, y = self, o
        if y.a is None and y.q is None:
            return x._cmul(y)
        if x.a is None and x.q is None:
            return y._cmul(x)
        cx, cy = x.c, y.c
        Ax, Ay, Qx, Qy = x.A(), y.A(), x.Qm(), y.Qm()
        c = cx * cy
        a = None
        if x.a is not None and y.a is not None:
            a = y.a * cx
            a += x.a * cy
        elif x.a is not None:
            a = x.a * cy
        elif y.a is not None:
            a = y.a * cx
        q = None
        if x.a is not None and y.a is not None:
            I, J, _, half, _ = _pack(x.a.shape[0])
            q = x.a[I] * y.a[J]
            q += x.a[J] * y.a[I]
            q *= half
        if x.q is not None:
            t = x.q * cy
            q = t if q is None else q + t
        if y.q is not None:
            t = y.q * cx
            q = t if q is None else q + t
        acx, acy = np.abs(cx), np.abs(cy)
        e = (Ax * Qy + Qx * Ay + Qx * Qy + (acx + Ax + Qx) * y.e + (acy + Ay + Qy) * x.e
             + x.e * y.e
             + (np.abs(c) + acx * (Ay + Qy) + acy * (Ax + Qx) + Ax * Ay) * (4 * _AERR) + _ATINY)
        return Quad(c, a, q, _eup(e))

    __rmul__ = __mul__

    def scale(self, p: np.ndarray) -> "Quad":
        """x·p for exact floats p (B,)."""
        return self._cmul(Quad(np.asarray(p, float), None, None, np.zeros(np.shape(p))))

    def _outer_sq(self, w) -> np.ndarray:
        """w·(a·ε)² as packed coefficients."""
        I, J, _, _, two = _pack(self.a.shape[0])
        q = self.a[I] * self.a[J]
        q *= two * w if np.ndim(w) == 0 else two * w[None, :]
        return q

    def square(self) -> "Quad":
        cx = self.c
        A, Q = self.A(), self.Qm()
        c = cx * cx
        a = None if self.a is None else (2.0 * cx) * self.a
        q = None if self.q is None else (2.0 * cx) * self.q
        if self.a is not None:
            o2 = self._outer_sq(1.0)
            q = o2 if q is None else q + o2
        acx = np.abs(cx)
        e = (2.0 * A * Q + Q * Q + 2.0 * (acx + A + Q) * self.e + self.e * self.e
             + (np.abs(c) + 2.0 * acx * (A + Q) + A * A) * (4 * _AERR) + _ATINY)
        return Quad(c, a, q, _eup(e))

    def __pow__(self, k):
        if not (isinstance(k, (int, np.integer)) or float(k).is_integer()):
            raise ValueError("only integer powers")
        k = int(k)
        if k < 0:
            return (self ** (-k)).recip()
        if k == 0:
            return Quad(np.ones_like(self.c), None, None, np.zeros_like(self.c))
        if k == 1:
            return self
        if k % 2 == 0:
            return (self ** (k // 2)).square()
        return self * (self ** (k - 1))

    def _apply(self, g0: Interval, g1: Interval, g2: Interval, g3: np.ndarray) -> "Quad":
        """g(x) = g(c) + g′(c)δ + ½g″(c)δ² + ⅙g‴(ξ)δ³ (δ = x − c), from enclosures g0, g1, g2
        of g(c), g′(c), ½g″(c) and g3 ≥ ⅙|g‴| over the form's range."""
        with np.errstate(all="ignore"):
            A, Q, ex = self.A(), self.Qm(), self.e
            r = _eup(A + Q + ex)
            m0, m1, m2 = (0.5 * (g.lo + g.hi) for g in (g0, g1, g2))
            r0, r1, r2 = (_up(np.maximum(g.hi - mm, mm - g.lo)) for g, mm in
                          ((g0, m0), (g1, m1), (g2, m2)))
            a = None if self.a is None else m1 * self.a
            q = None if self.q is None else m1 * self.q
            if self.a is not None:
                o2 = self._outer_sq(m2)
                q = o2 if q is None else q + o2
            am1, am2 = np.abs(m1), np.abs(m2)
            e = (r0 + am1 * ex + r1 * r + am2 * (2.0 * A * (Q + ex) + (Q + ex) ** 2) + r2 * r * r
                 + g3 * r * r * r
                 + (np.abs(m0) + am1 * (A + Q) + am2 * A * A) * (4 * _AERR) + _ATINY)
            e = _eup(e)
            c = m0
            bad = ~(np.isfinite(e) & np.isfinite(c))
            if np.any(bad):
                e = np.where(bad, np.inf, e)
                c = np.where(bad, 0.0, c)
                a = None if a is None else np.where(bad, 0.0, a)
                q = None if q is None else np.where(bad, 0.0, q)
        return Quad(c, a, q, e)

    def _within(self, known: Interval | None) -> Interval:
        R = self.range()
        if known is None:
            return R
        return Interval(np.maximum(R.lo, known.lo), np.minimum(R.hi, known.hi))

    def exp(self, known: Interval | None = None) -> "Quad":
        R = self._within(known)
        g0 = Interval(*exp_bounds(self.c))
        g3 = _up(exp_bounds(R.hi)[1] * (1.0 / 6.0) * (1.0 + 2.0 ** -50))
        return self._apply(g0, g0, g0 * 0.5, g3)

    def recip(self, known: Interval | None = None) -> "Quad":
        """1/x where x > 0 on the box (unbounded otherwise)."""
        R = self._within(known)
        one = Interval(np.float64(1.0))
        with np.errstate(all="ignore"):
            g0 = one / Interval(self.c)
            g1 = -(g0.square())
            g2 = g0 * g0.square()  # ½ · 2/c³
            l = np.where(R.lo > 0, R.lo, np.nan)
            g3 = (one / (Interval(l).square().square())).hi  # ⅙ · 6/x⁴ ≤ 1/l⁴
        g3 = np.where(np.isnan(g3), np.inf, g3)
        return self._apply(g0, g1, g2, g3)

    def sqrt(self, known: Interval | None = None) -> "Quad":
        """√x where x > 0 on the box (unbounded otherwise)."""
        R = self._within(known)
        with np.errstate(all="ignore"):
            g0 = Interval(self.c).sqrt()
            g1 = Interval(np.float64(0.5)) / g0
            g2 = -(Interval(np.float64(0.125)) / (g0 * Interval(self.c)))  # ½ · (−¼c^{−3/2})
            l = np.where(R.lo > 0, R.lo, np.nan)
            Ls = Interval(l).sqrt()
            g3 = (Interval(np.float64(0.0625)) / (Interval(l).square() * Ls)).hi  # ⅙·⅜x^{−5/2}
        g3 = np.where(np.isnan(g3), np.inf, g3)
        return self._apply(g0, g1, g2, g3)

    def rsqrt(self, known: Interval | None = None) -> "Quad":
        """1/√x where x > 0 on the box (unbounded otherwise)."""
        R = self._within(known)
        one = Interval(np.float64(1.0))
        with np.errstate(all="ignore"):
            g0 = one / Interval(self.c).sqrt()
            c3 = g0 * g0.square()  # c^{−3/2}
            g1 = -(c3 * 0.5)
            g2 = c3 * g0.square() * Interval(np.float64(0.375))  # ½ · ¾c^{−5/2}
            l = np.where(R.lo > 0, R.lo, np.nan)
            Li = one / Interval(l)
            g3 = (Li.square().square() * Interval(l).sqrt() * Interval(np.float64(0.3125))
                  * Li).hi  # ⅙ · (15/8)x^{−7/2} = (5/16)·x^{−4}·√x
        g3 = np.where(np.isnan(g3), np.inf, g3)
        return self._apply(g0, g1, g2, g3)

    def __truediv__(self, o):
        return self * Quad._of(o).recip()

    def __rtruediv__(self, o):
        return Quad._of(o) * self.recip()
