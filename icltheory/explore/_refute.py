"""Search a claim's settings for a counterexample, shrink it, and say how to reproduce it.

:func:`refute` draws settings from the claim's own strategies
(:func:`icltheory.testing.raw_settings`; keys given in ``fixed`` stay fixed), runs each with
:func:`~icltheory.core.run_check`, and steers the search toward failure with Hypothesis
``target()`` on the verdict's closeness to failing (its margin, :mod:`._margin`).  A draw the
claim would refuse (its work estimate over the profile's budget, or undecidable by
construction) is not run.  A ``fails`` that can happen by chance (its checks' false-fail bound
is positive) counts only if it fails again at fresh seeds (:meth:`_Search.confirmed`): a
search meets chance failures, a confirmation makes them as rare as the bound squared and more.
On a ``fails`` Hypothesis shrinks the draw; then each numeric key
that still differs from the claim's default is bisected toward the default, keeping the
setting closest to a passing one that still fails.  The search stops at its time budget
(``budget`` seconds of wall time, shrinking included: the budget is also the runs' time limit,
so a run cut by it is undecided, never a counterexample).

Independent searches (different Hypothesis seeds, each with the whole budget) run in parallel
on the sweep's executors (``local``, ``processes``, ``dask``); the counterexample of the
lowest-numbered search that found one is reported, so the result does not depend on which
finished first.
"""

from __future__ import annotations

import math
import shlex
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..core import BadInput, Claim, SettingError, get_claim, over_budget, run_check
from ..core._deadline import ENV, MARK, clear_time_limit, set_time_limit
from ._margin import check_margin_of, verdict_margin

__all__ = ["Refutation", "refute", "search_once", "reproduce_command"]

#: bisection steps per numeric key when moving a counterexample toward the defaults
BISECT_STEPS = 6
#: fresh seeds at which a statistical ``fails`` must fail again to count
CONFIRM_SEEDS = 2


class _Counterexample(Exception):
    """Raised inside the property to make Hypothesis shrink a failing draw."""


class _OutOfTime(BaseException):
    """Raised inside the property when the budget is spent (ends Hypothesis at once)."""


@dataclass
class Refutation:
    """The outcome of a search.

    ``counterexample``: the keys of the failing setting that differ from the claim's defaults
    (``None`` when nothing failed); ``setting``: that setting in full; ``evidence``: its failed
    checks; ``draws``/``undecided``: settings run and how many of them were inconclusive;
    ``margin``: the smallest margin over the decided draws (how close the claim came to
    failing; negative once it failed); ``command``: the one line that reproduces it;
    ``landscape``: (drawn keys, margin, verdict) per draw, in order."""

    claim: str
    counterexample: dict[str, Any] | None
    setting: dict[str, Any] | None
    evidence: list[dict[str, Any]]
    draws: int
    undecided: int
    margin: float | None
    command: str | None
    profile: str
    budget_s: float
    landscape: list[tuple[dict[str, Any], float | None, str]] = field(default_factory=list)
    shrink_steps: int = 0

    @property
    def found(self) -> bool:
        """Whether a counterexample was found."""
        return self.counterexample is not None

    @property
    def exit_code(self) -> int:
        """1 found; 0 none in the decided draws; 3 every draw undecided (or none ran)."""
        if self.found:
            return 1
        return 0 if self.draws > self.undecided else 3

    def as_dict(self) -> dict[str, Any]:
        """The JSON record (``icltheory refute --json``)."""
        return {"claim": self.claim, "counterexample": self.counterexample,
                "setting": self.setting, "evidence": self.evidence, "draws": self.draws,
                "undecided": self.undecided, "margin": self.margin, "command": self.command,
                "profile": self.profile, "budget_s": self.budget_s,
                "shrink_steps": self.shrink_steps,
                "landscape": [{"keys": k, "margin": m, "verdict": v}
                              for k, m, v in self.landscape]}

    def summary(self) -> str:
        """A few lines for the terminal."""
        head = f"refute {self.claim} ({self.profile} profile, {self.budget_s:g} s budget)"
        tried = f"{self.draws} draw(s), {self.undecided} undecided"
        if not self.found:
            if self.draws == 0:
                return (f"{head}: no draw could be run (each was invalid, undecidable by construction "
                        "or over the profile's budget); no conclusion")
            if self.draws <= self.undecided:
                return f"{head}: every draw was undecided ({tried}); no conclusion"
            m = "–" if self.margin is None else f"{self.margin:.3g}"
            return f"{head}: no counterexample in {tried} (smallest margin {m})"
        assert self.counterexample is not None
        keys = ", ".join(f"{k}={_text(v)}" for k, v in self.counterexample.items()) or \
            "the defaults"
        lines = [f"{head}: counterexample after {tried}; shrunk in {self.shrink_steps} "
                 f"step(s): {keys}"]
        for c in self.evidence[:3]:
            lines.append(f"    failed: {c.get('name')}: predicted {_text(c.get('predicted'))}, "
                         f"measured {_text(c.get('measured'))} [{c.get('detail', '')}]")
        lines.append(f"    reproduce: {self.command}")
        return "\n".join(lines)


