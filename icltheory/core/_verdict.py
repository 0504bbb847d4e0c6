"""Checks, plots and verdicts.

A claim's ``judge`` receives a :class:`CheckContext` and records, through it, every comparison
it makes between a predicted and a measured quantity.  The runner turns the context into a
:class:`Verdict`:

* ``fails``        — at least one check failed (its evidence is attached);
* ``inconclusive`` — no check failed, but a check could not decide, the computation hit
  numerical trouble, a predicted constant was left unjudged, or no check ran at all (a
  ``holds`` must come from a computation that could have failed);
* ``holds``        — every check ran and passed.

Each check states its tolerance, *why that tolerance*, which predicted constants it judges
(``key=``/``judges=``) and its **false-fail probability** (the chance that it fails although
the claim is true: 0 for a deterministic bound, α for a test at significance α).  The claim's
total is the union bound over its checks.  Recorders:

* :meth:`CheckContext.close` — |measured − predicted| ≤ atol + rtol·|predicted| elementwise;
  the error is also reported in units of the tolerance (as ``scipy.integrate`` tests do).
* :meth:`CheckContext.ztest` — a two-sided test of a Monte Carlo mean against a prediction
  at significance ``alpha`` (optionally Bonferroni-corrected over ``m_tests`` tests): the
  studentized mean against its own quantiles, corrected for the sample's skewness and kurtosis,
  undecided when the sample is too skewed or heavy-tailed for its size (:mod:`._stats`).
* :meth:`CheckContext.mean_bound` — the one-sided version: a mean at least (or at most) a
  predicted value.
* :meth:`CheckContext.exact` — measured == predicted exactly (counts, rationals, strings).
* :meth:`CheckContext.condition` — a boolean property (e.g. "drop order equals …").
* :meth:`CheckContext.bound` — a claimed upper bound judged by certificates: below a certified
  witness → fails; at or above a proved bound → holds; in between → undecided.

Each check also carries a **margin**: how far it is from failing, in units of its own
tolerance — ``close``: 1 − max |m − p|/(atol + rtol·|p|) over the elements (1: exact, 0: on the
tolerance, negative: failed); ``ztest``/``mean_bound``: the distance of the statistic to the
nearer critical value over the acceptance interval's half-width (one-sided: over the critical
value's distance from 0); ``bound``: K/witness − 1 (how much smaller the claimed constant could
be before the certified witness refutes it; negative: refuted); a binomial judgement: the count's
distance to the largest failing count over the expected count's.  Undecided checks and exact
booleans have none (``None``).  A verdict's margin is the smallest of its checks'.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from ._errors import BadInput
from ._numbers import NumberError, Typed, parse_number
from ._stats import (FIRST_ORDER_MAX, RADEMACHER_C, SECOND_ORDER_MAX, Moments,
                     exchangeable_mean_test, mean_test, moments, symmetric_mean_test)

__all__ = ["Check", "CheckContext", "Verdict", "Plot", "Series", "STATUSES", "z_critical",
           "MEAN_TEST_WHY", "SYMMETRIC_TEST_WHY", "EXCHANGEABLE_TEST_WHY"]

#: what every mean test appends to its check's reason
MEAN_TEST_WHY = ("test: the studentized mean against its quantiles with Hall's second-order "
                 "Cornish–Fisher correction for the sample's skewness and kurtosis; undecided "
                 f"when those corrections exceed {FIRST_ORDER_MAX:g}/{SECOND_ORDER_MAX:g} "
                 "(a sample too skewed or heavy-tailed for its size)")
#: what a mean test of a sample the claim makes symmetric appends to its reason
SYMMETRIC_TEST_WHY = ("test: the self-normalised sum of a sample whose law the claim makes symmetric "
                      "about the prediction, against the Gaussian bound on sign-symmetric sums "
                      f"(c = {RADEMACHER_C:.3f}): the level holds exactly, for any n and any tails")
#: what a mean test of one exchangeable entry per sample appends to its reason
EXCHANGEABLE_TEST_WHY = ("test: the column sum of samples whose entries the claim makes exchangeable "
                         "(summing to 0), against Hoeffding's and Bernstein's bounds on a sum of one "
                         "uniformly chosen entry per sample: the level holds exactly, for any n and "
                         "any tails")

STATUSES = ("holds", "fails", "inconclusive")
_UNSET = object()


def z_critical(alpha: float) -> float:
    """The two-sided critical value z with P(|Z| > z) = alpha (standard normal)."""
    return NormalDist().inv_cdf(1.0 - alpha / 2.0)


@dataclass
class Check:
    """One comparison.  ``passed`` is ``None`` when the comparison could not decide.

    ``judges``: the predicted constants this check judges; ``false_fail``: the probability
    that it fails although the claim is true; ``margin``: how far it is from failing in units
    of its tolerance (None: undecided, or an exact boolean with no scale)."""

    name: str
    predicted: Any
    measured: Any
    tolerance: Any
    why: str
    passed: bool | None
    detail: str = ""
    judges: tuple[str, ...] = ()
    false_fail: float = 0.0
    margin: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The check as JSON-ready data."""
        return {
            "name": self.name,
            "predicted": self.predicted,
            "measured": self.measured,
            "tolerance": self.tolerance,
            "why": self.why,
            "passed": self.passed,
            "detail": self.detail,
            "judges": list(self.judges),
            "false_fail": self.false_fail,
            "margin": self.margin,
        }


