r"""Settings of the softmax-regression claims, and the candidate-constant expression.

Assumption set of every claim (a search only samples inside it): $\lVert A_1\otimes A_2\rVert_2
=\lVert A_1\rVert_2\lVert A_2\rVert_2\le R$, $\lVert X\rVert_F,\lVert Y\rVert_F\le R$, every row of
$B$ of $\ell_2$ norm $\le1$.  $R\in[10^{-8},10]$: every constant (up to $e^{4R^2}$ with $n\le16$)
is then a finite float64, and below $10^{-8}$ the ratios underflow the search's resolution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from icltheory.core import Choice, Float, Int, Setting, SettingError, Text

__all__ = ["SoftmaxRegressionSetting", "CandidateSetting", "ShiftSetting", "RescaledSetting",
           "LOSSES",
           "candidate_expression", "reference_instance", "search_iterations", "bnb_box_work",
           "bnb_default_boxes"]

LOSSES = ("normalized", "rescaled")
_MAX_N, _MAX_D = 16, 6  # the search works in dimension 2nd + 2d² + n² + 1 (≤ 521)
R_MIN, R_MAX = 1e-8, 10.0
CANDIDATE_MAX = 1e300


def search_iterations(n: int, d: int) -> int:
    """BFGS iterations per refinement: 150 at n=4, d=3, scaled down with the cost of one
    gradient stencil ((dim+1) instances of O(n²d + nd² + d³) work) so that a check stays within
    seconds; never below 25."""
    dim = 2 * n * d + 1 + 2 * d * d + n * n
    cost = (dim + 1) * (n * n * d + n * d * d + d ** 3)
    base = 60 * (48 + 36 + 27)
    return int(min(150, max(25, 150 * base / cost)))


#: flop-equivalents the branch and bound may use by default, per loss and profile (the standard
#: profile's resolves the 1.10 band at n = 4, R = 1 for the normalized loss with room to spare;
#: the quick profile's is small — 2800 boxes of the normalized loss at n = 4 — but runs it, and
#: the check of its certificate, at every profile)
BNB_WORK = {"normalized": {"quick": 1.4e9, "standard": 1.5e10, "thorough": 3e11},
            "rescaled": {"quick": 5e8, "standard": 1.5e10, "thorough": 3e11}}
BNB_MAX_BOXES = 5_000_000


def bnb_box_work(n: int, loss: str = "normalized") -> float:
    """≈ flop-equivalents of one branch-and-bound box, averaged over a run (2.5e9 per second of
    one core of the project machine): measured ≈ 150, 400, 840 µs per box at n = 4, 5, 6 for
    the normalized loss's eigen bound on a machine slower than that (×2.1–2.7 per logit: 3^{n−2}
    points of the target grid and ~n³ second-order products), and ≈ 10, 27, 38 µs for the
    rescaled loss's ratio form."""
    n = max(int(n), 2)
    sec = 200e-6 * 2.4 ** (n - 4) if loss == "normalized" else 10e-6 * 2.0 ** (n - 4)
    return 2.5e9 * sec


#: bytes the branch and bound holds besides its boxes (one chunk's second-order forms, the process)
BNB_BASE_BYTES = 3.5e8


def bnb_box_bytes(n: int) -> float:
    """≈ bytes per box evaluated: its place in the frontier (two corners and a bound, ×3 for the
    copies a split makes) and in the certificate with its check (a leaf's corners, id, kind and
    bound, a split's record, the checker's copy of every node's corners)."""
    n = max(int(n), 2)
    D = 2 * n
    return 3 * 8.0 * (4 * n) + 8.0 * (2 * D + 3) + 24.0 + 8.0 * 4 * D


def bnb_default_boxes(n: int, profile: str, loss: str = "normalized") -> int:
    """The default box budget: the profile's branch-and-bound work over one box's work, and no
    more boxes than the profile's memory budget holds (deterministic: from n, the loss and the
    profile only)."""
    from icltheory.core import BUDGETS

    by_memory = (0.9 * BUDGETS[profile][1] - BNB_BASE_BYTES) / bnb_box_bytes(n)
    return int(min(BNB_MAX_BOXES, by_memory, BNB_WORK[loss][profile] / bnb_box_work(n, loss) * (1 + 1e-12)))


