r"""How the settings resolve their derived defaults: step sizes and horizons.

Every rule here is evaluated while a setting is built, so its result is a setting key and is
recorded (what runs is what is recorded).  The rules read the theory's lowered views (flow
times, the stiffness of GD on the isotropic flow, GD's Euler lag) and, for the finite-prompt
model, a *pilot* of the experiment (the first-step attention rate and the feature pairs'
curvatures); they never see a measured outcome of the run they configure.

**Small-step rule.**  GD is Euler's method with unit step on the logit gap's flow; it follows
the flow — and a crossing time sits within the Euler lag :math:`\lambda_K(\theta)` of the flow
time — only while the stiffness :math:`s_K\,\eta c` (:meth:`NonlinearTheory.stiffness`) is
below :data:`MAX_STIFFNESS` (the rules aim at a stiffness :math:`S\le S_{\max}`, smaller for
the heavier profiles: closer to the flow), and a time is resolved only when it spans at least
``min_steps`` steps.  Both bound :math:`\eta c` from above:

.. math::
    \eta c=\min\Bigl(\frac{S}{s_K\,c_{\max}/c},\;
    \frac{\tau_K(\theta)}{(m+\lambda_K(\theta)+1)\,c_{\rm fast}/c}\Bigr),

with :math:`\tau_K(\theta)` the isotropic flow time at :math:`\eta c=1`, :math:`c_{\max}` the
strongest pair's curvature (the stiffness test's) and :math:`c_{\rm fast}` the curvature that
sets the early speed.  Model A on orthonormal features has :math:`c=c_{\max}=c_{\rm fast}=L^2`
exactly (the task covariance is normalised to a unit mean semivariogram).

**Pair curvature** (a heuristic for non-orthonormal features):
:math:`\gamma_{nk}(\lVert v_n-v_k\rVert^2/2)^2`, equal to :math:`c` for :math:`C=cI` on
orthonormal features; the step :math:`B\leftarrow B-\eta G g G` damps a pair's gap once through
each Gram factor, hence the square.  The weakest pair sets horizons, the strongest the stiffness.
On the near-duplicate pair of model A (ρ ∈ [0.8, 0.95], K ∈ {3, 8, 16}) the isotropic flow time
with this curvature over-estimates the measured time to 0.9 by 2–4.5×, so horizons built on it
are generous; a target missed within a derived horizon is ``inconclusive``, never ``fails``.

**Model B's early speed**: :math:`c_{\rm fast}=K^4/(K-1)\cdot d\bar a/d\eta|_0`, from the exact
first-step rate of the mean same-feature attention on a pilot of the prompts (in the isotropic
model A the same rate is :math:`c(K-1)/K^4`); model B measured 1.3–2.2× slower to θ = 0.5 than
this predicts for K ∈ {3, …, 16}, inside the rule's margin.

**The summary's architecture** (W_Q, W_K, W_V, w and b trained; no exact rescaling, no flow
derived here).  Its step is :math:`\eta=f/\lambda_0`, with :math:`\lambda_0` the sharpness
(largest Hessian eigenvalue of the loss) at initialisation at the largest L of the run, measured
on a pilot draw of the same distribution (:func:`summary_pilot_sharpness`), and ``f`` the
``step_fraction`` key.  The bias alone has curvature 2 in the summary's loss, so
:math:`\lambda_0\ge2`.  Training sharpens the loss (the sharpness grew 2–4× on every run tried:
K ∈ {4, 8}, linear and sin tasks, L ∈ [1, 5]); a run whose final η·sharpness exceeds
:data:`SUMMARY_MAX_SHARPNESS` is ``inconclusive`` (gradient descent is stable only below 2).
Horizons of the summary's model are caps (its runs stop at their last threshold) taken as a
multiple of the paper model's isotropic flow time at the same ηL²: the summary's model reached
attention 0.5 in 0.2–0.7× and 0.9–0.98 in 0.1–0.35× the flow's ηL²t on those runs; a threshold
missed within a cap is ``inconclusive``, never ``fails``.
"""

from __future__ import annotations

import math

import numpy as np