def _margin(v: float | None) -> float | None:
    return None if v is None or math.isnan(v) else float(v)


@dataclass
class Series:
    """One curve of a plot.  ``style``: 'line', 'dashed', 'dotted' or 'points'."""

    x: Sequence[float]
    y: Sequence[float]
    label: str | None = None
    style: str = "line"
    color: str | None = None
    alpha: float = 1.0


@dataclass
class Plot:
    """A declarative figure: the claim says what to draw, the report layer draws it."""

    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)
    hlines: list[tuple[float, str]] = field(default_factory=list)
    vlines: list[tuple[float, str]] = field(default_factory=list)
    annotations: list[tuple[float, float, str]] = field(default_factory=list)
    logx: bool = False
    logy: bool = False
    caption: str = ""

    def to_figure(self) -> Any:
        """This plot as a matplotlib ``Figure`` (for notebooks)."""
        from ..report._figures import to_figure

        return to_figure(self)


class CheckContext:
    """What a claim's ``judge`` works with: predicted values, setting, recorders.

    ``predicted`` holds the constants to judge (the theory's, or the user's ``--predict``
    values).  Every recorder takes ``key=`` (the predicted constant it compares with; the
    predicted value is then read from ``predicted``) or ``judges=`` (the constants a composite
    prediction was computed from)."""

    def __init__(self, *, predicted: dict[str, Any], profile: str, seed: int,
                 progress: Callable[[float, str], None] | None = None,
                 typed: Mapping[str, Any] | None = None):
        self.predicted = predicted
        #: key → (half a unit in the last digit typed, digits typed) for predictions the
        #: user typed as rounded decimals (:func:`typed_precision`)
        self.typed = dict(typed or {})
        self.profile = profile
        self.seed = seed
        self.checks: list[Check] = []
        self.measured: dict[str, Any] = {}
        self.evidence: dict[str, Any] = {}
        self.plots: list[Plot] = []
        self.notes: list[str] = []
        self.inconclusive_reasons: list[str] = []
        self.derivation = None
        self._progress = progress

    # -- random numbers (legacy claims; new claims draw in their experiments) ---------------
    def rng(self, *stream: int) -> np.random.Generator:
        """A generator determined by the seed and a stream id (same seed → same numbers;
        distinct ids, of any length, give independent streams, none of them a measurement's)."""
        from ._claim import stream_rng

        return stream_rng(self.seed, *stream, space=2)

    def by_profile(self, quick: Any, standard: Any, thorough: Any) -> Any:
        """Legacy: pick a size by the profile.  New settings declare ``by_profile=`` fields,
        so that the recorded setting says what ran."""
        return {"quick": quick, "standard": standard, "thorough": thorough}[self.profile]

    def progress(self, fraction: float, what: str = "") -> None:
        """Report progress of a long judgement (``fraction`` ∈ [0, 1])."""
        if self._progress is not None:
            self._progress(float(fraction), what)

    # -- recorders ---------------------------------------------------------------------------
    def measure(self, key: str, value: Any) -> None:
        """Record a measured value for the report."""
        self.measured[key] = value

    def note(self, text: str) -> None:
        """Record a remark for the report (no effect on the verdict)."""
        self.notes.append(text)

    def plot(self, plot: Plot) -> None:
        """Attach a figure (drawn by the report layer)."""
        self.plots.append(plot)

    def inconclusive(self, reason: str) -> None:
        """Record why the claim cannot be decided (the verdict becomes ``inconclusive``)."""
        self.inconclusive_reasons.append(reason)

    def add(self, check: Check) -> Check:
        """Record a ready-made :class:`Check` (the recorders below build them)."""
        self.checks.append(check)
        return check

    @property
    def judged(self) -> set[str]:
        """The predicted constants judged by the checks recorded so far."""
        return {k for c in self.checks for k in c.judges}

    def _resolve(self, predicted: Any, key: str | None, judges: Iterable[str],
                 both: bool = False) -> tuple[Any, tuple[str, ...]]:
        if key is not None and not isinstance(key, str):
            raise TypeError(f"key= names a predicted constant (a string), got {key!r}")
        if isinstance(judges, str):
            raise TypeError(f"judges= is a tuple of predicted constants, got the string "
                            f"{judges!r} (write judges=({judges!r},))")
        keys = tuple([key] if key is not None else []) + tuple(judges)
        for k in keys:
            if k not in self.predicted:
                raise KeyError(f"the check judges {k!r}, which is not a predicted constant of "
                               f"this claim (its predictions: {', '.join(sorted(self.predicted))})")
        if predicted is not _UNSET and key is not None and not both:
            raise TypeError("give predicted= (a value computed from the predictions, with "
                            "judges=) or key= (the predicted constant itself), not both")
        if predicted is _UNSET:
            if key is None:
                raise TypeError("give predicted= or key=")
            predicted = self.predicted[key]
        return predicted, keys

    def verify_derivation(self, derivation: Any) -> Check:
        """Attach ``derivation`` to the report and record a check that every step is verified."""
        self.derivation = derivation
        return self.condition("derivation verified", derivation.ok, predicted="all steps verified",
                              measured=derivation.summary(),
                              why="each symbolic step must be verified (its tier is in the report)")

    def condition(
        self, name: str, passed: bool | None, *, predicted: Any = _UNSET, measured: Any, why: str,
        detail: str = "", key: str | None = None, judges: Iterable[str] = (),
        false_fail: float = 0.0, margin: float | None = None, tolerance: Any = "exact",
    ) -> Check:
        """A boolean property the claim decided itself (``passed``; ``None`` records an
        undecided check).  ``key=`` names the predicted constant it judges, ``predicted=`` what
        to show as the prediction (both may be given: the check is the claim's own).
        ``margin``: how far from failing, when the property comes from a statistic with a scale
        (a test's distance to its critical value); an exact boolean has none."""
        predicted, keys = self._resolve(predicted, key, judges, both=True)
        return self.add(Check(name, _plain(predicted), _plain(measured), _plain(tolerance), why,
                              None if passed is None else bool(passed), detail, keys,
                              float(false_fail), None if passed is None else _margin(margin)))

    def close(
        self,
        name: str,
        *,
        measured: Any,
        predicted: Any = _UNSET,
        key: str | None = None,
        judges: Iterable[str] = (),
        rtol: float = 0.0,
        atol: float = 0.0,
        why: str,
        false_fail: float = 0.0,
    ) -> Check:
        """Pass iff |m − p| ≤ atol + rtol·|p| for every element (and shapes match)."""
        predicted, keys = self._resolve(predicted, key, judges)
        if rtol < 0 or atol < 0 or (rtol == 0 and atol == 0) or not (
                math.isfinite(rtol) and math.isfinite(atol)):
            raise ValueError("close() needs a positive finite tolerance (rtol= or atol=); for "
                             "an exact identity (integers, rationals, strings) use exact()")
        try:
            p = np.asarray(predicted, dtype=float)
            m = np.asarray(measured, dtype=float)
        except (TypeError, ValueError):
            return self.add(Check(name, _plain(predicted), _plain(measured),
                                  {"rtol": rtol, "atol": atol}, why, None,
                                  "predicted and measured are not comparable numbers", keys,
                                  float(false_fail)))
        tol = {"rtol": rtol, "atol": atol}
        if p.shape != m.shape:  # undecided: a claim meaning "wrong count" uses condition()
            return self.add(
                Check(name, _plain(predicted), _plain(measured), tol, why, None,
                      f"shape mismatch: predicted {p.shape}, measured {m.shape}", keys,
                      float(false_fail))
            )
        if not (np.all(np.isfinite(m)) and np.all(np.isfinite(p))):
            return self.add(
                Check(name, _plain(predicted), _plain(measured), tol, why, None,
                      "non-finite value", keys, float(false_fail))
            )
        bound = atol + rtol * np.abs(p)
        typed = self._typed_for(key, keys, p)
        typed_note = ""
        if typed is not None:
            half, digits = typed
            half = np.asarray(half, dtype=float)
            if half.shape in ((), p.shape):
                bound = np.maximum(bound, half)
                tol = {**tol, "typed_half_unit": _plain(half)}
                why = (f"{why}; your value is judged to the {digits} significant digits given "
                       "(at least half a unit in the last digit typed)")
                typed_note = _typed_note(digits, half)
        err = np.abs(m - p)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            units = float(np.max(err / bound)) if err.size else 0.0
        passed = bool(np.all(err <= bound))
        detail = _close_detail(err, bound, units) + typed_note
        return self.add(Check(name, _plain(predicted), _plain(measured), tol, why, passed, detail,
                              keys, float(false_fail), _margin(1.0 - units)))

    def _typed_for(self, key: str | None, keys: Any, p: Any) -> tuple[Any, int] | None:
        """(half unit, digits) when the compared prediction is a value the user typed as a
        rounded decimal: the check's ``key``, or its single judged constant when the compared
        prediction is that constant repeated (one entry per seed or run)."""
        if key is not None:
            return self.typed.get(key)
        typed = [k for k in keys if k in self.typed]
        if len(typed) != 1 or len(list(keys)) != 1:
            return None
        k = typed[0]
        half = np.asarray(self.typed[k][0], dtype=float)
        if half.shape != ():
            return None
        try:
            value = float(self.predicted[k])
        except (KeyError, TypeError, ValueError):
            return None
        arr = np.asarray(p, dtype=float)
        return self.typed[k] if arr.size and np.all(arr == value) else None

    def exact(self, name: str, *, measured: Any, predicted: Any = _UNSET, key: str | None = None,
              judges: Iterable[str] = (), why: str) -> Check:
        """Pass iff ``measured`` equals the prediction exactly (numbers, strings, and lists of
        them, element by element): for identities that hold exactly in the arithmetic used
        (integer counts, exact rationals, SymPy results turned into strings)."""
        predicted, keys = self._resolve(predicted, key, judges)
        p, m = _plain(predicted), _plain(measured)
        same = _exactly_equal(p, m)
        detail = "equal" if same else f"differ: predicted {p!r}, measured {m!r}"[:300]
        return self.add(Check(name, p, m, "exact", why, same, detail, keys, 0.0))  # no margin

    def ztest(
        self,
        name: str,
        *,
        mean: float | None = None,
        stderr: float | None = None,
        n: int | None = None,
        samples: Any = None,
        predicted: Any = _UNSET,
        key: str | None = None,
        judges: Iterable[str] = (),
        alpha: float = 1e-3,
        m_tests: int = 1,
        skew: float | None = None,
        kurtosis: float | None = None,
        symmetric: bool = False,
        exchangeable: tuple[Any, int] | None = None,
        why: str = "",
    ) -> Check:
        """Two-sided test of a Monte Carlo mean against its prediction at false-fail
        probability ``alpha / m_tests`` (Bonferroni: the ``m_tests`` tests of one family
        together have at most ``alpha``).

        Give the i.i.d. ``samples`` (preferred) or ``mean``, ``stderr``, ``n`` with the samples'
        ``skew`` and excess ``kurtosis``.  The studentized mean is compared with its own
        quantiles (second-order Cornish–Fisher in the sample's skewness and kurtosis,
        :func:`._stats.mean_test`); a sample too skewed or heavy-tailed for that expansion at
        this level, or under 30 samples, is undecided.  ``symmetric=True`` (with ``samples``):
        the claim makes the samples' law symmetric about the prediction (say why in ``why``);
        the sign-symmetric test (:func:`._stats.symmetric_mean_test`) then holds its level
        exactly.  ``exchangeable=(rows, j)``: the tested samples are column j of ``rows`` (n × d,
        each row summing to 0) whose entries the claim makes exchangeable, predicted mean 0
        (:func:`._stats.exchangeable_mean_test`, exact level)."""
        predicted, keys = self._resolve(predicted, key, judges)
        if exchangeable is not None:
            rows, col = exchangeable
            if float(predicted) != 0.0:
                # a zero-sum exchangeable set has mean 0 by symmetry: another prediction is judged
                # by the plain test of the column
                return self.ztest(name, samples=np.asarray(rows)[:, col], predicted=predicted,
                                  judges=keys, alpha=alpha, m_tests=m_tests, why=why)
            ex = exchangeable_mean_test(rows, col, alpha=alpha / m_tests)
            tol = {"critical": [ex.lo, ex.hi], "alpha": alpha, "bonferroni_m": m_tests,
                   "n": ex.moments.n, "statistic": "S/√V (column sum over √Σ mean row square)"}
            return self.add(Check(name, float(predicted), ex.moments.mean, tol,
                                  (why or f"two-sided at {alpha:g}") + "; " + EXCHANGEABLE_TEST_WHY,
                                  ex.passed, ex.detail, keys, alpha / m_tests, ex.margin))
        if symmetric:
            if samples is None:
                raise TypeError("ztest(symmetric=True) needs samples=")
            sym = symmetric_mean_test(samples, float(predicted), alpha=alpha / m_tests)
            tol = {"critical": [sym.lo, sym.hi], "alpha": alpha, "bonferroni_m": m_tests,
                   "n": sym.moments.n, "statistic": "U = Σ(x − p)/√Σ(x − p)²"}
            return self.add(Check(name, float(predicted), sym.moments.mean, tol,
                                  (why or f"two-sided at {alpha:g}") + "; " + SYMMETRIC_TEST_WHY,
                                  sym.passed, sym.detail, keys, alpha / m_tests, sym.margin))
        mo = self._moments(samples, mean, stderr, n, skew, kurtosis)
        a = alpha / m_tests
        predicted = float(predicted)
        size = mo.n if mo is not None else n
        reason = (why or (f"Monte Carlo with n={size}: two-sided test at significance {alpha:g}"
                          + (f" (Bonferroni over {m_tests} tests)" if m_tests > 1 else "")))
        reason += "; " + MEAN_TEST_WHY
        if mo is None or not math.isfinite(predicted):
            return self.add(Check(name, predicted, None if mo is None else mo.mean,
                                  {"alpha": alpha, "bonferroni_m": m_tests}, reason, None,
                                  "the samples' skewness and kurtosis were not given (pass samples=): "
                                  "the test's validity cannot be judged" if mo is None else
                                  "non-finite prediction", keys, a))
        mu0 = predicted
        typed = self._typed_for(key, keys, predicted)
        if typed is not None and np.asarray(typed[0]).shape == ():
            # the value typed stands for every value that rounds to it: the composite null
            # [p − h, p + h] is tested at its point nearest the sample mean (level ≤ alpha for any
            # true value in it)
            h = float(typed[0])
            mu0 = min(max(mo.mean, predicted - h), predicted + h)
            reason += (f"; your value is judged to the {typed[1]} significant digits given "
                       "(tested at the nearest value that rounds to it)")
        res = mean_test(mu0=mu0, alpha=a, moments_=mo)
        tol = {"critical": [res.lo, res.hi], "alpha": alpha, "bonferroni_m": m_tests, "n": mo.n,
               "stderr": mo.stderr, "skewness": mo.skewness, "kurtosis": mo.kurtosis,
               "corrections": list(res.corrections)}
        detail = res.detail
        if mu0 != predicted:
            tol["typed_half_unit"] = float(typed[0]) if typed is not None else 0.0
        if typed is not None and np.asarray(typed[0]).shape == ():
            detail += _typed_note(typed[1], typed[0])
        return self.add(Check(name, predicted, mo.mean, tol, reason, res.passed, detail, keys,
                              a, res.margin))

    def mean_bound(
        self,
        name: str,
        *,
        samples: Any,
        relation: str,
        predicted: Any = _UNSET,
        key: str | None = None,
        judges: Iterable[str] = (),
        alpha: float,
        why: str,
    ) -> Check:
        """One-sided test that the mean of the i.i.d. ``samples`` is ``relation`` (">=" or
        "<=") the prediction, at false-fail probability ``alpha``: fails when the one-sided
        confidence bound (:func:`._stats.mean_bounds`) lies beyond it; undecided under the
        same rule as :meth:`ztest`."""
        if relation not in (">=", "<="):
            raise ValueError("relation must be '>=' or '<='")
        predicted, keys = self._resolve(predicted, key, judges)
        mo = moments(samples)
        predicted = float(predicted)
        res = mean_test(mu0=predicted, alpha=alpha, moments_=mo,
                        lower_share=1.0 if relation == ">=" else 0.0)
        crit = res.lo if relation == ">=" else res.hi
        bound = mo.mean - crit * mo.stderr if math.isfinite(crit) else None
        tol = {"critical": [res.lo, res.hi], "alpha": alpha, "n": mo.n, "stderr": mo.stderr,
               "skewness": mo.skewness, "kurtosis": mo.kurtosis,
               "corrections": list(res.corrections),
               ("upper_bound" if relation == ">=" else "lower_bound"): bound}
        detail = res.detail if res.passed is None else (
            f"{'upper' if relation == '>=' else 'lower'} confidence bound {bound:.6g} "
            f"{'≥' if relation == '>=' else '≤'} prediction {predicted:.6g}? " + res.detail)
        return self.add(Check(name, predicted, mo.mean, tol,
                              f"{why}; one-sided at {alpha:g}; {MEAN_TEST_WHY}", res.passed,
                              detail, keys, float(alpha), res.margin))

    @staticmethod
    def _moments(samples: Any, mean: Any, stderr: Any, n: Any, skew: Any,
                 kurtosis: Any) -> Moments | None:
        if samples is not None:
            return moments(samples)
        if mean is None or stderr is None or n is None:
            raise TypeError("ztest needs samples= or mean=, stderr= and n=")
        if skew is None or kurtosis is None:
            return None
        n = int(n)
        return Moments(n, float(mean), float(stderr) * math.sqrt(n), float(stderr),
                       float(skew), float(kurtosis))

    def bound(
        self,
        name: str,
        *,
        key: str,
        certified_lower: float,
        proved_upper: float | None,
        why: str,
        witness: Any = None,
    ) -> Check:
        """Judge a claimed **upper bound** K = ``predicted[key]`` on a constant C.

        ``certified_lower`` is a certified lower bound on C (a witness whose value was
        enclosed in arb); ``proved_upper`` a proved upper bound on C (from the claim's own
        derivation).  K < certified_lower → fails (the witness refutes K); K ≥ proved_upper →
        holds (the proof covers K); otherwise undecided (never a guess)."""
        K = float(self.predicted[key])
        tol = {"certified_lower": certified_lower, "proved_upper": proved_upper}
        if not math.isfinite(K):
            return self.add(Check(name, K, certified_lower, tol, why, None, "non-finite bound",
                                  (key,), 0.0))
        if not math.isfinite(certified_lower):
            return self.add(Check(name, K, certified_lower, tol, why, None,
                                  "non-finite witness value", (key,), 0.0))
        if K < certified_lower:
            passed, detail = False, (f"K = {K:.6g} < certified witness value {certified_lower:.6g}"
                                     + (f" ({witness})" if witness else ""))
            if proved_upper is not None and certified_lower > proved_upper:
                detail += (f"; the witness also exceeds the proved bound {proved_upper:.6g}: "
                           "the proof or the witness is wrong")
        elif proved_upper is not None and K >= proved_upper:
            passed, detail = True, f"K = {K:.6g} ≥ proved bound {proved_upper:.6g}"
        else:
            passed, detail = None, (f"K = {K:.6g} lies between the certified witness "
                                    f"{certified_lower:.6g} and the proved bound "
                                    f"{proved_upper if proved_upper is None else f'{proved_upper:.6g}'}")
        margin = (K / certified_lower - 1.0 if passed is not None and certified_lower > 0
                  else None)
        return self.add(Check(name, K, certified_lower, tol, why, passed, detail, (key,), 0.0,
                              margin))


