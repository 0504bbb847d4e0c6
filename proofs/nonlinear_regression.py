r"""Li, Duan, Liang — *Provable In-Context Learning of Nonlinear Regression with Transformers*
(arXiv 2507.20443; an ICLR 2026 submission, not an accepted paper), and a blog summary of it.

The paper's full text (Theorems 1–2, the definitions of Δ and δ, the step-size conditions) was
not available; what is confirmed, inferred and wrong in the summary is recorded in
``shared/reference/nonlinear-regression-icl.md``.  Each claim below states its provenance.

Model (inferred, matching the reviews): one softmax-attention layer with one trainable merged
key–query matrix :math:`Q`, fixed value path reading the labels, squared loss, plain GD from
:math:`Q=0`; tasks :math:`f=L\,g` with :math:`g` 1-Lipschitz.  Two simulators live in
:mod:`icltheory.models._nonlinear_icl`: Model A (exact population, infinite prompts, features
:math:`v_1..v_K`) and Model B (finite prompts, noisy non-orthonormal features).

The one exact fact (derived here): the prediction is linear in the labels, so
:math:`\ell_L=L^2\ell_1` and GD at :math:`(\eta,L)` *is* GD at :math:`(\eta L^2,1)` — every
phase time is a function of :math:`\eta L^2`, :math:`\propto1/(\eta L^2)` in the small-step
regime.  The summary's :math:`T_{\rm fast}\propto1/(\eta L)` contradicts it.

Horizons.  When ``steps`` is not given, the number of GD steps is derived from the isotropic
flow time :math:`T(\theta)=\frac{(K-1)^2}{K\eta c}[F(\theta)-F(1/K)]` of the user's setting,
with :math:`c` the (normalised) task curvature times :math:`L^2`; for non-orthonormal features
:math:`c` is replaced by the weakest pair's :math:`\gamma_{nk}(\lVert v_n-v_k\rVert^2/2)^2`
(a heuristic, stated where used).  Runs stop early once their targets are met; a horizon that
would exceed the work caps is refused as ``inconclusive``, and so is a target missed within a
*derived* (heuristic) horizon — only a horizon the user fixes with ``steps`` can refute.
Coinciding features (zero pair curvature) make the attention target unidentifiable:
``inconclusive``.  A slope whose step-rounding allowance exceeds the claim's own tolerance
can refute but not confirm (undecided).  Rate fits use only runs in GD's
small-step regime (at least 20 steps to the threshold, stiffness ≤ 0.5; see
:func:`icltheory.models._nonlinear_icl.isotropic_stiffness`), with a tolerance that adds the
first-order effect of GD's Euler lag on each time.  Without ``eta``, the L-sweeps (l-scaling,
summary-fast-rate) derive the step from the setting (:func:`_default_sweep_eta`): the largest η
that keeps the three smallest L in that regime, so no fixed number tuned to one K decides it;
final-attention applies the same rule (:func:`_largest_flow_step`) at its one L, up to its
target attention (:func:`_default_final_eta`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

from icltheory.core import (
    BadInput,
    Check,
    CheckContext,
    Choice,
    Claim,
    Derivation,
    Float,
    Floats,
    Int,
    NumericalTrouble,
    Plot,
    Series,
    Setting,
    SettingError,
)
from icltheory.dynamics._scaling import local_slopes, loglog_fit, slope_allowance, threshold_times
from icltheory.models import _nonlinear_icl as nl

ARXIV = "arXiv 2507.20443 (Li, Duan, Liang; ICLR 2026 submission)"
SUMMARY = "blog summary of arXiv 2507.20443 (shared/seeds/002_657d0294dad76b76.txt)"

#: runs longer than this many GD steps are refused (inconclusive) rather than started
MAX_STEPS_A = 3_000_000
#: model B work cap, in (steps × prompts × N × d) multiply-adds (≈ 25 s on one core)
MAX_WORK_B = 2.5e10
#: fewer GD steps than this cannot resolve a rate (GD is far from its flow)
MIN_STEPS_FOR_RATE = 20
#: GD follows its flow only while |∂ż/∂z|·(step) stays below this (see isotropic_stiffness)
MAX_STIFFNESS = 0.5


# =============================================================================== settings


@dataclass(frozen=True, kw_only=True)
class NonlinearSetting(Setting):
    """Keys shared by every claim of this paper.  Model A: orthonormal features, population
    loss; Model B: ``prompts`` fixed prompts of ``N`` noisy tokens on ``K`` random unit features
    in ``R^d``."""

    model: str = Choice("A", ("A", "B"), doc="A: exact population model; B: finite prompts")
    task: str = Choice("linear", nl.TASKS, doc="task family g (f = L·g, g 1-Lipschitz)")
    K: int = Int(8, min=2, doc="number of features")
    d: int | None = Int(None, min=1, doc="token dimension (default K for model A, 2K for B)")
    N: int = Int(64, min=1, doc="context tokens per prompt (model B)")
    L: float = Float(1.0, positive=True, doc="Lipschitz scale L of the tasks f = L·g")
    eta: float | None = Float(None, positive=True, doc="GD step size η (default per claim/model)")
    steps: int | None = Int(None, min=1, doc="GD steps (default: horizon derived from theory)")
    noise: float = Float(0.02, min=0.0, doc="token noise σ, x = v + σξ/√d (model B)")
    prompts: int = Int(2000, min=1, doc="number of fixed training prompts (model B)")

    #: default η per model when ``eta`` is not given
    _ETA = {"A": 1.0, "B": 100.0}
    #: the one model a claim's computation uses (``None``: either), and why
    _ONLY_MODEL = None
    _ONLY_MODEL_WHY = ""

    def _resolve(self) -> None:
        if self.d is None:
            self._set("d", self.K if self.model == "A" else 2 * self.K)
        if self.eta is None and self._ETA.get(self.model) is not None:
            self._set("eta", self._ETA[self.model])

    def _validate(self) -> None:
        if self.model == "A" and self.d < self.K:
            raise SettingError("d", f"model A uses K orthonormal features: needs d ≥ K={self.K}")
        if self.eta is not None:
            _check_eta_L2(self.eta, self.L)
        if self._ONLY_MODEL is not None and self.model != self._ONLY_MODEL:
            raise SettingError("model", self._ONLY_MODEL_WHY)


def _check_eta_L2(eta: float, L: float, key: str = "L") -> None:
    """The dynamics depend on η and L only through ηL²: it must be a normal float64."""
    prod = eta * L * L  # float products give 0 or inf out of range, never an exception
    if not (np.finfo(float).tiny <= prod < math.inf):
        raise SettingError(key, f"η·L² = {eta:g}·{L:g}² is outside the normal float64 range "
                                "(the dynamics depend on η and L only through ηL²)")


def _check_thetas(thetas, K: int, key: str = "thetas") -> None:
    for th in thetas:
        if not (1.0 / K < th < 1.0):
            raise SettingError(key, f"attention thresholds must lie in (1/K, 1) = "
                               f"({1.0 / K:.3g}, 1), got {th:g}")


@dataclass(frozen=True, kw_only=True)
class RescalingSetting(NonlinearSetting):
    model: str = Choice("B", ("A", "B"), doc="A: exact population model; B: finite prompts")
    task: str = Choice("sin", nl.TASKS, doc="task family g (f = L·g, g 1-Lipschitz)")
    L: float = Float(2.0, positive=True, doc="scale L of the first run")
    L_prime: float = Float(1.0, positive=True, doc="scale L' of the second run")
    eta: float | None = Float(50.0, positive=True, doc="step η of the first run")
    steps: int | None = Int(200, min=1, doc="GD steps of both runs")

    def _validate(self) -> None:
        super()._validate()
        r = self.L / self.L_prime
        r2 = r * r  # float multiplication gives inf (not OverflowError) out of range
        if not (0 < r2 < math.inf) or not math.isfinite(self.eta * r2):
            raise SettingError("L_prime", f"L/L' = {self.L:g}/{self.L_prime:g}: (L/L')² or "
                               "η(L/L')² is outside the float64 range")


@dataclass(frozen=True, kw_only=True)
class LScalingSetting(NonlinearSetting):
    """``model=A+B`` (default) runs both simulators, each with its own default d and θ unless
    they are given (model B at a CPU-friendly size: 500 prompts).  Without ``eta`` the step is
    derived per model from the setting in the check (:func:`_default_sweep_eta`)."""

    model: str = Choice("A+B", ("A+B", "A", "B"),
                        doc="A: population model; B: finite prompts; A+B: both (default)")
    Ls: tuple = Floats((0.5, 1.0, 2.0, 4.0), positive=True, doc="the L values of the sweep")
    thetas: tuple | None = Floats(None, positive=True,
                                  doc="attention thresholds θ (default A: 0.5,0.9,0.99; B: 0.5,0.8,0.9)")
    prompts: int = Int(500, min=1, doc="number of fixed training prompts (model B)")
    eta: float | None = Float(None, positive=True,
                              doc="GD step size η (default: derived from the setting — the largest "
                                  "η putting the 3 smallest L in GD's small-step regime)")
    _ETA = {}  # no fixed default: _default_sweep_eta derives it from the setting
    _THETAS = {"A": (0.5, 0.9, 0.99), "B": (0.5, 0.8, 0.9)}

    def _resolve(self) -> None:
        if self.model == "A+B":  # resolved per model by per_model()
            return
        super()._resolve()
        if self.thetas is None:
            # defaults above the initial attention 1/K (K = 2 starts at 0.5)
            th = tuple(x for x in self._THETAS[self.model] if x > 1.0 / self.K)
            self._set("thetas", th or ((1.0 + 1.0 / self.K) / 2,))

    def _validate(self) -> None:
        super()._validate()
        if len(set(self.Ls)) < 2:
            raise SettingError("Ls", "a slope needs at least two distinct L values")
        for m in self.per_model():
            if m.d < m.K and m.model == "A":  # pragma: no cover - caught by the base class
                raise SettingError("d", f"model A needs d ≥ K={m.K}")
            _check_thetas(m.thetas, m.K)
            for L in m.Ls:
                if m.eta is not None:
                    _check_eta_L2(m.eta, L, "Ls")
        if self.eta is None:
            # the derived η is ∝ 1/L_n² (L_n one of the Ls), so η·L² ∝ (L/L_n)²: the ratios and
            # the values themselves must stay in the normal float64 range
            for L in self.Ls:
                _check_eta_L2(1.0, L, "Ls")
            _check_eta_L2(1.0, max(self.Ls) / min(self.Ls), "Ls")

    def per_model(self) -> list["LScalingSetting"]:
        """The single-model settings this one stands for (two for ``model=A+B``)."""
        if self.model != "A+B":
            return [self]
        return [type(self)(**{**self.given(), "model": m}) for m in ("A", "B")]


@dataclass(frozen=True, kw_only=True)
class FastRateSetting(LScalingSetting):
    _THETAS = {"A": (0.5,), "B": (0.5,)}


@dataclass(frozen=True, kw_only=True)
class ThresholdSetting(NonlinearSetting):
    d: int | None = Int(None, min=1, doc="dimension d in the summary's L* = √(d/n) (default 2K)")
    theta: float = Float(0.9, positive=True, doc="attention threshold θ of the timed phase")
    _ONLY_MODEL = "A"
    _ONLY_MODEL_WHY = "this claim's computation uses the population model A"

    def _resolve(self) -> None:
        if self.d is None:
            self._set("d", 2 * self.K)
        super()._resolve()

    def _validate(self) -> None:
        super()._validate()
        _check_thetas((self.theta,), self.K, "theta")


@dataclass(frozen=True, kw_only=True)
class IsotropicSetting(NonlinearSetting):
    deltas: tuple = Floats((0.01, 0.005), positive=True,
                           doc="late-phase gaps δ (attention 1−δ), each ≤ 0.01")
    _ONLY_MODEL = "A"
    _ONLY_MODEL_WHY = "the isotropic closed forms are for the population model A"

    def _validate(self) -> None:
        super()._validate()
        if any(dl > 0.01 for dl in self.deltas):
            raise SettingError("deltas", "the claim concerns the late phase δ ≤ 0.01")
        if len(set(self.deltas)) < 2:
            raise SettingError("deltas", "a local slope needs at least two distinct δ")
        if 1.0 - max(self.deltas) <= 1.0 / self.K:  # pragma: no cover - K ≥ 2, δ ≤ 0.01
            raise SettingError("deltas", "1 − δ must exceed the initial attention 1/K")


@dataclass(frozen=True, kw_only=True)
class AsymptoteSetting(IsotropicSetting):
    Ks: tuple = Floats((4, 8, 16, 32), positive=True, doc="K values of the T(0.5) sweep")

    def _validate(self) -> None:
        super()._validate()
        for k in self.Ks:
            if k != int(k) or k < 2:
                raise SettingError("Ks", f"each K must be an integer ≥ 2, got {k:g}")


@dataclass(frozen=True, kw_only=True)
class OscillationSetting(NonlinearSetting):
    task: str = Choice("sin", nl.TASKS, doc="task family g (f = L·g, g 1-Lipschitz)")
    overlap: float = Float(0.9, min=0.0, max=0.999, doc="ρ in v₂ = ρ v₁ + √(1−ρ²) e₂")
    theta: float = Float(0.9, positive=True, doc="attention threshold of the slowdown ratio")
    _ONLY_MODEL = "A"
    _ONLY_MODEL_WHY = "the near-duplicate construction uses model A"

    def _validate(self) -> None:
        super()._validate()
        if self.K < 3:
            raise SettingError("K", "needs K ≥ 3: a near-duplicate pair and a far query")
        _check_thetas((self.theta,), self.K, "theta")


@dataclass(frozen=True, kw_only=True)
class FinalAttentionSetting(NonlinearSetting):
    model: str = Choice("B", ("A", "B"), doc="B only: the finite-prompt model")
    task: str = Choice("sin", nl.TASKS, doc="task family g (f = L·g, g 1-Lipschitz)")
    eta: float | None = Float(None, positive=True,
                              doc="GD step size η (default: derived from the setting — the largest "
                                  "η keeping GD in its small-step regime up to the target attention)")
    _ETA = {}  # no fixed default: _default_final_eta derives it from the setting
    _ONLY_MODEL = "B"
    _ONLY_MODEL_WHY = ("final-attention is the finite-prompt (model B) claim; "
                       "model A's late phase is nonlinear.asymptote / two-phase")

    def _validate(self) -> None:
        super()._validate()
        if self.eta is None:
            # the derived η is ηL²/L² with ηL² set by the scale-1 task: L² must be a normal float
            _check_eta_L2(1.0, self.L)


@dataclass(frozen=True, kw_only=True)
class RegimesSetting(NonlinearSetting):
    etaL2s: tuple = Floats((1.0, 10.0, 100.0), positive=True,
                           doc="values of ηL² at which the loss decay is measured")
    _ONLY_MODEL = "A"
    _ONLY_MODEL_WHY = "this claim's computation uses the population model A"


# =============================================================================== helpers


def _sample_idx(n: int, k: int = 600, log: bool = True) -> np.ndarray:
    """At most ~k indices of a length-n record (geometric spacing for log-time axes)."""
    if n <= k:
        return np.arange(n)
    if log:
        idx = np.unique(np.geomspace(1, n - 1, k).astype(int))
        return np.concatenate([[0], idx])
    return np.unique(np.linspace(0, n - 1, k).astype(int))


# Random streams (``ctx.rng(k)``): the model A relu covariance; model B's features, prompts and
# the (relu) covariance that sets its horizons and stiffness.
_STREAM_COV_A, _STREAM_FEATURES_B, _STREAM_PROMPTS_B, _STREAM_COV_B = 1, 10, 11, 12
#: Monte Carlo draws of model B's relu covariance (used only for horizons and stiffness)
_COV_B_DRAWS = 100_000


def _profile_ctx(seed: int, profile: str) -> CheckContext:
    """A bare context with the seeded streams and profile of a check, for cached computations."""
    return CheckContext(predicted={}, profile=profile, seed=seed)


def _cov_A(task: str, V: np.ndarray, ctx) -> np.ndarray:
    """Normalised population task covariance of model A (relu: Monte Carlo, its size by the
    profile: 10⁵ / 4·10⁵ / 1.6·10⁶ draws)."""
    rng = ctx.rng(_STREAM_COV_A) if task == "relu" else None
    draws = ctx.by_profile(100_000, 400_000, 1_600_000)
    C = nl.task_covariance(task, V, rng, draws)
    K = len(V)
    if task == "relu" and np.array_equal(V @ V.T, np.eye(K)):
        # on orthonormal features every permutation is an isometry, so the population C is
        # exactly αI + β11ᵀ; averaging the Monte Carlo estimate over that symmetry removes its
        # anisotropic noise (and β11ᵀ does not act on r, since 1ᵀr = 0)
        off = (C.sum() - np.trace(C)) / (K * (K - 1))
        C = (np.trace(C) / K - off) * np.eye(K) + off * np.ones((K, K))
    return nl.normalised_covariance(C)


@lru_cache(maxsize=16)
def _orthonormal_cov(K: int, d: int, task: str, seed: int, profile: str) -> np.ndarray:
    """:func:`_cov_A` on K orthonormal features in R^d (cached: the claims' runs share it;
    callers must not modify it)."""
    return _cov_A(task, nl.orthonormal_features(K, d), _profile_ctx(seed, profile))


def _pair_curvatures(C: np.ndarray, V: np.ndarray) -> np.ndarray:
    r""":math:`\gamma_{nk}\,(\lVert v_n-v_k\rVert^2/2)^2` for :math:`n\ne k`.

    Every entry equals :math:`c` for :math:`C=cI` on orthonormal features.  For other
    geometries the step :math:`B\leftarrow B-\eta G\,g\,G` damps the gap between two features
    once through each Gram factor, hence the square (a heuristic: on the near-duplicate pair of
    model A, ρ ∈ [0.8, 0.95], K ∈ {3, 8, 16}, the isotropic flow time with this curvature
    *over*-estimates the measured time to 0.9 by 2–4.5×).  The weakest pair sets horizons, the
    strongest the small-step (stiffness) test."""
    g = nl.semivariogram(C)
    D2 = np.sum((V[:, None, :] - V[None, :, :]) ** 2, axis=2)
    e = g * (D2 / 2.0) ** 2
    return e[~np.eye(len(V), dtype=bool)]


def _curvature_range(C: np.ndarray, V: np.ndarray) -> tuple[float, float]:
    """(weakest, strongest) pair curvature; coinciding features cannot be told apart."""
    e = _pair_curvatures(C, V)
    if not e.min() > 0:
        raise NumericalTrouble("two features coincide (or the task cannot tell them apart): the "
                               "relevant-token attention is not identifiable, so no horizon or "
                               "rate can be derived")
    return float(e.min()), float(e.max())


def _model_B(s: NonlinearSetting, ctx, *, curvature: bool = True):
    """Model B's features, prompts and (optionally) the (weakest, strongest) pair curvature of
    the scale-1 task covariance: ``(V, batch, (c_min, c_max) or None)``."""
    V = nl.random_unit_features(s.K, s.d, ctx.rng(_STREAM_FEATURES_B))
    batch = nl.make_prompts(V, s.prompts, s.N, s.noise, s.task, ctx.rng(_STREAM_PROMPTS_B))
    if not curvature:
        return V, batch, None
    C = nl.task_covariance(s.task, V, ctx.rng(_STREAM_COV_B), _COV_B_DRAWS)
    return V, batch, _curvature_range(C, V)


def _stiffness_over_L(K: int, eta: float, c_max: float, Ls) -> np.ndarray:
    """isotropic_stiffness at each L, with the strongest pair's curvature times L²."""
    return np.array([nl.isotropic_stiffness(K, eta * c_max * float(L) ** 2) for L in Ls])