def _text(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (list, tuple)):
        s = ",".join(_text(x) for x in v)
        return s if len(s) <= 80 else s[:77] + "..."
    s = str(v)
    return s if len(s) <= 80 else s[:77] + "..."


def reproduce_command(claim_id: str, keys: Mapping[str, Any], profile: str) -> str:
    """``icltheory check CLAIM --profile P --set K=V ...`` for ``keys`` (shell-quoted)."""
    parts = ["icltheory", "check", claim_id, "--profile", profile]
    sets = []
    for k, v in keys.items():
        if k == "profile":
            continue
        value = ",".join(repr(float(x)) if isinstance(x, float) else str(x) for x in v) \
            if isinstance(v, (list, tuple)) else (repr(v) if isinstance(v, float) else str(v))
        sets.append(shlex.quote(f"{k}={value}"))
    if sets:
        parts += ["--set", *sets]
    return " ".join(parts)


def _differing(c: Claim, setting: Any) -> dict[str, Any]:
    """The keys whose value differs from the default setting at the same profile."""
    here = setting.as_dict()
    try:
        base = c.setting({"profile": setting.profile}).as_dict()
    except SettingError:
        base = {}
    return {k: v for k, v in here.items() if k != "profile" and base.get(k) != v}


class _Search:
    """One Hypothesis search (one seed) in one process."""

    def __init__(self, claim: Claim, fixed: Mapping[str, Any], profile: str, seed: int,
                 t_end: float, progress: Callable[[float, str], None] | None):
        self.c, self.fixed, self.profile, self.seed = claim, dict(fixed), profile, seed
        self.t_end, self.progress = t_end, progress
        self.t0 = time.monotonic()
        self.draws = self.undecided = 0
        self.margin: float | None = None
        self.landscape: list[tuple[dict[str, Any], float | None, str]] = []
        self.best: tuple[Any, Any] | None = None  # (setting, verdict) of the latest failure
        self.shrink_steps = 0
        self.seen: dict[str, Any] = {}  # setting → verdict, within this search

    def _tick(self) -> None:
        if self.progress is not None:
            span = max(self.t_end - self.t0, 1e-9)
            self.progress(min(1.0, (time.monotonic() - self.t0) / span),
                          f"{self.draws} draws")

    def run_one(self, raw: Mapping[str, Any]) -> tuple[Any, Any] | None:
        """Check the setting ``raw`` (plus the fixed keys); ``None`` when not run."""
        from hypothesis import reject

        if time.monotonic() > self.t_end:  # also while every draw is refused
            raise _OutOfTime()
        try:
            s = self.c.setting({**raw, **self.fixed, "profile": self.profile})
        except SettingError:
            reject()
        if self.c.undecidable(s) is not None or over_budget(self.c, s) is not None:
            reject()
        key = repr(sorted(s.as_dict().items()))
        if key in self.seen:  # Hypothesis may ask for a setting again: the same verdict
            return s, self.seen[key]
        v = run_check(self.c, s)
        if any(str(r).startswith(MARK) for r in v.reasons):
            raise _OutOfTime()
        self.seen[key] = v
        self.draws += 1
        m = verdict_margin(v)
        if v.verdict == "inconclusive":
            self.undecided += 1
        elif m is not None:
            self.margin = m if self.margin is None else min(self.margin, m)
        self.landscape.append(({k: raw[k] for k in sorted(raw) if k not in self.fixed},
                               m, v.verdict))
        self._tick()
        return s, v

    def property(self, raw: dict[str, Any]) -> None:
        from hypothesis import target

        if time.monotonic() > self.t_end:
            raise _OutOfTime()
        out = self.run_one(raw)
        assert out is not None
        s, v = out
        if v.verdict == "fails" and not self.confirmed(s, v):
            return  # a statistical fluke: a search over many draws will meet some
        if v.verdict == "fails":
            if self.best is not None:
                self.shrink_steps += 1
            self.best = (s, v)
            raise _Counterexample(v.claim)
        m = verdict_margin(v)
        if m is not None and math.isfinite(m):
            target(-m, label="closeness to failing (−margin)")

    def confirmed(self, s: Any, v: Any) -> bool:
        """A ``fails`` whose checks can fail by chance (false-fail bound > 0) counts only if
        it fails again at :data:`CONFIRM_SEEDS` fresh seeds: a search over many draws meets
        chance failures at the rate of the union of its draws' false-fail bounds, a confirmed
        one at that rate to the power 1 + CONFIRM_SEEDS (the seeds' runs are independent)."""
        if v.false_fail <= 0:
            return True
        for k in range(1, CONFIRM_SEEDS + 1):
            fresh = (s.seed + 7919 * k) % (2**31)
            try:
                t = self.c.setting({**s.given(), "seed": fresh, "profile": self.profile})
            except SettingError:
                return False
            w = run_check(self.c, t)
            if any(str(r).startswith(MARK) for r in w.reasons):
                raise _OutOfTime()
            self.draws += 1
            self.landscape.append(({"seed": fresh}, verdict_margin(w), w.verdict))
            if w.verdict != "fails":
                return False
        return True

    def search(self) -> None:
        from hypothesis import HealthCheck, Phase, given
        from hypothesis import seed as hseed
        from hypothesis import settings as hsettings
        from hypothesis.errors import Unsatisfiable

        from ..testing import raw_settings

        strategy = raw_settings(self.c, **self.fixed)
        test = hseed(self.seed)(hsettings(
            max_examples=100_000, deadline=None, database=None, derandomize=False,
            phases=[Phase.generate, Phase.target, Phase.shrink], report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck), print_blob=False)(
            given(strategy)(self.property)))
        try:
            test()
        except (_Counterexample, _OutOfTime):
            pass
        except Unsatisfiable:  # every draw refused (e.g. fixed keys over budget or beyond reach)
            pass

    def _try(self, cand_keys: Mapping[str, Any], note: Mapping[str, Any]):
        """Run the setting ``cand_keys`` (given keys; the others default or derive); its
        verdict, or None when it cannot be run (invalid, undecidable, over budget)."""
        try:
            cand = self.c.setting({**cand_keys, "profile": self.profile})
        except SettingError:
            return None
        if self.c.undecidable(cand) is not None or over_budget(self.c, cand) is not None:
            return None
        w = run_check(self.c, cand)
        if any(str(r).startswith(MARK) for r in w.reasons):
            raise _OutOfTime()
        self.draws += 1
        self.landscape.append((dict(note), verdict_margin(w), w.verdict))
        return cand, w

    def bisect(self) -> None:
        """Shrink the counterexample toward the defaults, one drawn key at a time: first the key
        back at its default (left to default or derive, as if never given), kept if the claim
        still fails there; else the key moved toward its default while it fails (numeric keys).
        Keys the setting derives from others (not drawn) are never moved: they follow."""
        if self.best is None:
            return
        s, v = self.best
        base = self.c.setting({"profile": self.profile, **self.fixed})
        try:
            for key in list(_differing(self.c, s)):
                given = s.given()
                if key in self.fixed or key in ("seed", "profile") or key not in given:
                    continue
                if time.monotonic() > self.t_end:
                    return
                out = self._try({k: x for k, x in given.items() if k != key}, {key: getattr(base, key)})
                if out is not None and out[1].verdict == "fails" and self.confirmed(*out):
                    s, v = out
                    self.shrink_steps += 1
                    continue
                if out is not None and out[1].verdict == "inconclusive":
                    self.undecided += 1
                bad, good = getattr(s, key), getattr(base, key)
                if not _numeric(bad) or not _numeric(good) or bad == good:
                    continue
                for _ in range(BISECT_STEPS):
                    if time.monotonic() > self.t_end:
                        return
                    mid = _middle(good, bad)
                    if mid is None or mid in (good, bad):
                        break
                    out = self._try({**s.given(), key: mid}, {key: mid})
                    if out is None:
                        break
                    cand, w = out
                    if w.verdict == "fails" and self.confirmed(cand, w):
                        s, v, bad = cand, w, mid
                        self.shrink_steps += 1
                    elif w.verdict == "holds":
                        good = mid
                    else:  # undecided, or a chance failure that did not repeat
                        self.undecided += w.verdict == "inconclusive"
                        break
        finally:  # what was shrunk so far stands when the time runs out
            self.best = (s, v)


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _middle(good: Any, bad: Any) -> Any:
    """The point between a passing and a failing value: geometric for positive floats that
    differ by more than 4×, arithmetic otherwise; integers strictly between the two (None when
    they are adjacent)."""
    if isinstance(good, int) and isinstance(bad, int):
        if abs(bad - good) <= 1:
            return None
        return (good + bad) // 2 if bad > good else -((-good - bad) // 2)
    g, b = float(good), float(bad)
    if g > 0 and b > 0 and max(g, b) / min(g, b) > 4:
        return math.sqrt(g * b)
    return 0.5 * (g + b)