def _exactly_equal(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_exactly_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b) and type(a == b) is bool


def _typed_note(digits: int, half: Any) -> str:
    """The detail's note on a value the user typed: judged to its digits (± half a unit)."""
    h = np.asarray(half, dtype=float)
    pm = f"{float(h):.2g}" if h.shape == () else f"up to {float(np.max(h)):.2g}"
    return f"; your value judged to the {digits} significant digit{'s' if digits != 1 else ''} typed (± {pm})"


def _close_detail(err: np.ndarray, bound: np.ndarray, units: float) -> str:
    if err.size <= 1:
        return f"max error {float(np.max(err)) if err.size else 0.0:.3g} = {units:.3g} × tolerance"
    ratio = err / np.where(bound > 0, bound, np.inf)
    k = int(np.argmax(ratio)) if np.any(bound > 0) else int(np.argmax(err))
    within = int(np.sum(err <= bound))
    # the error and its ratio to the tolerance at one (flat) index: the largest in units of its
    # own tolerance
    at = float(np.broadcast_to(err, ratio.shape).ravel()[k])
    return (f"max error {at:.3g} = {units:.3g} × tolerance at index {k}; "
            f"{within}/{err.size} within tolerance")


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    return v


@dataclass
class Verdict:
    """The outcome of checking one claim in one setting.

    Carries everything a report needs (``claim_info``: title, source, statement, provenance,
    the meaning of each predicted constant), so reporting never looks the claim up again."""

    claim: str
    verdict: str
    setting: dict[str, Any]
    predicted: dict[str, Any]
    measured: dict[str, Any]
    checks: list[Check]
    evidence: dict[str, Any]
    seed: int
    runtime_s: float
    versions: dict[str, str]
    profile: str = "standard"
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    derivation: Any = None
    claim_info: dict[str, Any] = field(default_factory=dict)
    #: "internal error: …" when the check raised an unexpected exception (CLI exit 4)
    internal_error: str | None = None
    #: the predicted constants that were replaced by the user's values (``--predict``)
    planted: dict[str, Any] = field(default_factory=dict)
    #: the setting keys whose value differs from the default setting at the same profile
    #: (``profile`` itself excluded): what a report states beside the verdict
    non_default: dict[str, Any] = field(default_factory=dict)

    @property
    def false_fail(self) -> float:
        """Union bound on the probability that this verdict says ``fails`` on a true claim."""
        return float(sum(c.false_fail for c in self.checks))

    @property
    def margin(self) -> float | None:
        """The smallest margin of the checks (how far the verdict is from a failed check, in
        units of that check's tolerance); None when no check has one."""
        vals = [c.margin for c in self.checks if c.margin is not None]
        return float(min(vals)) if vals else None

    @property
    def judged(self) -> list[str]:
        """The predicted constants judged by at least one check."""
        return sorted({k for c in self.checks for k in c.judges})

    @staticmethod
    def decide(checks: Sequence[Check], inconclusive_reasons: Sequence[str]) -> tuple[str, list[str]]:
        """The verdict and its reasons: ``fails`` if a check failed, else ``inconclusive`` if a
        check was undecided, a reason was given or no check ran, else ``holds``."""
        reasons = list(inconclusive_reasons)
        if any(c.passed is False for c in checks):
            failed = [c.name for c in checks if c.passed is False]
            return "fails", [f"failed: {', '.join(failed)}"] + reasons
        undecided = [c.name for c in checks if c.passed is None]
        if undecided:
            reasons.append(f"undecided: {', '.join(undecided)}")
        if not checks:
            reasons.append("no check ran, so nothing could have failed")
        if reasons:
            return "inconclusive", reasons
        return "holds", []

    def failed_checks(self) -> list[Check]:
        """The checks that failed."""
        return [c for c in self.checks if c.passed is False]

    def as_dict(self) -> dict[str, Any]:
        """The JSON record (what ``check --json`` prints and the report's sidecar holds)."""
        out = {
            "claim": self.claim,
            "verdict": self.verdict,
            "setting": self.setting,
            "predicted": self.predicted,
            "measured": self.measured,
            "checks": [c.as_dict() for c in self.checks],
            "evidence": self.evidence,
            "seed": self.seed,
            "runtime_s": round(self.runtime_s, 4),
            "versions": self.versions,
            "profile": self.profile,
            "reasons": self.reasons,
            "notes": self.notes,
            "false_fail_bound": self.false_fail,
            "margin": self.margin,
            "judged": self.judged,
            "non_default": self.non_default,
        }
        if self.planted:
            out["planted_predictions"] = self.planted
        if self.internal_error:
            out["internal_error"] = self.internal_error
        return out

    # -- notebook views -------------------------------------------------------------------
    def summary(self) -> str:
        """One paragraph: the verdict, the reasons, the failed checks (predicted vs measured)."""
        from ..report._markdown import fmt

        lines = [f"{self.claim}: {self.verdict.upper()}"]
        lines += [f"  reason: {r}" for r in self.reasons]
        for c in self.checks:
            if c.passed is not True:
                mark = "FAIL" if c.passed is False else "undecided"
                lines.append(f"  {mark}: {c.name}: predicted {fmt(c.predicted)}, measured "
                             f"{fmt(c.measured)} ({c.detail}); tolerance because {c.why}")
        if self.margin is not None:
            lines.append(f"  margin: {self.margin:.3g} (smallest over the checks, in units of "
                         "each check's tolerance)")
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        """Jupyter's Markdown view: the badge, the reasons and the checks table."""
        from ..report._markdown import verdict_markdown

        return verdict_markdown(self)

    def _repr_html_(self) -> str:
        """Jupyter's HTML view: the Markdown view rendered with formulas as MathML (the same
        renderer as ``icltheory report --html``)."""
        from ..report._html import fragment
        from ..report._markdown import verdict_markdown

        return f'<div class="icltheory-verdict">\n{fragment(verdict_markdown(self))}</div>\n'