def _horizon(K: int, theta: float, eta_c: float, factor: float, extra: int = 50) -> int:
    """``factor`` × isotropic flow time to θ, plus the Euler lag and ``extra`` steps."""
    T = float(nl.isotropic_flow_time(theta, K, eta_c))
    return int(math.ceil(factor * T + nl.euler_lag_steps(theta, K, eta_c) + extra))


def _max_steps_B(s: NonlinearSetting) -> int:
    return max(int(MAX_WORK_B / (s.prompts * s.N * s.d)), 1)


def _too_long(ctx, steps: int, cap: int, what: str) -> bool:
    if steps > cap:
        ctx.inconclusive(f"{what} needs {steps} GD steps (> {cap}); set 'steps' or a larger η·L²")
        return True
    return False


def _outside_small_step(ctx, K: int, eta_c: float, label: str) -> bool:
    """The flow-based claims need GD in its small-step regime; report otherwise (inconclusive)."""
    st = nl.isotropic_stiffness(K, eta_c)
    if st > MAX_STIFFNESS:
        ctx.inconclusive(f"{label}: ηc = {eta_c:g} puts gradient descent outside its small-step "
                         f"regime (stiffness ηc·max|∂ż/∂z| = {st:.3g} > {MAX_STIFFNESS:g}), so it "
                         "does not follow the gradient flow the claim is about; lower η")
        return True
    return False


