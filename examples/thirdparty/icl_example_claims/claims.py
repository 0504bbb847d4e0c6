"""The claim: run the experiment, judge it against the theory."""

from __future__ import annotations

import numpy as np

from icltheory.core import Claim, Cost, PlantedError, Prediction

from . import experiments, theory
from .settings import OneStepSetting

__all__ = ["OneStepLoss", "CLAIMS"]

_ALPHA = 1e-4  # family-wise significance of the z-tests (false-fail ≤ 1e-4)


class OneStepLoss(Claim):
    id = "example.onestep.loss"
    title = "One GD step from zero as an in-context learner: L(η) is quadratic, minimised at 1/(λc)"
    source = "textbook computation (Isserlis moments of β); an example third-party claim"
    provenance = "derived here"
    statement = (r"L(\eta)=\lambda D-2\eta\lambda^2D+\eta^2\lambda^3Dc,\quad c=1+\frac{1+D}{N},"
                 r"\quad\eta_\star=\frac1{\lambda c},\quad L(\eta_\star)=\lambda D(1-1/c)")
    setting_type = OneStepSetting
    predictions = {
        "loss": Prediction("L(η) at each η of the setting's grid (η in units of 1/λ)"),
        "eta_star": Prediction("the minimising step η* = 1/(λc)"),
        "loss_star": Prediction("the minimal loss L(η*) = λD(1 − 1/c)"),
        "c": Prediction("c = 1 + (1 + D)/N", informational=True),
    }
    planted_errors = (
        PlantedError("theory", "c with N + 1 in place of N",
                     "icl_example_claims.theory:c_coefficient",
                     lambda orig: (lambda D, N: orig(D, N + 1)),
                     setting={"N": 3}),
        PlantedError("measurement", "β normalised by N + 1 in the sampler",
                     "icl_example_claims.experiments:context_mean",
                     lambda orig: (lambda x, y: orig(x, y) * x.shape[1] / (x.shape[1] + 1)),
                     setting={"N": 3}),
    )

    def constants(self, s: OneStepSetting) -> dict:
        th = theory.theory(s.D, s.N)
        return {"loss": th.loss_at([e / s.lam for e in s.etas], s.lam),
                "eta_star": th.value(th.eta_star, s.lam),
                "loss_star": th.value(th.loss_star, s.lam),
                "c": float(th.c)}

    def derive(self, s: OneStepSetting):
        return theory.theory(s.D, s.N).derivation

    def estimate(self, s: OneStepSetting) -> Cost:
        return Cost(work=6.0 * s.P * (s.N + 1) * s.D,
                    memory=8.0 * min(s.P, 20_000) * (s.N + 1) * (s.D + 1) * 3,
                    what=f"{s.P} sequences of {s.N + 1} tokens")

    def measure(self, s: OneStepSetting, run) -> dict:
        S, S2 = experiments.sample_features(s.D, s.N, s.lam, s.P, run.rng(0), tick=run.tick)
        return {"trS": np.trace(S, axis1=1, axis2=2), "trS2": np.trace(S2, axis1=1, axis2=2)}

    def judge(self, s: OneStepSetting, predicted, m, ctx) -> None:
        # per sequence, averaged exactly over its query and task: E[(y_q − ηf)² | S] =
        # λ(D − 2η tr S + η² tr S²), E[f(y_q − ηf) | S] = λ(tr S − η tr S²)
        trS, trS2 = m["trS"], m["trS2"]
        P = len(trS)
        tests = len(s.etas) + 2

        def loss(eta):
            return s.lam * (s.D - 2 * eta * trS + eta * eta * trS2)

        for i, e in enumerate(s.etas):
            ctx.ztest(f"L(η = {e:g}/λ): Monte Carlo over P={P} sequences",
                      samples=loss(e / s.lam), predicted=predicted["loss"][i],
                      judges=("loss",), alpha=_ALPHA, m_tests=tests)
        es = float(predicted["eta_star"])
        ctx.ztest("dL/dη = 0 at the predicted η*", samples=s.lam * (trS - es * trS2),  # −½ dL/dη
                  predicted=0.0, judges=("eta_star",), alpha=_ALPHA, m_tests=tests)
        err = loss(es)
        ctx.ztest("L(η*) = λD(1 − 1/c)", samples=err, key="loss_star", alpha=_ALPHA,
                  m_tests=tests)
        ctx.measure("loss", [float(np.mean(loss(e / s.lam))) for e in s.etas])
        ctx.measure("loss_at_predicted_eta_star", float(err.mean()))


CLAIMS = (OneStepLoss(),)