def _prediction_items(key: str, text: str) -> tuple[list[str], bool]:
    raw = str(text).strip()
    if len(raw) > 20000:
        raise BadInput(f"--predict {key}: value too long")
    body = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else raw
    if not body.strip():
        raise BadInput(f"--predict {key}: empty value")
    parts = [p.strip() for p in body.split(",")]
    if any(p == "" for p in parts):
        raise BadInput(f"--predict {key}: malformed list {raw[:60]!r} (an empty item)")
    return parts, "," in body or body is not raw


def parse_typed_prediction(key: str, text: str) -> list[Typed] | Typed:
    """Parse a ``--predict KEY=VALUE`` value: a number, fraction or expression (see
    :mod:`icltheory.core._numbers`), or a comma-separated list of them, each remembering the
    digits typed."""
    parts, is_list = _prediction_items(key, text)
    vals = []
    for p in parts:
        try:
            vals.append(parse_number(p))
        except NumberError as exc:
            raise BadInput(f"--predict {key}: {p[:40]!r} is not a number, fraction or "
                           f"expression ({exc})") from None
    return vals if is_list or len(vals) != 1 else vals[0]


def parse_prediction(key: str, text: str) -> Any:
    """Parse a ``--predict KEY=VALUE`` value into a float or a list of floats."""
    typed = parse_typed_prediction(key, text)
    return [t.value for t in typed] if isinstance(typed, list) else typed.value


