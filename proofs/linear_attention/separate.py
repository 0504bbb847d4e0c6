r"""Zhang, Singh, Latham, Saxe (ICML 2025, arXiv 2501.16265): separate key/query linear attention.

Claims ``linattn.separate.equivalence``, ``linattn.separate.fixed-points``,
``linattn.separate.saddle-to-saddle``, ``linattn.separate.scalar-ode``, ``linattn.separate.rank``,
``linattn.init-scale`` and ``linattn.softmax.drops`` (registered through
``proofs/linear_attention/__init__.py``).

**Units** (as in the merged slice): losses are plain MSE; models carry the paper's $1/N$; GD runs
on $L_{1/2}=L/2$ with step $\eta$, so step $k$ is $t/\tau=\eta k$.  The reference code's
settings are mapped to these units by $dt/\tau=2\eta_{\rm code}N^{2/p}$ per step and paper-unit
weights $=N^{1/p}\times$ code weights ($p=3$ for ATTN_S, $p=2$ for ATTN_M; reference §6.2, C9):
the defaults ``lr`` and ``w_init`` below are the code's ``--lr 0.02 --init 0.01`` (Fig. 3),
``--init 5e-3`` (Fig. 4) and ``--lr 0.001 --init 1e-6`` (Fig. 1, ATTN_M) mapped this way at the
setting's $N$, so ``steps=k`` is ``--epoch k`` of the code.  Initialisation is the paper-era
(May-2025) scheme: value $\mathcal N(0,w^2)$, key/query $\mathcal N(0,w^2/(R(D+1)))$.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import sympy as sp
from scipy import stats as _st
from scipy.integrate import solve_ivp

from icltheory.core import (
    BadInput,
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
from icltheory.dynamics import Plateau, detect_plateaus, first_crossing
from icltheory.dynamics._plateaus import slowest_point_level
from icltheory.dynamics import _scalar_ode as so
from icltheory.models import _linear_attention as la
from icltheory.models import _separate_training as st
from icltheory.symbolic import PopulationLoss, exact, moments_derivation

from ._common import (
    ARXIV,
    IDENTITY_WHY,
    SpectrumSetting,
    SymbolicTokens,
    beta_and_query,
    check_count,
    max_rel_error,
    plot_indices,
    predicted_beta_divisor,
)

_CODE_LR, _CODE_INIT, _CODE_INIT_FIG4 = 0.02, 0.01, 5e-3
_CODE_LR_M, _CODE_INIT_M = 0.001, 1e-6


# =============================================================================== settings


@dataclass(frozen=True, kw_only=True)
class StructureSetting(SpectrumSetting):
    """Spectrum and heads (no training): D, N, H, R, λ; defaults = Fig. 3."""

    H: int = Int(5, min=1, doc="number of heads")
    R: int = Int(1, min=1, doc="rank of each head's key and query (R ≤ D)")
    lambdas: tuple = Floats((0.4, 0.3, 0.2, 0.1), positive=True,
                            doc="eigenvalues of Λ, any order (default Fig. 3)")

    def _validate(self) -> None:
        super()._validate()
        if self.R is not None and self.R > self.D:
            raise SettingError("R", f"rank R={self.R} exceeds D={self.D}")

    @property
    def learnable(self) -> int:
        """How many directions H heads of rank R can hold."""
        return min(self.D, self.H * (self.R or 1))


@dataclass(frozen=True, kw_only=True)
class _HeadsSetting(StructureSetting):
    """Adds the (code-mapped) GD step and init shared by the training settings."""

    w_init: float | None = Float(None, positive=True,
                                 doc="value-weight init std, paper units (default: code --init 0.01 × N^{1/3})")
    lr: float | None = Float(None, positive=True,
                             doc="GD step η on L_1/2 = t/τ per step (default: code --lr 0.02 → 2·0.02·N^{2/3}, capped at the stability-derived 1.5/κ)")

    _code_init = _CODE_INIT
    _code_lr = _CODE_LR

    def _resolve(self) -> None:
        super()._resolve()
        eta, w = st.code_to_paper(self.N, self._code_lr, self._code_init, 3)
        if self.lr is None:
            # the code's rate, capped at 1.5/κ: κ = 9 λ^{5/3} c^{-1/3} is the curvature of L_1/2
            # along the balanced direction at the learned fixed point of the top direction, and GD
            # is unstable beyond 2/κ (the cap is inactive for the paper's settings)
            kappa = float(np.max(9.0 * self.lam ** (5 / 3) * self.c ** (-1 / 3)))
            self._set("lr", min(eta, 1.5 / kappa))
        if self.w_init is None:
            self._set("w_init", w)


@dataclass(frozen=True, kw_only=True)
class SeparateSetting(_HeadsSetting):
    """ATTN_S setting; defaults = Fig. 3 (D=4, N=31, H=5, R=1, λ = 0.4,0.3,0.2,0.1)."""

    steps: int | None = Int(None, min=1, doc="GD steps (default: from the theory's slowest escape time)")
    P: int = Int(80000, min=10, doc="training sequences of the finite-sample simulator (b)")
    seeds: int = Int(6, min=1, doc="number of random initialisations (seed axis)")


@dataclass(frozen=True, kw_only=True)
class RankSetting(_HeadsSetting):
    """Fig. 4: D=8, N=31, H=9, λ_k = k/36, code init 5e-3; ranks 1,2,4,8 unless R is given."""

    H: int = Int(9, min=1, doc="number of heads")
    R: int | None = Int(None, min=1, doc="check only this rank (default: 1, 2, 4, … ≤ D and D)")
    lambdas: tuple = Floats(tuple(k / 36 for k in range(8, 0, -1)), positive=True,
                            doc="eigenvalues of Λ, any order (default Fig. 4: k/36, k = 1..8)")
    seeds: int = Int(2, min=1, doc="number of random initialisations per rank (quick profile: 1)")
    steps: int | None = Int(None, min=1, doc="GD steps (default: until every direction is learned, "
                                             "capped at 2 × the theory horizon)")

    lr: float | None = Float(None, positive=True,
                             doc="GD step η = t/τ per step (default: code lr 0.1 → 2·0.1·N^{2/3}, 5× the "
                                 "figure's 0.02: same flow, event times within ~0.5%, 5× fewer steps)")

    _code_init = _CODE_INIT_FIG4
    _code_lr = 0.1

    @property
    def ranks(self) -> list[int]:
        if self.R is not None:
            return [self.R]
        out, r = [], 1
        while r <= self.D:
            out.append(r)
            r *= 2
        if out[-1] != self.D:
            out.append(self.D)
        return out


@dataclass(frozen=True, kw_only=True)
class ScalarOdeSetting(Setting):
    """One-head plateau ODE; defaults = C7 (λ = 0.1, tr Λ = 1, N = 31, v0 = 0.03)."""

    aliases = {"lambda": "lam"}
    lam: float = Float(0.1, positive=True, doc="eigenvalue λ of the direction being learned (key: lambda)")
    trace: float = Float(1.0, positive=True, doc="tr Λ (enters c = 1 + (1 + tr Λ/λ)/N)")
    N: int = Int(31, min=1, doc="context length N")
    v0: float = Float(0.03, positive=True, doc="initial balanced weight v(0) of the head")

    def _validate(self) -> None:
        if self.lam > self.trace:
            raise SettingError("lambda", f"λ={self.lam:g} exceeds tr Λ={self.trace:g}")
        if self.v0 >= 0.5 * self.v_star:
            raise SettingError("v0", f"{self.v0:g} ≥ v*/2 = {0.5 * self.v_star:g}: no plateau to escape")

    @property
    def c(self) -> float:
        return 1.0 + (1.0 + self.trace / self.lam) / self.N

    @property
    def v_star(self) -> float:
        return so.v_star(self.lam, self.c)


# =============================================================================== shared analysis


def _plateau_losses_exact(lambdas, N, order) -> list:
    lam = [exact(x) for x in lambdas]
    tr = sum(lam)
    out = [tr]
    for i in order:
        ci = 1 + (1 + tr / lam[i]) / sp.Integer(N)
        out.append(out[-1] - lam[i] / ci)
    return out


def _tie_width(lam: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Per direction: the scalar-ODE transit time from u = 0.1 to u = 0.9 (in τ): the width of a
    drop.  Two learning events closer than this are not separated by any plateau."""
    return np.array([so.transit_time(l, cc, 0.1, 0.9) for l, cc in zip(lam, c)])


def _order_violations(times: np.ndarray, predicted_order, width: np.ndarray, lam: np.ndarray) -> list:
    """Pairs (i before j in the prediction) where j was learned clearly before i.  Directions with
    equal eigenvalues (ties) are not ordered by the claim, so their pairs are never violations."""
    bad = []
    po = [int(round(x)) for x in predicted_order]
    for a in range(len(po)):
        for b in range(a + 1, len(po)):
            i, j = po[a], po[b]
            if lam[i] == lam[j]:
                continue
            ti, tj = times[i], times[j]
            if not np.isfinite(tj):
                continue
            if not np.isfinite(ti) or tj + max(width[i], width[j]) < ti:
                bad.append((i, j))
    return bad


def _horizon_steps(s: SeparateSetting, R: int, n_learn: int, margin: float = 3.0) -> int:
    """Theory horizon: margin × the scalar-ODE escape time of the slowest learnable direction
    from the balanced-equivalent initial scale, plus its drop width, in steps of η."""
    lam, c = s.lam, s.c
    v0 = st.typical_scale(s.w_init, R, s.D)
    worst = 0.0
    for i in s.order[:n_learn]:
        u0 = (lam[i] * c[i]) ** (1 / 3) * v0
        if u0 >= 0.5:
            t = so.transit_time(lam[i], c[i], 0.01, 0.9)
        else:
            t = so.escape_time(lam[i], c[i], v0) + so.transit_time(lam[i], c[i], 0.5, 0.9)
        worst = max(worst, t)
    return int(math.ceil(margin * worst / s.lr))


def _all_learned(run, lam, c, n_learn: int, settle: float = 1.0) -> bool:
    frac = st.learned_fractions(run.M, lam, c)
    times = st.learning_times(run.t, frac)
    n = np.sum(np.isfinite(times), axis=1)
    if np.any(n < n_learn):
        return False
    last = np.nanmax(times, axis=1)
    return bool(np.all(run.t[-1] >= (1.0 + settle) * last))


@dataclass
class _Analysis:
    times: np.ndarray  # (S, D) learning times (τ)
    order: list  # per seed, eigen-indices by learning time
    plateaus: list  # per seed, list of Plateau (time in τ)
    matched: list  # per seed, index m of the nearest predicted level per plateau


#: fewest recorded points (t > 0) on which the plateau detector is run
_MIN_CURVE_POINTS = 50


def _too_short(ctx, run, what: str) -> bool:
    """Record ``inconclusive`` (and return True) when a run recorded too few points to resolve
    plateaus (e.g. a user's ``steps`` far below the theory horizon)."""
    n = int(np.sum(run.t > 0))
    if n >= _MIN_CURVE_POINTS:
        return False
    ctx.inconclusive(f"{what}: only {n} recorded points after {int(run.steps[-1])} steps — too short to "
                     f"resolve plateaus (need ≥ {_MIN_CURVE_POINTS}; raise steps or leave it to the theory horizon)")
    return True


