r"""Settings of the initialisation claims added in wave 4: the large-init regime of
``linattn.init-scale`` and ``linattn.separate.drop-times`` (plain data and derived defaults,
like :mod:`.settings`; horizons come from the theory while resolving, as there).

:func:`initial_heads` is the one draw of a drop-times seed's initial weights: both the theory
(which predicts from them) and the experiment (which trains from them) read the *input* of the
claim from it — it is data, not a formula either side could get wrong for the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icltheory.core import NumericalTrouble, Choice, Float, Int, lazy_module

from .settings import STEPS_MAX, InitScaleSetting, SeparateSetting, _steps

theory = lazy_module("proofs.linear_attention.theory")
dt_theory = lazy_module("proofs.linear_attention.theory._drop_times")
lazy = lazy_module("proofs.linear_attention.theory._init_scale")

__all__ = ["LazyInitScaleSetting", "DropTimesSetting", "initial_heads", "LAZY_WINDOW", "LAZY_OCTAVES"]

#: the loss gap's fitting window, relative to its initial value (late enough that the faster
#: directions and the O(δ) nonlinearity have died out, above float64 rounding of the loss)
LAZY_WINDOW = (1e-10, 1e-5)
#: the large-init grid spans this many octaves below v_ref = max_d λ_d^(-1/3) (up to v_ref)
LAZY_OCTAVES = 3
#: the drop-times run lasts at least this many × (1 + rel_tol) × the latest predicted first drop
FIRST_DROP_MARGIN = 1.5


@dataclass(frozen=True, kw_only=True)
class LazyInitScaleSetting(InitScaleSetting):
    """The init-scale sweeps plus the large-init regime (D aligned balanced heads of ATTN_S)."""

    lazy_per_octave: int | None = Int(None, min=1, max=16, by_profile=(2, 4, 8),
                                      doc="large-init grid points per octave of v0 (the grid spans "
                                          f"{LAZY_OCTAVES} octaves up to v_ref = max λ^(-1/3))")
    lazy_eps: float = Float(1e-6, min=0.0, max=1e-2,
                            doc="relative noise added to every weight of the aligned large init")
    lr_lazy: float | None = Float(None, min=1e-300, max=1e300,
                                  doc="GD step of the large-init run (default 0.05/κ, κ the top curvature)")
    steps_lazy: int | None = Int(None, min=1, max=STEPS_MAX,
                                 doc="GD steps of the large-init run (default: (ln(1/window) + 8)/ρ_min, "
                                     "ρ_min the predicted slowest decay rate)")

    def _resolve(self) -> None:
        super()._resolve()
        if self.lr_lazy is None:
            self._set("lr_lazy", 0.05 / self.kappa_max())
        if self.steps_lazy is None:
            rho = lazy.lazy_constants(self.lambdas, self.N)["lazy_rate"]
            self._set("steps_lazy", _steps(self, "lr_lazy", (math.log(1 / LAZY_WINDOW[0]) + 8) / rho, self.lr_lazy))

    @property
    def lazy_scales(self) -> np.ndarray:
        """The grid of v0: v_ref · 2^(−k/per_octave), k = LAZY_OCTAVES·per_octave … 0."""
        n = LAZY_OCTAVES * self.lazy_per_octave
        v_ref = float(np.max(np.asarray(self.lambdas, float) ** (-1.0 / 3.0)))
        return v_ref * 2.0 ** (-np.arange(n, -1, -1) / self.lazy_per_octave)


def initial_heads(seed: int, rows: int, H: int, D: int, w_init: float) -> dict:
    """The paper-era init of ``rows`` seeds' relevant ATTN_S weights (rank 1): value N(0, w²),
    key and query N(0, w²/(D+1)); row k is the k-th seed of the claim's seed (drawn as one
    block — every row's values, then keys, then queries — so a row's keys and queries depend on
    how many rows are drawn)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7, 1)))
    v = w_init * rng.standard_normal((rows, H))
    sd = w_init / math.sqrt(D + 1)
    K = sd * rng.standard_normal((rows, H, D))
    Q = sd * rng.standard_normal((rows, H, D))
    return {"v": v, "K": K, "Q": Q}


