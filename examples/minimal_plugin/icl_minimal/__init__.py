"""A minimal icltheory plugin: E[x²] = σ² for x ~ N(0, σ²), theory against a sample."""

from dataclasses import dataclass

from icltheory.core import Claim, Cost, Float, Int, PlantedError, Prediction, Setting


def second_moment(sigma):  # the theory: the only source of the predicted number
    return sigma**2


def draw(sigma, n, rng):  # the experiment: shares nothing with the theory
    return rng.normal(0.0, sigma, n)


@dataclass(frozen=True, kw_only=True)
class MomentSetting(Setting):
    sigma: float = Float(1.5, positive=True, max=1e3, sample=(0.1, 10.0, "log"),
                         doc="standard deviation σ of the Gaussian")
    n: int = Int(None, min=1000, max=10**7, by_profile=(20_000, 200_000, 2_000_000),
                 doc="samples drawn")


class SecondMoment(Claim):
    id = "minimal.second-moment"
    title = "The second moment of N(0, σ²) is σ²"
    source = "a textbook identity (the minimal plugin example)"
    statement = r"\mathbb E[x^2]=\sigma^2,\qquad x\sim\mathcal N(0,\sigma^2)"
    setting_type = MomentSetting
    predictions = {"m2": Prediction("E[x²] = σ²")}
    planted_errors = (
        PlantedError("theory", "σ in place of σ²", "icl_minimal:second_moment",
                     lambda f: (lambda s: s)),
        PlantedError("measurement", "a sample 5 % too wide", "icl_minimal:draw",
                     lambda f: (lambda s, n, rng: f(1.05 * s, n, rng))),
    )

    def constants(self, s):
        return {"m2": second_moment(s.sigma)}

    def estimate(self, s):
        return Cost(work=20.0 * s.n, memory=16.0 * s.n, what=f"{s.n} samples")

    def measure(self, s, run):
        return {"x2": draw(s.sigma, s.n, run.rng(0)) ** 2}

    def judge(self, s, predicted, m, ctx):
        ctx.ztest("sample mean of x² = σ²", samples=m["x2"], key="m2", alpha=1e-4,
                  why="i.i.d. squares: a two-sided test of their mean at significance 1e-4")


CLAIMS = (SecondMoment(),)