def _guard_descent(ctx, loss: np.ndarray, label: str) -> bool:
    """GD far outside its small-step regime raises the loss: report it as inconclusive."""
    loss = np.asarray(loss)
    bad = np.nonzero(loss > loss[..., :1] * (1 + 1e-9) + 1e-300)
    if bad[0].size:
        step = int(bad[-1].min())
        ctx.inconclusive(f"{label}: the loss rose above its initial value at step {step} — η·L² "
                         "is too large for gradient descent to follow its flow")
        return False
    return True


@lru_cache(maxsize=1)
def _rescaling_derivation() -> Derivation:
    """(Cached: a Derivation is only read after it is built.)"""
    d = Derivation("Scaling the task by L scales the loss and the gradient by L²")
    d.say("A prediction linear in the labels, ŷ = Σᵢ aᵢ yᵢ with aᵢ = softmaxᵢ(sᵢ), and squared "
          "loss. The scores sᵢ(q) (= xᵢᵀQx_q here) are left as arbitrary functions of a trainable "
          "entry q of Q, so the identity holds for every entry and any score parametrisation. "
          "Three tokens suffice (more tokens or prompts add terms of the same form). After "
          "differentiating, e^{sᵢ} is written Eᵢ and dsᵢ/dq is written sᵢ'.")
    L, eta, tau = sp.symbols("L eta tau", positive=True)
    q = sp.Symbol("q", real=True)
    y = sp.symbols("y1:4", real=True)
    yq = sp.Symbol("y_q", real=True)
    S = [sp.Function(f"s{i}", real=True)(q) for i in range(1, 4)]
    E = sp.symbols("E1:4", positive=True)
    Sp = sp.symbols("s1:4'", real=True)
    compact = {**{sp.exp(si): Ei for si, Ei in zip(S, E)},
               **{sp.Derivative(si, q): spi for si, spi in zip(S, Sp)}}

    def loss(scale):
        Z = sum(sp.exp(si) for si in S)
        yhat = sum(sp.exp(si) * scale * yi for si, yi in zip(S, y)) / Z
        return sp.Rational(1, 2) * (yhat - scale * yq) ** 2

    def grad(scale):
        return sp.diff(loss(scale), q).xreplace(compact)

    d.define("loss_1", loss(1).xreplace(compact), "loss at scale 1")
    d.step("loss scales by L²", loss(L).xreplace(compact), L**2 * loss(1).xreplace(compact),
           "ŷ is linear in the labels")
    d.define("grad_1", grad(1), "∂ℓ₁/∂q by the chain rule through the scores")
    d.step("gradient scales by L²", grad(L), L**2 * grad(1), "differentiated symbolically")
    d.step("GD step at (η, L) = GD step at (ηL², 1)", q - eta * grad(L), q - (eta * L**2) * grad(1),
           "so every iterate coincides: Q_t(η, L) = Q_t(ηL²/L'², L')")
    T = tau / (eta * L**2)
    d.define("T", T, "crossing time in the small-step (flow) regime: flow time τ_θ over ηL²")
    d.step("log-log slope of T in L", sp.simplify(L * sp.diff(sp.log(T), L)), -2,
           "d log T / d log L")
    d.step("log-log slope of T in η", sp.simplify(eta * sp.diff(sp.log(T), eta)), -1,
           "d log T / d log η")
    return d


@lru_cache(maxsize=1)
def _isotropic_derivation() -> Derivation:
    d = Derivation("Isotropic population dynamics (C = cI, orthonormal features)")
    p, c, K, eta, t, delta = sp.symbols("p c K eta t delta", positive=True)
    q = (1 - p) / (K - 1)
    ar = p * (p - 1) + (K - 1) * q**2
    d.say("Row k of the logits keeps the target logit and K−1 equal others; p = a_k[k], "
          "q = (1−p)/(K−1) the attention on each other feature, r = a − e_k, "
          "∇_B ℓ = (diag a − aaᵀ) C r / K.")
    d.define("a_dot_r", ar, "aᵀr")
    gk = c / K * (p * (p - 1) - p * ar)
    gn = c / K * (q * q - q * ar)
    d.step("target-logit gradient", gk, -c * p * (1 - p) ** 2 / (K - 1), "row k, entry k")
    d.step("other-logit gradient", gn, c * p * (1 - p) ** 2 / (K - 1) ** 2, "row k, entry n ≠ k")
    rate = -eta * (gk - gn)
    d.step("gap rate per step", rate, eta * c * K * p * (1 - p) ** 2 / (K - 1) ** 2,
           "z = B[k,k] − B[k,n] moves by −η(g_k − g_n)")
    d.step("initial rate at p = 1/K", rate.subs(p, 1 / K), eta * c / K**2, "early phase")
    F = -1 / p + 3 * sp.log(p / (1 - p)) + 1 / (2 * (1 - p) ** 2) + 2 / (1 - p)
    d.define("F", F, "antiderivative")
    d.step("F' = 1/(p²(1−p)³)", sp.diff(F, p), 1 / (p**2 * (1 - p) ** 3),
           "dp/dt = p(1−p)·ż = ηcK p²(1−p)³/(K−1)², so t(θ) = (K−1)²/(ηcK)[F(θ) − F(1/K)]")
    Fd = F.subs(p, 1 - delta)
    lead = sp.limit(Fd * 2 * delta**2, delta, 0)
    d.step("leading term of F(1−δ)", lead, 1, "F(1−δ) = 1/(2δ²)(1 + 4δ + …)")
    nxt = sp.limit((Fd - 1 / (2 * delta**2)) * delta, delta, 0)
    d.step("next term of F(1−δ)", nxt, 2, "so T(δ) = (K−1)²/(2Kηcδ²)·(1 + 4δ + O(δ² log 1/δ))")
    loss_k = sp.Rational(1, 2) * c * ((1 - p) ** 2 + (K - 1) * q**2)
    d.step("loss of one query", loss_k, c * (1 - p) ** 2 * K / (2 * (K - 1)),
           "ℓ = (1/2K) Σ_k c|r_k|², all rows equal")
    one_minus_p_sq = (K - 1) ** 2 / (2 * K * eta * c * t)
    d.step("late loss × t", sp.simplify((c * K / (2 * (K - 1)) * one_minus_p_sq) * t),
           (K - 1) / (4 * eta), "with (1−p)² ≈ (K−1)²/(2Kηct) from the leading term")
    return d


# ----------------------------------------------------------------- threshold times over L


@dataclass
class _Sweep:
    Ls: np.ndarray
    thetas: np.ndarray
    T: np.ndarray  # (len(Ls), len(thetas)), nan when not reached
    t_curves: list  # per L: (t, attention) downsampled
    steps: int
    label: str
    stiffness: np.ndarray  # per L: isotropic_stiffness with the strongest pair's curvature
    eta: float  # the step used (given, or derived from the setting)


@lru_cache(maxsize=4)
def _population_sweep(K, d, task, eta, cap, seed, profile, Ls, th_max):
    """Model A runs for several L at one η until every run's mean attention reaches ``th_max``
    (cached: l-scaling and summary-fast-rate share it; callers must not modify the arrays)."""
    C = _orthonormal_cov(K, d, task, seed, profile)
    L2 = np.asarray(Ls) ** 2

    def stop(view):
        return bool(np.all(view.target_mean.max(axis=1) >= th_max))

    tr = nl.run_population_gd(C[None] * L2[:, None, None], eta, cap, stop=stop)
    return tr.t, tr.target_mean, tr.loss, tr.steps


def _sweep_cap(s: NonlinearSetting, th_max: float, eta_c1_L2: float) -> tuple[int, int]:
    """(derived horizon, work cap) of one sweep run whose weakest-pair ηc·L² is ``eta_c1_L2``:
    1.5× (model A) or 1× (model B) the isotropic flow time to ``th_max``."""
    if s.model == "A":
        return _horizon(s.K, th_max, eta_c1_L2, 1.5), MAX_STEPS_A
    return _horizon(s.K, th_max, eta_c1_L2, 1.0), _max_steps_B(s)


def _largest_flow_step(K: int, theta: float, c_max: float, c_fast: float) -> float:
    r"""The largest :math:`\eta L^2` (curvatures at scale 1) that keeps GD in its small-step
    regime up to attention :math:`\theta`: stiffness
    :math:`s_K\,\eta c_{\max}L^2\le S_{\max}` (``MAX_STIFFNESS``; :math:`s_K` =
    ``isotropic_stiffness(K, 1)``) and at least :math:`T_{\min}` = ``MIN_STEPS_FOR_RATE`` steps
    to :math:`\theta`.  Both bound :math:`\eta L^2` from above:

    .. math::
        \eta L^2=\min\Bigl(\frac{S_{\max}}{s_K\,c_{\max}},\;
        \frac{\tau_K(\theta)}{(T_{\min}+\lambda)\,c_{\rm fast}}\Bigr),

    with :math:`\tau_K(\theta)` the isotropic flow time at :math:`\eta c=1`
    (:func:`~icltheory.models._nonlinear_icl.isotropic_flow_time`), :math:`\lambda` GD's Euler
    lag + 1 step (so GD's crossing is still :math:`\ge T_{\min}`), :math:`c_{\max}` the
    strongest pair's curvature (the stiffness test's) and :math:`c_{\rm fast}` the curvature
    that sets the early speed (:func:`_fast_curvature`).  Shared by the L-sweeps
    (:func:`_default_sweep_eta`) and final-attention (:func:`_default_final_eta`)."""
    target = MIN_STEPS_FOR_RATE + float(nl.euler_lag_steps(theta, K, 1.0)) + 1.0
    return min(MAX_STIFFNESS / (nl.isotropic_stiffness(K, 1.0) * c_max),
               float(nl.isotropic_flow_time(theta, K, 1.0)) / (target * c_fast))


def _fast_curvature(model: str, K: int, c_max: float, batch=None) -> float:
    r"""The curvature that sets the early speed, :math:`c_{\rm fast}` of
    :func:`_largest_flow_step`: :math:`c_{\max}` in model A (exact in the isotropic case), and
    in model B its first-step curvature :math:`K^4/(K-1)\cdot d\bar a/d\eta|_0`
    (:func:`~icltheory.models._nonlinear_icl.prompt_initial_attention_rate`), which over-states
    the speed (model B measured 1.3–2.2× slower to θ = 0.5 than predicted for
    K ∈ {3, 4, 6, 8, 16}, linear/sin/relu; 0.97× at K = 2, inside the :math:`\lambda` margin).
    Without a first-step signal it falls back to :math:`c_{\max}`."""
    if model == "A":
        return c_max
    c_fast = K**4 / (K - 1) * nl.prompt_initial_attention_rate(batch)
    return c_fast if c_fast > 0 else c_max


