r"""Claims: a paper's statement made executable.

How to add a claim (the contract; :class:`Claim` enforces it when the class is defined):

1. A frozen :class:`~icltheory.core.Setting` subclass whose defaults reproduce the paper.
   Sizes that scale with the profile are ``by_profile=(quick, standard, thorough)`` fields, and
   every derived default (step size, horizon, sample size) is resolved in the setting, so the
   recorded setting is exactly what ran.  Every size key has an upper bound (``max=``).
2. Subclass :class:`Claim` and set ``id`` (lowercase dotted, ``paper.topic.claim``),
   ``title``, ``source`` (arXiv id and section/equation), ``statement`` (LaTeX),
   ``setting_type``, ``provenance``, and

   * ``predictions`` — ``{key: Prediction(meaning, ...)}``, one entry per predicted constant;
     a constant no check judges is declared ``informational=True`` (``--predict`` refuses it);
   * ``planted_errors`` — at least one theory-side and one measurement-side
     :class:`PlantedError` (a monkeypatch of a function the claim relies on) that must turn the
     verdict to ``fails``.
3. ``constants(setting) -> dict`` — the predicted quantities, lowered from the paper's theory
   (the only source of predicted numbers).
4. ``derive(setting) -> Derivation`` (optional) — the symbolic derivation, every step verified;
   the runner records "derivation verified" as a check.
5. ``measure(setting, run) -> dict`` — train, integrate, sample: the measured numbers.  It
   reads only the setting (never the predictions) and calls only experiment code, so an error
   in the theory cannot leak into the measurement.  Random numbers come from ``run.rng``;
   long loops call ``run.tick()``; a measurement that cannot decide calls
   ``run.inconclusive(reason)``.
6. ``judge(setting, predicted, measured, ctx)`` — compare: record each comparison through
   ``ctx.close / ztest / condition / bound`` with ``key=`` or ``judges=`` naming the predicted
   constants it judges, its tolerance, the reason, and its false-fail probability.
7. ``estimate(setting) -> Cost`` — the work and memory the run will need, computed from the
   setting before anything runs; over the profile's budget the verdict is ``inconclusive``
   without running.
8. List the instance in the package's ``CLAIMS`` tuple and register it under the entry-point
   group ``icltheory.claims`` (built-in papers are registered in ``pyproject.toml``).

Numerical trouble → raise :class:`~icltheory.core.NumericalTrouble` (or call
``run.inconclusive``); the runner turns it into an ``inconclusive`` verdict.
"""

from __future__ import annotations

import abc
import math
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping

import numpy as np

from ._derivation import Derivation
from ._errors import BadInput, BeyondReach, NumericalTrouble
from ._setting import PROFILES, Setting
from ._deadline import MARK, TimeLimitReached, hard_stop, time_limit_reason
from ._verdict import Check, CheckContext, Verdict, apply_predictions, check_prediction_keys, typed_precision

__all__ = ["Claim", "Prediction", "PlantedError", "Cost", "Run", "stream_rng", "Measurement", "run_check",
           "measure_claim", "judge_claim", "PROFILES", "BUDGETS", "WORK_RATE", "OverBudget", "versions",
           "FALSE_FAIL_MAX", "over_budget", "non_default_keys"]

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$")
PROVENANCE = ("confirmed paper text", "inferred", "derived here", "summary's claim",
              "third-party summary of the paper", "reconstruction")
#: the most a claim's checks may together fail on a true claim (union bound)
FALSE_FAIL_MAX = 1e-3
#: a progress callback: ``progress(fraction in [0, 1], what)``
ProgressFn = Callable[[float, str], None]


# ----------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Prediction:
    """One predicted constant of a claim.

    ``meaning``: what the number is; ``formula``: its LaTeX (optional); ``informational``:
    reported but judged by no check (``--predict`` refuses it); ``kind``: ``"value"`` (judged
    by closeness), ``"lower_bound"`` / ``"upper_bound"`` (the claim says measured ≥ / ≤ it),
    ``"count"`` or ``"order"``.  ``wrong``: planted wrong values (or a function of the true
    value returning them) that the prediction tests plant and that must turn the verdict to
    ``fails``; by default derived from ``kind``.  ``positive``: the constant is positive by
    its meaning (a rate, a ratio's denominator, a bound on a positive quantity): ``--predict``
    refuses 0 and negative values as bad input."""

    meaning: str
    formula: str = ""
    informational: bool = False
    kind: str = "value"
    wrong: Any = None
    positive: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Prediction kind {self.kind!r} is not one of {', '.join(KINDS)}")

    def wrong_values(self, true_value: Any) -> list:
        """Planted wrong values for this constant (at least one), each shaped like the true
        value: a list constant gets lists of the same length."""
        if self.wrong is not None:
            w = self.wrong(true_value) if callable(self.wrong) else self.wrong
            values = list(w) if isinstance(w, list) else [w]
        else:
            values = default_wrong(self.kind, true_value)
        for v in values:
            if isinstance(true_value, (list, tuple)) != isinstance(v, (list, tuple)) or (
                    isinstance(v, (list, tuple)) and len(v) != len(true_value)):
                raise TypeError(f"planted wrong value {v!r} is not shaped like {true_value!r} "
                                "(for a list constant, `wrong` is a list of lists)")
        return values