@dataclass(frozen=True, kw_only=True)
class SoftmaxRegressionSetting(Setting):
    #: the loss whose branch-and-bound box sets the default box budget (a claim's own loss)
    bnb_loss: ClassVar[str] = "normalized"

    n: int = Int(4, min=1, max=_MAX_N, sample=(1, 6),
                 doc="rows of A1, A2 (queries = keys = n); B is n×n")
    d: int = Int(3, min=1, max=_MAX_D, sample=(1, 4),
                 doc="columns of A1, A2; the unknown X is d×d (x has d² entries)")
    R: float = Float(1.0, min=R_MIN, max=R_MAX, sample=(0.05, 3.0, "log"),
                     doc="bound on ‖A1⊗A2‖₂ and on ‖x‖₂ = ‖X‖_F (logits ≤ R²)")
    samples: int | None = Int(None, min=8, max=200_000, by_profile=(400, 2000, 8000),
                              doc="random examples per search")
    refine: int | None = Int(None, min=0, max=64, by_profile=(1, 4, 12),
                             doc="local (BFGS) refinements of the best examples")
    maxiter: int | None = Int(None, min=1, max=2000,
                              doc="BFGS iterations per refinement (default: from n, d and the "
                                  "profile)")
    grid: int | None = Int(None, min=0, max=20, by_profile=(0, 5, 5),
                           doc="points of the R' ≤ R grid searched for the tightness plot")
    bnb_boxes: int | None = Int(None, min=0, max=50_000_000,
                                doc="boxes the branch and bound may evaluate (certified upper "
                                    "bound on the Lipschitz constant; 0: none; default: the "
                                    "profile's branch-and-bound work over the work of one box "
                                    "at this n)")
    witness_starts: int | None = Int(None, min=0, max=200, by_profile=(3, 6, 12),
                                     doc="random starts of the explicit-witness maximisation")

    def _resolve(self) -> None:
        if self.maxiter is None:
            scale = {"quick": 0.3, "standard": 1.0, "thorough": 1.0}[self.profile]
            self._set("maxiter", max(5, int(scale * search_iterations(self.n, self.d))))
        if self.bnb_boxes is None:
            loss = getattr(self, "loss", None) or self.bnb_loss
            self._set("bnb_boxes", bnb_default_boxes(self.n, self.profile, loss))


_CANDIDATE_NAMES = ("n", "d", "R")


def candidate_expression(text: str):
    """The parsed candidate (an :class:`icltheory.bounds.Expression` in n, d, R)."""
    from icltheory.bounds import ExpressionError, parse_expression

    try:
        return parse_expression(text, _CANDIDATE_NAMES)
    except ExpressionError as exc:
        raise SettingError("candidate", f"cannot use {str(text)[:40]!r}: {exc}") from None


def candidate_ball(text: str, n: int, d: int, R: float, prec: int = 212):
    """The candidate's value as an arb ball (R taken as its exact float value)."""
    from icltheory.bounds import ExpressionError

    try:
        return candidate_expression(text).evaluate({"n": n, "d": d, "R": float(R)}, prec)
    except ExpressionError as exc:
        raise SettingError("candidate", f"cannot evaluate {str(text)[:40]!r}: {exc}") from None


#: the default candidate per loss: the proved closed-form bounds, typed as a user would
DEFAULT_CANDIDATES = {"normalized": "3.25*R^2", "rescaled": "(3*n+3*sqrt(n)+2)*R^2*exp(2*R^2)"}


@dataclass(frozen=True, kw_only=True)
class CandidateSetting(SoftmaxRegressionSetting):
    candidate: str | None = Text(None, doc="your Lipschitz constant: a number or an expression "
                                           "in n, d, R (e.g. 0.5, 13, 16*R^2*exp(4*R^2)/n); "
                                           "default: the proved bound of the loss")
    loss: str = Choice("normalized", LOSSES, sample=True, doc="which loss the constant is for")

    def _resolve(self) -> None:
        super()._resolve()
        if self.candidate is None:
            self._set("candidate", DEFAULT_CANDIDATES[self.loss])

    def _validate(self) -> None:
        val = candidate_ball(self.candidate, self.n, self.d, self.R)
        if not val > 0:
            raise SettingError("candidate", f"{self.candidate[:40]!r} must evaluate to a "
                                            f"positive number at this setting, got {val.str(6)}")
        if not val > 2.2250738585072014e-308:
            raise SettingError("candidate", f"{self.candidate[:40]!r} evaluates to {val.str(6)}, "
                                            "below the smallest normal float64 (2.2e-308)")
        if not val < CANDIDATE_MAX:
            raise SettingError("candidate", f"{self.candidate[:40]!r} exceeds {CANDIDATE_MAX:g} "
                                            "(any constant that large is beyond float64)")


@dataclass(frozen=True, kw_only=True)
class RescaledSetting(SoftmaxRegressionSetting):
    """The rescaled-loss claims' setting (its branch-and-bound boxes are cheaper)."""

    bnb_loss: ClassVar[str] = "rescaled"


@dataclass(frozen=True, kw_only=True)
class ShiftSetting(SoftmaxRegressionSetting):
    eta: float = Float(0.5, positive=True, max=1e3, sample=(0.01, 5.0, "log"),
                       doc="learning rate of the demo GD step X_t → X_{t+1}")


def reference_instance(n: int, d: int, R: float, seed: int):
    """One instance inside the assumptions, determined by the seed (input data shared by the
    prediction and the measurement): (A1, A2, B, X) with ‖A1‖‖A2‖ = R·(1 − 1e-9),
    ‖X‖_F = R/2, rows of B on the simplex."""
    rng = np.random.default_rng([seed, 77])
    A1, A2 = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    s = np.sqrt(R * (1 - 1e-9))
    A1 *= s / np.linalg.norm(A1, 2)
    A2 *= s / np.linalg.norm(A2, 2)
    X = rng.standard_normal((d, d))
    X *= 0.5 * R / np.linalg.norm(X)
    B = rng.dirichlet(np.ones(n), size=n)
    return A1, A2, B, X