def _analyse(run, lam, c, levels) -> _Analysis:
    """Learning times/order from M(t); plateaus from the blind detector (log time), each with
    its level read at the slowest point of the curve inside it (closest approach to the saddle),
    matched to the nearest predicted level."""
    frac = st.learned_fractions(run.M, lam, c)
    times = st.learning_times(run.t, frac)
    t = run.t
    keep = t > 0
    orders, pls, matched = [], [], []
    lv = np.asarray(levels, float)
    for k in range(run.loss.shape[0]):
        tk = times[k]
        orders.append([int(i) for i in np.argsort(np.where(np.isfinite(tk), tk, np.inf), kind="stable")
                       if np.isfinite(tk[i])])
        y = run.loss[k, keep]
        pl = [Plateau(p.start, p.end, slowest_point_level(t[keep], y, p, log_time=True))
              for p in detect_plateaus(t[keep], y, log_time=True)]
        pls.append(pl)
        matched.append([int(np.argmin(np.abs(lv - p.level))) for p in pl])
    return _Analysis(times, orders, pls, matched)


def _loss_plot(title, t, loss, levels, labels, caption, annotations=(), max_series=6, logx=True):
    idx = plot_indices(len(t), log=True)
    keep = idx[t[idx] > 0] if logx else idx
    series = [Series(t[keep], loss[k, keep], labels[k], alpha=0.85) for k in range(min(len(labels), max_series))]
    return Plot(title=title, xlabel="t / τ", ylabel="loss (plain MSE)", series=series,
                hlines=[(float(v), f"L(M_{m})") for m, v in enumerate(levels)],
                annotations=list(annotations), logx=logx, caption=caption)


# =============================================================================== equivalence


class SeparateEquivalence(Claim):
    id = "linattn.separate.equivalence"
    title = "ATTN_S's query prediction is a sum of H three-layer (convolutional) linear networks"
    source = f"{ARXIV}, §5 (reduced predictor of ATTN_S)"
    provenance = "third-party summary of the paper"
    statement = (
        r"\hat y_q=\Big[\sum_{i=1}^H\tfrac1N W^V_iXX^\top (W^K_i)^\top W^Q_iX\Big]_{D+1,N+1}"
        r"=\sum_{i=1}^H v_i\sum_{r=1}^R k_{i,r}^\top\big(\operatorname{mat}(z)\,q_{i,r}\big),\ "
        r"z=\operatorname{vec}(\beta x_q^\top),\ \beta=\tfrac1N\sum_{n=1}^N y_nx_n"
        r"\quad(\text{query }q_{i,r}\text{ a length-}D\text{ kernel with stride }D,\ "
        r"\text{then key }k_{i,r},\text{ then value }v_i)"
        r"\ \text{when the value's }x\!\to\!y\text{ entries and the key's label column are }0."
    )
    setting_type = StructureSetting
    negative_control = "β normalised by N+1 instead of N (--predict beta_divisor=N+1)"

    def constants(self, s: StructureSetting) -> dict:
        return {"beta_divisor": s.N, "networks": s.H, "channels_per_network": s.R}

    def derive(self, s: SeparateSetting) -> Derivation:
        """Exact symbolic identity for one generic head at D' = min(D, 2), N' = min(N, 3),
        R' = min(R, 2) (the sum over heads is linear; the identity is entrywise polynomial)."""
        D, N, R = min(s.D, 2), min(s.N, 3), min(s.R, 2)
        d = Derivation("ATTN_S prediction = three-layer convolutional network (+ irrelevant terms)")
        d.say(f"Symbolic tokens and one head with generic weights at D={D}, N={N}, R={R}.")
        tok = SymbolicTokens.make(D, N)
        WK = sp.Matrix(R, D + 1, lambda r, a: sp.Symbol(f"K_{r}{a}", real=True))
        WQ = sp.Matrix(R, D + 1, lambda r, a: sp.Symbol(f"Q_{r}{a}", real=True))
        out = tok.attention_output(WK.T * WQ)
        beta, xq, v, a = tok.beta, tok.xq, tok.v, tok.a
        Z = beta * xq.T  # mat(z)
        conv = sum((WK[r, :D] * (Z * WQ[r, :D].T))[0] for r in range(R))
        U = WK[:, :D].T * WQ[:, :D]
        b = (WK[:, D].T * WQ[:, :D]).T
        extra = tok.irrelevant_terms(U, b)
        d.define("mat(z)", Z, "β x_qᵀ: the D×D arrangement of the cubic feature")
        d.step("full decomposition", out, v * conv + extra,
               "bottom-right entry = v Σ_r k_rᵀ mat(z) q_r + irrelevant terms (value x→y entries a, "
               "key label column through b = Q_{:,1:D}ᵀ K_{:,D+1})")
        zero = {s_: 0 for s_ in list(a) + list(WK[:, D])}
        d.step("irrelevant entries zero ⇒ three-layer network", out.xreplace(zero), v * conv,
               "with the value's x→y entries and the key's label column zero only v Σ_r k_rᵀ mat(z) q_r remains")
        return d

    def check(self, s: SeparateSetting, ctx) -> None:
        d = self.derive(s)
        ctx.verify_derivation(d)
        trials = ctx.by_profile(20, 100, 1000)
        rng = ctx.rng(1)
        D, N, H, R = s.D, s.N, s.H, s.R
        div = predicted_beta_divisor(ctx)
        Lam = la.covariance(s.lambdas, rotate=True, rng=ctx.rng(0))
        worst, extra_size = 0.0, 0.0
        for _ in range(trials):
            X, _ = la.sample_sequences(8, N, Lam, rng)
            WV = rng.standard_normal((H, D + 1, D + 1))
            WK = rng.standard_normal((H, R, D + 1))
            WQ = rng.standard_normal((H, R, D + 1))
            full = la.attn_separate_predict(X, WV, WK, WQ)
            WV0, WK0 = WV.copy(), WK.copy()
            WV0[:, D, :D] = 0.0
            WK0[:, :, D] = 0.0
            attn = la.attn_separate_predict(X, WV0, WK0, WQ)
            beta, xq = beta_and_query(X, div)
            Zm = beta[:, :, None] * xq[:, None, :]  # mat(z) = β x_qᵀ
            # layer 1: stride-D convolution of z with the query kernel q_{i,r}: h_a = Σ_b z_{aD+b} q_b
            h = np.einsum("pab,hrb->phra", Zm, WQ[:, :, :D])
            # layer 2: key k_{i,r}; layer 3: value v_i; sum of the H networks
            net = np.einsum("phra,hra,h->p", h, WK0[:, :, :D], WV[:, D, D])
            networks, channels = h.shape[1], h.shape[2]  # as used by the network above
            worst = max(worst, max_rel_error(attn, net))
            extra_size = max(extra_size, max_rel_error(full, attn))
        ctx.close("ATTN_S (irrelevant entries zero) = Σ_i three-layer conv network", predicted=0.0,
                  measured=worst, atol=1e-10, why=IDENTITY_WHY)
        ctx.condition("the zeroed entries matter when random", extra_size > 1e-3,
                      predicted="> 1e-3 of the output", measured=extra_size,
                      why="shows the reduction is not vacuous: the irrelevant terms are really dropped")
        ctx.measure("max_rel_error", worst)
        ctx.measure("trials", trials)
        check_count(ctx, "networks = heads", ctx.predicted["networks"], networks)
        check_count(ctx, "channels per network = rank", ctx.predicted["channels_per_network"], channels)


# =============================================================================== fixed points


def _flow_equations(d: Derivation, lambdas, N: int, H: int, R: int) -> None:
    r"""SymPy: the gradient-flow equations of ATTN_S's relevant block, by explicit
    differentiation of the population loss composed with $M=\sum_iv_iK_i^\top Q_i$."""
    pl = PopulationLoss(tuple(lambdas), N)
    D = pl.D
    v = [sp.Symbol(f"v_{i}", real=True) for i in range(H)]
    K = [sp.Matrix(R, D, lambda r, a, i=i: sp.Symbol(f"k_{i}{r}{a}", real=True)) for i in range(H)]
    Q = [sp.Matrix(R, D, lambda r, a, i=i: sp.Symbol(f"q_{i}{r}{a}", real=True)) for i in range(H)]
    Mth = sum((v[i] * K[i].T * Q[i] for i in range(H)), sp.zeros(D, D))
    L = sp.expand(pl.at(pl.loss, Mth))
    E = pl.Lam**2 - pl.B * Mth * pl.Lam  # −½ ∂L/∂M
    d.define("E", sp.Symbol("E"), "−½ ∂L/∂M = Λ² − E[ββᵀ] M Λ (the residual 'error' matrix)")
    for i in range(H):
        d.step(f"τ v̇_{i} = −½ ∂L/∂v_{i}", -sp.diff(L, v[i]) / 2, (E.T * K[i].T * Q[i]).trace(),
               "chain rule through M = Σ v_i K_iᵀQ_i: τv̇_i = ⟨E, K_iᵀQ_i⟩")
        d.step(f"τ K̇_{i} = −½ ∂L/∂K_{i}", sp.Matrix(R, D, lambda r, a: -sp.diff(L, K[i][r, a]) / 2),
               v[i] * Q[i] * E.T, "τK̇_i = v_i Q_i Eᵀ")
        d.step(f"τ Q̇_{i} = −½ ∂L/∂Q_{i}", sp.Matrix(R, D, lambda r, a: -sp.diff(L, Q[i][r, a]) / 2),
               v[i] * K[i] * E, "τQ̇_i = v_i K_i E")


