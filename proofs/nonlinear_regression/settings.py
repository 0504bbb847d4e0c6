"""The settings of the nonlinear-regression claims.

Every size that scales with the profile is a key (``by_profile=``, or resolved per profile in
``_resolve`` for lists), and every derived default — step sizes, horizons, the L values around
the summary's threshold, the second run's step of the rescaling — is resolved here by the rules
of :mod:`.rules` (which read the theory), so the recorded setting is exactly what ran.  A rule
that cannot produce a usable number (coinciding features, a step outside the float range) is a
:class:`~icltheory.core.SettingError` naming the key to set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icltheory.backends import BACKEND_NAMES, get_backend
from icltheory.core import (Choice, Float, Floats, Int, NumericalTrouble, Setting, SettingError,
                            lazy_module)

rules = lazy_module("proofs.nonlinear_regression.rules")
theory = lazy_module("proofs.nonlinear_regression.theory")

__all__ = ["TASK_NAMES", "RescalingSetting", "SweepSetting", "FastRateSetting",
           "ThresholdSetting", "IsotropicSetting", "AsymptoteSetting", "OscillationSetting",
           "FinalAttentionSetting", "RegimesSetting", "LemmaSetting", "SinglePhaseSetting",
           "LemmaRateSetting", "TableSetting", "ARCHITECTURES"]

#: the task families (experiments.tasks.TASKS; a test checks they agree)
TASK_NAMES = ("linear", "sin", "relu")
MAX_K, MAX_D, MAX_N, MAX_PROMPTS, MAX_STEPS = 64, 256, 1024, 100_000, 10**9
MAX_DRAWS = 10_000_000
#: the two models a summary claim can be judged in (the ``architecture`` key)
ARCHITECTURES = ("paper", "summary")
ARCHITECTURE_DOC = ("paper: the paper's model (one softmax layer, only the merged key–query "
                    "matrix Q trained, values = the labels); summary: the blog summary's model "
                    "(W_Q, W_K, W_V, output w and bias b all trained, values W_V z_j, tokens "
                    "z_j = (x_j, y_j)), trained by full-batch GD on finite prompts")


def _derived(key: str, fn, *args):
    """Evaluate a rule; numerical trouble in it is bad input naming the key to set."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args)
    except SettingError:
        raise
    except (ArithmeticError, ValueError, NumericalTrouble) as exc:
        raise SettingError(key, f"its default cannot be derived here ({exc}); set it") from None


def _thresholds(values, K: int, key: str) -> None:
    for th in values:
        if not (1.0 / K < th < 1.0):
            raise SettingError(key, f"attention thresholds must lie in (1/K, 1) = "
                                    f"({1.0 / K:.3g}, 1), got {th:g}")


def _over_L2(etaL2: float, L: float, key: str = "L") -> float:
    """The step η = (ηL²)/L² of a rule; outside the float range it is bad input naming ``key``."""
    L2 = L * L
    eta = etaL2 / L2 if L2 > 0 else math.inf
    if not (math.isfinite(eta) and eta > 0):
        raise SettingError(key, f"the derived step (ηL²)/L² = {etaL2:.3g}/{L:.3g}² is outside the "
                                "float64 range")
    return eta


def _step_and_horizon(s, *, theta: float, until: float, factor: float, c_max: float = 1.0,
                      c_fast: float = 1.0, c_until: float = 1.0, stiffness: float | None = None,
                      extra: int = 50) -> None:
    """Resolve ``eta`` (the small-step rule for ``theta``) and ``steps`` (``factor`` × the flow
    time to ``until`` at the curvature ``c_until``) when they were not given."""
    if s.eta is None:
        S = rules.MAX_STIFFNESS if stiffness is None else stiffness
        s._set("eta", _over_L2(_derived("eta", rules.small_step, s.K, theta, s.min_steps, c_max,
                                        c_fast, S), s.L))
    rules.check_eta_L2(s.eta, s.L)
    if s.steps is None:
        H = _derived("steps", rules.horizon, s.K, until, s.eta * s.L**2 * c_until, factor, extra)
        s._set("steps", _cap(H, "steps"))


def _cap(value: float, key: str) -> int:
    if not value <= MAX_STEPS:
        raise SettingError(key, f"the derived horizon ({value:.3g} steps) exceeds {MAX_STEPS}; "
                                "set a larger step size")
    return int(value)


@dataclass(frozen=True, kw_only=True)
class _Tasks(Setting):
    """Keys of every claim: the task family and the number of features."""

    task: str = Choice("linear", TASK_NAMES, sample=True,
                       doc="task family g (f = L·g, g 1-Lipschitz): linear | sin | relu")
    K: int = Int(8, min=2, max=MAX_K, sample=(5, 12), doc="number of features")


def _scale():
    """The key ``L`` (declared by the claims that run at one scale)."""
    return Float(1.0, positive=True, max=1e100, sample=(0.5, 4.0, "log"),
                 doc="Lipschitz scale L of the tasks f = L·g")


@dataclass(frozen=True, kw_only=True)
class _Population(_Tasks):
    """Model A keys: the relu Monte Carlo."""

    cov_draws: int | None = Int(None, min=1000, max=MAX_DRAWS,
                                by_profile=(20_000, 100_000, 400_000),
                                doc="Monte Carlo draws of the relu task covariance")


