r"""Generic helpers for scaling laws of training dynamics.

Three tasks recur whenever a paper states how a training time scales with a parameter:

1. **Crossing times.**  From a sampled trajectory :math:`y(t_0), y(t_1), \dots` find the first
   time :math:`T_\theta` at which :math:`y` reaches a threshold :math:`\theta`, linearly
   interpolated between the two samples that bracket the crossing
   (:func:`threshold_times`, vectorised over runs and thresholds, upward or downward: the
   project's one crossing-time helper).  For
   gradient descent sampled at every step the interpolation removes the ±1-step rounding of
   "the first step at which …".

2. **Log–log slopes.**  The least-squares slope :math:`\hat s` of :math:`\log y` against
   :math:`\log x` (:func:`loglog_fit`).  Writing :math:`u_i=\log x_i`,
   :math:`\bar u=\frac1n\sum u_i`,

   .. math::  \hat s=\sum_i w_i\log y_i,\qquad w_i=\frac{u_i-\bar u}{\sum_j(u_j-\bar u)^2},

   so an absolute error :math:`\epsilon_i` in :math:`y_i` moves :math:`\hat s` by at most
   :math:`\sum_i|w_i|\,\epsilon_i/y_i` to first order — the *error allowance*
   (:func:`slope_allowance`) that a tolerance on a fitted exponent must include when the
   :math:`y_i` are only known to within :math:`\pm\epsilon_i` (e.g. a few steps of
   gradient descent).

3. **Local slopes** between consecutive points, :math:`\Delta\log y/\Delta\log x`
   (:func:`local_slopes`), for exponents that only hold asymptotically.

Nothing here knows about any particular model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["threshold_times", "loglog_fit", "LogLogFit", "slope_allowance", "local_slopes"]


def threshold_times(
    t: np.ndarray, y: np.ndarray, thresholds, *, increasing: bool = True
) -> np.ndarray:
    r"""First times at which ``y`` reaches each threshold (``nan`` if it never does).

    ``t`` has shape ``(S,)`` (increasing sample times), ``y`` shape ``(..., S)``; the result
    has shape ``(..., len(thresholds))``.  With ``increasing=True`` the crossing of
    :math:`\theta` is the first sample with :math:`y\ge\theta`; with ``increasing=False`` the
    first with :math:`y\le\theta`.  Between the bracketing samples :math:`(t_{j-1},y_{j-1})`
    and :math:`(t_j,y_j)` the time is interpolated linearly; a threshold already met at
    :math:`t_0` gives :math:`t_0`.
    """
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    th = np.atleast_1d(np.asarray(thresholds, dtype=float))
    if t.ndim != 1 or y.shape[-1] != t.shape[0]:
        raise ValueError(f"t has shape {t.shape} but y has shape {y.shape}")
    flat = y.reshape(-1, t.shape[0])
    out = np.full((flat.shape[0], th.size), np.nan)
    sign = 1.0 if increasing else -1.0
    for r, row in enumerate(flat):
        s = sign * row
        # running maximum makes "first index with s >= θ" a sorted search
        run = np.maximum.accumulate(s)
        for j, theta in enumerate(sign * th):
            idx = int(np.searchsorted(run, theta, side="left"))
            if idx >= run.size:
                continue
            if idx == 0:
                out[r, j] = t[0]
                continue
            y0, y1 = s[idx - 1], s[idx]
            frac = (theta - y0) / (y1 - y0) if y1 != y0 else 1.0
            out[r, j] = t[idx - 1] + min(max(frac, 0.0), 1.0) * (t[idx] - t[idx - 1])
    return out.reshape(*y.shape[:-1], th.size)


@dataclass(frozen=True)
class LogLogFit:
    """Least-squares fit ``log y = intercept + slope·log x`` with its LS weights."""

    slope: float
    intercept: float
    weights: np.ndarray  # ŝ = Σ w_i log y_i
    residual_rms: float


def loglog_fit(x, y) -> LogLogFit:
    """Fit the slope of ``log y`` against ``log x`` (needs ≥ 2 distinct positive ``x``)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("x and y must be 1-D arrays of the same length")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("log-log fit needs positive x and y")
    u, v = np.log(x), np.log(y)
    du = u - u.mean()
    ss = float(du @ du)
    if ss == 0.0:
        raise ValueError("log-log fit needs at least two distinct x values")
    w = du / ss
    slope = float(w @ v)
    intercept = float(v.mean() - slope * u.mean())
    res = v - (intercept + slope * u)
    return LogLogFit(slope, intercept, w, float(np.sqrt(np.mean(res**2))))


def slope_allowance(fit: LogLogFit, y, abs_err) -> float:
    r"""First-order bound :math:`\sum_i|w_i|\,\epsilon_i/y_i` on how far the fitted slope can
    move when each :math:`y_i` is uncertain by :math:`\pm\epsilon_i` (``abs_err``)."""
    y = np.asarray(y, dtype=float)
    eps = np.broadcast_to(np.asarray(abs_err, dtype=float), y.shape)
    return float(np.sum(np.abs(fit.weights) * eps / y))


def local_slopes(x, y) -> np.ndarray:
    """Slopes ``Δlog y / Δlog x`` between consecutive points (length ``n − 1``)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    return np.diff(np.log(y)) / np.diff(np.log(x))