class SeparateFixedPoints(Claim):
    id = "linattn.separate.fixed-points"
    title = "ATTN_S has 2^D fixed points in function space, one per learned subset; only the full set is a minimum"
    source = f"{ARXIV}, §5 (fixed points of ATTN_S; Eq. 19 for the plateau losses)"
    provenance = "third-party summary of the paper"
    statement = (
        r"\tau\dot v_i=\langle E,K_i^\top Q_i\rangle,\ \tau\dot K_i=v_iQ_iE^\top,\ \tau\dot Q_i=v_iK_iE,"
        r"\ E=\Lambda^2-\mathbb E[\beta\beta^\top]M\Lambda,\ M=\sum_iv_iK_i^\top Q_i;\ "
        r"\text{fixed points }M_S=\sum_{d\in S}\frac{e_de_d^\top}{\lambda_dc_d},\ S\subseteq\{1..D\},"
        r"\ L(M_S)=\operatorname{tr}\Lambda-\sum_{d\in S}\frac{\lambda_d}{c_d};\ "
        r"L(\mathcal M_m)=\operatorname{tr}\Lambda-\sum_{d=1}^m\frac{\lambda_d}{1+(1+\operatorname{tr}\Lambda/\lambda_d)/N}"
        r"\ (\text{Eq. 19});\ S=\{1..D\}\text{ the only minimum, all others saddles}"
    )
    setting_type = StructureSetting
    negative_control = ("plateau losses with N+1 in c_d (--predict plateau_losses=...), fixed_point_count=2^D−1, "
                        "or minimum_count=2")

    def constants(self, s: SeparateSetting) -> dict:
        levels = _plateau_losses_exact(s.lambdas, s.N, s.order)
        return {
            "plateau_losses": [float(x) for x in levels],
            "plateau_losses_exact": [str(x) for x in levels],
            "drop_sizes": [float(levels[m] - levels[m + 1]) for m in range(s.D)],
            "fixed_point_count": 2 ** s.D,
            "minimum_count": 1,
            "c": [float(x) for x in 1 + (1 + s.lam.sum() / s.lam) / s.N],
            "drop_order": s.order,
        }

    def _analysis(self, s: SeparateSetting):
        pl = PopulationLoss(tuple(s.lambdas), s.N)
        lam = [pl.Lam[i, i] for i in range(s.D)]
        c = [1 + (1 + pl.Lam.trace() / l) / sp.Integer(s.N) for l in lam]
        return pl, lam, c

    def derive(self, s: SeparateSetting) -> Derivation:
        pl, lam, c = self._analysis(s)
        d = pl.derivation
        d.title = "ATTN_S population loss, gradient flow, and its 2^D fixed points"
        d.say("Moments of β from Gaussian moments (Isserlis); the population loss of the relevant "
              "block M = Σ_i v_i K_iᵀQ_i; the flow τθ̇ = −∂L_{1/2}/∂θ; then every subset S of "
              "eigen-directions gives a fixed point.")
        moments_derivation(d, s.D)
        pl.record_core_steps()
        Hs, Rs = min(s.H, 2), min(s.R, 2)
        small = tuple(s.lambdas[: min(s.D, 3)])
        d.say(f"Flow equations by explicit differentiation for H={Hs} heads of rank {Rs} on the first "
              f"{len(small)} eigenvalues (the chain rule is the same for every head, rank and D).")
        _flow_equations(d, small, s.N, Hs, Rs)
        # function-space fixed points: per direction the restricted flow has exactly two roots
        v, lm, cc = sp.symbols("v lambda c", positive=True)
        d.step("per-direction balanced flow", sp.factor(lm**2 * v**2 - lm**3 * cc * v**5),
               lm**2 * v**2 * (1 - lm * cc * v**3), "τv̇ = λ²v² − λ³cv⁵ (see linattn.separate.scalar-ode)")
        roots = [len(sp.real_roots(sp.Poly(sp.expand(l**2 * v**2 - l**3 * ci * v**5), v)))
                 for l, ci in zip(lam, c)]
        nonneg = []
        for l, ci in zip(lam, c):
            rr = set(r for r in sp.real_roots(sp.Poly(sp.expand(l**2 * v**2 - l**3 * ci * v**5), v)) if r >= 0)
            nonneg.append(len(rr))
        d.fact("two fixed points per direction", all(n == 2 for n in nonneg),
               f"distinct real roots v ≥ 0 of λ_d²v² − λ_d³c_dv⁵ per direction: {nonneg} "
               f"(with multiplicity: {roots})",
               "v = 0 (not learned) or v = v* = (λ_d c_d)^{-1/3} (learned): 2^D subsets")
        # every subset: stationarity and its loss (exact rationals)
        all_ok, loss_ok = True, True
        for S in pl.subsets():
            M = pl.stationary_point(S)
            E = pl.Lam**2 - pl.B * M * pl.Lam
            # realisation: one pair per learned direction, k = q = e_d, v = 1/(λ_d c_d) (R = 1 heads)
            for i in S:
                e = sp.zeros(1, s.D)
                e[0, i] = 1
                vi = 1 / (lam[i] * c[i])
                grads = [(E.T * e.T * e).trace(), vi * e * E.T, vi * e * E]
                all_ok &= all(sp.simplify(g) == 0 if not isinstance(g, sp.MatrixBase) else g.is_zero_matrix
                              for g in grads)
            loss_ok &= sp.simplify(pl.at(pl.loss, M) - (pl.Lam.trace() - sum((lam[i] / c[i] for i in S),
                                                                               sp.Integer(0)))) == 0
        d.fact("all 2^D subset points are stationary", all_ok,
               f"for each of the {2 ** s.D} subsets S, E = Λ² − BM_SΛ vanishes on S, so every head "
               "learning a direction of S has zero gradient (exact rationals)",
               "E_dd = λ_d² − λ_d³c_d M_dd = 0 for d ∈ S; heads outside S are zero")
        d.fact("L(M_S) = tr Λ − Σ_{d∈S} λ_d/c_d for every subset", loss_ok,
               "exact substitution of each M_S into L(M)", "exact rationals")
        order = s.order
        prev = []
        for m in range(s.D + 1):
            S = tuple(order[:m])
            if m > 0:
                prev = S
            d.step(f"Eq. 19: L(M_{m})", pl.at(pl.loss, pl.stationary_point(S)),
                   pl.Lam.trace() - sum((lam[i] / c[i] for i in prev), sp.Integer(0)),
                   f"top-{m} directions by eigenvalue")
        # classification: perturbation along an unlearned direction lowers the loss
        eps = sp.Symbol("epsilon", positive=True)
        saddle_ok = True
        for S in pl.subsets():
            M = pl.stationary_point(S)
            for j in range(s.D):
                if j in S:
                    continue
                Mj = sp.zeros(s.D, s.D)
                Mj[j, j] = eps
                path = sp.expand(pl.at(pl.loss, M + Mj) - pl.at(pl.loss, M))
                want = -2 * lam[j] ** 2 * eps + lam[j] ** 3 * c[j] * eps**2
                saddle_ok &= sp.expand(path - want) == 0
        d.fact("every S ≠ all is a saddle", saddle_ok,
               "for d ∉ S: L(M_S + ε e_de_dᵀ) − L(M_S) = −2λ_d²ε + λ_d³c_dε² < 0 for small ε > 0; in "
               "parameters ε = s³ from a zero head (v, k, q) = s(1, e_d, e_d) (cubic descent), or "
               "ε = v s² from a spare key/query pair of a head with v > 0 (negative Hessian curvature "
               "−4λ_d²v): a stationary point with a descent direction, not a maximum (L is unbounded "
               "above) — a saddle",
               "exact polynomial identity in ε for every subset and every unlearned direction")
        d.fact("S = all directions is the global minimum", pl.hessian_is_positive_definite(),
               "L is strictly convex in M (Hessian 2(B⊗Λ) > 0) and M_{all} solves ∇L = 0",
               "every parameter point with M = M_all is a global minimum")
        return d

    def check(self, s: SeparateSetting, ctx) -> None:
        d = self.derive(s)
        ctx.verify_derivation(d)
        pred = ctx.predicted
        pl, lam_e, c_e = self._analysis(s)
        # enumerate: numerically test stationarity of a random realisation of every subset
        rng = ctx.rng(1)
        lam, c = s.lam, s.c
        mom = la.population_moments(np.diag(lam), s.N)
        count, minima, worst_grad = 0, 0, 0.0
        H = max(s.H, s.D)
        model = la.SeparateHeads(H, 1)
        losses = {}
        for m in range(s.D + 1):
            for S in combinations(range(s.D), m):
                p = {"r": np.zeros((1, H, 1)), "K": np.zeros((1, H, 1, s.D)), "Q": np.zeros((1, H, 1, s.D))}
                for h, i in enumerate(S):
                    # a random *unbalanced* realisation v·k·q = 1/(λc): stationarity must not need balance
                    a, b = np.exp(rng.uniform(-0.5, 0.5, 2))
                    p["r"][0, h, 0] = 1.0 / (lam[i] * c[i] * a * b)
                    p["K"][0, h, 0, i] = a
                    p["Q"][0, h, 0, i] = b
                th = model.theta(p)
                g = model.pullback(p, mom.grad_half(th), mom)
                gn = max(float(np.max(np.abs(x))) for x in g.values())
                worst_grad = max(worst_grad, gn)
                # gradient scale: E = Λ² − BMΛ is O(λ_max²) and each gradient multiplies it by up to
                # two parameters, so a non-stationary point has entries ~λ_max²·max(1,|θ|)²
                pmax = max(float(np.max(np.abs(x))) for x in p.values())
                g_scale = float(lam.max()) ** 2 * max(1.0, pmax) ** 2
                count += gn < 1e-13 * g_scale
                losses[S] = float(mom.mse(th)[0])
                # perturbation test: a small head along an unlearned direction lowers the loss
                free = [j for j in range(s.D) if j not in S]
                if free:
                    j, h = free[0], len(S)
                    q = {k: v.copy() for k, v in p.items()}
                    e = 0.05 * (lam[j] * c[j]) ** (-1 / 3)
                    q["r"][0, h, 0], q["K"][0, h, 0, j], q["Q"][0, h, 0, j] = e, e, e
                    minima += float(mom.mse(model.theta(q))[0]) >= losses[S]
                else:
                    # all directions learned: no random perturbation (relative size 1e-3) may lower
                    # the loss below L* (rounding allowance 1e-14)
                    ok = True
                    for _ in range(20):
                        q = {k: v * (1 + 1e-3 * rng.standard_normal(v.shape)) + 1e-3 * rng.standard_normal(v.shape)
                             for k, v in p.items()}
                        ok &= float(mom.mse(model.theta(q))[0]) >= losses[S] - 1e-14
                    minima += ok
        ctx.close("fixed points found (stationary realisations of all subsets)",
                  predicted=pred["fixed_point_count"], measured=count, atol=0.5,
                  why="a realisation is stationary when its largest gradient entry is < 1e-13 × its scale "
                      "λ_max²·max(1,|θ|_max)² (a non-stationary point has entries of that scale; float64 "
                      "rounding of E = Λ² − BMΛ is ~1e-16 of it)")
        ctx.measure("fixed_point_count", count)
        ctx.measure("max_gradient_at_fixed_points", worst_grad)
        ctx.measure("minimum_count", minima)
        ctx.close("local minima among them (perturbation test)", predicted=pred["minimum_count"],
                  measured=minima, atol=0.5,
                  why="at every saddle a head of size 0.05·v* along an unlearned direction lowers the loss "
                      "(−2λ²ε + λ³cε² < 0 for ε = (0.05 v*)³ ≪ 1/(λc)); at S = all, 20 random perturbations "
                      "of relative size 1e-3 (plus 1e-3 absolute on the zero heads) must not")
        top = [losses[tuple(sorted(s.order[:m]))] for m in range(s.D + 1)]
        ctx.close("Eq. 19: loss at the top-m fixed points (float64 evaluation of the trained-model loss)",
                  predicted=pred["plateau_losses"], measured=top, rtol=1e-12, atol=1e-14,
                  why="population MSE of the realised parameters, evaluated by the model's quadratic "
                      "form in float64: rounding ≲ 1e-14 relative")
        ctx.close("drop sizes λ_d/c_d", predicted=pred["drop_sizes"],
                  measured=[top[m] - top[m + 1] for m in range(s.D)], rtol=1e-10, atol=1e-13,
                  why="differences of the float64 losses above (cancellation ≲ 1e-14 absolute)")
        ctx.measure("plateau_losses", top)
        # Monte Carlo: the PCR predictor of each top-m fixed point on fresh sequences
        n = ctx.by_profile(20_000, 100_000, 400_000)
        rot = la.covariance(np.ones(s.D), rotate=True, rng=ctx.rng(2))
        Lam = (rot * lam) @ rot.T
        mc = []
        for m in range(s.D + 1):
            Md = np.zeros(s.D)
            for i in s.order[:m]:
                Md[i] = 1.0 / (lam[i] * c[i])
            l = la.bilinear_predictor_losses((rot * Md) @ rot.T, Lam, s.N, n, ctx.rng(3, m))
            mc.append(float(l.mean()))
            ctx.ztest(f"Monte Carlo L(M_{m}) (rotated Λ, n={n})", predicted=pred["plateau_losses"][m],
                      mean=float(l.mean()), stderr=float(l.std(ddof=1) / math.sqrt(n)), n=n,
                      alpha=1e-3, m_tests=s.D + 1)
        ctx.measure("mc_plateau_losses", mc)


