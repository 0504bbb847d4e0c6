r"""Linear attention for in-context linear regression (Zhang, Singh, Latham, Saxe 2025).

Data.  A task $w\sim\mathcal N(0,I_D)$ per sequence, inputs $x_n,x_q\sim\mathcal N(0,\Lambda)$,
labels $y_n=w^\top x_n$; tokens are the columns of the $(D+1)\times(N+1)$ matrix
$X=[x_1\ \cdots\ x_N\ x_q;\ y_1\ \cdots\ y_N\ 0]$ and the prediction $\hat y_q$ is the
bottom-right entry of the layer output.

Models (paper form, with the $1/N$):

* merged key-query  $\mathrm{ATTN}_M(X)=X+\sum_i\frac1N W^V_iXX^\top W^{KQ}_iX$;
* separate key/query $\mathrm{ATTN}_S(X)=X+\sum_i\frac1N W^V_iXX^\top (W^K_i)^\top W^Q_iX$.

**Exact quadratic-feature form (why training here is fast and still exact).**  Write
$S=XX^\top$ and $\tilde x_q=(x_q,0)$.  The bottom-right output entry is

$$\hat y_q=\sum_i \tfrac1N\,(W^V_i)_{D,:}\,S\,W^{KQ}_i\tilde x_q=\langle\Theta,Z\rangle,\qquad
Z_{abc}=\tfrac1N S_{ab}\,x_{q,c},\quad \Theta_{abc}=\sum_i (W^V_i)_{D,a}(W^{KQ}_i)_{bc}$$

($a,b\in\{0..D\}$, $c\in\{0..D-1\}$; for ATTN_S replace $W^{KQ}_i$ by $(W^K_i)^\top W^Q_i$).
Only the label row of $W^V_i$ and the input columns of $W^{KQ}_i$ / $W^Q_i$ can change the
prediction; every other entry has zero gradient and never moves under GD, so carrying only
those entries is *not* an approximation.  The empirical MSE over $P$ sequences is the quadratic
$\tfrac12\Theta^\top C\Theta-g^\top\Theta+\tfrac12 s$ with $C=\overline{ZZ^\top}$,
$g=\overline{Zy}$, $s=\overline{y^2}$, so full-batch GD costs $O(F^2)$ per step,
$F=(D+1)^2D$, independent of $P$ and $N$, after an $O(PF^2)$ precomputation; the iterates are
those of full-batch GD on the $P$ sequences (up to float rounding; the tests check the loss and
the gradient against the naive forward pass).

The *population* loss restricted to the relevant block ($a=D$, $b<D$: the value's label→label
entry, keys/queries on inputs) has $z=\operatorname{vec}(\beta x_q^\top)$,
$C=\mathbb E[\beta\beta^\top]\otimes\Lambda$, $g=\operatorname{vec}(\Lambda^2)$,
$s=\operatorname{tr}\Lambda$.  All other blocks have zero population gradient while they are
zero (their gradient is odd in $w$), so population GD from an initialisation that is zero
there never leaves the relevant block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "covariance",
    "sample_sequences",
    "attn_merged_predict",
    "attn_separate_predict",
    "query_features",
    "QuadraticMoments",
    "population_moments",
    "empirical_moments",
    "beta_moments",
    "MergedHeads",
    "SeparateHeads",
    "gd_train",
    "TrainResult",
    "bilinear_predictor_losses",
    "beta_outer_samples",
]


# --------------------------------------------------------------------------- data


def covariance(lambdas, *, rotate: bool = False, rng: np.random.Generator | None = None) -> np.ndarray:
    """$\\Lambda=U\\operatorname{diag}(\\lambda)U^\\top$ (U Haar-random when ``rotate``)."""
    lam = np.asarray(lambdas, dtype=float)
    if not rotate:
        return np.diag(lam)
    rng = np.random.default_rng(0) if rng is None else rng
    q, r = np.linalg.qr(rng.standard_normal((lam.size, lam.size)))
    q = q * np.sign(np.diag(r))
    return (q * lam) @ q.T


def sample_sequences(P: int, N: int, Lam: np.ndarray, rng: np.random.Generator):
    """Draw ``P`` sequences: tokens ``X`` of shape (P, D+1, N+1) and targets ``y_q`` (P,)."""
    D = Lam.shape[0]
    root = _sqrtm(Lam)
    w = rng.standard_normal((P, D))
    x = rng.standard_normal((P, N + 1, D)) @ root.T
    y = np.einsum("pnd,pd->pn", x, w)
    X = np.empty((P, D + 1, N + 1))
    X[:, :D, :] = np.transpose(x, (0, 2, 1))
    X[:, D, :N] = y[:, :N]
    X[:, D, N] = 0.0
    return X, y[:, N]


def _sqrtm(A: np.ndarray) -> np.ndarray:
    ev, U = np.linalg.eigh(A)
    return (U * np.sqrt(np.clip(ev, 0, None))) @ U.T


def attn_merged_predict(X: np.ndarray, WV: np.ndarray, WKQ: np.ndarray) -> np.ndarray:
    """Naive ATTN_M forward pass (full matrices); returns the bottom-right output entries."""
    P, D1, N1 = X.shape
    N = N1 - 1
    S = np.einsum("pan,pbn->pab", X, X)
    out = X.copy()
    for i in range(WV.shape[0]):
        out = out + np.einsum("ab,pbc,cd,pdn->pan", WV[i], S, WKQ[i], X) / N
    return out[:, D1 - 1, N1 - 1]


def attn_separate_predict(X: np.ndarray, WV: np.ndarray, WK: np.ndarray, WQ: np.ndarray) -> np.ndarray:
    """Naive ATTN_S forward pass; ``WK, WQ`` have shape (H, R, D+1)."""
    WKQ = np.einsum("hra,hrb->hab", WK, WQ)
    return attn_merged_predict(X, WV, WKQ)


def query_features(X: np.ndarray) -> np.ndarray:
    """The cubic features $Z_{abc}=S_{ab}x_{q,c}/N$, flattened row-major: shape (P, (D+1)^2 D)."""
    P, D1, N1 = X.shape
    D, N = D1 - 1, N1 - 1
    S = np.einsum("pan,pbn->pab", X, X)
    xq = X[:, :D, N]
    return (S[:, :, :, None] * xq[:, None, None, :]).reshape(P, -1) / N


# --------------------------------------------------------------------------- moments


@dataclass(frozen=True)
class QuadraticMoments:
    r"""$L_{1/2}(\Theta)=\tfrac12\Theta^\top C\Theta-g^\top\Theta+\tfrac12 s$ (plain MSE $=2L_{1/2}$).

    ``A`` (value-row width), ``B`` (key input width) and ``D`` (query width) give the shape of
    $\Theta\in\mathbb R^{A\times B\times D}$: (1, D, D) for the relevant block, (D+1, D+1, D)
    for the full attention model.
    """

    C: np.ndarray
    g: np.ndarray
    s: float
    A: int
    B: int
    D: int

    def mse(self, theta: np.ndarray) -> np.ndarray:
        """Plain MSE for Θ of shape (..., F)."""
        quad = np.einsum("...i,ij,...j->...", theta, self.C, theta)
        return quad - 2.0 * theta @ self.g + self.s

    def grad_half(self, theta: np.ndarray) -> np.ndarray:
        """$\\partial L_{1/2}/\\partial\\Theta$."""
        return theta @ self.C - self.g


def beta_moments(Lam: np.ndarray, N: int) -> np.ndarray:
    r"""$\mathbb E[\beta\beta^\top]=\Lambda^2+(\Lambda^2+\operatorname{tr}(\Lambda)\Lambda)/N$."""
    L2 = Lam @ Lam
    return L2 + (L2 + np.trace(Lam) * Lam) / N


def population_moments(Lam: np.ndarray, N: int) -> QuadraticMoments:
    """Exact population moments of the relevant block (features vec(β x_qᵀ))."""
    D = Lam.shape[0]
    B = beta_moments(Lam, N)
    return QuadraticMoments(C=np.kron(B, Lam), g=(Lam @ Lam).reshape(-1), s=float(np.trace(Lam)),
                            A=1, B=D, D=D)


def empirical_moments(X: np.ndarray, y: np.ndarray, *, chunk: int = 4096) -> QuadraticMoments:
    """Moments of the full feature set over the given sequences (chunked, O(P F²))."""
    P, D1, _ = X.shape
    D = D1 - 1
    F = D1 * D1 * D
    C = np.zeros((F, F))
    g = np.zeros(F)
    for k in range(0, P, chunk):
        Z = query_features(X[k:k + chunk])
        C += Z.T @ Z
        g += Z.T @ y[k:k + chunk]
    return QuadraticMoments(C=C / P, g=g / P, s=float(np.mean(y * y)), A=D1, B=D1, D=D)


# --------------------------------------------------------------------------- parametrisations


@dataclass(frozen=True)
class MergedHeads:
    r"""$H$ merged heads: $\Theta=\sum_i r_i\otimes U_i$, $r_i\in\mathbb R^A$, $U_i\in\mathbb R^{B\times D}$.

    On the relevant block ($A=1$) this is the two-layer linear network $\hat y=w_2^\top W_1z$
    with $w_2=(r_i)$ and the rows of $W_1$ equal to $\operatorname{vec}(U_i)$.
    Parameters: dict ``r`` (S, H, A), ``U`` (S, H, B, D) with a leading batch axis S (seeds).
    """

    H: int

    def theta(self, p: dict, einsum=np.einsum) -> np.ndarray:
        S = p["r"].shape[0]
        return einsum("sha,shbd->sabd", p["r"], p["U"]).reshape(S, -1)

    def pullback(self, p: dict, G: np.ndarray, m: QuadraticMoments) -> dict:
        Gt = G.reshape(G.shape[0], m.A, m.B, m.D)
        return {"r": np.einsum("sabd,shbd->sha", Gt, p["U"]),
                "U": np.einsum("sabd,sha->shbd", Gt, p["r"])}


@dataclass(frozen=True)
class SeparateHeads:
    r"""$H$ heads of rank $R$: $\Theta=\sum_i r_i\otimes K_i^\top Q_i$, $K_i\in\mathbb R^{R\times B}$,
    $Q_i\in\mathbb R^{R\times D}$.  Parameters ``r`` (S,H,A), ``K`` (S,H,R,B), ``Q`` (S,H,R,D)."""

    H: int
    R: int

    def theta(self, p: dict, einsum=np.einsum) -> np.ndarray:
        S = p["r"].shape[0]
        KQ = einsum("shrb,shrd->shbd", p["K"], p["Q"])
        return einsum("sha,shbd->sabd", p["r"], KQ).reshape(S, -1)

    def pullback(self, p: dict, G: np.ndarray, m: QuadraticMoments) -> dict:
        Gt = G.reshape(G.shape[0], m.A, m.B, m.D)
        KQ = np.einsum("shrb,shrd->shbd", p["K"], p["Q"])
        Gr = np.einsum("sabd,sha->shbd", Gt, p["r"])  # ∂/∂(K_iᵀQ_i)
        return {"r": np.einsum("sabd,shbd->sha", Gt, KQ),
                "K": np.einsum("shbd,shrd->shrb", Gr, p["Q"]),
                "Q": np.einsum("shbd,shrb->shrd", Gr, p["K"])}


@dataclass
class TrainResult:
    """Losses (plain MSE) on the recording grid, per seed, and the final parameters."""

    steps: np.ndarray  # (T,) step indices where the loss was recorded
    loss: np.ndarray  # (S, T)
    params: dict
    history: list  # optional snapshots of Θ (S, F) at the recording steps
    diverged_at: int | None = None


def gd_train(
    model,
    moments: QuadraticMoments,
    params: dict,
    *,
    lr: float,
    steps: int,
    record_every: int = 1,
    keep_theta: bool = False,
    blowup: float = 1e6,
) -> TrainResult:
    r"""Full-batch gradient descent on $L_{1/2}$: $\theta\leftarrow\theta-\eta\,\partial L_{1/2}/\partial\theta$.

    With step $\eta$, step $k$ is time $t/\tau=\eta k$ of the flow $\tau\dot\theta=-\partial
    L_{1/2}/\partial\theta$.  Vectorised over the leading seed axis.  Divergence (a loss above
    ``blowup`` × the initial loss, or non-finite) stops the run and sets ``diverged_at``.
    """
    p = {k: np.array(v, dtype=float, copy=True) for k, v in params.items()}

    def step(theta):
        grads = model.pullback(p, moments.grad_half(theta), moments)
        for name in p:
            p[name] -= lr * grads[name]

    with np.errstate(over="ignore", invalid="ignore"):
        return run_gd_loop(lambda: model.theta(p), moments.mse, step, lambda: p, steps=steps,
                           record_every=record_every, keep_theta=keep_theta, blowup=blowup,
                           to_numpy=lambda a: a)


def run_gd_loop(theta_fn, loss_fn, step_fn, params_fn, *, steps: int, record_every: int,
                keep_theta: bool, blowup: float, to_numpy) -> TrainResult:
    """The one GD loop every backend shares: record the loss (and Θ) every ``record_every``
    steps and at the end, stop at divergence (non-finite loss, or above ``blowup`` × the first
    recorded loss), otherwise call ``step_fn(theta)``."""
    rec_steps, rec_loss, hist = [], [], []
    limit, diverged = None, None
    for k in range(steps + 1):
        theta = theta_fn()
        if k % record_every == 0 or k == steps:
            loss = to_numpy(loss_fn(theta))
            if limit is None:
                limit = blowup * max(float(np.max(loss)), 1e-300)
            if not np.all(np.isfinite(loss)) or np.max(loss) > limit:
                diverged = k
                break
            rec_steps.append(k)
            rec_loss.append(loss)
            if keep_theta:
                hist.append(np.array(to_numpy(theta), copy=True))
        if k == steps:
            break
        step_fn(theta)
    loss_arr = np.asarray(rec_loss).T if rec_loss else np.zeros((0, 0))
    params = {k: np.array(to_numpy(v)) for k, v in params_fn().items()}
    return TrainResult(np.asarray(rec_steps), loss_arr, params, hist, diverged)


def _context_samples(Lam: np.ndarray, N: int, n: int, rng: np.random.Generator, chunk: int):
    """Yield (slice, w, β) for ``n`` sampled contexts in chunks (β = (1/N) Σ_n y_n x_n)."""
    D = Lam.shape[0]
    root = _sqrtm(Lam)
    for k in range(0, n, chunk):
        m = min(chunk, n - k)
        w = rng.standard_normal((m, D))
        x = rng.standard_normal((m, N, D)) @ root.T
        y = np.einsum("mnd,md->mn", x, w)
        yield slice(k, k + m), w, np.einsum("mn,mnd->md", y, x) / N


def bilinear_predictor_losses(M: np.ndarray, Lam: np.ndarray, N: int, n: int,
                              rng: np.random.Generator, *, chunk: int = 20000) -> np.ndarray:
    r"""Per-sequence losses of $\hat y_q=\beta^\top Mx_q$ over ``n`` sampled contexts.

    Rao–Blackwellised over the query: given $(w,x_1..x_N)$ the expected squared error over
    $x_q\sim\mathcal N(0,\Lambda)$ is exactly $(w-M^\top\beta)^\top\Lambda(w-M^\top\beta)$, so each
    sample is that conditional expectation (same mean as sampling $x_q$, smaller variance).
    """
    out = np.empty(n)
    for sl, w, beta in _context_samples(Lam, N, n, rng, chunk):
        r = w - beta @ M
        out[sl] = np.einsum("md,de,me->m", r, Lam, r)
    return out


def beta_outer_samples(Lam: np.ndarray, N: int, n: int, rng: np.random.Generator,
                       *, chunk: int = 20000) -> np.ndarray:
    """Samples of vec(β βᵀ) (n, D²) for Monte Carlo checks of $\\mathbb E[\\beta\\beta^\\top]$."""
    D = Lam.shape[0]
    out = np.empty((n, D * D))
    for sl, _, beta in _context_samples(Lam, N, n, rng, chunk):
        out[sl] = (beta[:, :, None] * beta[:, None, :]).reshape(len(beta), -1)
    return out