def search_once(claim_id: str, fixed: Mapping[str, Any], profile: str, seed: int,
                budget_s: float, progress: Callable[[float, str], None] | None = None
                ) -> dict[str, Any]:
    """One search (in any process): the refutation as plain data (see :class:`Refutation`)."""
    c = get_claim(claim_id)
    t_end = time.monotonic() + budget_s
    inherited = ENV in __import__("os").environ
    if not inherited:
        set_time_limit(budget_s)
    try:
        sr = _Search(c, fixed, profile, seed, t_end, progress)
        sr.search()
        try:
            sr.bisect()
        except _OutOfTime:
            pass
    finally:
        if not inherited:
            clear_time_limit()
    cx = setting = None
    evidence: list[dict[str, Any]] = []
    if sr.best is not None:
        s, v = sr.best
        setting = s.as_dict()
        cx = _differing(c, s)
        evidence = [{**ch.as_dict(), "margin": check_margin_of(ch)}
                    for ch in v.checks if ch.passed is False]
    return {"claim": c.id, "counterexample": cx, "setting": setting, "evidence": evidence,
            "draws": sr.draws, "undecided": sr.undecided, "margin": sr.margin,
            "landscape": sr.landscape, "shrink_steps": sr.shrink_steps}


def refute(claim: str | Claim, fixed: Mapping[str, Any] | None = None, *, budget: float = 60.0,
           profile: str = "quick", seed: int = 0, executor: str = "local",
           workers: int | None = None, scheduler: str | None = None,
           progress: Callable[[float, str], None] | None = None) -> Refutation:
    """Search ``claim``'s settings for a counterexample (see the module docstring).

    ``fixed``: setting keys held fixed (values as on the command line or native);
    ``budget``: wall seconds per search; ``executor``/``workers``: run ``workers`` searches
    in parallel (seeds ``seed``, ``seed + 1``, …)."""
    c = get_claim(claim) if isinstance(claim, str) else claim
    if not isinstance(c, Claim):
        raise TypeError(f"refute: the claim must be a Claim or a claim id, got "
                        f"{type(claim).__name__}")
    if not (isinstance(budget, (int, float)) and math.isfinite(budget) and 0 < budget <= 86400):
        raise BadInput(f"--budget: expected seconds in (0, 86400], got {budget!r}")
    fixed = dict(fixed or {})
    if "profile" in fixed:
        raise BadInput("give the profile with --profile, not --set profile=")
    _check_fixed(c, fixed, profile)  # bad fixed keys are bad input before any run
    parts: Sequence[dict[str, Any]]
    if executor == "local" and not workers:
        parts = [search_once(c.id, fixed, profile, seed, float(budget), progress)]
    else:
        parts = _parallel(c.id, fixed, profile, seed, float(budget), executor, workers,
                          scheduler)
    first = next((p for p in parts if p["counterexample"] is not None), None)
    decided = [p["margin"] for p in parts if p["margin"] is not None]
    cx = first["counterexample"] if first else None
    return Refutation(
        claim=c.id, counterexample=cx, setting=first["setting"] if first else None,
        evidence=first["evidence"] if first else [],
        draws=sum(p["draws"] for p in parts), undecided=sum(p["undecided"] for p in parts),
        margin=min(decided) if decided else None,
        command=reproduce_command(c.id, cx, profile) if cx is not None else None,
        profile=profile, budget_s=float(budget),
        landscape=[row for p in parts for row in p["landscape"]],
        shrink_steps=first["shrink_steps"] if first else 0)


def _check_fixed(c: Claim, fixed: Mapping[str, Any], profile: str) -> None:
    """Raise (bad input) unless the fixed keys can be part of a valid setting: valid with the
    other keys at their defaults, or else each valid on its own (type and range) while a key
    the search draws is left free (a constraint across keys, e.g. an eigenvalue above a
    default trace, may hold at the drawn values)."""
    try:
        c.setting({**fixed, "profile": profile})
        return
    except SettingError:
        specs = c.setting_type.field_specs()
        drawn_free = [k for k, sp in specs.items() if sp.sample is not None and k not in fixed]
        if not drawn_free or any(k not in specs for k in fixed):
            raise
        for k, v in fixed.items():
            specs[k].convert(k, v)


def _parallel(claim_id: str, fixed: Mapping[str, Any], profile: str, seed: int, budget: float,
              executor: str, workers: int | None, scheduler: str | None) -> Sequence[dict]:
    from ..sweep._executors import open_executor

    with open_executor(executor, workers=workers, scheduler=scheduler) as (ex, n):
        futures = [ex.submit(search_once, claim_id, dict(fixed), profile, seed + i, budget)
                   for i in range(max(1, n))]
        return [f.result() for f in futures]