def _default_sweep_eta(s: NonlinearSetting, Ls, thetas, c1: float, c_max: float,
                       c_fast: float) -> tuple[float, int]:
    r"""The sweep's step when the user gives no ``eta``: ``(η, n)``.

    A run at scale :math:`L` enters the rate fit only in GD's small-step regime up to the
    lowest threshold :math:`\theta_{\min}` (:func:`_slope_checks`), so the largest admissible
    step for the :math:`n` smallest :math:`L` is
    :math:`\eta=\eta L^2_{\max}(K,\theta_{\min})/L_{(n)}^2` (:func:`_largest_flow_step`).
    :math:`n=\min(3,\#L)`, lowered to 2 while the derived horizon of the slowest run (smallest
    :math:`L`, :math:`\theta_{\max}`, weakest pair :math:`c_1`) would exceed the work cap: a
    larger step takes the fast runs out of the flow regime, a smaller one only costs time.
    """
    th_min, th_max = float(min(thetas)), float(max(thetas))
    eta_L2 = _largest_flow_step(s.K, th_min, c_max, c_fast)
    Lu = np.unique(np.asarray(Ls, dtype=float))
    eta, n = float("nan"), 2
    for n in range(min(3, len(Lu)), 1, -1):
        eta = eta_L2 / Lu[n - 1] ** 2
        H, cap = _sweep_cap(s, th_max, eta * c1 * Lu[0] ** 2)
        if H <= cap:
            break
    return eta, n


def _default_final_eta(s: NonlinearSetting, theta: float, c_max: float, batch) -> float:
    r"""final-attention's step when the user gives no ``eta``: the largest step keeping model B
    in GD's small-step regime up to the target attention :math:`\theta` — the same rule as the
    L-sweeps (:func:`_largest_flow_step`), at the claim's one :math:`L`:
    :math:`\eta=\eta L^2_{\max}(K,\theta;c_{\max},c_{\rm fast})/L^2`.  The rule depends on
    K, d, N, noise and task through the prompts and the pair curvatures, and on L only through
    :math:`1/L^2` (the rescaling identity).  The largest admissible step also gives the shortest
    derived horizon: if that exceeds the work cap, a smaller step cannot help."""
    c_fast = _fast_curvature("B", s.K, c_max, batch)
    return _largest_flow_step(s.K, theta, c_max, c_fast) / s.L**2


def _sweep_times(s: LScalingSetting | NonlinearSetting, ctx, Ls, thetas) -> _Sweep | None:
    """Time for the mean relevant-token attention to reach each θ, for each L at fixed η
    (``s.eta``, or :func:`_default_sweep_eta` when it is ``None``)."""
    Ls = np.asarray(Ls, dtype=float)
    thetas = np.asarray(thetas, dtype=float)
    th_max = float(thetas.max())
    K = s.K
    batch = None
    if s.model == "A":
        V = nl.orthonormal_features(K, s.d)
        c1, c_max = _curvature_range(_orthonormal_cov(K, s.d, s.task, s.seed, ctx.profile), V)
    else:
        _, batch, (c1, c_max) = _model_B(s, ctx)
    c_fast = _fast_curvature(s.model, K, c_max, batch) if s.eta is None else c_max
    eta = s.eta
    if eta is None:
        eta, n = _default_sweep_eta(s, Ls, thetas, c1, c_max, c_fast)
        try:
            for L in Ls:
                _check_eta_L2(eta, float(L))
        except SettingError as exc:
            ctx.inconclusive(f"model {s.model}: the derived step η = {eta:g} is unusable ({exc}); "
                             "set 'eta'")
            return None
        ctx.note(f"model {s.model}: η = {eta:.4g} derived from the setting — the largest step "
                 f"with the {n} smallest L in GD's small-step regime (stiffness ≤ "
                 f"{MAX_STIFFNESS:g} and ≥ {MIN_STEPS_FOR_RATE} steps to θ={thetas.min():g}; "
                 f"strongest-pair curvature {c_max:.4g}, early-phase curvature {c_fast:.4g}, "
                 f"K = {K})")
    stiff = _stiffness_over_L(K, eta, c_max, Ls)
    if s.model == "A":
        cap, limit = _sweep_cap(s, th_max, eta * c1 * Ls.min() ** 2)
        cap = s.steps or cap
        if _too_long(ctx, cap, limit, f"reaching θ={th_max:g} at L={Ls.min():g}"):
            return None

        t, tm, loss, steps = _population_sweep(s.K, s.d, s.task, eta, cap, s.seed, ctx.profile,
                                               tuple(Ls.tolist()), th_max)
        if not _guard_descent(ctx, loss, "model A"):
            return None
        T = threshold_times(t, tm, thetas)
        idx = _sample_idx(steps + 1)
        curves = [(t[idx], tm[r, idx]) for r in range(len(Ls))]
        return _Sweep(Ls, thetas, T, curves, steps, "model A (population)", stiff, eta)
    T = np.full((len(Ls), len(thetas)), np.nan)
    curves = []
    steps = 0
    for i, L in enumerate(Ls):
        cap, limit = _sweep_cap(s, th_max, eta * c1 * L**2)
        cap = s.steps or cap
        if _too_long(ctx, cap, limit, f"model B reaching θ={th_max:g} at L={L:g}"):
            return None
        tr = nl.run_prompt_gd(batch, float(L), eta, cap,
                              stop=lambda at, lo, t: at.max() >= th_max, check_every=20)
        if not _guard_descent(ctx, tr.loss, f"model B at L={L:g}"):
            return None
        T[i] = threshold_times(tr.t, tr.attn, thetas)
        idx = _sample_idx(tr.steps + 1)
        curves.append((tr.t[idx], tr.attn[idx]))
        steps = max(steps, tr.steps)
    return _Sweep(Ls, thetas, T, curves, steps,
                  f"model B ({s.prompts} prompts, N={s.N}, d={s.d}, σ={s.noise:g})", stiff, eta)


def _note_model(ctx, m: LScalingSetting) -> None:
    eta = "derived (below)" if m.eta is None else f"{m.eta:g}"
    ctx.note(f"model {m.model}: η = {eta}, d = {m.d}, θ = {', '.join(f'{x:g}' for x in m.thetas)}"
             + (f", {m.prompts} prompts of N = {m.N}, σ = {m.noise:g}" if m.model == "B" else ""))


def _slope_checks(ctx, sw: _Sweep, s, predicted_slope: float, name: str, tol_claim: float,
                  why_claim: str) -> list[float]:
    """Fit log T_θ vs log L per θ and compare with ``predicted_slope``; returns the slopes."""
    slopes = []
    for j, th in enumerate(sw.thetas):
        T = sw.T[:, j]
        if np.any(np.isnan(T)):
            missing = [f"{L:g}" for L, x in zip(sw.Ls, T) if np.isnan(x)]
            ctx.inconclusive(f"θ={th:g} not reached within {sw.steps} steps at L={', '.join(missing)}"
                             " (raise 'steps')")
            slopes.append(float("nan"))
            continue
        use = (T >= MIN_STEPS_FOR_RATE) & (sw.stiffness <= MAX_STIFFNESS)
        if use.sum() < 2 or len(set(sw.Ls[use])) < 2:
            ctx.add(Check(f"{name}, θ={th:g}", predicted_slope, None, tol_claim,
                          f"needs ≥ 2 L values in GD's small-step regime (T ≥ {MIN_STEPS_FOR_RATE}"
                          f" steps and stiffness ηc·max|∂ż/∂z| ≤ {MAX_STIFFNESS:g}); outside it GD "
                          "does not follow the flow whose times scale as 1/(ηL²)", None,
                          f"T = {np.round(T, 2).tolist()}, stiffness = "
                          f"{np.round(sw.stiffness, 3).tolist()}: lower η"))
            slopes.append(float("nan"))
            continue
        fit = loglog_fit(sw.Ls[use], T[use])
        lag = float(nl.euler_lag_steps(th, s.K, 1.0)) + 1.0
        allow = slope_allowance(fit, T[use], lag)
        why = (f"{why_claim}; plus {allow:.3g} = first-order effect of ±{lag:.2g} steps on "
               f"each T (GD's Euler lag ½|ln(rate ratio)| + 1 step of interpolation); "
               f"{int(use.sum())} L values in the small-step regime (T ≥ "
               f"{MIN_STEPS_FOR_RATE} steps, stiffness ≤ {MAX_STIFFNESS:g})")
        check = ctx.close(f"{name}, θ={th:g}", predicted=predicted_slope, measured=fit.slope,
                          atol=tol_claim + allow, why=why)
        if check.passed and allow > tol_claim:
            # the step-rounding uncertainty alone exceeds the claim's tolerance (L values too
            # close, or times too short): agreement is not evidence; only a miss decides
            check.passed = None
            check.detail += (f"; undecided: the allowance {allow:.3g} exceeds the claim's "
                             f"tolerance {tol_claim:g} (spread the L values or lower η)")
        slopes.append(fit.slope)
    return slopes


def _model_sweeps(s: LScalingSetting, ctx, what: str, why: str):
    """Per model of ``s``: note its setting, sweep the threshold times over ``s.Ls``, plot them
    and check each θ's fitted slope against ``ctx.predicted[key]`` (``what`` = (key, check
    name)); yields ``(model setting, sweep, slopes)`` for the sweeps that ran."""
    key, name = what
    for m in s.per_model():
        _note_model(ctx, m)
        sw = _sweep_times(m, ctx, m.Ls, m.thetas)
        if sw is None:
            continue
        ctx.measured.setdefault("eta", {})[m.model] = sw.eta
        slopes = _slope_checks(ctx, sw, m, float(ctx.predicted[key]), f"model {m.model}: {name}",
                               0.1, why)
        _sweep_plots(ctx, sw, sw.eta)
        yield m, sw, slopes


def _sweep_plots(ctx, sw: _Sweep, eta: float) -> None:
    ser, ser2 = [], []
    for L, (t, a) in zip(sw.Ls, sw.t_curves):
        ser.append(Series(np.maximum(t, 0.5), a, f"L={L:g}"))
        ser2.append(Series(np.maximum(t, 0.5) * eta * L**2, a, f"L={L:g}"))
    hl = [(float(th), f"θ={th:g}") for th in sw.thetas]
    ctx.plot(Plot(f"Relevant-token attention for several L, η={eta:g} — {sw.label}", "GD step t",
                  "mean attention on same-feature tokens", ser, hlines=hl, logx=True,
                  caption="Larger L trains faster."))
    ctx.plot(Plot("The same curves against ηL²t: they collapse", "η L² t",
                  "mean attention on same-feature tokens", ser2, hlines=hl, logx=True,
                  caption="Every phase is a function of ηL²·t, so times scale as 1/(ηL²): "
                          "slope −2 in L, not the summary's −1."))
    rows = []
    for j, th in enumerate(sw.thetas):
        rows.append(Series(sw.Ls, sw.T[:, j], f"T(θ={th:g})", "points"))
    ctx.plot(Plot("Threshold times against L (log–log)", "L", "T_θ (GD steps)", rows,
                  logx=True, logy=True, caption="Slope −2 expected from the rescaling identity."))


