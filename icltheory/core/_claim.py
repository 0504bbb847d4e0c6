r"""Claims: a paper's statement made executable.

How to add a claim (the contract every paper module in ``proofs/`` follows):

1. Write a frozen :class:`~icltheory.core.Setting` subclass whose defaults reproduce the paper.
2. Subclass :class:`Claim` and set the class attributes ``id`` (lowercase dotted,
   ``paper.topic.claim``), ``title``, ``source`` (arXiv id and section/equation where known),
   ``statement`` (LaTeX), ``setting_type`` and ``provenance``.
3. Implement ``constants(setting) -> dict`` — the *predicted* quantities, computed (ideally
   lowered from the derivation), never retyped.
4. Optionally implement ``derive(setting) -> Derivation`` — the symbolic derivation, every
   step verified.
5. Implement ``check(setting, ctx)`` — really compute (train, integrate, sample) and record,
   through ``ctx`` (:class:`~icltheory.core.CheckContext`), each comparison between
   ``ctx.predicted[...]`` and what was measured, with a tolerance and its reason.  Always
   compare against ``ctx.predicted`` (not a recomputed constant): ``--predict KEY=VALUE``
   replaces entries of it, and a wrong value must make the check fail.
6. List the instance in the module's ``CLAIMS`` tuple; the registry finds it.

Numerical trouble inside ``check`` → raise :class:`~icltheory.core.NumericalTrouble` (or call
``ctx.inconclusive(reason)``); the runner turns it into an ``inconclusive`` verdict.
"""

from __future__ import annotations

import abc
import re
import time
from typing import Any, ClassVar, Mapping

import numpy as np

from ._derivation import Derivation
from ._errors import BadInput, NumericalTrouble
from ._setting import Setting
from ._verdict import CheckContext, Verdict, parse_prediction

__all__ = ["Claim", "run_check", "PROFILES", "versions"]

PROFILES = ("quick", "standard", "thorough")
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$")
PROVENANCE = ("confirmed paper text", "inferred", "derived here", "summary's claim",
              "third-party summary of the paper")


class Claim(abc.ABC):
    """Base class of every claim (see the module docstring for the contract)."""

    id: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    statement: ClassVar[str]
    setting_type: ClassVar[type[Setting]]
    provenance: ClassVar[str] = "third-party summary of the paper"
    #: a sentence on the negative control that the tests plant for this claim
    negative_control: ClassVar[str] = ""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if not getattr(cls, "__abstractmethods__", None) and "id" in cls.__dict__:
            if not _ID.match(cls.id):
                raise ValueError(f"claim id {cls.id!r} is not lowercase dotted")

    # -- the three operations -------------------------------------------------------------
    def setting(self, raw: Mapping[str, Any] | None = None) -> Setting:
        return self.setting_type.parse(raw or {})

    @abc.abstractmethod
    def constants(self, setting: Setting) -> dict[str, Any]:
        """The predicted quantities in this setting."""

    def derive(self, setting: Setting) -> Derivation | None:
        """The symbolic derivation (``None`` when the claim has none)."""
        return None

    @abc.abstractmethod
    def check(self, setting: Setting, ctx: CheckContext) -> None:
        """Compute and record checks into ``ctx``."""

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "statement": self.statement,
            "provenance": self.provenance,
            "settings": self.setting_type.describe(),
        }


def versions() -> dict[str, str]:
    import platform

    import mpmath
    import scipy
    import sympy

    from .. import __version__

    out = {"icltheory": __version__, "python": platform.python_version(),
           "numpy": np.__version__, "scipy": scipy.__version__, "sympy": sympy.__version__,
           "mpmath": mpmath.__version__}
    try:
        import flint

        out["python-flint"] = flint.__version__
    except ImportError:  # pragma: no cover
        pass
    return out


def apply_predictions(claim: Claim, constants: dict[str, Any], predict: Mapping[str, str]) -> dict:
    """Replace predicted constants by the user's values (``--predict KEY=VALUE``)."""
    out = dict(constants)
    for key, text in predict.items():
        if key not in constants:
            raise BadInput(
                f"--predict {key}: {claim.id} has no predicted constant {key!r}; "
                f"valid: {', '.join(sorted(constants))}"
            )
        value = parse_prediction(key, text) if isinstance(text, str) else text
        old = constants[key]
        if isinstance(old, (list, tuple)) and not isinstance(value, list):
            value = [value]
        if isinstance(old, (list, tuple)) and len(value) != len(old):
            raise BadInput(f"--predict {key}: expected {len(old)} values, got {len(value)}")
        if not isinstance(old, (list, tuple)) and isinstance(value, list):
            raise BadInput(f"--predict {key}: expected one number, got {len(value)}")
        out[key] = value
    return out


def run_check(
    claim: Claim,
    setting: Setting,
    *,
    profile: str = "standard",
    predict: Mapping[str, str] | None = None,
    progress=None,
) -> Verdict:
    """Run ``claim.check`` and return its :class:`Verdict` (the one path every caller uses)."""
    if profile not in PROFILES:
        raise BadInput(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    t0 = time.perf_counter()
    constants = claim.constants(setting)
    predicted = apply_predictions(claim, constants, predict or {})
    ctx = CheckContext(predicted=predicted, profile=profile, seed=setting.seed, progress=progress)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        try:
            claim.check(setting, ctx)
        except NumericalTrouble as exc:
            ctx.inconclusive(f"numerical trouble: {exc}")
        except FloatingPointError as exc:
            ctx.inconclusive(f"floating-point trouble ({exc}); the numbers cannot be trusted")
        except OverflowError as exc:
            ctx.inconclusive(f"overflow ({exc})")
    status, reasons = Verdict.decide(ctx.checks, ctx.inconclusive_reasons)
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
        runtime_s=time.perf_counter() - t0,
        versions=versions(),
        profile=profile,
        reasons=reasons,
        notes=ctx.notes,
        plots=ctx.plots,
        derivation=ctx.derivation,
    )