@dataclass(frozen=True, kw_only=True)
class _Resolved(_Population):
    """Model A with a derived step: the resolution of the time axis."""

    min_steps: int | None = Int(None, min=1, max=100_000, by_profile=(20, 20, 40),
                                doc="GD steps the first judged threshold must take at least "
                                    "(time resolution; sets the default step η)")
    stiffness: float | None = Float(None, positive=True, max=0.5, by_profile=(0.4, 0.1, 0.025),
                                    doc="the stiffness of GD on the flow the default step may "
                                        "reach (its fidelity to the flow; ≤ 0.5)")


@dataclass(frozen=True, kw_only=True)
class _Prompts(_Tasks):
    """Model B keys: K random unit features in R^d, ``prompts`` prompts of N noisy tokens."""

    d: int | None = Int(None, min=1, max=MAX_D, doc="token dimension (default 2K)")
    N: int = Int(64, min=1, max=MAX_N, doc="context tokens per prompt")
    noise: float = Float(0.02, min=0.0, max=10.0, doc="token noise σ: x = v + σξ/√d")
    prompts: int | None = Int(None, min=1, max=MAX_PROMPTS, by_profile=(200, 2000, 8000),
                              doc="fixed training prompts")
    backend: str = Choice("numpy", BACKEND_NAMES,
                          doc="array backend of model B's trainer (torch: float64, CUDA when "
                              "present; an optional extra)")

    def _resolve(self) -> None:
        if self.d is None:
            self._set("d", 2 * self.K)
        super()._resolve()

    def _validate(self) -> None:
        super()._validate()
        if self.backend != "numpy":
            get_backend(self.backend)  # an unavailable optional backend is a setting error
            models = getattr(self, "model_list", (getattr(self, "model", "B"),))
            if "B" not in models:
                raise SettingError("backend", f"{self.backend!r} runs model B (finite prompts); "
                                              "model A is a small population computation on numpy")

    def _pilot(self) -> tuple[float, float, float]:
        return _derived("d", rules.pilot_B, self.K, self.d, self.N, self.noise, self.task,
                        self.prompts, self.seed)


# ----------------------------------------------------------------------------- the summary's model


def _architecture(default: str) -> Choice:
    return Choice(default, ARCHITECTURES, sample=True, doc=ARCHITECTURE_DOC)


@dataclass(frozen=True, kw_only=True)
class _SummaryModel(Setting):
    """Keys of the summary's architecture (recorded whatever the architecture; used only with
    ``architecture=summary``)."""

    width: int | None = Int(None, min=1, max=MAX_D + 1,
                            doc="summary's model: rows m of W_Q, W_K, W_V (default: the token "
                                "dimension d + 1)")
    init_scale: float = Float(1.0, positive=True, max=100.0,
                              doc="summary's model: initial weights uniform on ±init_scale/"
                                  "√fan-in (1 = PyTorch nn.Linear's default, as in the "
                                  "summary's code)")
    step_fraction: float | None = Float(None, positive=True, max=1.9,
                                        by_profile=(0.3, 0.3, 0.2),
                                        doc="summary's model: the default step η as a fraction "
                                            "of 1/(the loss's sharpness at initialisation, at "
                                            "the largest L)")

    def _summary_width(self, d: int) -> None:
        if self.width is None:
            self._set("width", d + 1)


@dataclass(frozen=True, kw_only=True)
class _SummaryPrompts(_SummaryModel):
    """The summary's model on finite prompts of noiseless tokens on orthonormal features (the
    finite-prompt counterpart of model A; used with ``architecture=summary``)."""

    N: int = Int(32, min=2, max=MAX_N,
                 doc="summary's model: context tokens per prompt (its prompts: noiseless tokens "
                     "on K orthonormal features, labels normalised as in model A)")
    prompts: int | None = Int(None, min=16, max=MAX_PROMPTS, by_profile=(256, 256, 1024),
                              doc="summary's model: fixed training prompts (with fewer than "
                                  "≈ 32 per feature its readout memorises per-feature label "
                                  "means through W_V x and the attention on those features "
                                  "stalls: at K = 8 it stayed at 0.84 with 64 prompts, and with "
                                  "128 on 2 of 4 seeds; 256 reached 0.97 on every seed tried)")

    def _summary_eta(self, L: float) -> float:
        self._summary_width(self.K)
        return _derived("eta", rules.summary_step, self.step_fraction, "orthonormal", self.K,
                        self.K, self.N, 0.0, self.task, self.prompts, self.width,
                        self.init_scale, L, self.cov_draws, self.seed)

    def _summary_step_and_horizon(self, L: float, until: float, factor: float) -> None:
        """η from the pilot's sharpness; the cap ``factor`` × the paper model's isotropic flow
        time to ``until`` at the same ηL² (see :mod:`.rules`: the summary's model took 0.1–0.35×
        the flow's time to attention 0.9–0.98 on every run tried))."""
        if self.eta is None:
            self._set("eta", self._summary_eta(L))
        rules.check_eta_L2(self.eta, L)
        if self.steps is None:
            H = _derived("steps", rules.horizon, self.K, until, self.eta * L**2, factor)
            self._set("steps", _cap(H, "steps"))


# ----------------------------------------------------------------------------- rescaling


