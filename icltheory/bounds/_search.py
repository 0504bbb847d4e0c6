r"""Counterexample search for claimed upper bounds, with certified (arb) re-evaluation.

A claim "$q(p)\le K$ for every $p$ in an assumption set" is probed in three stages:

1. **random phase** — the caller samples points inside the assumptions and evaluates
   $\log q$ on all of them at once (vectorised numpy);
2. **local refinement** — the best few are refined by ``scipy.optimize.minimize`` (BFGS) on an *unconstrained* parametrisation $\theta\mapsto p(\theta)$
   whose image lies inside the assumptions (so no constraint handling is needed); the
   gradient of $\log q$ is a batched finite difference (one vectorised call per gradient);
3. **certification** — the worst point is re-evaluated in python-flint ball arithmetic at the
   exact float inputs, at increasing precision, giving a three-way verdict
   ``certified`` ($q\le K$ for sure) / ``refuted`` ($q>K$ for sure: a certified
   counterexample) / ``undecided``.

The search is seeded and deterministic (no Hypothesis inside a claim's check).  It is written
against plain callables, so any paper's "constant $K$ bounds ratio $q$" claim can reuse it:
:func:`maximize_log` (stages 1–2) and :func:`certify_le_at` (stage 3), plus helpers for
constants too large for float64 (:func:`exp_or_text`, :func:`arb_value`) and a certified
upper bound on a spectral norm (:func:`spectral_norm_upper`).

Everything is done on $\log q$ so that ratios like $e^{100}$ (or $e^{10^4}$) stay finite.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = [
    "SearchResult",
    "maximize_log",
    "Certificate",
    "certify_le_at",
    "arb_value",
    "log_value",
    "exp_or_text",
    "spectral_norm_upper",
    "PRECISIONS",
]

PRECISIONS = (53, 106, 212, 424)
#: ``scipy.optimize.minimize`` method of the refinements.  Dense BFGS, not L-BFGS-B: at these
#: dimensions (≤ ~500) its update is cheap, and L-BFGS-B's Fortran core calls multithreaded BLAS
#: on tiny vectors, which on a loaded machine costs ~4 ms per iteration (see
#: ``benchmarks/bench_softmax_regression.py``).
METHOD = "BFGS"


@dataclass
class SearchResult:
    """Outcome of :func:`maximize_log`.  ``evaluated`` counts every point at which the
    objective was computed (random starts, line-search points and difference stencils)."""

    theta: np.ndarray
    log_value: float
    evaluated: int
    random_best: float
    refinements: list[dict[str, float]] = field(default_factory=list)

    @property
    def value(self) -> float:
        return math.exp(self.log_value) if self.log_value < 700 else math.inf


def _finite(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=float)
    return np.where(np.isfinite(v), v, -np.inf)


def maximize_log(
    log_objective: Callable[[np.ndarray], np.ndarray],
    starts: np.ndarray,
    *,
    refine: int = 4,
    maxiter: int = 200,
    step: float | None = None,
    central: bool = False,
) -> SearchResult:
    r"""Maximise ``log_objective`` (batched: ``(k, dim) -> (k,)``) from the rows of ``starts``.

    All starts are evaluated; the ``refine`` best are refined with :data:`METHOD` using a
    finite-difference gradient in $\theta$ — forward differences (dim + 1 points, step 1e-7,
    gradient error ~1e-8: plenty for a search) or central ones (2·dim + 1 points, step 1e-6) —
    whose stencil is evaluated in one batched call.  Non-finite values count as $-\infty$."""
    starts = np.atleast_2d(np.asarray(starts, dtype=float))
    k, dim = starts.shape
    count = [k]
    vals = _finite(log_objective(starts))
    order = np.argsort(-vals, kind="stable")
    best_i = int(order[0])
    best_theta, best_val = starts[best_i].copy(), float(vals[best_i])
    random_best = best_val
    h = step if step is not None else (1e-6 if central else 1e-7)
    eye = np.eye(dim) * h

    def fun_and_grad(th: np.ndarray):
        parts = [th[None, :], th + eye] + ([th - eye] if central else [])
        stencil = np.concatenate(parts)
        v = _finite(log_objective(stencil))
        count[0] += stencil.shape[0]
        if not np.all(np.isfinite(v)):
            return 1e300, np.zeros(dim)  # rejected by the line search
        if central:
            grad = (v[1:dim + 1] - v[dim + 1:]) / (2 * h)
        else:
            grad = (v[1:dim + 1] - v[0]) / h
        return -float(v[0]), -grad

    from scipy.optimize import minimize

    refinements = []
    for i in order[: max(0, refine)]:
        if not np.isfinite(vals[i]):
            continue
        with warnings.catch_warnings():  # a line search stopped by a rejected point is fine
            warnings.simplefilter("ignore")
            res = minimize(fun_and_grad, starts[i], jac=True, method=METHOD,
                           options={"maxiter": int(maxiter), "gtol": 1e-9})
        x = res.x
        end = float(_finite(log_objective(x[None, :]))[0])
        count[0] += 1
        refinements.append({"start_log": float(vals[i]), "end_log": end,
                            "iterations": int(res.nit)})
        if end > best_val:
            best_theta, best_val = x.copy(), end
    return SearchResult(best_theta, best_val, count[0], random_best, refinements)


# --------------------------------------------------------------------------- certification


@dataclass
class Certificate:
    """Three-way verdict of a certified comparison ``value ≤ bound``."""

    status: str  # "certified" | "refuted" | "undecided"
    value: str  # ball of the evaluated quantity, "mid +/- rad"
    bound: str
    precision: int

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "value_ball": self.value, "bound_ball": self.bound,
                "precision_bits": self.precision}


def certify_le_at(
    evaluate: Callable[[], Any],
    bound: Callable[[], Any] | Any,
    precisions: tuple[int, ...] = PRECISIONS,
) -> Certificate:
    """Evaluate ``evaluate()`` (an arb ball) and compare it with ``bound`` (an arb, a number
    or a callable returning one) at increasing precision: ``certified`` when the ball lies
    below the bound, ``refuted`` when it lies strictly above, else retry; ``undecided`` at the
    last precision."""
    import flint

    old = flint.ctx.prec
    status, v, b, prec = "undecided", None, None, precisions[-1]
    try:
        for prec in precisions:
            flint.ctx.prec = prec
            v = evaluate()
            b = bound() if callable(bound) else arb_value(bound)
            if v <= b:
                status = "certified"
                break
            if v > b:
                status = "refuted"
                break
        return Certificate(status, v.str(12, radius=True), b.str(12, radius=True), prec)
    finally:
        flint.ctx.prec = old


# --------------------------------------------------------------------------- big constants


def arb_value(v: Any):
    """An arb ball for a constant given as a float/int, an arb, or a decimal string (the form
    :func:`exp_or_text` uses for values beyond float64)."""
    import flint

    if isinstance(v, flint.arb):
        return v
    if isinstance(v, bool):
        raise TypeError("bool is not a number")
    if isinstance(v, (int, float)):
        return flint.arb(v)
    if isinstance(v, str):
        return flint.arb(v.strip())
    raise TypeError(f"cannot make an arb from {v!r}")


def log_value(v: Any) -> float:
    """Natural log of a positive constant given as float or decimal string (−inf for ≤ 0)."""
    if isinstance(v, str):
        import mpmath

        x = mpmath.mpf(v.strip())
        return float(mpmath.log(x)) if x > 0 else -math.inf
    x = float(v)
    return math.log(x) if x > 0 else -math.inf


def exp_or_text(log_v: float, digits: int = 12) -> float | str:
    """$e^{\\log v}$ as a float when it fits in float64, else as a decimal string
    (e.g. ``'1.23456789012e+400'``): a constant is never reported as inf."""
    if log_v < 700:
        return math.exp(log_v)
    import mpmath

    with mpmath.workdps(digits + 10):
        return mpmath.nstr(mpmath.exp(mpmath.mpf(log_v)), digits)


# --------------------------------------------------------------------------- spectral norm


def spectral_norm_upper(A: np.ndarray, squarings: int = 48, prec: int = 320):
    r"""A certified upper bound (arb ball; use its upper end) on $\lVert A\rVert_2$ at the exact
    float entries: $\lambda_{\max}(G)\le\lVert G^{2^m}\rVert_F^{2^{-m}}$ for $G=A^\top A$,
    computed by $m$ normalised squarings.  The overestimate is at most a factor
    $(\operatorname{rank} G)^{2^{-m-2}}$ (about $1+10^{-15}$ for $m=48$)."""
    import flint

    old = flint.ctx.prec
    try:
        flint.ctx.prec = prec
        rows = [[flint.arb(float(v)) for v in r] for r in np.asarray(A, dtype=float)]
        Am = flint.arb_mat(rows)
        G = Am.transpose() * Am
        log_scale = flint.arb(0)
        weight = flint.arb(1)
        for _ in range(squarings):
            c = _frob(G)
            if not c > 0:  # G is (numerically) zero: fall back to ‖A‖_F, always an upper bound
                return _frob(Am)
            log_scale += weight * c.log()
            G = G * (1 / c)
            G = G * G
            weight = weight / 2
        # ‖G^{2^m}‖_F = ‖G_m‖_F · Π c_i^{2^{m-i}}  ⇒  λmax ≤ exp(Σ 2^{-i} log c_i + 2^{-m} log‖G_m‖_F)
        log_lambda = log_scale + weight * _frob(G).log()
        return (log_lambda / 2).exp()
    finally:
        flint.ctx.prec = old


def _frob(G):
    import flint

    s = flint.arb(0)
    for i in range(G.nrows()):
        for j in range(G.ncols()):
            s += G[i, j] * G[i, j]
    if s.lower() < 0:  # a ball around 0: enclose sqrt([0, upper])
        return flint.arb(0).union(s.upper().sqrt())
    return s.sqrt()
