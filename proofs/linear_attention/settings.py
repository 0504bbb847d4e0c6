r"""Settings of the linear-attention claims (Zhang, Singh, Latham, Saxe, arXiv 2501.16265).

**What runs is what is recorded.**  Every derived default — step sizes, step budgets, horizons,
seeds, sample sizes — is resolved here (``by_profile=`` fields, or ``_resolve``), so a verdict's
``setting`` re-parses to the run that produced it.  Horizons and step sizes that come from the
theory (escape times, stability curvatures, the logistic's half time) are read from
:mod:`.theory` while resolving.

**Units.**  Losses are plain MSE; models carry the paper's $1/N$; GD runs on $L_{1/2}=L/2$ with
step $\eta$, so step $k$ is $t/\tau=\eta k$.  The reference code's ``--lr``/``--init`` map to
these units by $dt/\tau=2\eta_{\rm code}N^{2/p}$ per step and paper weights $=N^{1/p}\times$ code
weights ($p=3$ for ATTN_S, $p=2$ for ATTN_M; :func:`code_to_paper`), so ``steps=k`` is ``--epoch
k`` of the code at its default rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icltheory.backends import BACKEND_NAMES, get_backend
from icltheory.core import Choice, Float, Floats, Int, Setting, SettingError, lazy_module

theory = lazy_module("proofs.linear_attention.theory")

__all__ = ["code_to_paper", "typical_scale", "SpectrumSetting", "EquivalenceSetting",
           "StructureSetting", "FixedPointSetting", "MergedFixedPointSetting", "SigmoidSetting", "TrajectorySetting", "SeparateSetting",
           "ScalarOdeSetting", "RankSetting", "InitScaleSetting", "SoftmaxSetting"]

#: eigenvalues accepted (a wider range only produces underflow or overflow, never a decision)
LAMBDA_RANGE = (1e-6, 1e6)
#: the most GD steps any resolved horizon may ask for (beyond: an impossible setting)
STEPS_MAX = 10**15
_FIG3 = (0.4, 0.3, 0.2, 0.1)
_CODE_INIT_FIG4 = 5e-3
_CODE_LR_M, _CODE_INIT_M = 0.001, 1e-6


def code_to_paper(N: int, lr_code: float, init_code: float, p: int = 3) -> tuple[float, float]:
    """(η in τ per step, paper-unit init scale) for the reference code's ``--lr`` and ``--init``
    (output homogeneous of degree p in the weights: 3 for ATTN_S, 2 for ATTN_M)."""
    return 2.0 * lr_code * N ** (2.0 / p), init_code * N ** (1.0 / p)


def typical_scale(w_init: float, R: int, D: int) -> float:
    r"""Balanced-equivalent initial scale $(\sigma_v\sigma_k\sigma_q)^{1/3}=w\,(R(D+1))^{-1/3}$ of one
    head's product $v\,k_dq_d$ (value std w, key/query std $w/\sqrt{R(D+1)}$)."""
    return w_init * (R * (D + 1)) ** (-1.0 / 3.0)


#: keys a user may give that set a default step or a horizon (besides the step key itself)
_STEP_INPUTS = ("code_lr", "w_init", "code_init", "v0", "horizon_factor", "w_init_merged")


def _steps(owner: Setting, key: str, horizon: float, lr: float) -> int | None:
    """GD steps of size ``lr`` (the value of ``owner``'s key ``key``) covering ``horizon`` τ.

    More than STEPS_MAX: bad input naming the keys the user gave that set the step or the
    horizon, when the same setting without them could be run; otherwise (the defaults for the
    given spectrum need more steps than any run may take, whatever the user gave) the setting is
    beyond reach — the spectrum, not the given step, is what cannot be met: no run is made, and
    ``key`` and the steps are left unset (``None``), so the recorded setting re-parses to the same
    refusal."""
    if owner.beyond_reach is not None:  # found beyond reach already (its step is unset)
        return None
    n = horizon / lr
    if math.isfinite(n) and n <= STEPS_MAX:
        return max(int(math.ceil(n)), 1)
    given = owner.given()
    culprits = [k for k in (key, *_STEP_INPUTS) if k in given]
    what = f"the horizon {horizon:.3g} τ needs {n:.3g} steps of {key} = {lr:.3g} τ, more than {STEPS_MAX:.0e}"
    if culprits and _reachable_without(owner, culprits):
        raise SettingError(culprits[0], what + (f" (raise {key})" if culprits[0] == key else
                                                f" (set by the given {', '.join(culprits)})"))
    lam = list(getattr(owner, "lambdas", None) or [owner.lam])
    owner._beyond_reach(what + " any run may take, as at the default step for this spectrum, the "
                        "largest GD takes stably: no step given could do better (λ from "
                        f"{min(lam):.3g} to {max(lam):.3g}: its largest eigenvalues bound the step, its "
                        "smallest set the horizon)")
    owner._set(key, None)
    return None