@dataclass(frozen=True, kw_only=True)
class RescalingSetting(_Prompts):
    """Two runs, (η, L) and (η', L'), on one problem (model A covariance or model B prompts)."""

    model: str = Choice("B", ("A", "B"), sample=True,
                        doc="A: exact population model; B: finite prompts")
    task: str = Choice("sin", TASK_NAMES, sample=True,
                       doc="task family g (f = L·g, g 1-Lipschitz): linear | sin | relu")
    L: float = Float(2.0, positive=True, max=1e100, sample=(0.5, 4.0, "log"),
                     doc="scale L of the first run")
    L_prime: float = Float(1.0, positive=True, max=1e100, sample=(0.5, 4.0, "log"),
                           doc="scale L' of the second run")
    eta: float = Float(50.0, positive=True, max=1e300, doc="step η of the first run")
    eta_prime: float | None = Float(None, positive=True, max=1e300,
                                    doc="step η' of the second run (default: the theory's "
                                        "equivalent step η(L/L')²)")
    steps: int | None = Int(None, min=1, max=100_000, by_profile=(50, 200, 800),
                            doc="GD steps of both runs")
    prompts: int | None = Int(None, min=1, max=MAX_PROMPTS, by_profile=(200, 2000, 8000),
                              doc="fixed training prompts (model B)")
    cov_draws: int | None = Int(None, min=1000, max=MAX_DRAWS,
                                by_profile=(20_000, 100_000, 400_000),
                                doc="Monte Carlo draws of the relu task covariance (model A)")

    def _resolve(self) -> None:
        if self.d is None:
            self._set("d", self.K if self.model == "A" else 2 * self.K)
        rules.check_eta_L2(self.eta, self.L)
        if self.eta_prime is None:
            ep = _derived("eta_prime", theory.theory().equivalent_step, self.eta, self.L,
                          self.L_prime)
            if not (math.isfinite(ep) and ep > 0):
                raise SettingError("L_prime", f"the equivalent step η(L/L')² = {ep:.3g} is "
                                              "outside the float64 range")
            self._set("eta_prime", ep)
        else:  # the claim compares the runs at the equivalent step only: another step is another claim
            ep = float(self.eta) * (float(self.L) / float(self.L_prime)) ** 2
            if not abs(float(self.eta_prime) - ep) <= 1e-12 * ep:
                raise SettingError("eta_prime", f"the second run's step must be the equivalent step "
                                                f"η(L/L')² = {ep!r} (the claim compares the runs there; to "
                                                "test another rule use --predict eta_exponent)")
        rules.check_eta_L2(self.eta_prime, self.L_prime, "L_prime")

    def _validate(self) -> None:
        super()._validate()
        if self.model == "A" and self.d < self.K:
            raise SettingError("d", f"model A uses K orthonormal features: needs d ≥ K={self.K}")


# ----------------------------------------------------------------------------- L sweeps


@dataclass(frozen=True, kw_only=True)
class SweepSetting(_Prompts):
    """Threshold times over L at fixed η, in model A (population) and/or model B (prompts).
    Without ``eta_A``/``eta_B`` each model's step is the small-step rule's for the n = min(3, #L)
    smallest L; without ``steps_A``/``steps_B`` the cap is 1.2× the flow time of the slowest run
    to the highest threshold (A) or 3.5× it at model B's first-step curvature (B; the caps of larger
    L scale as 1/L, the times as 1/L²); runs stop once they have reached it."""

    models: str = Choice("A+B", ("A+B", "A", "B"), sample=True,
                         doc="A: population model; B: finite prompts; A+B: both")
    Ls: tuple = Floats((0.5, 1.0, 2.0, 4.0), positive=True, max=1e100, max_len=16,
                       doc="the L values of the sweep")
    thetas_A: tuple | None = Floats(None, positive=True, max_len=16,
                                    doc="model A's attention thresholds θ (default by profile: "
                                        "0.5,0.9 | 0.5,0.9,0.99 | 0.5,0.9,0.95,0.99)")
    thetas_B: tuple | None = Floats(None, positive=True, max_len=16,
                                    doc="model B's attention thresholds θ (default by profile: "
                                        "0.5 | 0.5,0.8,0.9 | 0.5,0.8,0.9,0.95)")
    prompts: int | None = Int(None, min=1, max=MAX_PROMPTS, by_profile=(32, 250, 1000),
                              doc="fixed training prompts (model B)")
    min_steps: int | None = Int(None, min=1, max=100_000, by_profile=(20, 20, 40),
                                doc="GD steps the lowest threshold must take at least at the "
                                    "n smallest L (sets the default steps)")
    eta_A: float | None = Float(None, positive=True, max=1e300, doc="model A's step η")
    eta_B: float | None = Float(None, positive=True, max=1e300, doc="model B's step η")
    steps_A: int | None = Int(None, min=1, max=MAX_STEPS, doc="model A's step cap")
    steps_B: int | None = Int(None, min=1, max=MAX_STEPS, doc="model B's step cap")
    cov_draws: int | None = Int(None, min=1000, max=MAX_DRAWS,
                                by_profile=(20_000, 100_000, 400_000),
                                doc="Monte Carlo draws of the relu task covariance (model A)")

    _THETAS_A = ((0.5, 0.9), (0.5, 0.9, 0.99), (0.5, 0.9, 0.95, 0.99))
    _THETAS_B = ((0.5,), (0.5, 0.8, 0.9), (0.5, 0.8, 0.9, 0.95))

    @property
    def model_list(self) -> tuple[str, ...]:
        return ("A", "B") if self.models == "A+B" else (self.models,)

    def _default_thetas(self, table) -> tuple:
        vals = table[("quick", "standard", "thorough").index(self.profile)]
        th = tuple(x for x in vals if x > 1.0 / self.K)  # K = 2 starts at 0.5
        return th or ((1.0 + 1.0 / self.K) / 2,)

    def _resolve(self) -> None:
        super()._resolve()
        if len(set(self.Ls)) < 2:
            raise SettingError("Ls", "a slope needs at least two distinct L values")
        for m in self.model_list:
            key = f"thetas_{m}"
            if getattr(self, key) is None:
                self._set(key, self._default_thetas(self._THETAS_A if m == "A" else self._THETAS_B))
            _thresholds(getattr(self, key), self.K, key)
            self._resolve_model(m)

    def _resolve_model(self, m: str) -> None:
        th = getattr(self, f"thetas_{m}")
        Lu = sorted(set(self.Ls))
        n = min(3, len(Lu))
        if m == "A":
            c_min = c_max = c_fast = 1.0
        else:
            c_min, c_max, c_fast = self._pilot()
        if getattr(self, f"eta_{m}") is None:
            etaL2 = _derived(f"eta_{m}", rules.small_step, self.K, min(th), self.min_steps,
                             c_max, c_fast)
            self._set(f"eta_{m}", _over_L2(etaL2, Lu[n - 1], "Ls"))
        eta = getattr(self, f"eta_{m}")
        for L in Lu:
            rules.check_eta_L2(eta, L, "Ls")
        if getattr(self, f"steps_{m}") is None:
            # model A: 1.2× the exact flow time (GD lags it by a few steps); model B: a multiple
            # of the flow time at its first-step curvature that grows with the spread of its
            # pair curvatures (the late approach to max θ is held back by the weakest pair).
            # Measured on the run's own features (seeds 0–9, quick and standard, max θ 0.5 / 0.9)
            # model B took 1.5–7.9× that flow time, ≈ 1.2·(c_fast/c_min)^0.4 (within 0.56–1.68×);
            # 2·(c_fast/c_min)^½, at least 5, covers every run by ≥ 1.4×
            c, factor = (1.0, 1.2) if m == "A" else (c_fast, max(5.0, 2.0 * math.sqrt(c_fast / c_min)))
            H = _derived(f"steps_{m}", rules.horizon, self.K, max(th), eta * c * Lu[0] ** 2,
                         factor)
            self._set(f"steps_{m}", _cap(H, f"steps_{m}"))


