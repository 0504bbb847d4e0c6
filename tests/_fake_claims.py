"""Small claims for the command-line tests: one well-behaved new-style claim, and claims that
crash in the ways the error boundary must handle (registered with ``icltheory.core.register``,
so they also exist in forked report workers)."""

from __future__ import annotations

from dataclasses import dataclass

from icltheory.core import (Claim, Cost, Float, Int, PlantedError, Plot, Prediction, Series,
                            Setting)


@dataclass(frozen=True, kw_only=True)
class SquareSetting(Setting):
    """The mean of x² for x ~ N(0, s²)."""

    s: float = Float(1.5, positive=True, max=1e3, sample=(0.5, 2.0), doc="standard deviation")
    n: int = Int(5000, min=10, max=10**6, sample=(100, 5000), doc="Monte Carlo samples")


def variance(s: float) -> float:
    return s * s


def draw(rng, s: float, n: int):
    return rng.normal(0.0, s, n)


class SquareMean(Claim):
    """A true claim with declared predictions, a figure and a cost estimate."""

    id = "testonly.square.mean"
    title = "E[x²] = s² for x ~ N(0, s²)"
    source = "a textbook identity (test claim)"
    provenance = "derived here"
    statement = r"\mathbb E[x^2]=s^2"
    setting_type = SquareSetting
    predictions = {"second_moment": Prediction("E[x²], the second moment", formula="s^2"),
                   "s": Prediction("the standard deviation itself", informational=True)}
    planted_errors = (
        PlantedError("theory", "s³", "_fake_claims:variance", lambda o: lambda s: s ** 3),
        PlantedError("measurement", "2s", "_fake_claims:draw",
                     lambda o: lambda rng, s, n: o(rng, 2 * s, n)),
    )

    def constants(self, s):
        return {"second_moment": variance(s.s), "s": s.s}

    def estimate(self, s):
        return Cost(work=10.0 * s.n, memory=8.0 * s.n, what=f"{s.n} samples")

    def measure(self, s, run):
        run.tick(0.5, "sampling")
        return {"x": draw(run.rng(0), s.s, s.n)}

    def judge(self, s, predicted, m, ctx):
        x2 = m["x"] ** 2
        ctx.ztest("mean of x²", samples=x2, key="second_moment", alpha=1e-4)
        ctx.plot(Plot("x² samples", "i", "x²", [Series(list(range(20)), list(x2[:20]), "x²")]))


def pair_values() -> list[float]:
    return [1.0, 100.0]


def pair_measured() -> list[float]:
    return [1.0, 100.0]


@dataclass(frozen=True, kw_only=True)
class PairSetting(Setting):
    """No keys of its own."""


class PairUnderOneTolerance(Claim):
    """Two numbers of different sizes judged with one absolute tolerance 0.01 (not registered:
    the resolution tests build it)."""

    id = "testonly.resolution.pair"
    title = "two numbers under one absolute tolerance"
    source = "test claim"
    provenance = "derived here"
    statement = "p = (1, 100)"
    setting_type = PairSetting
    predictions = {"pair": Prediction("two numbers of different sizes")}
    planted_errors = (
        PlantedError("theory", "doubled", "_fake_claims:pair_values", lambda o: lambda: [2 * x for x in o()]),
        PlantedError("measurement", "halved", "_fake_claims:pair_measured",
                     lambda o: lambda: [x / 2 for x in o()]),
    )

    def constants(self, s):
        return {"pair": pair_values()}

    def measure(self, s, run):
        return {"pair": pair_measured()}

    def judge(self, s, pred, m, ctx):
        ctx.close("pair", key="pair", measured=m["pair"], atol=0.01, why="one absolute tolerance")


def bound_stated() -> float:
    return 1.5


def bound_witness() -> float:
    return 1.0


class BoundWithUndecidedZone(Claim):
    """An upper bound K = 1.5 on a constant with a witness 1.0 and a proof of 1.5: K below 1.0
    fails, K from 1.0 up to 1.5 is undecided (not registered: the resolution tests build it)."""

    id = "testonly.resolution.bound"
    title = "an upper bound between a witness and a proof"
    source = "test claim"
    provenance = "derived here"
    statement = "C ≤ 1.5"
    setting_type = PairSetting
    predictions = {"K": Prediction("the stated bound", kind="upper_bound")}
    planted_errors = (
        PlantedError("theory", "halved", "_fake_claims:bound_stated", lambda o: lambda: o() / 2),
        PlantedError("measurement", "doubled", "_fake_claims:bound_witness", lambda o: lambda: 2 * o()),
    )

    def constants(self, s):
        return {"K": bound_stated()}

    def measure(self, s, run):
        return {"witness": bound_witness()}

    def judge(self, s, pred, m, ctx):
        ctx.bound("K bounds C", key="K", certified_lower=m["witness"], proved_upper=1.5,
                  why="a witness refutes, the proof covers")


class SquareMeanAgain(SquareMean):
    """The same claim under a second id (a report run with two light claims)."""

    id = "testonly.square.again"


@dataclass(frozen=True, kw_only=True)
class PlainSetting(Setting):
    k: int = Int(1, min=0, max=10, doc="a number")


class CrashInCheck(Claim):
    """A legacy claim whose check raises: the runner turns it into an internal error."""

    id = "testonly.crash.check"
    title = "crashes inside its check"
    source = "test"
    statement = "0=0"
    setting_type = PlainSetting

    def constants(self, s):
        return {"zero": 0.0}

    def check(self, s, ctx):
        raise RuntimeError("deliberate crash inside the check")


class CrashInConstants(Claim):
    """A legacy claim whose constants raise: an exception outside the runner's boundary."""

    id = "testonly.crash.constants"
    title = "crashes while computing its constants"
    source = "test"
    statement = "0=0"
    setting_type = PlainSetting

    def constants(self, s):
        raise KeyError("deliberate crash in constants")

    def check(self, s, ctx):  # pragma: no cover - never reached
        ctx.condition("never", True, predicted=True, measured=True, why="test")


FAKE_CLAIMS = (SquareMean(), SquareMeanAgain(), CrashInCheck(), CrashInConstants())