# =============================================================================== scalar ODE


#: most GD steps simulator (a) of the scalar-ODE claim may take (records every step)
_SCALAR_SIM_MAX_STEPS = 200_000
#: most extra eigen-directions (tr Λ − λ split into eigenvalues ≤ λ) simulator (a) builds
_SCALAR_SIM_MAX_REST = 31


def _G_sym(u):
    return (-1 / u - sp.log(1 - u) / 3 + sp.log(u**2 + u + 1) / 6
            - sp.atan((2 * u + 1) / sp.sqrt(3)) / sp.sqrt(3))


class ScalarOde(Claim):
    id = "linattn.separate.scalar-ode"
    title = "One-head plateau dynamics τv̇ = λ²v² − λ³cv⁵ and its closed-form escape time"
    source = f"{ARXIV}, §5 (scalar ODE on each plateau; the closed-form integral G is derived here)"
    provenance = "third-party summary of the paper"
    statement = (
        r"\tau\dot v=\lambda^2v^2-\lambda^3c\,v^5,\ c=1+\frac{1+\operatorname{tr}\Lambda/\lambda}{N},\ "
        r"v_\star=(\lambda c)^{-1/3};\ t-t_0=\frac{\tau b^{1/3}}{\lambda^2}[G(u)-G(u_0)],\ b=\lambda c,\ "
        r"u=b^{1/3}v,\ G(u)=-\frac1u-\frac13\ln(1-u)+\frac16\ln(u^2+u+1)-\frac1{\sqrt3}\arctan\frac{2u+1}{\sqrt3}"
    )
    setting_type = ScalarOdeSetting
    negative_control = "escape time / v* with N+1 in c (--predict escape_time=... / v_star=...)"

    def constants(self, s: ScalarOdeSetting) -> dict:
        return {
            "v_star": s.v_star,
            "escape_time": so.escape_time(s.lam, s.c, s.v0),
            "naive_escape_time": 1.0 / (s.lam**2 * s.v0),
            "c": s.c,
            "loss_drop": s.lam / s.c,
        }

    def derive(self, s: ScalarOdeSetting) -> Derivation:
        d = Derivation("scalar plateau ODE of ATTN_S and its closed-form integral")
        lam_e, tr_e = exact(s.lam), exact(s.trace)
        d.say("Λ has the direction e being learned (eigenvalue λ) and the rest of the spectrum; "
              "only tr Λ enters (through c). One head (v, k = κe, q = ρe) on top of the learned "
              "directions; its output is vκρ·f with f = (eᵀβ)(eᵀx_q).")
        rest = [tr_e - lam_e] if tr_e > lam_e else []
        pl = PopulationLoss(tuple([lam_e] + rest), s.N)
        m, vv, ka, rh, t = sp.symbols("m v kappa rho t", real=True)
        lam, c, b, u, tau = sp.symbols("lambda c b u tau", positive=True)
        Mm = sp.zeros(pl.D, pl.D)
        Mm[0, 0] = m
        c_val = 1 + (1 + tr_e / lam_e) / sp.Integer(s.N)
        d.step("L(m e eᵀ) = tr Λ − 2λ²m + λ³c m²", pl.at(pl.loss, Mm),
               tr_e - 2 * lam_e**2 * m + lam_e**3 * c_val * m**2,
               "E[y_q f] = λ², E[f²] = e'B e·λ = λ³c with the Gaussian moments of β")
        L = sp.Symbol("L0") - 2 * lam**2 * vv * ka * rh + lam**3 * c * (vv * ka * rh) ** 2
        dv, dk, dr = (-sp.diff(L, x) / 2 for x in (vv, ka, rh))
        d.step("balance v² − κ² is conserved", 2 * vv * dv - 2 * ka * dk, 0,
               "d/dt(v²) = d/dt(κ²) = d/dt(ρ²) along the flow")
        d.step("τv̇ on the balanced manifold", dv.xreplace({ka: vv, rh: vv}),
               lam**2 * vv**2 - lam**3 * c * vv**5, "substitute κ = ρ = v into −½∂L/∂v")
        rhs = lam**2 * vv**2 - lam**3 * c * vv**5
        vs = (lam * c) ** sp.Rational(-1, 3)
        d.step("v* = (λc)^{-1/3} is a fixed point", sp.simplify(rhs.subs(vv, vs)), 0, "λ²v*² (1 − λc v*³) = 0")
        d.step("loss drop λ/c", sp.simplify(L.subs({vv: vs, ka: vs, rh: vs}) - sp.Symbol("L0")),
               -lam / c, "L(v*) − L(0) = −2λ²/(λc) + λ³c/(λc)² = −λ/c")
        Gu = _G_sym(u)
        d.define("G(u)", Gu, "closed-form integral (derived here)")
        d.step("G'(u) = 1/(u²(1 − u³))", sp.diff(Gu, u), 1 / (u**2 * (1 - u**3)), "differentiate G")
        # u = b^{1/3} v: τu̇ = b^{1/3}·rhs(v = u/b^{1/3}) with b = λc
        udot = (b ** sp.Rational(1, 3) * rhs.subs(vv, u / b ** sp.Rational(1, 3))).subs(c, b / lam)
        d.step("τu̇ = λ² b^{-1/3} u²(1 − u³)", sp.expand(udot),
               sp.expand(lam**2 * b ** sp.Rational(-1, 3) * u**2 * (1 - u**3)), "change of variable u = b^{1/3}v")
        d.step("dt/du = τ b^{1/3} G'(u)/λ²", b ** sp.Rational(1, 3) / lam**2 * sp.diff(Gu, u),
               1 / (lam**2 * b ** sp.Rational(-1, 3) * u**2 * (1 - u**3)),
               "so t − t₀ = τ b^{1/3}[G(u) − G(u₀)]/λ²")
        d.say(f"At this setting c = {float(c_val):.12g}, v* = {s.v_star:.12g}.")
        return d

    def check(self, s: ScalarOdeSetting, ctx) -> None:
        d = self.derive(s)
        ctx.verify_derivation(d)
        pred = ctx.predicted
        lam, c, v0 = s.lam, s.c, s.v0
        t_ode, nsteps = so.escape_time_ode(lam, c, v0)
        t_quad, qerr = so.escape_time_quad(lam, c, v0)
        ctx.close("escape time: closed form G vs SciPy DOP853 event (rtol 1e-13)",
                  predicted=pred["escape_time"], measured=t_ode, rtol=1e-8,
                  why=f"DOP853 at rtol=1e-13, atol=1e-6·v0·√rtol over {nsteps} steps: global error "
                      "≲ steps × rtol ≈ 1e-11 relative; 1e-8 leaves margin for the event root-finding")
        ctx.close("escape time: closed form G vs adaptive quadrature of ∫dv/v̇", predicted=pred["escape_time"],
                  measured=t_quad, rtol=1e-8,
                  why=f"QUADPACK with epsrel 1e-13 (its error estimate {qerr:.1e}); closed form in float64")
        # SciPy with its *default* tolerances (rtol 1e-3, atol 1e-6), for the record
        with np.errstate(all="ignore"):
            target = 0.5 * so.v_star(lam, c)
            ev = lambda t, y: y[0] - target  # noqa: E731
            ev.terminal = True
            sol = solve_ivp(lambda t, y: [lam**2 * y[0] ** 2 - lam**3 * c * y[0] ** 5],
                            (0, 4 * pred["escape_time"] + 10), [v0], events=ev)
        t_def = float(sol.t_events[0][0]) if sol.t_events and len(sol.t_events[0]) else float("nan")
        ctx.measure("escape_time_scipy_default_tolerances", t_def)
        ctx.note(f"SciPy solve_ivp with default tolerances (RK45, rtol 1e-3, atol 1e-6) gives "
                 f"{t_def:.6g} τ, off by {abs(t_def / pred['escape_time'] - 1):.1e} relative.")
        ctx.close("v* is a root of the right-hand side", predicted=0.0,
                  measured=1.0 - lam * c * float(pred["v_star"]) ** 3, atol=1e-12,
                  why="float64 evaluation of (λ²v² − λ³cv⁵)/(λ²v²) = 1 − λcv³ at the predicted v* "
                      "(scale-free, rounding ~1e-16; v = 0 is the other, trivial root)")
        ctx.measure("escape_time_ode", t_ode)
        ctx.measure("escape_time_quad", t_quad)
        self._simulator(s, ctx, pred)

    def _simulator(self, s: ScalarOdeSetting, ctx, pred) -> None:
        """Simulator (a): population GD of the full ATTN_S parameters (two heads, every key/query
        entry free).  Only tr Λ enters c, so the rest of the spectrum, tr Λ − λ, is split into
        n = ⌈(tr Λ − λ)/λ⌉ equal eigenvalues μ ≤ λ: e is then the top direction and the run sits on
        the first plateau.  Head 0 starts on the ansatz at v0 along e and *every* parameter gets a
        random perturbation of relative size 1e-4 (off the ansatz)."""
        lam, c, v0, N = s.lam, s.c, s.v0, s.N
        rest = s.trace - lam
        n_rest = int(math.ceil(rest / lam - 1e-12)) if rest > 0 else 0
        if n_rest > _SCALAR_SIM_MAX_REST:
            ctx.inconclusive(f"simulator (a) needs the rest of the spectrum (tr Λ − λ = {rest:g}) as "
                             f"{n_rest} eigenvalues ≤ λ = {lam:g}, more than the {_SCALAR_SIM_MAX_REST} it "
                             "simulates — the plateau length was not compared with a trained model")
            return
        lams = np.array([lam] + [rest / n_rest] * n_rest) if n_rest else np.array([lam])
        D = len(lams)
        H = 2
        T = float(so.escape_time(lam, c, v0))
        # step: 1/2000 of the escape time, and below the stability limit 2/κ at the fixed point,
        # κ = 9 λ^{5/3} c^{-1/3} (curvature of L_1/2 along the balanced direction at v*)
        kappa = 9 * lam ** (5 / 3) * c ** (-1 / 3)
        eta = min(T / 2000.0, 0.2 / kappa)
        steps = int(math.ceil(1.5 * T / eta))
        if steps > _SCALAR_SIM_MAX_STEPS:
            ctx.inconclusive(f"simulator (a) would need {steps:.3g} GD steps (escape time {T:.3g} τ at the "
                             f"stable step {eta:.3g}); more than the budget of {_SCALAR_SIM_MAX_STEPS} — "
                             "the plateau length was not compared with a trained model (raise v0)")
            return
        eps = 1e-4 * v0
        rng = ctx.rng(11)
        p = {"r": eps * rng.standard_normal((1, H, 1)), "K": eps * rng.standard_normal((1, H, 1, D)),
             "Q": eps * rng.standard_normal((1, H, 1, D))}
        p["r"][0, 0, 0] += v0
        p["K"][0, 0, 0, 0] += v0
        p["Q"][0, 0, 0, 0] += v0
        run = st.population_gd(lams, N, p, lr=eta, steps=steps, record_every=1)
        m_target = (0.5 * so.v_star(lam, c)) ** 3
        prod = run.M[0, :, 0, 0]
        k = int(np.argmax(prod >= m_target)) if np.any(prod >= m_target) else None
        # the same GD map on the scalar ODE: its escape step isolates the discretisation error
        vv, ks = v0, 0
        while vv < 0.5 * so.v_star(lam, c) and ks < 10 * steps:
            vv = vv + eta * (lam**2 * vv**2 - lam**3 * c * vv**5)
            ks += 1
        disc = abs(ks * eta - T)
        if k is None:
            ctx.condition("simulator (a) escapes the plateau", False, predicted=T, measured=None,
                          why="the head must reach v*/2 within 1.5× the predicted escape time")
            return
        f = (m_target - prod[k - 1]) / (prod[k] - prod[k - 1])
        t_sim = (k - 1 + f) * eta
        tol = disc + 2 * eta + 4 * (eps / v0) * T
        ctx.measure("escape_time_simulator_a", t_sim)
        ctx.measure("simulator_a_lr", eta)
        ctx.close("plateau length in simulator (a) (full ATTN_S parameters, population GD)",
                  predicted=pred["escape_time"], measured=t_sim, atol=tol,
                  why=f"ansatz error: GD discretisation = |escape of the same GD map on the scalar ODE "
                      f"− closed form| = {disc:.3g} τ, + 2η interpolation, + 4·(perturbation/v0)·T for the "
                      f"1e-4 relative off-ansatz perturbation (first order in v0)")
        tt = np.linspace(0, run.t[-1], 1500)
        vth = so.scalar_trajectory(lam, c, v0, tt)
        idx = plot_indices(len(run.t), log=True)
        ctx.plot(Plot(
            title=f"Scalar plateau ODE (λ={lam:g}, tr Λ={s.trace:g}, N={N}, v0={v0:g})",
            xlabel="t / τ", ylabel="v = (head's v·k·q)^{1/3}",
            series=[Series(run.t[idx], np.cbrt(prod[idx]), "full ATTN_S parameters, population GD"),
                    Series(tt, vth, "closed form (G inverted)", "dashed", color="k")],
            hlines=[(pred["v_star"], "v*"), (pred["v_star"] / 2, "v*/2")],
            vlines=[(pred["escape_time"], "escape time"), (pred["naive_escape_time"], "τ/(λ²v0)")]))


