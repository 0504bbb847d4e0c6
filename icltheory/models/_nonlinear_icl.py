r"""One-layer softmax attention learning nonlinear regression in context (Li, Duan, Liang,
arXiv 2507.20443; model as inferred in ``shared/reference/nonlinear-regression-icl.md``).

The predictor reads the labels through a softmax over key–query scores with one trainable
merged matrix :math:`Q\in\mathbb R^{d\times d}` (value path fixed, no residual):

.. math::
    \hat y_q=\sum_{i=1}^N y_i\,\operatorname{softmax}_i(x_i^\top Q x_q),\qquad
    \ell(Q)=\tfrac12\,\mathbb E\,(\hat y_q-y_q)^2,\qquad Q^{(0)}=0,\;
    Q^{(t+1)}=Q^{(t)}-\eta\nabla\ell(Q^{(t)}).

Tasks are :math:`f=L\,g` with :math:`g` a 1-Lipschitz random function drawn per prompt:
``linear`` :math:`g(x)=w^\top x`, ``sin`` :math:`g(x)=\sin(3w^\top x+\varphi)/3`,
``relu`` :math:`g(x)=\max(w^\top x+b,0)`, with :math:`w` uniform on the unit sphere,
:math:`\varphi\sim U[0,2\pi]`, :math:`b\sim U[-\frac12,\frac12]`.

**Model A** (exact population, :math:`N\to\infty`, noiseless tokens on features
:math:`v_1..v_K`, :math:`p_k=1/K`).  Only :math:`B[k,n]=v_n^\top Q v_k` matters; the query of
feature :math:`k` puts attention :math:`a_k=\operatorname{softmax}(B[k,:])` on feature
:math:`n`, and with :math:`r_k=a_k-e_k`, :math:`C_{nm}=\mathbb E f(v_n)f(v_m)`,

.. math::
    \ell=\frac1{2K}\sum_k r_k^\top C r_k,\qquad
    \nabla_{B[k,:]}\ell=\frac1K(\operatorname{diag}a_k-a_ka_k^\top)Cr_k,\qquad
    B\leftarrow B-\eta\,G\,(\nabla_B\ell)\,G,\quad G=VV^\top .

(:math:`\nabla_Q\ell=V^\top(\nabla_B\ell)^\top V`, so the step on :math:`Q` moves :math:`B` by
:math:`-\eta G\nabla_B\ell\,G`.)  :func:`run_population_gd` runs this, vectorised over a
leading axis of runs (e.g. several :math:`L`).

**Isotropic case** :math:`C=cI`, :math:`G=I`: each row keeps one logit gap :math:`z` and
:math:`p=e^z/(e^z+K-1)`; the step is exactly

.. math:: z\leftarrow z+\eta c\,\frac{K}{(K-1)^2}\,p(1-p)^2,

whose gradient flow :math:`\dot p=\eta c\frac{K}{(K-1)^2}p^2(1-p)^3` integrates in closed form
(:func:`isotropic_flow_time`) with
:math:`F(p)=-\frac1p+3\ln\frac p{1-p}+\frac1{2(1-p)^2}+\frac2{1-p}`:

.. math::
    T(\theta)=\frac{(K-1)^2}{K\eta c}\bigl[F(\theta)-F(1/K)\bigr]
    =\frac{(K-1)^2}{2K\eta c\,\delta^2}\bigl(1+4\delta+O(\delta^2\log\tfrac1\delta)\bigr),
    \quad\theta=1-\delta .

Euler's method (gradient descent) reaches the same :math:`z` after
:math:`T+\frac12\ln\frac{\dot z(z_\ast)}{\dot z(0)}+O(\sum\dot z'^2)` steps (a step from
:math:`z_n` covers flow time :math:`1-\frac12\dot z'(z_n)+\dots`), so GD and flow differ by a
few steps, not a fraction of :math:`T` (:func:`euler_lag_steps`).

**Model B** (finite prompts, closer to the paper): :func:`make_prompts` draws ``M`` prompts
of ``N`` noisy context tokens :math:`x=v_k+\sigma\xi/\sqrt d` and a query;
:func:`run_prompt_gd` does full-batch GD on :math:`Q` from 0 with

.. math::
    \frac{\partial\ell}{\partial Q}=\frac1M\sum_m(\hat y-y_q)\sum_i a_i(y_i-\hat y)\,x_ix_q^\top .

Both models' predictions are linear in the labels, so scaling labels by :math:`L` scales the
gradient by :math:`L^2` *exactly* (in floating point too when :math:`L` is a power of two).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from ..core import NumericalTrouble

__all__ = [
    "TASKS",
    "orthonormal_features",
    "near_duplicate_features",
    "random_unit_features",
    "task_covariance",
    "semivariogram",
    "normalised_covariance",
    "PopulationTrajectory",
    "run_population_gd",
    "isotropic_flow_time",
    "isotropic_asymptotic_time",
    "isotropic_step_rate",
    "euler_lag_steps",
    "isotropic_stiffness",
    "isotropic_scalar_gd",
    "PromptBatch",
    "make_prompts",
    "PromptTrajectory",
    "run_prompt_gd",
    "prompt_initial_attention_rate",
]

TASKS = ("linear", "sin", "relu")


# --------------------------------------------------------------------------- features


def orthonormal_features(K: int, d: int) -> np.ndarray:
    """Rows ``e_1..e_K`` of ``R^d`` (needs ``d ≥ K``)."""
    if d < K:
        raise ValueError(f"orthonormal features need d ≥ K (d={d}, K={K})")
    return np.eye(K, d)


def near_duplicate_features(K: int, d: int, overlap: float) -> np.ndarray:
    r"""Orthonormal rows except :math:`v_2=\rho v_1+\sqrt{1-\rho^2}\,e_2` (``overlap`` = ρ)."""
    V = orthonormal_features(K, d)
    V[1] = overlap * V[0] + np.sqrt(1.0 - overlap**2) * np.eye(1, d, 1)[0]
    return V


def random_unit_features(K: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``K`` independent uniform unit vectors in ``R^d`` (not orthonormal)."""
    V = rng.standard_normal((K, d))
    return V / np.linalg.norm(V, axis=1, keepdims=True)