def _reachable_without(owner: Setting, keys: list[str]) -> bool:
    """Whether ``owner``'s setting with ``keys`` back at their defaults (the user's other values
    kept) can be run: then the given values of ``keys`` are what cannot be met."""
    raw = {k: v for k, v in owner.given().items() if k not in keys}
    try:
        return type(owner).parse(raw).beyond_reach is None
    except SettingError:
        return True  # the defaults fail for another reason: the given values are what was asked


def _lambdas(default, doc: str, sample=(0.1, 2.0, "log")):
    return Floats(default, min=LAMBDA_RANGE[0], max=LAMBDA_RANGE[1], length="D", sample=sample, doc=doc)


# =============================================================================== shared


@dataclass(frozen=True, kw_only=True)
class SpectrumSetting(Setting):
    """Keys common to every linear-attention claim: D, N, H and the eigenvalues λ of Λ."""

    D: int | None = Int(None, min=1, max=32, sample=(1, 5),
                        doc="input dimension (default: number of lambdas, else 4)")
    N: int = Int(31, min=1, max=100_000, sample=(2, 60), doc="context length N (the paper's 1/N)")
    H: int = Int(8, min=1, max=64, sample=(1, 6), doc="number of heads")
    lambdas: tuple | None = _lambdas(None, "eigenvalues of Λ (default Λ = I)")

    _default_D = 4

    def _resolve(self) -> None:
        if self.D is None:
            self._set("D", len(self.lambdas) if self.lambdas is not None else self._default_D)
        if self.lambdas is None:
            self._set("lambdas", (1.0,) * self.D)

    @property
    def lam(self) -> np.ndarray:
        return np.asarray(self.lambdas, dtype=float)

    def c(self) -> np.ndarray:
        """c_d per direction (from the theory)."""
        return theory.paper().c(self.lambdas, self.N)


@dataclass(frozen=True, kw_only=True)
class EquivalenceSetting(SpectrumSetting):
    """ATTN_M reduction: D=4, N=31, H=8, white Λ; random tokens and weights."""

    D: int | None = Int(None, min=1, max=16, sample=(1, 5), doc="input dimension (default 4)")
    trials: int | None = Int(None, min=1, max=100_000, by_profile=(20, 100, 1000),
                             doc="batches of 8 random sequences, each with fresh random weights")


def _check_rank(R, D) -> None:
    if R is not None and R > D:
        raise SettingError("R", f"rank R={R} exceeds D={D}")


@dataclass(frozen=True, kw_only=True)
class StructureSetting(EquivalenceSetting):
    """ATTN_S reduction: spectrum and heads of Fig. 3 (no training)."""

    H: int = Int(5, min=1, max=64, sample=(1, 6), doc="number of heads")
    R: int = Int(1, min=1, max=16, sample=(1, 3), doc="rank of each head's key and query (R ≤ D)")
    lambdas: tuple | None = _lambdas(_FIG3, "eigenvalues of Λ, any order (default Fig. 3)")

    def _validate(self) -> None:
        _check_rank(self.R, self.D)


@dataclass(frozen=True, kw_only=True)
class FixedPointSetting(SpectrumSetting):
    """ATTN_S fixed points: Fig. 3's spectrum, N=31; realised with max(H, D) rank-1 heads."""

    D: int | None = Int(None, min=1, max=12, sample=(1, 5), doc="input dimension (default 4; 2^D subsets)")
    H: int = Int(5, min=1, max=64, sample=(1, 6), doc="heads (each subset is realised with max(H, D))")
    lambdas: tuple | None = _lambdas(_FIG3, "eigenvalues of Λ, any order (default Fig. 3)")
    mc_samples: int | None = Int(None, min=100, max=10**7, by_profile=(20_000, 100_000, 400_000),
                                 doc="Monte Carlo contexts per fixed point")


# =============================================================================== ATTN_M