@dataclass(frozen=True, kw_only=True)
class FastRateSetting(SweepSetting, _SummaryModel):
    """The summary's fast phase: the time to attention 0.5 only, in the paper's models A/B or in
    the summary's model (its runs: model B's prompts, one initial draw of the weights shared by
    every L; the default cap of the smallest L is 4× the paper flow's time to max θ at model B's
    first-step curvature, of which the summary's model needed 2.7× at K = 8, sin, L = 1)."""

    architecture: str = _architecture("paper")
    Ls: tuple | None = Floats(None, positive=True, max=1e100, max_len=16,
                              doc="the L values of the sweep (default 0.5,1,2,4; 1,2,4 in the "
                                  "summary's model, whose step is capped by its bias's "
                                  "curvature 2 whatever L: at fixed η an L = 0.5 run would take "
                                  "4× the L = 1 run's steps)")
    prompts: int | None = Int(None, min=1, max=MAX_PROMPTS,
                              doc="fixed training prompts (default by profile: 32 | 250 | 1000 "
                                  "for model B, 64 | 64 | 256 for the summary's model, whose "
                                  "every L runs thousands of steps)")
    thetas_S: tuple | None = Floats(None, positive=True, max_len=16,
                                    doc="the summary's model's attention thresholds (default 0.5)")
    eta_S: float | None = Float(None, positive=True, max=1e300,
                                doc="the summary's model's step η (default: step_fraction / the "
                                    "sharpness at initialisation at the largest L)")
    steps_S: int | None = Int(None, min=1, max=MAX_STEPS,
                              doc="the summary's model's step cap at the smallest L (the others "
                                  "scale as 1/L)")

    _THETAS_A = ((0.5,),) * 3
    _THETAS_B = ((0.5,),) * 3

    @property
    def model_list(self) -> tuple[str, ...]:
        if self.architecture == "summary":
            return ("S",)
        return super().model_list

    def _resolve(self) -> None:
        summary = self.architecture == "summary"
        if self.Ls is None:
            self._set("Ls", (1.0, 2.0, 4.0) if summary else (0.5, 1.0, 2.0, 4.0))
        if self.prompts is None:
            i = ("quick", "standard", "thorough").index(self.profile)
            self._set("prompts", ((64, 64, 256) if summary else (32, 250, 1000))[i])
        if self.d is None:
            self._set("d", 2 * self.K)
        self._summary_width(self.d)
        super()._resolve()

    def _resolve_model(self, m: str) -> None:
        if m != "S":
            super()._resolve_model(m)
            return
        Lu = sorted(set(self.Ls))
        if self.eta_S is None:
            self._set("eta_S", _derived("eta_S", rules.summary_step, self.step_fraction, "random",
                                        self.K, self.d, self.N, self.noise, self.task,
                                        self.prompts, self.width, self.init_scale, Lu[-1],
                                        rules.PILOT_COV_DRAWS, self.seed))
        for L in Lu:
            rules.check_eta_L2(self.eta_S, L, "Ls")
        if self.steps_S is None:
            _, _, c_fast = self._pilot()
            H = _derived("steps_S", rules.horizon, self.K, max(self.thetas_S),
                         self.eta_S * c_fast * Lu[0] ** 2, 4.0)
            self._set("steps_S", _cap(H, "steps_S"))

    def _validate(self) -> None:
        if self.architecture == "summary" and self.backend != "numpy":
            raise SettingError("backend", "the summary's model runs on numpy only")
        super()._validate()