# =============================================================================== claims


class _RescalingConsequence(Claim):
    """Claims that follow from the rescaling identity (and show its derivation)."""

    def derive(self, s) -> Derivation:
        return _rescaling_derivation()


class _IsotropicClaim(Claim):
    """Claims on isotropic model A (C = cI, orthonormal features): one derivation, one run."""

    setting_type = IsotropicSetting

    def derive(self, s) -> Derivation:
        return _isotropic_derivation()

    def _verified_run(self, s: IsotropicSetting, ctx):
        """Verify the derivation, then :func:`_isotropic_run` (``None``: inconclusive)."""
        ctx.verify_derivation(self.derive(s))
        return _isotropic_run(s, ctx)


class Rescaling(_RescalingConsequence):
    id = "nonlinear.rescaling"
    title = "GD at (η, L) is GD at (ηL²/L'², L'): identical weights, loss ratio L²/L'²"
    source = f"{ARXIV}; identity derived here (reference §6.1)"
    provenance = "derived here"
    statement = (r"Q_t(\eta,L)=Q_t\big(\eta L^2/L'^2,\,L'\big)\ \forall t,\qquad "
                 r"\ell_L(Q)=\tfrac{L^2}{L'^2}\,\ell_{L'}(Q)\quad(f=L\,g,\ \hat y\text{ linear in }y)")
    setting_type = RescalingSetting
    negative_control = "a wrong exponent η' = η(L/L')¹ (--predict eta_exponent=1) must fail"

    def constants(self, s: RescalingSetting) -> dict:
        return {"eta_exponent": 2.0, "loss_ratio": (s.L / s.L_prime) ** 2}

    def check(self, s: RescalingSetting, ctx) -> None:
        ctx.verify_derivation(self.derive(s))
        p = float(ctx.predicted["eta_exponent"])
        eta2 = s.eta * (s.L / s.L_prime) ** p
        ctx.measure("eta_prime", eta2)
        run = self._runner(s, ctx)
        W1, l1, a1 = run(s.L, s.eta)
        W2, l2, a2 = run(s.L_prime, eta2)
        tiny = np.finfo(float).tiny
        if not np.max(np.abs(W1)) >= tiny:
            ctx.inconclusive(f"the weights did not move out of the subnormal range in {s.steps} "
                             f"steps at η = {s.eta:g}: comparing them would test nothing; raise η "
                             "or 'steps'")
            return
        ratio = s.L / s.L_prime
        # fl(2^k x) = 2^k fl(x): with a power-of-two L/L' and an integer exponent every scaled
        # quantity (labels or C, η', gradients) is an exact power-of-two multiple
        pow2 = math.frexp(ratio)[0] == 0.5 and p == int(p)
        rel = float(np.max(np.abs(W1 - W2)) / max(np.max(np.abs(W1)), 1e-300))
        ctx.measure("max_rel_weight_difference", rel)
        ctx.measure("final_attention", [float(a1[-1]), float(a2[-1])])
        if pow2:
            ctx.condition("weights bitwise identical (power-of-two L/L')",
                          np.array_equal(W1, W2), predicted="identical", measured=rel,
                          why="scaling by a power of two is exact in binary floating point and "
                              "commutes with every rounding, so the two runs are the same "
                              "sequence of floating-point numbers")
        ctx.close(f"weights after {s.steps} steps: max |Q − Q'| / max |Q|", predicted=0.0,
                  measured=rel, atol=1e-10,
                  why="exact identity in real arithmetic; float64 rounding (~1e-16 per operation)"
                      " accumulated over the run stays far below 1e-10")
        if np.all(l1 >= tiny) and np.all(l2 >= tiny):
            lr = l1 / l2
            ctx.close("loss ratio ℓ(η,L)/ℓ(η',L') at every step",
                      predicted=ctx.predicted["loss_ratio"],
                      measured=float(lr[np.argmax(np.abs(lr - ctx.predicted["loss_ratio"]))]),
                      rtol=1e-10, why="exact identity ℓ_L = L²ℓ₁ on identical weights; float64 "
                                      "rounding")
        else:
            ctx.inconclusive("a loss fell below the smallest normal float64 (L or L' too small): "
                             "its ratio cannot be resolved to 1e-10")
        ctx.close("relevant attention trajectories equal", predicted=0.0,
                  measured=float(np.max(np.abs(a1 - a2))), atol=1e-10,
                  why="attention depends only on the weights, which are equal up to rounding")
        idx = _sample_idx(len(l1), log=False)
        with np.errstate(under="ignore", divide="ignore", invalid="ignore"):  # plot only
            ctx.plot(self._plot(s, eta2, idx, l1, l2))

    @staticmethod
    def _runner(s: RescalingSetting, ctx):
        """``run(L, η)`` → (final weights, loss per step, mean relevant attention per step),
        on one problem (model A covariance or model B prompts) shared by both runs."""
        if s.model == "A":
            C = _orthonormal_cov(s.K, s.d, s.task, s.seed, ctx.profile)

            def run(L, eta):
                r = nl.run_population_gd(C * L**2, eta, s.steps)
                return r.B[0], r.loss[0], r.target_mean[0]
            return run
        _, batch, _ = _model_B(s, ctx, curvature=False)

        def run(L, eta):
            r = nl.run_prompt_gd(batch, L, eta, s.steps)
            return r.Q, r.loss, r.attn
        return run

    @staticmethod
    def _plot(s, eta2, idx, l1, l2) -> Plot:
        return (Plot(f"Rescaling: (η, L) = ({s.eta:g}, {s.L:g}) vs ({eta2:g}, {s.L_prime:g})",
                      "GD step", "loss / L²",
                      [Series(idx, l1[idx] / s.L**2, f"L={s.L:g}"),
                       Series(idx, l2[idx] / s.L_prime**2, f"L'={s.L_prime:g}", "dashed")],
                      logy=True, caption="After dividing by L² the two loss curves coincide."))


class LScaling(_RescalingConsequence):
    id = "nonlinear.l-scaling"
    title = "Every attention-threshold time scales as L⁻² at fixed η (slope −2 of log T vs log L)"
    source = f"{ARXIV}; consequence of the rescaling identity (reference §6.1, §8 C-L-SCALING)"
    provenance = "derived here"
    statement = (r"T_\theta(\eta,L)=T_\theta(\eta L^2,1)\approx\frac{\tau_\theta}{\eta L^2}"
                 r"\;\Rightarrow\;\frac{d\log T_\theta}{d\log L}=-2\pm0.1,\quad"
                 r"\theta\in\{0.5,0.9,0.99\},\ L\in[0.5,4]")
    setting_type = LScalingSetting
    negative_control = "the summary's slope (--predict slope=-1) must fail"

    def constants(self, s) -> dict:
        return {"slope": -2.0}

    def check(self, s: LScalingSetting, ctx) -> None:
        ctx.verify_derivation(self.derive(s))
        for key in ("slopes", "T", "L2_times_T", "steps_run"):
            ctx.measure(key, {})
        for m, sw, slopes in _model_sweeps(
                s, ctx, ("slope", "slope of log T vs log L"),
                "±0.1: the claim's tolerance for GD in its small-step regime, where the step "
                "corrections to the flow are a few per cent"):
            ctx.measured["slopes"][m.model] = slopes
            ctx.measured["T"][m.model] = np.round(sw.T, 3).tolist()
            ctx.measured["L2_times_T"][m.model] = np.round(sw.T * (sw.Ls**2)[:, None], 3).tolist()
            ctx.measured["steps_run"][m.model] = sw.steps


class SummaryFastRate(Claim):
    id = "nonlinear.summary-fast-rate"
    title = "The summary's fast-phase time T_fast ∝ 1/(ηL) (slope −1 in L)"
    source = f"{SUMMARY}; not in the available paper text"
    provenance = "summary's claim"
    statement = (r"T_{\rm fast}=T_{0.5}\propto\frac1{\eta L}\;\Rightarrow\;"
                 r"\frac{d\log T_{0.5}}{d\log L}=-1\pm0.1")
    setting_type = FastRateSetting
    negative_control = "the identity's slope (--predict slope=-2) holds instead"

    def constants(self, s) -> dict:
        return {"slope": -1.0}

    def check(self, s: FastRateSetting, ctx) -> None:
        for key in ("measured_slope", "T_fast", "L2_times_T_fast"):
            ctx.evidence[key] = {}
        for m, sw, slopes in _model_sweeps(s, ctx, ("slope", "slope of log T_fast vs log L"),
                                           "±0.1, the same tolerance as nonlinear.l-scaling"):
            ctx.evidence["measured_slope"][m.model] = slopes
            ctx.evidence["T_fast"][m.model] = {f"L={L:g}": float(T)
                                               for L, T in zip(sw.Ls, sw.T[:, 0])}
            ctx.evidence["L2_times_T_fast"][m.model] = {f"L={L:g}": float(T * L**2)
                                                        for L, T in zip(sw.Ls, sw.T[:, 0])}
        ctx.measure("slopes", ctx.evidence["measured_slope"])
        ctx.evidence["why"] = ("with squared loss and ŷ linear in the labels, GD at (η, L) is GD at "
                               "(ηL², 1); T_fast·L² is constant, so the exponent of L is −2, not −1 "
                               "(the 1/η part of the summary's rate is right)")