def typed_precision(predict: Mapping[str, Any]) -> dict[str, Any]:
    """For each ``--predict`` value given as text: half a unit in its last digit typed (a
    float, or a list for a list; 0 for exact text) and the digits typed — what a check judging
    it must allow at least (a decimal typed to k digits stands for every number rounding to
    it).  Values given as numbers are exact and absent here."""
    out: dict[str, Any] = {}
    for key, text in predict.items():
        if not isinstance(text, str):
            continue
        typed = parse_typed_prediction(key, text)
        items = typed if isinstance(typed, list) else [typed]
        if any(t.half_unit > 0 for t in items):
            half = [t.half_unit for t in items]
            digits = [t.digits for t in items if t.digits is not None]
            out[key] = (half if isinstance(typed, list) else half[0], min(digits))
    return out


def check_prediction_keys(claim_id: str, known: Iterable[str], predict: Mapping[str, Any],
                          informational: Iterable[str] = ()) -> None:
    """What can be told of ``--predict KEY=VALUE`` values without the constants: each key is a
    judged predicted constant of the claim and each text value parses as numbers."""
    known, info = set(known), set(informational)
    for key, text in predict.items():
        if key not in known:
            raise BadInput(
                f"--predict {key}: {claim_id} has no predicted constant {key!r}; "
                f"valid: {', '.join(sorted(k for k in known if k not in info))}"
            )
        if key in info:
            raise BadInput(f"--predict {key}: {claim_id} reports {key!r} for information only "
                           "(no check judges it), so a planted value could not be judged")
        if isinstance(text, str):
            parse_prediction(key, text)


