"""The paper's derivation object and the numbers lowered from it (see the package docstring)."""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import sympy as sp

from icltheory.core import Derivation, cached, derived
from icltheory.symbolic import exact, exact_list, lowered

from . import _population
from ._dynamics import InitScale, MergedDynamics, ScalarOde, SeparateDynamics
from ._equivalence import Equivalence
from ._population import Population

__all__ = ["paper", "Paper", "learnable", "rank_stages", "softmax_drop_counts"]


def learnable(D: int, H: int, R: int = 1) -> int:
    """How many eigen-directions H heads of rank R can hold: min(D, H·R)."""
    return min(D, H * R)


def rank_stages(D: int, H: int, R: int) -> list[int]:
    """Directions learned per stage by rank-R heads: R at a time (one head escapes per stage),
    the last stage taking the rest of the learnable ones."""
    n = learnable(D, H, R)
    return [R] * (n // R) + ([n % R] if n % R else [])


def softmax_drop_counts(D: int, H: int, R: int) -> tuple[int, int]:
    """(merged: one drop, separate: several = at least two, but no more than the learnable)."""
    return 1, min(2, learnable(D, H, R))


class Paper:
    """Sections of the paper's derivation (derived on first use) and their lowered numbers."""

    # ---------------------------------------------------------------- sections (derived once)
    @cached_property
    def population(self) -> Population:
        return _section("population")

    @cached_property
    def merged(self) -> MergedDynamics:
        return _section("merged")

    @cached_property
    def separate(self) -> SeparateDynamics:
        return _section("separate")

    @cached_property
    def scalar_ode(self) -> ScalarOde:
        return _section("scalar_ode")

    @cached_property
    def init_scale(self) -> InitScale:
        return _section("init_scale")

    @cached_property
    def equivalence(self) -> Equivalence:
        return _section("equivalence")

    def view(self, title: str, *parts: Derivation) -> Derivation:
        """One claim's view: the named sections' terms, text and (already verified) steps."""
        return Derivation.joined(title, *parts)

    # ---------------------------------------------------------------- lowered: population
    @cached_property
    def _pop_fns(self) -> dict:
        p = self.population
        args = (_population.lam, _population.T, _population.N)
        return {k: lowered(args, e, "numpy") for k, e in
                (("c", p.c_general), ("drop", p.drop_general), ("m_star", p.m_star_general),
                 ("beta_diag", p.beta_diag_general))}

    def _per_direction(self, key: str, lambdas, N: int) -> np.ndarray:
        lam = np.asarray(lambdas, dtype=float)
        return np.broadcast_to(np.asarray(self._pop_fns[key](lam, float(lam.sum()), float(N)), float),
                               lam.shape).copy()

    def c(self, lambdas, N: int) -> np.ndarray:
        r"""$c_d=1+(1+\operatorname{tr}\Lambda/\lambda_d)/N$ per eigen-direction."""
        return self._per_direction("c", lambdas, N)

    def drops(self, lambdas, N: int) -> np.ndarray:
        r"""$\lambda_d/c_d$: the loss drop when direction d is learned."""
        return self._per_direction("drop", lambdas, N)

    def m_star(self, lambdas, N: int) -> np.ndarray:
        r"""$1/(\lambda_dc_d)$: the learned value of $M_{dd}$."""
        return self._per_direction("m_star", lambdas, N)

    def beta_diag(self, lambdas, N: int) -> np.ndarray:
        r"""$\mathbb E[\beta\beta^\top]_{dd}=\lambda_d^2c_d$."""
        return self._per_direction("beta_diag", lambdas, N)

    def order(self, lambdas) -> list[int]:
        """Eigen-indices by decreasing eigenvalue: the predicted learning order."""
        return _population.eigen_order(lambdas)

    def plateau_levels(self, lambdas, N: int, order=None) -> list[float]:
        r"""Eq. 19: $L(\mathcal M_m)=\operatorname{tr}\Lambda-\sum_{k\le m}\lambda_{d_k}/c_{d_k}$ along
        ``order`` (default: by decreasing eigenvalue)."""
        order = self.order(lambdas) if order is None else order
        drops = self.drops(lambdas, N)
        out = [math.fsum(float(x) for x in lambdas)]
        for d in order:
            out.append(out[-1] - float(drops[d]))
        return out

    def plateau_levels_exact(self, lambdas, N: int, order=None) -> list[str]:
        """Eq. 19 in exact rationals (the setting's numbers read as shortest decimals)."""
        order = self.order(lambdas) if order is None else order
        lam = exact_list(lambdas)
        tr = sum(lam)
        p = self.population
        sub = {_population.T: tr, _population.N: sp.Integer(N)}
        out = [tr]
        for d in order:
            out.append(out[-1] - p.drop_general.xreplace({**sub, _population.lam: lam[d]}))
        return [str(sp.nsimplify(x)) for x in out]

    # ---------------------------------------------------------------- lowered: ATTN_M σ(t)
    def sigmoid(self, D: int, N: int, lam: float, w_init: float) -> dict:
        """The logistic time course's constants for Λ = λI (30-digit evaluation)."""
        m = self.merged
        vals = dict(zip(m.symbols, (sp.Integer(D), sp.Integer(N), exact(lam), exact(w_init))))
        out = {k: float(sp.N(e.xreplace(vals), 30)) for k, e in m.terms.items()}
        out["sigma_inf_exact"] = str(sp.nsimplify(m.terms["sigma_inf"].xreplace(vals)))
        return out

    # ---------------------------------------------------------------- lowered: scalar ODE
    @cached_property
    def _scalar_fns(self) -> dict:
        s = self.scalar_ode
        y = s.symbols
        pc = (y["lam"], y["c"])
        return {"c": lowered((y["lam"], y["T"], y["N"]), s.terms["c"], "mpmath"),
                "v_star": lowered(pc, s.terms["v_star"], "mpmath"),
                "drop": lowered(pc, s.terms["drop"], "mpmath"),
                "kappa": lowered(pc, s.terms["kappa"], "mpmath"),
                "offset": lowered(pc, s.terms["offset"], "mpmath"),
                "naive": lowered((y["lam"], y["v0"]), s.terms["naive"], "mpmath"),
                "transit": lowered((*pc, y["u0"], y["u1"]), s.terms["transit"], "mpmath")}

    def scalar_c(self, lam: float, trace: float, N: int) -> float:
        return float(self._scalar_fns["c"](lam, trace, N))

    def v_star(self, lam: float, c: float) -> float:
        return float(self._scalar_fns["v_star"](lam, c))

    def transit_time(self, lam: float, c: float, u0: float, u1: float) -> float:
        """Time (τ) for u = (λc)^{1/3} v to go from u0 to u1 (both in (0, 1))."""
        return float(self._scalar_fns["transit"](lam, c, u0, u1))

    def escape_time(self, lam: float, c: float, v0: float, frac: float = 0.5) -> float:
        """Closed form: time from v0 to frac·v* (default v*/2)."""
        u0 = v0 / self.v_star(lam, c)
        if not 0.0 < u0 < frac < 1.0:
            raise ValueError(f"need 0 < v0 < {frac:g}·v* (v0 = {v0:g}, v* = {self.v_star(lam, c):g})")
        return self.transit_time(lam, c, u0, frac)

    def stability_curvature(self, lam: float, c: float) -> float:
        """κ = 9λ^{5/3}c^{-1/3}: GD on the learned direction is stable for η < 2/κ."""
        return float(self._scalar_fns["kappa"](lam, c))

    def escape_offset(self, lam: float, c: float) -> float:
        """|escape time − τ/(λ²v0)| as v0 → 0: τ(λc)^{1/3}|G(½) + π/(6√3)|/λ²."""
        return float(self._scalar_fns["offset"](lam, c))

    def scalar_constants(self, lam: float, trace: float, N: int, v0: float) -> dict:
        """The scalar-ODE claim's constants."""
        c = self.scalar_c(lam, trace, N)
        return {"v_star": self.v_star(lam, c), "escape_time": self.escape_time(lam, c, v0),
                "naive_escape_time": float(self._scalar_fns["naive"](lam, v0)), "c": c,
                "loss_drop": float(self._scalar_fns["drop"](lam, c))}

    # ---------------------------------------------------------------- lowered: init scale
    @cached_property
    def _g_sq(self):
        return lowered(_population.lam, self.init_scale.terms["g_sq"], "numpy")

    def merged_growth_rate(self, lambdas) -> float:
        r"""$\lVert\Lambda^2\rVert_F$: the escape rate of ATTN_M from small init."""
        return math.sqrt(float(np.sum(self._g_sq(np.asarray(lambdas, dtype=float)))))

    def init_scale_constants(self, lambdas) -> dict:
        """ATTN_M: dT/d ln(1/w) = 1/‖Λ²‖_F; ATTN_S: d ln T/d ln w = 1 − (degree of the flow)."""
        return {"attn_m_slope": 1.0 / self.merged_growth_rate(lambdas),
                "attn_s_loglog_slope": float(self.init_scale.terms["attn_s_slope"])}


_SECTIONS = {"merged": MergedDynamics, "separate": SeparateDynamics, "scalar_ode": ScalarOde,
             "init_scale": InitScale}


@derived
def _section(name: str):
    """One section of the paper's derivation (derived once per machine: the disk cache)."""
    if name == "population":
        return Population()
    if name == "equivalence":
        return Equivalence()
    return _SECTIONS[name](_section("population"))


@cached
def paper() -> Paper:
    """The paper's derivation object (memoised; sections derived on first use)."""
    return Paper()