class SummaryThreshold(Claim):
    id = "nonlinear.summary-threshold"
    title = "The summary's regime threshold L* ~ √(d/n) and error bounds ε + O(d/n), ε + O(L²d/n)"
    source = f"{SUMMARY}; the paper's confirmed threshold is Θ(1/(Δδ)) ({ARXIV}, abstract)"
    provenance = "summary's claim"
    statement = (r"L^\star\sim\sqrt{d/n},\qquad \mathrm{err}\le\varepsilon+O(d/n)\ (L<L^\star),"
                 r"\qquad \mathrm{err}\le\varepsilon+O(L^2d/n)\ (L>L^\star)")
    setting_type = ThresholdSetting
    negative_control = "never holds; the computed part (L²T constant across L*) is a real check"

    def constants(self, s: ThresholdSetting) -> dict:
        return {"L_star": math.sqrt(s.d / s.N), "slope_identity": -2.0}

    def check(self, s: ThresholdSetting, ctx) -> None:
        L_star = float(ctx.predicted["L_star"])
        Ls_ = L_star * np.array([0.25, 0.5, 1.0, 2.0, 4.0])
        if not (math.isfinite(L_star) and L_star > 0):
            raise BadInput(f"--predict L_star: a threshold on L must be positive, got {L_star:g}")
        try:
            for L in Ls_:
                _check_eta_L2(s.eta, float(L))
        except SettingError as exc:
            raise BadInput(f"--predict L_star={L_star:g}: the sweep L*/4..4L* gives {exc}") from None
        sw = _sweep_times(s, ctx, Ls_, [s.theta])
        if sw is not None:
            _slope_checks(ctx, sw, s, float(ctx.predicted["slope_identity"]),
                          "slope of log T_θ vs log L across L*", 0.1,
                          "±0.1 as in nonlinear.l-scaling: the rescaling identity, on both sides "
                          "of the summary's L*")
        if sw is not None and not np.any(np.isnan(sw.T)):
            L2T = sw.T[:, 0] * Ls_**2
            ctx.measure("L_values", Ls_.tolist())
            ctx.measure("L2_times_T", L2T.tolist())
            spread = float(L2T.max() / L2T.min() - 1)
            ctx.note(f"At fixed η, L²·T_θ across the summary's L* = √(d/n) = "
                     f"{ctx.predicted['L_star']:.4g}: {np.round(L2T, 1).tolist()} (spread "
                     f"{spread:.2%}; GD's step rounding makes short times differ). The dynamics "
                     "depend on η and L only through ηL², so no regime change can appear at an "
                     "L* that does not involve η.")
        ctx.add(Check("threshold L* ~ √(d/n)", "regime change at √(d/n)", "undecidable", None,
                      "the paper's confirmed threshold is Θ(1/(Δδ)), with no d or n; Δ and δ are "
                      "not defined in the available text, and with η fixed the rescaling identity "
                      "forbids any change at an η-independent L*", None,
                      "the summary gives no constants that a computation could refute"))
        ctx.add(Check("error bounds ε + O(d/n), ε + O(L²d/n)", "sample-size error floor",
                      "undecidable", None,
                      "the paper trains on the population loss (reviews) and claims near-zero "
                      "error; no sample size n appears in the available text", None,
                      "no n in the analysed model: the bound has nothing to be compared with"))
        ctx.inconclusive("the summary's threshold and error bounds cannot be tested: the paper's "
                         "threshold is Θ(1/(Δδ)) (no d/n) and its loss is population-level; the "
                         "summary's formulas appear nowhere in the available paper text")


class TwoPhase(_IsotropicClaim):
    id = "nonlinear.two-phase"
    title = "Fast rise to attention 0.5, then slow t^(−1/2) convergence; loss·t → (K−1)/(4η)"
    source = f"{ARXIV}, abstract (two phases; confirmed); rates derived here (reference §6.3)"
    provenance = "derived here"
    statement = (r"T_{0.5}\ll T_{1-\delta};\quad 1-p(t)\propto t^{-1/2};\quad "
                 r"\frac{d\log T(\delta)}{d\log\delta}\in[-2.1,-1.85]\ (\delta\le0.01);\quad "
                 r"\ell(t)\,t\to\frac{K-1}{4\eta}\ \pm5\%\quad(C=cI)")
    negative_control = "a t^(−1) late phase (--predict late_exponent=-1) or a wrong loss·t limit fails"

    def constants(self, s: IsotropicSetting) -> dict:
        return {"initial_rate": s.eta * s.L**2 / s.K**2, "phase_ratio_max": 0.1,
                "late_exponent": -0.5, "slope_lo": -2.1, "slope_hi": -1.85,
                "loss_t_limit": (s.K - 1) / (4 * s.eta)}

    def check(self, s: IsotropicSetting, ctx) -> None:
        run = self._verified_run(s, ctx)
        if run is None:
            return
        t, p, loss, T, T05, H = run
        P = ctx.predicted
        deltas = np.sort(np.asarray(s.deltas))[::-1]
        z1 = math.log(p[1] * (s.K - 1) / (1 - p[1]))  # logit gap after the first GD step
        ctx.close("phase 1 starts at the rate ηc/K² (gap after one step)",
                  predicted=P["initial_rate"], measured=z1, rtol=1e-9,
                  atol=8 * np.finfo(float).eps / (1 - p[1]),
                  why="the first GD step from B = 0 moves the gap by exactly ηc/K² (derivation); "
                      "float64 rounding in softmax and log only: a few ulp of p, which the logit "
                      "amplifies by at most 1/(1−p) (the atol)")
        ratio = T05 / T[-1]
        ctx.measure("T_0.5", T05)
        ctx.measure("T_delta", dict(zip([f"{x:g}" for x in deltas], T.tolist())))
        ctx.condition("phase 1 is fast: T(0.5)/T(1−δ_min) ≤ phase_ratio_max",
                      ratio <= P["phase_ratio_max"], predicted=f"≤ {P['phase_ratio_max']:g}",
                      measured=ratio, why="two phases: reaching 0.5 takes a small fraction of the "
                      "time to reach 1−δ")
        # late exponent of 1 − p(t) over [T(1−δ_max), H]
        i0 = int(np.ceil(T[0]))
        idx = np.unique(np.geomspace(max(i0, 1), len(p) - 1, 200).astype(int))
        if np.any(1 - p[idx] <= 0):
            ctx.inconclusive("the attention rounded to exactly 1 in float64: no late exponent")
            return
        fit = loglog_fit(t[idx], 1 - p[idx])
        dmax = float(deltas[0])
        tol = 2 * abs(1 / (2 - 4 * dmax) - 0.5) + 0.002
        ctx.close("late exponent of 1 − p(t)", predicted=P["late_exponent"], measured=fit.slope,
                  atol=tol, why=f"T(δ) ∝ δ⁻²(1+4δ) gives local exponent −1/(2−4δ), within "
                  f"{abs(1 / (2 - 4 * dmax) - 0.5):.3g} of −½ for δ ≤ {dmax:g}; doubled, +0.002 "
                  "for the fit")
        sl = local_slopes(deltas, T)
        ctx.measure("local_slopes_logT_logdelta", sl.tolist())
        ok = bool(np.all((sl >= P["slope_lo"]) & (sl <= P["slope_hi"])))
        ctx.condition("local slope of log T(δ) vs log δ in [slope_lo, slope_hi]", ok,
                      predicted=[P["slope_lo"], P["slope_hi"]], measured=sl.tolist(),
                      why="the claim's interval for δ ≤ 0.01 (the flow gives −2 + 4δ)")
        lt = float(loss[-1] * t[-1])
        ctx.measure("loss_times_t_at_horizon", lt)
        ctx.measure("horizon", H)
        ctx.close("loss·t at the horizon", predicted=P["loss_t_limit"], measured=lt, rtol=0.05,
                  why="5% (the claim's); the next-order term is 4δ ≤ 2% at the horizon, which is "
                      "set where 1 − p ≤ 0.005")
        ds = np.geomspace(deltas.min(), 0.5, 60)
        dg = np.geomspace(deltas.min(), 0.5, 15)
        Tg = threshold_times(t, p, 1 - dg)
        ctx.plot(Plot("Time to attention 1 − δ (log–log)", "δ", "T(δ) (GD steps)",
                      [Series(dg, Tg, "GD (model A)", "points"),
                       Series(ds, nl.isotropic_flow_time(1 - ds, s.K, s.eta * s.L**2),
                              "exact flow time", "line"),
                       Series(ds, nl.isotropic_asymptotic_time(ds, s.K, s.eta * s.L**2),
                              "(K−1)²/(2Kηcδ²)", "dashed")],
                      logx=True, logy=True, caption="Slope → −2 as δ → 0: the slow phase."))
        idx = _sample_idx(len(p))
        ctx.plot(Plot("1 − attention against t", "GD step t", "1 − p(t)",
                      [Series(np.maximum(t[idx], 1), 1 - p[idx], "GD"),
                       Series(t[idx][1:], (s.K - 1) / np.sqrt(2 * s.K * s.eta * s.L**2 * t[idx][1:]),
                              "(K−1)/√(2Kηct)", "dashed")],
                      vlines=[(T05, "T(0.5)")], logx=True, logy=True,
                      caption="Phase 1 ends near T(0.5); phase 2 decays as t^(−1/2)."))


@lru_cache(maxsize=8)
def _isotropic_traj(K, d, task, L, eta, steps, seed, profile):
    """One model-A run on orthonormal features (cached: two-phase and asymptote share it)."""
    C = _orthonormal_cov(K, d, task, seed, profile) * L**2
    tr = nl.run_population_gd(C, eta, steps)
    return tr.t, tr.target_mean[0], tr.loss[0]


def _isotropic_run(s: IsotropicSetting, ctx):
    """Model A isotropic run to the horizon; returns (t, p, loss, T(1−δ) sorted by δ desc,
    T(0.5), horizon) or None (inconclusive)."""
    eta_c = s.eta * s.L**2
    if _outside_small_step(ctx, s.K, eta_c, f"K={s.K}"):
        return None
    dmin = min(min(s.deltas), 0.005)
    H = s.steps or _horizon(s.K, 1 - dmin, eta_c, 1.02, extra=10)
    if _too_long(ctx, H, MAX_STEPS_A, f"reaching attention 1 − {dmin:g}"):
        return None
    t, p, loss = _isotropic_traj(s.K, s.d, s.task, s.L, s.eta, H, s.seed, ctx.profile)
    if not _guard_descent(ctx, loss, "model A"):
        return None
    deltas = np.sort(np.asarray(s.deltas))[::-1]
    T = threshold_times(t, p, 1 - deltas)
    T05 = float(threshold_times(t, p, [0.5])[0])
    if np.any(np.isnan(T)):
        ctx.inconclusive(f"attention did not reach 1 − {deltas.min():g} within {H} steps "
                         "(raise 'steps')")
        return None
    return t, p, loss, T, T05, H


