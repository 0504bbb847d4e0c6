r"""Vectorised interval arithmetic with outward rounding, and a branch-and-bound driver.

:class:`Interval` holds arrays ``lo``, ``hi`` (one interval per box of a batch).  Every
operation rounds outward by one ulp (``numpy.nextafter``) after IEEE round-to-nearest, which
encloses the exact result of ``+ − × ÷`` and ``sqrt`` (all correctly rounded in IEEE 754).
Transcendental functions are not taken from the float library: :func:`exp_interval` encloses
``exp`` at the (exact float) endpoints with python-flint ``arb`` (memoised per endpoint value, so
a bisection grid costs one arb call per distinct endpoint).

:func:`lambdify_interval` lowers a SymPy expression (sums, products, integer powers, ``Abs``,
``sqrt``, dyadic rational constants) to a function of Intervals.

:func:`branch_and_bound` certifies an upper bound on ``sup f`` over a union of boxes: a box is
discarded once its interval upper bound is below a value of ``f`` at a feasible point (times
``1 − 1e-9``, covering the float evaluation of that value), or once it is certainly infeasible;
boxes are bisected along their widest (scaled) side until every remaining box's upper bound is
within ``target`` × the best value found, the time budget ends, or ``max_boxes`` is reached.
The certified upper bound is the largest upper bound among the remaining boxes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["Interval", "Dual", "dual_gradient", "exp_interval", "lambdify_interval",
           "centred_upper", "branch_and_bound", "BnBResult"]

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
    boxes evaluated; ``status``: "target" (upper ≤ target·lower), "time" or "boxes"."""

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
                     probe: int | None = None) -> BnBResult:
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
    parent bounds (default: every box).

    Boxes whose upper bound is already within ``target`` × the best value are retired (only
    the largest such bound is kept), so memory holds the unresolved frontier only; the frontier
    is processed in chunks of ``chunk`` boxes, largest upper bound first."""
    t0 = time.perf_counter()
    lo, hi = np.array(lo, dtype=float), np.array(hi, dtype=float)
    scale = np.ones(lo.shape[1]) if scale is None else np.asarray(scale, dtype=float)
    best, best_x = float(lower), argmax
    retired = -np.inf  # largest upper bound among boxes retired (resolved to the target)
    ub_all = np.full(len(lo), np.inf)  # parents' bounds (for the processing order)
    evaluated, rounds, status, polished = 0, 0, "target", 0
    while len(lo):
        rounds += 1
        if time.perf_counter() - t0 > seconds:
            status = "time"
            break
        if evaluated > max_boxes:
            status = "boxes"
            break
        order = np.argsort(-ub_all, kind="stable")
        take, rest = order[:chunk], order[chunk:]
        clo, chi = lo[take], hi[take]
        lo, hi, ub_all = lo[rest], hi[rest], ub_all[rest]
        if infeasible_fn is not None:
            keep = ~infeasible_fn(clo, chi)
            clo, chi = clo[keep], chi[keep]
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
        with np.errstate(all="ignore"):
            got = upper_fn(clo, chi, best * target)
        ub, score = (got if isinstance(got, tuple) else (got, None))
        ub = np.asarray(ub, dtype=float)
        ub = np.where(np.isnan(ub), np.inf, ub)
        evaluated += len(clo)
        live = ub >= best * (1 - 1e-9)  # below a value found: cannot hold the supremum
        done = live & (ub <= target * best) & (best > 0)
        if np.any(done):
            retired = max(retired, float(ub[done].max()))
        split = live & ~done
        clo, chi, ub = clo[split], chi[split], ub[split]
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
    if frontier is not None:
        frontier.update(lo=lo, hi=hi, ub=ub_all)
    # frontier boxes left unprocessed carry their parent's bound (a valid upper bound)
    pending = float(ub_all.max()) if len(ub_all) else -np.inf
    upper = max(retired, pending, best)
    return BnBResult(upper, best, best_x, evaluated, rounds, time.perf_counter() - t0, status)
