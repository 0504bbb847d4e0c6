r"""Statistical judges: tests of Monte Carlo means and of proportions, with stated levels.

A statistical check may say ``fails`` on a true claim with a probability it states (its
*false-fail probability*).  The tests here keep that statement honest on the skewed,
heavy-tailed samples the claims produce (per-sequence squared errors, per-prompt gradients,
paired log-loss differences), and say *undecided* where no test here can.

**Mean test** (:func:`mean_test`, :func:`mean_bounds`).  The studentized mean
:math:`T=\sqrt n(\bar x-\mu_0)/s` (s with divisor n − 1) is compared with the quantiles of its
own distribution, not the normal ones.  For a sample with skewness γ and excess kurtosis κ,
Hall's Edgeworth expansion of the studentized mean (Hall 1992, *The Bootstrap and Edgeworth
Expansion*, §2.6) gives, with :math:`z` the normal quantile,

.. math::  P(T\le x)=\Phi(x)+n^{-1/2}q_1(x)\phi(x)+n^{-1}q_2(x)\phi(x)+\dots,\qquad
           q_1=\tfrac{\gamma}{6}(2x^2+1),

.. math::  q_2=x\big[\tfrac{\kappa}{12}(x^2-3)-\tfrac{\gamma^2}{18}(x^4+2x^2-3)
           -\tfrac14(x^2+3)\big],

so T is *left*-skewed for a right-skewed sample (a low mean comes with a low s).  Inverting it
(Cornish–Fisher), the p-quantile of T is

.. math::  t_{n-1,p}+\underbrace{-n^{-1/2}q_1(z)}_{r_1}
           +\underbrace{n^{-1}\big[q_1q_1'-\tfrac12zq_1^2-q_2+q_2^{(0)}\big](z)}_{r_2},

where :math:`q_2^{(0)}=-\tfrac14x(x^2+3)` is the normal-sample part that Student's
:math:`t_{n-1}` quantile already carries.  γ and κ are the sample's.

**Validity rule** (stated, and checked by the calibration tests): the expansion is used only
while both corrections are small at the critical values actually used, |r₁| ≤
:data:`FIRST_ORDER_MAX` and |r₂| ≤ :data:`SECOND_ORDER_MAX` (units of T), and n ≥
:data:`MIN_SAMPLES`.  Beyond that the sample is too skewed or heavy-tailed for its size at that
tail — its own moments are not resolved — and the test is undecided.  No test of a mean can
hold its level for *every* distribution of unbounded support (a far tail the sample never
reached can carry any part of the mean), so the level is verified where it matters: on
synthetic families (normal, χ² with 1–8 degrees of freedom, exponential, log-normal, products
of Gaussians, Bernoulli) by ``tests/test_calibration.py``, and on each claim's own samples at
its schema's extremes by ``benchmarks/bench_false_fail.py``.  Simulated at a per-tail level of
2.5e-4, the uncorrected t-test fails a true mean of χ²₁ samples 3.6 × too often at n = 1000 and
a product of two squared Gaussians 16 × too often; the rule keeps every family within its
level (the heavy ones by being undecided below a few thousand samples).

**Symmetric samples** (:func:`symmetric_mean_test`).  When the claim itself makes the
samples' law symmetric about μ₀ (e.g. a gradient component that a reflection of the inputs
maps to its negative), the signs of :math:`x_i-\mu_0` are i.i.d. fair coins given their sizes,
and the self-normalised sum :math:`U=\sum(x_i-\mu_0)/\sqrt{\sum(x_i-\mu_0)^2}` obeys
:math:`P(U\ge u)\le c\,(1-\Phi(u))` for every u, with the optimal constant
:math:`c=1/(4(1-\Phi(\sqrt2)))\approx3.18` (Bentkus & Dzindzalieta 2015, weighted Rademacher
sums).  That test's level holds exactly, for any n and any tails.

**Exchangeable samples** (:func:`exchangeable_mean_test`).  When the claim makes the d values
of each sample exchangeable and they sum to 0 (a traceless diagonal under a permutation
symmetry), the column sum :math:`S=\sum_pc_{p,j}` has, given each row's multiset, the law of a
sum of independent mean-zero draws of one entry per row: Hoeffding's and Bernstein's bounds on
that sum hold exactly, for any n and any tails.

**Proportions** (:func:`binomial_judge`): exact binomial tail probabilities (no approximation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = ["MIN_SAMPLES", "FIRST_ORDER_MAX", "SECOND_ORDER_MAX", "Moments", "moments",
           "t_quantile", "MeanTest", "mean_test", "MeanBounds", "mean_bounds", "BinomialJudgement",
           "binomial_judge", "statistic_margin", "sample_moments",
           "symmetric_mean_test", "RADEMACHER_C",
           "exchangeable_mean_test"]

#: fewer samples than this never decide (their moments say nothing about their tails)
MIN_SAMPLES = 30
#: largest first-order Cornish–Fisher correction |r₁| (units of T) the mean test relies on
FIRST_ORDER_MAX = 0.35
#: largest second-order correction |r₂| (units of T) the mean test relies on
SECOND_ORDER_MAX = 0.1


@dataclass(frozen=True)
class Moments:
    """Sample size, mean, standard deviation (divisor n − 1), standard error of the mean,
    skewness and excess kurtosis (moment estimators, divisor n).  Arrays when computed
    column-wise."""

    n: int
    mean: Any
    sd: Any
    stderr: Any
    skewness: Any
    kurtosis: Any


def moments(x: Any, axis: int | None = None) -> Moments:
    """The :class:`Moments` of a sample (``axis``: along that axis of an array, e.g. one
    column per tested quantity).  A constant sample has skewness and kurtosis 0."""
    a = np.asarray(x, dtype=float)
    if axis is None or a.ndim == 1:
        return _moments_1d(a.ravel())
    n = int(a.shape[axis])
    if n == 0:
        nan = float("nan")
        return Moments(0, nan, nan, nan, nan, nan)
    m = a.mean(axis=axis)
    d = a - np.expand_dims(m, axis)
    m2 = np.mean(d * d, axis=axis)
    m3 = np.mean(d * d * d, axis=axis)
    m4 = np.mean((d * d) ** 2, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(m2 * n / (n - 1)) if n > 1 else np.full_like(m2, np.nan)
        pos = m2 > 0
        g = np.where(pos, m3 / np.where(pos, m2, 1.0) ** 1.5, 0.0)
        k = np.where(pos, m4 / np.where(pos, m2, 1.0) ** 2 - 3.0, 0.0)
        se = sd / math.sqrt(n)
    if np.ndim(m) == 0:
        return Moments(n, float(m), float(sd), float(se), float(g), float(k))
    return Moments(n, m, sd, se, g, k)


def _moments_1d(a: np.ndarray) -> Moments:
    n = int(a.size)
    if n == 0:
        nan = float("nan")
        return Moments(0, nan, nan, nan, nan, nan)
    m = float(a.mean())
    d = a - m
    d2 = d * d
    m2 = float(d2.mean())
    m3 = float(np.dot(d2, d)) / n
    m4 = float(np.dot(d2, d2)) / n
    sd = math.sqrt(m2 * n / (n - 1)) if n > 1 else math.nan
    g = m3 / m2**1.5 if m2 > 0 else 0.0
    k = m4 / m2**2 - 3.0 if m2 > 0 else 0.0
    return Moments(n, m, sd, sd / math.sqrt(n), g, k)


#: the name the core package exports :func:`moments` under
sample_moments = moments

_SPECIAL: Any = None


def _sp() -> Any:
    """scipy.special, imported on first use (the core imports without SciPy's start-up)."""
    global _SPECIAL
    if _SPECIAL is None:
        import scipy.special

        _SPECIAL = scipy.special
    return _SPECIAL


def _z(p: Any) -> Any:
    return _sp().ndtri(p)


def t_quantile(p: Any, n: int, skewness: Any = 0.0, kurtosis: Any = 0.0) -> tuple[Any, Any, Any]:
    r"""The p-quantile of the studentized mean of n samples with the given skewness and excess
    kurtosis (second-order Cornish–Fisher, see the module docstring), and its two corrections
    (r₁, r₂) in units of T.  Vectorised over ``p``, ``skewness`` and ``kurtosis``."""
    if all(isinstance(v, (float, int)) for v in (p, skewness, kurtosis)):
        r1, r2 = _cornish_fisher(float(_z(float(p))), float(skewness), float(kurtosis), n)
        return float(_sp().stdtrit(n - 1, float(p))) + r1 + r2, r1, r2
    pa = np.asarray(p, dtype=float)
    r1a, r2a = _cornish_fisher(_z(pa), np.asarray(skewness, dtype=float),
                               np.asarray(kurtosis, dtype=float), n)
    return _sp().stdtrit(n - 1, pa) + r1a + r2a, r1a, r2a


def _cornish_fisher(z: Any, g: Any, k: Any, n: int) -> tuple[Any, Any]:
    """(r₁, r₂) of the module docstring at the normal quantile z (floats or arrays)."""
    q1 = g * (2 * z * z + 1) / 6
    dq1 = 2 * g * z / 3
    q2x = z * (k * (z * z - 3) / 12 - g * g * (z**4 + 2 * z * z - 3) / 18)
    return -q1 / math.sqrt(n), (q1 * dq1 - 0.5 * z * q1 * q1 - q2x) / n


def statistic_margin(t: float, lo: float, hi: float) -> float:
    """How far a statistic ``t`` is from the rejection region [−∞, lo) ∪ (hi, ∞], in units of
    the acceptance interval's half-width (two-sided) or of the one critical value's distance
    from 0 (one-sided, the other end infinite): 1 at the centre (or at 0), 0 on a critical
    value, negative outside."""
    if math.isfinite(lo) and math.isfinite(hi):
        return min(t - lo, hi - t) / ((hi - lo) / 2)
    if math.isfinite(hi):
        return (hi - t) / abs(hi)
    if math.isfinite(lo):
        return (t - lo) / abs(lo)
    return math.inf


@dataclass(frozen=True)
class MeanTest:
    """The outcome of :func:`mean_test`.  ``passed``: True (the mean agrees with μ₀), False
    (it does not, at the stated level), None (undecided: ``reason`` says why)."""

    passed: bool | None
    statistic: float
    lo: float
    hi: float
    moments: Moments
    corrections: tuple[float, float]
    reason: str
    level: float
    method: str = "cornish-fisher"

    @property
    def margin(self) -> float | None:
        """Distance to the nearer critical value over the acceptance half-width (None when
        undecided)."""
        if self.passed is None or not math.isfinite(self.statistic):
            return None
        return statistic_margin(self.statistic, self.lo, self.hi)

    @property
    def detail(self) -> str:
        if self.passed is None:
            return self.reason
        if self.method == "exchangeable":
            return (f"S/√V = {self.statistic:+.3f} (accept [{self.lo:.3f}, {self.hi:.3f}]: Hoeffding/"
                    "Bernstein bound on the sum of one exchangeable entry per sample)")
        if self.method == "sign-symmetric":
            return (f"U = {self.statistic:+.3f} (accept [{self.lo:.3f}, {self.hi:.3f}]: the Gaussian "
                    f"bound on sign-symmetric sums, c = {RADEMACHER_C:.3f})")
        return (f"t = {self.statistic:+.3f} (accept [{self.lo:.3f}, {self.hi:.3f}]; "
                f"skewness {self.moments.skewness:.3g}, kurtosis {self.moments.kurtosis:.3g}, "
                f"corrections {self.corrections[0]:+.3f}/{self.corrections[1]:+.3f})")


def _check_moments(mo: Moments, a_lo: float, a_hi: float
                   ) -> tuple[float, float, tuple[float, float], str]:
    """(lo, hi, (r1, r2), reason): the critical values of T for tail levels a_lo (below) and
    a_hi (above; 0 = that side never rejects), or a reason why the sample cannot decide."""
    n = mo.n
    if n < MIN_SAMPLES:
        return -math.inf, math.inf, (0.0, 0.0), (
            f"only {n} samples: fewer than {MIN_SAMPLES} never decide")
    if not (math.isfinite(mo.mean) and math.isfinite(mo.stderr)) or mo.stderr <= 0:
        return -math.inf, math.inf, (0.0, 0.0), "the standard error is zero or not finite"
    if not (math.isfinite(mo.skewness) and math.isfinite(mo.kurtosis)):
        return -math.inf, math.inf, (0.0, 0.0), "the skewness or kurtosis is not finite"
    lo, hi, r1m, r2m = -math.inf, math.inf, 0.0, 0.0
    if a_lo > 0:
        q, r1, r2 = t_quantile(a_lo, n, mo.skewness, mo.kurtosis)
        lo, r1m, r2m = float(q), float(r1), float(r2)
    if a_hi > 0:
        q, r1, r2 = t_quantile(1.0 - a_hi, n, mo.skewness, mo.kurtosis)
        hi = float(q)
        if abs(float(r1)) > abs(r1m):
            r1m = float(r1)
        if abs(float(r2)) > abs(r2m):
            r2m = float(r2)
    if abs(r1m) > FIRST_ORDER_MAX or abs(r2m) > SECOND_ORDER_MAX:
        return lo, hi, (r1m, r2m), (
            f"too skewed or heavy-tailed for n = {n} at this level: the Cornish–Fisher "
            f"corrections {r1m:+.3f} (first order, ≤ {FIRST_ORDER_MAX:g} allowed) and {r2m:+.3f} "
            f"(second order, ≤ {SECOND_ORDER_MAX:g}) at the sample's skewness "
            f"{mo.skewness:.3g} and kurtosis {mo.kurtosis:.3g} are beyond what the expansion "
            "can be trusted for (more samples decide)")
    if (a_lo > 0 and a_hi > 0 and not lo < hi) or not (math.isfinite(lo) or math.isfinite(hi)):
        return lo, hi, (r1m, r2m), "the critical values are not ordered"
    return lo, hi, (r1m, r2m), ""


def mean_test(samples: Any = None, mu0: float = 0.0, *, alpha: float, lower_share: float = 0.5,
              moments_: Moments | None = None) -> MeanTest:
    r"""Test whether the i.i.d. ``samples`` have mean ``mu0`` at false-fail probability
    ``alpha``: ``lower_share``·α of it in the lower tail of T, the rest in the upper (0 or 1:
    one-sided).  Give ``moments_`` instead of samples when only the moments are at hand."""
    mo = moments(samples) if moments_ is None else moments_
    a_lo, a_hi = alpha * lower_share, alpha * (1.0 - lower_share)
    lo, hi, corr, reason = _check_moments(mo, a_lo, a_hi)
    t = (mo.mean - float(mu0)) / mo.stderr if mo.stderr and mo.stderr > 0 else math.nan
    if reason or not math.isfinite(t):
        return MeanTest(None, float(t), lo, hi, mo, corr, reason or "non-finite statistic", alpha)
    return MeanTest(bool(lo <= t <= hi), float(t), lo, hi, mo, corr, "", alpha)


@dataclass(frozen=True)
class MeanBounds:
    """Confidence bounds on a mean: P(μ < lower) ≤ a_lower and P(μ > upper) ≤ a_upper
    (±inf for a side not asked for); ``reason`` non-empty when the sample cannot give them."""

    lower: float
    upper: float
    moments: Moments
    corrections: tuple[float, float]
    reason: str

    @property
    def ok(self) -> bool:
        return not self.reason


def mean_bounds(samples: Any = None, *, a_lower: float = 0.0, a_upper: float = 0.0,
                moments_: Moments | None = None) -> MeanBounds:
    r"""One- or two-sided confidence bounds on the mean of i.i.d. ``samples``:
    lower = x̄ − q_{1−a_lower}·se and upper = x̄ − q_{a_upper}·se with q the studentized mean's
    quantiles (:func:`t_quantile`), under the same validity rule as :func:`mean_test`."""
    mo = moments(samples) if moments_ is None else moments_
    # P(μ < x̄ − q_{1−a}·se) = P(T > q_{1−a}) = a: the lower bound uses T's upper tail
    lo_q, hi_q, corr, reason = _check_moments(mo, a_upper, a_lower)
    if reason:
        return MeanBounds(-math.inf, math.inf, mo, corr, reason)
    lower = mo.mean - hi_q * mo.stderr if a_lower > 0 else -math.inf
    upper = mo.mean - lo_q * mo.stderr if a_upper > 0 else math.inf
    return MeanBounds(float(lower), float(upper), mo, corr, "")


@dataclass(frozen=True)
class BinomialJudgement:
    """An exact binomial judgement of "the success probability is ≥ p0" from X successes in n
    trials: ``passed`` False when P(Bin(n, p0) ≤ X) ≤ α (too few successes for p ≥ p0: at most
    α of true claims fail), True when P(Bin(n, p0) ≥ X) ≤ α (so many that p > p0 is
    established), None in between."""

    passed: bool | None
    x: int
    n: int
    p0: float
    alpha: float
    p_low: float
    p_high: float
    fail_at: int

    @property
    def margin(self) -> float | None:
        """(X − X_fail)/(n·p0 − X_fail): 0 at the largest failing count X_fail, 1 at the
        expected count of a true p0, negative when failing."""
        span = self.n * self.p0 - self.fail_at
        return (self.x - self.fail_at) / span if span > 0 else None


#: the constant of the Gaussian bound on weighted Rademacher sums, 1/(4(1 − Φ(√2)))
RADEMACHER_C = 1.0 / (4.0 * 0.5 * math.erfc(1.0))


def symmetric_mean_test(samples: Any, mu0: float, *, alpha: float) -> MeanTest:
    """Two-sided test of mean ``mu0`` for samples whose law the claim makes symmetric about
    ``mu0`` (see the module docstring): rejects when |U| exceeds u with
    c·(1 − Φ(u)) = α/2.  ``statistic``, ``lo`` and ``hi`` are on U's scale; undecided when
    even |U| = √n (all deviations of one sign) could not reach u."""
    d = np.asarray(samples, dtype=float).ravel() - float(mu0)
    n = int(d.size)
    mo = moments(d + float(mu0))
    v = float(d @ d)
    u = float(-_sp().ndtri(alpha / (2.0 * RADEMACHER_C)))
    if n == 0 or not np.all(np.isfinite(d)):
        return MeanTest(None, math.nan, -u, u, mo, (0.0, 0.0), "no finite samples", alpha, _SYM)
    if v == 0.0:
        return MeanTest(None, math.nan, -u, u, mo, (0.0, 0.0),
                        "every sample equals the prediction: no spread to test", alpha, _SYM)
    stat = float(d.sum()) / math.sqrt(v)
    if u >= math.sqrt(n):
        return MeanTest(None, stat, -u, u, mo, (0.0, 0.0),
                        f"{n} samples cannot reach the critical value {u:.3g} of the sign test",
                        alpha, _SYM)
    return MeanTest(bool(abs(stat) <= u), stat, -u, u, mo, (0.0, 0.0), "", alpha, _SYM)


_SYM = "sign-symmetric"


def exchangeable_mean_test(rows: Any, column: int, *, alpha: float) -> MeanTest:
    r"""Two-sided test that column ``column`` of ``rows`` (n × d, each row summing to 0, rows
    i.i.d., each row's entries exchangeable under the claim) has mean 0.

    Given each row's entries, a uniformly chosen entry :math:`Y_p` has mean 0, range
    :math:`R_p=\max_jc_{pj}-\min_jc_{pj}`, variance :math:`v_p=rac1d\sum_jc_{pj}^2` and
    :math:`|Y_p|\le b=\max_{p,j}|c_{pj}|`; under the claim the observed column sum S has the
    law of :math:`\sum_pY_p`, so :math:`P(|S|\ge t)\le 2\min\{e^{-2t^2/\sum R_p^2},
    e^{-t^2/(2(\sum v_p+bt/3))}\}` (Hoeffding, Bernstein).  Statistic and critical value are
    reported in units of :math:`\sqrt{\sum v_p}`."""
    c = np.asarray(rows, dtype=float)
    n = int(c.shape[0])
    mo = moments(c[:, column])
    nan = math.nan
    if n == 0 or not np.all(np.isfinite(c)):
        return MeanTest(None, nan, -math.inf, math.inf, mo, (0.0, 0.0), "no finite samples",
                        alpha, _EXCH)
    V = float(np.sum(np.mean(c * c, axis=1)))
    if V == 0.0:
        return MeanTest(None, nan, -math.inf, math.inf, mo, (0.0, 0.0),
                        "every entry is 0: no spread to test", alpha, _EXCH)
    R2 = float(np.sum((c.max(axis=1) - c.min(axis=1)) ** 2))
    b = float(np.max(np.abs(c)))
    L = math.log(2.0 / alpha)
    t_hoeffding = math.sqrt(L * R2 / 2.0)
    # Bernstein: t² = 2L(V + bt/3) → t = (bL/3) + √((bL/3)² + 2LV)
    t_bernstein = b * L / 3.0 + math.sqrt((b * L / 3.0) ** 2 + 2.0 * L * V)
    u = min(t_hoeffding, t_bernstein) / math.sqrt(V)
    stat = float(c[:, column].sum()) / math.sqrt(V)
    # the most extreme sum any data with these rows could give: every row's largest entry
    reach = float(np.sum(np.max(np.abs(c), axis=1))) / math.sqrt(V)
    if u >= reach:
        return MeanTest(None, stat, -u, u, mo, (0.0, 0.0),
                        f"{n} samples cannot reach the critical value {u:.3g} of the exchangeability "
                        "bound", alpha, _EXCH)
    return MeanTest(bool(abs(stat) <= u), stat, -u, u, mo, (0.0, 0.0), "", alpha, _EXCH)


_EXCH = "exchangeable"


def binomial_judge(x: int, n: int, p0: float, alpha: float) -> BinomialJudgement:
    """Exact one-sided binomial judgement (see :class:`BinomialJudgement`)."""
    x, n = int(x), int(n)
    sp = _sp()
    p_low = float(sp.bdtr(x, n, p0)) if x < n else 1.0             # P(Bin ≤ x)
    p_high = float(sp.bdtrc(x - 1, n, p0)) if x > 0 else 1.0       # P(Bin ≥ x)
    fail_at = _binomial_fail_at(n, float(p0), float(alpha))
    passed = False if p_low <= alpha else (True if p_high <= alpha else None)
    return BinomialJudgement(passed, x, n, float(p0), float(alpha), p_low, p_high, fail_at)


@lru_cache(maxsize=256)
def _binomial_fail_at(n: int, p0: float, alpha: float) -> int:
    """The largest count X with P(Bin(n, p0) ≤ X) ≤ α (−1 when there is none)."""
    sp = _sp()
    k = int(sp.bdtrik(alpha, n, p0)) if 0 < alpha < 1 else -1  # the inverse, to ±1
    k = min(max(k, -1), n)
    while k >= 0 and sp.bdtr(k, n, p0) > alpha:
        k -= 1
    while k + 1 < n and sp.bdtr(k + 1, n, p0) <= alpha:
        k += 1
    return k