@dataclass(frozen=True, kw_only=True)
class MergedFixedPointSetting(SpectrumSetting):
    """ATTN_M landscape: Fig. 1's spectrum (0.4, 0.3, 0.2, 0.1), N=31, H=8."""

    D: int | None = Int(None, min=1, max=16, sample=(1, 5), doc="input dimension (default 4)")
    lambdas: tuple | None = _lambdas(_FIG3, "eigenvalues of Λ (default Fig. 1: 0.4,0.3,0.2,0.1)",
                                     sample=(0.2, 2.0, "log"))
    w_init: float = Float(1e-3, min=1e-100, max=1.0, sample=(1e-4, 1e-2, "log"),
                          doc="initialisation scale of the population GD run")
    seeds: int | None = Int(None, min=1, max=64, by_profile=(2, 3, 6), doc="random initialisations")
    mc_samples: int | None = Int(None, min=100, max=10**7, by_profile=(20_000, 200_000, 1_000_000),
                                 doc="Monte Carlo contexts per estimate")
    lr: float | None = Float(None, min=1e-300, max=1e300,
                             doc="GD step η (default: 1/4 of the smoothness bound 2·max B_dd·λ_max·Σ1/(λc))")
    steps: int | None = Int(None, min=1, max=STEPS_MAX,
                            doc="most GD steps (default: 3 × (escape + convergence to 1e-14) of the slowest direction)")

    def _resolve(self) -> None:
        super()._resolve()
        p = theory.paper()
        if self.lr is None:
            curv = 2 * float(np.max(p.beta_diag(self.lambdas, self.N)) * max(self.lambdas)
                             * np.sum(p.m_star(self.lambdas, self.N)))
            self._set("lr", 0.25 / curv)
        if self.steps is None:
            lmin = min(self.lambdas)
            t = 3 * (2 * math.log(1 / self.w_init) + 35) / (2 * lmin**2)
            self._set("steps", _steps(self, "lr", t, self.lr))


@dataclass(frozen=True, kw_only=True)
class SigmoidSetting(SpectrumSetting):
    """ATTN_M with Λ = λI (the closed form needs equal eigenvalues): D=4, N=31, H=8, λ=1."""

    D: int | None = Int(None, min=1, max=10, sample=(1, 6), doc="input dimension (default 4)")
    H: int = Int(8, min=1, max=64, sample=(1, 4), doc="number of heads")
    lambdas: tuple | None = Floats(None, min=LAMBDA_RANGE[0], max=LAMBDA_RANGE[1], length="D",
                                   doc="eigenvalues of Λ, all equal (default Λ = I)")
    w_init: float = Float(1e-3, min=1e-100, max=1.0, sample=(1e-4, 3e-2, "log"),
                          doc="initialisation scale (aligned balanced init: σ(0) = w²/√D)")
    P: int | None = Int(None, min=100, max=10**6, by_profile=(1000, 5000, 20_000),
                        doc="training sequences of the finite-sample run")
    held_out: int | None = Int(None, min=100, max=10**7, by_profile=(20_000, 20_000, 50_000),
                               doc="fresh sequences on which the trained and the initial model's "
                                   "losses are measured")
    lr: float | None = Float(None, min=1e-300, max=1e300,
                             doc="GD step η of the finite-sample run (default 0.04/r, r = 2λ²√D)")
    steps: int | None = Int(None, min=1, max=STEPS_MAX,
                            doc="GD steps of the finite-sample run (default: to t_half + 12/r)")
    horizon: float | None = Float(None, min=1e-300, max=1e300,
                                  doc="end of the population flow, τ (default: t_half + 10/r, at least "
                                      "2(ln(√D/(λcw²)) + 10)/r)")
    time_points: int | None = Int(None, min=50, max=100_000, by_profile=(401, 2001, 8001),
                                  doc="time points at which the population flow is recorded")
    backend: str = Choice("numpy", BACKEND_NAMES, doc="trainer backend (torch is an optional extra)")

    def _resolve(self) -> None:
        super()._resolve()
        if len(set(self.lambdas)) != 1:
            raise SettingError("lambdas", "the closed-form σ(t) needs Λ = λI (all eigenvalues equal)")
        lam = self.lambdas[0]
        c = float(theory.paper().c(self.lambdas, self.N)[0])
        # σ(0) = w²/√D must be below σ(∞)/2 = 1/(2λc) for a plateau (compared in logs)
        if 2 * math.log(self.w_init) - 0.5 * math.log(self.D) >= -math.log(2 * lam * c):
            raise SettingError("w_init", f"{self.w_init:g} is too large: σ(0) ≥ σ(∞)/2, no plateau")
        k = theory.paper().sigmoid(self.D, self.N, lam, self.w_init)
        r, t_half = k["rate"], k["t_half"]
        if self.lr is None:
            self._set("lr", 0.04 / r)
        if self.steps is None:
            self._set("steps", _steps(self, "lr", t_half + 12.0 / r, self.lr))
        if self.horizon is None:
            self._set("horizon", max(t_half + 10.0 / r,
                                     2 * (math.log(math.sqrt(self.D) / (lam * c)) - 2 * math.log(self.w_init) + 10) / r))

    def _validate(self) -> None:
        get_backend(self.backend)  # an unavailable optional backend is a setting error