@dataclass(frozen=True, kw_only=True)
class ThresholdSetting(_Resolved):
    """The L² T collapse across the summary's L* = √(d/n), in model A (paper's architecture;
    with ``architecture=summary`` nothing is run: see the claim)."""

    architecture: str = _architecture("paper")

    d: int | None = Int(None, min=1, max=MAX_D, doc="dimension d in the summary's L* = √(d/n) "
                                                      "(default 2K)")
    N: int = Int(64, min=1, max=MAX_N, doc="sample size n in the summary's L* = √(d/n)")
    theta: float = Float(0.9, positive=True, doc="attention threshold θ of the timed phase")
    Ls: tuple | None = Floats(None, positive=True, max=1e100, max_len=16,
                              doc="the L values (default L*·(1/4, 1/2, 1, 2, 4))")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η (default: the small-step rule at the 3 smallest L; "
                                  "paper's model only)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS, doc="step cap (default: 1.5× the flow "
                                                              "time of the slowest run; paper's "
                                                              "model only)")

    def _resolve(self) -> None:
        if self.d is None:
            self._set("d", 2 * self.K)
        _thresholds((self.theta,), self.K, "theta")
        if self.Ls is None:
            Ls = _derived("Ls", theory.theory().summary_L_star, self.d, self.N)
            self._set("Ls", tuple(Ls * f for f in (0.25, 0.5, 1.0, 2.0, 4.0)))
        Lu = sorted(set(self.Ls))
        if len(Lu) < 2:
            raise SettingError("Ls", "a slope needs at least two distinct L values")
        if self.architecture == "summary":
            return  # nothing runs in the summary's model: no step or cap to derive
        if self.eta is None:
            self._set("eta", _over_L2(_derived("eta", rules.small_step, self.K, self.theta,
                                               self.min_steps, 1.0, 1.0, self.stiffness),
                                      Lu[min(3, len(Lu)) - 1], "Ls"))
        for L in Lu:
            rules.check_eta_L2(self.eta, L, "Ls")
        if self.steps is None:
            H = _derived("steps", rules.horizon, self.K, self.theta, self.eta * Lu[0] ** 2, 1.5)
            self._set("steps", _cap(H, "steps"))


# ----------------------------------------------------------------------------- isotropic


@dataclass(frozen=True, kw_only=True)
class IsotropicSetting(_Resolved):
    """Model A on K orthonormal features (C = cI after normalisation, c = L²)."""

    L: float = _scale()

    deltas: tuple = Floats((0.01, 0.005), positive=True, max=0.01, max_len=8,
                           doc="late-phase gaps δ (attention 1 − δ), each ≤ 0.01")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η (default: the small-step rule for 1 − max δ)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS,
                            doc="step cap (default: 3× the flow time to 1 − min(δ, 0.005); the "
                                "run stops once it is reached)")

    def _resolve(self) -> None:
        if len(set(self.deltas)) < 2:
            raise SettingError("deltas", "a local slope needs at least two distinct δ")
        _step_and_horizon(self, theta=1 - max(self.deltas), until=1 - min(min(self.deltas), 0.005),
                          factor=3.0, stiffness=self.stiffness)


@dataclass(frozen=True, kw_only=True)
class AsymptoteSetting(IsotropicSetting):
    """Also the first phase over K: one run per K to attention 0.5, each with its own step."""

    Ks: tuple = Floats((4, 8, 16, 32), positive=True, max=MAX_K, max_len=8,
                       doc="K values of the T(0.5) sweep")
    Ks_eta: tuple | None = Floats(None, positive=True, max=1e300, max_len=8,
                                  doc="the step of each K's run (default: the small-step rule)")
    Ks_steps: tuple | None = Floats(None, positive=True, max=MAX_STEPS, max_len=8,
                                    doc="the step cap of each K's run (default: 3× its flow "
                                        "time to 0.5; the runs stop at 0.5)")

    def _resolve(self) -> None:
        super()._resolve()
        for k in self.Ks:
            if k != int(k) or k < 3:
                raise SettingError("Ks", f"each K must be an integer ≥ 3 (at K = 2 the attention starts at "
                                         f"1/K = 0.5: no first phase to time), got {k:g}")
        if self.Ks_eta is None:
            self._set("Ks_eta", tuple(
                _over_L2(_derived("Ks_eta", rules.small_step, int(k), 0.5, self.min_steps, 1.0, 1.0,
                         self.stiffness), self.L)
                for k in self.Ks))
        if self.Ks_steps is None:
            self._set("Ks_steps", tuple(
                float(_cap(_derived("Ks_steps", rules.horizon, int(k), 0.5, e * self.L**2, 3.0),
                           "Ks_steps")) for k, e in zip(self.Ks, self.Ks_eta)))
        for key in ("Ks_eta", "Ks_steps"):
            if len(getattr(self, key)) != len(self.Ks):
                raise SettingError(key, f"needs one value per K ({len(self.Ks)})")
        for e in self.Ks_eta:
            rules.check_eta_L2(e, self.L, "Ks_eta")
        if any(x != int(x) for x in self.Ks_steps):
            raise SettingError("Ks_steps", "step caps are whole numbers")