def _unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    W = rng.standard_normal((n, d))
    return W / np.linalg.norm(W, axis=1, keepdims=True)


# --------------------------------------------------------------------------- task covariance


def task_covariance(
    task: str, V: np.ndarray, rng: np.random.Generator | None = None, draws: int = 400_000
) -> np.ndarray:
    r""":math:`C_{nm}=\mathbb E\,g(v_n)g(v_m)` for the 1-Lipschitz task family ``task``.

    * ``linear``: :math:`\mathbb E ww^\top=I/d`, so :math:`C=VV^\top/d` (exact);
    * ``sin``: averaging over :math:`\varphi` gives
      :math:`\frac1{18}\mathbb E\cos(3w^\top(v_n-v_m))=\frac1{18}\,{}_0F_1(;\frac d2;
      -\frac94\lVert v_n-v_m\rVert^2)` (exact: the characteristic function of a uniform
      unit vector);
    * ``relu``: Monte Carlo with ``draws`` samples from ``rng`` (no closed form used).
    """
    V = np.asarray(V, dtype=float)
    K, d = V.shape
    if task == "linear":
        return V @ V.T / d
    if task == "sin":
        diff2 = np.sum((V[:, None, :] - V[None, :, :]) ** 2, axis=2)
        return special.hyp0f1(d / 2.0, -2.25 * diff2) / 18.0
    if task == "relu":
        if rng is None:
            raise ValueError("the relu covariance is a Monte Carlo estimate: pass rng")
        C = np.zeros((K, K))
        done = 0
        while done < draws:  # chunks keep memory small for large d
            n = min(100_000, draws - done)
            W = _unit_rows(rng, n, d)
            b = rng.uniform(-0.5, 0.5, size=(n, 1))
            F = np.maximum(W @ V.T + b, 0.0)
            C += F.T @ F
            done += n
        C /= draws
        return 0.5 * (C + C.T)
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")


def semivariogram(C: np.ndarray) -> np.ndarray:
    r""":math:`\gamma_{nm}=\frac12\mathbb E(f(v_n)-f(v_m))^2=\frac12(C_{nn}+C_{mm})-C_{nm}`."""
    d = np.diag(C)
    return 0.5 * (d[:, None] + d[None, :]) - C


def normalised_covariance(C: np.ndarray) -> np.ndarray:
    """``C`` divided by its mean semivariogram over distinct feature pairs (so that mean is 1)."""
    K = C.shape[0]
    g = semivariogram(C)
    mean = (g.sum() - np.trace(g)) / (K * (K - 1))
    if not mean > 0:
        raise NumericalTrouble("the task's semivariogram vanishes: features are indistinguishable")
    return C / mean


# --------------------------------------------------------------------------- Model A


