r"""Softmax regression in the tensor-trick form (Gao, Song, Xie, arXiv 2307.02419).

Data $A_1,A_2\in\mathbb R^{n\times d}$, target $B\in\mathbb R^{n\times n}$, unknown
$X\in\mathbb R^{d\times d}$, logits $M(X)=A_1XA_2^\top$, $u=\exp(M)$ entrywise,
$\alpha=u\mathbf 1_n$ (row sums), $D(X)=\operatorname{diag}(\alpha)$.

* normalized loss $L(X)=\tfrac12\lVert D^{-1}u-B\rVert_F^2=\tfrac12\lVert F-B\rVert_F^2$, where
  $F$ is the row softmax of $M$;
* rescaled loss $L_r(X)=\tfrac12\lVert u-DB\rVert_F^2$.

With row-major $x=\operatorname{vec}(X)$ and $A=A_1\otimes A_2$ (block $j$ of $A$ is
$A_1[j,:]\otimes A_2$), both losses are sums of $n$ single-vector losses that share $x$.

Closed-form gradients (row $j$ of $P$ is the per-block vector $g_j$):

$$\nabla_XL=A_1^\top PA_2,\quad g_j=f_j\circ c_j-f_j\langle f_j,c_j\rangle,\ c_j=f_j-b_j;\qquad
\nabla_XL_r=A_1^\top P_rA_2,\quad g_j=u_j\circ r_j-u_j\langle b_j,r_j\rangle,\ r_j=u_j-\alpha_jb_j.$$

Hessians in $x$: $H=\sum_jA_j^\top J_jA_j$ with the per-block logit Hessians

$$J_j=S_jS_j+(\operatorname{diag}c_j-\langle f_j,c_j\rangle I-f_jc_j^\top)S_j,\quad
S_j=\operatorname{diag}f_j-f_jf_j^\top\qquad\text{(normalized)},$$
$$J_j=\operatorname{diag}(r_j\circ u_j)-\langle b_j,r_j\rangle\operatorname{diag}u_j+N_jN_j^\top,\quad
N_j=\operatorname{diag}u_j-u_jb_j^\top\qquad\text{(rescaled)}.$$

Everything is vectorised over leading batch axes (arrays ``(..., n, d)`` etc.).  The rescaled
quantities grow like $e^{2\max M}$, so they are computed *scaled* by $e^{-2m}$ for a per-sample
shift $m$ and combined in log space: no overflow for any $R$.  ``*_arb`` functions evaluate the
same quantities in python-flint ball arithmetic at the exact float inputs (certified values).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit, logsumexp, softmax

__all__ = [
    "LOSSES",
    "logits",
    "row_softmax",
    "kron_design",
    "normalized_loss",
    "rescaled_loss",
    "normalized_gradient",
    "rescaled_gradient",
    "rescaled_gradient_scaled",
    "log_gradient_ratio",
    "log_norm",
    "finite_diff_log",
    "softmax_differences",
    "logit_differences",
    "normalized_P_difference",
    "log_gradient_ratio_stable",
    "block_hessians",
    "hessian",
    "log_hessian_norm",
    "shifted_target_normalized",
    "shifted_target_rescaled",
    "Pairs",
    "Assumptions",
    "gradient_arb",
    "log_gradient_ratio_arb",
    "gradient_ratio_arb",
    "numeric_gradient",
    "row_softmax_arb",
    "shift_ratio_arb",
    "contains_arb",
]

LOSSES = ("normalized", "rescaled")


# --------------------------------------------------------------------------- forward maps


def _T(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def logits(A1: np.ndarray, A2: np.ndarray, X: np.ndarray) -> np.ndarray:
    """$M=A_1XA_2^\\top$ (batched)."""
    return A1 @ X @ _T(A2)


def row_softmax(M: np.ndarray) -> np.ndarray:
    """Row softmax $D^{-1}\\exp(M)$ (``scipy.special.softmax``: the library's, not the
    theory's)."""
    return softmax(M, axis=-1)


def kron_design(A1: np.ndarray, A2: np.ndarray) -> np.ndarray:
    """$A=A_1\\otimes A_2$ batched: row $(j,k)$, column $(p,q)$ is $A_1[j,p]A_2[k,q]$."""
    K = A1[..., :, None, :, None] * A2[..., None, :, None, :]
    sh = K.shape
    return K.reshape(*sh[:-4], sh[-4] * sh[-3], sh[-2] * sh[-1])


def normalized_loss(A1, A2, B, X) -> np.ndarray:
    F = row_softmax(logits(A1, A2, X))
    return 0.5 * np.sum((F - B) ** 2, axis=(-2, -1))


def rescaled_loss(A1, A2, B, X) -> np.ndarray:
    """$\\tfrac12\\lVert\\exp(M)-D(X)B\\rVert_F^2$ in float64 (overflows for logits ≳ 350)."""
    U = np.exp(logits(A1, A2, X))
    alpha = U.sum(axis=-1, keepdims=True)
    return 0.5 * np.sum((U - alpha * B) ** 2, axis=(-2, -1))


def _normalized_P(F: np.ndarray, B: np.ndarray) -> np.ndarray:
    C = F - B
    G = F * C
    return G - G.sum(axis=-1, keepdims=True) * F


def _rescaled_P(U: np.ndarray, B: np.ndarray) -> np.ndarray:
    alpha = U.sum(axis=-1, keepdims=True)
    Rr = U - alpha * B
    return U * Rr - U * np.sum(B * Rr, axis=-1, keepdims=True)


def normalized_gradient(A1, A2, B, X) -> np.ndarray:
    """$\\nabla_XL=A_1^\\top PA_2$ (a $d\\times d$ matrix; its row-major vec is $\\nabla_xL$)."""
    F = row_softmax(logits(A1, A2, X))
    return _T(A1) @ _normalized_P(F, B) @ A2


def rescaled_gradient_scaled(A1, A2, B, X, shift) -> np.ndarray:
    """$e^{-2m}\\nabla_XL_r$ for the per-sample shift $m$ (shape of the batch)."""
    m = np.asarray(shift, dtype=float)[..., None, None]
    U = np.exp(logits(A1, A2, X) - m)
    return _T(A1) @ _rescaled_P(U, B) @ A2


def rescaled_gradient(A1, A2, B, X) -> np.ndarray:
    return rescaled_gradient_scaled(A1, A2, B, X, 0.0)


def log_norm(a: np.ndarray, axes=(-2, -1)) -> np.ndarray:
    """log of the Frobenius norm over ``axes``; −inf for a zero array; entries are scaled by
    their largest magnitude first, so huge entries cannot overflow the sum of squares."""
    a = np.asarray(a, dtype=float)
    big = np.max(np.abs(a), axis=axes, keepdims=True)
    safe = np.where(big > 0, big, 1.0)
    s = np.sqrt(np.sum((a / safe) ** 2, axis=axes))
    with np.errstate(divide="ignore"):
        return np.log(s) + np.log(np.squeeze(safe, axis=axes)) + np.where(
            np.squeeze(big, axis=axes) > 0, 0.0, -np.inf)


def finite_diff_log(log_num, log_den):
    """log_num − log_den, and −inf where the pair coincides (log_den = −inf: no information)."""
    with np.errstate(invalid="ignore"):
        out = log_num - log_den
    return np.where(np.isfinite(log_den), out, -np.inf)


def log_gradient_ratio(A1, A2, B, X, Y, loss: str) -> np.ndarray:
    """$\\log\\big(\\lVert\\nabla L(X)-\\nabla L(Y)\\rVert_F/\\lVert X-Y\\rVert_F\\big)$, batched.

    For the rescaled loss both gradients are scaled by $e^{-2m}$ with $m$ the largest logit of
    the pair, and $2m$ is added back in log space."""
    lx = log_norm(X - Y)
    if loss == "normalized":
        dg = normalized_gradient(A1, A2, B, X) - normalized_gradient(A1, A2, B, Y)
        return finite_diff_log(log_norm(dg), lx)
    if loss == "rescaled":
        Mx, My = logits(A1, A2, X), logits(A1, A2, Y)
        m = np.maximum(Mx.max(axis=(-2, -1)), My.max(axis=(-2, -1)))
        dg = rescaled_gradient_scaled(A1, A2, B, X, m) - rescaled_gradient_scaled(A1, A2, B, Y, m)
        return finite_diff_log(2.0 * m + log_norm(dg), lx)
    raise ValueError(f"unknown loss {loss!r}")


def numeric_gradient(fun, X: np.ndarray, h: float) -> np.ndarray:
    """Central finite differences of a scalar ``fun(X)`` (unbatched ``X``)."""
    G = np.zeros_like(X)
    for idx in np.ndindex(*X.shape):
        E = np.zeros_like(X)
        E[idx] = h
        G[idx] = (fun(X + E) - fun(X - E)) / (2 * h)
    return G


# --------------------------------------------------------------------------- Hessians


def block_hessians(A1, A2, B, X, loss: str, shift=0.0) -> np.ndarray:
    """Per-block logit Hessians $J_j$, shape ``(..., n, n, n)``; rescaled ones times $e^{-2m}$."""
    if loss == "normalized":
        F = row_softmax(logits(A1, A2, X))
        C = F - B
        n = F.shape[-1]
        eye = np.eye(n)
        S = F[..., :, None] * eye - F[..., :, None] * F[..., None, :]
        fc = np.sum(F * C, axis=-1)[..., None, None]
        K = C[..., :, None] * eye - fc * eye - F[..., :, None] * C[..., None, :]
        return S @ S + K @ S
    if loss == "rescaled":
        m = np.asarray(shift, dtype=float)[..., None, None]
        U = np.exp(logits(A1, A2, X) - m)
        alpha = U.sum(axis=-1, keepdims=True)
        Rr = U - alpha * B
        n = U.shape[-1]
        eye = np.eye(n)
        Nm = U[..., :, None] * eye - U[..., :, None] * B[..., None, :]
        br = np.sum(B * Rr, axis=-1)[..., None, None]
        return (Rr * U)[..., :, None] * eye - br * (U[..., :, None] * eye) + Nm @ _T(Nm)
    raise ValueError(f"unknown loss {loss!r}")


def hessian(A1, A2, B, X, loss: str, shift=0.0) -> np.ndarray:
    """The $d^2\\times d^2$ Hessian in row-major $x$: $\\sum_jA_j^\\top J_jA_j$ with
    $A_j=A_1[j,:]\\otimes A_2$ (rescaled: times $e^{-2m}$)."""
    J = block_hessians(A1, A2, B, X, loss, shift)
    K = kron_design(A1, A2)  # (..., n², d²): row (j,k) of A1⊗A2
    n = A1.shape[-2]
    K = K.reshape(*K.shape[:-2], n, n, K.shape[-1])  # (..., n, n, d²)
    return np.einsum("...jkp,...jkl,...jlq->...pq", K, J, K)


def log_hessian_norm(A1, A2, B, X, loss: str) -> np.ndarray:
    """log of the spectral norm of the Hessian (rescaled: computed scaled, in log space)."""
    if loss == "rescaled":
        m = logits(A1, A2, X).max(axis=(-2, -1))
        H = hessian(A1, A2, B, X, loss, m)
    else:
        m = 0.0
        H = hessian(A1, A2, B, X, loss)
    H = 0.5 * (H + _T(H))
    ev = np.linalg.eigvalsh(H)
    with np.errstate(divide="ignore"):
        return 2.0 * np.asarray(m) + np.log(np.max(np.abs(ev), axis=-1))


# --------------------------------------------------------------------------- ICL target shift


def softmax_differences(A1, A2, X, Y):
    r"""Differences between the points ``X`` and ``Y`` (batched) without cancellation.

    With $\Delta M=A_1(X-Y)A_2^\top$ (from $X-Y$ itself), $F_y=\operatorname{softmax}(M_y)$ and
    $m$ the largest logit of the pair, returns ``(dlse, dF, U_y, dU)``:
    $\delta_j=\operatorname{lse}(M_x)_j-\operatorname{lse}(M_y)_j=\log\big(1+\sum_kF_{y,jk}
    \operatorname{expm1}(\Delta M_{jk})\big)$, $F_x-F_y=F_y\circ\operatorname{expm1}(\Delta M-\delta)$,
    $U_y=e^{M_y-m}$ and $e^{M_x-m}-e^{M_y-m}=U_y\circ\operatorname{expm1}(\Delta M)$.

    Subtracting the values themselves loses everything below eps·(their size) — fatal for
    $R\lesssim10^{-5}$, where a near pair's differences are ~1e-20; these forms are accurate
    relative to the size of $\Delta M$.  Rows with $\max|\Delta M|>1$ (no cancellation to fear,
    but ``expm1`` could overflow) use the direct differences.  ``dlse`` has shape (..., n, 1)."""
    return logit_differences(logits(A1, A2, X), logits(A1, A2, Y), logits(A1, A2, X - Y))


def logit_differences(Mx, My, dM):
    """:func:`softmax_differences` from the logits at both points and their difference ``dM``
    (formed without cancellation by the caller)."""
    m = np.maximum(Mx.max(axis=(-2, -1)), My.max(axis=(-2, -1)))[..., None, None]
    Fx, Fy = row_softmax(Mx), row_softmax(My)
    Ux, Uy = np.exp(Mx - m), np.exp(My - m)
    small = np.abs(dM).max(axis=-1, keepdims=True) <= 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.expm1(np.where(small, dM, 0.0))
        dlse_small = np.log1p(np.sum(Fy * e, axis=-1, keepdims=True))
        dlse_big = logsumexp(Mx, axis=-1, keepdims=True) - logsumexp(My, axis=-1, keepdims=True)
        dlse = np.where(small, dlse_small, dlse_big)
        dF = np.where(small, Fy * np.expm1(np.where(small, dM - dlse, 0.0)), Fx - Fy)
        dU = np.where(small, Uy * e, Ux - Uy)
    return dlse, dF, Uy, dU


def normalized_P_difference(Fx: np.ndarray, dF: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""$P(F_x)-P(F_x-\Delta F)$ by the product rule, without subtracting the two $P$'s:
    with $G=F\circ(F-B)$, $\Delta G=\Delta F\circ(F_x+F_y-B)$ and
    $\Delta P=\Delta G-(\textstyle\sum_k\Delta G_{\cdot k})F_x-s_y\Delta F$, $s_y=\sum_kG_{y,\cdot k}$."""
    Fy = Fx - dF
    dG = dF * (Fx + Fy - B)
    sy = np.sum(Fy * (Fy - B), axis=-1, keepdims=True)
    return dG - dG.sum(axis=-1, keepdims=True) * Fx - sy * dF


def log_gradient_ratio_stable(A1, A2, B, X, Y, loss: str) -> np.ndarray:
    r""":func:`log_gradient_ratio` with the gradient difference formed from the
    cancellation-free :func:`softmax_differences` (product rule on $P$), so that its relative
    accuracy does not degrade as $\lVert X-Y\rVert\to0$ or $R\to0$.  Costs about twice the plain
    version: used where a float ratio is compared with a bound (the search's worst point is
    re-evaluated in arb instead).

    Normalized: $G=F\circ C$, $C=F-B$: $\Delta G=\Delta F\circ(C_x+F_y)$,
    $\Delta P=\Delta G-\Delta s\,F_x-s_y\Delta F$ with $s=\sum_kG_{\cdot k}$.
    Rescaled (rows scaled by $e^{-m}$): $\Delta P_r=\Delta U\circ r_x+U_y\circ\Delta r-\Delta U\,t_x
    -U_y\Delta t$ with $r=U-\alpha B$, $\Delta r=\Delta U-\Delta\alpha B$, $t=\langle B,r\rangle$."""
    _, dF, Uy, dU = softmax_differences(A1, A2, X, Y)
    lx = log_norm(X - Y)
    Mx = logits(A1, A2, X)
    if loss == "normalized":
        dP = normalized_P_difference(row_softmax(Mx), dF, B)
        return finite_diff_log(log_norm(_T(A1) @ dP @ A2), lx)
    if loss == "rescaled":
        m = np.maximum(Mx.max(axis=(-2, -1)), logits(A1, A2, Y).max(axis=(-2, -1)))
        Ux = Uy + dU
        rx = Ux - Ux.sum(axis=-1, keepdims=True) * B
        dr = dU - dU.sum(axis=-1, keepdims=True) * B
        tx = np.sum(B * rx, axis=-1, keepdims=True)
        dt = np.sum(B * dr, axis=-1, keepdims=True)
        dP = dU * rx + Uy * dr - dU * tx - Uy * dt
        return finite_diff_log(2.0 * m + log_norm(_T(A1) @ dP @ A2), lx)
    raise ValueError(f"unknown loss {loss!r}")


def shifted_target_normalized(A1, A2, B, X0, X1) -> np.ndarray:
    """$\\tilde B=B-(F(X_1)-F(X_0))$, so that $F(X_1)-B=F(X_0)-\\tilde B$ exactly."""
    return B - (row_softmax(logits(A1, A2, X1)) - row_softmax(logits(A1, A2, X0)))


def shifted_target_rescaled(A1, A2, B, X0, X1) -> np.ndarray:
    """$\\tilde B=D(X_0)^{-1}(\\exp M_0-\\exp M_1+D(X_1)B)$, computed row-wise in scaled form:
    with $w_0=\\exp(M_0-m)$, $w_1=\\exp(M_1-m)$ ($m$ the row max over both) the factor $e^m$
    cancels."""
    M0, M1 = logits(A1, A2, X0), logits(A1, A2, X1)
    m = np.maximum(M0.max(axis=-1, keepdims=True), M1.max(axis=-1, keepdims=True))
    W0, W1 = np.exp(M0 - m), np.exp(M1 - m)
    a0, a1 = W0.sum(axis=-1, keepdims=True), W1.sum(axis=-1, keepdims=True)
    return (W0 - W1 + a1 * B) / a0


# --------------------------------------------------------------------------- assumption set


def _spectral_norm(a: np.ndarray) -> np.ndarray:
    """Batched ‖a‖₂ via the largest eigenvalue of aᵀa (d×d; faster than a batched SVD here,
    relative accuracy ~eps, far inside the 1e-9 margin of :class:`Assumptions`)."""
    g = np.swapaxes(a, -1, -2) @ a
    return np.sqrt(np.maximum(np.linalg.eigvalsh(g)[..., -1], 0.0))


@dataclass
class Pairs:
    """A batch of instances: data, target and a pair of points ``X``, ``Y``."""

    A1: np.ndarray
    A2: np.ndarray
    B: np.ndarray
    X: np.ndarray
    Y: np.ndarray

    def __getitem__(self, k) -> "Pairs":
        return Pairs(self.A1[k], self.A2[k], self.B[k], self.X[k], self.Y[k])

    def as_lists(self) -> dict:
        return {k: getattr(self, k).tolist() for k in ("A1", "A2", "B", "X", "Y")}


_MARGIN = 1e-9  # decoded points sit strictly inside the constraint set (relative margin)


@dataclass(frozen=True)
class Assumptions:
    r"""The assumption set: $\lVert A_1\otimes A_2\rVert_2=\lVert A_1\rVert_2\lVert A_2\rVert_2\le R$,
    $\lVert X\rVert_F,\lVert Y\rVert_F\le R$, every row of $B$ with $\ell_2$ norm $\le 1$.

    ``decode`` maps an unconstrained parameter vector $\theta$ onto the set (smooth radial
    squashing, a sigmoid for $\lVert A\rVert$), so a local optimiser can move freely and every
    decoded point satisfies the assumptions with a relative margin of 1e-9; ``encode`` is its
    inverse (clipped), used to start refinements from sampled points."""

    n: int
    d: int
    R: float

    @property
    def dim(self) -> int:
        n, d = self.n, self.d
        return 2 * n * d + 1 + 2 * d * d + n * n

    def _split(self, theta: np.ndarray):
        n, d = self.n, self.d
        sizes = [n * d, n * d, 1, d * d, d * d, n * n]
        cuts = np.cumsum(sizes)[:-1]
        a1, a2, s, x, y, b = np.split(theta, cuts, axis=-1)
        lead = theta.shape[:-1]
        return (a1.reshape(*lead, n, d), a2.reshape(*lead, n, d), s[..., 0],
                x.reshape(*lead, d, d), y.reshape(*lead, d, d), b.reshape(*lead, n, n))

    @staticmethod
    def _radial(v: np.ndarray, radius: float, axes) -> np.ndarray:
        """$v\\mapsto \\rho\\tanh(\\lVert v\\rVert)\\,v/\\lVert v\\rVert$ (into the open ball)."""
        t = np.sqrt(np.sum(v * v, axis=axes, keepdims=True))
        safe = np.where(t > 0, t, 1.0)
        factor = np.where(t > 0, np.tanh(t) / safe, 1.0)
        return radius * (1 - _MARGIN) * factor * v

    @staticmethod
    def _unradial(w: np.ndarray, radius: float, axes) -> np.ndarray:
        t = np.sqrt(np.sum(w * w, axis=axes, keepdims=True)) / (radius * (1 - _MARGIN))
        t = np.clip(t, 0.0, 1 - 1e-12)
        safe = np.where(t > 0, t, 1.0)
        return np.where(t > 0, np.arctanh(t) / safe, 1.0) * w / (radius * (1 - _MARGIN))

    def decode(self, theta: np.ndarray) -> Pairs:
        a1, a2, s, x, y, b = self._split(np.asarray(theta, dtype=float))
        a = self.R * (1 - _MARGIN) * expit(s)
        n1, n2 = _spectral_norm(a1), _spectral_norm(a2)
        n1 = np.where(n1 > 0, n1, 1.0)
        n2 = np.where(n2 > 0, n2, 1.0)
        sq = np.sqrt(a)
        A1 = a1 * (sq / n1)[..., None, None]
        A2 = a2 * (sq / n2)[..., None, None]
        X = self._radial(x, self.R, (-2, -1))
        Y = self._radial(y, self.R, (-2, -1))
        B = self._radial(b, 1.0, (-1,))
        return Pairs(A1, A2, B, X, Y)

    def encode(self, p: Pairs) -> np.ndarray:
        n1 = np.linalg.norm(p.A1, 2, axis=(-2, -1))
        n2 = np.linalg.norm(p.A2, 2, axis=(-2, -1))
        ratio = np.clip(n1 * n2 / (self.R * (1 - _MARGIN)), 1e-9, 1 - 1e-9)
        s = logit(ratio)
        x = self._unradial(p.X, self.R, (-2, -1))
        y = self._unradial(p.Y, self.R, (-2, -1))
        b = self._unradial(p.B, 1.0, (-1,))
        lead = s.shape
        return np.concatenate([p.A1.reshape(*lead, -1), p.A2.reshape(*lead, -1), s[..., None],
                               x.reshape(*lead, -1), y.reshape(*lead, -1),
                               b.reshape(*lead, -1)], axis=-1)

    def sample(self, rng: np.random.Generator, k: int, *, near_fraction: float = 0.5) -> Pairs:
        r"""$k$ random instances inside the set: $\lVert A\rVert=R$ for 3/4 of them (the
        constants are attained at the boundary) and uniform in $(0,R]$ otherwise; $X$ uniform
        in the Frobenius ball; $Y$ uniform too ("far" pairs) or $X$ plus a small random move
        ("near" pairs, which probe the local Hessian); rows of $B$ drawn from the simplex
        (Dirichlet), one-hot vectors or the unit $\ell_2$ ball, one family per instance."""
        n, d, R = self.n, self.d, self.R
        A1 = rng.standard_normal((k, n, d))
        A2 = rng.standard_normal((k, n, d))
        a = np.where(rng.random(k) < 0.75, R, R * rng.random(k))
        a = np.maximum(a, 1e-3 * R) * (1 - _MARGIN)
        A1 *= (np.sqrt(a) / np.linalg.norm(A1, 2, axis=(-2, -1)))[:, None, None]
        A2 *= (np.sqrt(a) / np.linalg.norm(A2, 2, axis=(-2, -1)))[:, None, None]
        X = _uniform_ball(rng, k, (d, d), R)
        far = _uniform_ball(rng, k, (d, d), R)
        step = rng.standard_normal((k, d, d))
        step *= (R * 10.0 ** rng.uniform(-4, -1, k) / np.linalg.norm(step, axis=(-2, -1)))[:, None, None]
        near = X + step
        nn = np.linalg.norm(near, axis=(-2, -1))
        near *= np.minimum(1.0, R * (1 - _MARGIN) / nn)[:, None, None]
        Y = np.where((rng.random(k) < near_fraction)[:, None, None], near, far)
        family = rng.integers(0, 3, k)
        simplex = rng.dirichlet(np.ones(n), size=(k, n))
        onehot = np.eye(n)[rng.integers(0, n, (k, n))]
        ball = _uniform_ball(rng, k * n, (n,), 1.0).reshape(k, n, n)
        B = np.where((family == 0)[:, None, None], simplex,
                     np.where((family == 1)[:, None, None], onehot, ball))
        return Pairs(A1, A2, B, X, Y)


def _uniform_ball(rng, k: int, shape, radius: float) -> np.ndarray:
    v = rng.standard_normal((k, *shape))
    axes = tuple(range(1, 1 + len(shape)))
    norm = np.sqrt(np.sum(v * v, axis=axes, keepdims=True))
    dim = int(np.prod(shape))
    rad = radius * (1 - _MARGIN) * rng.random((k,) + (1,) * len(shape)) ** (1.0 / dim)
    return v / norm * rad


# --------------------------------------------------------------------------- arb (certified)


def _arb_mat(a: np.ndarray):
    import flint

    return flint.arb_mat([[flint.arb(float(v)) for v in row] for row in np.asarray(a)])


def gradient_arb(A1, A2, B, X, loss: str):
    """$\\nabla_XL$ as a python-flint ``arb_mat`` evaluated at the exact float inputs (a ball
    enclosure of the true gradient).  The normalized softmax subtracts the float row maximum
    first (mathematically exact, tighter balls)."""
    import flint

    M = _arb_mat(A1) * _arb_mat(X) * _arb_mat(A2).transpose()
    Bm = np.asarray(B)
    n = M.nrows()
    P = flint.arb_mat(n, n)
    for j in range(n):
        row = [M[j, k] for k in range(n)]
        b = [flint.arb(float(v)) for v in Bm[j]]
        if loss == "normalized":
            shift = flint.arb(float(max(float(r.mid()) for r in row)))
            u = [(r - shift).exp() for r in row]
            alpha = sum(u[1:], u[0])
            f = [v / alpha for v in u]
            c = [fk - bk for fk, bk in zip(f, b)]
            fc = sum((fk * ck for fk, ck in zip(f[1:], c[1:])), f[0] * c[0])
            for k in range(n):
                P[j, k] = f[k] * c[k] - f[k] * fc
        elif loss == "rescaled":
            u = [r.exp() for r in row]
            alpha = sum(u[1:], u[0])
            r_ = [uk - alpha * bk for uk, bk in zip(u, b)]
            br = sum((bk * rk for bk, rk in zip(b[1:], r_[1:])), b[0] * r_[0])
            for k in range(n):
                P[j, k] = u[k] * r_[k] - u[k] * br
        else:
            raise ValueError(f"unknown loss {loss!r}")
    return _arb_mat(A1).transpose() * P * _arb_mat(A2)


def gradient_ratio_arb(A1, A2, B, X, Y, loss: str):
    """Certified ball for $\\lVert\\nabla L(X)-\\nabla L(Y)\\rVert_F/\\lVert X-Y\\rVert_F$."""
    import flint

    D = gradient_arb(A1, A2, B, X, loss) - gradient_arb(A1, A2, B, Y, loss)
    num = flint.arb(0)
    for i in range(D.nrows()):
        for j in range(D.ncols()):
            num += D[i, j] * D[i, j]
    Xa, Ya = _arb_mat(X), _arb_mat(Y)  # X − Y formed in arb: exact, unlike the float difference
    den = flint.arb(0)
    for i in range(Xa.nrows()):
        for j in range(Xa.ncols()):
            den += (Xa[i, j] - Ya[i, j]) * (Xa[i, j] - Ya[i, j])
    return sqrt_nonneg(num / den)


def sqrt_nonneg(x):
    """sqrt of a ball known to enclose a non-negative quantity (clip the negative part)."""
    import flint

    if x.lower() < 0:  # enclose sqrt([0, upper]) instead of taking sqrt of negative numbers
        return flint.arb(0).union(x.upper().sqrt())
    return x.sqrt()


def log_gradient_ratio_arb(A1, A2, B, X, Y, loss: str):
    return gradient_ratio_arb(A1, A2, B, X, Y, loss).log()


def row_softmax_arb(A1, A2, X):
    """Row softmax $F(X)$ as an ``arb_mat`` (rows shifted by their float maximum)."""
    import flint

    M = _arb_mat(A1) * _arb_mat(X) * _arb_mat(A2).transpose()
    n = M.nrows()
    F = flint.arb_mat(n, n)
    for j in range(n):
        row = [M[j, k] for k in range(n)]
        shift = flint.arb(float(max(float(r.mid()) for r in row)))
        u = [(r - shift).exp() for r in row]
        alpha = sum(u[1:], u[0])
        for k in range(n):
            F[j, k] = u[k] / alpha
    return F


def shift_ratio_arb(A1, A2, X, Y):
    """Certified ball for $\\lVert F(X)-F(Y)\\rVert_F/\\lVert X-Y\\rVert_F$ (the normalized ICL
    target shift per unit weight move)."""
    import flint

    D = row_softmax_arb(A1, A2, X) - row_softmax_arb(A1, A2, Y)
    Xa, Ya = _arb_mat(X), _arb_mat(Y)
    num, den = flint.arb(0), flint.arb(0)
    for i in range(D.nrows()):
        for j in range(D.ncols()):
            num += D[i, j] * D[i, j]
    for i in range(Xa.nrows()):
        for j in range(Xa.ncols()):
            den += (Xa[i, j] - Ya[i, j]) * (Xa[i, j] - Ya[i, j])
    return sqrt_nonneg(num / den)


def contains_arb(point: Pairs, R: float) -> bool:
    """Certified membership of one instance in the assumption set (arb): Frobenius norms of
    $X,Y$ at most $R$, rows of $B$ of norm at most 1, and a certified upper bound on
    $\\lVert A_1\\rVert_2\\lVert A_2\\rVert_2$ at most $R$."""
    import flint

    from icltheory.bounds import spectral_norm_upper

    old = flint.ctx.prec
    try:
        flint.ctx.prec = 256

        def sq(a):
            s = flint.arb(0)
            for v in np.asarray(a, dtype=float).ravel():
                s += flint.arb(float(v)) * flint.arb(float(v))
            return s

        Ra = flint.arb(float(R))
        ok = sq(point.X) <= Ra * Ra and sq(point.Y) <= Ra * Ra
        ok = ok and all(sq(row) <= 1 for row in np.asarray(point.B))
        prod = spectral_norm_upper(point.A1) * spectral_norm_upper(point.A2)
        return bool(ok and prod <= Ra)
    finally:
        flint.ctx.prec = old