@dataclass(frozen=True, kw_only=True)
class LemmaSetting(_Resolved, _SummaryPrompts):
    """The summary's exponential-rise lemma: times to three attention levels, in the paper's
    population model A or in the summary's model on finite prompts."""

    architecture: str = _architecture("paper")
    L: float = _scale()
    deltas: tuple | None = Floats(None, positive=True, max=0.5, max_len=3,
                                  doc="three gaps 1 − α (decreasing) whose crossing times are "
                                      "compared (default 0.1,0.03,0.01 in the paper's model; "
                                      "0.3,0.1,0.03 in the summary's, whose step is capped by "
                                      "its readout's curvature: 1 − α = 0.01 is out of reach "
                                      "there, and these gaps keep the exponential law's ratio "
                                      "(≈ 1.1) 10× from a t^(−1/2) law's (≈ 11))")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η (default: the paper model's small-step rule for "
                                  "the first gap; the summary's model: step_fraction/sharpness)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS,
                            doc="step cap (default: 3× the paper model's flow time to the last "
                                "gap at the run's ηL², ½× in the summary's model, which is "
                                "faster; the run stops once it is reached)")

    def _resolve(self) -> None:
        if self.deltas is None:
            self._set("deltas", (0.1, 0.03, 0.01) if self.architecture == "paper"
                      else (0.3, 0.1, 0.03))
        if len(self.deltas) != 3 or not self.deltas[0] > self.deltas[1] > self.deltas[2]:
            raise SettingError("deltas", "needs three strictly decreasing gaps")
        _thresholds([1 - x for x in self.deltas], self.K, "deltas")
        self._summary_width(self.K)
        if self.architecture == "paper":
            _step_and_horizon(self, theta=1 - self.deltas[0], until=1 - self.deltas[2],
                              factor=3.0, stiffness=self.stiffness)
        else:
            self._summary_step_and_horizon(self.L, 1 - self.deltas[2], 0.5)


@dataclass(frozen=True, kw_only=True)
class SinglePhaseSetting(_Resolved, _SummaryPrompts):
    """The summary's "linear ICL converges in a single phase": linear tasks, in the paper's
    population model A or in the summary's model on finite prompts."""

    architecture: str = _architecture("paper")
    L: float = _scale()
    task: str = Choice("linear", ("linear",), doc="the summary's statement is about linear tasks")
    theta: float = Float(0.5, min=0.0, max=0.99, doc="the attention that ends the fast phase")
    delta: float | None = Float(None, positive=True, max=0.1,
                                doc="the late gap 1 − α whose crossing time is compared with "
                                    "θ's (default 0.01 in the paper's model; 0.02 in the "
                                    "summary's, the deepest its capped step reaches within the "
                                    "profile's budget; one exponential phase then predicts a "
                                    "ratio ≈ 9× a t^(−1/2) phase's)")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η (default: the paper model's small-step rule for "
                                  "θ; the summary's model: step_fraction/sharpness)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS,
                            doc="step cap (default: 2× the paper model's flow time to 1 − δ at "
                                "the run's ηL²; ½× in the summary's model, which is faster)")

    def _resolve(self) -> None:
        if self.delta is None:
            self._set("delta", 0.01 if self.architecture == "paper" else 0.02)
        _thresholds((self.theta, 1 - self.delta), self.K, "theta")
        if not self.theta < 1 - self.delta:
            raise SettingError("delta", "the late level 1 − δ must lie above θ")
        self._summary_width(self.K)
        if self.architecture == "paper":
            _step_and_horizon(self, theta=self.theta, until=1 - self.delta, factor=2.0,
                              stiffness=self.stiffness)
        else:
            self._summary_step_and_horizon(self.L, 1 - self.delta, 0.5)


@dataclass(frozen=True, kw_only=True)
class LemmaRateSetting(_Resolved, _SummaryPrompts):
    """The summary's early-phase lemma itself: the rate of the relevant attention against
    ησ′(Δ)Δ(1 − α), along the early phase (from the start to attention ``theta_end``)."""

    architecture: str = _architecture("paper")
    L: float = _scale()
    theta_end: float = Float(0.5, min=0.0, max=0.9,
                             doc="the attention that ends the early phase (the fast phase of "
                                 "nonlinear.two-phase)")
    fractions: tuple = Floats((1 / 3, 2 / 3, 1.0), positive=True, max=1.0, max_len=8,
                              doc="judged points: the steps at which the mean attention has "
                                  "covered these fractions of the way from its initial value "
                                  "to theta_end")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η (default: the paper model's small-step rule for "
                                  "theta_end; the summary's model: step_fraction/sharpness)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS,
                            doc="step cap (default: 3× the paper model's flow time to "
                                "theta_end at the run's ηL², 1.5× in the summary's model, which is "
                                "faster; the run stops one step after it)")

    def _resolve(self) -> None:
        _thresholds((self.theta_end,), self.K, "theta_end")
        self._summary_width(self.K)
        if self.architecture == "paper":
            _step_and_horizon(self, theta=self.theta_end, until=self.theta_end, factor=3.0,
                              stiffness=self.stiffness)
        else:
            self._summary_step_and_horizon(self.L, self.theta_end, 1.5)