def apply_predictions(claim_id: str, constants: Mapping[str, Any], predict: Mapping[str, Any],
                      informational: Iterable[str] = (), specs: Mapping[str, Any] | None = None) -> dict:
    """Replace predicted constants by the user's values (``--predict KEY=VALUE``).  With the
    claim's :class:`~icltheory.core.Prediction` ``specs``: a count or an order takes whole
    numbers only, and a constant declared ``positive`` positive numbers only (bad input
    otherwise: such a value is not a statement the claim's checks can judge)."""
    out = dict(constants)
    check_prediction_keys(claim_id, constants, predict, informational)
    for key, text in predict.items():
        value = parse_prediction(key, text) if isinstance(text, str) else text
        items = value if isinstance(value, (list, tuple)) else [value]
        if not all(isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x) for x in items):
            raise BadInput(f"--predict {key}: a finite number or a list of them, got "
                           f"{type(value).__name__} {str(value)[:40]!r}")
        old = constants[key]
        if isinstance(old, (list, tuple)) and not isinstance(value, (list, tuple)):
            value = [value]
        if isinstance(old, (list, tuple)) and len(value) != len(old):
            raise BadInput(f"--predict {key}: expected {len(old)} values, got {len(value)}")
        if not isinstance(old, (list, tuple)) and isinstance(value, (list, tuple)):
            raise BadInput(f"--predict {key}: expected one number, got {len(value)}")
        if isinstance(old, str):
            raise BadInput(f"--predict {key}: {key!r} is not a number")
        spec = (specs or {}).get(key)
        if spec is not None and spec.kind in ("count", "order") and not all(float(x).is_integer() for x in items):
            raise BadInput(f"--predict {key}: whole numbers only ({spec.meaning}); got "
                           f"{', '.join(f'{x:g}' for x in items)}")
        if spec is not None and getattr(spec, "positive", False) and not all(x > 0 for x in items):
            raise BadInput(f"--predict {key}: a positive number ({spec.meaning}); got "
                           f"{', '.join(f'{x:g}' for x in items)}")
        out[key] = list(value) if isinstance(value, tuple) else value
    return out