@dataclass
class PopulationTrajectory:
    """Per-step records of :func:`run_population_gd` (``R`` runs, ``S`` steps, index 0 = init).

    ``target`` is the attention :math:`a_k[k]` of each query feature on its own feature
    (shape ``(R, S+1, K)``) when recorded, ``target_mean``/``target_min`` its mean/min over
    ``k``; ``tracked[..., j]`` the entry ``a_k[n]`` of the ``j``-th ``(k, n)`` in ``track``.
    """

    target_mean: np.ndarray
    target_min: np.ndarray
    loss: np.ndarray
    tracked: np.ndarray
    target: np.ndarray | None
    B: np.ndarray
    steps: int

    @property
    def t(self) -> np.ndarray:
        return np.arange(self.steps + 1, dtype=float)


def _softmax_rows(B: np.ndarray) -> np.ndarray:
    E = np.exp(B - B.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def run_population_gd(
    C: np.ndarray,
    eta,
    steps: int,
    *,
    G: np.ndarray | None = None,
    track: tuple[tuple[int, int], ...] = (),
    record_rows: bool = False,
    stop=None,
    check_every: int = 2000,
) -> PopulationTrajectory:
    r"""Model A: exact population GD from :math:`B=0`, vectorised over runs.

    ``C`` has shape ``(R, K, K)`` (already including :math:`L^2`), ``eta`` is a scalar or has
    shape ``(R,)``; ``G`` is the feature Gram matrix (``None`` = identity).  ``stop(view)`` is
    called every ``check_every`` steps with a :class:`PopulationTrajectory` of the records so
    far (``view.steps = t``; its arrays are views, and ``B`` is the current state) and ends the
    run early when it returns true.  Non-finite values raise :class:`NumericalTrouble` naming
    the step.
    """
    C = np.asarray(C, dtype=float)
    if C.ndim == 2:
        C = C[None]
    R, K, _ = C.shape
    eta = np.broadcast_to(np.asarray(eta, dtype=float), (R,)).copy()[:, None, None]
    B = np.zeros((R, K, K))
    I = np.eye(K)
    diag = np.arange(K)
    tm = np.empty((R, steps + 1))
    tmin = np.empty((R, steps + 1))
    loss = np.empty((R, steps + 1))
    tr = np.empty((R, steps + 1, len(track)))
    rows = np.empty((R, steps + 1, K)) if record_rows else None
    ti = np.array([k for k, _ in track], dtype=int)
    tn = np.array([n for _, n in track], dtype=int)
    last = steps
    t = 0
    try:
        while True:
            A = _softmax_rows(B)
            Rm = A - I
            CR = Rm @ C  # row k is (C r_k)ᵀ (C symmetric)
            p = A[:, diag, diag]
            tm[:, t] = p.mean(axis=1)
            tmin[:, t] = p.min(axis=1)
            loss[:, t] = np.einsum("rkn,rkn->r", Rm, CR) / (2 * K)
            if rows is not None:
                rows[:, t] = p
            if track:
                tr[:, t] = A[:, ti, tn]
            if t == steps:
                break
            if stop is not None and t > 0 and t % check_every == 0:
                cut = slice(0, t + 1)
                view = PopulationTrajectory(tm[:, cut], tmin[:, cut], loss[:, cut], tr[:, cut],
                                            rows[:, cut] if rows is not None else None, B, t)
                if stop(view):
                    last = t
                    break
            g = A * (CR - np.sum(A * CR, axis=2, keepdims=True))
            g /= K
            if G is not None:
                g = G @ g @ G
            B -= eta * g
            t += 1
            if t % 1000 == 0 and not np.all(np.isfinite(B)):
                raise NumericalTrouble(f"Model A diverged: non-finite logits at step {t}")
    except FloatingPointError as exc:
        raise NumericalTrouble(f"Model A overflowed at step {t} ({exc})") from None
    if not np.all(np.isfinite(B)):
        raise NumericalTrouble(f"Model A diverged: non-finite logits by step {t}")
    cut = slice(0, last + 1)
    return PopulationTrajectory(
        target_mean=tm[:, cut],
        target_min=tmin[:, cut],
        loss=loss[:, cut],
        tracked=tr[:, cut],
        target=rows[:, cut] if rows is not None else None,
        B=B,
        steps=last,
    )


def _F(p):
    p = np.asarray(p, dtype=float)
    return -1.0 / p + 3.0 * np.log(p / (1.0 - p)) + 0.5 / (1.0 - p) ** 2 + 2.0 / (1.0 - p)


def isotropic_flow_time(theta, K: int, eta_c: float):
    r"""Exact gradient-flow time (in GD steps) for :math:`p` to go from :math:`1/K` to
    :math:`\theta` when :math:`C=cI`, :math:`G=I` (``eta_c`` = :math:`\eta c`)."""
    theta = np.asarray(theta, dtype=float)
    val = (K - 1) ** 2 / (K * eta_c) * (_F(np.maximum(theta, 1.0 / K)) - _F(1.0 / K))
    return np.where(theta <= 1.0 / K, 0.0, val)


def isotropic_asymptotic_time(delta, K: int, eta_c: float):
    r"""Leading term :math:`(K-1)^2/(2K\eta c\,\delta^2)` of the time to :math:`p\ge1-\delta`."""
    delta = np.asarray(delta, dtype=float)
    return (K - 1) ** 2 / (2.0 * K * eta_c * delta**2)


def isotropic_step_rate(p, K: int, eta_c: float):
    r"""Per-step growth of the logit gap: :math:`\dot z=\eta c\,K p(1-p)^2/(K-1)^2`."""
    p = np.asarray(p, dtype=float)
    return eta_c * K * p * (1.0 - p) ** 2 / (K - 1) ** 2


def euler_lag_steps(theta, K: int, eta_c: float):
    r"""First-order Euler correction :math:`\frac12|\ln(\dot z(\theta)/\dot z(1/K))|` in steps
    (how far GD's crossing step may sit from the flow time; see the module docstring)."""
    r1 = isotropic_step_rate(theta, K, eta_c)
    r0 = isotropic_step_rate(1.0 / K, K, eta_c)
    return 0.5 * np.abs(np.log(r1 / r0))


def isotropic_stiffness(K: int, eta_c: float) -> float:
    r"""Largest :math:`|\partial\dot z/\partial z|` over the run (:math:`p\in[1/K,1]`):
    :math:`\eta c\,\frac{K}{(K-1)^2}\max_p|p(1-p)^2(1-3p)|`.

    GD is Euler's method with unit step on :math:`\dot z`; it follows the flow (and the Euler
    lag of :func:`euler_lag_steps` is its error) only while this is well below 1 — e.g.
    :math:`K=2`, :math:`\eta c=16` gives 2.5, far outside, while :math:`K=8`, :math:`\eta c=16`
    gives 0.2.
    """
    p = np.linspace(1.0 / K, 1.0, 4001)
    return float(eta_c * K / (K - 1) ** 2 * np.max(np.abs(p * (1 - p) ** 2 * (1 - 3 * p))))


def isotropic_scalar_gd(K: int, eta_c: float, steps: int) -> np.ndarray:
    r"""The reduced iteration :math:`z\leftarrow z+\dot z`; returns :math:`p_t`, ``t=0..steps``
    (a cross-check of :func:`run_population_gd` in the isotropic case)."""
    out = np.empty(steps + 1)
    z = 0.0
    for t in range(steps + 1):
        p = 1.0 / (1.0 + (K - 1) * np.exp(-z))
        out[t] = p
        z += eta_c * K * p * (1.0 - p) ** 2 / (K - 1) ** 2
    return out


# --------------------------------------------------------------------------- Model B


@dataclass
class PromptBatch:
    """``M`` prompts: context ``X`` ``(M,N,d)``, query ``xq`` ``(M,d)``, unscaled labels ``g``
    ``(M,N)`` and ``gq`` ``(M,)``, and ``same[m,i]`` = token ``i`` has the query's feature."""

    X: np.ndarray
    xq: np.ndarray
    g: np.ndarray
    gq: np.ndarray
    same: np.ndarray
    V: np.ndarray


def _task_values(task: str, P: np.ndarray, rng: np.random.Generator, d: int):
    """Evaluate one random task per prompt on points ``P`` of shape ``(M, n, d)``."""
    M = P.shape[0]
    W = _unit_rows(rng, M, d)
    proj = np.einsum("mnd,md->mn", P, W)
    if task == "linear":
        return proj
    if task == "sin":
        phi = rng.uniform(0.0, 2.0 * np.pi, size=(M, 1))
        return np.sin(3.0 * proj + phi) / 3.0
    if task == "relu":
        b = rng.uniform(-0.5, 0.5, size=(M, 1))
        return np.maximum(proj + b, 0.0)
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")


def make_prompts(
    V: np.ndarray, M: int, N: int, noise: float, task: str, rng: np.random.Generator
) -> PromptBatch:
    r"""``M`` prompts of ``N`` context tokens and one query; token :math:`x=v_k+\sigma\xi/\sqrt d`
    with feature :math:`k` uniform; labels :math:`g(x)` of one fresh task per prompt."""
    K, d = V.shape
    feats = rng.integers(0, K, size=(M, N + 1))
    P = V[feats] + noise * rng.standard_normal((M, N + 1, d)) / np.sqrt(d)
    G = _task_values(task, P, rng, d)
    return PromptBatch(
        X=np.ascontiguousarray(P[:, :N]),
        xq=np.ascontiguousarray(P[:, N]),
        g=np.ascontiguousarray(G[:, :N]),
        gq=np.ascontiguousarray(G[:, N]),
        same=(feats[:, :N] == feats[:, N:]).astype(float),
        V=V,
    )


@dataclass
class PromptTrajectory:
    """Per-step records of :func:`run_prompt_gd`: mean (over prompts) attention on same-feature
    tokens ``attn``, its minimum ``attn_min``, the loss, and the final ``Q``."""

    attn: np.ndarray
    attn_min: np.ndarray
    loss: np.ndarray
    Q: np.ndarray
    steps: int

    @property
    def t(self) -> np.ndarray:
        return np.arange(self.steps + 1, dtype=float)


def run_prompt_gd(
    batch: PromptBatch,
    L: float,
    eta: float,
    steps: int,
    *,
    stop=None,
    check_every: int = 100,
) -> PromptTrajectory:
    r"""Model B: full-batch GD on :math:`Q` from 0 with labels :math:`y=L\,g(x)`.

    ``stop(attn, loss, t)`` is called every ``check_every`` steps and ends the run early when
    it returns true.  Non-finite values raise :class:`NumericalTrouble` naming the step.
    """
    X, xq = batch.X, batch.xq
    Y = L * batch.g
    yq = L * batch.gq
    M, N, d = X.shape
    Q = np.zeros((d, d))
    attn = np.empty(steps + 1)
    amin = np.empty(steps + 1)
    loss = np.empty(steps + 1)
    last = steps
    t = 0
    try:
        while True:
            u = xq @ Q.T  # (M, d): Q x_q
            s = np.einsum("mnd,md->mn", X, u)
            s -= s.max(axis=1, keepdims=True)
            with np.errstate(under="ignore"):
                a = np.exp(s)
            a /= a.sum(axis=1, keepdims=True)
            yhat = np.einsum("mn,mn->m", a, Y)
            err = yhat - yq
            pa = np.einsum("mn,mn->m", a, batch.same)
            attn[t] = pa.mean()
            amin[t] = pa.min()
            loss[t] = 0.5 * np.mean(err * err)
            if not np.isfinite(loss[t]):
                raise NumericalTrouble(f"Model B diverged: non-finite loss at step {t}")
            if t == steps:
                break
            if stop is not None and t > 0 and t % check_every == 0:
                if stop(attn[: t + 1], loss[: t + 1], t):
                    last = t
                    break
            coef = (err / M)[:, None] * a * (Y - yhat[:, None])
            Z = np.einsum("mn,mnd->md", coef, X)
            grad = Z.T @ xq
            Q = Q - eta * grad
            t += 1
    except FloatingPointError as exc:
        raise NumericalTrouble(f"Model B overflowed at step {t} ({exc})") from None
    cut = slice(0, last + 1)
    return PromptTrajectory(attn[cut], amin[cut], loss[cut], Q, last)


def prompt_initial_attention_rate(batch: PromptBatch) -> float:
    r"""Exact first-step rate :math:`\frac{d}{d\eta}\bar a\,\big|_{\eta=0}` of the mean
    same-feature attention :math:`\bar a` when GD takes one step from :math:`Q=0` at scale
    :math:`L=1`.

    At :math:`Q=0` every token gets :math:`a_i=1/N`; the step moves :math:`Q` by
    :math:`-\eta G_0` (:math:`G_0=\partial\ell/\partial Q` of :func:`run_prompt_gd`), the
    scores by :math:`\dot s_i=-x_i^\top G_0x_q` and the attention by
    :math:`\dot a_i=a_i(\dot s_i-\sum_ja_j\dot s_j)`.  In the isotropic model A the same rate
    is :math:`c\,(K-1)/K^4` (:math:`\dot p=p(1-p)\dot z` with :math:`\dot z=\eta c/K^2` at
    :math:`p=1/K`), so :math:`K^4/(K-1)` times this rate is model B's *effective curvature*.
    """
    X, xq = batch.X, batch.xq
    M, N, _ = X.shape
    a = np.full(N, 1.0 / N)
    yhat = batch.g @ a
    err = yhat - batch.gq
    coef = (err / M)[:, None] * a * (batch.g - yhat[:, None])
    grad = np.einsum("mn,mnd->md", coef, X).T @ xq  # G_0, as in run_prompt_gd
    s_dot = -np.einsum("mnd,de,me->mn", X, grad, xq)
    a_dot = a * (s_dot - (s_dot @ a)[:, None])
    return float(np.mean(np.sum(a_dot * batch.same, axis=1)))