@dataclass(frozen=True, kw_only=True)
class TableSetting(_Prompts, _SummaryModel):
    """The summary's experiment table: for each of ``seeds`` independent draws (features,
    prompts, initial weights), every L of the table trained at one step η for one budget of
    steps; per seed and L the final relevant attention and the time to attention θ."""

    architecture: str = _architecture("summary")
    task: str = Choice("sin", TASK_NAMES, sample=True,
                       doc="task family g (f = L·g, g 1-Lipschitz): linear | sin | relu")
    K: int = Int(3, min=2, max=MAX_K, sample=(3, 5),
                 doc="number of features (3, 12 tokens: a prompt of about the size of the "
                     "summary's experiment, 15 tokens of two kinds)")
    N: int = Int(12, min=2, max=MAX_N, doc="context tokens per prompt")
    prompts: int | None = Int(None, min=16, max=MAX_PROMPTS, by_profile=(48, 64, 128),
                              doc="fixed training prompts per seed (the summary's model "
                                  "memorises per-feature label means with few prompts per "
                                  "feature: at K = 4 with 32 prompts 2 of 16 seeds stalled)")
    Ls: tuple | None = Floats(None, positive=True, max=1e100, max_len=8,
                              doc="the L values (default: the summary's table, 0.5,1,2,5)")
    seeds: int | None = Int(None, min=4, max=256, by_profile=(16, 16, 32),
                            doc="independent draws (features, prompts, initial weights) of the "
                                "sign tests (a pair fails at its level 1.5e-4 only with ≥ 13 "
                                "seeds; it holds at its level 0.01 with at most 2 of 16 seeds "
                                "against; the summary's model stalled at some L on about 1 in "
                                "16 draws tried)")
    theta: float = Float(0.5, positive=True, max=0.99,
                         doc="the attention whose crossing time measures convergence speed")
    min_steps: int = Int(20, min=1, max=100_000,
                         doc="paper's model: GD steps to θ at least at the largest L (sets η)")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η of every run (default: the paper model's small-step "
                                  "rule at the largest L; the summary's model: step_fraction / "
                                  "its sharpness at initialisation at the largest L)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS,
                            doc="the training budget of every run (default: the paper flow's "
                                "time to θ at the second-smallest L, at model B's first-step "
                                "curvature, × 2 in the paper's model (which needed 0.5–1.25× "
                                "of it at K = 3) and × 1.25 in the summary's (which needed "
                                "0.35–1.07× of it))")

    def _resolve(self) -> None:
        super()._resolve()
        if self.Ls is None:
            self._set("Ls", theory.theory().table_Ls)
        Lu = sorted(set(self.Ls))
        if len(Lu) < 2:
            raise SettingError("Ls", "a trend needs at least two distinct L values")
        _thresholds((self.theta,), self.K, "theta")
        self._summary_width(self.d)
        _, c_max, c_fast = self._pilot()
        if self.eta is None:
            if self.architecture == "paper":
                etaL2 = _derived("eta", rules.small_step, self.K, self.theta, self.min_steps,
                                 c_max, c_fast)
                self._set("eta", _over_L2(etaL2, Lu[-1], "Ls"))
            else:
                self._set("eta", _derived("eta", rules.summary_step, self.step_fraction, "random",
                                          self.K, self.d, self.N, self.noise, self.task,
                                          self.prompts, self.width, self.init_scale, Lu[-1],
                                          rules.PILOT_COV_DRAWS, self.seed))
        for L in Lu:
            rules.check_eta_L2(self.eta, L, "Ls")
        if self.steps is None:
            factor = 2.0 if self.architecture == "paper" else 1.25  # see the key's doc
            H = _derived("steps", rules.horizon, self.K, self.theta,
                         self.eta * c_fast * Lu[1] ** 2, factor, 0)
            self._set("steps", _cap(H, "steps"))

    def _validate(self) -> None:
        if self.architecture == "summary" and self.backend != "numpy":
            raise SettingError("backend", "the summary's model runs on numpy only")
        super()._validate()


# ----------------------------------------------------------------------------- near-duplicates


@dataclass(frozen=True, kw_only=True)
class OscillationSetting(_Resolved):
    """Model A on orthonormal features except v₂ = ρv₁ + √(1−ρ²)e₂."""

    L: float = _scale()

    K: int = Int(8, min=3, max=MAX_K, sample=(5, 12),
                 doc="number of features (≥ 3: a near-duplicate pair and a far query)")
    task: str = Choice("sin", TASK_NAMES, sample=True,
                       doc="task family g (f = L·g, g 1-Lipschitz): linear | sin | relu")
    d: int | None = Int(None, min=2, max=MAX_D, doc="token dimension (default K; ≥ K)")
    overlap: float = Float(0.9, min=0.9, max=0.999,
                           doc="ρ in v₂ = ρv₁ + √(1−ρ²)e₂ (≥ 0.9: the claim concerns a near-"
                               "duplicate; its slowdown > 50 needs ρ ≳ 0.85)")
    theta: float = Float(0.9, min=0.9, max=0.999,
                         doc="attention threshold of the slowdown ratio (≥ 0.9, as stated)")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η (default: the small-step rule with the strongest "
                                  "pair's curvature, for the far queries' θ)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS,
                            doc="step cap (default: the flow time to θ with the close pair's "
                                "curvature; the run stops once the pair has settled)")

    def _resolve(self) -> None:
        if self.K < 3:
            raise SettingError("K", "needs K ≥ 3: a near-duplicate pair and a far query")
        if self.d is None:
            self._set("d", self.K)
        if self.d < self.K:
            raise SettingError("d", f"orthonormal features need d ≥ K={self.K}")
        _thresholds((self.theta,), self.K, "theta")
        c_pair, c_max = _derived("overlap", rules.near_duplicate_curvatures, self.K, self.d,
                                 self.overlap, self.task, self.cov_draws, self.seed)
        steps_given = self.steps is not None
        try:
            _step_and_horizon(self, theta=self.theta, until=self.theta, factor=1.0, c_max=c_max,
                              c_fast=c_max, c_until=c_pair, stiffness=self.stiffness)
        except SettingError as exc:
            if exc.key != "steps" or steps_given:
                raise
            # the horizon is long because the pair is close: the key to change is the overlap
            raise SettingError("overlap", f"ρ = {self.overlap:g} makes the near-duplicate pair's "
                                          f"curvature {c_pair:.3g} (the fastest {c_max:.3g}): "
                                          f"{exc.problem.split(';')[0]}; lower overlap, or set "
                                          "eta and steps") from None


