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

__all__ = ["Plateau", "detect_plateaus", "slowest_point", "slowest_point_level", "EventPlateau",
           "plateaus_between_events"]


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


@dataclass(frozen=True)
class EventPlateau:
    """The stretch of a loss curve between two consecutive events (e.g. learning times): after
    ``m`` events, its status (``"clear"``, ``"absent"`` or ``"unresolved"``), the flat length and
    the neighbouring drops' width (both in ln t), the valley's time and loss, and why."""

    m: int
    status: str
    flat: float
    width: float
    time: float
    level: float
    why: str

    def as_dict(self) -> dict:
        return {"m": self.m, "status": self.status, "flat": self.flat, "width": self.width, "time": self.time,
                "level": self.level, "why": self.why}


def plateaus_between_events(t, y, events, *, valley: float = 0.1, clear_widths: float = 2.0,
                            absent_widths: float = 1.0, min_flat: float = 0.1,
                            min_drop: float = 0.03) -> list[EventPlateau]:
    r"""Is there a plateau between each pair of consecutive events of a descending curve?

    A blind reading of a smooth (e.g. adaptively integrated) loss curve segmented by events
    $e_1<\dots<e_n$ (times at which something was learned).  With $u=\ln t$ and the descent
    rate $r(u)=-dy/du$ of the running minimum of y:

    * each drop $j$ has a rate $r(u_j)$ at its event and a width $w_j$: the ln-t extent around
      $u_j$ where $r\ge\tfrac12r(u_j)$, not beyond the midpoints to the neighbouring events (two
      drops that run into each other do not widen each other);
    * between events $m$ and $m+1$ the *flat length* is the ln-t measure where
      $r\le$ ``valley`` × the smaller of the two event rates (the curve has slowed to a tenth of
      both drops).  The plateau is **clear** when the flat length is at least ``clear_widths`` ×
      the wider of the two drops *and* at least ``min_flat`` (the loss stays put while time grows
      by ≥ 10%: a plateau a log-time plot shows, longer than the drops it separates); **absent**
      when it is below ``absent_widths`` × that width or below ``min_flat``; else **unresolved**;
    * a plateau must separate drops that are visible: the loss lost between consecutive clear
      or unresolved plateaus (or the curve's ends) must be at least ``min_drop`` × the curve's
      range (the resolution of :func:`detect_plateaus`); the plateau bordering the smallest such
      drop (of the two, the one shorter relative to its drops' width) is demoted to absent until
      every drop is visible.

    An interior pair whose later event lies beyond the curve's last sample is **unresolved**
    (the curve does not show that drop).

    Returns one :class:`EventPlateau` per interior pair (m = 1 … n−1)."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = t > 0
    u = np.log(t[keep])
    ym = np.minimum.accumulate(y)[keep]
    e = np.sort(np.asarray([x for x in events if np.isfinite(x)], dtype=float))
    if e.size < 2 or u.size < 5:
        return []
    rate = -np.gradient(ym, u)
    ue = np.log(e)
    re = np.interp(ue, u, rate)
    mids = np.concatenate([[-np.inf], 0.5 * (ue[1:] + ue[:-1]), [np.inf]])
    widths = []
    for j in range(e.size):
        hi = (rate >= 0.5 * re[j]) & (u >= mids[j]) & (u <= mids[j + 1])
        i = int(np.clip(np.searchsorted(u, ue[j]), 0, u.size - 1))
        a = b = i
        while a > 0 and hi[a - 1]:
            a -= 1
        while b < u.size - 1 and hi[b + 1]:
            b += 1
        widths.append(float(u[b] - u[a]))
    du = np.diff(u)
    out = []
    for j in range(e.size - 1):
        inside = (u >= ue[j]) & (u <= ue[j + 1])
        thr = valley * min(re[j], re[j + 1])
        flat_pts = inside & (rate <= thr)
        flat = float(np.sum(du[flat_pts[1:] & flat_pts[:-1]]))
        w = max(widths[j], widths[j + 1], 1e-300)
        idx = np.flatnonzero(inside)
        k = int(idx[np.argmin(rate[idx])]) if idx.size else int(np.searchsorted(u, ue[j]))
        if ue[j + 1] > u[-1]:
            k = u.size - 1
            status, why = "unresolved", (f"the curve ends at t = {float(np.exp(u[-1])):.4g}, before the drop at "
                                         f"t = {e[j + 1]:.4g}")
        elif flat >= clear_widths * w and flat >= min_flat:
            status, why = "clear", f"flat for {flat:.3g} in ln t, {flat / w:.3g} × the drops' width {w:.3g}"
        elif flat < absent_widths * w or flat < min_flat:
            status, why = "absent", (f"flat for only {flat:.3g} in ln t ({flat / w:.3g} × the drops' width {w:.3g}; "
                                     f"a clear plateau needs ≥ {clear_widths:g} × and ≥ {min_flat:g}): the drops at "
                                     f"t = {e[j]:.4g} and {e[j + 1]:.4g} run into each other")
        else:
            status, why = "unresolved", (f"flat for {flat:.3g} in ln t, {flat / w:.3g} × the drops' width {w:.3g} — "
                                         f"between {absent_widths:g} (absent) and {clear_widths:g} (clear)")
        out.append(EventPlateau(j + 1, status, flat, w, float(np.exp(u[k])), float(ym[k]), why))
    span = float(ym[0] - ym[-1])
    while span > 0:
        clear = [p for j, p in enumerate(out) if p.status != "absent" and ue[j + 1] <= u[-1]]
        levels = [float(ym[0])] + [p.level for p in clear] + [float(ym[-1])]
        drops = [a - b for a, b in zip(levels, levels[1:])]
        if not clear or min(drops) >= min_drop * span:
            break
        i = int(np.argmin(drops))
        # the clear plateau bordering the smallest drop (the shorter of the two, relative to width)
        cand = [c for c in (i - 1, i) if 0 <= c < len(clear)]
        victim = min((clear[c] for c in cand), key=lambda p: p.flat / p.width)
        out[out.index(victim)] = EventPlateau(
            victim.m, "absent", victim.flat, victim.width, victim.time, victim.level,
            f"a neighbouring drop ({drops[i]:.3g}) is below the resolution {min_drop:g} × the loss range {span:.3g}")
    return out