from icltheory.core import SettingError, cached, lazy_module, stream_rng

theory = lazy_module("proofs.nonlinear_regression.theory")
tasks = lazy_module("proofs.nonlinear_regression.experiments.tasks")
prompts = lazy_module("proofs.nonlinear_regression.experiments.prompts")
summary_runs = lazy_module("proofs.nonlinear_regression.experiments.summary_runs")

__all__ = ["MAX_STIFFNESS", "small_step", "horizon", "pilot_B", "pair_curvatures",
           "check_eta_L2", "STREAM", "SUMMARY_MAX_SHARPNESS", "summary_pilot_sharpness",
           "summary_step"]

#: GD follows its flow only while the stiffness stays below this
MAX_STIFFNESS = 0.5
#: random streams (``run.rng(k)``): relu covariance of model A, model B features, prompts,
#: the pilot's covariance and prompts, held-out test prompts
STREAM = {"cov_A": 1, "features_B": 10, "prompts_B": 11, "pilot_cov": 12, "pilot_prompts": 13,
          "test_prompts": 14, "summary_init": 20, "summary_cov": 21, "summary_prompts": 22,
          "summary_pilot": 23, "table": 30}
#: the largest η × sharpness a run of the summary's model may end with (GD diverges above 2)
SUMMARY_MAX_SHARPNESS = 1.5
#: the summary pilot's prompts (a sharpness estimate needs no more)
SUMMARY_PILOT_PROMPTS = 128
#: the pilot uses at most this many floats of prompts (a step-size heuristic needs no more)
PILOT_FLOATS = 2_000_000
PILOT_COV_DRAWS = 20_000


def rng(seed: int, stream: str) -> np.random.Generator:
    """The generator of one named stream: the same numbers as ``Run.rng(STREAM[stream])`` in
    the run with this seed (so a pilot draws the run's own features)."""
    return stream_rng(seed, STREAM[stream])


def check_eta_L2(eta: float, L: float, key: str = "L") -> None:
    """The dynamics depend on η and L only through ηL²: it must be a normal float64."""
    prod = eta * L * L
    if not (np.finfo(float).tiny <= prod < math.inf) or not math.isfinite(eta):
        raise SettingError(key, f"η·L² = {eta:.3g}·{L:.3g}² is outside the normal float64 range "
                                "(the dynamics depend on η and L only through ηL²)")


def small_step(K: int, theta: float, min_steps: int, c_max: float = 1.0,
               c_fast: float = 1.0, stiffness: float = MAX_STIFFNESS) -> float:
    """The largest ηL² (curvatures at scale 1) with stiffness ≤ ``stiffness`` (at most
    MAX_STIFFNESS) and the flow time to ``theta`` at least ``min_steps`` steps plus the Euler
    lag and one step."""
    th = theory.theory()
    lag = float(th.euler_lag(theta, K)) + 1.0
    return min(min(stiffness, MAX_STIFFNESS) / (th.stiffness(K, 1.0) * c_max),
               float(th.flow_time(theta, K, 1.0)) / ((min_steps + lag) * c_fast))


def horizon(K: int, theta: float, eta_c: float, factor: float, extra: int = 50) -> int:
    """``factor`` × the isotropic flow time to θ at ηc, plus the Euler lag and ``extra`` steps."""
    th = theory.theory()
    T = factor * float(th.flow_time(theta, K, eta_c)) + float(th.euler_lag(theta, K)) + extra
    if not math.isfinite(T) or T > 1e15:
        return 10**15
    return int(math.ceil(T))


def pair_curvatures(C: np.ndarray, V: np.ndarray) -> np.ndarray:
    """γ_nk (‖v_n − v_k‖²/2)² over distinct pairs (see the module docstring)."""
    g = tasks.semivariogram(C)
    D2 = np.sum((V[:, None, :] - V[None, :, :]) ** 2, axis=2)
    e = g * (D2 / 2.0) ** 2
    return e[~np.eye(len(V), dtype=bool)]