@dataclass(frozen=True, kw_only=True)
class DropTimesSetting(SeparateSetting):
    """Fig. 3's setting (D=4, N=31, H=5, rank 1, code init 0.01, lr 0.02); each seed's drop times
    predicted from its own initial weights and measured by finite-sample training."""

    R: int = Int(1, min=1, max=1, doc="rank of each head (the per-head ODE is for rank 1)")
    seeds: int | None = Int(None, min=1, max=16, by_profile=(2, 3, 6), doc="initialisations predicted and trained")
    fs_seeds: int | None = Int(0, min=0, max=0, doc="(unused here: every seed is trained on finite samples)")
    P: int | None = Int(None, min=100, max=10**6, by_profile=(80_000, 80_000, 160_000),
                        doc="training sequences of the finite-sample run")
    code_init: float | None = Float(None, min=1e-100, max=1e3, by_profile=(0.01, 0.01, 0.01),
                                    doc="the reference code's --init (Fig. 3: 0.01, every profile)")
    code_lr: float | None = Float(None, min=1e-300, max=1e300, by_profile=(0.02, 0.02, 0.02),
                                  doc="the reference code's --lr (Fig. 3: 0.02, every profile)")
    rel_tol: float = Float(0.1, min=1e-6, max=1.0, doc="claimed relative accuracy of the first drop against the "
                                                       "finite-sample training (sampling spread included)")
    pop_rel_tol: float = Float(0.015, min=1e-6, max=1.0, doc="claimed relative accuracy of the first drop against "
                                                           "population GD (no sampling error: only the reduction's)")
    integrator: str = Choice("gd", ("gd",), doc="both runs are GD at step lr (the claim is about training; no "
                                                "adaptive solver)")
    rtol: float | None = Float(None, min=1e-13, max=1e-3, doc="(unused here: no adaptive solver)")

    horizon_factor: float | None = Float(None, min=1e-3, max=100.0, by_profile=(0.2, 1.0, 2.0),
                                         doc="run for this many × the theory's time for the slowest direction to "
                                             "escape and drop from the typical init (quick: the first drop only), "
                                             "and at least 1.5 × (1 + rel_tol) × every seed's predicted first drop")

    def _set_steps(self, horizon: float, lr_given: bool) -> None:
        """Nothing: the figure's default run length (the parent's) is not this claim's; its own
        is set below."""

    def _resolve(self) -> None:
        given = self.steps is not None
        super()._resolve()
        if not given and self.beyond_reach is None:
            typical = self.horizon_factor * self.horizon(1, margin=1.0)
            # beyond reach already at the typical horizon: no per-seed ODE is solved to lengthen it
            if _steps(self, "lr", typical, self.lr) is not None:
                self._set("steps", _steps(self, "lr", max(typical, self.first_drops_reach(typical)), self.lr))

    def first_drops_reach(self, typical: float) -> float:
        """Long enough for every seed's predicted first drop (per-head ODE from its initial
        overlaps, looked for up to 100 × ``typical``): :data:`FIRST_DROP_MARGIN` × (1 + rel_tol) ×
        the latest — a seed whose overlaps are far below the typical scale (one head, say)
        still drops inside the run.  0 when no seed drops within 100 × ``typical``."""
        heads = initial_heads(self.seed, self.seeds, self.H, self.D, self.w_init)
        try:
            rows = dt_theory.drop_times(self.lambdas, self.N, heads, 100.0 * typical, n_drops=1)
        except NumericalTrouble:  # no prediction to make room for (the claim says why)
            return 0.0
        first = [r[0] for r in rows if r]
        return FIRST_DROP_MARGIN * (1.0 + self.rel_tol) * max(first) if first else 0.0
