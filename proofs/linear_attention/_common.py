r"""Pieces shared by the merged (ATTN_M) and separate (ATTN_S) claim modules of Zhang, Singh,
Latham, Saxe (ICML 2025, arXiv 2501.16265): the citation, the spectrum setting every claim
family derives from, and the small check/plot helpers both modules use.

:class:`SpectrumSetting` holds the keys common to every linear-attention claim — ``D``, ``N``,
``H``, ``lambdas`` (and ``seed`` from :class:`~icltheory.core.Setting`) — with the one
``D``/``lambdas`` resolution and validation: ``D`` defaults to the number of eigenvalues
(or ``_default_D`` when no spectrum is given, which then defaults to white, Λ = I), and a
spectrum whose length is not ``D`` is a :class:`SettingError` naming ``lambdas``.  The claim
families add their own training keys (``w_init``, ``lr``, ``steps``, ``P``, …) because their
defaults differ (paper units of Fig. 1 vs the reference code's mapped settings of Fig. 3/4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from icltheory.core import BadInput, Floats, Int, Setting, SettingError

ARXIV = "arXiv 2501.16265 (Zhang, Singh, Latham, Saxe, ICML 2025)"

#: why an exact algebraic identity evaluated in float64 is judged at 1e-10 relative
IDENTITY_WHY = ("exact algebraic identity evaluated in float64: rounding error of sums of O(N·D²) "
                "terms is ~1e-14 relative; 1e-10 leaves four orders of margin")


@dataclass(frozen=True, kw_only=True)
class SpectrumSetting(Setting):
    """Keys common to every linear-attention claim: D, N, H, λ (eigenvalues of Λ)."""

    D: int | None = Int(None, min=1, doc="input dimension (default: number of lambdas, else 4)")
    N: int = Int(31, min=1, doc="context length N (the paper's 1/N normalisation)")
    H: int = Int(8, min=1, doc="number of heads")
    lambdas: tuple | None = Floats(None, positive=True, doc="eigenvalues of Λ (default Λ = I)")

    #: D when neither D nor lambdas is given
    _default_D = 4

    def _resolve(self) -> None:
        if self.D is None:
            self._set("D", len(self.lambdas) if self.lambdas is not None else self._default_D)
        if self.lambdas is None:
            self._set("lambdas", (1.0,) * self.D)

    def _validate(self) -> None:
        if len(self.lambdas) != self.D:
            raise SettingError("lambdas", f"has {len(self.lambdas)} eigenvalues but D={self.D}")

    @property
    def lam(self) -> np.ndarray:
        return np.asarray(self.lambdas, dtype=float)

    @property
    def Lam(self) -> np.ndarray:
        return np.diag(self.lam)

    @property
    def c(self) -> np.ndarray:
        r"""$c_d=1+(1+\operatorname{tr}\Lambda/\lambda_d)/N$ per eigen-direction."""
        lam = self.lam
        return 1.0 + (1.0 + lam.sum() / lam) / self.N

    @property
    def order(self) -> list[int]:
        """Eigen-indices (into ``lambdas``) by decreasing eigenvalue (stable for ties)."""
        return [int(i) for i in np.argsort(-self.lam, kind="stable")]


# =============================================================================== check helpers


def max_rel_error(a: np.ndarray, b: np.ndarray) -> float:
    """max |a − b| / max |a| (0/0 read as 0)."""
    scale = max(float(np.max(np.abs(a))), 1e-300)
    return float(np.max(np.abs(a - b)) / scale)


def check_count(ctx, name: str, predicted, measured: int) -> None:
    """An integer count compared with a (possibly user-planted) prediction: |Δ| < 1/2."""
    ctx.close(name, predicted=predicted, measured=measured, atol=0.5, why="integer count")


def plot_indices(n: int, k: int = 1500, *, log: bool = False) -> np.ndarray:
    """At most ~k indices into a curve of n points for a figure: evenly spaced, or (``log``)
    half evenly spaced and half geometrically spaced, so a log-time axis keeps its early part."""
    if n <= k:
        return np.arange(n)
    lin = np.linspace(0, n - 1, k if not log else k // 2).astype(int)
    if not log:
        return np.unique(lin)
    return np.unique(np.concatenate([np.geomspace(1, n - 1, k // 2).astype(int), lin, [0]]))


# =============================================================================== equivalence pieces


@dataclass(frozen=True)
class SymbolicTokens:
    r"""Generic symbolic tokens $X\in\mathbb R^{(D+1)\times(N+1)}$ (query label 0) and a generic
    value matrix $W^V$, with the pieces both reductions use: $x$, $y$, $\beta=\frac1N\sum_ny_nx_n$,
    $x_q$, $v=(W^V)_{D+1,D+1}$, $a=(W^V)_{D+1,1:D}^\top$, $S_{xx}=\sum_{n\le N+1}x_nx_n^\top$,
    $S_{yy}=\sum_ny_n^2$."""

    D: int
    N: int
    X: sp.Matrix
    WV: sp.Matrix

    @classmethod
    def make(cls, D: int, N: int) -> "SymbolicTokens":
        X = sp.Matrix(D + 1, N + 1, lambda a, n: sp.Symbol(f"X_{a}{n}", real=True))
        X[D, N] = 0
        WV = sp.Matrix(D + 1, D + 1, lambda a, b: sp.Symbol(f"V_{a}{b}", real=True))
        return cls(D, N, X, WV)

    @property
    def x(self) -> sp.Matrix:
        return self.X[: self.D, :]

    @property
    def y(self) -> sp.Matrix:
        return self.X[self.D, :]

    @property
    def beta(self) -> sp.Matrix:
        x, y = self.x, self.y
        return sum((y[n] * x[:, n] for n in range(self.N)), sp.zeros(self.D, 1)) / sp.Integer(self.N)

    @property
    def xq(self) -> sp.Matrix:
        return self.x[:, self.N]

    @property
    def v(self):
        return self.WV[self.D, self.D]

    @property
    def a(self) -> sp.Matrix:
        return self.WV[self.D, : self.D].T

    def attention_output(self, WKQ: sp.Matrix):
        """Bottom-right entry of $W^VXX^\\top W^{KQ}X/N$ (one head; W^{KQ} may be KᵀQ)."""
        return (self.WV * self.X * self.X.T * WKQ * self.X / sp.Integer(self.N))[self.D, self.N]

    def irrelevant_terms(self, U: sp.Matrix, b: sp.Matrix):
        r"""$a^\top S_{xx}Ux_q/N+(a^\top\beta)(b^\top x_q)+vS_{yy}(b^\top x_q)/N$: what the value's
        x→y entries $a$ and the key-query's label row $b$ add to $v\beta^\top Ux_q$."""
        x, y, Nn = self.x, self.y, sp.Integer(self.N)
        Sxx = x * x.T
        Syy = sum(y[n] ** 2 for n in range(self.N))
        a, xq = self.a, self.xq
        return ((a.T * Sxx * U * xq)[0] / Nn + (a.T * self.beta)[0] * (b.T * xq)[0]
                + self.v * Syy * (b.T * xq)[0] / Nn)


def beta_and_query(X: np.ndarray, divisor: float) -> tuple[np.ndarray, np.ndarray]:
    """Numeric (β, x_q) of a batch of token matrices X (P, D+1, N+1), β = Σ_n y_n x_n / divisor
    (divisor = N, or a planted value from ``--predict beta_divisor``)."""
    D, N = X.shape[1] - 1, X.shape[2] - 1
    beta = np.einsum("pn,pdn->pd", X[:, D, :N], X[:, :D, :N]) / divisor
    return beta, X[:, :D, N]


def predicted_beta_divisor(ctx) -> float:
    """The (possibly planted) normalisation of β; a non-positive one is bad input, not a verdict."""
    div = float(ctx.predicted["beta_divisor"])
    if not div > 0:
        raise BadInput(f"--predict beta_divisor: must be > 0, got {div:g}")
    return div