def curvature_range(C: np.ndarray, V: np.ndarray, key: str) -> tuple[float, float]:
    """(weakest, strongest) pair curvature; coinciding features cannot be told apart."""
    e = pair_curvatures(C, V)
    if not e.min() > 0 or not np.all(np.isfinite(e)):
        raise SettingError(key, "two features coincide (or the task cannot tell them apart): the "
                                "relevant-token attention is not identifiable, so no step size or "
                                "horizon can be derived")
    return float(e.min()), float(e.max())


@cached(maxsize=16)
def pilot_B(K: int, d: int, N: int, noise: float, task: str, prompts_: int,
            seed: int) -> tuple[float, float, float]:
    """Model B's (weakest, strongest, early-speed) curvature at scale 1 from a pilot: the
    features of stream ``features_B`` (those model B trains on in the sweeps and the
    finite-prompt claims; the summary table's seeds draw their own, so there it is an
    independent draw of the same law), the task covariance on them (relu: a small Monte Carlo)
    and the first-step attention rate on at most ``PILOT_FLOATS`` floats of pilot prompts."""
    V = tasks.random_unit_features(K, d, rng(seed, "features_B"))
    with np.errstate(all="ignore"):
        C = tasks.task_covariance(task, V, rng(seed, "pilot_cov"), PILOT_COV_DRAWS)
    c_min, c_max = curvature_range(C, V, "d")
    M = int(min(prompts_, max(16, PILOT_FLOATS // ((N + 1) * (d + 1)))))
    batch = prompts.make_prompts(V, M, N, noise, task, rng(seed, "pilot_prompts"))
    with np.errstate(all="ignore"):
        c_fast = K**4 / (K - 1) * prompts.first_step_attention_rate(batch)
    if not (math.isfinite(c_fast) and c_fast > 0):
        c_fast = c_max
    return c_min, c_max, float(c_fast)


@cached(maxsize=16)
def near_duplicate_curvatures(K: int, d: int, overlap: float, task: str, draws: int,
                              seed: int) -> tuple[float, float]:
    """(close pair's, strongest pair's) curvature of the normalised near-duplicate geometry (the
    same covariance the experiment uses: same stream and draws)."""
    V = tasks.near_duplicate_features(K, d, overlap)
    with np.errstate(all="ignore"):
        C = tasks.population_covariance(task, V, rng(seed, "cov_A"), draws)
    return curvature_range(C, V, "overlap")


@cached(maxsize=32)
def summary_pilot_sharpness(features: str, K: int, d: int, N: int, noise: float, task: str,
                            prompts_: int, width: int, init_scale: float, L: float,
                            draws: int, seed: int) -> float:
    """The sharpness of the summary's loss at initialisation, at scale ``L``, on a pilot draw
    (its own stream) of at most :data:`SUMMARY_PILOT_PROMPTS` prompts: ``features``
    ``"orthonormal"`` (noiseless, normalised labels) or ``"random"`` (model B's prompts)."""
    g = rng(seed, "summary_pilot")
    M = int(min(prompts_, SUMMARY_PILOT_PROMPTS))
    with np.errstate(all="ignore"):
        if features == "orthonormal":
            batch = summary_runs.orthonormal_prompts(task, K, N, M, draws, g, g)
        else:
            V = tasks.random_unit_features(K, d, g)
            batch = prompts.make_prompts(V, M, N, noise, task, g)
        W = summary_runs.initial_weights(g, 1, batch.X.shape[-1], width, init_scale)
        P = summary_runs.summary_model.stack_prompts([batch])
        sim = summary_runs.summary_model.SummaryGD(P, [L], 1.0, W)
        lam = float(summary_runs.summary_model.sharpness(sim)[0])
    if not (math.isfinite(lam) and lam > 0):
        raise SettingError("step_fraction", "the summary model's sharpness at initialisation "
                                            "cannot be measured here; set the step η")
    return lam


def summary_step(fraction: float, *pilot) -> float:
    """The summary's model's step η = fraction / sharpness at initialisation (see the module
    docstring; ``pilot``: the arguments of :func:`summary_pilot_sharpness`)."""
    return fraction / summary_pilot_sharpness(*pilot)
