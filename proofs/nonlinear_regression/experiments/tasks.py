r"""Features and task families: what both simulators are built from (numpy/SciPy only).

Tasks are :math:`f=L\,g` with :math:`g` a 1-Lipschitz random function drawn per prompt:
``linear`` :math:`g(x)=w^\top x`, ``sin`` :math:`g(x)=\sin(3w^\top x+\varphi)/3`,
``relu`` :math:`g(x)=\max(w^\top x+b,0)`, with :math:`w` uniform on the unit sphere,
:math:`\varphi\sim U[0,2\pi]`, :math:`b\sim U[-\frac12,\frac12]`.  The population model needs
their covariance :math:`C_{nm}=\mathbb E\,g(v_n)g(v_m)` on the features
(:func:`task_covariance`), normalised so that the mean semivariogram over distinct feature pairs
is 1 (:func:`normalised_covariance`).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from icltheory.core import NumericalTrouble

__all__ = ["TASKS", "orthonormal_features", "near_duplicate_features", "random_unit_features",
           "unit_rows", "task_covariance", "semivariogram", "normalised_covariance",
           "population_covariance"]

TASKS = ("linear", "sin", "relu")


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


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """``n`` independent uniform unit vectors in ``R^d``."""
    W = rng.standard_normal((n, d))
    return W / np.linalg.norm(W, axis=1, keepdims=True)


def random_unit_features(K: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``K`` independent uniform unit vectors in ``R^d`` (not orthonormal)."""
    return unit_rows(rng, K, d)


def task_covariance(task: str, V: np.ndarray, rng: np.random.Generator | None = None,
                    draws: int = 100_000) -> np.ndarray:
    r""":math:`C_{nm}=\mathbb E\,g(v_n)g(v_m)` for the task family ``task``.

    * ``linear``: :math:`\mathbb E ww^\top=I/d`, so :math:`C=VV^\top/d` (exact);
    * ``sin``: averaging over :math:`\varphi` gives
      :math:`\frac1{18}\,{}_0F_1(;\frac d2;-\frac94\lVert v_n-v_m\rVert^2)` (exact: the
      characteristic function of a uniform unit vector);
    * ``relu``: Monte Carlo with ``draws`` samples from ``rng``.
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
        while done < draws:  # chunks keep memory small
            n = min(50_000, draws - done)
            W = unit_rows(rng, n, d)
            b = rng.uniform(-0.5, 0.5, size=(n, 1))
            F = np.maximum(W @ V.T + b, 0.0)
            C += F.T @ F
            done += n
        C /= draws
        return 0.5 * (C + C.T)
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(TASKS)}")


def semivariogram(C: np.ndarray) -> np.ndarray:
    r""":math:`\gamma_{nm}=\frac12\mathbb E(f(v_n)-f(v_m))^2=\frac12(C_{nn}+C_{mm})-C_{nm}`."""
    dg = np.diag(C)
    return 0.5 * (dg[:, None] + dg[None, :]) - C


def normalised_covariance(C: np.ndarray) -> np.ndarray:
    """``C`` divided by its mean semivariogram over distinct feature pairs (so that mean is 1)."""
    K = C.shape[0]
    g = semivariogram(C)
    mean = (g.sum() - np.trace(g)) / (K * (K - 1))
    if not mean > 0:
        raise NumericalTrouble("the task's semivariogram vanishes: the features are "
                               "indistinguishable by the task")
    return C / mean


def population_covariance(task: str, V: np.ndarray, rng: np.random.Generator | None,
                          draws: int) -> np.ndarray:
    """Normalised task covariance of model A.  On orthonormal features every permutation is an
    isometry, so the population C is exactly αI + β11ᵀ: the relu Monte Carlo estimate is
    averaged over that symmetry (β11ᵀ does not act, since every residual r has 1ᵀr = 0)."""
    C = task_covariance(task, V, rng, draws)
    K = len(V)
    if task == "relu" and np.array_equal(V @ V.T, np.eye(K)):
        off = (C.sum() - np.trace(C)) / (K * (K - 1))
        C = (np.trace(C) / K - off) * np.eye(K) + off * np.ones((K, K))
    return normalised_covariance(C)