# =============================================================================== saddle-to-saddle


def _run_population(s: SeparateSetting, ranks, seeds: int, ctx, *, settle: float, stream: int = 1,
                    cap_factor: float = 1.0):
    """Simulator (a) for ``seeds`` inits per rank (one vectorised run; rank-R heads embedded in
    rank-max(ranks) heads).  Horizon: ``steps`` if given, else the theory horizon (3 × the slowest
    scalar-ODE escape), ended early once every learnable direction is learned and the run has
    gone ``settle`` × further, extended up to ``cap_factor`` × the horizon if needed (missing
    drops are then reported as inconclusive by the caller)."""
    lam, c = s.lam, s.c
    rank_axis = [R for R in ranks for _ in range(seeds)]
    p = st.init_separate(ctx.rng(stream), len(rank_axis), s.H, rank_axis, s.D, s.w_init)
    budget = ctx.by_profile(*_POPULATION_STEP_BUDGET)
    horizon = s.steps if s.steps is not None else max(_horizon_steps(s, R, min(s.D, s.H * R)) for R in ranks)
    if horizon > budget:
        ctx.inconclusive(f"simulator (a) needs {horizon:.3g} GD steps of η = {s.lr:.3g} "
                         f"({'steps' if s.steps is not None else 'theory horizon: 3 × the slowest escape time'}"
                         f"), more than the {ctx.profile} profile's budget of {budget:.3g} — not run "
                         "(use --profile thorough, a larger lr or a larger w_init)")
        return None, p, rank_axis, horizon
    if s.steps is not None:
        return st.population_gd(lam, s.N, p, lr=s.lr, steps=s.steps), p, rank_axis, s.steps
    n_learn = min(s.D, s.H * min(ranks))
    first = max(100, horizon // 20)
    run = st.population_gd(lam, s.N, p, lr=s.lr, steps=first,
                           until=_settle_until(lam, c, n_learn, settle),
                           max_steps=max(first, min(int(cap_factor * horizon), budget)), check_every=first)
    return run, p, rank_axis, horizon


#: relative tolerance of plateau levels in the population simulator (a) (the issue's 1e-3)
_LEVEL_RTOL = 1e-3
#: most GD steps per profile (quick, standard, thorough) of the population simulator (a) and of
#: the finite-sample simulator (b) (≈ 3e4 and ≈ 2e4 steps/s on one core at the paper's sizes)
_POPULATION_STEP_BUDGET = (2_000_000, 10_000_000, 100_000_000)
_FINITE_SAMPLE_STEP_BUDGET = (200_000, 400_000, 4_000_000)


def _init_not_small(ctx, s, R: int, rtol: float) -> bool:
    r"""The claim is about *small* init.  At the balanced-equivalent initial scale
    $u_{0,d}=(\lambda_dc_d)^{1/3}v_0$ every direction is already partly learned, lowering the loss by
    $\sum_d(\lambda_d/c_d)(2u_{0,d}^3-u_{0,d}^6)$ below $L(\mathcal M_0)=\operatorname{tr}\Lambda$ at $t=0$.
    When that exceeds the level tolerance ``rtol``·tr Λ the first plateau cannot sit at
    $L(\mathcal M_0)$ even in principle: record ``inconclusive`` and return True."""
    u0 = (s.lam * s.c) ** (1 / 3) * st.typical_scale(s.w_init, R, s.D)
    dev = float(np.sum(s.lam / s.c * (2 * u0**3 - u0**6)))
    if dev <= rtol * float(s.lam.sum()):
        return False
    ctx.inconclusive(f"init not small for this spectrum: w_init={s.w_init:.3g} gives u0 = (λc)^{{1/3}}v0 up to "
                     f"{float(u0.max()):.3g} (v* ↔ u = 1), so the loss starts {dev:.3g} below tr Λ, more than the "
                     f"{rtol:g}-relative level tolerance — no saddle plateau at L(M_0) to test; lower w_init")
    return True


def _settle_until(lam, c, n_learn: int, settle: float):
    def until(run):
        return _all_learned(run, lam, c, n_learn, settle)
    return until


def _pcr_errors(X, y, lam, c, order, m):
    """Per-sequence squared errors of the top-m PCR predictor on given sequences."""
    D = lam.size
    beta, xq = beta_and_query(X, X.shape[2] - 1)
    Md = np.zeros(D)
    for i in order[:m]:
        Md[i] = 1.0 / (lam[i] * c[i])
    return (y - np.einsum("pd,d,pd->p", beta, Md, xq)) ** 2


def _pooled_levels(an: _Analysis, D: int) -> list:
    out = []
    for m in range(D + 1):
        vals = [p.level for pls, mm in zip(an.plateaus, an.matched) for p, j in zip(pls, mm) if j == m]
        out.append(float(np.mean(vals)) if vals else None)
    return out


def _unresolved_levels(levels, tol) -> list:
    """Adjacent predicted levels (m, m+1) whose tolerance bands overlap: a plateau between them
    cannot be attributed to either, so level and visiting-order checks cannot decide."""
    lv = np.asarray(levels, float)
    rtol, atol = tol(list(range(lv.size)))
    half = rtol * np.abs(lv) + np.broadcast_to(np.asarray(atol, float), lv.shape)
    return [m for m in range(lv.size - 1) if abs(lv[m] - lv[m + 1]) <= half[m] + half[m + 1]]


def _judge(ctx, labels, an: _Analysis, levels, pred, width, lam, *, tol, why_levels) -> None:
    """Record the saddle-to-saddle checks for every run in ``an``.  ``tol(m_list)`` gives the
    (rtol, atol-array) of the plateau-level comparison."""
    n_pred = int(round(float(pred["n_drops"])))
    unresolved = _unresolved_levels(levels, tol)
    po = [int(round(x)) for x in pred["drop_order"]]
    for k, label in enumerate(labels):
        n = len(an.order[k])
        if n < n_pred:
            ctx.inconclusive(f"{label}: only {n} of {n_pred} directions learned within the horizon "
                             f"({n_pred - n} drop(s) not reached; increase steps)")
        else:
            ctx.close(f"{label}: number of drops (directions learned)", predicted=n_pred, measured=n,
                      atol=0.5, why="integer count of learning events (learned fraction M_dd λ_d c_d ≥ 1/2)")
        bad = _order_violations(an.times[k], po, width, lam)
        ctx.condition(f"{label}: drop order", not bad, predicted=po, measured=an.order[k],
                      why="a direction predicted later must not be learned before an earlier one by more "
                          "than a drop width (scalar-ODE transit u: 0.1 → 0.9); closer events form one "
                          "merged drop", detail=f"violations (earlier, later): {bad}" if bad else "")
        pl = an.plateaus[k]
        mm = an.matched[k]
        if unresolved:
            ctx.inconclusive(f"{label}: predicted levels L(M_m), L(M_m+1) for m in {unresolved} differ by "
                             "less than their combined tolerance, so a plateau cannot be attributed to one "
                             "of them (for the finite-sample simulator: raise P)")
            continue
        if not pl:
            ctx.condition(f"{label}: plateaus detected", False, predicted="≥ 1", measured=0,
                          why="the detector must find at least the initial plateau")
            continue
        rtol, atol = tol(mm)
        if np.ndim(atol) == 0:
            ctx.close(f"{label}: detected plateau levels = L(M_m) (nearest m: {mm})",
                      predicted=[float(levels[m]) for m in mm], measured=[p.level for p in pl],
                      rtol=rtol, atol=float(atol), why=why_levels)
        else:
            for p, m, a in zip(pl, mm, atol):
                ctx.close(f"{label}: plateau level L(M_{m})", predicted=float(levels[m]), measured=p.level,
                          rtol=rtol, atol=float(a), why=why_levels)
        ctx.condition(f"{label}: plateaus visited in order M_0 → M_1 → …",
                      mm[0] == 0 and all(b > a for a, b in zip(mm, mm[1:])),
                      predicted="strictly increasing m, starting at 0", measured=mm,
                      why="saddle-to-saddle: each plateau is a later fixed point than the one before")


class SaddleToSaddle(Claim):
    id = "linattn.separate.saddle-to-saddle"
    title = "From small init ATTN_S learns the eigen-directions one by one, by decreasing eigenvalue, with plateaus at L(M_m)"
    source = f"{ARXIV}, §5 and Fig. 3 (saddle-to-saddle dynamics; Eq. 19 for the plateau levels)"
    provenance = "third-party summary of the paper"
    statement = (
        r"\mathcal M_0\to\mathcal M_1\to\dots\to\mathcal M_D,\ L(\mathcal M_m)=\operatorname{tr}\Lambda-"
        r"\sum_{d\le m}\frac{\lambda_d}{c_d},\ \text{directions learned in the order }\lambda_1\ge\lambda_2\ge\dots"
    )
    setting_type = SeparateSetting
    negative_control = ("drops predicted in increasing-eigenvalue order (--predict drop_order=3,2,1,0), "
                        "or plateau losses with N+1 in c_d")

    def constants(self, s: SeparateSetting) -> dict:
        levels = _plateau_losses_exact(s.lambdas, s.N, s.order)
        return {
            "plateau_losses": [float(x) for x in levels],
            "drop_order": s.order[: s.learnable],
            "n_drops": s.learnable,
            "drop_sizes": [float(levels[m] - levels[m + 1]) for m in range(s.D)],
        }

    def check(self, s: SeparateSetting, ctx) -> None:
        pred = ctx.predicted
        bad_idx = [x for x in pred["drop_order"] if not (float(x).is_integer() and 0 <= x < s.D)]
        if bad_idx:
            raise BadInput(f"--predict drop_order: eigen-indices must be integers in 0..{s.D - 1}, got {bad_idx}")
        lam, c = s.lam, s.c
        levels = np.asarray(pred["plateau_losses"], float)
        width = _tie_width(lam, c)
        if _init_not_small(ctx, s, s.R, _LEVEL_RTOL):
            return
        seeds = ctx.by_profile(min(s.seeds, 2), s.seeds, s.seeds)
        run, _, _, horizon = _run_population(s, [s.R], seeds, ctx, settle=1.0, cap_factor=10.0)
        ctx.measure("theory_horizon_steps", int(horizon))
        if run is None:
            return
        ctx.measure("simulator_a_steps", int(run.steps[-1]))
        ctx.measure("lr", s.lr)
        if _too_short(ctx, run, "simulator (a)"):
            return
        an = _analyse(run, lam, c, levels)
        _judge(ctx, [f"(a) population GD, seed {k}" for k in range(seeds)], an, levels, pred, width, lam,
               tol=lambda mm: (_LEVEL_RTOL, 0.0),
               why_levels="simulator (a) follows the exact population loss (no sampling noise), so the "
                          "only gap is the trajectory's distance from the saddle: the level is read where "
                          "the curve moves slowest inside the plateau (closest approach), and 1e-3 relative "
                          "(the issue's tolerance for (a)) covers the residual pull of the next direction "
                          "and the unconverged previous one there")
        ctx.measure("plateau_losses", _pooled_levels(an, s.D))
        ctx.measure("drop_order", an.order)
        ctx.measure("n_drops", [len(o) for o in an.order])
        ctx.measure("drop_steps", [[round(float(x) / s.lr, 1) for x in np.sort(tk) if np.isfinite(x)]
                                   for tk in an.times])
        ann = []
        for i, ti in enumerate(an.times[0]):
            if np.isfinite(ti):
                k = min(int(np.searchsorted(run.t, ti)), len(run.t) - 1)
                ann.append((float(ti), float(run.loss[0, k]), f"e_{i} (λ={lam[i]:g})"))
        ctx.plot(_loss_plot(
            f"Fig. 3 reproduction (a): ATTN_S population GD, D={s.D}, N={s.N}, H={s.H}, R={s.R}",
            run.t, run.loss, levels, [f"seed {k}" for k in range(seeds)],
            f"η={s.lr:.4g} τ/step (1 step = 1 epoch of the code at lr 0.02), w_init={s.w_init:.4g} "
            f"(code init 0.01 × N^(1/3)); {int(run.steps[-1])} steps. Annotations: the direction "
            "learned at each drop (seed 0). Horizontal lines: Eq. 19.", ann))
        self._finite_sample(s, ctx, pred, levels, width, run, seeds)

    def _finite_sample(self, s, ctx, pred, levels, width, run_a, seeds) -> None:
        """Simulator (b): full-batch GD of the whole ATTN_S model (all weights that can affect
        ŷ_q, irrelevant ones starting at 0) on P sampled sequences, same initial relevant weights
        as seed k of simulator (a), same number of steps."""
        nb = ctx.by_profile(1, 1, min(seeds, 3))
        P = min(s.P, 10_000) if ctx.profile == "quick" else s.P
        lam, c, D = s.lam, s.c, s.D
        pfull = st.init_separate(ctx.rng(1), seeds, s.H, s.R, D, s.w_init, full=True)
        steps = int(run_a.steps[-1])
        budget = ctx.by_profile(*_FINITE_SAMPLE_STEP_BUDGET)
        if steps > budget:
            ctx.inconclusive(f"simulator (b) would need the {steps:.3g} steps of simulator (a), more than the "
                             f"{ctx.profile} profile's budget of {budget:.3g} for the finite-sample trainer — "
                             "not run (use --profile thorough)")
            return
        F = (D + 1) ** 2 * D
        z = float(_st.norm.isf(1e-3 / 2 / (D + 1)))
        for k in range(nb):
            X, y = la.sample_sequences(P, s.N, np.diag(lam), ctx.rng(20, k))
            mom = la.empirical_moments(X, y)
            pk = {n: v[k:k + 1] for n, v in pfull.items()}
            run = st.train_separate(mom, pk, H=s.H, lr=s.lr, steps=steps)
            if _too_short(ctx, run, f"simulator (b), seed {k}"):
                continue
            an = _analyse(run, lam, c, levels)
            se = np.array([_pcr_errors(X, y, lam, c, s.order, m).std(ddof=1) / math.sqrt(P)
                           for m in range(D + 1)])
            atol_m = z * se + levels * F / P
            _judge(ctx, [f"(b) full-batch GD on P={P} sequences, seed {k}"], an, levels, pred, width, lam,
                   tol=lambda mm: (0.0, np.array([atol_m[m] for m in mm])),
                   why_levels=f"sampling spread of the training set: {z:.2f} × the standard error of "
                              f"the top-m PCR predictor's squared error over these P={P} sequences "
                              f"(two-sided α = 1e-3, Bonferroni over {D + 1} levels), plus the "
                              f"least-squares optimism L_m·F/P of fitting F={F} coefficients to them")
            ctx.measure(f"finite_sample_plateau_losses_seed{k}", [p.level for p in an.plateaus[0]])
            ctx.measure(f"finite_sample_drop_steps_seed{k}",
                        [round(float(x) / s.lr, 1) for x in np.sort(an.times[0]) if np.isfinite(x)])
            ctx.measure(f"finite_sample_level_tolerance_seed{k}", atol_m.tolist())
            ctx.plot(_loss_plot(
                f"Fig. 3 reproduction (b): full ATTN_S trained on P={P} sequences (seed {k})",
                run.t, run.loss, levels, [f"training loss, seed {k}"],
                "Full-batch GD of the whole model (quadratic-feature form, exact for every weight that "
                "reaches ŷ_q); sequences drawn i.i.d. (the reference code additionally centres x and "
                "whitens w across the training set)."))


# =============================================================================== rank


def _head_groups(params: dict, k: int, learned) -> list:
    """For run ``k``: which head owns each learned direction (largest |v_i Σ_r K_ird Q_ird|),
    grouped by head in order of first learning."""
    v = params["r"][k, :, 0]
    contrib = np.abs(v[:, None] * np.einsum("hrd,hrd->hd", params["K"][k], params["Q"][k]))
    owner = {int(d): int(np.argmax(contrib[:, d])) for d in learned}
    groups, seen = [], {}
    for d in learned:
        h = owner[d]
        if h not in seen:
            seen[h] = len(groups)
            groups.append([])
        groups[seen[h]].append(int(d))
    return groups


class RankPlateaus(Claim):
    r"""Measured per rank and seed, on population GD from the Fig. 4 initialisation:

    * **learning stages**: each learned direction is owned by the head with the largest
      $|v_i\sum_rK_{ird}Q_{ird}|$; a stage is one head's escape, taking its R directions (the
      top remaining ones) — a plateau precedes every stage, so the number of plateaus is the
      number of stages (8, 4, 2, 1 for R = 1, 2, 4, 8 at D = 8);
    * **clear plateaus** found by the blind detector (log time): they must sit at $L(\mathcal M_m)$
      with $m$ a multiple of R.  The detector does not see every stage's plateau (for R = 1 the
      early ones last only a few hundred steps between close eigenvalues), which is why the count
      is measured by stages.

    The run lasts until every direction is learned (the last direction of R = 1 needs ~6·10⁵ of
    the code's epochs at lr 0.02 — far beyond the figure's 20001); hence the default step
    η = 2·0.1·N^{2/3} (5× the code's rate: the same flow, learning times within ~1%, tested)."""

    id = "linattn.separate.rank"
    title = "Rank-R heads: directions are learned R at a time, so clear plateaus appear only at m ∈ {0, R, 2R, …}"
    source = f"{ARXIV}, §5 and Fig. 4 (rank-R key and query)"
    provenance = "third-party summary of the paper"
    statement = (
        r"W^K_i,W^Q_i\in\mathbb R^{R\times(D+1)}:\ \text{plateaus at }L(\mathcal M_m),\ m\in\{0,R,2R,\dots\};"
        r"\ D=8,\ \lambda_k=k/36:\ R=1,2,4,8\Rightarrow 8,4,2,1\text{ plateaus}"
    )
    setting_type = RankSetting
    negative_control = "the rank-1 pattern for every rank (--predict n_plateaus=8,8,8,8)"

    def constants(self, s: RankSetting) -> dict:
        levels = _plateau_losses_exact(s.lambdas, s.N, s.order)
        return {
            "ranks": s.ranks,
            "n_plateaus": [math.ceil(min(s.D, s.H * R) / R) for R in s.ranks],
            "stage_size": s.ranks,
            "plateau_losses": [float(x) for x in levels],
        }

    def check(self, s: RankSetting, ctx) -> None:
        pred = ctx.predicted
        lam, c = s.lam, s.c
        levels = np.asarray(pred["plateau_losses"], float)
        width = _tie_width(lam, c)
        seeds = ctx.by_profile(1, s.seeds, s.seeds)
        ranks = s.ranks
        if _init_not_small(ctx, s, min(ranks), _LEVEL_RTOL):
            return
        run, _, rank_axis, horizon = _run_population(s, ranks, seeds, ctx, settle=0.25, stream=2,
                                                     cap_factor=2.0)
        ctx.measure("theory_horizon_steps", int(horizon))
        if run is None:
            return
        ctx.measure("steps", int(run.steps[-1]))
        if _too_short(ctx, run, "population GD"):
            return
        an = _analyse(run, lam, c, levels)
        measured_counts, measured_groups = [], []
        for j, R in enumerate(ranks):
            counts, allgroups = [], []
            for q in range(seeds):
                k = j * seeds + q
                label = f"R={R}, seed {q}"
                learned = an.order[k]
                groups = _head_groups(run.params, k, learned)
                allgroups.append(groups)
                n_learn = min(s.D, s.H * R)
                complete = len(learned) >= n_learn
                # (1) stage structure: each head that learns takes R directions, consecutive in order
                size_pred = max(int(round(float(pred["stage_size"][j]))), 1)
                sizes = [len(g) for g in groups]
                full = sizes if complete else sizes[:-1]
                # R per stage; when R does not divide the learnable count the last stage takes the rest
                stages_pred = [size_pred] * (n_learn // size_pred) + ([n_learn % size_pred] if n_learn % size_pred else [])
                ctx.close(f"{label}: directions per learning stage (head)",
                          predicted=stages_pred if complete else stages_pred[:len(full)],
                          measured=full, atol=0.5,
                          why="ownership by the largest |v_i Σ_r K_ird Q_ird|; a stage still under way "
                              "at the end of the run is excluded")
                flat = [d for g in groups for d in g]
                bad = _order_violations(an.times[k], s.order[:n_learn], width, lam)
                # the learned set must be a top set of the spectrum (compared by eigenvalue: tied
                # directions are interchangeable)
                top_set = sorted(lam[flat]) == sorted(lam[s.order[:len(flat)]])
                ctx.condition(f"{label}: stages take the eigen-directions in decreasing order",
                              not bad and top_set,
                              predicted=[s.order[i:i + R] for i in range(0, n_learn, R)], measured=groups,
                              why="the top remaining R directions go to the next head to escape")
                # (2) the number of plateaus = number of stages
                if complete:
                    ctx.close(f"{label}: number of plateaus (learning stages)",
                              predicted=pred["n_plateaus"][j], measured=len(groups), atol=0.5,
                              why="integer count; one plateau precedes each head's escape")
                else:
                    ctx.inconclusive(f"{label}: {len(learned)} of {n_learn} directions learned by step "
                                     f"{int(run.steps[-1])}; stage count not complete")
                counts.append(len(groups))
                # (3) detected plateaus sit only at multiples of R
                pl, mm = an.plateaus[k], an.matched[k]
                saddle = [(p, m) for p, m in zip(pl, mm) if m < n_learn]
                if saddle:
                    ctx.close(f"{label}: detected plateau levels (m = {[m for _, m in saddle]})",
                              predicted=[float(levels[m]) for _, m in saddle],
                              measured=[p.level for p, _ in saddle], rtol=_LEVEL_RTOL,
                              why="population GD (no sampling noise); 1e-3 relative as in saddle-to-saddle")
                allowed = set(range(0, n_learn, int(round(float(pred["stage_size"][j])))))
                ctx.condition(f"{label}: clear plateaus only at m ∈ {{0, R, 2R, …}}",
                              all(m in allowed for _, m in saddle), predicted=sorted(allowed),
                              measured=[m for _, m in saddle],
                              why="plateau detector (log time, relative thresholds) on the loss curve")
            measured_counts.append(counts)
            measured_groups.append(allgroups)
        ctx.measure("n_plateaus", measured_counts)
        ctx.measure("stages", measured_groups)
        ctx.measure("drop_steps_code_units", [[round(float(x) / _code_lr_step(s), 0) for x in np.sort(tk)
                                               if np.isfinite(x)] for tk in an.times])
        for j, R in enumerate(ranks):
            sl = slice(j * seeds, (j + 1) * seeds)
            ctx.plot(_loss_plot(
                f"Fig. 4 reproduction: ATTN_S rank R={R}, D={s.D}, H={s.H}, N={s.N}",
                run.t, run.loss[sl], levels, [f"seed {q}" for q in range(seeds)],
                f"Population GD, η={s.lr:.4g} τ/step, w_init={s.w_init:.4g} (code init 5e-3 mapped). "
                "Horizontal lines: L(M_m) for every m; clear plateaus are expected only at multiples of R."))


def _code_lr_step(s) -> float:
    """τ per epoch of the reference code at lr 0.02 (to express times as the code's epochs)."""
    return st.code_to_paper(s.N, _CODE_LR, 1.0, 3)[0]


# =============================================================================== init scale


@dataclass(frozen=True, kw_only=True)
class InitScaleSetting(_HeadsSetting):
    """ATTN_S sweep around Fig. 3's init and ATTN_M sweep around Fig. 1's (H=8, code lr 0.001, init 1e-6)."""

    H_merged: int = Int(8, min=1, doc="ATTN_M heads (Fig. 1)")
    w_init_merged: float | None = Float(None, positive=True,
                                        doc="largest ATTN_M init, paper units (default: code 1e-4 × N^{1/2}; the sweep goes down to 1e-7, Fig. 1 is 1e-6)")
    lr_merged: float | None = Float(None, positive=True,
                                    doc="ATTN_M GD step η (default: code lr 0.001 → 2·0.001·N, capped at 0.05/‖Λ²‖_F)")
    seeds: int = Int(1, min=1, doc="random directions (each swept over all scales)")

    def _resolve(self) -> None:
        super()._resolve()
        eta, w = st.code_to_paper(self.N, _CODE_LR_M, _CODE_INIT_M * 1e2, 2)
        if self.lr_merged is None:
            # capped so that the GD growth-rate error ηg (g = ‖Λ²‖_F) stays ≤ 5%
            g = float(np.sqrt(np.sum(np.asarray(self.lambdas, dtype=float) ** 4)))
            self._set("lr_merged", min(eta, 0.05 / g))
        if self.w_init_merged is None:
            self._set("w_init_merged", w)


_S_SCALES = np.array([1.0, 1 / 2, 1 / 4, 1 / 8])
_M_SCALES = np.array([1.0, 1e-1, 1e-2, 1e-3])


class InitScale(Claim):
    id = "linattn.init-scale"
    title = "Plateau length grows like ln(1/w_init) for ATTN_M and like 1/(λ² w_init) for ATTN_S"
    source = f"{ARXIV}, §4–§5 and Fig. 6 (initialisation scale)"
    provenance = "third-party summary of the paper"
    statement = (
        r"T_M\simeq\frac{\ln(1/w_{\rm init})}{\lVert\Lambda^2\rVert_F}+\text{const (ATTN_M)},\qquad "
        r"T_S\simeq\frac{\tau}{\lambda_1^2\,v_0}\propto\frac1{\lambda_1^2w_{\rm init}}\ (\text{ATTN_S})"
    )
    setting_type = InitScaleSetting
    negative_control = "ATTN_S exponent −2 (--predict attn_s_loglog_slope=-2) or ATTN_M slope ×2"

    def constants(self, s: InitScaleSetting) -> dict:
        g = float(np.sqrt(np.sum(s.lam**4)))
        return {
            "attn_m_slope": 1.0 / g,
            "attn_s_loglog_slope": -1.0,
            "attn_m_drops": 1,
        }

    def check(self, s: InitScaleSetting, ctx) -> None:
        pred = ctx.predicted
        lam, c = s.lam, s.c
        D = s.D
        order = s.order
        levels = np.array([float(x) for x in _plateau_losses_exact(s.lambdas, s.N, order)])
        # ---------------- ATTN_M: the same random direction at four scales (one vectorised run)
        g = float(np.sqrt(np.sum(lam**4)))
        wM = s.w_init_merged * _M_SCALES
        rng = ctx.rng(5)
        nd = s.seeds
        base_r = rng.standard_normal((nd, 1, s.H_merged, 1))
        base_U = rng.standard_normal((nd, 1, s.H_merged, D, D))
        pM = {"r": (base_r * wM[None, :, None, None, None][..., 0]).reshape(nd * len(wM), s.H_merged, 1),
              "U": (base_U * wM[None, :, None, None, None]).reshape(nd * len(wM), s.H_merged, D, D)}
        momM = la.population_moments(np.diag(lam), s.N)
        LstarM = levels[-1]
        T_end = 3.0 * (math.log(1 / wM.min()) + 5) / g
        stepsM = int(math.ceil(T_end / s.lr_merged))
        budget = ctx.by_profile(*_POPULATION_STEP_BUDGET)
        if stepsM > budget:
            ctx.inconclusive(f"ATTN_M: the theory horizon {T_end:.3g} τ needs {stepsM:.3g} GD steps of "
                             f"η = {s.lr_merged:.3g}, more than the {ctx.profile} profile's budget of {budget:.3g}")
            return
        # extend (doubling, recording ~2000 points per chunk) until every run has converged to
        # within 1e-3 of the drop size of L* — the single drop must end in a visible plateau
        modelM = la.MergedHeads(s.H_merged)
        done, chunk, p_cur = 0, stepsM, pM
        steps_l, loss_l = [], []
        while True:
            r = la.gd_train(modelM, momM, p_cur, lr=s.lr_merged, steps=chunk,
                            record_every=1 if done == 0 else max(1, chunk // 2000))
            if r.diverged_at is not None:
                raise NumericalTrouble(f"ATTN_M gradient descent diverged at step {done + r.diverged_at}")
            sl = slice(0, None) if done == 0 else slice(1, None)
            steps_l.append(r.steps[sl] + done)
            loss_l.append(r.loss[:, sl])
            done += chunk
            p_cur = r.params
            if (float(np.max(r.loss[:, -1])) - LstarM < 1e-3 * (levels[0] - LstarM)
                    or done >= min(64 * stepsM, budget)):
                break
            chunk = done
        resM = la.TrainResult(np.concatenate(steps_l), np.concatenate(loss_l, axis=1), p_cur, [])
        tM = resM.steps * s.lr_merged
        mid = 0.5 * (levels[0] + LstarM)
        TM = np.array([_first_below(tM, resM.loss[k], mid) for k in range(resM.loss.shape[0])])
        if not np.all(np.isfinite(TM)):
            ctx.inconclusive("ATTN_M: not every run dropped within the horizon")
            return
        TM = TM.reshape(nd, len(wM))
        slopesM = [np.polyfit(np.log(1 / wM), TM[k], 1)[0] for k in range(nd)]
        ctx.measure("attn_m_slope", slopesM)
        ctx.measure("attn_m_drop_times", TM.tolist())
        eta_g = s.lr_merged * g
        ctx.close("ATTN_M: dT/d ln(1/w_init) = 1/‖Λ²‖_F", predicted=[pred["attn_m_slope"]] * nd,
                  measured=slopesM, rtol=eta_g + 10 * float(wM.max()) + 1e-3,
                  why="small-weight phase: (v, ⟨Λ²,U⟩/‖Λ²‖_F) grows at rate ‖Λ²‖_F, so the product "
                      "reaches O(1) at ln(1/w)/‖Λ²‖_F + const (the constant is common to all scales of "
                      "one direction). GD with step η grows by ln(1+ηg)/η per τ instead of g: relative "
                      f"error ≤ ηg = {eta_g:.3g}; components of the init in the non-growing modes shift "
                      "the nonlinear phase by O(w) (10·w_max); 1e-3 for the crossing interpolation")
        converged = float(np.max(resM.loss[:, -1])) - LstarM < 1e-3 * (levels[0] - LstarM)
        counts = [_count_drops(tM[1:], resM.loss[k, 1:], ends_converged=converged)
                  for k in range(resM.loss.shape[0])]
        ctx.close("Fig. 1: ATTN_M shows one drop at every scale", predicted=[pred["attn_m_drops"]] * len(counts),
                  measured=counts, atol=0.5,
                  why="plateau detector (log time) on the population loss; the run is extended until it is "
                      "within 1e-3 of the drop of L*, so when it has converged its end level counts as the "
                      "last plateau even if the slow final approach is not flat enough to be detected")
        # ---------------- ATTN_S: the same random direction at four scales
        wS = s.w_init * _S_SCALES
        base = st.init_separate(ctx.rng(6), nd, s.H, s.R, D, 1.0)
        pS = {k: (v[:, None] * wS.reshape((1, -1) + (1,) * (v.ndim - 1))).reshape((nd * len(wS),) + v.shape[1:])
              for k, v in base.items()}
        top = order[0]
        v0 = st.typical_scale(wS.min(), s.R, D)
        Tguess = 3 * so.escape_time(lam[top], c[top], v0) if (lam[top] * c[top]) ** (1 / 3) * v0 < 0.5 else 100.0
        stepsS = int(math.ceil(Tguess / s.lr))
        if stepsS > budget:
            ctx.inconclusive(f"ATTN_S: 3 × the first escape time ({Tguess:.3g} τ) needs {stepsS:.3g} GD steps "
                             f"of η = {s.lr:.3g}, more than the {ctx.profile} profile's budget of {budget:.3g}")
            return
        runS = st.population_gd(lam, s.N, pS, lr=s.lr, steps=stepsS)
        mid = 0.5 * (levels[0] + levels[1])
        TS = np.array([_first_below(runS.t, runS.loss[k], mid) for k in range(runS.loss.shape[0])])
        if not np.all(np.isfinite(TS)):
            ctx.inconclusive("ATTN_S: not every run left the first plateau within the horizon")
            return
        TS = TS.reshape(nd, len(wS))
        slopesS = [np.polyfit(np.log(wS), np.log(TS[k]), 1)[0] for k in range(nd)]
        b = lam[top] * c[top]
        Bconst = b ** (1 / 3) / lam[top] ** 2 * abs(float(so.G(0.5)) + math.pi / (6 * math.sqrt(3)))
        tol = 2 * Bconst / float(TS.min()) + 2 * s.lr / float(TS.min())
        ctx.measure("attn_s_loglog_slope", slopesS)
        ctx.measure("attn_s_drop_times", TS.tolist())
        ctx.close("ATTN_S: d ln T / d ln w_init = −1", predicted=[pred["attn_s_loglog_slope"]] * nd,
                  measured=slopesS, atol=tol,
                  why="before the escape the flow is homogeneous of degree 2, so its time scales exactly as "
                      "1/w; the non-homogeneous escape adds a w-independent B ≈ τb^{1/3}|G(1/2) + π/(6√3)|/λ² "
                      f"= {Bconst:.3g} τ (scalar ODE), which bends the log-log slope by ≤ B/T_min; ×2, plus "
                      "2 steps of interpolation/discretisation")
        ctx.plot(Plot(title="Fig. 1 reproduction: ATTN_M (population GD) — one drop at every init scale",
                      xlabel="t / τ", ylabel="loss (plain MSE)",
                      series=[Series(tM[plot_indices(len(tM), log=True)], resM.loss[k, plot_indices(len(tM), log=True)],
                                     f"w_init = {wM[k]:.2g}") for k in range(len(wM))],
                      hlines=[(levels[0], "tr Λ"), (LstarM, "L*")],
                      caption=f"D={D}, N={s.N}, H={s.H_merged}, η={s.lr_merged:.4g} τ/step (code lr 0.001)."))
        ctx.plot(Plot(title="Plateau length vs init scale", xlabel="w_init", ylabel="first-drop time t/τ",
                      series=[Series(wS, TS[0], "ATTN_S (measured)", "points"),
                              Series(wS, TS[0, 0] * (wS[0] / wS), "∝ 1/w_init", "dashed", color="k"),
                              Series(wM, TM[0], "ATTN_M (measured)", "points"),
                              Series(wM, TM[0, 0] + (np.log(1 / wM) - np.log(1 / wM[0])) * pred["attn_m_slope"],
                                     "ln(1/w)/‖Λ²‖_F + const", "dotted", color="k")],
                      logx=True, logy=True))


def _count_drops(t, y, *, ends_converged: bool) -> int:
    """Drops = transitions between the detected plateaus (log time); when the run is known to end
    converged, its final value is the last level (added unless the last plateau already sits there,
    within the detector's min_drop of 3% of the range)."""
    levels = [p.level for p in detect_plateaus(t, y, log_time=True)]
    if ends_converged and (not levels or abs(levels[-1] - y[-1]) > 0.03 * float(np.ptp(y))):
        levels.append(float(y[-1]))
    return len(levels) - 1


def _first_below(t, y, level) -> float:
    """First (interpolated) time the curve crosses below ``level``; NaN if it never does."""
    tc = first_crossing(t, y, level)
    return float("nan") if tc is None else tc


# =============================================================================== softmax


@dataclass(frozen=True, kw_only=True)
class SoftmaxSetting(_HeadsSetting):
    """Softmax attention: D=4, N=31, Fig. 3 spectrum; H=5 (separate) / 8 (merged); P=300 (settings of Fig. 5 are undocumented)."""

    H_merged: int = Int(8, min=1, doc="heads of the merged softmax model")
    P: int = Int(300, min=10, doc="training sequences")
    w_init: float | None = Float(0.03, positive=True, doc="init std of every weight")
    lr: float | None = Float(None, positive=True,
                             doc="GD step on L_1/2 (default: 1, capped at the linear-attention stability "
                                 "limit 2/κ, κ = max 9λ^{5/3}c^{-1/3}; the cap binds only for large λ)")
    steps: int | None = Int(None, min=1, doc="GD steps (default: 1.5 × the linear theory escape time of the third direction)")

    def _resolve(self) -> None:
        if self.lr is None:
            # the linear model's curvature at the top learned direction (see _HeadsSetting)
            kappa = float(np.max(9.0 * self.lam ** (5 / 3) * self.c ** (-1 / 3)))
            self._set("lr", min(1.0, 2.0 / kappa))
        super()._resolve()


class SoftmaxDrops(Claim):
    id = "linattn.softmax.drops"
    title = "Softmax attention (qualitative): merged key-query shows one drop, separate key/query several"
    source = f"{ARXIV}, Fig. 5 (softmax variants; no softmax theory in the paper)"
    provenance = "third-party summary of the paper"
    statement = (
        r"\hat y_q=\sum_i\sum_n\operatorname{softmax}_n(X_n^\top W^{KQ}_i\tilde x_q)\,(W^V_iX_n)_{D+1}:"
        r"\ \text{merged}\Rightarrow1\text{ drop};\ W^{KQ}_i=(W^K_i)^\top W^Q_i\Rightarrow\text{several drops}"
    )
    setting_type = SoftmaxSetting
    negative_control = "predict two drops for the merged model (--predict merged_drops=2)"

    def constants(self, s: SoftmaxSetting) -> dict:
        # "several" = at least two, but H heads of rank R hold only H·R directions (and D exist)
        return {"merged_drops": 1, "separate_min_drops": min(2, s.learnable)}

    def check(self, s: SoftmaxSetting, ctx) -> None:
        from icltheory.models import _softmax_attention as sa

        pred = ctx.predicted
        lam, c, D = s.lam, s.c, s.D
        P = s.P
        X, y = la.sample_sequences(P, s.N, np.diag(lam), ctx.rng(30))
        rng = ctx.rng(31)
        w = s.w_init
        # horizon: 1.5 × the linear theory's escape time of the direction whose drop would be the
        # second (the paper's "several drops" needs at least two), from the init scale w
        nth = s.order[min(2, s.learnable - 1)]
        u0 = (lam[nth] * c[nth]) ** (1 / 3) * w
        T = so.escape_time(lam[nth], c[nth], w) + so.transit_time(lam[nth], c[nth], 0.5, 0.9) if u0 < 0.5 else 50.0
        steps = s.steps or int(math.ceil(1.5 * T / s.lr))
        budget = ctx.by_profile(*_SOFTMAX_STEP_BUDGET)
        if steps > budget:
            ctx.inconclusive(f"{steps:.3g} GD steps of η = {s.lr:.3g} ({'steps' if s.steps else '1.5 × the linear theory time'} "
                             f"{steps * s.lr:.3g} τ) exceed the {ctx.profile} profile's budget of {budget:.3g} "
                             "for the softmax trainer — not run")
            return
        rec = max(1, steps // 1500)
        mm = sa.SoftmaxAttention(s.H_merged, merged=True)
        pm = {"r": w * rng.standard_normal((s.H_merged, D + 1)), "A": w * rng.standard_normal((s.H_merged, D + 1, D))}
        pm["r"][:, :D] = 0.0
        pm["A"][:, D, :] = 0.0
        ms = sa.SoftmaxAttention(s.H, merged=False, R=s.R)
        ps = {"r": w * rng.standard_normal((s.H, D + 1)), "K": w * rng.standard_normal((s.H, s.R, D + 1)),
              "Q": w * rng.standard_normal((s.H, s.R, D))}
        ps["r"][:, :D] = 0.0
        ps["K"][:, :, D] = 0.0
        sm, lm, _ = sa.softmax_train(mm, pm, X, y, lr=s.lr, steps=steps, record_every=rec)
        ss, ls, _ = sa.softmax_train(ms, ps, X, y, lr=s.lr, steps=steps, record_every=rec)
        t = sm * s.lr
        if t.size - 1 < _MIN_CURVE_POINTS:
            ctx.inconclusive(f"only {t.size - 1} recorded points after {steps} steps — too short to resolve "
                             f"plateaus (need ≥ {_MIN_CURVE_POINTS}; raise steps)")
            return
        plm = _clear_plateaus(t[1:], lm[1:])
        pls = _clear_plateaus(t[1:], ls[1:])
        nm, ns = len(plm) - 1, len(pls) - 1
        ctx.measure("merged_drops", nm)
        ctx.measure("separate_drops", ns)
        ctx.measure("merged_plateau_levels", [p.level for p in plm])
        ctx.measure("separate_plateau_levels", [p.level for p in pls])
        ctx.close("softmax ATTN_M: number of drops", predicted=pred["merged_drops"], measured=nm, atol=0.5,
                  why="plateau detector (log time, relative thresholds) on the training loss")
        need = int(round(float(pred["separate_min_drops"])))
        if ns < need and steps * s.lr < T:
            ctx.inconclusive(f"softmax ATTN_S: {ns} drop(s) by t = {steps * s.lr:.3g} τ, before the linear "
                             f"theory's learning time of e_{nth} ({T:.3g} τ, what the default horizon is built "
                             "on): the horizon (steps) is too short to judge")
        else:
            ctx.condition("softmax ATTN_S: several drops", ns >= need,
                          predicted=f"≥ {pred['separate_min_drops']}", measured=ns,
                          why="plateau detector on the training loss, over a horizon past the linear "
                              "theory's escape time of the direction giving that drop")
        lv = [float(x) for x in _plateau_losses_exact(s.lambdas, s.N, s.order)]
        ctx.note("The paper gives no softmax theory: the plateau levels of the softmax runs "
                 f"(merged {[round(p.level, 4) for p in plm]}, separate {[round(p.level, 4) for p in pls]}) "
                 f"are reported next to the linear-attention levels {[round(x, 4) for x in lv]} "
                 "for comparison only; no quantitative agreement is claimed or checked. A plateau "
                 "counts when it is flat in linear or in logarithmic time (union, merged by level).")
        ctx.plot(Plot(title=f"Softmax attention, D={D}, N={s.N}, P={P}", xlabel="t / τ", ylabel="training loss",
                      series=[Series(t[1:], lm[1:], f"merged key-query, H={s.H_merged}"),
                              Series(t[1:], ls[1:], f"separate key/query, H={s.H}, R={s.R}")],
                      hlines=[(x, f"linear theory L(M_{m})") for m, x in enumerate(lv)], logx=True,
                      caption="Qualitative comparison only (no softmax theory)."))


#: most full-batch GD steps of the softmax trainers per profile (quick, standard, thorough);
#: the paper-like default needs ~1.2e3
_SOFTMAX_STEP_BUDGET = (20_000, 100_000, 1_000_000)


def _clear_plateaus(t, y) -> list:
    """Plateaus flat in logarithmic time (early, short ones) or in linear time (late, long ones),
    merged when their levels differ by less than the detector's min_drop (3% of the range)."""
    both = sorted(detect_plateaus(t, y, log_time=True) + detect_plateaus(t, y), key=lambda p: p.start)
    rng = float(np.max(y) - np.min(y))
    out = []
    for p in both:
        if out and abs(p.level - out[-1].level) < 0.03 * rng:
            continue
        out.append(p)
    return out


SEPARATE_CLAIMS = (SeparateEquivalence(), SeparateFixedPoints(), SaddleToSaddle(), ScalarOde(),
                   RankPlateaus(), InitScale(), SoftmaxDrops())