@dataclass(frozen=True, kw_only=True)
class TrajectorySetting(SpectrumSetting):
    """Fig. 1: ATTN_M and its two-layer network trained side by side — D=4, N=31, H=8, Λ with
    eigenvalues 0.4, 0.3, 0.2, 0.1 in a random eigenbasis, code init 1e-6 and lr 0.001, 6001
    steps, 5000 training sequences (2500 drawn and their label-negated copies)."""

    D: int | None = Int(None, min=1, max=12, sample=(1, 5), doc="input dimension (default 4)")
    N: int = Int(31, min=1, max=2000, sample=(2, 60), doc="context length N (the paper's 1/N)")
    H: int = Int(8, min=1, max=64, sample=(1, 8), doc="number of heads")
    lambdas: tuple | None = _lambdas(_FIG3, "eigenvalues of Λ (default Fig. 1: 0.4,0.3,0.2,0.1; the eigenbasis "
                                            "is a random rotation, as in the figure)", sample=(0.2, 2.0, "log"))
    pairs: int | None = Int(None, min=10, max=100_000, by_profile=(200, 1000, 2500),
                            doc="sequences drawn; the training set holds them and their label-negated copies "
                                "(2 × pairs sequences; Fig. 1: 5000)")
    code_init: float | None = Float(_CODE_INIT_M, min=1e-100, max=1e3, sample=(1e-6, 1e-2, "log"),
                                    doc="the reference code's --init: every weight N(0, init²) in code units "
                                        "(Fig. 1: 1e-6), except the entries the reduction needs at zero")
    code_lr: float | None = Float(_CODE_LR_M, min=1e-300, max=1e300, doc="the reference code's --lr (Fig. 1: 0.001)")
    w_init: float | None = Float(None, min=1e-100, max=1e3, doc="init std of every weight, paper units "
                                                                "(default: code_init × N^{1/2})")
    lr: float | None = Float(None, min=1e-300, max=1e300,
                             doc="GD step η = t/τ per step, both trainings (default: 2·code_lr·N, capped at 1/4 of "
                                 "the smoothness bound 2·max E[ββᵀ]_dd·λ_max·Σ1/(λc) near the minimum)")
    steps: int | None = Int(None, min=1, max=10**6, by_profile=(2001, 6001, 6001),
                            doc="GD steps of both trainings (Fig. 1: 6001)")

    def _resolve(self) -> None:
        super()._resolve()
        p = theory.paper()
        eta, w = code_to_paper(self.N, self.code_lr, self.code_init, 2)
        if self.w_init is None:
            self._set("w_init", w)
        if self.lr is None:
            curv = 2 * float(np.max(p.beta_diag(self.lambdas, self.N)) * max(self.lambdas)
                             * np.sum(p.m_star(self.lambdas, self.N)))
            self._set("lr", min(eta, 0.25 / curv))

    @property
    def keep_every(self) -> int:
        """The weights of both trainings are compared every this many steps (about 300 times)."""
        return max(1, self.steps // 300)


# =============================================================================== ATTN_S


@dataclass(frozen=True, kw_only=True)
class _SeparateBase(SpectrumSetting):
    """ATTN_S training: Fig. 3's spectrum and heads."""

    D: int | None = Int(None, min=1, max=16, sample=(2, 4), doc="input dimension (default 4)")
    H: int = Int(5, min=1, max=32, sample=(2, 5), doc="number of heads")
    R: int = Int(1, min=1, max=16, doc="rank of each head's key and query (R ≤ D)")
    lambdas: tuple | None = _lambdas(_FIG3, "eigenvalues of Λ, any order (default Fig. 3)",
                                     sample=(0.15, 0.6, "log"))

    def _validate(self) -> None:
        _check_rank(self.R, self.D)

    def kappa_max(self) -> float:
        p = theory.paper()
        return max(p.stability_curvature(l, c) for l, c in zip(self.lambdas, self.c()))

    def unstable_lr(self, lr: float) -> str | None:
        """Why GD at step ``lr`` cannot stand for the gradient flow (beyond 2/κ, κ the curvature
        at the top learned direction), or ``None``."""
        limit = 2.0 / self.kappa_max()
        if lr <= limit:
            return None
        return (f"lr = {lr:.3g} is beyond GD's stability limit 2/κ = {limit:.3g} at the learned directions: "
                "the run does not follow the gradient flow the claim is about")

    def horizon(self, R: int, margin: float = 3.0) -> float:
        """margin × the scalar-ODE time (escape from the balanced-equivalent init, then the drop
        to u = 0.9) of the slowest stage: rank-R heads escape driven by the top direction of
        their R (directions 1, R+1, 2R+1, … of the learnable ones), in τ."""
        p = theory.paper()
        lam, c = self.lambdas, self.c()
        v0 = typical_scale(self.w_init, R, self.D)
        n = theory.learnable(self.D, self.H, R)
        worst = 0.0
        by_size = sorted(range(len(lam)), key=lambda i: -lam[i])  # (a horizon, not a prediction)
        for i in by_size[:n:R]:
            u0 = v0 / p.v_star(lam[i], c[i])
            if u0 >= 0.5:
                t = p.transit_time(lam[i], c[i], min(u0, 0.89), 0.9)
            else:
                t = p.escape_time(lam[i], c[i], v0) + p.transit_time(lam[i], c[i], 0.5, 0.9)
            worst = max(worst, t)
        return margin * worst


@dataclass(frozen=True, kw_only=True)
class _HeadsSetting(_SeparateBase):
    """Adds the reference code's init and step, mapped to paper units."""

    code_init: float | None = Float(None, min=1e-100, max=1e3, by_profile=(0.04, 0.01, 0.01),
                                    doc="the reference code's --init (Fig. 3: 0.01; quick: 4× shorter plateaus)")
    code_lr: float | None = Float(None, min=1e-300, max=1e300, by_profile=(0.04, 0.02, 0.02),
                                  doc="the reference code's --lr (Fig. 3: 0.02)")
    w_init: float | None = Float(None, min=1e-100, max=1e3,
                                 doc="value-weight init std, paper units (default: code_init × N^{1/3})")
    lr: float | None = Float(None, min=1e-300, max=1e300,
                             doc="GD step η = t/τ per step (default: 2·code_lr·N^{2/3}, capped at 1.5/κ, "
                                 "κ = 9λ^{5/3}c^{-1/3} the curvature at the top learned direction); with "
                                 "integrator=flow only the flow's time unit (its first record; horizon ∝ steps × lr), "
                                 "raised where the default would need more than 1e15 steps")

    def _set_steps(self, horizon: float, lr_given: bool) -> None:
        """``steps`` covering ``horizon`` (τ) at lr.  Under the adaptive flow lr is only a time
        unit (its first record, and with steps its horizon), so where the default lr would need
        more than STEPS_MAX steps (a tiny λ_min) the flow gets a larger unit instead of a refusal."""
        if getattr(self, "integrator", None) == "flow" and not lr_given and horizon / self.lr > STEPS_MAX:
            self._set("lr", horizon / STEPS_MAX * (1 + 1e-9))
        self._set("steps", _steps(self, "lr", horizon, self.lr))

    def _resolve(self) -> None:
        explicit_gd = self.lr is not None or getattr(self, "steps", None) is not None
        super()._resolve()
        eta, w = code_to_paper(self.N, self.code_lr, self.code_init, 3)
        if self.lr is None:
            self._set("lr", min(eta, 1.5 / self.kappa_max()))
        if self.w_init is None:
            self._set("w_init", w)
        if getattr(self, "integrator", None) == "auto":
            self._set("integrator", "gd" if explicit_gd else "flow")


#: the population simulator: "flow" integrates the gradient flow adaptively (an implicit
#: multistep method per row, the rows in one lockstep batch; tolerance ``rtol``, its accuracy
#: measured by a re-solve at 10× tighter tolerances), "gd" runs GD at step ``lr`` for at most
#: ``steps`` steps; "auto" is "gd" when ``lr`` or ``steps`` is given (a claim about GD at that
#: step) and "flow" otherwise
_INTEGRATOR = dict(doc="population simulator: flow (adaptive through the plateaus, tolerance rtol, its accuracy "
                       "measured by a re-solve at 10× tighter tolerances; the horizon is 10 × steps × lr; it stops "
                       "itself once every direction is learned and settled) | gd (GD at step lr, at most steps "
                       "steps) | auto (gd when lr or steps is given, else flow)")
#: the flow's relative tolerance per profile (atol = 1e-3 × rtol × the rms initial weight)
_RTOL = dict(min=1e-13, max=1e-3, by_profile=(1e-6, 1e-7, 1e-9),
             doc="relative tolerance of the adaptive flow (atol = 1e-3·rtol × the rms initial weight; its re-solve "
                 "runs at rtol/10)")


@dataclass(frozen=True, kw_only=True)
class SeparateSetting(_HeadsSetting):
    """Fig. 3: D=4, N=31, H=5, R=1, λ = 0.4,0.3,0.2,0.1, code lr 0.02 and init 0.01."""

    N: int = Int(31, min=1, max=10_000, sample=(8, 40), doc="context length N")
    steps: int | None = Int(None, min=1, max=STEPS_MAX,
                            doc="most GD steps (default: 3 × the theory horizon, itself 3 × the slowest escape; "
                                "the run stops once every direction is learned and settled)")
    seeds: int | None = Int(None, min=1, max=64, by_profile=(1, 6, 6),
                            doc="random initialisations of the population simulator (a)")
    fs_seeds: int | None = Int(None, min=0, max=8, by_profile=(0, 1, 3),
                               doc="seeds also trained by the finite-sample simulator (b) (0: skip it)")
    P: int | None = Int(None, min=100, max=10**6, by_profile=(20_000, 80_000, 80_000),
                        doc="training sequences of simulator (b)")
    code_init: float | None = Float(None, min=1e-100, max=1e3, by_profile=(0.01, 0.01, 0.01),
                                    doc="the reference code's --init (Fig. 3: 0.01; the adaptive flow's cost grows "
                                        "only like ln(1/init), so every profile uses the figure's)")
    integrator: str = Choice("auto", ("auto", "flow", "gd"), **_INTEGRATOR)
    rtol: float | None = Float(None, **_RTOL)
    backend: str = Choice("numpy", BACKEND_NAMES, doc="backend of simulator (b): its moments over the P sequences "
                                                      "and its GD (torch: float64, CUDA when present)")

    def _resolve(self) -> None:
        lr_given = self.lr is not None
        super()._resolve()
        if self.steps is None:
            self._set_steps(3 * self.horizon(self.R), lr_given)

    def _validate(self) -> None:
        super()._validate()
        get_backend(self.backend)  # an unavailable optional backend is a setting error


@dataclass(frozen=True, kw_only=True)
class RankSetting(_HeadsSetting):
    """Fig. 4: D=8, N=31, H=9, λ_k = k/36, code init 5e-3; ranks 1, 2, 4, … ≤ D and D.

    Random settings keep Fig. 4's evenly spaced spectrum: where the eigenvalues sharing a head
    are far apart (say 10:1), the head's smaller directions lag behind its top one and make a
    clear plateau of their own — the claim is about spectra like the figure's."""

    D: int | None = Int(None, min=1, max=16, doc="input dimension (default 8)")
    H: int = Int(9, min=1, max=32, sample=(2, 9), doc="number of heads")
    R: int | None = Int(None, min=1, max=16, doc="check only this rank (default: the ranks from min_rank up)")
    min_rank: int | None = Int(None, min=1, max=16, by_profile=(4, 1, 1),
                               doc="smallest rank of the default sweep 1, 2, 4, … ≤ D and D")
    lambdas: tuple | None = _lambdas(tuple(k / 36 for k in range(8, 0, -1)),
                                     "eigenvalues of Λ, any order (default Fig. 4: k/36, k = 1..8)", sample=None)
    seeds: int | None = Int(None, min=1, max=16, by_profile=(1, 2, 2), doc="random initialisations per rank")
    steps: int | None = Int(None, min=1, max=STEPS_MAX,
                            doc="most GD steps (default: 2 × the theory horizon of the smallest rank)")
    code_init: float | None = Float(None, min=1e-100, max=1e3,
                                    by_profile=(_CODE_INIT_FIG4, _CODE_INIT_FIG4, _CODE_INIT_FIG4),
                                    doc="the reference code's --init (Fig. 4: 5e-3, at every profile: the adaptive "
                                        "flow's cost grows only like ln(1/init))")
    code_lr: float | None = Float(None, min=1e-300, max=1e300, by_profile=(0.1, 0.1, 0.1),
                                  doc="the reference code's --lr (5× the figure's 0.02: the same flow, 5× fewer steps)")
    integrator: str = Choice("auto", ("auto", "flow", "gd"), **_INTEGRATOR)
    rtol: float | None = Float(None, **_RTOL)

    def _resolve(self) -> None:
        lr_given = self.lr is not None
        super()._resolve()
        if self.steps is None:
            self._set_steps(2 * self.horizon(min(self.ranks)), lr_given)

    @property
    def ranks(self) -> list[int]:
        if self.R is not None:
            return [self.R]
        out, r = [], 1
        while r <= self.D:
            if r >= min(self.min_rank, self.D):
                out.append(r)
            r *= 2
        if not out or out[-1] != self.D:
            out.append(self.D)
        return out


@dataclass(frozen=True, kw_only=True)
class ScalarOdeSetting(Setting):
    """One-head plateau ODE; defaults = λ = 0.1, tr Λ = 1, N = 31, v0 = 0.03."""

    aliases = {"lambda": "lam"}
    lam: float = Float(0.1, min=LAMBDA_RANGE[0], max=LAMBDA_RANGE[1], sample=(0.05, 2.0, "log"),
                       doc="eigenvalue λ of the direction being learned (key: lambda)")
    trace: float = Float(1.0, min=LAMBDA_RANGE[0], max=1e8, sample=(1.0, 3.0),
                         doc="tr Λ (enters c = 1 + (1 + tr Λ/λ)/N)")
    N: int = Int(31, min=1, max=100_000, sample=(2, 60), doc="context length N")
    v0: float = Float(0.03, min=1e-100, max=1e3, sample=(0.01, 0.1, "log"),
                      doc="initial balanced weight v(0) of the head")
    lr: float | None = Float(None, min=1e-300, max=1e300,
                             doc="GD step of simulator (a) (default: min(T/2000, 0.2/κ), T the escape time)")
    steps: int | None = Int(None, min=1, max=STEPS_MAX, doc="GD steps of simulator (a) (default: 1.5 T/η)")
    max_gd_steps: int | None = Int(None, min=1, max=10**9, by_profile=(100_000, 200_000, 2_000_000),
                                   doc="simulator (a) runs only if steps ≤ this (else inconclusive)")

    def _validate(self) -> None:
        if self.lam > self.trace:
            raise SettingError("lambda", f"λ={self.lam:g} exceeds tr Λ={self.trace:g}")

    def _resolve(self) -> None:
        if self.lam > self.trace:
            return  # _validate names the problem
        p = theory.paper()
        c = p.scalar_c(self.lam, self.trace, self.N)
        if self.v0 >= 0.5 * p.v_star(self.lam, c):
            raise SettingError("v0", f"{self.v0:g} ≥ v*/2 = {0.5 * p.v_star(self.lam, c):g}: no plateau to escape")
        T = p.escape_time(self.lam, c, self.v0)
        if self.lr is None:
            self._set("lr", min(T / 2000.0, 0.2 / p.stability_curvature(self.lam, c)))
        if self.steps is None:
            self._set("steps", _steps(self, "lr", 1.5 * T, self.lr))


@dataclass(frozen=True, kw_only=True)
class InitScaleSetting(_HeadsSetting):
    """ATTN_S sweep around Fig. 3's init and ATTN_M sweep around Fig. 1's (H=8, code lr 0.001)."""

    H_merged: int = Int(8, min=1, max=64, sample=(1, 8), doc="ATTN_M heads (Fig. 1)")
    w_init_merged: float | None = Float(None, min=1e-100, max=1e3,
                                        doc="largest ATTN_M init, paper units (default: code 1e-4 × N^{1/2}; "
                                            "the sweep goes down ×1e-3)")
    lr_merged: float | None = Float(None, min=1e-300, max=1e300,
                                    doc="ATTN_M GD step η (default: code lr 0.001 → 2·0.001·N, capped at 0.05/‖Λ²‖_F)")
    seeds: int = Int(1, min=1, max=8, doc="random directions (each swept over all scales)")
    steps_merged: int | None = Int(None, min=1, max=STEPS_MAX,
                                   doc="most ATTN_M GD steps (default: 16 × 3(ln(1/w_min) + 5)/‖Λ²‖_F; "
                                       "the run stops once converged)")
    steps_separate: int | None = Int(None, min=1, max=STEPS_MAX,
                                     doc="ATTN_S GD steps (default: 3 × the first escape time at the smallest scale)")

    #: the swept scales, relative to w_init (ATTN_S) and w_init_merged (ATTN_M)
    SCALES_S = (1.0, 1 / 2, 1 / 4, 1 / 8)
    SCALES_M = (1.0, 1e-1, 1e-2, 1e-3)

    def _resolve(self) -> None:
        super()._resolve()
        p = theory.paper()
        eta, w = code_to_paper(self.N, _CODE_LR_M, _CODE_INIT_M * 1e2, 2)
        g = p.merged_growth_rate(self.lambdas)
        if self.lr_merged is None:
            self._set("lr_merged", min(eta, 0.05 / g))
        if self.w_init_merged is None:
            self._set("w_init_merged", w)
        # the sweep's largest ATTN_M product w² must stay below the smallest drop's M* scale
        if self.w_init_merged**2 >= 0.1 * float(np.min(p.m_star(self.lambdas, self.N))):
            raise SettingError("w_init_merged", f"{self.w_init_merged:g} is not small: w² reaches "
                                                "a tenth of the learned value 1/(λc)")
        if self.steps_merged is None:
            wmin = self.w_init_merged * min(self.SCALES_M)
            self._set("steps_merged", _steps(self, "lr_merged", 16 * 3 * (math.log(1 / wmin) + 5) / g, self.lr_merged))
        if self.steps_separate is None:
            lam, c = self.lambdas, self.c()
            top = p.order(lam)[0]
            v0 = typical_scale(self.w_init * min(self.SCALES_S), self.R, self.D)
            if v0 >= 0.5 * p.v_star(lam[top], c[top]):
                raise SettingError("w_init", f"{self.w_init:g} is not small: the smallest swept scale "
                                             "already starts past half the learned value")
            self._set("steps_separate", _steps(self, "lr", 3 * p.escape_time(lam[top], c[top], v0), self.lr))


@dataclass(frozen=True, kw_only=True)
class SoftmaxSetting(_SeparateBase):
    """Softmax attention: D=4, N=31, Fig. 3 spectrum, H=5 (separate) / 8 (merged), P=300.

    A qualitative claim checked at its reference seed: random settings do not vary the seed
    (at some seeds the merged softmax model shows two descent phases, e.g. seed 6 at P=300)."""

    seed: int = Int(0, min=0, max=2**63 - 1, doc="seed of every random draw (same seed → same numbers)")
    D: int | None = Int(None, min=1, max=16, doc="input dimension (default 4)")
    N: int = Int(31, min=16, max=10_000, doc="context length N (≥ 16: the qualitative claim concerns "
                                             "contexts like the paper's; at N ≤ 8 the merged model's descent splits)")
    H: int = Int(5, min=1, max=32, doc="number of heads")
    lambdas: tuple | None = _lambdas(_FIG3, "eigenvalues of Λ, any order (default Fig. 3)", sample=None)
    H_merged: int = Int(8, min=1, max=64, doc="heads of the merged softmax model")
    P: int | None = Int(None, min=50, max=100_000, by_profile=(300, 300, 300),
                        doc="training sequences (≥ 50: fewer are memorised rather than learned)")
    horizon_factor: float | None = Float(None, min=1e-3, max=1e3, by_profile=(1.0, 1.5, 1.5),
                                         doc="run for this many × the linear theory's learning time of the "
                                             "third direction (default steps)")
    w_init: float | None = Float(0.03, min=1e-100, max=1e3, doc="init std of every weight")
    lr: float | None = Float(None, min=1e-300, max=1e300,
                             doc="GD step on L_1/2 (default: 1, capped at the linear-attention stability limit 2/κ)")
    steps: int | None = Int(None, min=1, max=STEPS_MAX,
                            doc="GD steps (default: horizon_factor × the linear theory's learning time of the "
                                "third direction, so that a second drop has time to show)")
    backend: str = Choice("numpy", BACKEND_NAMES, doc="trainer backend (torch: float64, CUDA when present; an "
                                                      "optional extra)")

    def _validate(self) -> None:
        super()._validate()
        get_backend(self.backend)  # an unavailable optional backend is a setting error

    def _resolve(self) -> None:
        super()._resolve()
        if self.lr is None:
            self._set("lr", min(1.0, 2.0 / self.kappa_max()))
        if self.steps is None:
            self._set("steps", _steps(self, "lr", self.horizon_factor * self.second_drop_time(), self.lr))

    def second_drop_time(self) -> float:
        """The linear theory's time (τ) to learn the third direction (to u = 0.9 from the init
        scale w), or 50 τ when the init is not small for it."""
        p = theory.paper()
        lam, c = self.lambdas, self.c()
        d = p.order(lam)[min(2, theory.learnable(self.D, self.H, self.R) - 1)]
        if self.w_init >= 0.5 * p.v_star(lam[d], c[d]):
            return 50.0
        return p.escape_time(lam[d], c[d], self.w_init) + p.transit_time(lam[d], c[d], 0.5, 0.9)