KINDS = ("value", "lower_bound", "upper_bound", "count", "order")
#: at most this many positions of a list constant are perturbed one at a time
WRONG_POSITIONS = 12


def default_wrong(kind: str, v: Any) -> list:
    """Wrong values by kind.  Scalars: ×2 and ×½ for values (1 for a zero), +1 for counts, a
    stronger bound for bounds (v + max(|v|, 1) for a lower bound, v − ¾·max(|v|, 1) for an
    upper bound).  Lists: one position at a time (up to :data:`WRONG_POSITIONS` positions,
    first and last included), so a judge that reads only part of a list is caught; an order
    gets each adjacent swap."""
    if isinstance(v, (list, tuple)):
        v = list(v)
        n = len(v)
        if n == 0:
            return []
        if kind == "order":
            if n == 1:
                return [[v[0] + 1]]
            return [v[:i] + [v[i + 1], v[i]] + v[i + 2:] for i in range(n - 1)][:WRONG_POSITIONS]
        idx = sorted({round(i * (n - 1) / max(min(n, WRONG_POSITIONS) - 1, 1))
                      for i in range(min(n, WRONG_POSITIONS))})
        out = []
        for i in idx:
            for w in default_wrong(kind, v[i]):
                out.append(v[:i] + [w] + v[i + 1:])
        return out
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return []
    v = float(v) if not isinstance(v, (int, np.integer)) else int(v)
    if kind == "count":
        return [v + 1]
    if kind == "lower_bound":
        return [v + max(abs(v), 1.0)]
    if kind == "upper_bound":
        return [v - 0.75 * max(abs(v), 1.0)]
    return [_scale(v, 2.0), _scale(v, 0.5)]


def _scale(x: Any, f: float) -> Any:
    return 1.0 if x == 0 else float(x) * f


#: where a planted error sits (see :class:`PlantedError`)
PLANTED_SIDES = ("theory", "measurement", "certified")


def source_edit(old: Any, new: str | None = None) -> Callable[[Any], Any]:
    """A planted error's ``replace``: the original function (or method) recompiled with the
    text ``old`` of its source replaced by ``new`` (``old`` must occur exactly once; several
    edits as a list of (old, new) pairs), with its module's names — a slip in the code itself,
    e.g. ``source_edit("b_lo[rows, k] = m", "b_lo[rows, k] = m + 0.25 * (chi[rows, k] - m)")``.
    """
    import inspect
    import textwrap

    edits: list[tuple[str, str]] = ([(old, str(new))] if isinstance(old, str)
                                    else [(str(a), str(b)) for a, b in old])

    def replace(orig: Any) -> Any:
        fn = getattr(orig, "__wrapped__", orig)
        fn = getattr(fn, "__func__", fn)
        src = textwrap.dedent(inspect.getsource(fn))
        for a, b in edits:
            if src.count(a) != 1:
                raise ValueError(f"{fn.__qualname__}: {a!r} occurs {src.count(a)} times, not once")
            src = src.replace(a, b)
        lines = src.splitlines()
        while lines and not lines[0].startswith(("def ", "async def ")):
            lines.pop(0)  # decorators: the original's wrappers are not re-applied
        namespace = dict(fn.__globals__)
        code = compile("\n".join(lines) + "\n", f"<planted edit of {fn.__qualname__}>", "exec")
        exec(code, namespace)  # noqa: S102 (the original's own source, edited)
        return namespace[fn.__name__]

    return replace


@dataclass(frozen=True)
class PlantedError:
    """A planted error: ``target`` (``"package.module:attribute"``) is replaced during one run
    by ``replace(original)``; the verdict must then be ``fails`` (not ``inconclusive``).

    ``side``: ``"theory"`` (the prediction is wrong), ``"measurement"`` (the experiment is
    wrong) or ``"certified"`` (the machinery behind a certified number is unsound — interval
    arithmetic, branch and bound — so the number may be wrong on either side; the independent
    check of its certificate must catch it).  ``setting``: keys for the run (default: the claim's defaults, profile quick).
    ``expect``: the verdict the error must produce — ``"fails"``; only for a claim that is
    false at its defaults (``expected_default = "fails"``) may an error that makes the
    measurement agree with the false statement expect ``"holds"``."""

    side: str
    what: str
    target: str
    replace: Callable[[Any], Any]
    setting: Mapping[str, Any] = field(default_factory=dict)
    expect: str = "fails"

    def __post_init__(self) -> None:
        if self.side not in PLANTED_SIDES:
            raise ValueError(f"planted error side must be one of {'|'.join(PLANTED_SIDES)}, "
                             f"got {self.side!r}")
        if ":" not in self.target:
            raise ValueError(f"planted error target {self.target!r} is not 'module:attribute'")
        if self.expect not in ("fails", "holds"):
            raise ValueError(f"planted error expect must be 'fails' (or 'holds' for a false "
                             f"claim), got {self.expect!r}")


