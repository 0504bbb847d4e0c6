"""Checks, plots and verdicts.

A claim's ``check`` receives a :class:`CheckContext` and records, through it, every comparison
it makes between a predicted and a measured quantity.  The runner turns the context into a
:class:`Verdict`:

* ``fails``        — at least one check failed (its evidence is attached);
* ``inconclusive`` — no check failed, but a check could not decide, the computation hit
  numerical trouble, or no check ran at all (a ``holds`` must come from a computation that
  could have failed);
* ``holds``        — every check ran and passed.

Each check states its tolerance *and why that tolerance*.  Helpers:

* :meth:`CheckContext.close` — |measured − predicted| ≤ atol + rtol·|predicted| elementwise;
  the error is also reported in units of the tolerance (as ``scipy.integrate`` tests do).
* :meth:`CheckContext.ztest` — a two-sided z-test of a Monte Carlo mean against a prediction
  at significance ``alpha`` (optionally Bonferroni-corrected over ``m`` simultaneous tests).
* :meth:`CheckContext.condition` — a boolean property (e.g. "drop order equals …").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy import stats as _st

from ._errors import BadInput

__all__ = ["Check", "CheckContext", "Verdict", "Plot", "Series", "STATUSES"]

STATUSES = ("holds", "fails", "inconclusive")


@dataclass
class Check:
    """One comparison.  ``passed`` is ``None`` when the comparison could not decide."""

    name: str
    predicted: Any
    measured: Any
    tolerance: Any
    why: str
    passed: bool | None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "predicted": self.predicted,
            "measured": self.measured,
            "tolerance": self.tolerance,
            "why": self.why,
            "passed": self.passed,
            "detail": self.detail,
        }


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


class CheckContext:
    """What a claim's ``check`` works with: predicted values, profile, seed, recorders."""

    def __init__(self, *, predicted: dict[str, Any], profile: str, seed: int, progress=None):
        self.predicted = predicted
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

    # -- random numbers --------------------------------------------------------------------
    def rng(self, *stream: int) -> np.random.Generator:
        """A generator determined by the seed and a stream id (same seed → same numbers)."""
        return np.random.default_rng(np.random.SeedSequence([self.seed, *stream]))

    def by_profile(self, quick, standard, thorough):
        """Pick a size (samples, seeds, horizon) by the profile: quick < standard < thorough."""
        return {"quick": quick, "standard": standard, "thorough": thorough}[self.profile]

    def progress(self, iterable, *, total=None, desc: str = ""):
        if self._progress is None:
            return iterable
        return self._progress(iterable, total=total, desc=desc)

    # -- recorders ---------------------------------------------------------------------------
    def measure(self, key: str, value: Any) -> None:
        self.measured[key] = value

    def note(self, text: str) -> None:
        self.notes.append(text)

    def plot(self, plot: Plot) -> None:
        self.plots.append(plot)

    def inconclusive(self, reason: str) -> None:
        self.inconclusive_reasons.append(reason)

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def verify_derivation(self, derivation) -> Check:
        """Attach ``derivation`` to the report and record a check that every step is verified."""
        self.derivation = derivation
        return self.condition("derivation verified", derivation.ok, predicted="all steps verified",
                              measured=derivation.summary(),
                              why="each symbolic step must be verified (its tier is in the report)")

    def condition(
        self, name: str, passed: bool, *, predicted: Any, measured: Any, why: str, detail: str = ""
    ) -> Check:
        return self.add(Check(name, predicted, measured, "exact", why, bool(passed), detail))

    def close(
        self,
        name: str,
        *,
        predicted: Any,
        measured: Any,
        rtol: float = 0.0,
        atol: float = 0.0,
        why: str,
    ) -> Check:
        """Pass iff |m − p| ≤ atol + rtol·|p| for every element (and shapes match)."""
        if rtol < 0 or atol < 0 or (rtol == 0 and atol == 0):
            raise ValueError("close() needs a positive tolerance")
        p = np.asarray(predicted, dtype=float)
        m = np.asarray(measured, dtype=float)
        tol = {"rtol": rtol, "atol": atol}
        if p.shape != m.shape:
            return self.add(
                Check(
                    name,
                    _plain(predicted),
                    _plain(measured),
                    tol,
                    why,
                    False,
                    f"shape mismatch: predicted {p.shape}, measured {m.shape}",
                )
            )
        if not (np.all(np.isfinite(m)) and np.all(np.isfinite(p))):
            return self.add(
                Check(name, _plain(predicted), _plain(measured), tol, why, None, "non-finite value")
            )
        bound = atol + rtol * np.abs(p)
        err = np.abs(m - p)
        units = float(np.max(err / bound)) if err.size else 0.0
        passed = bool(np.all(err <= bound))
        detail = f"max error {float(np.max(err)) if err.size else 0.0:.3g} = {units:.3g} × tolerance"
        return self.add(Check(name, _plain(predicted), _plain(measured), tol, why, passed, detail))

    def ztest(
        self,
        name: str,
        *,
        predicted: float,
        mean: float,
        stderr: float,
        n: int,
        alpha: float = 1e-3,
        m_tests: int = 1,
        why: str = "",
    ) -> Check:
        """Two-sided z-test of ``mean`` (standard error ``stderr`` from ``n`` samples)."""
        a = alpha / m_tests
        zcrit = float(_st.norm.isf(a / 2))
        tol = {"z_critical": zcrit, "alpha": alpha, "bonferroni_m": m_tests, "n": n,
               "stderr": float(stderr)}
        reason = why or (
            f"Monte Carlo with n={n}: two-sided z-test at significance {alpha:g}"
            + (f" (Bonferroni over {m_tests} tests)" if m_tests > 1 else "")
        )
        if not (math.isfinite(mean) and math.isfinite(stderr)) or stderr <= 0:
            return self.add(Check(name, float(predicted), float(mean), tol, reason, None,
                                  "standard error is zero or non-finite"))
        z = (mean - predicted) / stderr
        passed = abs(z) <= zcrit
        return self.add(
            Check(name, float(predicted), float(mean), tol, reason, bool(passed),
                  f"z = {z:+.3f} (critical ±{zcrit:.3f})")
        )


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


@dataclass
class Verdict:
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

    @staticmethod
    def decide(checks: Sequence[Check], inconclusive_reasons: Sequence[str]) -> tuple[str, list[str]]:
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

    def as_dict(self) -> dict[str, Any]:
        return {
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
        }


def parse_prediction(key: str, text: str) -> Any:
    """Parse a ``--predict KEY=VALUE`` value: a number or a comma-separated list of numbers."""
    parts = [p.strip() for p in str(text).strip().strip("[]").split(",") if p.strip()]
    if not parts:
        raise BadInput(f"--predict {key}: empty value")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise BadInput(f"--predict {key}: expected a number or a comma list, got {text!r}") from None
    if not all(math.isfinite(v) for v in vals):
        raise BadInput(f"--predict {key}: values must be finite, got {text!r}")
    return vals[0] if len(vals) == 1 and "," not in str(text) else vals