class Asymptote(_IsotropicClaim):
    id = "nonlinear.asymptote"
    title = "T(1−δ) ≈ (K−1)²/(2Kηcδ²) within 5%; T(0.5) ≈ 1.0–1.5 × K²/(ηc) for K = 4..32"
    source = f"derived here for the isotropic case of {ARXIV} (reference §6.3, C-ASYMPTOTE, C-K-SCALING)"
    provenance = "derived here"
    statement = (r"T(1-\delta)=\frac{(K-1)^2}{2K\eta c\,\delta^2}(1\pm0.05)\ (\delta\le0.01),\qquad "
                 r"1.0\le\frac{\eta c\,T(0.5)}{K^2}\le1.5\ (K=4,\dots,32);\quad"
                 r"\text{exactly }T(\theta)=\tfrac{(K-1)^2}{K\eta c}[F(\theta)-F(1/K)]")
    setting_type = AsymptoteSetting
    negative_control = "a closed form off by 2× (--predict T_asymptotic=…) or k_ratio_hi=1.2 fails"

    def constants(self, s: AsymptoteSetting) -> dict:
        eta_c = s.eta * s.L**2
        deltas = sorted(s.deltas, reverse=True)
        Ks = [int(k) for k in s.Ks]
        return {
            "T_asymptotic": [float(nl.isotropic_asymptotic_time(x, s.K, eta_c)) for x in deltas],
            "T_flow": [float(nl.isotropic_flow_time(1 - x, s.K, eta_c)) for x in deltas],
            "k_ratio_lo": 1.0,
            "k_ratio_hi": 1.5,
            "k_ratio_flow": [float(nl.isotropic_flow_time(0.5, k, 1.0)) / k**2 for k in Ks],
        }

    def check(self, s: AsymptoteSetting, ctx) -> None:
        P = ctx.predicted
        run = self._verified_run(s, ctx)
        if run is None:
            return
        t, p, loss, T, T05, H = run
        deltas = np.sort(np.asarray(s.deltas))[::-1]
        eta_c = s.eta * s.L**2
        ctx.measure("T_delta", T.tolist())
        flow_dev = (np.asarray(P["T_flow"]) / np.asarray(P["T_asymptotic"]) - 1).tolist()
        ctx.measure("exact_flow_minus_leading_term_rel", flow_dev)
        if max(abs(x) for x in flow_dev) > 0.05:
            ctx.evidence["exact_flow_vs_leading_term"] = (
                f"the exact isotropic flow time differs from (K−1)²/(2Kηcδ²) by "
                f"{', '.join(f'{x:+.2%}' for x in flow_dev)} at δ = "
                f"{', '.join(f'{x:g}' for x in deltas)}: the correction 4δ + O(δ²(K + log 1/δ)) "
                "exceeds 5% here, so the 5% statement is false for this K and δ (not a GD effect)")
        ctx.close("T(1−δ) vs (K−1)²/(2Kηcδ²)", predicted=P["T_asymptotic"], measured=T, rtol=0.05,
                  why="5% (the claim's): the exact flow time is the leading term × (1 + 4δ + "
                      "O(δ²(K + log 1/δ))), i.e. ≤ 4.5% for δ ≤ 0.01 and K ≤ 16")
        lag = nl.euler_lag_steps(1 - deltas, s.K, eta_c) + 1.0
        ctx.close("T(1−δ) vs the exact isotropic flow time", predicted=P["T_flow"], measured=T,
                  atol=float(2 * lag.max()), rtol=1e-6,
                  why=f"GD is Euler's method on the flow: it lags the flow by ½|ln(rate ratio)| "
                      f"≤ {lag.max() - 1:.2g} steps (first order) plus 1 step of interpolation; "
                      "doubled for higher-order terms")
        # K sweep of the first phase (linear task, c = L² after normalisation)
        Ks = [int(k) for k in s.Ks]
        ratios, exp_flow = [], []
        for k in Ks:
            if _outside_small_step(ctx, k, eta_c, f"K={k}"):
                return
            Hk = s.steps or _horizon(k, 0.5, eta_c, 1.2, extra=20)
            d = max(s.d, k)
            tk, pk, lk = _isotropic_traj(k, d, s.task, s.L, s.eta, Hk, s.seed, ctx.profile)
            Tk = float(threshold_times(tk, pk, [0.5])[0])
            if math.isnan(Tk):
                ctx.inconclusive(f"K={k}: attention 0.5 not reached within {Hk} steps")
                return
            ratios.append(Tk * eta_c / k**2)
        ratios = np.asarray(ratios)
        ctx.measure("k_ratio", ratios.tolist())
        out = [(k, f) for k, f in zip(Ks, P["k_ratio_flow"])
               if not P["k_ratio_lo"] <= f <= P["k_ratio_hi"]]
        if out:
            ctx.evidence["k_ratio_exact_flow_outside_band"] = {f"K={k}": f for k, f in out}
        ctx.condition("ηc·T(0.5)/K² within [k_ratio_lo, k_ratio_hi]",
                      bool(np.all((ratios >= P["k_ratio_lo"]) & (ratios <= P["k_ratio_hi"]))),
                      predicted=[P["k_ratio_lo"], P["k_ratio_hi"]], measured=ratios.tolist(),
                      why="the claim's band; the exact flow gives (K−1)²(4 − F(1/K))/K³")
        lagK = np.array([float(nl.euler_lag_steps(0.5, k, eta_c)) + 1.0 for k in Ks])
        kk = np.array(Ks, dtype=float)
        ctx.close("ηc·T(0.5)/K² vs the exact flow", predicted=P["k_ratio_flow"], measured=ratios,
                  atol=float(np.max(2 * lagK * eta_c / kk**2)), rtol=1e-6,
                  why="Euler lag of GD behind the flow (doubled), converted to units of K²/(ηc)")
        ctx.plot(Plot("First phase: ηc·T(0.5)/K² against K", "K", "ηc T(0.5) / K²",
                      [Series(Ks, ratios, "GD (model A)", "points"),
                       Series(Ks, P["k_ratio_flow"], "exact flow", "dashed")],
                      hlines=[(1.0, "1.0"), (1.5, "1.5")], logx=True))


class Oscillation(Claim):
    id = "nonlinear.oscillation"
    title = "Attention to a near-duplicate feature rises (> 0.3), then decays slowly; that query is much slower"
    source = (f"{ARXIV}, abstract: irrelevant attention decays slowly and can oscillate "
              "(confirmed); the model A construction and the thresholds are inferred "
              "(reference §8 C-OSCILLATE, measured at ρ = 0.9)")
    provenance = "inferred"
    statement = (r"v_2=\rho v_1+\sqrt{1-\rho^2}e_2:\quad \max_t a_1[2](t)>0.3,\quad "
                 r"\frac{t_{1/2}-t_{\rm peak}}{t_{\rm peak}}>5,\quad "
                 r"\frac{T_{\rm close}(0.9)}{T_{\rm far}(0.9)}>50"
                 r"\quad(t_{1/2}:\ a_1[2]\text{ back to half its peak})")
    setting_type = OscillationSetting
    negative_control = "a higher peak bound (--predict peak_min=0.6) or slowdown_min=1000 fails"

    def constants(self, s) -> dict:
        return {"peak_min": 0.3, "slow_decay_min": 5.0, "slowdown_min": 50.0}

    def check(self, s: OscillationSetting, ctx) -> None:
        P = ctx.predicted
        V = nl.near_duplicate_features(s.K, s.d, s.overlap)
        C = _cov_A(s.task, V, ctx) * s.L**2
        c_pair, c_max = _curvature_range(C, V)
        if _outside_small_step(ctx, s.K, s.eta * c_max, "strongest feature pair"):
            return
        H = s.steps or _horizon(s.K, s.theta, s.eta * c_pair, 1.0)
        ctx.note(f"Horizon (cap) {H} steps: the isotropic flow time to θ={s.theta:g} with the "
                 f"close pair's curvature γ₁₂(‖v₁−v₂‖²/2)² = {c_pair:.4g}; the run stops once the "
                 "close query has reached θ and the wrong attention has halved.")
        if _too_long(ctx, H, MAX_STEPS_A, "the near-duplicate query"):
            return

        tr = _run_until_pair_settles(C, V, s, H)
        if not _guard_descent(ctx, tr.loss, "model A"):
            return
        wrong = tr.tracked[0, :, 0]
        peak, t_peak = float(wrong.max()), int(wrong.argmax())
        after = wrong[t_peak:] <= peak / 2
        t_half = t_peak + int(np.argmax(after)) if after.any() else None
        Tq = threshold_times(tr.t, tr.target[0].T, [s.theta])[:, 0]
        T_close, T_far = float(Tq[0]), float(np.mean(Tq[2:]))
        ctx.measure("peak_step", t_peak)
        ctx.measure("peak_etaL2t", t_peak * s.eta * s.L**2)
        ctx.measure("half_decay_step", t_half)
        ctx.measure("wrong_attention_at_end", float(wrong[-1]))
        ctx.measure("steps_run", tr.steps)
        decay = None if t_half is None else (t_half - t_peak) / max(t_peak, 1)
        reached = not (math.isnan(T_close) or math.isnan(T_far))
        if reached:
            ctx.measure("T_close", T_close)
            ctx.measure("T_far", T_far)
        # (value, predicted key, check name, why, reason when the run could not measure it)
        for key, value, pkey, name, why, missing in (
            ("peak_wrong_attention", peak, "peak_min",
             "wrong-feature attention peaks above peak_min",
             "exact population dynamics, no sampling: a strict inequality", None),
            ("slow_decay_ratio", decay, "slow_decay_min",
             "then decays slowly: (t_half − t_peak)/t_peak > slow_decay_min",
             "exact dynamics; halving the peak takes many times longer than the rise",
             f"the wrong attention did not fall to half its peak within {H} steps "
             "(raise 'steps')"),
            ("slowdown_ratio", T_close / T_far if reached else None, "slowdown_min",
             "near-duplicate query converges much more slowly",
             "feature separation Δ controls the slow phase; exact dynamics",
             f"attention θ={s.theta:g} not reached within {H} steps (raise 'steps')"),
        ):
            if value is None:
                ctx.inconclusive(missing)
                continue
            ctx.measure(key, value)
            ctx.condition(name, value > P[pkey], predicted=f"> {P[pkey]:g}", measured=value,
                          why=why)
        idx = _sample_idx(tr.steps + 1)
        x = np.maximum(tr.t[idx], 1) * s.eta * s.L**2
        ctx.plot(Plot(f"Near-duplicate pair (ρ = {s.overlap:g}, task {s.task})", "η L² t",
                      "attention", [Series(x, wrong[idx], "query v₁ → feature v₂ (wrong)"),
                                    Series(x, tr.target[0, idx, 0], "query v₁ → v₁"),
                                    Series(x, tr.target[0, idx, 2], "far query → own", "dashed")],
                      hlines=[(P["peak_min"], "peak_min")], logx=True))


def _run_until_pair_settles(C, V, s: OscillationSetting, cap: int):
    """Model A on the near-duplicate geometry until query 1 reaches θ and its wrong attention
    has halved from its peak (checked every 1000 steps), or ``cap`` steps."""

    def stop(view):
        wrong = view.tracked[0, :, 0]
        k = int(wrong.argmax())
        halved = bool(np.any(wrong[k:] <= wrong[k] / 2))
        return halved and bool(view.target[0, :, 0].max() >= s.theta)

    return nl.run_population_gd(C, s.eta, cap, G=V @ V.T, track=((0, 1),), record_rows=True,
                                stop=stop, check_every=1000)