@dataclass(frozen=True)
class Cost:
    """What a run needs: ``work`` (≈ floating-point operations) and ``memory`` (bytes of the
    largest arrays held at once), estimated from the setting before anything runs."""

    work: float
    memory: float
    what: str = ""


#: flop-equivalents per CPU second on the reference machine (the project's 2-core AMD EPYC of
#: 2026-12-04): a claim's calibrated estimate (:meth:`Claim.cost`) ÷ this rate is its run's CPU
#: time there, within a factor of 2 (``benchmarks/bench_estimates.py`` prints estimate ÷
#: measured per claim).  The constants inside the estimates were set on an earlier machine that
#: ran 1e9 of them per CPU second; this one runs ≈ 3× as many on the same runs (more on the
#: trained models' matrix products: each claim's ``work_calibration`` takes up the difference)
WORK_RATE = 3e9
#: per profile: (work in flop-equivalents, memory in bytes, wall-clock seconds of the watchdog)
BUDGETS = {
    "quick": (1.6e10, 1 << 30, 120.0),
    "standard": (4e10, 1 << 30, 900.0),
    "thorough": (2e12, 4 << 30, 7200.0),
}


class OverBudget(RuntimeError):
    """Raised by :meth:`Run.tick` when a run passes its wall-clock safety limit (a
    machine-dependent net under the deterministic budget of :meth:`Claim.estimate`)."""


# ----------------------------------------------------------------------------- measurements


def _not_run(setting: Setting) -> str:
    """The reason a setting beyond reach gets (a refusal's wording, as the budget's)."""
    return f"not run: {setting.beyond_reach}"