# ----------------------------------------------------------------------------- final state


@dataclass(frozen=True, kw_only=True)
class FinalAttentionSetting(_Prompts):
    """Model B trained until it has converged on its training prompts (or the step cap); the
    per-prompt attention is then measured on held-out prompts."""

    L: float = _scale()

    task: str = Choice("sin", TASK_NAMES, sample=True,
                       doc="task family g (f = L·g, g 1-Lipschitz): linear | sin | relu")
    target: float = Float(0.95, min=0.95, max=0.999,
                          doc="the attention the derived step and horizon aim at (an experiment "
                              "knob, not the claim's bound)")
    min_steps: int = Int(20, min=1, max=100_000,
                         doc="GD steps to the target at least (sets the default η)")
    eta: float | None = Float(None, positive=True, max=1e300,
                              doc="GD step η (default: the small-step rule up to the target)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS,
                            doc="the step cap (default: the longer of 2× the flow time to the "
                                "target at the weakest pair's curvature and 16× at the first-step "
                                "curvature); the run stops once it has converged: 1 − (1 − target)"
                                "/5 of the training prompts attend ≥ target to their relevant "
                                "tokens")
    prompts: int | None = Int(None, min=200, max=MAX_PROMPTS, by_profile=(200, 500, 4000),
                              doc="fixed training prompts (≥ 200: they stand for the population "
                                  "loss the paper trains on; fewer generalise visibly worse)")
    noise: float = Float(0.02, min=0.0, max=0.03,
                         doc="token noise σ: x = v + σξ/√d (≤ 0.03: the paper's noise is o(1))")
    test_prompts: int | None = Int(None, min=1, max=MAX_PROMPTS, by_profile=(2000, 5000, 20000),
                                   doc="held-out prompts of the per-prompt probability test")
    cap_factor: float | None = Float(None, min=1.0, max=100.0, by_profile=(2.5, 3.0, 4.0),
                                     doc="the step cap in units of the derived horizon (room to "
                                         "converge: more training prompts converge more slowly)")

    def _resolve(self) -> None:
        super()._resolve()
        _thresholds((self.target,), self.K, "target")
        c_min, c_max, c_fast = self._pilot()
        if self.steps is None:
            # the slower of: 2× the flow time at the weakest pair's curvature, 16× at the
            # first-step curvature (model B lags the latter by 1.3–2.7× up to attention 0.9, more
            # in the late phase, which the first step does not see)
            eta = self.eta if self.eta is not None else _over_L2(_derived(
                "eta", rules.small_step, self.K, self.target, self.min_steps, c_max, c_fast),
                self.L)
            fast = _derived("steps", rules.horizon, self.K, self.target,
                            eta * self.L**2 * c_fast, 16.0)
            slow = _derived("steps", rules.horizon, self.K, self.target,
                            eta * self.L**2 * c_min, 2.0)
            self._set("steps", _cap(math.ceil(self.cap_factor * max(fast, slow)), "steps"))
        _step_and_horizon(self, theta=self.target, until=self.target, factor=2.0, c_max=c_max,
                          c_fast=c_fast, c_until=c_min)


# ----------------------------------------------------------------------------- regimes


@dataclass(frozen=True, kw_only=True)
class RegimesSetting(_Population):
    """The collapse of model A's trajectory at fixed ηL², and its late loss decay."""

    L: float = _scale()

    eta: float = Float(1.0, positive=True, max=1e300, doc="GD step η at scale L")
    collapse_Ls: tuple = Floats((0.5, 1.0, 3.0), positive=True, max=1e100, max_len=8,
                                doc="scales L_i of the collapse runs")
    collapse_etas: tuple | None = Floats(None, positive=True, max=1e300, max_len=8,
                                         doc="their steps η_i (default: the theory's equivalent "
                                             "step of (η, L) at L_i)")
    steps: int | None = Int(None, min=1, max=MAX_STEPS, by_profile=(2000, 20000, 100000),
                            doc="GD steps of every run")
    etaL2s: tuple = Floats((1.0, 10.0, 100.0), positive=True, max=1e6, max_len=8,
                           doc="values of ηL² at which the late loss decay is reported")

    def _resolve(self) -> None:
        rules.check_eta_L2(self.eta, self.L)
        if self.collapse_etas is None:
            th = theory.theory()
            self._set("collapse_etas", tuple(
                _derived("collapse_etas", th.equivalent_step, self.eta, self.L, Li)
                for Li in self.collapse_Ls))
        if len(self.collapse_etas) != len(self.collapse_Ls):
            raise SettingError("collapse_etas", "needs one step per L_i")
        c = float(self.eta) * float(self.L) ** 2
        for e, Li in zip(self.collapse_etas, self.collapse_Ls):  # the collapse is at one ηL²
            if not abs(float(e) * float(Li) ** 2 - c) <= 1e-12 * c:
                raise SettingError("collapse_etas", f"every run must have ηL² = {c!r} (the collapse is "
                                                    f"judged at one ηL²); L_i = {Li:g} needs η_i = {c / Li**2!r}, "
                                                    f"got {e!r}")
        for e, Li in zip(self.collapse_etas, self.collapse_Ls):
            rules.check_eta_L2(e, Li, "collapse_Ls")
