r"""Plateau detection on loss curves.

:func:`detect_plateaus` finds the flat stretches of a curve $y(t)$ with no knowledge of the
predicted levels, so that "how many plateaus / drops does training show, and at what loss"
is a measurement, not an assumption.  All thresholds are relative:

* time is normalised to $[0,1]$ over the horizon (or $\log t$ with ``log_time=True``);
* the loss is normalised by its range $y_{\max}-y_{\min}$;
* a point is *flat* when the normalised slope, measured over a centred window of width
  ``window`` (in normalised time), is below ``flat_rate`` (the curve would move less than
  ``flat_rate`` × its range if it kept that slope over the whole horizon);
* a plateau is a run of flat points at least ``min_length`` long; consecutive plateaus whose
  levels differ by less than ``min_drop`` × range are merged; the level is the median of $y$.

Drops are the transitions between consecutive plateaus (their times:
:func:`icltheory.dynamics.threshold_times` at the midpoint level).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Plateau", "detect_plateaus", "slowest_point", "slowest_point_level"]


@dataclass(frozen=True)
class Plateau:
    start: float
    end: float
    level: float

    @property
    def length(self) -> float:
        return self.end - self.start


def detect_plateaus(
    t,
    y,
    *,
    flat_rate: float = 0.25,
    min_length: float = 0.03,
    min_drop: float = 0.03,
    window: float | None = None,
    log_time: bool = False,
) -> list[Plateau]:
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if t.ndim != 1 or t.shape != y.shape or t.size < 5:
        raise ValueError("detect_plateaus needs 1-D t and y of equal length ≥ 5")
    if not np.all(np.diff(t) > 0):
        raise ValueError("t must be strictly increasing")
    if not np.all(np.isfinite(y)):
        raise ValueError("y has non-finite values")
    u = np.log(t - t[0] + (t[1] - t[0])) if log_time else t.copy()
    u = (u - u[0]) / (u[-1] - u[0])
    rng = float(np.max(y) - np.min(y))
    if rng == 0.0:
        return [Plateau(float(t[0]), float(t[-1]), float(y[0]))]
    yn = (y - np.min(y)) / rng
    w = min_length / 2 if window is None else window
    lo = np.interp(np.clip(u - w / 2, 0, 1), u, yn)
    hi = np.interp(np.clip(u + w / 2, 0, 1), u, yn)
    width = np.clip(u + w / 2, 0, 1) - np.clip(u - w / 2, 0, 1)
    slope = np.abs(hi - lo) / width
    flat = slope < flat_rate
    plateaus: list[tuple[int, int]] = []
    i = 0
    n = len(u)
    while i < n:
        if not flat[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and flat[j + 1]:
            j += 1
        if u[j] - u[i] >= min_length:
            plateaus.append((i, j))
        i = j + 1
    merged: list[tuple[int, int]] = []
    for a, b in plateaus:
        if merged:
            pa, pb = merged[-1]
            if abs(np.median(y[a:b + 1]) - np.median(y[pa:pb + 1])) < min_drop * rng:
                merged[-1] = (pa, b)
                continue
        merged.append((a, b))
    return [Plateau(float(t[a]), float(t[b]), float(np.median(y[a:b + 1]))) for a, b in merged]


def slowest_point(t, y, plateau: Plateau, *, log_time: bool = False) -> int | None:
    r"""The index where ``y`` moves slowest (smallest $|dy/dt|$, or $|dy/d\log t|$ with
    ``log_time``) inside ``plateau``: for gradient flow near a saddle, the trajectory's closest
    approach to the fixed point.  ``None`` when the plateau holds fewer than 3 samples."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    i = np.flatnonzero((t >= plateau.start) & (t <= plateau.end))
    if i.size < 3:
        return None
    x = np.log(t[i]) if log_time else t[i]
    return int(i[int(np.argmin(np.abs(np.gradient(y[i], x))))])


def slowest_point_level(t, y, plateau: Plateau, *, log_time: bool = False) -> float:
    """The value of ``y`` at :func:`slowest_point` (a less biased estimate of the fixed point's
    loss than the plateau's median, which mixes in the start of the next drop); the median
    level when the plateau holds fewer than 3 samples."""
    k = slowest_point(t, y, plateau, log_time=log_time)
    return plateau.level if k is None else float(np.asarray(y, dtype=float)[k])