class FinalAttention(Claim):
    id = "nonlinear.final-attention"
    title = "Finite prompts: mean relevant-token attention ≥ 0.95 and the loss falls ≥ 300×"
    source = f"{ARXIV}, abstract (query tokens attend to relevant tokens; confirmed), model B"
    provenance = "inferred"
    statement = (r"\overline{\mathrm{Attn}_+}(H)\ge0.95,\qquad \ell(H)\le3\times10^{-3}\,\ell(0)"
                 r"\quad(\text{mean over prompts; no per-prompt minimum is claimed})")
    setting_type = FinalAttentionSetting
    negative_control = ("a stricter target (--predict attn_min=0.995) fails within the steps the "
                        "claim needed; N=1 (mean attention capped near 1/K) fails")

    def constants(self, s) -> dict:
        return {"attn_min": 0.95, "loss_ratio_max": 3e-3}

    def check(self, s: FinalAttentionSetting, ctx) -> None:
        P = ctx.predicted
        K = s.K
        # the horizon comes from the claim's own target, never from a --predict override
        theta = min(max(float(self.constants(s)["attn_min"]), 1.0 / K + 1e-3), 1 - 1e-6)
        _, batch, (c_eff, c_max) = _model_B(s, ctx)
        eta = s.eta
        if eta is None:
            eta = _default_final_eta(s, theta, c_max, batch)
            try:
                _check_eta_L2(eta, s.L)
            except SettingError as exc:
                ctx.inconclusive(f"the derived step η = {eta:g} is unusable ({exc}); set 'eta'")
                return
            ctx.note(f"η = {eta:.4g} derived from the setting (ηL² = {eta * s.L**2:.4g}): the "
                     f"largest step keeping GD in its small-step regime up to attention "
                     f"{theta:g} (stiffness ≤ {MAX_STIFFNESS:g} with the strongest pair's "
                     f"curvature {c_max:.4g}, and ≥ {MIN_STEPS_FOR_RATE} steps to {theta:g} at "
                     f"the first-step curvature; K = {K}).")
        ctx.measure("eta", eta)
        c_eff *= s.L**2
        H = s.steps or _horizon(K, theta, eta * c_eff, 2.0)
        ctx.note(f"Horizon {H} steps" + ("" if s.steps else
                 f": 2 × the isotropic flow time to attention {theta:g} with the weakest feature "
                 f"pair's curvature γ(Δ²/2)² = {c_eff:.4g} (a heuristic: missing it makes the "
                 "verdict inconclusive, not fails; set 'steps' to judge at a fixed time)")
                 + "; the run stops once both targets are met.")
        if _too_long(ctx, H, _max_steps_B(s), "reaching the targets"):
            return

        def stop(att, loss, t):
            return bool(att[-1] >= P["attn_min"] and loss[-1] <= P["loss_ratio_max"] * loss[0])

        tr = nl.run_prompt_gd(batch, s.L, eta, H, stop=stop, check_every=50)
        att, att_min, loss, steps = tr.attn, tr.attn_min, tr.loss, tr.steps
        if not _guard_descent(ctx, loss, f"model {s.model}"):
            return
        if not loss[0] >= np.finfo(float).tiny:
            ctx.inconclusive(f"the initial loss {loss[0]:.3g} underflows (L = {s.L:g} too small "
                             "for float64): no loss ratio")
            return
        ratio = float(loss[-1] / loss[0])
        ceiling = float(np.mean(batch.same.sum(axis=1) > 0))
        ctx.measure("steps_run", steps)
        ctx.measure("etaL2t", steps * eta * s.L**2)
        ctx.measure("final_mean_attention", float(att[-1]))
        ctx.measure("final_min_attention", float(att_min[-1]))
        ctx.measure("loss_ratio", ratio)
        ctx.measure("attention_ceiling", ceiling)
        ctx.note(f"{1 - ceiling:.2%} of the prompts have no token with the query's feature: mean "
                 f"attention cannot exceed {ceiling:.4g}, and those prompts (with token noise σ = "
                 f"{s.noise:g}) keep a loss floor.")
        met = att[-1] >= P["attn_min"] and ratio <= P["loss_ratio_max"]
        if ceiling < P["attn_min"]:
            ctx.evidence["attention_ceiling"] = (
                f"only {ceiling:.4g} of the prompts contain a token with the query's feature, so "
                f"the mean relevant-token attention can never reach {P['attn_min']:g}")
        elif not met and s.steps is None:
            ctx.inconclusive(f"targets not met within the derived horizon of {H} steps (mean "
                             f"attention {float(att[-1]):.4g}, loss ratio {ratio:.3g}); the "
                             "horizon is a heuristic, so this is not a failure: set 'steps'")
            return
        ctx.condition("mean relevant-token attention ≥ attn_min", att[-1] >= P["attn_min"],
                      predicted=f"≥ {P['attn_min']:g}", measured=float(att[-1]),
                      why="deterministic full-batch GD on fixed prompts: an exact inequality on "
                          "the computed mean")
        ctx.condition("loss(H)/loss(0) ≤ loss_ratio_max", ratio <= P["loss_ratio_max"],
                      predicted=f"≤ {P['loss_ratio_max']:g}", measured=ratio,
                      why="deterministic full-batch GD: an exact inequality on the computed loss")
        ctx.note(f"Per-prompt minimum attention {float(att_min[-1]):.3g} (not asserted: prompts "
                 "with few same-feature tokens or a close neighbouring feature lag behind).")
        idx = _sample_idx(steps + 1)
        t = np.maximum(np.arange(steps + 1)[idx], 1)
        ctx.plot(Plot(f"Model {s.model}: relevant-token attention", "GD step", "attention",
                      [Series(t, att[idx], "mean over prompts"),
                       Series(t, att_min[idx], "minimum over prompts", "dashed")],
                      hlines=[(P["attn_min"], "attn_min")], logx=True))
        ctx.plot(Plot(f"Model {s.model}: loss", "GD step", "loss / initial loss",
                      [Series(t, loss[idx] / loss[0], "loss ratio")],
                      hlines=[(P["loss_ratio_max"], "loss_ratio_max")], logx=True, logy=True))


class Regimes(Claim):
    id = "nonlinear.regimes"
    title = "The paper's flat vs sharp curvature regimes split at L = Θ(1/(Δδ))"
    source = f"{ARXIV}, abstract (confirmed); Theorems 1–2 not available"
    provenance = "confirmed paper text"
    statement = (r"L\lesssim\Theta(1/(\Delta\delta)):\ \text{flat (larger }\eta\text{ allowed)};\quad "
                 r"L\gtrsim\Theta(1/(\Delta\delta)):\ \text{sharp (smaller }\eta\text{ needed)}")
    setting_type = RegimesSetting
    negative_control = "never holds; its computed part (collapse at fixed ηL²) is a real check"

    def constants(self, s) -> dict:
        return {"collapse_rtol": 1e-9}

    def check(self, s: RegimesSetting, ctx) -> None:
        C = _orthonormal_cov(s.K, s.d, s.task, s.seed, ctx.profile)
        # 1) at fixed ηL² the whole trajectory is the same for every L (so no L-threshold at
        #    fixed ηL²): three (η, L) pairs with the same product
        Ls = np.array([0.5, 1.0, 3.0])
        prod = s.eta * s.L**2
        etas = prod / Ls**2
        H = s.steps or _horizon(s.K, 0.99, prod, 1.05)
        if _too_long(ctx, H, MAX_STEPS_A, "the collapse run"):
            return
        tr = nl.run_population_gd(C[None] * (Ls**2)[:, None, None], etas, H)
        dev = float(np.max(np.abs(tr.target_mean - tr.target_mean[1:2])))
        ctx.close("attention at fixed ηL² is independent of L", predicted=0.0, measured=dev,
                  atol=float(ctx.predicted["collapse_rtol"]),
                  why="exact identity (rescaling); float64 rounding only")
        # 2) loss decay exponent at several ηL²: polynomial (−1), not exponential
        prods = np.asarray(s.etaL2s, dtype=float)
        H2 = s.steps or _horizon(s.K, 0.995, float(prods.min()), 1.0)
        if _too_long(ctx, H2, MAX_STEPS_A, "the decay-exponent run"):
            return
        tr2 = nl.run_population_gd(np.broadcast_to(C, (len(prods), s.K, s.K)), prods, H2)
        t = tr2.t
        exps = []
        i1 = len(t) - 1
        i0 = max(i1 // 4, 1)
        for r in range(len(prods)):
            l0, l1 = tr2.loss[r, i0], tr2.loss[r, i1]
            ok = i1 > i0 and min(l0, l1) >= np.finfo(float).tiny
            exps.append(float(np.log(l1 / l0) / np.log(t[i1] / t[i0])) if ok else float("nan"))
        ctx.measure("late_loss_exponent", dict(zip([f"{x:g}" for x in prods], exps)))
        ctx.measure("loss_times_t", dict(zip([f"{x:g}" for x in prods],
                                             (tr2.loss[:, -1] * t[-1] * prods).tolist())))
        ctx.note(f"Late loss decays like t^(exponent); measured exponents over the last ¾ of the "
                 f"run at ηL² = {', '.join(f'{x:g}' for x in prods)}: "
                 f"{', '.join(f'{e:.3f}' for e in exps)} (the isotropic flow gives −1, i.e. "
                 "polynomial convergence; an exponential regime would make them grow without "
                 "bound). Not asserted: reported for the procedure below.")
        ctx.note("Procedure once Theorems 1–2 are read: take Δ (feature separation) and δ "
                 "(accuracy or non-degeneracy) as defined there; sweep L across Θ(1/(Δδ)) with η "
                 "set by each theorem's step-size rule (flat: η independent of L; sharp: η ≲ 1/L²); "
                 "measure T(ε) for ε ∈ {1e-2, 1e-3, 1e-4}; test log(1/ε) against poly(1/ε) "
                 "scaling on each side. The rescaling identity (checked above) implies that with η "
                 "fixed all runs lie on one curve in ηL², so a regime split can only come from the "
                 "step-size caps (or from a task shape that changes with L).")
        ctx.add(Check("flat vs sharp regimes of Theorems 1–2", "split at L = Θ(1/(Δδ))",
                      "not testable", None,
                      "the theorem constants Δ, δ and the step-size conditions are not stated in "
                      "the available text", None, "blocked until the paper body is read"))
        ctx.inconclusive("Theorems 1–2 (Δ, δ, step-size conditions) are not available; the report "
                         "gives the procedure and what the rescaling identity implies")


CLAIMS = (
    Rescaling(),
    LScaling(),
    SummaryFastRate(),
    SummaryThreshold(),
    TwoPhase(),
    Asymptote(),
    Oscillation(),
    FinalAttention(),
    Regimes(),
)