def _setting_checked(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn(self, setting, ...)`` refusing a setting of the wrong type with a ``TypeError``
    that names the argument (instead of an ``AttributeError`` deep inside the claim)."""
    import functools

    guarded = name in ("constants", "measure", "estimate")  # what reads the unset derived defaults

    @functools.wraps(fn)
    def checked(self: Any, setting: Any, *args: Any, **kw: Any) -> Any:
        expected = type(self).setting_type
        if not isinstance(setting, expected):
            raise TypeError(f"{self.id}.{name}: the setting must be a {expected.__name__} "
                            f"(claim.setting({{...}})), got {type(setting).__name__}")
        if guarded and setting.beyond_reach is not None:
            raise BeyondReach(_not_run(setting))
        return fn(self, setting, *args, **kw)

    checked._takes_setting = True  # type: ignore[attr-defined]
    return checked


def _claim_and_setting(claim: Any, setting: Any, where: str) -> tuple["Claim", Setting]:
    """A claim (or its id) and its setting (or a mapping of its keys), checked."""
    if isinstance(claim, str):
        from ._registry import get_claim

        claim = get_claim(claim)
    if not isinstance(claim, Claim):
        raise TypeError(f"{where}: the claim must be a Claim or a claim id, got "
                        f"{type(claim).__name__}")
    if setting is None or isinstance(setting, Mapping):
        setting = claim.setting(setting)
    if not isinstance(setting, claim.setting_type):
        raise TypeError(f"{where}: the setting must be a {claim.setting_type.__name__} "
                        f"(claim.setting({{...}})) or a mapping of its keys, got "
                        f"{type(setting).__name__}")
    return claim, setting


def _checked_options(where: str, predict: Any, progress: Any) -> None:
    if predict is not None and not isinstance(predict, Mapping):
        raise TypeError(f"{where}: predict must map predicted constants to values "
                        f"({{'loss_final': 0.31}}), got {type(predict).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"{where}: progress must be a function (fraction, what), got "
                        f"{type(progress).__name__}")


def stream_rng(seed: int, *stream: int, space: int = 1) -> np.random.Generator:
    """The generator of stream ``stream`` (a tuple of ints, of any length) of a run with this
    seed: what :meth:`Run.rng` gives a measurement, for code that must draw the same numbers
    before the run exists (a setting's pilot that derives a step size from the run's own
    draws).  The stream's length is part of the key, so ``(5,)`` and ``(5, 0)`` differ;
    ``space`` keeps other users' streams apart from the measurement's (1; the judge's: 2)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(space, len(stream), *stream)))


class Run:
    """What a claim's ``measure`` receives: random streams, progress, the watchdog, and a
    place for reasons the measurement could not decide."""

    def __init__(self, setting: Setting, *, progress: Callable[[float, str], None] | None = None,
                 deadline: float | None = None):
        self.setting = setting
        self.seed = setting.seed
        self.profile = setting.profile
        self.reasons: list[str] = []
        self.notes: list[str] = []
        self._progress = progress
        self._deadline = deadline
        self._limit_s = BUDGETS[self.profile][2] if deadline is None else round(deadline - time.monotonic())

    def rng(self, *stream: int) -> np.random.Generator:
        """A generator determined by the seed and a stream id (same seed → same numbers;
        distinct stream ids, of any length, give independent streams): :func:`stream_rng`."""
        return stream_rng(self.seed, *stream)

    def tick(self, fraction: float | None = None, what: str = "") -> None:
        """Report progress (``fraction`` ∈ [0, 1]) and enforce the wall-clock watchdog."""
        if self._progress is not None and fraction is not None:
            self._progress(float(fraction), what)
        limit = time_limit_reason(f"during {what}" if what else "")
        if limit is not None:
            raise OverBudget(limit)
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise OverBudget(f"the {self.profile} profile's wall-clock safety limit "
                             f"({self._limit_s:g} s, machine-dependent) was reached"
                             + (f" during {what}" if what else ""))

    def inconclusive(self, reason: str) -> None:
        """The measurement as a whole cannot be judged (the verdict is ``inconclusive`` and
        ``judge`` is not called).  For trouble with one measured value only, return ``None``
        for it and let ``judge`` record an undecided check."""
        self.reasons.append(reason)

    def note(self, text: str) -> None:
        """Record a remark for the report (no effect on the verdict)."""
        self.notes.append(text)


@dataclass
class Measurement:
    """The result of ``measure``: the values, the reasons it could not decide, notes, time."""

    values: dict[str, Any]
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runtime_s: float = 0.0
    error: str | None = None  # "internal error: …" when measure raised unexpectedly

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str, default: Any = None) -> Any:
        """The measured value ``key``, or ``default``."""
        return self.values.get(key, default)


# ----------------------------------------------------------------------------- the claim


class Claim(abc.ABC):
    """Base class of every claim (see the module docstring for the contract)."""

    id: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    statement: ClassVar[str]
    setting_type: ClassVar[type[Setting]]
    provenance: ClassVar[str] = "third-party summary of the paper"
    #: the predicted constants (key → Prediction); required by the contract
    predictions: ClassVar[Mapping[str, Prediction]]
    #: planted errors (≥ 1 theory side and ≥ 1 measurement side)
    planted_errors: ClassVar[tuple[PlantedError, ...]] = ()
    #: the verdict at the default setting: "holds", or "fails" for a published statement that
    #: is false (reported honestly), or "inconclusive" where the statement cannot be decided
    expected_default: ClassVar[str] = "holds"
    #: trainer backends the claim accepts through its ``backend`` setting key
    backends: ClassVar[tuple[str, ...]] = ("numpy",)
    #: legacy: a sentence on the negative control (superseded by ``planted_errors``)
    negative_control: ClassVar[str] = ""
    #: how many times its profile's work budget (:data:`BUDGETS`) a run of this claim may use,
    #: with the reason.  1 for every claim except one that trains models at a paper's own scale,
    #: where a smaller run would not test the paper's statement; such a claim says why here.
    budget_scale: ClassVar[tuple[float, str]] = (1.0, "")
    #: this claim's :meth:`estimate` ÷ the work its runs measurably do (CPU seconds ×
    #: :data:`WORK_RATE`), measured on the reference machine at its defaults and random settings
    #: (``benchmarks/bench_estimates.py`` prints the ratios and suggests the value); :meth:`cost`
    #: divides it out.  1 where the estimate's own constants already give the CPU time
    work_calibration: ClassVar[float] = 1.0

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if getattr(cls, "__abstractmethods__", None) or "id" not in cls.__dict__:
            return
        if not _ID.match(cls.id):
            raise TypeError(f"claim id {cls.id!r} is not lowercase dotted")
        if not hasattr(cls, "predictions"):
            return  # legacy claim (overrides check); the registry test lists these
        for attr in ("title", "source", "statement", "setting_type"):
            if not getattr(cls, attr, None):
                raise TypeError(f"claim {cls.id}: missing {attr}")
        if not cls.predictions or not all(isinstance(p, Prediction) for p in cls.predictions.values()):
            raise TypeError(f"claim {cls.id}: predictions must map keys to Prediction")
        if all(p.informational for p in cls.predictions.values()):
            raise TypeError(f"claim {cls.id}: no prediction is judged (all informational)")
        if cls.expected_default not in ("holds", "fails", "inconclusive"):
            raise TypeError(f"claim {cls.id}: expected_default must be holds|fails|inconclusive")
        if not (0.05 <= cls.work_calibration <= 20.0):
            raise TypeError(f"claim {cls.id}: work_calibration must be in [0.05, 20] (a measured ratio)")
        scale, why = cls.budget_scale
        if not (1.0 <= scale <= 10.0) or (scale > 1.0 and not why):
            raise TypeError(f"claim {cls.id}: budget_scale must be in [1, 10], with its reason when above 1")
        for p in cls.planted_errors:
            if not isinstance(p, PlantedError):
                raise TypeError(f"claim {cls.id}: planted_errors must hold PlantedError")
            if p.expect == "holds" and cls.expected_default != "fails":
                raise TypeError(f"claim {cls.id}: only a claim that is false at its defaults "
                                "(expected_default = 'fails') may plant an error expecting holds")
        sides = {p.side for p in cls.planted_errors}
        if not {"theory", "measurement"} <= sides:
            raise TypeError(f"claim {cls.id}: planted_errors need a theory-side and a "
                            f"measurement-side error (has {sorted(sides) or 'none'})")
        if cls.check is not Claim.check:
            raise TypeError(f"claim {cls.id}: implement measure and judge, not check")
        for name in ("constants", "derive", "estimate", "measure", "judge"):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_takes_setting", False):
                setattr(cls, name, _setting_checked(fn, name))

    @classmethod
    def is_legacy(cls) -> bool:
        """Whether the claim predates the contract (a single ``check``, no ``predictions``)."""
        return not hasattr(cls, "predictions")

    # -- the operations -------------------------------------------------------------------
    def setting(self, raw: Mapping[str, Any] | None = None) -> Setting:
        """This claim's setting from user values (strings or native); missing keys take their
        defaults, unknown keys and bad values are :class:`~icltheory.core.SettingError`."""
        if raw is not None and not isinstance(raw, Mapping):
            raise TypeError(f"{self.id}.setting: expected a mapping of setting keys such as "
                            f"{{'N': 12}}, got {type(raw).__name__}")
        return self.setting_type.parse(raw or {})

    @abc.abstractmethod
    def constants(self, setting: Setting) -> dict[str, Any]:
        """The predicted quantities in this setting."""

    def derive(self, setting: Setting) -> Derivation | None:
        """The symbolic derivation (``None`` when the claim has none)."""
        return None

    def undecidable(self, setting: Setting) -> str | None:
        """Why a check at ``setting`` cannot decide by construction (the statement says
        nothing there, e.g. a ratio of two equal scales), or ``None``.  Cheap (no theory, no
        run): :func:`icltheory.testing.settings` draws no such setting."""
        return None

    def estimate(self, setting: Setting) -> Cost | None:
        """The work and memory a run needs (``None``: negligible), from the setting alone, before
        anything runs.  Read it through :meth:`cost`."""
        return None

    def cost(self, setting: Setting) -> Cost | None:
        """:meth:`estimate` with the work divided by :attr:`work_calibration`: what budgets,
        refusals and ``--dry-run`` read (work in flop-equivalents, :data:`WORK_RATE` of them per
        CPU second on the reference machine); ``None`` at a setting beyond reach (nothing runs)."""
        if setting.beyond_reach is not None:
            return None
        c = self.estimate(setting)
        if c is None or self.work_calibration == 1.0:
            return c
        return Cost(work=c.work / self.work_calibration, memory=c.memory, what=c.what)

    def measure(self, setting: Setting, run: Run) -> dict[str, Any]:
        """Train, integrate or sample: the measured numbers (reads the setting, never the
        predictions; random numbers from ``run.rng``, progress through ``run.tick``)."""
        raise NotImplementedError(f"{self.id} implements neither measure nor check")

    def judge(self, setting: Setting, predicted: Mapping[str, Any], measured: Measurement,
              ctx: CheckContext) -> None:
        """Compare ``measured`` with ``predicted`` through ``ctx``'s recorders (``close``,
        ``ztest``, ``condition``, ``bound``), each naming the constants it judges."""
        raise NotImplementedError(f"{self.id} implements neither judge nor check")

    def check(self, setting: Setting, ctx: CheckContext) -> None:
        """Legacy single-step check (new claims implement ``measure`` and ``judge``)."""
        raise NotImplementedError

    @property
    def informational(self) -> frozenset[str]:
        """The predicted constants reported for information only (judged by no check)."""
        preds = getattr(self, "predictions", {})
        return frozenset(k for k, p in preds.items() if p.informational)

    def describe(self) -> dict[str, Any]:
        """Everything a user (or a report) needs to know about the claim, as data."""
        preds = getattr(self, "predictions", None)
        return {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "statement": self.statement,
            "provenance": self.provenance,
            "settings": self.setting_type.describe(),
            "predictions": ({k: {"meaning": p.meaning, "formula": p.formula, "kind": p.kind,
                                 "informational": p.informational} for k, p in preds.items()}
                            if preds else {}),
            "backends": list(self.backends),
            "planted_errors": [{"side": p.side, "what": p.what, "target": p.target}
                               for p in self.planted_errors],
        }


# ----------------------------------------------------------------------------- running


def versions() -> dict[str, str]:
    """Versions of the packages a verdict depends on (read from metadata, nothing imported)."""
    import platform
    from importlib import metadata

    from .. import __version__

    out = {"icltheory": __version__, "python": platform.python_version()}
    for dist in ("numpy", "scipy", "sympy", "mpmath", "python-flint"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover
            pass
    return out


_NUMERIC_ERRORS = (NumericalTrouble, FloatingPointError, OverflowError,
                   np.linalg.LinAlgError, MemoryError)
_PLAIN = (int, float, str, bool, type(None))


def _describe_exc(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


class _Boundary:
    """Turns exceptions into reasons: numerical trouble and the safety limit into
    ``inconclusive`` reasons, anything else into an internal error; bad input passes through."""

    def __init__(self, where: str):
        self.where = where
        self.reasons: list[str] = []
        self.notes: list[str] = []
        self.internal: str | None = None

    def __enter__(self) -> "_Boundary":
        return self

    def __exit__(self, typ: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or isinstance(exc, (BadInput, KeyboardInterrupt, SystemExit)):
            return False
        if not isinstance(exc, Exception):
            return False
        if isinstance(exc, OverBudget):
            self.reasons.append(str(exc) if str(exc).startswith(MARK) else f"not finished: {exc}")
        elif isinstance(exc, BeyondReach):
            self.reasons.append(str(exc))
        elif isinstance(exc, _NUMERIC_ERRORS):
            self.reasons.append(f"numerical trouble in {self.where}: {_describe_exc(exc)}")
        else:
            self.internal = f"internal error in {self.where}: {_describe_exc(exc)}"
            self.reasons.append(self.internal)
            self.notes.append("traceback: " + _tb(exc))
        return True


def over_budget(claim: Claim, setting: Setting) -> str | None:
    """Why a run of ``claim`` at ``setting`` would be refused before running (its estimated
    memory or work is over the profile's budget in :data:`BUDGETS`), or ``None``."""
    return _over_budget(claim, setting)


def _over_budget(claim: Claim, setting: Setting) -> str | None:
    if setting.beyond_reach is not None:
        return _not_run(setting)
    try:
        cost = claim.cost(setting)
    except BadInput:
        raise
    except (OverflowError, ValueError, ZeroDivisionError) as exc:
        return f"the work of this setting cannot be estimated ({_describe_exc(exc)})"
    if cost is None:
        return None
    work, mem, _ = BUDGETS[setting.profile]
    work *= claim.budget_scale[0]
    what = f" ({cost.what})" if cost.what else ""
    if not (math.isfinite(cost.memory) and cost.memory <= mem):
        return (f"not run: the setting needs about {cost.memory / 2**30:.3g} GiB{what}, over the "
                f"{setting.profile} profile's {mem / 2**30:.3g} GiB")
    if not (math.isfinite(cost.work) and cost.work <= work):
        return (f"not run: the setting needs about {cost.work:.3g} operations{what}, over the "
                f"{setting.profile} profile's budget of {work:.3g}"
                + (f" (this claim's: {claim.budget_scale[0]:g}×)" if claim.budget_scale[0] != 1.0 else ""))
    return None


def measure_claim(claim: Claim | str, setting: Setting | Mapping[str, Any] | None, *,
                  progress: ProgressFn | None = None) -> Measurement:
    """Run the claim's experiment (no predictions involved) behind the error boundary, BLAS on
    one thread (:mod:`icltheory.core._threads`: the same bytes on any machine, and for a
    measurement that runs part of itself in a worker thread, whatever the timing)."""
    from ._threads import one_blas_thread

    claim, setting = _claim_and_setting(claim, setting, "measure_claim")
    _checked_options("measure_claim", None, progress)
    t0 = time.perf_counter()
    b = _Boundary("the experiment")
    budget = time_limit_reason("before the experiment started")
    if budget is None:
        with b:
            budget = _over_budget(claim, setting)
    if budget is not None or b.reasons:
        return Measurement({}, [budget] if budget else b.reasons, b.notes,
                           time.perf_counter() - t0, b.internal)
    run = Run(setting, progress=progress,
              deadline=time.monotonic() + BUDGETS[setting.profile][2] * claim.budget_scale[0])
    values: dict[str, Any] = {}
    with one_blas_thread(), np.errstate(over="raise", invalid="raise", divide="raise"), b:
        values = dict(claim.measure(setting, run) or {})
    return Measurement(values, run.reasons + b.reasons, run.notes + b.notes,
                       time.perf_counter() - t0, b.internal)


def _tb(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))[-2000:]


def _check_constants(claim: Claim, constants: Mapping[str, Any]) -> None:
    preds = getattr(claim, "predictions", None)
    if preds is not None and set(constants) != set(preds):
        raise TypeError(f"{claim.id}: constants() keys {sorted(constants)} differ from the "
                        f"declared predictions {sorted(preds)}")
    if preds is not None:
        for k, v in constants.items():
            items = v if isinstance(v, list) else [v]
            if not all(isinstance(x, _PLAIN) for x in items):
                raise TypeError(f"{claim.id}: constant {k!r} is not plain data (float, int, str, "
                                f"bool, None or a list of those): {type(v).__name__}")


def _theory_constants(claim: Claim, setting: Setting) -> tuple[dict | None, _Boundary]:
    b = _Boundary("the theory")
    constants = None
    limit = time_limit_reason("before the claim started")
    if limit is not None:
        b.reasons.append(limit)
        return None, b
    with np.errstate(over="raise", invalid="raise", divide="raise"), b:
        constants = claim.constants(setting)
        _check_constants(claim, constants)
    return (constants if not b.reasons else None), b


def judge_claim(claim: Claim | str, setting: Setting | Mapping[str, Any] | None,
                measurement: Measurement, *,
                predict: Mapping[str, Any] | None = None, progress: ProgressFn | None = None,
                constants: dict[str, Any] | None = None) -> Verdict:
    """Judge a measurement against the claim's (or the user's) predictions.

    A measurement that could not decide (``run.inconclusive``) is not judged; a ``fails``
    whose checks together exceed :data:`FALSE_FAIL_MAX` of false-fail probability becomes
    ``inconclusive`` (the run cannot decide at the stated level)."""
    claim, setting = _claim_and_setting(claim, setting, "judge_claim")
    _checked_options("judge_claim", predict, progress)
    if not isinstance(measurement, Measurement):
        raise TypeError(f"judge_claim: the measurement must be a Measurement (from "
                        f"measure_claim), got {type(measurement).__name__}")
    t0 = time.perf_counter()
    if setting.beyond_reach is not None:
        return _stopped(claim, setting, _not_run(setting))
    limit = time_limit_reason("before the judgement")
    if limit is not None:
        stopped = _stopped(claim, setting, limit)
        stopped.runtime_s = measurement.runtime_s + time.perf_counter() - t0  # what it ran
        return stopped
    tb = None
    if constants is None:
        constants, tb = _theory_constants(claim, setting)
    predicted = (apply_predictions(claim.id, constants, predict or {}, claim.informational,
                                   getattr(claim, "predictions", None))
                 if constants is not None else {})
    ctx = CheckContext(predicted=predicted, profile=setting.profile, seed=setting.seed,
                       progress=progress, typed=typed_precision(predict or {}))
    internal = measurement.error
    if tb is not None and tb.reasons:
        ctx.inconclusive_reasons.extend(tb.reasons)
        ctx.notes.extend(tb.notes)
        internal = internal or tb.internal
    for r in measurement.reasons:
        ctx.inconclusive(r)
    ctx.notes.extend(measurement.notes)
    b = _Boundary("the judgement")
    if constants is not None:
        with np.errstate(over="raise", invalid="raise", divide="raise"), b:
            if claim.is_legacy():
                claim.check(setting, ctx)
            else:
                d = claim.derive(setting)
                if d is not None:
                    ctx.verify_derivation(d)
                if not measurement.reasons:
                    claim.judge(setting, predicted, measurement, ctx)
    ctx.inconclusive_reasons.extend(b.reasons)
    ctx.notes.extend(b.notes)
    internal = internal or b.internal
    preds = getattr(claim, "predictions", None)
    if preds is not None and constants is not None:
        unjudged = sorted(k for k in predicted if k not in claim.informational
                          and k not in ctx.judged)
        if unjudged and not ctx.inconclusive_reasons:
            ctx.add(Check("every prediction judged", sorted(predicted), sorted(ctx.judged),
                          "exact", "contract: each predicted constant is judged by a check",
                          None, f"not judged: {', '.join(unjudged)}"))
    status, reasons = Verdict.decide(ctx.checks, ctx.inconclusive_reasons)
    total = float(sum(c.false_fail for c in ctx.checks))
    # a failed check that cannot fail by chance (false-fail probability 0: an exact identity,
    # the derivation) decides whatever the statistical checks' total is
    certain = any(c.passed is False and c.false_fail == 0 for c in ctx.checks)
    if status == "fails" and total > FALSE_FAIL_MAX and not certain and not claim.is_legacy():
        reasons = [f"a check failed, but the checks' false-fail probability totals {total:.2g} "
                   f"> {FALSE_FAIL_MAX:g}: the run cannot decide at that level"] + reasons
        status = "inconclusive"
    evidence = dict(ctx.evidence)
    if status == "fails":
        evidence.setdefault(
            "failed_checks", [c.as_dict() for c in ctx.checks if c.passed is False]
        )
    return Verdict(
        claim=claim.id,
        verdict=status,
        setting=setting.as_dict(),
        predicted=predicted,
        measured=ctx.measured,
        checks=ctx.checks,
        evidence=evidence,
        seed=setting.seed,
        runtime_s=measurement.runtime_s + time.perf_counter() - t0,
        versions=versions(),
        profile=setting.profile,
        reasons=reasons,
        notes=ctx.notes,
        plots=ctx.plots,
        derivation=ctx.derivation,
        claim_info=claim.describe(),
        internal_error=internal,
        planted={k: predicted[k] for k in (predict or {}) if k in predicted},
        non_default=non_default_keys(setting),
    )


def non_default_keys(setting: Setting) -> dict[str, Any]:
    """The keys of ``setting`` whose value differs from the default setting's at the same
    profile (``profile`` excluded); the keys the user gave when the defaults cannot be built.
    At a setting beyond reach, the derived keys it leaves unset (``None``, not given) are not
    differences: nothing was derived for them."""
    here = setting.as_dict()
    try:
        base = type(setting).parse({"profile": setting.profile}).as_dict()
    except Exception:  # a setting type whose defaults alone do not validate
        return {k: here[k] for k in setting.given() if k != "profile"}
    unset: set[str] = set()
    if setting.beyond_reach is not None:  # what the user gave, even where the setting left it unset
        given = setting.given()
        unset = {k for k, v in here.items() if v is None and k not in given}
        here = {k: given[k] if v is None and k in given else v for k, v in here.items()}
    return {k: v for k, v in here.items() if k != "profile" and base.get(k) != v and k not in unset}


def run_check(
    claim: Claim | str,
    setting: Setting | Mapping[str, Any] | None = None,
    *,
    profile: str | None = None,
    predict: Mapping[str, Any] | None = None,
    progress: ProgressFn | None = None,
) -> Verdict:
    """Measure and judge: the one path every caller uses.  ``claim``: a claim or its id;
    ``setting``: its setting, or a mapping of its keys (``None``: the defaults).  ``profile`` re-resolves the
    setting's profile-dependent defaults (it is the setting's ``profile`` key).  BLAS runs on
    one thread meanwhile (:mod:`icltheory.core._threads`)."""
    from ._threads import one_blas_thread

    claim, setting = _claim_and_setting(claim, setting, "run_check")
    _checked_options("run_check", predict, progress)
    t0 = time.perf_counter()
    with one_blas_thread():
        try:
            with hard_stop():
                return _run_check(claim, setting, profile=profile, predict=predict,
                                  progress=progress)
        except TimeLimitReached as exc:  # the alarm: wherever the run was
            stopped = _stopped(claim, setting, str(exc))
            stopped.runtime_s = time.perf_counter() - t0
            return stopped


def _stopped(claim: Claim, setting: Setting, reason: str) -> Verdict:
    """The verdict of a run that did not run: stopped by the time limit outside the error
    boundaries, or refused from its work estimate (``reason`` says which)."""
    return Verdict(claim=claim.id, verdict="inconclusive", setting=setting.as_dict(),
                   predicted={}, measured={}, checks=[], evidence={}, seed=setting.seed,
                   runtime_s=0.0, versions=versions(), profile=setting.profile,
                   reasons=[reason], claim_info=claim.describe(),
                   non_default=non_default_keys(setting))


def _run_check(claim: Claim, setting: Setting, *, profile: str | None,
               predict: Mapping[str, Any] | None, progress: ProgressFn | None) -> Verdict:
    if profile is not None:
        if profile not in PROFILES:
            raise BadInput(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
        setting = setting.with_profile(profile)
    if not claim.is_legacy() and (not predict or setting.beyond_reach is not None):
        # a setting over the profile's budget is refused from its estimate alone, before any
        # theory is derived or solved (with --predict values the constants are needed first,
        # to tell malformed values apart as bad input, unless no run can be made at all)
        if setting.beyond_reach is not None and predict:
            check_prediction_keys(claim.id, claim.predictions, predict, claim.informational)
        b = _Boundary("the work estimate")
        refusal = None
        with b:
            refusal = _over_budget(claim, setting)
        if refusal is not None:
            return _stopped(claim, setting, refusal)
    t0 = time.perf_counter()
    constants, tb = _theory_constants(claim, setting)
    theory_s = time.perf_counter() - t0  # the verdict's runtime counts the theory's constants too
    if constants is not None:  # malformed --predict values are bad input before any run
        apply_predictions(claim.id, constants, predict or {}, claim.informational,
                          getattr(claim, "predictions", None))
    if claim.is_legacy() or constants is None:
        m = Measurement({})
    else:
        m = measure_claim(claim, setting, progress=progress)
    if constants is None:
        v = judge_claim(claim, setting, m, predict=predict, progress=progress)
    else:
        v = judge_claim(claim, setting, m, predict=predict, progress=progress, constants=constants)
    v.runtime_s += theory_s
    return v
